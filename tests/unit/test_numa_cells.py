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
"""Tests of the per-NUMA-cell DRAM cache of Memory-Mode hosts.

Property tests of the per-cell arithmetic (profile and decide), the
ledger's record of NUMA-bound instances, and PmemCacheFilter,
PmemCacheHeadroomWeigher and PmemNumaCellWeigher on HostStates with a
real NUMA topology, fitted by Nova's own numa_fit_instance_to_host.
"""

import math

import fixtures
import hypothesis
from hypothesis import strategies as st
from oslo_utils.fixture import uuidsentinel as uuids

from nova import objects
from nova.scheduler import weights
from nova import test
from nova.virt import hardware

from nova_pmem_filters.core.rules import decide
from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import nearmem
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters import filters
from nova_pmem_filters.scheduler import host_profiles
from nova_pmem_filters.scheduler import numa
from nova_pmem_filters.scheduler import request_memo
from nova_pmem_filters import weighers
from tests.unit import fakes
from tests.unit import hypo

SETTINGS = hypo.settings(150)

KEY = profile.DRAM_CACHE_PER_CELL_KEY
# A request whose hot MB is its RAM: the cache rule on plain MB.
ALL_HOT = extra_specs.parse({'pmem:hot_ratio': '1'})

# fits_cache()'s tolerance.
EPSILON_MB = 1e-6

# Cache sizes, GB, as operators write them and as floats.
cell_gb = st.one_of(
    st.integers(min_value=1, max_value=4096).map(float),
    st.sampled_from([0.5, 0.1, 95.5, 1.0 / 3, 1e-3]),
    st.floats(min_value=1e-6, max_value=1e12, allow_nan=False,
              allow_infinity=False))

cell_ids = st.integers(min_value=0, max_value=64)

cell_gb_maps = st.dictionaries(cell_ids, cell_gb, min_size=1, max_size=6)

# Per-cell capacities, MB.
cell_mb = st.one_of(
    st.integers(min_value=1, max_value=2 * 10 ** 6).map(float),
    st.floats(min_value=1.0, max_value=2e6, allow_nan=False,
              allow_infinity=False))

capacities = st.dictionaries(st.integers(min_value=0, max_value=7), cell_mb,
                             min_size=1, max_size=4)

# cache_overcommit_ratio is in [0, 100]; below 1e-3 the products of
# capacities underflow and mean nothing.
overcommit = st.one_of(st.sampled_from([1.0, 0.5, 1.5, 2.0, 0.0]),
                       st.floats(min_value=1e-3, max_value=100.0))


def _close(a, b, rel=1e-9):
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


@st.composite
def floating_cases(draw):
    """(capacities, used, new) of a floating instance on a floating host.

    ``used + new`` is more than 1e-3 MB away from the total capacity: on
    either side of the boundary, or anywhere.
    """
    caps = draw(capacities)
    total = math.fsum(caps.values())
    used = draw(st.one_of(st.just(0.0), st.floats(0.0, 1.5))) * total
    offset = draw(st.one_of(
        st.floats(2e-3, 1.0), st.floats(2e-3, 1.0).map(lambda f: -f),
        st.floats(-1.5, 1.5).map(lambda f: f * total)))
    new = total - used + offset
    hypothesis.assume(new >= 1e-3)
    hypothesis.assume(abs(used + new - total) > 1e-3)
    return caps, used, new


@st.composite
def admission_runs(draw):
    """Capacities and a list of instances: (None, hot) or ({cell: hot})."""
    caps = draw(capacities)
    ids = sorted(caps)
    largest = max(caps.values())
    hot = st.one_of(st.sampled_from([128.0, 256.0, 512.0, 716.8, 1024.0,
                                     4096.0]),
                    st.floats(1e-3, largest))
    bound = st.dictionaries(st.sampled_from(ids), hot, min_size=1,
                            max_size=len(ids))
    instances = draw(st.lists(
        st.one_of(st.tuples(st.none(), hot), st.tuples(bound, st.none())),
        max_size=30))
    return caps, instances


@st.composite
def cell_usages(draw):
    """(capacities, floating hot MB, bound hot MB by cell)."""
    caps = draw(capacities)
    ids = sorted(caps) + [99]
    total = math.fsum(caps.values())
    floating = draw(st.floats(0.0, 1.5)) * total
    bound = draw(st.dictionaries(
        st.sampled_from(ids), st.floats(0.0, 1.5).map(lambda f: f * total),
        max_size=3))
    return caps, floating, bound


