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

from nova_pmem_filters.core.rules import placement
from nova_pmem_filters import filters
from tests.unit import fakes

KEY = 'resources:CUSTOM_NEAR_MEMORY_MB'


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
        specs.update(placement.near_memory_spec(1024, 0.5))
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
