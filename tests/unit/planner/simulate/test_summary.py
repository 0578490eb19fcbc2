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
"""What a replay comes to: the model's density beside what was packed."""

import testtools

from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.planner import model
from nova_pmem_filters.planner import scenario
from nova_pmem_filters.planner import simulate
from nova_pmem_filters.planner import vmsizing


class ModelDensityTestCase(testtools.TestCase):

    def test_every_kind_a_workload_allows_has_a_model_density(self):
        # CXL configurations are scheduled as the Optane mode they behave
        # as: a flavor allowing memory_mode runs on cxl_flat and cxl_kmem
        # nodes, and the model's density there is the per-node model's.
        for name in scenario.builtin_names():
            scen = scenario.load(name)
            for config_name, config in scen.configs.items():
                node = model.node(config, scen.policies)
                for workload in scen.workloads.values():
                    with self.subTest(scenario=name, config=config_name,
                                      workload=workload.name):
                        density = simulate.model_density(
                            scen, config_name, {workload.name: 1})
                        vms, _binding = vmsizing.density(
                            node, workload, scen.policies)
                        allowed = workload.request.allows(config.mode)
                        if not allowed or not vms:
                            self.assertIsNone(density)
                        else:
                            self.assertEqual(float(vms), density)
                        if config.mode in kinds.CXL_MODES:
                            self.assertEqual(
                                kinds.scheduled_as(config.mode)
                                in workload.request.modes, allowed)