class CellArithmeticPropertyTestCase(test.NoDBTestCase):

    @SETTINGS
    @hypothesis.given(cells=cell_gb_maps)
    def test_format_parse_round_trip(self, cells):
        text = profile.format_cell_cache(cells)
        self.assertEqual((cells, None), profile.parse_cell_cache(text))
        # As aggregate metadata, with spaces an operator might add.
        spaced = ' ' + text.replace(',', ' , ').replace(':', ' : ') + ' '
        self.assertEqual((cells, None), profile.parse_cell_cache(spaced))

    @SETTINGS
    @hypothesis.given(cells=cell_gb_maps, ratio=overcommit,
                      split=st.booleans())
    def test_agreeing_keys_sum_to_the_host_cache(self, cells, ratio, split):
        total_gb = math.fsum(cells.values())
        mode = {profile.MODE_KEY: kinds.MEMORY_MODE,
                profile.DRAM_CACHE_KEY: repr(total_gb)}
        per_cell = {KEY: profile.format_cell_cache(cells)}
        metadata = [mode, per_cell] if split else [dict(mode, **per_cell)]
        prof = profile.from_metadata(metadata)
        self.assertTrue(prof.known, prof.problem)
        self.assertEqual(tuple(sorted(cells.items())), prof.cell_cache_gb)
        caps, problem = prof.cell_capacities_mb(list(cells), ratio)
        self.assertIsNone(problem)
        self.assertEqual(sorted(cells), sorted(caps))
        self.assertTrue(_close(math.fsum(caps.values()),
                               prof.cache_capacity_mb(ratio)),
                        (caps, prof.cache_capacity_mb(ratio)))
        for cell, gb in cells.items():
            self.assertTrue(_close(caps[cell], gb * 1024 * ratio))

    @SETTINGS
    @hypothesis.given(gb=cell_gb, ids=st.lists(cell_ids, min_size=1,
                                               max_size=6),
                      ratio=overcommit)
    def test_even_split_sums_to_the_host_cache(self, gb, ids, ratio):
        prof = profile.from_metadata([fakes.memory_mode(repr(gb))])
        caps, problem = prof.cell_capacities_mb(ids, ratio)
        self.assertIsNone(problem)
        self.assertEqual(sorted(set(ids)), sorted(caps))
        self.assertEqual(1, len(set(caps.values())))
        self.assertTrue(_close(math.fsum(caps.values()),
                               prof.cache_capacity_mb(ratio)))

    @SETTINGS
    @hypothesis.given(case=floating_cases())
    def test_floating_only_is_the_host_wide_check(self, case):
        caps, used, new = case
        total = math.fsum(caps.values())
        per_cell = nearmem.full_cell(
            nearmem.cell_usage_mb(used, {}, caps),
            nearmem.spread_mb(new, caps), caps) is None
        host_wide = nearmem.fits_cache(used, new, total)
        self.assertEqual(host_wide, per_cell,
                         'used %r + new %r vs %r' % (used, new, total))

    @SETTINGS
    @hypothesis.given(caps=capacities, share=st.floats(0.0, 1.0),
                      fill=st.floats(1e-3, 1.0))
    def test_floating_filling_the_cache_exactly_fits(self, caps, share,
                                                     fill):
        # At the boundary itself, where the check must admit.
        total = math.fsum(caps.values())
        new = total * fill
        used = (total - new) * share
        new = total - used
        hypothesis.assume(new > 0 and used + new <= total)
        self.assertTrue(nearmem.fits_cache(used, new, total))
        self.assertIsNone(nearmem.full_cell(
            nearmem.cell_usage_mb(used, {}, caps),
            nearmem.spread_mb(new, caps), caps))

    @SETTINGS
    @hypothesis.given(run=admission_runs())
    def test_admitted_instances_never_overfill_a_cell(self, run):
        caps, instances = run
        floating = 0.0
        bound = {}
        admitted = []
        for cells, hot in instances:
            used = nearmem.cell_usage_mb(floating, bound, caps)
            new = nearmem.spread_mb(hot, caps) if cells is None else cells
            if nearmem.full_cell(used, new, caps) is not None:
                continue
            if cells is None:
                floating += hot
                admitted.append(hot)
            else:
                for cell, mb in cells.items():
                    bound[cell] = bound.get(cell, 0.0) + mb
                admitted.extend(cells.values())
            usage = nearmem.cell_usage_mb(floating, bound, caps)
            for cell, mb in usage.items():
                self.assertLessEqual(
                    mb, caps[cell] + EPSILON_MB + 4 * math.ulp(caps[cell]),
                    (cell, usage, caps))
            self.assertTrue(_close(math.fsum(usage.values()),
                                   math.fsum(admitted)),
                            (usage, admitted))

    @SETTINGS
    @hypothesis.given(usage=cell_usages(), new_hot=st.floats(1e-3, 1e7),
                      bound_new=st.booleans())
    def test_cell_headroom_score_is_a_share(self, usage, new_hot, bound_new):
        caps, floating, bound = usage
        used = nearmem.cell_usage_mb(floating, bound, caps)
        if bound_new:
            new = {min(caps): new_hot}
        else:
            new = nearmem.spread_mb(new_hot, caps)
        score = decide.cell_headroom_score(decide.CellView(caps, used, new))
        self.assertGreaterEqual(score, 0.0)
        self.assertLessEqual(score, 1.0)
        self.assertEqual(0.0, decide.cell_headroom_score(
            decide.CellView(caps, None, new)))
        self.assertEqual(0.0, decide.cell_headroom_score(
            decide.CellView(None, used, new)))

    @SETTINGS
    @hypothesis.given(cells=cell_gb_maps, ratio=overcommit,
                      used_share=st.floats(0.0, 1.5),
                      new_share=st.floats(1e-6, 1.5))
    def test_floating_headroom_is_the_host_wide_headroom(
            self, cells, ratio, used_share, new_share):
        total_gb = math.fsum(cells.values())
        prof = profile.from_metadata([
            {profile.MODE_KEY: kinds.MEMORY_MODE,
             profile.DRAM_CACHE_KEY: repr(total_gb),
             KEY: profile.format_cell_cache(cells)}])
        caps, _problem = prof.cell_capacities_mb(list(cells), ratio)
        capacity = prof.cache_capacity_mb(ratio)
        hypothesis.assume(capacity > 0)
        used, new = used_share * capacity, new_share * capacity
        per_cell = decide.cell_headroom_score(decide.CellView(
            caps, nearmem.cell_usage_mb(used, {}, caps),
            nearmem.spread_mb(new, caps)))
        host_wide = decide.headroom_score(prof, ratio, nearmem.HotRam(used),
                                          ALL_HOT, new)
        self.assertAlmostEqual(host_wide, per_cell, delta=1e-9)

    @SETTINGS
    @hypothesis.given(usage=cell_usages(),
                      cells=st.lists(st.integers(0, 7), min_size=1,
                                     max_size=4, unique=True),
                      mb=st.floats(1e-3, 1e6), more=st.floats(0.0, 1e6))
    def test_cell_load_score_falls_with_added_memory(self, usage, cells, mb,
                                                     more):
        sizes, floating, bound = usage
        hypothesis.assume(any(cell in sizes for cell in cells))
        used = nearmem.cell_usage_mb(floating, bound, sizes)
        new = {cell: mb for cell in cells}
        bigger = {cell: mb + more for cell in cells}
        score = decide.cell_load_score(sizes, used, new)
        self.assertGreaterEqual(score, 0.0)
        self.assertLessEqual(score, 1.0)
        self.assertLessEqual(decide.cell_load_score(sizes, used, bigger),
                             score)

    def test_cell_load_score_examples(self):
        sizes = {0: 8192.0, 1: 8192.0}
        used = {0: 2048.0, 1: 0.0}
        self.assertEqual(0.875, decide.cell_load_score(
            sizes, used, {1: 1024.0}))
        self.assertEqual(0.625, decide.cell_load_score(
            sizes, used, {0: 1024.0}))
        # The most loaded of the cells it uses counts.
        self.assertEqual(0.625, decide.cell_load_score(
            sizes, used, {0: 1024.0, 1: 1024.0}))
        self.assertEqual(0.0, decide.cell_load_score(
            sizes, used, {0: 8192.0}))
        self.assertEqual(0.0, decide.cell_load_score(sizes, used, {}))


