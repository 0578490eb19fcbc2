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
"""Commands that start fast: nothing heavy on their start-up path.

Each tool runs as its console script does
(``nova_pmem_filters.cli.entrypoints``), in a fresh interpreter, and the
modules it imported are read from ``sys.modules`` afterwards. Time is
``benchmarks/startup.py``'s to measure; these tests look only at imports, so
they fail on any machine when a top-level import of a heavy library comes back:
in a planner command module (``--help`` imports them all), in a tool's cli
module, or in what they import.

The replacements that keep the start-up short print what they replace:
the listings of ``compare``, ``calibration`` and ``configs`` without
pandas (:func:`nova_pmem_filters.planner.tables.listing`), the list of commands
of ``--help`` without reading every installed distribution
(:func:`nova_pmem_filters.cli.application.list_commands`), and a library of the
planner extra that a command imports as it runs is still named in one line
when it is missing.
"""

import argparse
import decimal
import io
import json
import math
import os
import re
import subprocess
import sys
import textwrap

import fixtures
import testtools

# Runs a tool in a fresh interpreter; prints its status, output and
# sys.modules as JSON. BLOCKED modules are not installed, as far as the
# tool can tell.
_SCRIPT = textwrap.dedent("""
    import contextlib
    import importlib.abc
    import io
    import json
    import sys

    BLOCKED = %(blocked)r


    class Blocker(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if any(name == b or name.startswith(b + '.') for b in BLOCKED):
                raise ModuleNotFoundError('No module named %%r' %% name,
                                          name=name)
            return None


    sys.meta_path.insert(0, Blocker())
    sys.argv = ['nova-pmem-%(tool)s'] + %(argv)r
    from nova_pmem_filters.cli import entrypoints

    out, err = io.StringIO(), io.StringIO()
    status = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            entrypoints.%(tool)s()
        except SystemExit as exc:
            status = exc.code or 0
    json.dump({'status': status, 'stdout': out.getvalue(),
               'stderr': err.getvalue(), 'modules': sorted(sys.modules)},
              sys.__stdout__)
""")

# The numerical libraries and their helpers: seconds to import.
NUMERICAL = ('dask', 'joblib', 'matplotlib', 'numpy', 'pandas', 'scipy',
             'tqdm')
# openstacksdk and keystoneauth: the doctor's, and most of its start-up.
CLOUD = ('keystoneauth1', 'openstack')
# What no planner start (--version, --help) needs: the above, the scenario
# files' libraries and the Nova option model.
PLANNER_START = NUMERICAL + CLOUD + ('jsonschema', 'oslo_config',
                                     'prometheus_client', 'yaml')
# The planner's modules that import the numerical libraries, or the
# scenario loader (jsonschema, yaml).
PLANNER_HEAVY = tuple('nova_pmem_filters.planner.' + name for name in (
    'fleet', 'realise', 'optimize', 'patterns', 'report', 'scenario', 'search',
    'simulate'))


def run_tool(tool, argv, blocked=()):
    """(status, stdout, stderr, set of module names) of one run."""
    script = _SCRIPT % {'tool': tool, 'argv': list(argv),
                        'blocked': sorted(blocked)}
    # The doctor reads the cloud OS_CLOUD names to list its options.
    env = dict(os.environ)
    env.pop('OS_CLOUD', None)
    proc = subprocess.run([sys.executable, '-c', script], env=env,
                          capture_output=True, text=True, timeout=300)
    if proc.returncode:
        raise AssertionError('the harness failed: %s' % proc.stderr)
    result = json.loads(proc.stdout)
    return (result['status'], result['stdout'], result['stderr'],
            set(result['modules']))


