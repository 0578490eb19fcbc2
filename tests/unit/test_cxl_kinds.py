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
"""The CXL host kinds in the shared core: profiles, rules and weights."""

import testtools

from nova_pmem_filters import decide
from nova_pmem_filters import extra_specs
from nova_pmem_filters import profile

TIERED_CXL = (profile.CXL_FLAT, profile.CXL_KMEM)


def _profile(mode, **metadata):
    return profile.from_metadata([dict({profile.MODE_KEY: mode}, **metadata)])


class ProfileTestCase(testtools.TestCase):

    def test_tiered_kinds_need_near_memory(self):
        for kind in TIERED_CXL:
            prof = _profile(kind)
            self.assertFalse(prof.known)
            self.assertEqual('pmem_mode=%s needs pmem_dram_cache_gb to bound '
                             'the near memory (DRAM)' % kind, prof.problem)
            prof = _profile(kind, pmem_dram_cache_gb='256')
            self.assertEqual(kind, prof.mode)
            self.assertEqual(256 * 1024 * 1.5, prof.cache_capacity_mb(1.5))
            caps, problem = prof.cell_capacities_mb([0, 1])
            self.assertIsNone(problem)
            self.assertEqual({0: 128 * 1024.0, 1: 128 * 1024.0}, caps)

    def test_devdax_has_no_near_memory_bound(self):
        prof = _profile(profile.CXL_DEVDAX, pmem_dram_cache_gb='256')
        self.assertEqual(profile.CXL_DEVDAX, prof.mode)
        self.assertIsNone(prof.dram_cache_gb)
        self.assertIsNone(prof.cache_capacity_mb())

    def test_unknown_kind_lists_both(self):
        prof = _profile('cxl')
        self.assertEqual("pmem_mode='cxl' is not one of dram, memory_mode, "
                         "app_direct. CXL hosts: cxl_flat, cxl_kmem, "
                         "cxl_devdax", prof.problem)

    def test_scheduled_as(self):
        self.assertEqual(
            {profile.DRAM: profile.DRAM,
             profile.MEMORY_MODE: profile.MEMORY_MODE,
             profile.APP_DIRECT: profile.APP_DIRECT,
             profile.CXL_FLAT: profile.MEMORY_MODE,
             profile.CXL_KMEM: profile.MEMORY_MODE,
             profile.CXL_DEVDAX: profile.DRAM},
            {mode: profile.scheduled_as(mode) for mode in profile.ALL_MODES})

    def test_near_memory_inventory(self):
        for kind in TIERED_CXL:
            inv = profile.near_memory_inventory(kind, 256, 1.25, 1.5)
            self.assertEqual(256 * 1024, inv['total'])
            self.assertEqual(1.25, inv['allocation_ratio'])
        inv = profile.near_memory_inventory(profile.CXL_DEVDAX, 256, 1.25,
                                            1.5)
        self.assertEqual(1.5, inv['allocation_ratio'])


class RulesTestCase(testtools.TestCase):

    def _request(self, **specs):
        return extra_specs.parse(specs)

    def test_modes(self):
        capacity = self._request(**{'pmem:modes': 'memory_mode'})
        latency = self._request(**{'pmem:modes': 'dram'})
        vpmem = self._request(**{'pmem:modes': 'app_direct'})
        for kind, allowed in ((profile.CXL_FLAT, capacity),
                              (profile.CXL_KMEM, capacity),
                              (profile.CXL_DEVDAX, latency)):
            prof = _profile(kind, pmem_dram_cache_gb='256')
            for request in (capacity, latency, vpmem):
                passes, reason = decide.mode_passes(request, prof)
                self.assertEqual(request is allowed, passes, (kind, request))
                if not passes:
                    self.assertEqual(decide.REJECT_MODE, reason)
        # Unconstrained flavors run anywhere.
        anywhere = self._request()
        for kind in profile.CXL_MODES:
            self.assertEqual((True, None), decide.mode_passes(
                anywhere, _profile(kind, pmem_dram_cache_gb='1')))

    def test_near_memory_bound(self):
        for kind in TIERED_CXL:
            prof = _profile(kind, pmem_dram_cache_gb='1')
            self.assertEqual((True, None),
                             decide.cache_passes(prof, 512.0, 512.0, 1.0))
            self.assertEqual((False, decide.REJECT_CACHE),
                             decide.cache_passes(prof, 512.0, 513.0, 1.0))
            self.assertEqual(0.25, decide.headroom_score(prof, 256.0, 512.0,
                                                         1.0))
        devdax = _profile(profile.CXL_DEVDAX)
        self.assertEqual((True, None),
                         decide.cache_passes(devdax, 1e9, 1e9, 1.0))
        self.assertEqual(0.0, decide.headroom_score(devdax, 0.0, 1.0, 1.0))

    def test_tier_scores(self):
        high = self._request(**{'pmem:priority': 'high'})
        low = self._request(**{'pmem:priority': 'low'})
        scores = {kind: (decide.tier_score(high, _profile(
            kind, pmem_dram_cache_gb='1')), decide.tier_score(
                low, _profile(kind, pmem_dram_cache_gb='1')))
            for kind in profile.CXL_MODES}
        self.assertEqual({profile.CXL_FLAT: (0.0, 1.0),
                          profile.CXL_KMEM: (0.0, 1.0),
                          profile.CXL_DEVDAX: (1.0, 0.0)}, scores)