class CellProfileTestCase(test.NoDBTestCase):

    def _problem(self, per_cell, cache='192'):
        metadata = {profile.MODE_KEY: kinds.MEMORY_MODE, KEY: per_cell}
        if cache is not None:
            metadata[profile.DRAM_CACHE_KEY] = cache
        prof = profile.from_metadata([metadata])
        self.assertFalse(prof.known)
        self.assertIsNone(prof.cell_cache_gb)
        self.assertIn(KEY, prof.problem)
        return prof.problem

    def test_valid(self):
        prof = profile.from_metadata([{
            profile.MODE_KEY: kinds.MEMORY_MODE,
            profile.DRAM_CACHE_KEY: '192', KEY: ' 1:64, 0:128 '}])
        self.assertEqual(profile.HostProfile(
            mode=kinds.MEMORY_MODE, dram_cache_gb=192.0,
            cell_cache_gb=((0, 128.0), (1, 64.0))), prof)
        self.assertEqual(({0: 131072.0, 1: 65536.0}, None),
                         prof.cell_capacities_mb([1, 0]))
        self.assertEqual(({0: 196608.0, 1: 98304.0}, None),
                         prof.cell_capacities_mb([0, 1, 1], 1.5))

    def test_per_cell_key_alone_gives_the_cache(self):
        prof = profile.from_metadata([{
            profile.MODE_KEY: kinds.MEMORY_MODE, KEY: '0:96,1:96'}])
        self.assertEqual(192.0, prof.dram_cache_gb)
        self.assertEqual(((0, 96.0), (1, 96.0)), prof.cell_cache_gb)

    def test_sums_within_one_mb_agree(self):
        # 0.5 MB apart: the same cache written with rounding.
        prof = profile.from_metadata([{
            profile.MODE_KEY: kinds.MEMORY_MODE,
            profile.DRAM_CACHE_KEY: '192',
            KEY: '0:96,1:%r' % (96 + 0.5 / 1024)}])
        self.assertTrue(prof.known, prof.problem)

    def test_bad_pair(self):
        for value in ('0=96,1=96', '0:96,', '0:,1:96', 'a:96', '-1:96',
                      '0:96;1:96', '', '0:nan', '0:inf', '0:1e400'):
            self.assertEqual(
                "%s=%r is not a list of cell:GB pairs with positive GB, "
                'such as "0:96,1:96"' % (KEY, value),
                self._problem(value), value)

    def test_negative_and_zero(self):
        for value in ('0:-96,1:96', '0:0,1:192'):
            self.assertIn('positive GB', self._problem(value))

    def test_duplicate_cell(self):
        self.assertEqual(
            "%s='0:96,00:96' names cell 0 twice" % KEY,
            self._problem('0:96,00:96'))

    def test_sums_disagree(self):
        self.assertEqual(
            "%s='0:96,1:64' adds up to 160 GB, but "
            "pmem_dram_cache_gb='192'" % KEY,
            self._problem('0:96,1:64'))
        self.assertEqual(
            "%s='0:96,1:96.01' adds up to 192.01 GB, but "
            "pmem_dram_cache_gb='192'" % KEY,
            self._problem('0:96,1:96.01'))

    def test_aggregates_disagree(self):
        prof = profile.from_metadata([
            fakes.memory_mode(192), {KEY: '0:96,1:96'},
            {KEY: '0:128,1:64'}])
        self.assertEqual(
            "aggregates disagree on %s: '0:128,1:64', '0:96,1:96'" % KEY,
            prof.problem)

    def test_ignored_off_memory_mode(self):
        prof = profile.from_metadata([{profile.MODE_KEY: kinds.DRAM,
                                       KEY: '0:96,1:96'}])
        self.assertEqual(profile.HostProfile(mode=kinds.DRAM), prof)
        self.assertEqual((None, None), prof.cell_capacities_mb([0, 1]))

    def test_cell_capacities_mismatch(self):
        prof = profile.from_metadata([{
            profile.MODE_KEY: kinds.MEMORY_MODE,
            profile.DRAM_CACHE_KEY: '192', KEY: '0:96,2:96'}])
        self.assertTrue(prof.known)
        self.assertEqual(
            (None, '%s=0:96,2:96 names cells 0,2 but the host has NUMA '
                   'cells 0,1' % KEY),
            prof.cell_capacities_mb([0, 1]))
        self.assertEqual(
            (None, '%s=0:96,2:96 names cells 0,2 but the host has NUMA '
                   'cells 0' % KEY),
            prof.cell_capacities_mb([0]))
        self.assertEqual((None, 'the host reports no NUMA cells'),
                         prof.cell_capacities_mb([]))

    def test_non_ascii_digit_cell_is_a_problem_not_an_error(self):
        # str.isdigit() accepts '\u00b2' (superscript two), which int()
        # refuses: from_metadata() must return an unknown profile.
        prof = profile.from_metadata([{
            profile.MODE_KEY: kinds.MEMORY_MODE,
            profile.DRAM_CACHE_KEY: '192', KEY: '\u00b2:192'}])
        self.assertFalse(prof.known)

    def test_spread_and_usage(self):
        caps = {0: 3072.0, 1: 1024.0}
        self.assertEqual({0: 768.0, 1: 256.0}, nearmem.spread_mb(1024, caps))
        # Bound MB on a cell the host lacks are spread like floating MB.
        self.assertEqual({0: 1536.0 + 1024, 1: 512.0},
                         nearmem.cell_usage_mb(1024, {0: 1024, 7: 1024},
                                               caps))
        self.assertIsNone(nearmem.full_cell({0: 3072.0}, {1: 1024.0}, caps))
        self.assertEqual(0, nearmem.full_cell({0: 3072.0}, {0: 1.0}, caps))
        self.assertEqual(1, nearmem.full_cell({1: 512.0},
                                              {0: 1.0, 1: 513.0}, caps))


