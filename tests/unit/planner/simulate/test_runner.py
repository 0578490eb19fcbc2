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
"""A simulation of a scenario: NUMA-bound workloads are refused."""

import testtools
import yaml

from nova_pmem_filters.planner import errors
from nova_pmem_filters.planner import scenario
from nova_pmem_filters.planner import simulate


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
