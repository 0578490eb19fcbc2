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
"""What an operator trying the command-line tools runs into.

Misspelt commands and options, --version, help text, empty results and
cells, units and the binding values; the planner, and where they share the
behaviour, nova-pmem-doctor, nova-pmem-discover and nova-pmem-observe.
"""

import importlib.metadata
import io
import os
import re

import fixtures
import testtools
import yaml

from nova_pmem_filters.cli import application
from nova_pmem_filters.discover import cli as discover_cli
from nova_pmem_filters.doctor import cli as doctor_cli
from nova_pmem_filters.observe import cli as observe_cli
from nova_pmem_filters.planner import cli
from nova_pmem_filters.planner import errors
from nova_pmem_filters.planner import scenario
from nova_pmem_filters.planner import tables
from nova_pmem_filters.planner import vmsizing
from tests.unit import clitools
from tests.unit import paths

EXAMPLE_FLEET = paths.of('etc', 'examples', 'fleet')
# reStructuredText a terminal would show as is: literals, roles, links,
# directives and the "::" that opens a literal block.
RST = re.compile(r'``|:[a-z]+:`|`_|^\s*\.\. |::\s*$', re.M)
# Arguments that let each planner command's help be asked for.
VERSION = importlib.metadata.version('nova-pmem-filters')


def _run(test, main, argv):
    """(status, stdout, stderr) of an in-process cliff tool's main."""
    test.useFixture(fixtures.EnvironmentVariable('OS_CLOUD'))
    out, err = io.StringIO(), io.StringIO()
    with fixtures.MonkeyPatch('sys.stdout', out), \
            fixtures.MonkeyPatch('sys.stderr', err):
        try:
            status = main(list(argv))
        except SystemExit as exc:
            # argparse's --version and cliff's --help exit.
            status = 0 if exc.code is None else exc.code
    return status, out.getvalue(), err.getvalue()


def _host_tool(main, argv):
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def _planner_commands():
    return sorted(name for name, _ep in cli.PlannerApp().command_manager
                  if name not in ('help', 'complete'))


class PlannerTestCase(testtools.TestCase):

    def run_cli(self, *argv):
        return clitools.run_cli(self, argv)

    def rows(self, *argv):
        status, out, err = self.run_cli(*(argv + ('-f', 'yaml')))
        self.assertEqual(0, status, err)
        return yaml.safe_load(out)


class UnknownCommandTestCase(PlannerTestCase):
    """A misspelt command: one line naming it and what was meant, exit 2."""

    def test_help_of_a_misspelt_command(self):
        status, out, err = self.run_cli('help', 'comapre')
        self.assertEqual(2, status)
        self.assertEqual('', out)
        self.assertEqual(1, len(err.splitlines()), err)
        self.assertIn("unknown command 'comapre'", err)
        self.assertIn("did you mean 'compare'", err)
        self.assertNotIn('[', err)

    def test_misspelt_command(self):
        status, out, err = self.run_cli('comapre')
        self.assertEqual((2, ''), (status, out))
        self.assertEqual(
            "nova-pmem-planner: error: unknown command 'comapre'; did you "
            "mean 'compare' or 'complete'? (see 'nova-pmem-planner --help')"
            "\n", err)

    def test_nothing_close(self):
        status, _out, err = self.run_cli('help', 'xyzzy')
        self.assertEqual(2, status)
        self.assertNotIn('did you mean', err)
        self.assertIn("'xyzzy'", err)

    def test_help_of_a_command_still_works(self):
        status, out, _err = self.run_cli('help', 'compare')
        self.assertEqual(0, status)
        self.assertIn('usage: nova-pmem-planner compare', out)