def bound_topology(cells):
    """The InstanceNUMATopology of an instance placed on ``cells``.

    :param cells: {host cell id: memory MB}.
    """
    return objects.InstanceNUMATopology(cells=[
        objects.InstanceNUMACell(id=cell, memory=memory, cpuset=set([n]),
                                 pcpuset=set())
        for n, (cell, memory) in enumerate(sorted(cells.items()))])


class NumaLedgerTestCase(fakes.PmemTestCase):

    def setUp(self):
        super(NumaLedgerTestCase, self).setUp()
        self.flags(instance_cache_ttl=600, group='pmem')

    def numa_instance(self, uuid, memory_mb, specs=None, cells=None,
                      loaded=False, numa_loaded=True, in_db=True):
        """Like PmemTestCase.instance(), with a NUMA topology.

        :param cells: {host cell: memory MB}, None to float.
        :param numa_loaded: whether the object carries ``numa_topology``
            (a pushed object may not).
        """
        full = objects.Instance(self.ctxt, uuid=uuid, deleted=False,
                                flavor=fakes.flavor(memory_mb, specs))
        if numa_loaded:
            full.numa_topology = (None if cells is None
                                  else bound_topology(cells))
        if in_db:
            self.db[uuid] = full
        if loaded:
            return full
        return objects.Instance(self.ctxt, uuid=uuid)

    def _usage(self, hosts):
        usage = self.ledger.usage_by_host(hosts)
        return {key: (value.total, value.bound)
                for key, value in usage.items()}

    def test_queried_instance_bound_to_cell_1(self):
        host1 = fakes.host('host1', instances=[
            self.numa_instance(uuids.a, 4096, {'pmem:hot_ratio': '0.5'},
                               cells={1: 4096}),
            self.numa_instance(uuids.b, 1024, {'pmem:hot_ratio': '1'})])
        usage = self.ledger.usage_by_host([host1])[('host1', 'host1-node')]
        self.assertEqual(3072.0, usage.total)
        self.assertEqual({1: 2048.0}, usage.bound)
        self.assertEqual(1024.0, usage.floating)
        self.assertEqual([sorted([uuids.a, uuids.b])], self.queried_uuids())
        self.get_by_filters.assert_called_once_with(
            self.ctxt, {'uuid': sorted([uuids.a, uuids.b])},
            expected_attrs=['flavor', 'numa_topology'])

    def test_instance_on_two_cells_charges_each_its_share(self):
        host1 = fakes.host('host1', instances=[
            self.numa_instance(uuids.a, 4096, {'pmem:hot_ratio': '0.5'},
                               cells={0: 1024, 1: 3072})])
        self.assertEqual({('host1', 'host1-node'): (
            2048.0, {0: 512.0, 1: 1536.0})}, self._usage([host1]))

    def test_pushed_instance_needs_no_query(self):
        host1 = fakes.host('host1', instances=[
            self.numa_instance(uuids.a, 2048, {'pmem:hot_ratio': '1'},
                               cells={1: 2048}, loaded=True, in_db=False),
            self.numa_instance(uuids.b, 1024, {'pmem:hot_ratio': '1'},
                               loaded=True, in_db=False)])
        self.assertEqual({('host1', 'host1-node'): (3072.0, {1: 2048.0})},
                         self._usage([host1]))
        self.get_by_filters.assert_not_called()

    def test_pushed_without_topology_keeps_the_recorded_cells(self):
        host1 = fakes.host('host1', instances=[
            self.numa_instance(uuids.a, 2048, {'pmem:hot_ratio': '1'},
                               cells={1: 2048})])
        self.assertEqual({('host1', 'host1-node'): (2048.0, {1: 2048.0})},
                         self._usage([host1]))
        # nova-compute pushes the object again (resized on the same host)
        # with its flavor but without numa_topology loaded.
        pushed = self.numa_instance(uuids.a, 4096, {'pmem:hot_ratio': '1'},
                                    loaded=True, numa_loaded=False,
                                    in_db=False)
        self.assertNotIn('_obj_numa_topology', pushed.__dict__)
        host1 = fakes.host('host1', instances=[pushed])
        self.assertEqual({('host1', 'host1-node'): (4096.0, {1: 4096.0})},
                         self._usage([host1]))
        self.assertEqual(1, self.get_by_filters.call_count)
        # On another host the recorded cells mean nothing: it floats.
        host2 = fakes.host('host2', instances=[
            self.numa_instance(uuids.a, 4096, {'pmem:hot_ratio': '1'},
                               loaded=True, numa_loaded=False,
                               in_db=False)])
        self.assertEqual({('host1', 'host1-node'): (0.0, {}),
                          ('host2', 'host2-node'): (4096.0, {})},
                         self._usage([fakes.host('host1'), host2]))

    def test_pushed_topology_replaces_the_recorded_cells(self):
        host1 = fakes.host('host1', instances=[
            self.numa_instance(uuids.a, 2048, {'pmem:hot_ratio': '1'},
                               cells={1: 2048})])
        self._usage([host1])
        host1 = fakes.host('host1', instances=[
            self.numa_instance(uuids.a, 2048, {'pmem:hot_ratio': '1'},
                               cells=None, loaded=True, in_db=False)])
        self.assertEqual({('host1', 'host1-node'): (2048.0, {})},
                         self._usage([host1]))

    def test_floating_instances_have_no_cells(self):
        host1 = fakes.host('host1', instances=[
            self.numa_instance(uuids.a, 2048, {'pmem:hot_ratio': '1'}),
            self.numa_instance(uuids.b, 2048, numa_loaded=False),
            self.numa_instance(uuids.c, 2048, loaded=True, in_db=False)])
        self.assertEqual({('host1', 'host1-node'): (4096.0, {})},
                         self._usage([host1]))

    def test_recorded_cells_reused_from_the_host_record(self):
        host1 = fakes.host('host1', instances=[
            self.numa_instance(uuids.a, 2048, {'pmem:hot_ratio': '1'},
                               cells={0: 2048})])
        first = self._usage([host1])
        host1 = fakes.host('host1', instances=[
            objects.Instance(self.ctxt, uuid=uuids.a)])
        self.assertEqual(first, self._usage([host1]))
        self.assertEqual(1, self.get_by_filters.call_count)
        # A record handed out is not changed by a caller's copy.
        usage = self.ledger.usage_by_host([host1])[('host1', 'host1-node')]
        copied = usage.copy()
        copied.bound[0] += 1
        self.assertEqual(first, self._usage([host1]))


