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
"""The table of host kinds, and the CXL kinds through the core's rules."""

import testtools

from nova_pmem_filters.core.rules import decide
from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import nearmem
from nova_pmem_filters.core.rules import placement
from nova_pmem_filters.core.rules import profile

TIERED_CXL = (kinds.CXL_FLAT, kinds.CXL_KMEM)
# A request whose hot MB is its RAM: the cache rule on plain MB.
ALL_HOT = extra_specs.parse({'pmem:hot_ratio': '1'})


class TableTestCase(testtools.TestCase):
    """The kinds table: what operators have configured stays as it was."""

    def test_the_kinds_and_their_order(self):
        self.assertEqual(('dram', 'memory_mode', 'app_direct', 'cxl_flat',
                          'cxl_kmem', 'cxl_devdax'), kinds.ALL_MODES)
        self.assertEqual(('dram', 'memory_mode', 'app_direct'), kinds.MODES)
        self.assertEqual(('cxl_flat', 'cxl_kmem', 'cxl_devdax'),
                         kinds.CXL_MODES)
        self.assertEqual(('dram', 'memory_mode', 'app_direct', 'mixed',
                          'cxl_flat', 'cxl_kmem', 'cxl_devdax'),
                         kinds.HARDWARE_MODES)

    def test_every_kind_is_scheduled_as_a_flavor_mode(self):
        for kind in kinds.KINDS.values():
            self.assertIn(kind.scheduled_as, kinds.MODES, kind.name)
            self.assertEqual(kind.scheduled_as,
                             kinds.scheduled_as(kind.name))
        for mode in kinds.MODES:
            self.assertEqual(mode, kinds.scheduled_as(mode))
        # A tiered kind passes as memory_mode, a DRAM-backed one as a
        # DRAM-backed flavor mode.
        for kind in kinds.KINDS.values():
            self.assertEqual(kind.tiered,
                             kind.scheduled_as == kinds.MEMORY_MODE)

    def test_flavor_modes(self):
        # The pmem:modes values: the three modes first, as before CXL, then
        # each CXL kind by name.
        self.assertEqual(('dram', 'memory_mode', 'app_direct', 'cxl_flat',
                          'cxl_kmem', 'cxl_devdax'), kinds.FLAVOR_MODES)
        self.assertEqual(frozenset(kinds.ALL_MODES),
                         frozenset(kinds.FLAVOR_MODES))

    def test_admitted_by(self):
        self.assertEqual(
            {kinds.DRAM: {'dram'},
             kinds.MEMORY_MODE: {'memory_mode'},
             kinds.APP_DIRECT: {'app_direct'},
             kinds.CXL_FLAT: {'cxl_flat', 'memory_mode'},
             kinds.CXL_KMEM: {'cxl_kmem', 'memory_mode'},
             kinds.CXL_DEVDAX: {'cxl_devdax', 'dram'}},
            {mode: set(kinds.admitted_by(mode)) for mode in kinds.ALL_MODES})
        for mode in kinds.ALL_MODES:
            self.assertLessEqual(kinds.admitted_by(mode),
                                 frozenset(kinds.FLAVOR_MODES))

    def test_tiered_and_dram_backed_split_the_kinds(self):
        self.assertEqual(frozenset(['memory_mode', 'cxl_flat', 'cxl_kmem']),
                         kinds.TIERED)
        self.assertEqual(frozenset(kinds.ALL_MODES) - kinds.TIERED,
                         kinds.DRAM_BACKED)
        for kind in kinds.KINDS.values():
            self.assertEqual(kind.tiered, kind.near_memory is not None)

    def test_traits(self):
        self.assertEqual(['CUSTOM_PMEM_MODE_CXL_KMEM'],
                         kinds.traits(kinds.CXL_KMEM))
        self.assertEqual(['CUSTOM_PMEM_MODE_MIXED',
                          'CUSTOM_PMEM_MODE_MEMORY_MODE'],
                         kinds.traits(kinds.MIXED))
        self.assertEqual(len(kinds.HARDWARE_MODES),
                         len({kinds.trait(m) for m in kinds.HARDWARE_MODES}))

    def test_hardware_modes(self):
        self.assertEqual(kinds.MEMORY_MODE,
                         kinds.scheduler_kind(kinds.MIXED))
        for mode in kinds.ALL_MODES:
            self.assertEqual(mode, kinds.scheduler_kind(mode))

    def test_order(self):
        self.assertEqual(list(kinds.ALL_MODES),
                         sorted(reversed(kinds.ALL_MODES), key=kinds.order))
        self.assertEqual(len(kinds.ALL_MODES), kinds.order('nonsense'))


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
        prof = _profile(kinds.CXL_DEVDAX, pmem_dram_cache_gb='256')
        self.assertEqual(kinds.CXL_DEVDAX, prof.mode)
        self.assertIsNone(prof.dram_cache_gb)
        self.assertIsNone(prof.cache_capacity_mb())

    def test_unknown_kind_lists_both(self):
        prof = _profile('cxl')
        self.assertEqual("pmem_mode='cxl' is not one of dram, memory_mode, "
                         "app_direct. CXL hosts: cxl_flat, cxl_kmem, "
                         "cxl_devdax", prof.problem)

    def test_scheduled_as(self):
        self.assertEqual(
            {kinds.DRAM: kinds.DRAM,
             kinds.MEMORY_MODE: kinds.MEMORY_MODE,
             kinds.APP_DIRECT: kinds.APP_DIRECT,
             kinds.CXL_FLAT: kinds.MEMORY_MODE,
             kinds.CXL_KMEM: kinds.MEMORY_MODE,
             kinds.CXL_DEVDAX: kinds.DRAM},
            {mode: kinds.scheduled_as(mode) for mode in kinds.ALL_MODES})

    def test_near_memory_inventory(self):
        for kind in TIERED_CXL:
            inv = placement.near_memory_inventory(kind, 256, 1.25, 1.5)
            self.assertEqual(256 * 1024, inv['total'])
            self.assertEqual(1.25, inv['allocation_ratio'])
        inv = placement.near_memory_inventory(kinds.CXL_DEVDAX, 256, 1.25,
                                              1.5)
        self.assertEqual(1.5, inv['allocation_ratio'])


