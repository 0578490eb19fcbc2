#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.
"""The documented command examples print what the pages show.

Every literal block of the docs and the README with a ``$ nova-pmem-...``
line followed by output is run, in-process from the top of the tree, and
its output (stderr, then stdout, as a terminal shows them) compared with
the page: line by line, where a line ``...`` stands for any number of lines
and an example marked ``abridged`` in its comment shows some of the lines,
in order. An example that cannot run here (it needs a cloud, the host's
own hardware or a file the page only describes) must be listed in
:data:`NOT_RUN` with the reason, so that a new example is checked unless
someone says why not.
"""

import io
import os
import re
import shlex

import testscenarios
import testtools

from nova_pmem_filters.discover import cli as discover_cli
from tests.unit import clitools
from tests.unit import paths

TOP = paths.ROOT
PAGES = [os.path.join('doc', 'source', name) for name in sorted(
    os.listdir(os.path.join(TOP, 'doc', 'source'))) if name.endswith('.rst')
] + ['README.rst']
PROGRAMS = ('nova-pmem-planner', 'nova-pmem-discover', 'nova-pmem-doctor',
            'nova-pmem-observe')

# Examples not run, by (page, command as written), with why.
NOT_RUN = {
    ('doc/source/discovery.rst', 'nova-pmem-discover --table --numa'):
        'reads the host\'s own ipmctl and ndctl',
    ('doc/source/discovery.rst',
     'nova-pmem-discover --cxl --aggregate --numa'):
        'reads the host\'s own cxl and daxctl',
    ('doc/source/planner.rst', 'nova-pmem-planner fleet --fleet hosts/'):
        'the operator\'s own host profiles',
    ('doc/source/planner.rst',
     'nova-pmem-planner compare --scenario numa.yaml -c config -c workload '
     '-c vms_per_node -c binding'):
        'run by test_doc_scenarios, with the page\'s numa.yaml',
    ('doc/source/planner.rst', 'nova-pmem-planner compare --scenario '
     'bad.yaml'):
        'a scenario the page describes',
    ('doc/source/planner.rst', 'nova-pmem-planner fleet --scenario '
     'bad.yaml --fleet hosts/'):
        'a scenario the page describes',
    ('doc/source/planner.rst', 'nova-pmem-planner compare --scenario '
     'reserve.yaml'):
        'run by test_refused_inputs, with the built-in scenario edited',
    ('doc/source/install.rst', 'nova-pmem-planner compare'):
        'shows the message of an install without the planner extra',
}


def _blocks(text):
    """The literal blocks of an RST text, as lists of lines (dedented)."""
    lines = text.splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        if lines[i].rstrip().endswith('::'):
            i += 1
            while i < len(lines) and not lines[i].strip():
                i += 1
            start = i
            if i >= len(lines) or not lines[i].startswith(' '):
                continue
            indent = len(lines[i]) - len(lines[i].lstrip())
            while i < len(lines) and (not lines[i].strip() or (
                    len(lines[i]) - len(lines[i].lstrip()) >= indent)):
                i += 1
            block = [ln[indent:] for ln in lines[start:i]]
            while block and not block[-1].strip():
                block.pop()
            blocks.append(block)
        else:
            i += 1
    return blocks


def examples(page):
    """(command, comment, expected lines) of the page's examples."""
    with open(os.path.join(TOP, page)) as f:
        text = f.read()
    found = []
    for block in _blocks(text):
        i = 0
        while i < len(block):
            line = block[i]
            if not line.startswith('$ '):
                i += 1
                continue
            command = line[2:]
            while command.endswith('\\'):
                i += 1
                command = command[:-1].rstrip() + ' ' + block[i].strip()
            i += 1
            output = []
            while i < len(block) and not block[i].startswith('$ '):
                output.append(block[i].rstrip())
                i += 1
            while output and not output[-1]:
                output.pop()
            command, _, comment = command.partition('  #')
            command = command.strip()
            if command.split()[0] in PROGRAMS and any(output):
                found.append((command, comment.strip(), output))
    return found


def run(test, command):
    """stderr and stdout lines of ``command``, run in-process at TOP."""
    argv = shlex.split(command)
    cwd = os.getcwd()
    os.chdir(TOP)
    try:
        if argv[0] == 'nova-pmem-planner':
            status, out, err = clitools.run_cli(test, argv[1:])
        else:
            out_f, err_f = io.StringIO(), io.StringIO()
            status = discover_cli.main(argv[1:], stdout=out_f, stderr=err_f)
            out, err = out_f.getvalue(), err_f.getvalue()
    finally:
        os.chdir(cwd)
    return status, [ln.rstrip() for ln in (err + out).splitlines()]


def matches(expected, got, abridged=False):
    """Whether ``got`` is what ``expected`` shows (see the module doc)."""
    if abridged:
        rest = iter(got)
        return all(any(line == g for g in rest) for line in expected
                   if line != '...')
    pattern = ''.join('(?:.*\n)*' if line == '...' else
                      re.escape(line) + '\n' for line in expected)
    return re.fullmatch(pattern, ''.join(g + '\n' for g in got)) is not None


def _scenarios():
    result = []
    for page in PAGES:
        for n, (command, comment, output) in enumerate(examples(page)):
            result.append(('%s #%d %s' % (page, n + 1, command[:60]),
                           {'page': page, 'command': command,
                            'comment': comment, 'output': output}))
    return result


class DocExampleTestCase(testscenarios.WithScenarios, testtools.TestCase):

    scenarios = _scenarios()

    def test_prints_what_the_page_shows(self):
        if (self.page, self.command) in NOT_RUN:
            self.skipTest(NOT_RUN[(self.page, self.command)])
        argv = shlex.split(self.command)
        if argv[0] not in ('nova-pmem-planner', 'nova-pmem-discover') or (
                argv[0] == 'nova-pmem-discover' and '--from' not in argv):
            self.fail('%s: %r cannot run in a test: list it in NOT_RUN with '
                      'the reason' % (self.page, self.command))
        _status, got = run(self, self.command)
        self.assertTrue(
            matches(self.output, got, 'abridged' in self.comment),
            '%s: $ %s\nthe page shows:\n%s\nthe command prints:\n%s'
            % (self.page, self.command, '\n'.join(self.output),
               '\n'.join(got)))


class CheckerTestCase(testtools.TestCase):
    """The checker itself: it fails on a difference."""

    def test_matches(self):
        self.assertTrue(matches(['a', '...', 'd'], ['a', 'b', 'c', 'd']))
        self.assertTrue(matches(['a', '...', 'b'], ['a', 'b']))
        self.assertFalse(matches(['a', 'd'], ['a', 'b', 'd']))
        self.assertFalse(matches(['a', '...'], ['b']))
        self.assertTrue(matches(['a', 'c'], ['a', 'b', 'c'], abridged=True))
        self.assertFalse(matches(['c', 'a'], ['a', 'b', 'c'], abridged=True))

    def test_examples_of_a_page(self):
        found = examples(os.path.join('doc', 'source', 'discovery.rst'))
        commands = [c for c, _comment, _out in found]
        self.assertIn('nova-pmem-discover --from '
                      'etc/examples/discover/memory-mode --aggregate',
                      commands)
        self.assertEqual(
            [('nova-pmem-discover --table --numa',
              'ad-2s-pmem100-512, abridged')],
            [(c, comment) for c, comment, _out in found
             if c == 'nova-pmem-discover --table --numa'])

    def test_every_skip_is_an_example(self):
        listed = {(page, command) for page in PAGES
                  for command, _c, _o in examples(page)}
        self.assertEqual(set(), set(NOT_RUN) - listed)
