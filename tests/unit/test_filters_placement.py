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
"""Placement accounting of near memory: the shared arithmetic and the filter.

A flavor that requests ``resources:CUSTOM_NEAR_MEMORY_MB`` has its hot RAM
checked by Placement; PmemCacheFilter must not count it a second time.
"""

from oslo_utils.fixture import uuidsentinel as uuids
import testtools

from nova_pmem_filters import extra_specs
from nova_pmem_filters import filters
from nova_pmem_filters import profile
from tests.unit import fakes

KEY = 'resources:CUSTOM_NEAR_MEMORY_MB'


class NearMemoryArithmeticTestCase(testtools.TestCase):

    def test_names(self):
        self.assertEqual('CUSTOM_NEAR_MEMORY_MB', profile.NEAR_MEMORY_RC)
        self.assertEqual(KEY, extra_specs.NEAR_MEMORY_KEY)

    def test_near_memory_mb_is_hot_mb_rounded_up(self):
        cases = [
            ((32768, 0.75), 24576),
            ((4096, 0.3), 1229),       # 1228.8
            ((1000, 0.7), 700),        # 700.0000000000001 in floats
            ((8192, 1.0), 8192),
            ((1, 0.001), 1),           # at least 1 MB
        ]
        for (memory_mb, ratio), expected in cases:
            self.assertEqual(expected,
                             profile.near_memory_mb(memory_mb, ratio),
                             (memory_mb, ratio))
            self.assertGreaterEqual(
                profile.near_memory_mb(memory_mb, ratio) + 1e-6,
                profile.hot_mb(memory_mb, ratio))

    def test_near_memory_spec(self):
        self.assertEqual({KEY: '1229'},
                         extra_specs.near_memory_spec(4096, 0.3))

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
                             extra_specs.requested_near_memory(specs), specs)

    def test_inventory_per_mode(self):
        mm = profile.near_memory_inventory(
            profile.MEMORY_MODE, 192, cache_overcommit_ratio=1.5,
            ram_allocation_ratio=3.0)
        self.assertEqual({'total': 196608, 'reserved': 0, 'min_unit': 1,
                          'max_unit': 196608, 'step_size': 1,
                          'allocation_ratio': 1.5}, mm)
        for mode in (profile.DRAM, profile.APP_DIRECT):
            inv = profile.near_memory_inventory(
                mode, 384, cache_overcommit_ratio=1.5,
                ram_allocation_ratio=1.2)
            self.assertEqual(384 * 1024, inv['total'])
            self.assertEqual(1.2, inv['allocation_ratio'])
        # A fraction of a MB is not reported.
        self.assertEqual(1, profile.near_memory_inventory(
            profile.DRAM, 1.5 / 1024)['total'])

    def test_dram_inventory_never_binds_before_memory_mb(self):
        # MEMORY_MB: (DRAM - reserved) x ratio / flavor RAM; near memory:
        # DRAM x ratio / hot MB, with hot MB <= flavor RAM.
        for memory_mb, ratio, reserved, ram_ratio in [
                (4096, 1.0, 0, 1.0), (4097, 1.0, 512, 1.5),
                (32768, 0.5, 4096, 0.9)]:
            inv = profile.near_memory_inventory(
                profile.DRAM, 384, ram_allocation_ratio=ram_ratio)
            by_memory = int((384 * 1024 - reserved) * ram_ratio // memory_mb)
            by_near = int(inv['total'] * inv['allocation_ratio']
                          // profile.near_memory_mb(memory_mb, ratio))
            self.assertGreaterEqual(by_near, by_memory)

    def test_provider_config(self):
        inv = profile.near_memory_inventory(profile.MEMORY_MODE, 16)
        conf = profile.near_memory_provider_config(inv)
        self.assertEqual({'schema_version': '1.0'}, conf['meta'])
        provider, = conf['providers']
        self.assertEqual({'uuid': '$COMPUTE_NODE'},
                         provider['identification'])
        self.assertEqual([{'CUSTOM_NEAR_MEMORY_MB': inv}],
                         provider['inventories']['additional'])
        named = profile.near_memory_provider_config(inv, name='mm1')
        self.assertEqual({'name': 'mm1'},
                         named['providers'][0]['identification'])


class PlacementAccountedFilterTestCase(fakes.PmemTestCase):

    def setUp(self):
        super(PlacementAccountedFilterTestCase, self).setUp()
        self.filt_cls = filters.PmemCacheFilter()
        # 2 GB cache, full: 4096 MB at hot ratio 0.5 already there.
        self.full = fakes.host('host1', [fakes.memory_mode(2)], [
            self.instance(uuids.a, 4096, {'pmem:hot_ratio': '0.5'})])
        self.dram = fakes.host('host2', [fakes.DRAM])
        self.unknown = fakes.host('host3', [{'pmem_mode': 'bogus'}])

    def _passing(self, hosts, spec_obj):
        return [h.host for h in self.filt_cls.filter_all(hosts, spec_obj)]

    def test_unaccounted_flavor_still_bounded(self):
        spec_obj = fakes.request_spec({'pmem:hot_ratio': '0.5'})
        self.assertEqual(['host2'],
                         self._passing([self.full, self.dram], spec_obj))

    def test_accounted_flavor_passes_memory_mode_hosts(self):
        specs = {'pmem:hot_ratio': '0.5'}
        specs.update(extra_specs.near_memory_spec(1024, 0.5))
        spec_obj = fakes.request_spec(specs)
        self.assertEqual(['host1', 'host2'],
                         self._passing([self.full, self.dram], spec_obj))
        # Placement counted: the ledger was not consulted at all.
        self.get_by_filters.assert_not_called()
        self.assertEqual(
            ["DEBUG nova_pmem_filters.filters %s passes pmem cache check: "
             "Placement accounts this flavor's hot RAM "
             "(resources:CUSTOM_NEAR_MEMORY_MB=512)" % self.full],
            self.log_lines('DEBUG'))

    def test_granular_group_counts(self):
        spec_obj = fakes.request_spec(
            {'resources1:CUSTOM_NEAR_MEMORY_MB': '512'})
        self.assertEqual(['host1'], self._passing([self.full], spec_obj))

    def test_zero_request_is_no_request(self):
        spec_obj = fakes.request_spec({KEY: '0', 'pmem:hot_ratio': '0.5'})
        self.assertEqual([], self._passing([self.full], spec_obj))

    def test_unknown_profile_still_rejected(self):
        spec_obj = fakes.request_spec({KEY: '512'})
        self.assertEqual([], self._passing([self.unknown], spec_obj))

    def test_invalid_pmem_specs_still_reject(self):
        spec_obj = fakes.request_spec({KEY: '512',
                                       'pmem:hot_ratio': '50%'})
        self.assertEqual([], self._passing([self.full, self.dram], spec_obj))
