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
"""The simulate and optimize commands."""

import json
import os

import fixtures
import testtools

from nova_pmem_filters.planner import simulate
from nova_pmem_filters.planner import sweep
from tests.unit import clitools
from tests.unit import paths


class CommandTestCase(testtools.TestCase):

    def run_ok(self, *argv):
        status, out, err = clitools.run_cli(self, argv)
        self.assertEqual(0, status, err)
        return out, err

    def test_optimize_json(self):
        out, _err = self.run_ok('optimize', '-f', 'json')
        rows = json.loads(out)
        total = [r for r in rows if r['fleet'] == 'optimal'
                 and r['config'] == 'total'][0]
        self.assertEqual(0.0, total['gap'])
        self.assertEqual('optimal', total['status'])
        self.assertEqual(600, total['redis'])
        self.assertTrue(any(r['fleet'].startswith('single:') for r in rows))

    def test_optimize_says_nothing_of_a_proven_fleet(self):
        # A fleet not proven optimal is named so: test_optimize.
        _out, err = self.run_ok('optimize', '--no-progress', '-f', 'json')
        self.assertEqual('', err)

    def test_optimize_nothing_served_has_gap_0(self):
        # Nothing can be served, and that is proven: gap 0, not 1e9.
        out, err = self.run_ok('optimize', '--objective', 'vms', '--budget',
                               '1', '--no-single', '--no-progress', '-f',
                               'json')
        total = [r for r in json.loads(out) if r['config'] == 'total'][0]
        self.assertEqual((0, 0.0, 'optimal'),
                         (total['objective'], total['gap'],
                          total['status']))
        self.assertEqual("optimize: fleet 'optimal' does not meet the "
                         "demand: it serves 0 of 600 redis VMs (600 unmet), "
                         "0 of 400 mysql VMs (400 unmet)\n", err)

    def test_optimize_one_node_holds_redis_10_mysql_9(self):
        for caps in ((), ('--budget', '11704'), ('--rack-units', '2')):
            out, err = self.run_ok('optimize', '--demand', 'redis=10',
                                   '--demand', 'mysql=9', '--no-single',
                                   '--no-progress', '-f', 'json', *caps)
            rows = [r for r in json.loads(out) if r['fleet'] == 'optimal']
            used = [(r['config'], r['nodes']) for r in rows
                    if r['config'] != 'total' and r['nodes']]
            self.assertEqual([('mm-192-512', 1)], used, caps)
            total = [r for r in rows if r['config'] == 'total'][0]
            self.assertEqual('optimal', total['status'])
            self.assertEqual('', err)

    def test_optimize_bad_input_is_one_line(self):
        for argv, message in (
                (('--demand', 'redis'), '--demand redis: expected'),
                (('--demand', 'nginx=4'), "unknown workload 'nginx'"),
                (('--budget', '-3'), '--budget -3: expected a number'),
                # The same bound as the scenario's economics.budget:
                # linprog was handed an infinite cap.
                (('--budget', '1e999'),
                 '--budget inf: expected a number, at most 1e+15'),
                (('--power-kw', '1' + '0' * 300),
                 '--power-kw 1e+300: expected a number, at most 1e+15'),
                (('--budget', '1000'), 'the capex budget of 1000 is too '
                                       'small')):
            status, out, err = clitools.run_cli(self, ('optimize',) + argv)
            self.assertNotEqual(0, status)
            self.assertIn(message, err)
            self.assertNotIn('Traceback', err)

    def test_simulate_writes_timeline_and_chart(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        out, _err = self.run_ok(
            'simulate', '--nodes', 'mm-192-512=6', '--nodes', 'dram-384=2',
            '--mix', 'redis=100', '--mix', 'mysql=20', '--days', '40',
            '--timeline', os.path.join(tmp, 't.csv'),
            '--chart', os.path.join(tmp, 't.png'),
            '--write-trace', os.path.join(tmp, 'trace.csv'), '-f', 'json')
        rows = json.loads(out)
        self.assertEqual(list(simulate.SUMMARY_COLUMNS), list(rows[0]))
        self.assertEqual(['mm-192-512', 'dram-384', 'total'],
                         [r['kind'] for r in rows])
        with open(os.path.join(tmp, 't.png'), 'rb') as f:
            self.assertEqual(b'\x89PNG', f.read(4))
        # The written trace replays to the same answer.
        again, _err = self.run_ok(
            'simulate', '--nodes', 'mm-192-512=6', '--nodes', 'dram-384=2',
            '--mix', 'redis=100', '--mix', 'mysql=20',
            '--trace', os.path.join(tmp, 'trace.csv'), '-f', 'json')
        self.assertEqual(rows[-1]['boots'], json.loads(again)[-1]['boots'])
        self.assertEqual(rows[-1]['rejected'],
                         json.loads(again)[-1]['rejected'])

    def test_report_adds_the_simulation(self):
        out_dir = os.path.join(self.useFixture(fixtures.TempDir()).path, 'r')
        out, _err = self.run_ok('report', '--simulate', '--output-dir',
                                out_dir, '-f', 'value', '-c', 'path')
        self.assertIn(os.path.join(out_dir, 'simulation.png'),
                      out.split())
        with open(os.path.join(out_dir, 'report.html')) as f:
            html = f.read()
        self.assertIn('<section id="simulation">', html)
        self.assertIn('mm-192-512', html)

    def test_simulate_discovered_fleet(self):
        fleet_dir = paths.of('etc', 'examples', 'fleet')
        status, _out, err = clitools.run_cli(
            self, ('simulate', '--fleet', fleet_dir, '--days', '20'))
        self.assertNotEqual(0, status)
        self.assertIn('reports no vcpus', err)
        self.assertIn('--host-vcpus N', err)
        out, _err = self.run_ok('simulate', '--fleet', fleet_dir,
                                '--host-vcpus', '80', '--days', '20',
                                '-f', 'json')
        rows = json.loads(out)
        self.assertEqual(['dram-384G', 'memory_mode-512G-192G-cache',
                          'total'], [r['kind'] for r in rows])
        # Discovered kinds are no configuration of the scenario: no model
        # figure, and none made up for the total.
        self.assertEqual([None, None, None],
                         [r['model_density'] for r in rows])
        self.assertGreater(rows[-1]['vms_peak'], 0)

    def test_simulate_fleet_with_discovered_cpus(self):
        # Profiles nova-pmem-discover writes from lscpu carry vcpus: a
        # mixed fleet needs no --host-vcpus, which overrides them.
        from nova_pmem_filters.discover import cli as discover_cli
        from nova_pmem_filters.planner import fleet as fleet_mod
        fleet_dir = self.useFixture(fixtures.TempDir()).path
        for host in ('memory-mode', 'app-direct'):
            path = os.path.join(fleet_dir, host + '.json')
            with open(path, 'w') as f:
                self.assertEqual(0, discover_cli.main(
                    ['--from', paths.of('etc', 'examples', 'discover',
                                        host)], stdout=f))
        self.assertEqual(
            {'memory-mode-1': 96, 'app-direct-1': 112},
            {k.hosts[0]: k.vcpus for k in fleet_mod.load(fleet_dir)})
        out, _err = self.run_ok('simulate', '--fleet', fleet_dir,
                                '--days', '20', '-f', 'json')
        self.assertGreater(json.loads(out)[-1]['vms_peak'], 0)
        from nova_pmem_filters.planner import scenario
        from nova_pmem_filters.planner.simulate import runner as sim_runner
        scen = scenario.load()
        self.assertEqual(
            [96, 112], sorted(k.vcpus for k in sim_runner.kinds_of_profiles(
                scen, fleet_dir)))
        self.assertEqual(
            [64, 64], [k.vcpus for k in sim_runner.kinds_of_profiles(
                scen, fleet_dir, vcpus=64)])

    def test_simulate_bad_trace_names_the_line(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(tmp, 'bad.csv')
        with open(path, 'w') as f:
            f.write('time,event,instance,flavor\n0,boot,a,redis\nx,y\n')
        status, _out, err = clitools.run_cli(
            self, ('simulate', '--nodes', 'mm-192-512=2', '--trace', path))
        self.assertNotEqual(0, status)
        self.assertIn('line 3', err)
        self.assertNotIn('Traceback', err)

    def test_simulate_bad_traces_exit_2_in_one_line(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(tmp, 'bad.csv')
        for data, message in (
                (b'\x89PNG\r\n\x1a\n\x00', 'line 1: not UTF-8 text'),
                (b'time,event,instance,flavor\n0,boot,a,redis\n'
                 b'1,boot,a,redis\n', 'line 3: instance a boots again'),
                (b'time,event,instance,flavor\n0,boot,a,redis\n'
                 b'1e12,boot,b,redis\n', 'event 2 (boot of instance b')):
            with open(path, 'wb') as f:
                f.write(data)
            status, out, err = clitools.run_cli(
                self, ('simulate', '--nodes', 'mm-192-512=2', '--trace',
                       path))
            self.assertEqual((2, ''), (status, out))
            self.assertIn(message, err)
            self.assertEqual(1, len(err.strip().splitlines()), err)

    def test_sweep_grid(self):
        out, _err = self.run_ok('sweep', '--power-price', '0.05,0.3',
                                '--hot-ratio', '0.2,0.7', '--jobs', '1',
                                '-f', 'json', '--time-limit', '30')
        rows = json.loads(out)
        self.assertEqual(4, len(rows))
        self.assertEqual(list(sweep.COLUMNS), list(rows[0]))
        by = {(r['power_price_per_kwh'], r['hot_ratio']): r for r in rows}
        # Energy costs more at the higher price; a hotter mix needs more
        # DRAM and so more or dearer nodes.
        for hot in (0.2, 0.7):
            self.assertLess(by[0.05, hot]['tco'], by[0.3, hot]['tco'])
        for price in (0.05, 0.3):
            self.assertLessEqual(by[price, 0.2]['tco'],
                                 by[price, 0.7]['tco'])