CELL_MB = 8192


def numa_topology(usage=(0, 0), memory=CELL_MB):
    """A host NUMATopology of len(usage) cells, 4 shared CPUs each."""
    cells = []
    for cell, used in enumerate(usage):
        cpus = set(range(4 * cell, 4 * cell + 4))
        cells.append(objects.NUMACell(
            id=cell, cpuset=cpus, pcpuset=set(), memory=memory,
            cpu_usage=0, memory_usage=used, socket=cell, pinned_cpus=set(),
            mempages=[objects.NUMAPagesTopology(
                size_kb=4, total=memory * 256, used=used * 256)],
            siblings=[set([cpu]) for cpu in sorted(cpus)]))
    return objects.NUMATopology(cells=cells)


def numa_host(name, metadata, instances=(), usage=(0, 0)):
    total = CELL_MB * len(usage)
    return fakes.host(name, metadata, instances,
                      numa_topology=numa_topology(usage),
                      cpu_allocation_ratio=16.0, ram_allocation_ratio=1.0,
                      total_usable_ram_mb=total,
                      free_ram_mb=total - sum(usage))


def numa_spec(specs=None, memory_mb=1024, **kwargs):
    """A RequestSpec whose flavor asks for one NUMA node."""
    specs = dict(specs or {})
    specs.setdefault('hw:numa_nodes', '1')
    spec_obj = fakes.request_spec(specs, memory_mb, **kwargs)
    spec_obj.numa_topology = hardware.numa_get_constraints(
        spec_obj.flavor, objects.ImageMeta.from_dict({}))
    spec_obj.pci_requests = None
    return spec_obj