class StartupImportsTest(testtools.TestCase):
    """What each tool imports to start."""

    def _imports(self, tool, argv, expect_out):
        status, out, err, modules = run_tool(tool, argv)
        self.assertEqual(0, status, err)
        # The command did run (not an early failure that imports nothing).
        self.assertIn(expect_out, out)
        return modules

    def assertNotImported(self, names, modules, what):
        tops = {m.partition('.')[0] for m in modules}
        imported = sorted(
            n for n in names
            if (n in tops if '.' not in n else
                any(m == n or m.startswith(n + '.') for m in modules)))
        self.assertEqual([], imported,
                         '%s imports these: import them in the function '
                         'that uses them '
                         '(nova_pmem_filters/planner/commands/base.py)'
                         % what)

    def test_planner_version(self):
        modules = self._imports('planner', ['--version'],
                                'nova-pmem-planner ')
        self.assertNotImported(PLANNER_START + PLANNER_HEAVY, modules,
                               'nova-pmem-planner --version')
        # No command module either: cliff imports the one that runs.
        self.assertEqual([], sorted(
            m for m in modules
            if m.startswith('nova_pmem_filters.planner.commands.')))

    def test_planner_help(self):
        # Lists every command: imports every command module.
        modules = self._imports('planner', ['--help'], '\nCommands:\n')
        self.assertIn('nova_pmem_filters.planner.commands.optimize', modules)
        self.assertNotImported(PLANNER_START + PLANNER_HEAVY, modules,
                               'nova-pmem-planner --help')

    def test_planner_compare(self):
        modules = self._imports('planner', ['compare', '-f', 'csv'],
                                '"cost_per_vm"')
        self.assertNotImported(
            NUMERICAL + CLOUD + ('oslo_config', 'prometheus_client')
            + tuple(m for m in PLANNER_HEAVY
                    if m != 'nova_pmem_filters.planner.scenario'),
            modules, 'nova-pmem-planner compare')

    def test_discover_help(self):
        modules = self._imports('discover', ['--help'],
                                'usage: nova-pmem-discover')
        self.assertNotImported(NUMERICAL + CLOUD + ('cliff', 'planner'),
                               modules, 'nova-pmem-discover --help')

    def test_observe_help(self):
        modules = self._imports('observe', ['--help'],
                                'usage: nova-pmem-observe')
        self.assertNotImported(
            NUMERICAL + CLOUD + ('cliff', 'jsonschema', 'planner'), modules,
            'nova-pmem-observe --help')

    def test_doctor_help(self):
        # openstacksdk's options are part of the help: the sdk is imported.
        modules = self._imports('doctor', ['--help'], '--os-cloud')
        self.assertNotImported(
            NUMERICAL + ('jsonschema', 'oslo_config', 'planner',
                         'nova_pmem_filters.doctor.checks',
                         'nova_pmem_filters.doctor.snapshot'),
            modules, 'nova-pmem-doctor --help')

    def test_the_harness_sees_heavy_imports(self):
        # The help of optimize builds its parser, from the optimiser's
        # constants: scipy is imported, and the harness sees it.
        modules = self._imports('planner', ['help', 'optimize'],
                                '--objective')
        self.assertIn('scipy', {m.partition('.')[0] for m in modules})
        self.assertRaises(AssertionError, self.assertNotImported,
                          ('scipy',), modules, 'help optimize')


class MissingExtraTest(testtools.TestCase):
    """A library a command imports as it runs, missing: one line."""

    def _line(self, library):
        return ("nova-pmem-planner: needs the 'planner' extra: pip install "
                "'nova-pmem-filters[planner]' (missing: %s)\n" % library)

    def test_at_start(self):
        status, out, err, _mods = run_tool('planner', ['--version'],
                                           blocked=['cliff'])
        self.assertEqual((3, '', self._line('cliff')), (status, out, err))

    def test_when_the_command_runs(self):
        for library, argv in (('jsonschema', ['compare']),
                              ('scipy', ['optimize']),
                              ('scipy', ['help', 'optimize']),
                              ('pandas', ['fleet', '--fleet', '.'])):
            status, out, err, _mods = run_tool('planner', argv,
                                               blocked=[library])
            self.assertEqual((3, '', self._line(library)),
                             (status, out, err), argv)

    def test_other_import_errors_raise(self):
        # Not a library of the extra: a bug, with its traceback.
        script = _SCRIPT % {'tool': 'planner', 'argv': ['compare'],
                            'blocked': ['nova_pmem_filters.planner.cli']}
        proc = subprocess.run([sys.executable, '-c', script],
                              capture_output=True, text=True, timeout=300)
        self.assertNotEqual(0, proc.returncode)
        self.assertIn("ModuleNotFoundError: No module named "
                      "'nova_pmem_filters.planner.cli'", proc.stderr)


