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
"""Population rules of DDR5 platforms and CXL memory devices."""

import testtools
import yaml

from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.planner import errors
from nova_pmem_filters.planner import population
from nova_pmem_filters.planner.population import common
from nova_pmem_filters.planner import scenario
from tests.unit.planner import cxl_cases


class RuleTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.scen = scenario.load(cxl_cases.NAME)
        self.cat = self.scen.catalog

    def config(self, mode, platform='granite-rapids-ap-2s', cpu='xeon-6980p',
               **per):
        dimms = {self.cat.dimms[n.replace('_', '-')]: c
                 for n, c in per.items()}
        plat = self.cat.platforms[platform]
        return scenario.NodeConfig(
            name='cfg', platform=plat, cpu=self.cat.cpus[cpu], mode=mode,
            sockets=tuple(dict(dimms) for _ in range(plat.sockets)))

    def codes(self, config, severity):
        return {f.code for f in population.check(config)
                if f.severity == severity}

    def test_scenario_configs_are_clean(self):
        for config in self.scen.configs.values():
            self.assertEqual([], population.check(config), config.name)

    def test_flat_ratio_error(self):
        config = self.config(kinds.CXL_FLAT, ddr5_64=12,
                             samsung_cmmd_256=4)
        self.assertIn('flat-ratio', self.codes(config, common.ERROR))
        finding = [f for f in population.check(config)
                   if f.code == 'flat-ratio'][0]
        self.assertIn('1:1.33', finding.message)
        self.assertIn('intel.com', finding.source)

    def test_flat_needs_a_xeon_6(self):
        config = self.config(kinds.CXL_FLAT, platform='turin-2s',
                             cpu='epyc-9755', ddr5_64=12,
                             micron_cz120_256=3)
        self.assertIn('flat-unsupported-cpu',
                      self.codes(config, common.ERROR))

    def test_lane_oversubscription_error(self):
        # 9 x8 devices = 72 lanes, the platform wires 64 per socket.
        config = self.config(kinds.CXL_KMEM, ddr5_64=12,
                             micron_cz120_128=9)
        self.assertIn('cxl-lanes', self.codes(config, common.ERROR))

    def test_kmem_ratio_warning(self):
        config = self.config(kinds.CXL_KMEM, ddr5_32=12,
                             micron_cz120_256=8)
        self.assertEqual(set(), self.codes(config, common.ERROR))
        self.assertIn('kmem-ratio', self.codes(config, common.WARNING))
        inside = self.config(kinds.CXL_KMEM, ddr5_64=12,
                             micron_cz120_256=3)
        self.assertNotIn('kmem-ratio',
                         self.codes(inside, common.WARNING))

    def test_ddr5_on_a_ddr4_platform(self):
        config = self.config(kinds.DRAM, platform='ice-lake-2s',
                             cpu='xeon-gold-6330', ddr5_64=8)
        self.assertIn('dimm-type-unsupported',
                      self.codes(config, common.ERROR))

    def test_cxl_on_a_cpu_without_lanes(self):
        config = self.config(kinds.CXL_KMEM, cpu='xeon-gold-6330',
                             ddr5_64=12, micron_cz120_256=3)
        self.assertIn('cxl-unsupported-cpu',
                      self.codes(config, common.ERROR))

    def test_invalid_config_is_refused_naming_it(self):
        raw = cxl_cases.raw_scenario()
        raw['configs']['flat-1536-1536']['per_socket'][
            'samsung-cmmd-256'] = 2
        exc = self.assertRaises(errors.ScenarioError, scenario.parse,
                                yaml.safe_dump(raw), 'x.yaml')
        self.assertIn('configs.flat-1536-1536', str(exc))
        self.assertIn('flat-ratio', str(exc))