# 2 GB of DRAM cache on each of two cells.
MM4 = fakes.memory_mode(4)
MM4_CELLS = dict(MM4, **{KEY: '0:2,1:2'})


class _NumaHostTestCase(fakes.PmemTestCase):

    def setUp(self):
        super(_NumaHostTestCase, self).setUp()
        self.flags(instance_cache_ttl=600, group='pmem')
        self.filt_cls = filters.PmemCacheFilter()

    def bound_instance(self, uuid, cells, specs=None):
        memory = sum(cells.values())
        full = objects.Instance(self.ctxt, uuid=uuid, deleted=False,
                                flavor=fakes.flavor(memory, specs),
                                numa_topology=bound_topology(cells))
        self.db[uuid] = full
        return objects.Instance(self.ctxt, uuid=uuid)

    def full_cell0_host(self, name='host1', metadata=MM4_CELLS):
        """Cell 0's cache holds 2048 hot MB (full); cell 1's is empty."""
        inst = self.bound_instance(getattr(uuids, name + '_a'), {0: 2048},
                                   {'pmem:hot_ratio': '1'})
        return numa_host(name, [metadata], [inst], usage=(2048, 0))

    def _passing(self, hosts, spec_obj):
        return [h.host for h in self.filt_cls.filter_all(hosts, spec_obj)]

    def _scores(self, weigher, hosts, spec_obj):
        return weigher.weigh_objects(
            [weights.WeighedHost(h, 0.0) for h in hosts], spec_obj)