def _typed(rows):
    return [[(type(v), v) for v in row] for row in rows]


class ListingTest(testtools.TestCase):
    """tables.listing: the cells frame_rows finds in a DataFrame."""

    def assertSameCells(self, rows, columns):
        import pandas as pd

        from nova_pmem_filters.planner.commands import base
        from nova_pmem_filters.planner import tables

        expected = base.frame_rows(pd.DataFrame(rows, columns=columns))
        actual = tables.listing(rows, columns)
        self.assertEqual(expected[0], actual[0])
        self.assertEqual(_typed(expected[1]), _typed(actual[1]))

    def test_column_types(self):
        nan = float('nan')
        columns = {
            'ints': [1, 2, 3], 'int_none': [1, None, 3],
            'int_float': [1, 2.5, 3], 'float_none': [1.5, None, 2.0],
            'int_nan': [1, nan, 2], 'nan': [nan, 1.5, 2.5],
            'inf': [float('inf'), 1, 2], 'all_none': [None, None, None],
            'bool': [True, False, True], 'bool_none': [True, None, False],
            'bool_int': [True, 1, 0], 'str': ['a', 'b', 'c'],
            'str_none': ['a', None, 'c'], 'str_nan': ['a', nan, 'c'],
            'str_int': ['a', 1, 2.5],
            'decimal': [decimal.Decimal('1.5'), 2, None],
            'huge': [2 ** 70, 1, None], 'int64_edge': [-2 ** 63, 0, 1],
        }
        rows = [{name: values[i] for name, values in columns.items()}
                for i in range(3)]
        self.assertSameCells(rows, tuple(columns))
        # A key a row lacks is a missing value.
        self.assertSameCells([{'a': 1}, {'b': 2}], ('a', 'b'))
        self.assertSameCells([], ('a', 'b'))

    def test_the_tables_of_every_builtin_scenario(self):
        from nova_pmem_filters.planner import fleet
        from nova_pmem_filters.planner import scenario
        from nova_pmem_filters.planner import tables
        from tests.unit import paths

        kinds = fleet.load(paths.of('etc', 'examples', 'fleet'))
        for name in scenario.builtin_names():
            scen = scenario.load(name)
            for fleet_kinds in ((), kinds):
                self.assertSameCells(
                    tables.comparison_rows(scen, fleet_kinds=fleet_kinds),
                    tables.COMPARE_COMMAND_COLUMNS)
            self.assertSameCells(tables.calibration_rows(scen),
                                 tables.CALIBRATION_COLUMNS)
            self.assertSameCells(tables.configs_rows(scen),
                                 tables.CONFIGS_COLUMNS)
            # The report's frames are those rows.
            frame = tables.comparison(scen)
            self.assertEqual(list(tables.COMPARISON_COLUMNS),
                             list(frame.columns))
            self.assertEqual(len(tables.comparison_rows(scen)), len(frame))
            self.assertFalse(any(
                isinstance(v, float) and math.isnan(v)
                for v in tables.listing(tables.comparison_rows(scen),
                                        tables.COMPARISON_COLUMNS)[1][0]))


class _Pager(object):
    """autopage's help pager, on a terminal or not, into a StringIO."""

    def __init__(self, terminal):
        self.terminal = terminal
        self.out = io.StringIO()

    def to_terminal(self):
        return self.terminal

    def __enter__(self):
        return self.out

    def __exit__(self, *exc):
        return False


