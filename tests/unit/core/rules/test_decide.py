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
"""The filters' and weighers' rules, the cache check above all.

The check chooses between the host-wide bound and each NUMA cell's; the
cases below pin every branch, and a property test checks the choice
against a brute-force recount of each cell.
"""

import hypothesis
from hypothesis import strategies as st
import numpy as np
import testtools

from nova_pmem_filters.core.rules import decide
from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import nearmem
from nova_pmem_filters.core.rules import profile
from tests.unit import hypo

MM = profile.build(kinds.MEMORY_MODE, 4)       # 4096 MB of cache
ALL_HOT = extra_specs.parse({'pmem:hot_ratio': '1'})
HALF_HOT = extra_specs.parse({'pmem:hot_ratio': '0.5'})


def fit(cells):
    """A fit that returns ``cells`` and counts its calls."""
    def call():
        call.calls += 1
        return cells
    call.calls = 0
    return call


class CacheCheckTestCase(testtools.TestCase):

    def test_other_kinds_pass_and_unknown_fails(self):
        for mode in kinds.DRAM_BACKED:
            self.assertEqual((True, None, None), decide.cache_check(
                profile.build(mode), 1.0, None, ALL_HOT, 10 ** 9))
        unknown = profile.build(kinds.MEMORY_MODE)
        self.assertEqual((False, decide.REJECT_UNKNOWN, None),
                         decide.cache_check(unknown, 1.0, nearmem.HotRam(0.0),
                                            ALL_HOT, 1))

    def test_host_wide(self):
        self.assertEqual((True, None, None), decide.cache_check(
            MM, 1.0, nearmem.HotRam(3072.0), ALL_HOT, 1024))
        self.assertEqual((False, decide.REJECT_CACHE, None),
                         decide.cache_check(MM, 1.0, nearmem.HotRam(3072.0),
                                            ALL_HOT, 1025))
        # The flavor's hot ratio and the overcommit ratio.
        self.assertTrue(decide.cache_check(
            MM, 1.0, nearmem.HotRam(3072.0), HALF_HOT, 2048)[0])
        self.assertTrue(decide.cache_check(
            MM, 1.5, nearmem.HotRam(5120.0), ALL_HOT, 1024)[0])
        self.assertEqual((False, decide.REJECT_UNREADABLE, None),
                         decide.cache_check(MM, 1.0, None, ALL_HOT, 1))

    def test_accounted_floating_flavors_are_left_to_placement(self):
        full = nearmem.HotRam(4096.0)
        self.assertEqual((True, None, None), decide.cache_check(
            MM, 1.0, full, ALL_HOT, 1024, accounted=True))
        # ... even next to NUMA-bound instances on a host with cells.
        self.assertEqual((True, None, None), decide.cache_check(
            MM, 1.0, nearmem.HotRam(4096.0, {0: 2048.0}), ALL_HOT, 1024,
            cells=[0, 1], accounted=True))
        # A NUMA-bound flavor's cells are still checked: Placement has no
        # cells.
        passes, reason, view = decide.cache_check(
            MM, 1.0, nearmem.HotRam(2048.0, {0: 2048.0}), ALL_HOT, 1024,
            cells=[0, 1], fit=fit({0: 1024}), accounted=True)
        self.assertEqual((False, decide.REJECT_CACHE, 0),
                         (passes, reason, view.full))

    def test_cells_only_when_something_is_bound(self):
        # A floating flavor next to floating instances: host-wide, and the
        # cells are not looked at.
        call = fit({0: 1024})
        passes, reason, view = decide.cache_check(
            MM, 1.0, nearmem.HotRam(3072.0), ALL_HOT, 1024, cells=[0, 1])
        self.assertEqual((True, None, None), (passes, reason, view))
        self.assertEqual(0, call.calls)
        # No topology (cells None): host-wide even for a bound request.
        self.assertEqual((True, None, None), decide.cache_check(
            MM, 1.0, nearmem.HotRam(3072.0), ALL_HOT, 1024, fit=call))
        self.assertEqual(0, call.calls)

    def test_cells_needed_wherever_the_charged_usage_uses_them(self):
        # What a caller may leave unread before charging agrees with what
        # the rule checks after it, whichever charge the host applies
        # (charging.charger: as counted, as_ram, bound_as_ram).
        usages = [None, nearmem.HotRam(1024.0),
                  nearmem.HotRam(1024.0, {0: 512.0}),
                  nearmem.HotRam(1024.0, {}, 4096.0, {1: 2048.0}),
                  nearmem.HotRam(1024.0, {0: 512.0}, 4096.0, {0: 2048.0})]
        charges = [lambda used: used, nearmem.HotRam.as_ram,
                   nearmem.HotRam.bound_as_ram]
        needed = []
        for used in usages:
            for bound in (False, True):
                for charge in charges:
                    charged = None if used is None else charge(used)
                    if decide.uses_cells(MM, [0, 1], charged, bound):
                        self.assertTrue(decide.cells_needed(used, bound),
                                        (used, bound))
                needed.append(decide.cells_needed(used, bound))
        # Not always: floating flavors next to floating instances only.
        self.assertEqual([False, True] * 2 + [True] * 6, needed)

    def test_bound_request_on_its_cells(self):
        # Cell 0 holds 2048 of its 2048 MB; the host has room, cell 1 too.
        used = nearmem.HotRam(2048.0, {0: 2048.0})
        call = fit({0: 1024})
        passes, reason, view = decide.cache_check(
            MM, 1.0, used, ALL_HOT, 1024, cells=[0, 1], fit=call)
        self.assertEqual((False, decide.REJECT_CACHE), (passes, reason))
        self.assertEqual(({0: 2048.0, 1: 2048.0}, {0: 2048.0, 1: 0.0},
                          {0: 1024.0}, 0),
                         (view.capacities, view.used, view.new, view.full))
        self.assertEqual(1, call.calls)
        passes, reason, view = decide.cache_check(
            MM, 1.0, used, ALL_HOT, 1024, cells=[0, 1], fit=fit({1: 1024}))
        self.assertEqual((True, None, None), (passes, reason, view.full))
        # Nova fits the instance on no cell.
        self.assertEqual(decide.REJECT_NUMA_FIT, decide.cache_check(
            MM, 1.0, used, ALL_HOT, 1024, cells=[0, 1], fit=fit(None))[1])

    def test_floating_request_next_to_bound_instances(self):
        used = nearmem.HotRam(2048.0, {0: 2048.0})
        # 512 MB on each cell: cell 0 is full.
        passes, reason, view = decide.cache_check(
            MM, 1.0, used, ALL_HOT, 1024, cells=[0, 1])
        self.assertEqual((False, decide.REJECT_CACHE, 0),
                         (passes, reason, view.full))
        self.assertEqual({0: 512.0, 1: 512.0}, view.new)

    def test_cells_the_aggregates_do_not_name(self):
        prof = profile.build(kinds.MEMORY_MODE, 4, {0: 2, 1: 2})
        passes, reason, view = decide.cache_check(
            prof, 1.0, nearmem.HotRam(0.0, {2: 1.0}), ALL_HOT, 1,
            cells=[2, 3])
        self.assertEqual((False, decide.REJECT_CELLS), (passes, reason))
        self.assertIn('names cells 0,1 but the host has NUMA cells 2,3',
                      view.problem)

    def test_unreadable_usage_with_cells(self):
        self.assertEqual(decide.REJECT_UNREADABLE, decide.cache_check(
            MM, 1.0, None, ALL_HOT, 1, cells=[0, 1], fit=fit({0: 1}))[1])

    def test_arrays_of_hosts(self):
        passes, reason, view = decide.cache_check(
            MM, 1.0, nearmem.HotRam(np.array([0.0, 3072.0, 3073.0])),
            ALL_HOT, 1024)
        self.assertEqual([True, True, False], list(passes))
        self.assertEqual(decide.REJECT_CACHE, reason)