class RulesTestCase(testtools.TestCase):

    def _request(self, **specs):
        return extra_specs.parse(specs)

    def test_modes(self):
        capacity = self._request(**{'pmem:modes': 'memory_mode'})
        latency = self._request(**{'pmem:modes': 'dram'})
        vpmem = self._request(**{'pmem:modes': 'app_direct'})
        for kind, allowed in ((kinds.CXL_FLAT, capacity),
                              (kinds.CXL_KMEM, capacity),
                              (kinds.CXL_DEVDAX, latency)):
            prof = _profile(kind, pmem_dram_cache_gb='256')
            for request in (capacity, latency, vpmem):
                passes, reason = decide.mode_passes(request, prof)
                self.assertEqual(request is allowed, passes, (kind, request))
                if not passes:
                    self.assertEqual(decide.REJECT_MODE, reason)
        # Unconstrained flavors run anywhere.
        anywhere = self._request()
        for kind in kinds.CXL_MODES:
            self.assertEqual((True, None), decide.mode_passes(
                anywhere, _profile(kind, pmem_dram_cache_gb='1')))

    def test_each_flavor_value_on_each_kind(self):
        # The hosts each single pmem:modes value admits: the three Optane
        # values as before CXL values existed, each CXL value exactly its
        # own kind.
        expected = {
            'dram': {kinds.DRAM, kinds.CXL_DEVDAX},
            'memory_mode': {kinds.MEMORY_MODE, kinds.CXL_FLAT,
                            kinds.CXL_KMEM},
            'app_direct': {kinds.APP_DIRECT},
            'cxl_flat': {kinds.CXL_FLAT},
            'cxl_kmem': {kinds.CXL_KMEM},
            'cxl_devdax': {kinds.CXL_DEVDAX},
        }
        self.assertEqual(set(kinds.FLAVOR_MODES), set(expected))
        for value, admitted in expected.items():
            request = self._request(**{'pmem:modes': value})
            self.assertTrue(request.constrains_modes, value)
            for kind in kinds.ALL_MODES:
                prof = _profile(kind, pmem_dram_cache_gb='256')
                passes, reason = decide.mode_passes(request, prof)
                self.assertEqual(kind in admitted, passes, (value, kind))
                self.assertEqual(None if passes else decide.REJECT_MODE,
                                 reason, (value, kind))
            # A host of unknown profile passes no constraining value.
            self.assertEqual((False, decide.REJECT_UNKNOWN),
                             decide.mode_passes(request, _profile('cxl')))

    def test_mixed_lists(self):
        # Lists admit the union of their values' hosts.
        request = self._request(**{'pmem:modes': 'dram,cxl_kmem'})
        self.assertEqual(
            [kinds.DRAM, kinds.CXL_KMEM, kinds.CXL_DEVDAX],
            [k for k in kinds.ALL_MODES if request.allows(k)])
        # All three Optane values admit every kind, as before: a CXL value
        # more does not make the flavor constrain modes, so it still runs
        # on hosts of unknown profile.
        request = self._request(
            **{'pmem:modes': 'dram,memory_mode,app_direct,cxl_flat'})
        self.assertFalse(request.constrains_modes)
        self.assertEqual((True, None),
                         decide.mode_passes(request, _profile('cxl')))
        # Every CXL value, and no Optane one, admits only the CXL kinds.
        request = self._request(
            **{'pmem:modes': 'cxl_flat,cxl_kmem,cxl_devdax'})
        self.assertTrue(request.constrains_modes)
        self.assertEqual(list(kinds.CXL_MODES),
                         [k for k in kinds.ALL_MODES if request.allows(k)])

    def test_near_memory_bound(self):
        for kind in TIERED_CXL:
            prof = _profile(kind, pmem_dram_cache_gb='1')
            self.assertEqual((True, None, None), decide.cache_check(
                prof, 1.0, nearmem.HotRam(512.0), ALL_HOT, 512.0))
            self.assertEqual((False, decide.REJECT_CACHE, None),
                             decide.cache_check(prof, 1.0,
                                                nearmem.HotRam(512.0),
                                                ALL_HOT, 513.0))
            self.assertEqual(0.25, decide.headroom_score(
                prof, 1.0, nearmem.HotRam(256.0), ALL_HOT, 512.0))
        devdax = _profile(kinds.CXL_DEVDAX)
        self.assertEqual((True, None, None), decide.cache_check(
            devdax, 1.0, nearmem.HotRam(1e9), ALL_HOT, 1e9))
        self.assertEqual(0.0, decide.headroom_score(
            devdax, 1.0, nearmem.HotRam(0.0), ALL_HOT, 1.0))

    def test_tier_scores(self):
        high = self._request(**{'pmem:priority': 'high'})
        low = self._request(**{'pmem:priority': 'low'})
        scores = {kind: (decide.tier_score(high, _profile(
            kind, pmem_dram_cache_gb='1')), decide.tier_score(
                low, _profile(kind, pmem_dram_cache_gb='1')))
            for kind in kinds.CXL_MODES}
        self.assertEqual({kinds.CXL_FLAT: (0.0, 1.0),
                          kinds.CXL_KMEM: (0.0, 1.0),
                          kinds.CXL_DEVDAX: (1.0, 0.0)}, scores)