class NumaCacheFilterTestCase(_NumaHostTestCase):

    def test_spread_fits_on_the_free_cell(self):
        host1 = self.full_cell0_host()
        spec_obj = numa_spec({'pmem:hot_ratio': '1'})
        self.assertEqual(['host1'], self._passing([host1], spec_obj))
        self.assertEqual({1: 1024}, numa.fitted_cells(
            host1, spec_obj, request_memo.of(spec_obj).fits))
        self.assertEqual([], self.log_lines('DEBUG'))
        self.assertEqual([], self.log_lines('WARNING'))

    def test_pack_chooses_the_full_cell(self):
        self.flags(packing_host_numa_cells_allocation_strategy=True,
                   group='compute')
        host1 = self.full_cell0_host()
        spec_obj = numa_spec({'pmem:hot_ratio': '1'})
        # The host-wide cache has room: 2048 + 1024 <= 4096.
        self.assertTrue(decide.cache_check(
            host_profiles.host_profile(host1), 1.0, nearmem.HotRam(2048),
            ALL_HOT, 1024)[0])
        self.assertEqual([], self._passing([host1], spec_obj))
        self.assertEqual({0: 1024}, numa.fitted_cells(
            host1, spec_obj, request_memo.of(spec_obj).fits))
        self.assertEqual(
            ["DEBUG nova_pmem_filters.filters %s fails pmem cache check: hot "
             "RAM 2048 MB + 1024 MB requested on NUMA cell 0 exceeds the "
             "cell's DRAM-cache bound of 2048 MB (cache_overcommit_ratio "
             "1.0)" % host1],
            self.log_lines('DEBUG'))

    def test_even_split_without_the_per_cell_key(self):
        for pack, expected in ((False, ['host1']), (True, [])):
            self.flags(packing_host_numa_cells_allocation_strategy=pack,
                       group='compute')
            host1 = self.full_cell0_host(metadata=MM4)
            spec_obj = numa_spec({'pmem:hot_ratio': '1'})
            self.assertEqual(expected, self._passing([host1], spec_obj),
                             pack)

    def test_uneven_cells(self):
        # Cell 1 has 3 GB of cache: a 3 GB NUMA-bound instance fits there
        # and on no cell of an evenly split 4 GB host.
        spec_obj = numa_spec({'pmem:hot_ratio': '1'}, memory_mb=3072)
        uneven = numa_host('host1', [dict(MM4, **{KEY: '0:1,1:3'})],
                           usage=(1024, 0))
        even = numa_host('host2', [MM4], usage=(1024, 0))
        self.assertEqual(['host1'], self._passing([uneven, even], spec_obj))

    def test_floating_request_next_to_bound_instances(self):
        # A floating instance charges both cells; cell 0 is full.
        host1 = self.full_cell0_host()
        spec_obj = fakes.request_spec({'pmem:hot_ratio': '1'})
        self.assertEqual([], self._passing([host1], spec_obj))
        self.assertIn('on NUMA cell 0 exceeds', self.log_lines('DEBUG')[0])
        # With room on both cells it passes.
        host2 = numa_host('host2', [MM4_CELLS], [self.bound_instance(
            uuids.b, {0: 1024}, {'pmem:hot_ratio': '1'})], usage=(1024, 0))
        self.assertEqual(['host2'], self._passing([host2], spec_obj))

    def test_floating_only_host_is_checked_host_wide(self):
        host1 = numa_host('host1', [MM4_CELLS], [
            self.numa_free_instance(uuids.a, 3072)])
        self.assertEqual(['host1'], self._passing(
            [host1], fakes.request_spec({'pmem:hot_ratio': '1'})))
        self.assertEqual([], self._passing(
            [host1], fakes.request_spec({'pmem:hot_ratio': '1'},
                                        memory_mb=1025)))
        self.assertIn('exceeds the DRAM-cache bound of 4096 MB',
                      self.log_lines('DEBUG')[0])

    def numa_free_instance(self, uuid, memory_mb):
        full = objects.Instance(self.ctxt, uuid=uuid, deleted=False,
                                flavor=fakes.flavor(
                                    memory_mb, {'pmem:hot_ratio': '1'}),
                                numa_topology=None)
        self.db[uuid] = full
        return objects.Instance(self.ctxt, uuid=uuid)

    def test_per_cell_key_naming_other_cells(self):
        other = dict(MM4, **{KEY: '0:2,2:2'})
        hosts = [numa_host('host1', [other]),
                 numa_host('host2', [MM4_CELLS])]
        for _ in range(2):
            spec_obj = numa_spec({'pmem:hot_ratio': '0.5'})
            self.assertEqual(['host2'], self._passing(hosts, spec_obj))
        self.assertEqual(
            ["WARNING nova_pmem_filters.filters PmemCacheFilter rejects "
             "host host1 (node host1-node): %s=0:2,2:2 names cells 0,2 but "
             "the host has NUMA cells 0,1. Fix its aggregate metadata."
             % KEY],
            self.log_lines('WARNING'))

    def test_nova_fits_no_cell(self):
        host1 = numa_host('host1', [MM4_CELLS])
        spec_obj = numa_spec({'pmem:hot_ratio': '0.1'},
                             memory_mb=CELL_MB + 1024)
        self.assertEqual([], self._passing([host1], spec_obj))
        self.assertEqual(
            ["DEBUG nova_pmem_filters.filters %s fails pmem cache check: "
             "Nova's NUMA fitting places the instance's cells on none of "
             "the host's cells" % host1],
            self.log_lines('DEBUG'))

    def test_unreadable_usage(self):
        self.get_by_filters.side_effect = Exception('database is away')
        host1 = self.full_cell0_host()
        self.assertEqual([], self._passing([host1], numa_spec()))
        self.assertIn('the flavors of its instances could not be read',
                      self.log_lines('DEBUG')[0])

    def test_placement_accounted_flavor_still_checks_cells(self):
        self.flags(packing_host_numa_cells_allocation_strategy=True,
                   group='compute')
        spec_obj = numa_spec({'pmem:hot_ratio': '1',
                              'resources:CUSTOM_NEAR_MEMORY_MB': '1024'})
        self.assertEqual([], self._passing([self.full_cell0_host()],
                                           spec_obj))

    def test_host_without_topology_is_checked_host_wide(self):
        host1 = fakes.host('host1', [MM4_CELLS], [self.bound_instance(
            uuids.a, {0: 2048}, {'pmem:hot_ratio': '1'})])
        self.assertEqual(['host1'], self._passing(
            [host1], numa_spec({'pmem:hot_ratio': '1'}, memory_mb=2048)))
        self.assertEqual([], self._passing(
            [host1], numa_spec({'pmem:hot_ratio': '1'}, memory_mb=2049)))

    def test_fitted_once_per_request_and_topology(self):
        fit = self.useFixture(fixtures.MockPatchObject(
            numa.hardware, 'numa_fit_instance_to_host',
            wraps=hardware.numa_fit_instance_to_host)).mock
        host1 = self.full_cell0_host()
        spec_obj = numa_spec({'pmem:hot_ratio': '1',
                              'pmem:priority': 'high'})
        self._passing([host1], spec_obj)
        self._scores(weighers.PmemCacheHeadroomWeigher(), [host1], spec_obj)
        self._scores(weighers.PmemNumaCellWeigher(), [host1], spec_obj)
        self.assertEqual(1, fit.call_count)
        # Nova replaces the topology when it consumes a request.
        host1.numa_topology = numa_topology((2048, 1024))
        self._passing([host1], spec_obj)
        self.assertEqual(2, fit.call_count)

    def test_multi_create_counts_its_cells(self):
        # Nova packs every instance on cell 0, whose cache holds 1 GB; the
        # request's earlier instances are counted there, not spread.
        self.flags(packing_host_numa_cells_allocation_strategy=True,
                   group='compute')
        host1 = numa_host('host1', [dict(MM4, **{KEY: '0:1,1:3'})])
        spec_obj = numa_spec({'pmem:hot_ratio': '1'}, memory_mb=512)
        placed = []
        for n in range(4):
            if not self._passing([host1], spec_obj):
                break
            placed.append(n)
            host1.consume_from_request(spec_obj)
            stub = getattr(uuids, 'stub%d' % n)
            host1.instances[stub] = objects.Instance(uuid=stub)
        self.assertEqual([0, 1], placed)
        self.assertEqual([1024, 0], [cell.memory_usage for cell in
                                     host1.numa_topology.cells])
        self.assertIn('on NUMA cell 0 exceeds', self.log_lines('DEBUG')[0])

    def test_zero_overcommit_ratio_on_floating_only_host(self):
        # cache_overcommit_ratio=0 is allowed (min=0.0) and leaves no cache;
        # the host-wide path rejects the memory_mode host alone.
        self.flags(cache_overcommit_ratio=0.0, group='pmem')
        hosts = [numa_host('host1', [MM4_CELLS]),
                 fakes.host('dram1', [fakes.DRAM])]
        self.assertEqual(['dram1'], self._passing(
            hosts, fakes.request_spec({'pmem:hot_ratio': '1'})))

    def test_zero_overcommit_ratio_on_the_per_cell_path(self):
        # With cache_overcommit_ratio=0 every cell capacity is 0: the
        # memory_mode host alone is rejected, never the whole request.
        self.flags(cache_overcommit_ratio=0.0, group='pmem')
        for spec_obj in (numa_spec({'pmem:hot_ratio': '1'}),
                         fakes.request_spec({'pmem:hot_ratio': '1'})):
            hosts = [self.full_cell0_host(),
                     fakes.host('dram1', [fakes.DRAM])]
            self.assertEqual(['dram1'], self._passing(hosts, spec_obj))


