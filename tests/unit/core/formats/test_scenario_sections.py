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
"""What a reader assumes of the scenario keys a file leaves out."""

import testtools

from nova_pmem_filters.core.formats import scenario_sections as sec


def _cpu(**keys):
    return sec.Cpu(cores=8, threads=16, price=100, watts=125,
                   memory_limit_gb=512, **keys)


class ResolvedTestCase(testtools.TestCase):

    def test_absent_keys_take_the_assumed_values(self):
        cpu = sec.resolved(_cpu())
        self.assertEqual((), cpu.pmem_generations)
        self.assertEqual('', cpu.description)
        self.assertIs(False, cpu.flat_memory_mode)
        # A key with nothing assumed stays absent.
        self.assertIsNone(cpu.cxl_lanes_source)
        policies = sec.resolved(sec.Policies())
        self.assertEqual(0.9, policies.memory_cap)
        self.assertEqual(1.0 / 64, policies.namespace_overhead)

    def test_the_stored_value_is_left_absent(self):
        # The writer leaves out what the file left out.
        self.assertIsNone(_cpu().pmem_max_module_gb)
        self.assertNotIn('pmem_max_module_gb', sec.to_mapping(_cpu()))

    def test_values_are_converted(self):
        cpu = sec.resolved(_cpu(pmem_max_module_gb=256, cxl_lanes=16.0))
        self.assertIsInstance(cpu.price, float)
        self.assertIsInstance(cpu.pmem_max_module_gb, float)
        self.assertIsInstance(cpu.cxl_lanes, int)
        # The assumed value too.
        self.assertIsInstance(sec.resolved(_cpu()).pmem_max_module_gb, float)
        # A value with no type to take is kept as given.
        self.assertIs(3, sec.resolved(sec.Policies(cpu_overcommit=3))
                      .cpu_overcommit)

    def test_given_values_are_kept(self):
        self.assertEqual(
            0.8, sec.resolved(sec.Policies(memory_cap=0.8)).memory_cap)
        self.assertEqual('ddr5', sec.resolved(sec.Platform(
            sockets=2, controllers_per_socket=2, channels_per_socket=8,
            slots_per_channel=1, base_cost=1, base_watts=1,
            memory_type='ddr5')).memory_type)

    def test_assumed(self):
        self.assertEqual(2, sec.assumed(sec.Platform, 'rack_units'))
        self.assertEqual(0.0, sec.assumed(sec.Cpu, 'pmem_max_module_gb'))
        self.assertIsNone(sec.assumed(sec.Economics, 'budget'))


class NameTestCase(testtools.TestCase):
    """A catalog entry's name is the key of its mapping, not a key."""

    RAW = {'cpus': {'c': {'cores': 8, 'threads': 16, 'price': 1,
                          'watts': 1, 'memory_limit_gb': 512}},
           'dimms': {'d': {'type': 'ddr4', 'capacity_gb': 32, 'price': 1,
                           'watts': 1}}}

    def test_read_from_the_mapping_and_not_written(self):
        catalog = sec.from_mapping(sec.Catalog, self.RAW)
        self.assertEqual('c', catalog.cpus['c'].name)
        self.assertEqual('d', catalog.dimms['d'].name)
        self.assertEqual(self.RAW, sec.to_mapping(catalog))

    def test_not_a_key(self):
        self.assertNotIn('name', [f.name for f in sec.keys(sec.Dimm)])
        # A period's name is a key of the file.
        self.assertIn('name', [f.name for f in sec.keys(sec.Period)])

    def test_a_catalog_resolves_its_entries(self):
        catalog = sec.resolved(sec.from_mapping(sec.Catalog, self.RAW))
        self.assertEqual(0, catalog.dimms['d'].lanes)
        self.assertEqual(32.0, catalog.dimms['d'].capacity_gb)
        self.assertEqual('c', catalog.cpus['c'].name)


class KindTestCase(testtools.TestCase):

    def _dimm(self, kind):
        return sec.Dimm(type=kind, capacity_gb=1, price=1, watts=1)

    def test_kinds(self):
        self.assertTrue(self._dimm('pmem').is_pmem)
        self.assertTrue(self._dimm('cxl').is_cxl)
        self.assertTrue(self._dimm('ddr5').is_dram)
        self.assertFalse(self._dimm('pmem').is_dram)

    def test_slots_per_socket(self):
        self.assertEqual(16, sec.Platform(
            sockets=2, controllers_per_socket=2, channels_per_socket=8,
            slots_per_channel=2, base_cost=1, base_watts=1).slots_per_socket)