class BadOptionTestCase(PlannerTestCase):
    """A misspelt option: one line, not the usage block, exit 2."""

    def test_planner_command(self):
        status, out, err = self.run_cli('compare', '--bogus')
        self.assertEqual((2, ''), (status, out))
        self.assertEqual(
            "nova-pmem-planner compare: error: unrecognized arguments: "
            "--bogus (see 'nova-pmem-planner help compare')\n", err)

    def test_every_planner_command(self):
        for name in _planner_commands():
            status, out, err = self.run_cli(name, '--bogus')
            self.assertEqual(2, status, name)
            self.assertEqual(1, len(err.splitlines()), err)
            self.assertNotIn('usage:', err, name)
            self.assertIn("(see 'nova-pmem-planner help %s')" % name, err)

    def test_bad_value(self):
        status, _out, err = self.run_cli('compare', '-f', 'xml')
        self.assertEqual(2, status)
        self.assertEqual(1, len(err.splitlines()), err)
        self.assertIn("invalid choice: 'xml'", err)

    def test_option_before_any_command(self):
        status, out, err = self.run_cli('--bogus')
        self.assertEqual((2, ''), (status, out))
        self.assertEqual("nova-pmem-planner: error: unrecognized arguments: "
                         "--bogus (see 'nova-pmem-planner --help')\n", err)

    def test_doctor(self):
        # One line; the audit did not run, so the doctor's "unknown" (3),
        # not 2, which says the cloud has errors.
        status, out, err = _run(self, doctor_cli.main, ['check', '--bogus'])
        self.assertEqual((3, ''), (status, out))
        self.assertEqual(
            "nova-pmem-doctor check: error: unrecognized arguments: --bogus "
            "(see 'nova-pmem-doctor help check')\n", err)

    def test_doctor_help_of_a_misspelt_command(self):
        status, out, err = _run(self, doctor_cli.main, ['help', 'chekc'])
        self.assertEqual((3, ''), (status, out))
        self.assertEqual(
            "nova-pmem-doctor: error: unknown command 'chekc'; did you mean "
            "'check'? (see 'nova-pmem-doctor --help')\n", err)

    def test_discover_and_observe(self):
        for prog, main in (('nova-pmem-discover', discover_cli.main),
                           ('nova-pmem-observe', observe_cli.main)):
            status, out, err = _host_tool(main, ['--bogus'])
            self.assertEqual((2, ''), (status, out), prog)
            self.assertEqual(
                "%s: error: unrecognized arguments: --bogus (see '%s "
                "--help')\n" % (prog, prog), err)


class VersionTestCase(PlannerTestCase):
    """--version is the installed distribution's version, .devN included."""

    def test_planner(self):
        status, out, _err = _run(self, cli.main, ['--version'])
        self.assertEqual(0, status)
        self.assertEqual('nova-pmem-planner %s\n' % VERSION, out)

    def test_doctor(self):
        status, out, _err = _run(self, doctor_cli.main, ['--version'])
        self.assertEqual(0, status)
        self.assertEqual('nova-pmem-doctor %s\n' % VERSION, out)

    def test_discover_and_observe(self):
        for prog, main in (('nova-pmem-discover', discover_cli.main),
                           ('nova-pmem-observe', observe_cli.main)):
            out = io.StringIO()
            with fixtures.MonkeyPatch('sys.stdout', out):
                status, _out, _err = _host_tool(main, ['--version'])
            self.assertEqual(0, status, prog)
            self.assertEqual('%s %s\n' % (prog, VERSION), out.getvalue())


class PlainHelpTestCase(PlannerTestCase):
    """Help is plain text: no reStructuredText markup on a terminal."""

    def assertPlain(self, text, where):
        found = [line for line in text.splitlines() if RST.search(line)]
        self.assertEqual([], found, where)

    def test_every_planner_help(self):
        status, out, _err = _run(self, cli.main, ['--help'])
        self.assertEqual(0, status)
        self.assertIn('Commands:', out)
        self.assertPlain(out, 'nova-pmem-planner --help')
        for name in _planner_commands():
            status, out, err = self.run_cli('help', name)
            self.assertEqual(0, status, err)
            self.assertIn('usage: nova-pmem-planner %s' % name, out)
            self.assertPlain(out, 'help %s' % name)

    def test_doctor_help(self):
        for argv in (['--help'], ['help', 'check']):
            status, out, _err = _run(self, doctor_cli.main, argv)
            self.assertEqual(0, status, argv)
            self.assertIn('usage: nova-pmem-doctor', out)
            self.assertPlain(out, argv)

    def test_discover_and_observe_help(self):
        for module in (discover_cli, observe_cli):
            self.assertPlain(module.build_parser().format_help(),
                             module.PROG)

    def test_markup_is_converted(self):
        self.assertEqual(
            'The nova-pmem-planner tool, see the docs, Foo and planner, '
            'and a link; run:\n\n    x\n',
            application.plain_text(
                'The ``nova-pmem-planner`` tool, see :ref:`the docs <d>`, '
                ':class:`~a.b.Foo` and :doc:`planner`, and `a link '
                '<https://x>`_; run::\n\n.. note:\n    x\n'))


