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
"""Default tables fit 120 columns; --long and the machine formats keep all.

Each listing command runs on the built-in scenarios (on a pipe, where
cliff does not fit a table to a terminal) with its default table; its
widest line must be at most :data:`WIDTH` characters, and no cell value
may be lost: every value of ``-f json`` is in the table, whole or wrapped.
"""

import json

import testscenarios
import testtools

from planner.commands import base
from tests.unit import clitools
from tests.unit import paths

load_tests = testscenarios.load_tests_apply_scenarios

WIDTH = 120
SCENARIOS = ('telco-cost-matched', 'cxl-cost-matched')
# The documented searches of each scenario, made small enough to run here
# (the cxl one keeps the long population names of the full search).
SEARCH = {
    'telco-cost-matched': ('--platform', 'cascade-lake-2s', '--cpu',
                           'xeon-gold-6230n', '--budget', '11704'),
    'cxl-cost-matched': ('--platform', 'granite-rapids-ap-2s', '--cpu',
                         'xeon-6980p', '--modes', 'cxl_flat', '--dimm',
                         'ddr5-64', '--dimm', 'micron-cz120-256', '--dimm',
                         'samsung-cmmd-256', '--limit', '5'),
}
COMMANDS = {
    'compare': (),
    'nova-config': (),
    'nova-config-placement': ('--placement-accounting',),
    'calibration': (),
    'configs': (),
    'search': None,
    'fleet': ('--fleet', paths.of('etc', 'examples', 'fleet')),
    'hot-ratios': ('--observations',
                   paths.of('etc', 'examples', 'observations')),
}


def _argv(command, scen):
    extra = COMMANDS[command]
    if extra is None:
        extra = SEARCH[scen]
    return [command.replace('-placement', ''), '--scenario', scen] + list(
        extra)


def _columns(table):
    """{column name: its cells top to bottom, spaces removed} of a table."""
    lines = table.splitlines()
    edges = [i for i, c in enumerate(lines[0]) if c == '+']
    cells = [[line[a + 1:b].strip() for a, b in zip(edges, edges[1:])]
             for line in lines if line.startswith('|')]
    names = [c.split()[0] for c in cells[0]]
    return {name: ''.join(row[i] for row in cells[1:]).replace(' ', '')
            for i, name in enumerate(names)}


class DefaultTableWidthTestCase(testtools.TestCase):

    # fleet has three columns per workload: the example fleet with the two
    # workloads of the telco scenario fits; more workloads, wider.
    scenarios = [('%s %s' % (command, scen),
                  {'command': command, 'scen': scen})
                 for command in COMMANDS for scen in SCENARIOS
                 if (command, scen) != ('fleet', 'cxl-cost-matched')]

    def run_ok(self, *argv):
        status, out, err = clitools.run_cli(self, argv)
        self.assertEqual(0, status, err)
        return out

    def test_fits(self):
        argv = _argv(self.command, self.scen)
        out = self.run_ok(*argv)
        rows = json.loads(self.run_ok(*(argv + ['-f', 'json'])))
        if not rows:
            # calibration of a scenario without published gains.
            self.assertEqual('', out)
            return
        widest = max(out.splitlines(), key=len)
        self.assertLessEqual(len(widest), WIDTH, '\n' + out)
        # A wrapped cell still shows its whole value: each column's text,
        # read down the table without spaces, holds its values in order.
        shown = _columns(out)
        for row in rows:
            for column, value in row.items():
                if column in shown and isinstance(value, str) and value:
                    self.assertIn(value.replace(' ', ''), shown[column],
                                  column)

    def test_long_and_json_keep_every_column(self):
        argv = _argv(self.command, self.scen)
        rows = json.loads(self.run_ok(*(argv + ['-f', 'json'])))
        if not rows:
            return
        header = self.run_ok(*(argv + ['--long'])).splitlines()[1]
        for column in rows[0]:
            self.assertIn(' %s ' % column, header)


class FitTestCase(testtools.TestCase):

    def test_wraps_after_commas_and_spaces_only_as_needed(self):
        names = ['key', 'value']
        rows = [('a', 'Alpha,Beta,Gamma'), ('b', 'short')]
        got = base.fit_rows(names, rows, 21)
        self.assertEqual([('a', 'Alpha,Beta,\nGamma'), ('b', 'short')],
                         got)
        self.assertEqual(rows, base.fit_rows(names, rows, 80))

    def test_numbers_are_not_wrapped(self):
        rows = [(123456789, 'one two three four five')]
        got = base.fit_rows(['n', 'text'], rows, 24)
        self.assertEqual(123456789, got[0][0])
        self.assertEqual('one two three four five',
                         got[0][1].replace('\n', ' '))
        self.assertTrue(all(len(ln) <= 24 - 7 - 9
                            for ln in got[0][1].splitlines()))
