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
"""The scheduling simulator, the sweep and their commands."""

import json
import os
import subprocess
import sys
import textwrap

import fixtures
import hypothesis
from hypothesis import strategies as st
import numpy as np
import testtools
import yaml

from nova_pmem_filters.core import profile
from planner import errors
from planner import scenario
from planner import simulate
from planner import sweep
from tests.unit import clitools

BUILTIN = scenario.load()
PROPERTY = hypothesis.settings(derandomize=True, deadline=None,
                               max_examples=40, database=None)


def _fleet(nodes=None, scheduler=None):
    nodes = nodes or {'dram-384': 3, 'mm-192-512': 3}
    return simulate.Fleet(simulate.kinds_of_configs(BUILTIN, nodes),
                          scheduler)


class TraceTestCase(testtools.TestCase):

    def test_synthetic_is_seeded_and_ordered(self):
        mix = {'redis': 50, 'mysql': 30}
        one = simulate.synthetic(mix, days=90, lifetime_days=10, seed=4)
        self.assertEqual(one, simulate.synthetic(mix, days=90,
                                                 lifetime_days=10, seed=4))
        self.assertNotEqual(one, simulate.synthetic(mix, days=90,
                                                    lifetime_days=10,
                                                    seed=5))
        times = [e.time for e in one]
        self.assertEqual(sorted(times), times)
        booted = set()
        for e in one:
            if e.kind == simulate.BOOT:
                booted.add(e.instance)
            else:
                self.assertIn(e.instance, booted)
        # Little's law: about 50 + 30 VMs alive once the fleet settles.
        alive = 0
        counts = []
        for e in one:
            alive += 1 if e.kind == simulate.BOOT else -1
            if e.time > 45 * simulate.SECONDS_PER_DAY:
                counts.append(alive)
        self.assertLess(abs(np.mean(counts) - 80) / 80, 0.2)

    def _csv(self, text):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'trace.csv')
        with open(path, 'w') as f:
            f.write(textwrap.dedent(text))
        return path

    def test_csv_round_trip(self):
        events = simulate.synthetic({'redis': 5}, days=20, seed=1)
        path = os.path.join(self.useFixture(fixtures.TempDir()).path, 't')
        with open(path, 'w') as f:
            simulate.write_csv(events, f)
        back = simulate.read_csv(path, simulate.flavors_of(BUILTIN))
        self.assertEqual([(e.kind, e.instance, e.flavor) for e in events],
                         [(e.kind, e.instance, e.flavor) for e in back])

    def test_malformed_lines_are_named(self):
        flavors = simulate.flavors_of(BUILTIN)
        for body, message in (
                ('0,boot,a,redis\n1,start,b,redis\n',
                 "line 3: event 'start' is not one of boot, delete"),
                ('0,boot,a,redis\nsoon,boot,b,redis\n',
                 "line 3: time 'soon' is not a number"),
                ('5,boot,a,redis\n1,boot,b,redis\n',
                 'line 3: time 1 is before the line above'),
                ('0,boot,a,nginx\n', "line 2: unknown flavor 'nginx'"),
                ('0,boot,a\n', 'line 2: expected 4 fields')):
            path = self._csv('time,event,instance,flavor\n' + body)
            exc = self.assertRaises(errors.TraceError, simulate.read_csv,
                                    path, flavors)
            self.assertIn(path, str(exc))
            self.assertIn(message, str(exc))