class HeadroomTestCase(testtools.TestCase):

    def test_host_wide_and_per_cell(self):
        self.assertEqual(0.5, decide.headroom_score(
            MM, 1.0, nearmem.HotRam(1024.0), ALL_HOT, 1024))
        self.assertEqual(0.0, decide.headroom_score(
            MM, 1.0, None, ALL_HOT, 1024))
        self.assertEqual(0.0, decide.headroom_score(
            profile.build(kinds.DRAM), 1.0, nearmem.HotRam(0.0), ALL_HOT, 1))
        # The smallest free share of the cells the instance charges.
        self.assertEqual(0.25, decide.headroom_score(
            MM, 1.0, nearmem.HotRam(1024.0, {0: 1024.0}), ALL_HOT, 512,
            cells=[0, 1], fit=fit({0: 512})))


class CellChoiceTestCase(testtools.TestCase):
    """The cache check against a brute-force recount of every cell."""

    @hypo.settings(300)
    @hypothesis.given(
        cells=st.integers(1, 4), cache_gb=st.integers(1, 64),
        floating=st.floats(0, 70000), bound=st.lists(
            st.tuples(st.integers(0, 5), st.floats(0, 20000)), max_size=4),
        memory_mb=st.integers(1, 40000),
        target=st.none() | st.integers(0, 3), ratio=st.sampled_from(
            [0.5, 1.0, 1.5]))
    def test_each_cell_holds_its_share(self, cells, cache_gb, floating,
                                       bound, memory_mb, target, ratio):
        prof = profile.build(kinds.MEMORY_MODE, cache_gb)
        ids = list(range(cells))
        bound_mb = {}
        for cell, mb in bound:
            bound_mb[cell] = bound_mb.get(cell, 0.0) + mb
        used = nearmem.HotRam(floating + sum(bound_mb.values()), bound_mb)
        claim = None
        if target is not None and target < cells:
            claim = fit({target: memory_mb})
        passes, _reason, _view = decide.cache_check(
            prof, ratio, used, ALL_HOT, memory_mb, cells=ids, fit=claim)
        # Brute force: every cell's share of near memory, and of what
        # floats (bound MB on cells the host lacks float too).
        each = cache_gb * 1024 * ratio / cells
        stray = sum(mb for cell, mb in bound_mb.items() if cell >= cells)
        spread = (floating + stray) / cells
        charged = {c: spread + bound_mb.get(c, 0.0) for c in ids}
        if claim is not None:
            new = {target: float(memory_mb)}
        elif bound_mb:
            new = {c: memory_mb / cells for c in ids}
        else:
            # Nothing bound: the host-wide sum decides.
            self.assertEqual(
                floating + memory_mb <= cache_gb * 1024 * ratio + 1e-6,
                passes)
            return
        expected = all(charged[c] + mb <= each + 1e-6
                       for c, mb in new.items() if mb)
        self.assertEqual(expected, passes)
