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
"""The nova-pmem-planner command line: output formats, columns, sorting.

Commands run in-process through nova_pmem_filters.planner.cli.main with
sys.stdout and sys.stderr replaced, except the no-Nova check, which needs a
fresh interpreter.
"""

import csv
import io
import json
import os
import textwrap

import fixtures
import testtools
import yaml

from nova_pmem_filters.planner import cli
from nova_pmem_filters.planner import tables
from tests.unit import clitools
from tests.unit import paths

COMMANDS = ('compare', 'calibration', 'configs')

# Columns every consumer of `compare -f json` may rely on.
COMPARE_COLUMNS = ('config', 'workload', 'mode', 'visible_memory_gb',
                   'vms_per_node', 'binding', 'node_cost', 'cost_per_vm',
                   'node_watts', 'vms_per_kw', 'relative_throughput')

# Commands whose table shows the columns that decide, and --long all.
LONG_COMMANDS = ('compare', 'search', 'fleet', 'calibration', 'configs')
EXAMPLE_FLEET = paths.of('etc', 'examples', 'fleet')
LONG_ARGS = {
    'compare': (),
    'search': ('--platform', 'ice-lake-2s', '--cpu', 'xeon-gold-6330',
               '--limit', '5'),
    'fleet': ('--fleet', EXAMPLE_FLEET),
    'calibration': (),
    'configs': (),
}
# The columns of each short table: those the issue that asked for them
# lists (search and fleet: the config's or kind's name spells the mode;
# fleet: each workload's density, binding and fleet total).
SHORT_TABLES = {
    'compare': ['config', 'workload', 'vms_per_node', 'binding',
                'cost_per_vm', 'vms_per_kw', 'relative_throughput',
                'warnings'],
    'search': ['rank', 'config', 'vms_per_node', 'binding',
               'cost_per_vm', 'warnings', 'equivalents'],
    'calibration': ['workload', 'config', 'baseline_vms', 'config_vms',
                    't_hit', 'model_gain', 'node_gain', 'reference'],
    'configs': ['config', 'mode', 'population', 'dram_gb', 'pmem_gb',
                'node_cost', 'checks'],
    'fleet': ['kind', 'count', 'redis', 'redis_binding', 'redis_fleet',
              'mysql', 'mysql_binding', 'mysql_fleet'],
}
# A terminal of 100 columns holds each short table of the examples.
TERMINAL = {}


def table_header(out):
    """The header cells of a cliff table, as column names.

    A money column's header also names the currency ("cost_per_vm USD");
    that is checked, and taken off.
    """
    names = []
    for cell in clitools.table(out)[0]:
        name = cell.partition(' ')[0]
        assert cell == (('%s %s' % (name, tables.CURRENCY))
                        if name in tables.MONEY_COLUMNS else name), cell
        names.append(name)
    return names


# Field notes, section 1: VMs per node (DRAM node, Memory-Mode node) and
# the Memory-Mode node's published node-throughput gain.
PUBLISHED_VMS = {'redis': (14, 19), 'mysql': (15, 20)}
PUBLISHED_GAIN = {'redis': 1.10, 'mysql': 1.20}


def _strict_json(text):
    """json.loads that refuses NaN and Infinity, as strict parsers do."""
    def refuse(name):
        raise ValueError('not JSON: %s' % name)
    return json.loads(text, parse_constant=refuse)


class CliTestCase(testtools.TestCase):

    def run_ok(self, *argv):
        status, out, err = clitools.run_cli(self, argv)
        self.assertEqual(0, status, err)
        return out, err

    def rows(self, command, *argv):
        out, _err = self.run_ok(command, '-f', 'json', *argv)
        return _strict_json(out)