class ListCommandsTest(testtools.TestCase):
    """application.list_commands prints what cliff's HelpAction prints."""

    def _help(self, make_app, terminal, ours):
        from cliff import help as cliff_help
        from nova_pmem_filters.cli import application

        self.useFixture(fixtures.EnvironmentVariable('OS_CLOUD'))
        app = make_app()
        app.options, _rest = app.parser.parse_known_args([])
        pager = _Pager(terminal)
        self.useFixture(fixtures.MonkeyPatch(
            'autopage.argparse.help_pager', lambda stream: pager))
        if ours:
            application.list_commands(app, app.parser, app.options)
        else:
            action = cliff_help.HelpAction([], argparse.SUPPRESS,
                                           default=app)
            self.assertRaises(cliff_help.HelpExit, action, app.parser,
                              app.options, None, None)
        return pager.out.getvalue()

    # A command name in colour, then the two spaces before its description.
    _COLOURED_NAME = re.compile(r'^  \x1b\[36m(.*?)\x1b\[39m *  ', re.M)

    @classmethod
    def _aligned(cls, cliffs):
        """cliff's help, its coloured command names padded as cliff 4.17 does.

        cliff 4.9 (OpenStack 2025.1's) padded a coloured name with its
        colour codes included, so not at all: its names are out of line on
        a terminal. list_commands pads the name, then colours it, as later
        cliff releases do. Output already in that form is left as it is.
        """
        return cls._COLOURED_NAME.sub(
            lambda m: '  \x1b[36m%-13s\x1b[39m  ' % m.group(1), cliffs)

    def test_aligned(self):
        later = '  \x1b[36mfleet        \x1b[39m  List\n'
        self.assertEqual(later, self._aligned(later))
        self.assertEqual(later, self._aligned(
            '  \x1b[36mfleet\x1b[39m  List\n'))
        long_name = '  \x1b[36mnova-config kolla\x1b[39m  Print\n'
        self.assertEqual(long_name, self._aligned(long_name))

    def _check(self, make_app):
        for terminal in (False, True):
            cliffs = self._aligned(self._help(make_app, terminal, ours=False))
            self.assertIn('Commands', cliffs)
            self.assertIn('(cliff)', cliffs)
            self.assertEqual(cliffs, self._help(make_app, terminal,
                                                ours=True))

    def test_planner(self):
        from nova_pmem_filters.planner import cli
        self._check(cli.PlannerApp)

    def test_doctor(self):
        from nova_pmem_filters.doctor import cli
        self._check(lambda: cli.DoctorApp([]))

    def test_the_planner_uses_it(self):
        from nova_pmem_filters.cli import application
        from nova_pmem_filters.planner import cli
        from tests.unit import clitools

        calls = []
        real = application.list_commands
        self.useFixture(fixtures.MonkeyPatch(
            'nova_pmem_filters.cli.application.list_commands',
            lambda *args: calls.append(args) or real(*args)))
        for argv in (['--help'], ['-h'], ['help']):
            try:
                status, out, _err = clitools.run_cli(self, argv)
            except SystemExit as exc:
                # --help exits, as cliff's does ("help" returns 0).
                self.assertIsNone(exc.code)
            else:
                self.assertEqual((['help'], 0), (argv, status))
                self.assertIn('\nCommands:\n', out)
        self.assertEqual(3, len(calls))
        self.assertTrue(all(app.NAME == cli.NAME for app, _p, _o in calls))

    def test_distributions_as_cliff_names_them(self):
        import importlib.metadata

        from nova_pmem_filters.cli import application

        dists = importlib.metadata.packages_distributions()

        def cliffs(package, app_package):
            name = (dists.get(package) or [None])[0]
            app_dist = (dists.get(app_package) or [None])[0]
            return name if name and name != app_dist else None

        for app_package in ('planner', 'nova_pmem_filters', 'cliff'):
            for package in ('cliff', 'planner', 'nova_pmem_filters',
                            'yaml', 'openstack', 'stevedore', 'testtools',
                            'no_such_package'):
                self.assertEqual(
                    cliffs(package, app_package),
                    application._foreign_distribution(package, app_package),
                    (package, app_package))