class CalibrationWithoutPointsTestCase(PlannerTestCase):
    """A scenario with no published gains: say so, print no blank line."""

    def test_table(self):
        status, out, err = self.run_cli('calibration', '--scenario',
                                        'cxl-cost-matched')
        self.assertEqual((0, ''), (status, out))
        self.assertEqual(1, len(clitools.messages(err)), err)
        self.assertIn('cxl-cost-matched: no calibration points', err)

    def test_machine_formats_are_empty(self):
        self.assertEqual([], self.rows('calibration', '--scenario',
                                       'cxl-cost-matched'))
        status, out, _err = self.run_cli('calibration', '--scenario',
                                         'cxl-cost-matched', '-f', 'csv')
        self.assertEqual(0, status)
        self.assertEqual(1, len(out.splitlines()))
        self.assertTrue(out.startswith('"workload"'))

    def test_print_empty_shows_the_header(self):
        _status, out, _err = self.run_cli('calibration', '--scenario',
                                          'cxl-cost-matched',
                                          '--print-empty')
        self.assertIn('workload', out)

    def test_calibrated_scenario_says_nothing(self):
        status, out, err = self.run_cli('calibration', '-f', 'json')
        self.assertEqual((0, ''), (status, err))


class DemandErrorTestCase(testtools.TestCase):
    """A bad demand names the file, the key, the value and what is allowed.

    demand is one of two forms (jsonschema oneOf): the error of the form
    that fits, not "is not valid under any of the given schemas".
    """

    def load(self, demand):
        with open(paths.of('nova_pmem_filters', 'planner', 'data',
                           'telco-cost-matched.yaml'),
                  encoding='utf-8') as f:
            data = yaml.safe_load(f)
        data['demand'] = demand
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            's.yaml')
        with open(path, 'w', encoding='utf-8') as f:
            yaml.safe_dump(data, f)
        exc = self.assertRaises(errors.ScenarioError, scenario.load, path)
        message = str(exc)
        self.assertNotIn('is not valid under any', message)
        self.assertTrue(message.startswith(path + ': '), message)
        return message[len(path) + 2:]

    def test_negative_count(self):
        self.assertEqual('demand.redis: must be at least 0, got -3 '
                         '(allowed: a whole number >= 0)',
                         self.load({'redis': -3}))

    def test_negative_count_of_a_period(self):
        self.assertEqual(
            'demand.0.vms.redis: must be at least 0, got -3 (allowed: a '
            'whole number >= 0)',
            self.load([{'name': 'y1', 'years': 1, 'vms': {'redis': -3}}]))

    def test_fraction(self):
        self.assertIn('demand.redis: expected integer, got 1.5 (allowed: '
                      'a whole number >= 0)', self.load({'redis': 1.5}))

    def test_period_without_vms(self):
        self.assertEqual("demand.0: 'vms' is a required property",
                         self.load([{'name': 'y1', 'years': 1}]))

    def test_neither_form(self):
        self.assertEqual("demand: expected object or array, got 'lots'",
                         self.load('lots'))