class OutputFormatTestCase(CliTestCase):

    def test_json(self):
        for command in COMMANDS:
            rows = self.rows(command)
            self.assertIsInstance(rows, list, command)
            self.assertTrue(rows, command)
            for row in rows:
                self.assertIsInstance(row, dict, command)

    def test_yaml(self):
        for command in COMMANDS:
            out, _err = self.run_ok(command, '-f', 'yaml')
            self.assertEqual(self.rows(command), yaml.safe_load(out),
                             command)

    def test_csv(self):
        for command in COMMANDS:
            out, _err = self.run_ok(command, '-f', 'csv')
            table = list(csv.reader(io.StringIO(out)))
            expected = self.rows(command)
            self.assertEqual(list(expected[0]), table[0], command)
            self.assertEqual(len(expected), len(table) - 1, command)
            for row, line in zip(expected, table[1:]):
                self.assertEqual(len(row), len(line), command)
                self.assertEqual(row[table[0][0]], line[0], command)

    def test_value(self):
        for command in COMMANDS:
            out, _err = self.run_ok(command, '-f', 'value', '-c', 'config')
            expected = [row['config'] for row in self.rows(command)]
            self.assertEqual(expected, out.splitlines(), command)

    def test_value_several_columns(self):
        out, _err = self.run_ok('compare', '-f', 'value', '-c', 'config',
                                '-c', 'workload', '-c', 'vms_per_node')
        lines = [line.split() for line in out.splitlines()]
        self.assertEqual(
            [[row['config'], row['workload'], str(row['vms_per_node'])]
             for row in self.rows('compare')], lines)

    def test_table(self):
        for command in COMMANDS:
            # --long: the table has every column of the machine formats
            # (without it, compare shows the columns that decide; see
            # LongListingTestCase).
            out, _err = self.run_ok(command, '-f', 'table', '--long') \
                if command in LONG_COMMANDS else self.run_ok(command, '-f',
                                                             'table')
            lines = out.splitlines()
            borders = [line for line in lines if line.startswith('+')]
            rows = self.rows(command)
            # Top, under the header, bottom; long cells may wrap onto more
            # lines, so only the header is compared cell by cell.
            self.assertEqual(3, len(borders), command)
            self.assertEqual(list(rows[0]), table_header(out), command)
            cells = [line for line in lines if line.startswith('|')]
            self.assertGreaterEqual(len(cells) - 1, len(rows), command)

    def test_table_is_the_default(self):
        default, _err = self.run_ok('compare')
        table, _err = self.run_ok('compare', '-f', 'table')
        self.assertEqual(table, default)

    def test_compare_columns(self):
        rows = self.rows('compare')
        self.assertEqual(2 * 2, len(rows))
        for row in rows:
            for column in COMPARE_COLUMNS:
                self.assertIn(column, row)
            self.assertIsInstance(row['vms_per_node'], int)
            self.assertIsInstance(row['binding'], str)
            for column in ('visible_memory_gb', 'node_cost', 'cost_per_vm',
                           'node_watts', 'vms_per_kw',
                           'relative_throughput'):
                self.assertIsInstance(row[column], (int, float), column)

    def test_select_columns(self):
        rows = self.rows('compare', '-c', 'workload', '-c', 'vms_per_node')
        self.assertEqual(4, len(rows))
        for row in rows:
            self.assertEqual(['workload', 'vms_per_node'], list(row))

    def test_select_columns_csv(self):
        out, _err = self.run_ok('calibration', '-f', 'csv', '-c', 't_hit',
                                '-c', 'workload')
        table = list(csv.reader(io.StringIO(out)))
        # cliff keeps the command's own column order.
        self.assertEqual(['workload', 't_hit'], table[0])
        self.assertEqual(['redis', 'mysql'], [r[0] for r in table[1:]])

    def test_sort_column(self):
        rows = self.rows('compare', '--sort-column', 'vms_per_node')
        vms = [row['vms_per_node'] for row in rows]
        self.assertEqual(sorted(vms), vms)
        self.assertEqual(14, vms[0])
        rows = self.rows('compare', '--sort-column', 'vms_per_node',
                         '--sort-descending')
        vms = [row['vms_per_node'] for row in rows]
        self.assertEqual(sorted(vms, reverse=True), vms)

    def test_sort_on_two_columns(self):
        rows = self.rows('compare', '--sort-column', 'workload',
                         '--sort-column', 'cost_per_vm')
        keys = [(row['workload'], row['cost_per_vm']) for row in rows]
        self.assertEqual(sorted(keys), keys)

    def test_builtin_scenario_by_name_and_file(self):
        default = self.rows('compare')
        self.assertEqual(default, self.rows('compare', '--scenario',
                                            'telco-cost-matched'))
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'telco.yaml')
        here = os.path.dirname(cli.__file__)
        with open(os.path.join(here, 'data', 'telco-cost-matched.yaml'),
                  encoding='utf-8') as src:
            text = src.read()
        with open(path, 'w', encoding='utf-8') as dst:
            dst.write(text)
        self.assertEqual(default, self.rows('compare', '--scenario', path))


