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
"""What optimize says: names that match the proof, unmet demand, limits."""

import json
import os
import sys

import fixtures
import testtools
import yaml

from tests.unit import clitools
from tests.unit import paths

sys.path.insert(0, paths.of('benchmarks'))
import fleet_optimize  # noqa: E402

# The most VMs 90,000 of capex buys: 57 of the 200 redis VMs and all 80
# mysql VMs, proven in a second.
SHORT_OF_BUDGET = ('optimize', '--objective', 'vms', '--demand', 'redis=200',
                   '--demand', 'mysql=80', '--budget', '90000')


class OptimizeOutputTestCase(testtools.TestCase):

    def run_ok(self, *argv):
        status, out, err = clitools.run_cli(self, argv)
        self.assertEqual(0, status, err)
        return json.loads(out), err

    def totals(self, rows, fleet=None):
        return [r for r in rows if r['config'] == 'total'
                and (fleet is None or r['fleet'] == fleet)]

    def test_unmet_demand_per_workload(self):
        rows, err = self.run_ok(*SHORT_OF_BUDGET + (
            '--no-single', '--no-progress', '-f', 'json'))
        total, = self.totals(rows)
        self.assertEqual(('optimal', 'optimal', 57, 80, 143, 0),
                         (total['fleet'], total['status'], total['redis'],
                          total['mysql'], total['unmet:redis'],
                          total['unmet:mysql']))
        # Per configuration rows: what they serve; unmet is the fleet's.
        for row in rows:
            if row['config'] != 'total':
                self.assertIsNone(row['unmet:redis'])
        self.assertEqual(
            "optimize: fleet 'optimal' does not meet the demand: it serves "
            "57 of 200 redis VMs (143 unmet)\n", err)

    def test_met_demand_is_not_named(self):
        rows, err = self.run_ok('optimize', '--demand', 'redis=10',
                                '--demand', 'mysql=9', '--no-progress',
                                '-f', 'json')
        for total in self.totals(rows):
            self.assertEqual((0, 0), (total['unmet:redis'],
                                      total['unmet:mysql']))
            self.assertIs(False, total['time_limited'])
        self.assertEqual('', err)

    def _bench(self):
        # Without the free nodes' proof, the listing of every pattern and
        # the bound of whole node counts (as on a problem too large for
        # them), this fleet stays 0.12% above its bound.
        self.useFixture(fixtures.MockPatch(
            'nova_pmem_filters.planner.optimize.exact.MAX_FREE_VARIABLES', 0))
        self.useFixture(fixtures.MockPatch(
            'nova_pmem_filters.planner.optimize.complete.MAX_PATTERNS', 0))
        self.useFixture(fixtures.MockPatch(
            'nova_pmem_filters.planner.optimize.nodecuts.MAX_ROUNDS', 0))
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'bench.yaml')
        with open(path, 'w') as f:
            yaml.safe_dump(fleet_optimize.raw_scenario(4, 6, seed=4), f)
        return path

    def test_a_fleet_not_proven_is_not_named_optimal(self):
        rows, err = self.run_ok('optimize', '--scenario', self._bench(),
                                '--no-single', '--no-progress', '-f', 'json')
        self.assertEqual({'best-found'}, {r['fleet'] for r in rows})
        total, = self.totals(rows)
        self.assertEqual('feasible', total['status'])
        self.assertGreater(total['gap'], 0.001)
        self.assertRegex(err, r"^optimize: fleet 'best-found' is not proven "
                              r"optimal: its gap is 0\.0012\d*, not within "
                              r"--gap 0\.001 \(\d+\.\d s\)\n$")

    def test_a_fleet_within_the_gap_is_optimal_in_name_and_status(self):
        rows, err = self.run_ok('optimize', '--scenario', self._bench(),
                                '--gap', '0.002', '--no-single',
                                '--no-progress', '-f', 'json')
        self.assertEqual({'optimal'}, {r['fleet'] for r in rows})
        total, = self.totals(rows)
        self.assertLess(0.001, total['gap'])
        self.assertLessEqual(total['gap'], 0.002)
        self.assertEqual('optimal', total['status'])
        self.assertEqual('', err)

    def test_a_time_limit_that_cut_the_search_is_said(self):
        # No time at all: column generation (on a problem with too many
        # patterns to list) stops after its first round, whatever the
        # machine's speed.
        self.useFixture(fixtures.MockPatch(
            'nova_pmem_filters.planner.optimize.complete.MAX_PATTERNS', 0))
        rows, err = self.run_ok('optimize', '--time-limit', '0',
                                '--no-single', '--no-progress', '-f', 'json')
        total, = self.totals(rows)
        self.assertIs(True, total['time_limited'])
        self.assertIn("optimize: --time-limit 0 s cut the search for fleet "
                      "'%s' short: " % total['fleet'], err)
        self.assertEqual(1, err.count('--time-limit'))

    def test_the_default_table_leaves_the_new_columns_to_long(self):
        status, out, err = clitools.run_cli(self, SHORT_OF_BUDGET + (
            '--no-single', '--no-progress'))
        self.assertEqual(0, status, err)
        self.assertNotIn('unmet', out)
        status, out, err = clitools.run_cli(self, SHORT_OF_BUDGET + (
            '--no-single', '--no-progress', '--long'))
        self.assertIn('unmet:redis', out)
        self.assertIn('time_limited', out)
