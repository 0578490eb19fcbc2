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
"""The sweep on a Dask cluster."""

import json
import subprocess
import sys
import textwrap
import types

import testtools

from nova_pmem_filters.planner import sweep
from nova_pmem_filters.planner import tables
from tests.unit.planner.report import base as report_base


class DaskTestCase(testtools.TestCase):
    """The sweep on a dask.distributed LocalCluster, in a fresh process.

    The unit tests' workers carry Nova's eventlet monkey-patching, which
    Dask's event loop must not run under.
    """

    def test_dask_matches_joblib(self):
        script = textwrap.dedent('''
            from dask import distributed
            import json
            from nova_pmem_filters.planner import sweep
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


class ChartTestCase(testtools.TestCase):
    """The sweep's chart: its legend beside the plot, not over the lines."""

    def test_legend_is_outside_the_axes(self):
        rows = [{'hot_ratio': hot, 'demand_scale': scale,
                 'power_price_per_kwh': price,
                 'tco_per_vm': 1000.0 + 100 * price * scale + (hot or 0)}
                for hot in (None, 0.25, 0.5) for scale in (1, 2)
                for price in (0.05, 0.1, 0.2, 0.4)]
        fig = sweep.figure(rows, 'TCO per VM')
        self.assertEqual(1, len(report_base.legends(fig)))
        self.assertEqual(6, len(report_base.legends(fig)[0].get_texts()))
        report_base.assert_legends_outside(self, fig)
        report_base.assert_png(self, sweep.chart_png(rows, 'TCO per VM'))

    def _figure(self):
        # TCO per VM does not move with the demand: demand x1 and x2 give
        # the same line, as a sweep of the built-in scenario does.
        rows = [{'hot_ratio': hot, 'demand_scale': scale,
                 'power_price_per_kwh': price,
                 'tco_per_vm': 700.0 + 1000 * price + 400 * hot}
                for hot in (0.2, 0.5) for scale in (1, 2)
                for price in (0.05, 0.1, 0.2)]
        return sweep.figure(rows, 'Sweep')

    def test_coinciding_lines_both_show(self):
        lines = self._figure().axes[0].get_lines()
        self.assertEqual(4, len(lines))
        by_data = {}
        for line in lines:
            by_data.setdefault(tuple(line.get_ydata()), []).append(line)
        self.assertEqual(2, len(by_data))
        for same in by_data.values():
            self.assertEqual(2, len(same))
            x1, x2 = same
            # Told apart by line style and marker, not by colour alone
            # (the later one is drawn over the earlier).
            self.assertNotEqual(x1.get_linestyle(), x2.get_linestyle())
            self.assertNotEqual(x1.get_marker(), x2.get_marker())

    def test_money_axes_name_the_currency(self):
        axis = self._figure().axes[0]
        self.assertIn(tables.CURRENCY, axis.get_ylabel())
        self.assertIn('TCO per VM', axis.get_ylabel())
        self.assertIn(tables.CURRENCY, axis.get_xlabel())


def evaluate_tiny(dimms, workload, vms):
    """The sweep's row of a one-configuration, one-workload scenario."""
    text = textwrap.dedent('''
        name: tiny
        configs:
          dram: {platform: purley-2s, cpu: xeon-gold-6148, mode: dram,
                 per_socket: {ddr4-16: %d}}
        workloads:
          w: %s
        demand: {w: %d}
    ''') % (dimms, workload, vms)
    return sweep.evaluate(text, 'tiny.yaml', sweep.Point())


class InfeasiblePointTestCase(testtools.TestCase):

    def test_an_infeasible_point_is_a_row(self):
        # It stopped the sweep: "module 'nova_pmem_filters.planner.optimize'
        # has no attribute 'Infeasible'".
        row = evaluate_tiny(12, '{vcpus: 4, ram_gb: 1000}', 10)
        self.assertTrue(row['status'].startswith('infeasible: '), row)
        self.assertIsNone(row['tco_per_vm'])


class TcoPerVmTestCase(testtools.TestCase):
    """A TCO point's VMs are its demand, not the fleet's spare slots."""

    def test_spare_slots_do_not_count(self):
        # Two optimal fleets of one TCO: nodes running patterns of 108
        # slots or of exactly 100 for a demand of 100 (SciPy 1.15 and 1.17
        # broke that tie differently). Both place 100.
        period = types.SimpleNamespace(name='now', vms={'web': 60, 'db': 40})
        for slots in ({'web': 66, 'db': 42}, {'web': 60, 'db': 40}):
            plan = types.SimpleNamespace(vms={
                ('mm', 'now'): {'web': slots['web'] - 6, 'db': slots['db']},
                ('dram', 'now'): {'web': 6, 'db': 0},
                ('dram', 'before'): {'web': 99, 'db': 99}})
            tco = types.SimpleNamespace(objective='tco',
                                        workloads=('web', 'db'))
            self.assertEqual(100, sweep._vms(tco, plan, period))
        vms = types.SimpleNamespace(objective='vms', workloads=('web', 'db'))
        self.assertEqual(108, sweep._vms(vms, plan_of(66, 42), period))

    def test_a_point_places_its_demand(self):
        row = evaluate_tiny(6, '{vcpus: 1, ram_gb: 8}', 3)
        self.assertEqual('optimal', row['status'], row)
        self.assertEqual(3, row['vms'])
        self.assertEqual(round(row['tco'] / 3, 2), row['tco_per_vm'])


def plan_of(web, db):
    return types.SimpleNamespace(vms={('mm', 'now'): {'web': web, 'db': db}})
