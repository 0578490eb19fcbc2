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
"""Default tables fit 100 columns; no word is cut; --long keeps all.

Each listing command runs on the built-in scenarios with its default
table, with stdout a pipe, as a terminal of 100 columns says it is
(COLUMNS=100) and as nothing says (the same 100). No line of stdout or
stderr may be wider than :data:`WIDTH`; no cell value may be lost (every
value of ``-f json`` is in the table, whole or wrapped); no word of a
value or of a header may be split across lines: a value wraps between
its words (spaces, ``,;:=+/.``), a header between its words and after an
``_``.
"""

import io
import json
import re

import fixtures
import testscenarios
import testtools

from nova_pmem_filters.planner.commands import fit
from tests.unit import clitools
from tests.unit import paths

load_tests = testscenarios.load_tests_apply_scenarios

WIDTH = 100
SCENARIOS = ('telco-cost-matched', 'cxl-cost-matched')
# The documented searches of each scenario, made small enough to run here
# (the cxl one keeps the long population names of the full search).
SEARCH = {
    'telco-cost-matched': ('--platform', 'cascade-lake-2s', '--cpu',
                           'xeon-gold-6230n', '--budget', '11704',
                           '--no-progress'),
    'cxl-cost-matched': ('--platform', 'granite-rapids-ap-2s', '--cpu',
                         'xeon-6980p', '--modes', 'cxl_flat', '--dimm',
                         'ddr5-64', '--dimm', 'micron-cz120-256', '--dimm',
                         'samsung-cmmd-256', '--limit', '5',
                         '--no-progress'),
}
COMMANDS = {
    'compare': (),
    'nova-config': (),
    'nova-config-placement': ('--placement-accounting',),
    'calibration': (),
    'configs': (),
    'search': None,
    'fleet': ('--fleet', paths.of('etc', 'examples', 'fleet')),
    # A time limit no busy machine reaches: a search cut short adds a line
    # about it, which is not the table this checks.
    'optimize': ('--no-progress', '--time-limit', '3600'),
    'sweep': ('--jobs', '1'),
    # A month of the built-in demand: the same rows as a year, sooner.
    'simulate': ('--no-progress', '--days', '30'),
}
# Slow to run: their --long is left to tests/unit/planner/test_cli.py.
SLOW = ('optimize', 'simulate', 'sweep')
# Where a value may wrap: between these words of it.
_WORDS = re.compile(r'[\s,;:=+/.]+')


def _argv(command, scen):
    extra = COMMANDS[command]
    if extra is None:
        extra = SEARCH[scen]
    return [command.replace('-placement', ''), '--scenario', scen] + list(
        extra)


class DefaultTableWidthTestCase(testtools.TestCase):

    # fleet has three columns per workload: the example fleet with the two
    # workloads of the telco scenario fits; more workloads, wider.
    scenarios = [('%s %s' % (command, scen),
                  {'command': command, 'scen': scen})
                 for command in COMMANDS for scen in SCENARIOS
                 if (command, scen) != ('fleet', 'cxl-cost-matched')]

    def run_ok(self, *argv, columns=WIDTH):
        status, out, err = clitools.run_cli(self, argv, columns)
        self.assertEqual(0, status, err)
        return out, err

    def test_fits_between_words(self):
        argv = _argv(self.command, self.scen)
        out, err = self.run_ok(*argv)
        rows = json.loads(self.run_ok(*(argv + ['-f', 'json']))[0])
        for line in (out + err).splitlines():
            self.assertLessEqual(len(line), WIDTH, '\n' + out + err)
        if not rows:
            # calibration of a scenario without published gains.
            self.assertEqual('', out)
            return
        headers, columns = clitools.table(out)
        shown = {}
        for header, lines in zip(headers, columns):
            name = header.partition(' ')[0]
            # A header wraps after an "_" or at its space, never inside
            # a word: read back, it is the column's name (and currency).
            self.assertIn(name, rows[0], header)
            self.assertIn(header, (name, '%s USD' % name))
            shown[name] = lines
        for row in rows:
            for column, value in row.items():
                if column not in shown or not isinstance(value, str):
                    continue
                lines = shown[column]
                # The whole value, read down the column without spaces.
                self.assertIn(value.replace(' ', ''),
                              ''.join(lines).replace(' ', ''), column)
                for word in _WORDS.split(value):
                    self.assertTrue(
                        any(word in line for line in lines),
                        '%s: %r split in\n%s' % (column, word, out))

    def test_off_a_terminal_as_on_one_of_100_columns(self):
        if self.command in SLOW:
            self.skipTest('slow; the same code as the others')
        argv = _argv(self.command, self.scen)
        self.assertEqual(self.run_ok(*argv),
                         self.run_ok(*argv, columns=None))

    def test_long_and_json_keep_every_column(self):
        if self.command in SLOW:
            self.skipTest('slow; tests/unit/planner/test_cli.py')
        argv = _argv(self.command, self.scen)
        rows = json.loads(self.run_ok(*(argv + ['-f', 'json']))[0])
        if not rows:
            return
        headers, _columns = clitools.table(self.run_ok(*(argv + [
            '--long']))[0])
        for column in rows[0]:
            self.assertIn(column, [h.partition(' ')[0] for h in headers])