class LongListingTestCase(CliTestCase):
    """Short tables for people, every column for scripts and --long."""

    def test_table_shows_the_columns_that_decide(self):
        for command in LONG_COMMANDS:
            out, _err = self.run_ok(command, *LONG_ARGS[command])
            self.assertEqual(SHORT_TABLES[command], table_header(out),
                             command)
            width = max(len(line) for line in out.splitlines())
            self.assertLessEqual(width, TERMINAL.get(command, 100),
                                 command)

    def test_long_table_has_every_column(self):
        for command in LONG_COMMANDS:
            out, _err = self.run_ok(command, '--long', *LONG_ARGS[command])
            rows = self.rows(command, *LONG_ARGS[command])
            self.assertEqual(list(rows[0]), table_header(out), command)
            self.assertGreater(len(rows[0]), len(SHORT_TABLES[command]))

    def test_machine_formats_keep_every_column(self):
        for command in LONG_COMMANDS:
            for fmt in ('json', 'yaml', 'csv', 'value'):
                plain, _err = self.run_ok(command, '-f', fmt,
                                          *LONG_ARGS[command])
                long, _err = self.run_ok(command, '-f', fmt, '--long',
                                         *LONG_ARGS[command])
                self.assertEqual(long, plain, '%s -f %s' % (command, fmt))
        # Every column of compare a script has relied on is still there.
        columns = list(self.rows('compare')[0])
        for column in COMPARE_COLUMNS:
            self.assertIn(column, columns)

    def test_columns_chosen_with_c_win(self):
        out, _err = self.run_ok('compare', '-c', 'config', '-c',
                                'node_watts')
        self.assertEqual(['config', 'node_watts'], table_header(out))

    def test_sort_on_a_column_the_table_does_not_show(self):
        out, _err = self.run_ok('compare', '--sort-column', 'node_watts',
                                '-f', 'table')
        self.assertNotIn('node_watts', table_header(out))
        configs = clitools.table(out)[1][0]
        watts = {row['config']: row['node_watts']
                 for row in self.rows('compare')}
        self.assertEqual(sorted(configs, key=watts.get), configs)
        # The cheaper-to-run Memory-Mode node comes first.
        self.assertLess(watts[configs[0]], watts[configs[-1]])

    def test_help_says_what_long_does(self):
        for command in LONG_COMMANDS:
            out, _err = self.run_ok('help', command)
            self.assertIn('--long', out, command)


