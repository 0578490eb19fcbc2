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
"""Docs that state facts of the code: checked against the code itself.

The install page's dependencies against requirements.txt, the aggregate
values against the core's table of kinds, the commands said to take
``--long`` against their parsers, and a documented command run as written.
"""

import json
import re
import shlex

import testtools

from nova_pmem_filters.core.rules import kinds
from tests.unit import clitools
from tests.unit import paths

# A name in double backquotes.
_LITERAL = re.compile(r'``([^`]+)``')


def _read(*parts):
    with open(paths.of(*parts), encoding='utf-8') as f:
        return f.read()


def _paragraph(text, marker):
    """The paragraph (or table cell run) of ``text`` holding ``marker``."""
    for para in re.split(r'\n\s*\n', text):
        if marker in para:
            return para
    raise AssertionError('no paragraph holds %r' % marker)


def _requirements():
    """The distribution names of requirements.txt, lower-cased."""
    names = set()
    for line in _read('requirements.txt').splitlines():
        line = line.split('#', 1)[0].strip()
        if line:
            names.add(re.match(r'[A-Za-z0-9._-]+', line).group(0).lower())
    return names


class InstallDocsTestCase(testtools.TestCase):
    """What the install page and the README say the package needs."""

    def test_requirements_are_what_the_install_page_lists(self):
        para = _paragraph(_read('doc', 'source', 'install.rst'),
                          'The package requires only')
        sentence = para.split('which Nova', 1)[0]
        self.assertEqual(_requirements(),
                         {n.lower() for n in _LITERAL.findall(sentence)})

    def test_requirements_are_what_the_readme_lists(self):
        para = _paragraph(_read('README.rst'), 'It brings only')
        sentence = para.split('which Nova', 1)[0]
        self.assertEqual(_requirements(),
                         {n.lower() for n in _LITERAL.findall(sentence)})

    def test_install_page_names_every_pmem_mode_value(self):
        text = _read('doc', 'source', 'install.rst')
        # The table row of pmem_mode runs until the next key.
        row = text.split('``pmem_mode``   ', 1)[1].split(
            '``pmem_dram_cache_gb``   ', 1)[0]
        self.assertEqual(set(kinds.ALL_MODES),
                         set(_LITERAL.findall(row)) - {':doc:'})


def _planner_commands():
    """{command name: its argparse parser}, from the planner's entry points.

    The same commands ``nova-pmem-planner`` finds.
    """
    from nova_pmem_filters.planner import cli
    application = cli.PlannerApp()
    parsers = {}
    for name, entry_point in application.command_manager:
        command = entry_point.load()(application, None)
        parsers[name] = command.get_parser(name)
    return parsers


class PlannerDocsTestCase(testtools.TestCase):
    """Planner pages: the --long list and the documented simulate trace."""

    def _long_commands(self):
        return {name for name, parser in _planner_commands().items()
                if any('--long' in action.option_strings
                       for action in parser._actions)}

    def test_long_lists_match_the_parsers(self):
        takes_long = self._long_commands()
        names = set(_planner_commands())
        self.assertIn('compare', takes_long)
        for page, marker in (('cli.rst', 'every column with'),
                             ('planner.rst', 'shows every column')):
            para = _paragraph(_read('doc', 'source', page), marker)
            listed = set(_LITERAL.findall(para)) & names
            self.assertEqual(takes_long, listed, page)

    def test_documented_trace_replays(self):
        text = _read('doc', 'source', 'planner-fleet.rst')
        # The console example, continuation lines joined.
        command = re.search(
            r'\$ (nova-pmem-planner simulate [^$]*?--trace etc/examples/\S+)',
            text.replace('\\\n', ' ')).group(1)
        argv = shlex.split(command)[1:]
        trace = argv[argv.index('--trace') + 1]
        argv[argv.index('--trace') + 1] = paths.of(trace)
        status, out, err = clitools.run_cli(self, argv + ['-f', 'json'])
        self.assertEqual(0, status, err)
        rows = {row['kind']: row for row in json.loads(out)}
        self.assertIn('total', rows)
        # Every boot of the trace found a host.
        self.assertEqual(0, rows['total']['rejected'])
        self.assertGreater(rows['total']['vms_mean'], 0)

    def test_documented_cost_against_the_baseline(self):
        # The number planner.rst gives for cost_vs_baseline_pct is the
        # built-in example's, as compare prints it.
        para = _paragraph(_read('doc', 'source', 'planner.rst'),
                          'where ``cost_vs_baseline`` reads')
        number, text = re.search(r'``(-?[0-9.]+)`` where '
                                 r'``cost_vs_baseline`` reads ``([^`]+)``',
                                 para).groups()
        status, out, err = clitools.run_cli(self, ['compare', '-f', 'json'])
        self.assertEqual(0, status, err)
        rows = [r for r in json.loads(out) if r['config'] == 'mm-192-512']
        self.assertTrue(rows)
        for row in rows:
            self.assertEqual(float(number), row['cost_vs_baseline_pct'])
            self.assertEqual(text, row['cost_vs_baseline'])