class EmptyCellTestCase(PlannerTestCase):
    """A missing value is an empty cell in a table, null for scripts."""

    ARGS = ('compare', '--fleet', EXAMPLE_FLEET)

    def test_table_and_value(self):
        for fmt in ('table', 'value', 'csv'):
            status, out, err = self.run_cli(*(self.ARGS + (
                '--long', '-f', fmt)))
            self.assertEqual(0, status, err)
            self.assertNotIn('None', out, fmt)
        status, out, _err = self.run_cli(*(self.ARGS + (
            '-f', 'value', '-c', 'config', '-c', 'cost_per_vm')))
        fleet_lines = [line for line in out.splitlines()
                       if line.startswith('fleet:')]
        self.assertTrue(fleet_lines)
        for line in fleet_lines:
            self.assertEqual(1, len(line.split()), line)

    def test_json_and_yaml_keep_null(self):
        rows = self.rows(*self.ARGS)
        fleet_rows = [r for r in rows if r['config'].startswith('fleet:')]
        self.assertTrue(fleet_rows)
        for row in fleet_rows:
            self.assertIsNone(row['cost_per_vm'])
            self.assertIsNone(row['cost_vs_baseline_pct'])

    def test_sorting_on_a_column_with_empty_cells(self):
        status, out, err = self.run_cli(*(self.ARGS + (
            '--sort-column', 'cost_per_vm', '-f', 'value', '-c', 'config')))
        self.assertEqual(0, status, err)
        self.assertNotIn('Could not sort', err)
        # Rows without a value last, as cliff sorts None.
        self.assertTrue(out.splitlines()[-1].startswith('fleet:'))

    def test_fleet_total_row(self):
        status, out, _err = self.run_cli('fleet', '--fleet', EXAMPLE_FLEET)
        self.assertEqual(0, status)
        self.assertNotIn('None', out)


class CompareColumnsTestCase(PlannerTestCase):
    """Columns added for scripts; none renamed, moved or removed."""

    def test_existing_columns_keep_their_place(self):
        status, out, _err = self.run_cli('compare', '-f', 'csv')
        header = out.splitlines()[0].replace('"', '').split(',')
        self.assertEqual(list(tables.COMPARISON_COLUMNS),
                         header[:len(tables.COMPARISON_COLUMNS)])
        self.assertEqual(['cost_vs_baseline_pct', 'currency'],
                         header[len(tables.COMPARISON_COLUMNS):])

    def test_cost_vs_baseline_as_a_number(self):
        for row in self.rows('compare'):
            self.assertRegex(row['cost_vs_baseline'], r'^[+-]\d+\.\d%$')
            self.assertIsInstance(row['cost_vs_baseline_pct'], float)
            self.assertAlmostEqual(float(row['cost_vs_baseline'][:-1]),
                                   row['cost_vs_baseline_pct'], delta=0.05)
        self.assertEqual([0.0, 0.0], [
            r['cost_vs_baseline_pct'] for r in self.rows('compare')
            if r['config'] == 'dram-384'])

    def test_currency(self):
        self.assertEqual({'USD'}, {r['currency']
                                   for r in self.rows('compare')})
        _status, out, _err = self.run_cli('compare', '--long')
        self.assertIn('currency', out.splitlines()[1])
        self.assertIn('USD', out)
        # The table a reader sees without --long: the help says the unit.
        _status, out, _err = self.run_cli('help', 'compare')
        self.assertIn('cost_per_vm are in USD', ' '.join(out.split()))
        self.assertIn('cost_vs_baseline_pct', out)


class BindingHelpTestCase(PlannerTestCase):
    """The help of the commands with a binding column explains each value."""

    def test_every_constraint_has_a_meaning(self):
        self.assertEqual(set(vmsizing.CONSTRAINTS), set(tables.BINDINGS))

    def test_help_lists_every_value(self):
        for command in ('compare', 'search', 'fleet'):
            status, out, _err = self.run_cli('help', command)
            self.assertEqual(0, status)
            self.assertIn('binding: the constraint that limits VMs per '
                          'node', out, command)
            listed = re.findall(r'^  (\w+)  ', out[out.index('binding: '):],
                                re.M)
            self.assertEqual(list(vmsizing.CONSTRAINTS), listed, command)

    def test_other_commands_do_not(self):
        _status, out, _err = self.run_cli('help', 'configs')
        self.assertNotIn('binding:', out)