class ReplayTestCase(testtools.TestCase):

    @PROPERTY
    @hypothesis.given(seed=st.integers(0, 10 ** 6),
                      near=st.booleans(),
                      scale=st.sampled_from([0.5, 1.0, 2.0]))
    def test_never_beyond_any_bound(self, seed, near, scale):
        fleet = _fleet(scheduler=simulate.Scheduler(near_memory=near))
        flavors = simulate.flavors_of(BUILTIN)
        events = simulate.synthetic({'redis': int(60 * scale),
                                     'mysql': int(50 * scale)},
                                    days=40, lifetime_days=8, seed=seed)
        checked = []

        def check(_count):
            self.assertTrue(np.all(fleet.mem_used <= fleet.mem_cap))
            self.assertTrue(np.all(fleet.vcpu_used <= fleet.vcpu_cap))
            mm = fleet.memory_mode
            self.assertTrue(np.all(fleet.hot_used[mm]
                                   <= fleet.cache_mb[mm] + 1))
            checked.append(1)

        result = simulate.replay(fleet, flavors, events, progress=check)
        self.assertEqual(len(events), len(checked))
        placed = sum(1 for d in result.decisions if d[2])
        self.assertEqual(result.boots, len(result.decisions))
        self.assertEqual(result.boots - placed,
                         sum(sum(v.values())
                             for v in result.rejected.values()))

    def test_model_density_is_reached_by_one_flavor(self):
        # One flavor, more than the fleet holds: every node fills to the
        # per-node model's density, and the rest are rejected by name.
        nodes = {'mm-192-512': 4}
        run = simulate.run(BUILTIN, nodes=nodes, mix={'redis': 20000},
                           days=30, lifetime_days=1000, seed=2)
        from planner import model
        node = model.node(BUILTIN.configs['mm-192-512'], BUILTIN.policies)
        vms, _binding = model.density(node, BUILTIN.workloads['redis'],
                                      BUILTIN.policies)
        fleet = run.result.fleet
        self.assertEqual([vms] * 4, list(fleet.instances))
        self.assertGreater(sum(run.result.rejected[
            simulate.NO_RESOURCES].values()) + sum(run.result.rejected[
                'dram_cache'].values()), 0)
        total = run.rows[-1]
        self.assertEqual('total', total['kind'])
        self.assertEqual(4 * vms, total['vms_peak'])

    def test_latency_flavors_stay_on_dram(self):
        scen = BUILTIN
        flavors = simulate.flavors_of(scen)
        fleet = _fleet()
        events = simulate.synthetic({'mysql': 40}, days=30, seed=3)
        result = simulate.replay(fleet, flavors, events)
        modes = {k.name: k.profile.mode for k in fleet.kinds}
        allowed = scen.workloads['mysql'].request.modes
        for _uuid, _flavor, host, _reason in result.decisions:
            if host:
                self.assertIn(modes[host.rsplit('-', 1)[0]], allowed)

    def test_unknown_profile_hosts_reject_by_name(self):
        kinds = [simulate.HostKind(
            name='mystery', profile=profile.HostProfile(problem='no mode'),
            vcpus=64, memory_mb=262144, dram_gb=256)]
        fleet = simulate.Fleet(kinds)
        host, reason = fleet.choose(simulate.flavors_of(BUILTIN)['redis'])
        self.assertIsNone(host)
        self.assertEqual('unknown_profile', reason)


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

    def test_optimize_bad_input_is_one_line(self):
        for argv, message in (
                (('--demand', 'redis'), '--demand redis: expected'),
                (('--demand', 'nginx=4'), "unknown workload 'nginx'"),
                (('--budget', '-3'), '--budget -3: expected a number'),
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
        fleet_dir = os.path.join(os.path.dirname(__file__), os.pardir,
                                 os.pardir, 'etc', 'examples', 'fleet')
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


class DaskTestCase(testtools.TestCase):
    """The sweep on a dask.distributed LocalCluster, in a fresh process.

    The unit tests' workers carry Nova's eventlet monkey-patching, which
    Dask's event loop must not run under.
    """

    def test_dask_matches_joblib(self):
        script = textwrap.dedent('''
            import json
            from dask import distributed
            from planner import sweep
            points = sweep.grid(power_prices=[0.05, 0.2],
                                demand_scales=[1, 2])
            with distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                          processes=True,
                                          dashboard_address=None) as cl:
                rows = sweep.run(None, points,
                                 dask_address=cl.scheduler_address,
                                 time_limit=30)
            local = sweep.run(None, points, jobs=1, time_limit=30)
            print(json.dumps([rows, local]))
        ''')
        proc = subprocess.run([sys.executable, '-c', script],
                              capture_output=True, text=True, timeout=600)
        self.assertEqual(0, proc.returncode, proc.stderr[-3000:])
        rows, local = json.loads(proc.stdout.strip().splitlines()[-1])
        self.assertEqual(4, len(rows))
        self.assertEqual(local, rows)


class NumaSimulateTestCase(testtools.TestCase):
    """The simulator has no host cells: NUMA-bound workloads are refused."""

    def setUp(self):
        super().setUp()
        text, _source = scenario.read_text()
        raw = yaml.safe_load(text)
        raw['workloads']['split'] = {'vcpus': 4, 'ram_gb': 32,
                                     'numa_nodes': 2}
        self.scen = scenario.parse(yaml.safe_dump(raw), 'numa scenario')

    def test_mix_refused(self):
        exc = self.assertRaises(
            errors.PlannerError, simulate.run, self.scen,
            nodes={'dram-384': 2}, mix={'redis': 5, 'split': 5}, days=5)
        self.assertIn('workload split has numa_nodes: 2', str(exc))

    def test_trace_refused(self):
        events = [simulate.Event(0.0, simulate.BOOT, 'i-1', 'split')]
        exc = self.assertRaises(
            errors.PlannerError, simulate.run, self.scen,
            nodes={'dram-384': 2}, mix={'redis': 5}, events=events)
        self.assertIn('workload split has numa_nodes: 2', str(exc))

    def test_others_still_simulated(self):
        run = simulate.run(self.scen, nodes={'dram-384': 2},
                           mix={'redis': 5, 'split': 0}, days=5)
        self.assertTrue(run.rows)