class NumaWeigherTestCase(_NumaHostTestCase):

    def test_headroom_of_the_chosen_cell(self):
        for pack, expected in ((False, [0.5]), (True, [0.0])):
            self.flags(packing_host_numa_cells_allocation_strategy=pack,
                       group='compute')
            spec_obj = numa_spec({'pmem:hot_ratio': '1'})
            self.assertEqual(expected, self._scores(
                weighers.PmemCacheHeadroomWeigher(),
                [self.full_cell0_host()], spec_obj), pack)

    def test_headroom_of_floating_request(self):
        weigher = weighers.PmemCacheHeadroomWeigher()
        spec_obj = fakes.request_spec({'pmem:hot_ratio': '1'})
        # Next to a bound instance: the fullest cell it charges counts,
        # cell 0 with 1024 + 512 of 2048 MB.
        bound = numa_host('host1', [MM4_CELLS], [self.bound_instance(
            uuids.a, {0: 1024}, {'pmem:hot_ratio': '1'})], usage=(1024, 0))
        # Floating only: the host-wide share, (4096 - 1024 - 1024) / 4096.
        free = numa_host('host2', [MM4_CELLS], [self.bound_instance(
            uuids.b, {0: 1024}, {'pmem:hot_ratio': '1'})])
        self.db[uuids.b].numa_topology = None
        self.assertEqual([0.25, 0.5],
                         self._scores(weigher, [bound, free], spec_obj))

    def test_numa_cell_weigher_prefers_the_lighter_cell(self):
        weigher = weighers.PmemNumaCellWeigher()
        for pack, expected in ((False, [0.875]), (True, [0.625])):
            self.flags(packing_host_numa_cells_allocation_strategy=pack,
                       group='compute')
            spec_obj = numa_spec({'pmem:hot_ratio': '1',
                                  'pmem:priority': 'high'})
            self.assertEqual(expected, self._scores(
                weigher, [self.full_cell0_host()], spec_obj), pack)

    def test_numa_cell_weigher_for_floating_request(self):
        # Every cell, in proportion to its size: cell 0 ends at
        # (2048 + 512) / 8192, and the other use of the host is spread.
        weigher = weighers.PmemNumaCellWeigher()
        spec_obj = fakes.request_spec({'pmem:priority': 'high'})
        host1 = self.full_cell0_host()
        host2 = self.full_cell0_host('host2')
        host2.free_ram_mb -= 2048
        self.assertEqual([0.6875, 0.5625],
                         self._scores(weigher, [host1, host2], spec_obj))

    def test_numa_cell_weigher_scores_zero(self):
        weigher = weighers.PmemNumaCellWeigher()
        hosts = [self.full_cell0_host(), fakes.host('plain1', [MM4])]
        for specs in ({}, {'pmem:priority': 'normal'},
                      {'pmem:priority': 'low'}):
            self.assertEqual([0.0, 0.0], self._scores(
                weigher, hosts, numa_spec(specs)), specs)
        self.assertEqual([0.875, 0.0], self._scores(
            weigher, hosts, numa_spec({'pmem:priority': 'high'})))
        # Nova fits the flavor on no cell.
        self.assertEqual([0.0], self._scores(weigher, hosts[:1], numa_spec(
            {'pmem:priority': 'high'}, memory_mb=CELL_MB + 1)))

    def test_numa_cell_weigher_through_the_handler(self):
        self.flags(numa_cell_weight_multiplier=2.0, group='pmem')
        light = numa_host('light', [fakes.DRAM])
        heavy = numa_host('heavy', [fakes.DRAM], usage=(4096, 4096))
        handler = weights.HostWeightHandler()
        weighed = handler.get_weighed_objects(
            [weighers.PmemNumaCellWeigher()], [heavy, light],
            numa_spec({'pmem:priority': 'high'}))
        self.assertEqual(['light', 'heavy'], [w.obj.host for w in weighed])
        self.assertEqual([1.75, 0.75], [w.weight for w in weighed])
