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
"""Running the planner's CLI in-process, for the tests."""

import io
import logging
import os
import textwrap

import fixtures

from nova_pmem_filters.planner import cli


def run_cli(test, argv, columns=None):
    """Run the planner in-process; returns (exit status, stdout, stderr).

    cliff adds a console handler to the root logger on every run and sets
    its level; both are put back when the test ends. The output is that
    of a pipe without COLUMNS (tables 100 wide), or with COLUMNS set to
    ``columns``.
    """
    test.useFixture(fixtures.EnvironmentVariable(
        'COLUMNS', None if columns is None else str(columns)))
    test.useFixture(fixtures.EnvironmentVariable('CLIFF_MAX_TERM_WIDTH'))
    root = logging.getLogger()
    test.addCleanup(setattr, root, 'handlers', list(root.handlers))
    test.addCleanup(root.setLevel, root.level)
    out = io.StringIO()
    err = io.StringIO()
    with fixtures.MonkeyPatch('sys.stdout', out), \
            fixtures.MonkeyPatch('sys.stderr', err):
        status = cli.main(list(argv))
    return status, out.getvalue(), err.getvalue()


def table(out):
    """(headers, columns) of the first cliff table in ``out``.

    A header that the planner wrapped over several lines is read back
    whole: its lines joined, directly after an ``_`` and with a space
    otherwise. Each column is the list of its lines under the header,
    top to bottom (a cell wrapped over several lines is several of them).
    """
    lines = out.splitlines()
    borders = [i for i, line in enumerate(lines) if line.startswith('+')]
    edges = [i for i, char in enumerate(lines[borders[0]]) if char == '+']

    def cells(line):
        return [line[a + 1:b].strip() for a, b in zip(edges, edges[1:])]

    head = [cells(line) for line in lines[borders[0] + 1:borders[1]]]
    body = [cells(line) for line in lines[borders[1] + 1:borders[2]]]
    headers = []
    for i in range(len(edges) - 1):
        text = ''
        for part in (row[i] for row in head if row[i]):
            text += part if not text or text.endswith('_') else ' ' + part
        headers.append(text)
    return headers, [[row[i] for row in body] for i in range(len(headers))]


def messages(err):
    """The messages on ``err``: a wrapped one's indented lines joined."""
    found = []
    for line in err.splitlines():
        if line.startswith(' ') and found:
            found[-1] += ' ' + line.strip()
        else:
            found.append(line)
    return found


def dram_scenario(directory, name, workloads, top=''):
    """The path of a scenario ``name`` of one DRAM configuration.

    :param workloads: the YAML of its ``workloads:`` mapping, unindented.
    :param top: more top-level YAML, after the workloads.
    """
    path = os.path.join(directory, name + '.yaml')
    with open(path, 'w') as f:
        f.write(textwrap.dedent('''\
            name: %s
            configs:
              dram:
                platform: ice-lake-2s
                cpu: xeon-gold-6330
                mode: dram
                per_socket: {ddr4-32: 8}
            workloads:
            ''') % name + textwrap.indent(workloads, '  ') + top)
    return path


def without_progress(argv):
    """``argv`` with --no-progress after it, then with -q before it.

    (option, argv) each: the two ways to silence a command's progress.
    """
    return [('--no-progress', list(argv) + ['--no-progress']),
            ('-q', ['-q'] + list(argv))]


def assert_silent(test, argv):
    """Without progress (``without_progress``), ``argv`` writes no stderr."""
    for option, quiet in without_progress(argv):
        status, _out, err = run_cli(test, quiet)
        test.assertEqual(0, status, err)
        test.assertEqual('', err, option)