class CommandContentTestCase(CliTestCase):
    """The numbers the commands print are the field notes' numbers."""

    def test_compare_rows(self):
        rows = self.rows('compare')
        self.assertEqual(['dram-384', 'dram-384', 'mm-192-512',
                          'mm-192-512'], [r['config'] for r in rows])
        for workload, (n_dram, n_mm) in PUBLISHED_VMS.items():
            # The published case: hosts that run one workload.
            by_key = {(r['config'], r['workload']): r
                      for r in self.rows('compare', '--workload', workload)}
            base = by_key['dram-384', workload]
            mm = by_key['mm-192-512', workload]
            self.assertEqual(n_dram, base['vms_per_node'])
            self.assertEqual(n_mm, mm['vms_per_node'])
            self.assertEqual(1.0, base['relative_throughput'])
            self.assertAlmostEqual(PUBLISHED_GAIN[workload],
                                   mm['relative_throughput'], places=3)
            for row in (base, mm):
                self.assertAlmostEqual(
                    row['node_cost'] / row['vms_per_node'],
                    row['cost_per_vm'], places=2)
        self.assertEqual('mm-ratio', by_key['mm-192-512', 'mysql'][
            'warnings'])

    def test_compare_shared_hosts(self):
        # Both workloads on each configuration's hosts, with the one
        # ram_allocation_ratio nova-config prints for them: MySQL gets
        # the ratio Redis needs, and each row that loses VMs says so.
        rows = {(r['config'], r['workload']): r for r in self.rows('compare')}
        for config, (n_dram, n_mm) in (('dram-384', (14, 15)),
                                       ('mm-192-512', (19, 20))):
            row = rows[config, 'mysql']
            self.assertEqual((min(n_dram, n_mm), 'shared_ratio'),
                             (row['vms_per_node'], row['binding']))
        _out, err = self.run_ok('compare', '-f', 'json')
        notes = [line for line in clitools.messages(err)
                 if ': note ' in line]
        self.assertEqual(
            ['dram-384: note shared_ratio: mysql: 14 VMs per node at the '
             'ram_allocation_ratio 1.3333 shared with redis; 15 on hosts of '
             'its own (--workload mysql)',
             'mm-192-512: note shared_ratio: mysql: 19 VMs per node at the '
             'ram_allocation_ratio 1.3333 shared with redis; 20 on hosts of '
             'its own (--workload mysql)'], notes)

    def test_compare_reports_population_warnings_on_stderr(self):
        _out, err = self.run_ok('compare', '-f', 'json')
        lines = [line for line in clitools.messages(err)
                 if ': note ' not in line]
        self.assertEqual(1, len(lines), err)
        self.assertIn('mm-192-512', lines[0])
        self.assertIn('mm-ratio', lines[0])
        self.assertIn('1:2.7', lines[0])

    def test_calibration_rows(self):
        rows = self.rows('calibration')
        self.assertEqual(['redis', 'mysql'], [r['workload'] for r in rows])
        for row in rows:
            gain = PUBLISHED_GAIN[row['workload']]
            n_dram, n_mm = PUBLISHED_VMS[row['workload']]
            self.assertEqual('mm-192-512', row['config'])
            # node_gain, and under its old name for the scripts that read
            # the machine formats.
            self.assertEqual(gain, row['node_gain'])
            self.assertEqual(gain, row['published_gain'])
            self.assertAlmostEqual(gain, row['model_gain'], places=4)
            self.assertEqual((n_dram, n_mm),
                             (row['baseline_vms'], row['config_vms']))
            self.assertAlmostEqual(gain * n_dram / n_mm, row['t_hit'],
                                   places=4)

    def test_configs_rows(self):
        rows = {r['config']: r for r in self.rows('configs')}
        self.assertEqual({'dram-384', 'mm-192-512'}, set(rows))
        self.assertEqual('24 x ddr4-16', rows['dram-384']['population'])
        self.assertEqual('12 x ddr4-16 + 4 x pmem100-128',
                         rows['mm-192-512']['population'])
        self.assertEqual((384, 0), (rows['dram-384']['dram_gb'],
                                    rows['dram-384']['pmem_gb']))
        self.assertEqual((192, 512), (rows['mm-192-512']['dram_gb'],
                                      rows['mm-192-512']['pmem_gb']))
        for row in rows.values():
            self.assertEqual('', row['errors'])
        self.assertEqual('', rows['dram-384']['warnings'])
        self.assertIn('1:2.7', rows['mm-192-512']['warnings'])

    def test_zero_priced_baseline(self):
        # Prices are inputs the operator replaces; leaving them at zero must
        # not divide by zero, and the JSON stays strict (null, not NaN).
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'free.yaml')
        with open(path, 'w', encoding='utf-8') as f:
            f.write(textwrap.dedent("""\
                name: free
                catalog:
                  cpus:
                    xeon-gold-6148: {cores: 20, threads: 40, price: 0,
                                     watts: 0, memory_limit_gb: 768}
                  dimms:
                    ddr4-16: {type: ddr4, capacity_gb: 16, price: 0,
                              watts: 0}
                  platforms:
                    purley-2s: {sockets: 2, controllers_per_socket: 2,
                                channels_per_socket: 6, slots_per_channel: 2,
                                base_cost: 0, base_watts: 0}
                configs:
                  free: {platform: purley-2s, cpu: xeon-gold-6148,
                         mode: dram, per_socket: {ddr4-16: 12}}
                workloads:
                  w: {vcpus: 4, ram_gb: 32}
                """))
        rows = self.rows('compare', '--scenario', path)
        self.assertEqual(1, len(rows))
        self.assertEqual(10, rows[0]['vms_per_node'])
        self.assertEqual(0, rows[0]['cost_per_vm'])
        self.assertIsNone(rows[0]['cost_vs_baseline'])
        self.assertIsNone(rows[0]['vms_per_kw'])