class FitTestCase(testtools.TestCase):

    def test_wraps_after_commas_and_spaces_only_as_needed(self):
        names = ['key', 'value']
        rows = [('a', 'Alpha,Beta,Gamma'), ('b', 'short')]
        got = fit.fit(names, rows, 21)
        self.assertEqual((names, [('a', 'Alpha,Beta,\nGamma'),
                                  ('b', 'short')]), got)
        self.assertEqual((names, rows), fit.fit(names, rows, 80))

    def test_numbers_are_not_wrapped(self):
        rows = [(123456789, 'one two three four five')]
        _names, got = fit.fit(['n', 'text'], rows, 24)
        self.assertEqual(123456789, got[0][0])
        self.assertEqual('one two three four five',
                         got[0][1].replace('\n', ' '))
        self.assertTrue(all(len(ln) <= 24 - 7 - 9
                            for ln in got[0][1].splitlines()))

    def test_a_name_stays_whole_while_words_can_wrap(self):
        # The table of the issue: 100 columns cut mm-192-512 and
        # memory_mode, though the text beside them could wrap.
        names = ['config', 'mode', 'checks']
        rows = [('mm-192-512', 'memory_mode', 'warning mm-ratio, '
                 'warning not-oem-mix, note near-memory')]
        _names, got = fit.fit(names, rows, 56)
        self.assertEqual(('mm-192-512', 'memory_mode'), got[0][:2])
        self.assertEqual(['warning mm-ratio, warning', 'not-oem-mix, note',
                          'near-memory'], got[0][2].splitlines())

    def test_a_word_too_long_breaks_between_its_parts(self):
        self.assertEqual('single:\nmm-192-512',
                         fit.wrap('single:mm-192-512', 12))
        self.assertEqual('flat-1536-\n1536', fit.wrap('flat-1536-1536', 10))
        self.assertEqual('memory_\nmode', fit.wrap('memory_mode', 8))
        # Cut only where no part fits.
        self.assertEqual('abcd\nefgh\nij', fit.wrap('abcdefghij', 4))
        self.assertEqual('abcdefghij', fit.wrap('abcdefghij', 4,
                                                depth=fit.PARTS))

    def test_headers_wrap_after_underscores_once_cells_cannot(self):
        names = ['config', 'relative_throughput', 'cost_per_vm USD']
        rows = [('mm-192-512', 1.221, 616.0)]
        got, _rows = fit.fit(names, rows, 40)
        self.assertEqual(['config', 'relative_\nthroughput',
                          'cost_per_\nvm USD'], got)
        # A column of one line: wrapping it would not help.
        got, _rows = fit.fit(names, rows, 60)
        self.assertEqual(names, got)

    def test_a_table_of_wrapped_headers_reads_back(self):
        out = io.StringIO()
        fit.print_table(['config', 'vms_per_\nnode'],
                        [('mm-192-512', 19), ('dram-384', 14)], out)
        self.assertEqual(
            '+------------+----------+\n'
            '| config     | vms_per_ |\n'
            '|            |     node |\n'
            '+------------+----------+\n'
            '| mm-192-512 |       19 |\n'
            '| dram-384   |       14 |\n'
            '+------------+----------+\n', out.getvalue())
        self.assertEqual((['config', 'vms_per_node'],
                          [['mm-192-512', 'dram-384'], ['19', '14']]),
                         clitools.table(out.getvalue()))

    def test_width_of_max_width_columns_or_terminal(self):
        pipe = io.StringIO()
        self.useFixture(fixtures.EnvironmentVariable('COLUMNS', '90'))
        self.assertEqual(70, fit.terminal_width(pipe, 70))
        self.assertEqual(90, fit.terminal_width(pipe))
        self.useFixture(fixtures.EnvironmentVariable('COLUMNS', 'wide'))
        self.assertIsNone(fit.terminal_width(pipe))
