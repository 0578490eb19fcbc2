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
"""Near memory in Placement: inventories and requests."""

import testtools

from nova_pmem_filters.core.formats import providerconfig
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import nearmem
from nova_pmem_filters.core.rules import placement

KEY = 'resources:CUSTOM_NEAR_MEMORY_MB'


class NearMemoryArithmeticTestCase(testtools.TestCase):

    def test_names(self):
        self.assertEqual('CUSTOM_NEAR_MEMORY_MB', placement.NEAR_MEMORY_RC)
        self.assertEqual(KEY, placement.NEAR_MEMORY_KEY)

    def test_instance_near_memory_mb_is_hot_mb_rounded_up(self):
        cases = [
            ((32768, 0.75), 24576),
            ((4096, 0.3), 1229),       # 1228.8
            ((1000, 0.7), 700),        # 700.0000000000001 in floats
            ((8192, 1.0), 8192),
            ((1, 0.001), 1),           # at least 1 MB
        ]
        for (memory_mb, ratio), expected in cases:
            self.assertEqual(
                expected, placement.instance_near_memory_mb(memory_mb, ratio),
                (memory_mb, ratio))
            self.assertGreaterEqual(
                placement.instance_near_memory_mb(memory_mb, ratio) + 1e-6,
                nearmem.hot_mb(memory_mb, ratio))

    def test_near_memory_spec(self):
        self.assertEqual({KEY: '1229'},
                         placement.near_memory_spec(4096, 0.3))

    def test_requested_near_memory(self):
        cases = [
            ({}, None),
            (None, None),
            ({KEY: '2048'}, 2048),
            ({KEY: ' 12 '}, 12),
            ({KEY: '0'}, None),
            ({KEY: 'lots'}, None),
            ({'resources1:CUSTOM_NEAR_MEMORY_MB': '10',
              'resources_g:CUSTOM_NEAR_MEMORY_MB': '5'}, 15),
            ({'resources:MEMORY_MB': '2048'}, None),
            ({'resources:CUSTOM_NEAR_MEMORY_MB_X': '1'}, None),
            ({'trait:CUSTOM_NEAR_MEMORY_MB': 'required'}, None),
        ]
        for specs, expected in cases:
            self.assertEqual(expected,
                             placement.requested_near_memory(specs), specs)

    def test_inventory_per_mode(self):
        mm = placement.near_memory_inventory(
            kinds.MEMORY_MODE, 192, cache_overcommit_ratio=1.5,
            ram_allocation_ratio=3.0)
        self.assertEqual({'total': 196608, 'reserved': 0, 'min_unit': 1,
                          'max_unit': 196608, 'step_size': 1,
                          'allocation_ratio': 1.5}, mm)
        for mode in (kinds.DRAM, kinds.APP_DIRECT):
            inv = placement.near_memory_inventory(
                mode, 384, cache_overcommit_ratio=1.5,
                ram_allocation_ratio=1.2)
            self.assertEqual(384 * 1024, inv['total'])
            self.assertEqual(1.2, inv['allocation_ratio'])
        # A fraction of a MB is not reported.
        self.assertEqual(1, placement.near_memory_inventory(
            kinds.DRAM, 1.5 / 1024)['total'])

    def test_dram_inventory_never_binds_before_memory_mb(self):
        # MEMORY_MB: (DRAM - reserved) x ratio / flavor RAM; near memory:
        # DRAM x ratio / hot MB, with hot MB <= flavor RAM.
        for memory_mb, ratio, reserved, ram_ratio in [
                (4096, 1.0, 0, 1.0), (4097, 1.0, 512, 1.5),
                (32768, 0.5, 4096, 0.9)]:
            inv = placement.near_memory_inventory(
                kinds.DRAM, 384, ram_allocation_ratio=ram_ratio)
            by_memory = int((384 * 1024 - reserved) * ram_ratio // memory_mb)
            request = placement.instance_near_memory_mb(memory_mb, ratio)
            by_near = int(inv['total'] * inv['allocation_ratio'] // request)
            self.assertGreaterEqual(by_near, by_memory)

    def test_provider_config(self):
        inv = placement.near_memory_inventory(kinds.MEMORY_MODE, 16)
        conf = providerconfig.near_memory_provider_config(inv)
        self.assertEqual({'schema_version': '1.0'}, conf['meta'])
        provider, = conf['providers']
        self.assertEqual({'uuid': '$COMPUTE_NODE'},
                         provider['identification'])
        self.assertEqual([{'CUSTOM_NEAR_MEMORY_MB': inv}],
                         provider['inventories']['additional'])
        named = providerconfig.near_memory_provider_config(inv, name='mm1')
        self.assertEqual({'name': 'mm1'},
                         named['providers'][0]['identification'])
