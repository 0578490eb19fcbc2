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
"""What a request computes once for all our filters and weighers."""

from unittest import mock

from oslo_utils.fixture import uuidsentinel as uuids

from nova_pmem_filters import filters
from nova_pmem_filters.scheduler import numa
from nova_pmem_filters.scheduler import request_memo
from nova_pmem_filters import weighers
from tests.unit import fakes
from tests.unit import test_numa_cells


class RequestMemoTestCase(fakes.PmemTestCase):

    def setUp(self):
        super(RequestMemoTestCase, self).setUp()
        self.hosts = [
            fakes.host('mm1', [fakes.memory_mode(4)],
                       [self.instance(uuids.a, 2048, {'pmem:hot_ratio': '1'})],
                       free_ram_mb=100000),
            fakes.host('mm2', [fakes.memory_mode(4)], free_ram_mb=100000),
            fakes.host('dram1', [fakes.DRAM], free_ram_mb=100000),
        ]

    def test_one_entry_per_host_and_one_group_per_profile(self):
        spec_obj = fakes.request_spec()
        memo = request_memo.of(spec_obj)
        first = request_memo.host_groups(spec_obj, self.hosts, memo)
        self.assertIs(first[0], first[1])
        self.assertIsNot(first[0], first[2])
        self.assertEqual([True, True, False], [g.tiered for g in first])
        again = request_memo.host_groups(spec_obj, self.hosts[::-1], memo)
        self.assertEqual(first[::-1], again)
        self.assertEqual(2, len(request_memo.groups(memo)))
        # Another request starts afresh.
        other = request_memo.host_groups(fakes.request_spec(), self.hosts)
        self.assertNotEqual(first, other)

    def test_weighers_reuse_what_the_filter_read(self):
        spec_obj = fakes.request_spec({'pmem:hot_ratio': '1'},
                                      memory_mb=1024, name='a')
        usage_of = mock.Mock(wraps=self.ledger.usage_of)
        self.patch_usage_of(usage_of)
        passing = filters.PmemCacheFilter().filter_all(self.hosts, spec_obj)
        self.assertEqual(['mm1', 'mm2', 'dram1'],
                         [h.host for h in passing])
        self.assertEqual(1, usage_of.call_count)
        weighed = weighers.PmemCacheHeadroomWeigher().weigh_objects(
            [mock.Mock(obj=h) for h in self.hosts], spec_obj)
        # (4096 - 2048 - 1024) / 4096 and (4096 - 1024) / 4096.
        self.assertEqual([0.25, 0.75, 0.0], weighed)
        self.assertEqual(1, usage_of.call_count)
        self.assertEqual(1, self.get_by_filters.call_count)

    def test_the_weigher_takes_the_filters_inputs_of_its_pass_only(self):
        spec_obj = fakes.request_spec({'pmem:hot_ratio': '1'},
                                      memory_mb=1024)
        filters.PmemCacheFilter().filter_all(self.hosts, spec_obj)
        memo = request_memo.of(spec_obj)
        exclude, reads, inputs = memo.kept
        self.assertEqual({id(h) for h in self.hosts}, set(inputs))
        # Another pass of a multi-create (its own instance), or a filter
        # that read other groups: the weigher reads for itself.
        for kept in (request_memo.Kept(uuids.other, reads, {}),
                     request_memo.Kept(exclude, frozenset(), {})):
            memo.kept = kept
            self.assertEqual([0.25, 0.75, 0.0],
                             weighers.PmemCacheHeadroomWeigher()
                             .weigh_objects([mock.Mock(obj=h)
                                             for h in self.hosts], spec_obj))

    def test_what_the_request_placed_counts_on_the_next_pass(self):
        # A multi-create: Nova consumed 1024 MB of mm2 for the first
        # instance; the next pass counts its hot RAM there.
        spec_obj = fakes.request_spec({'pmem:hot_ratio': '1'},
                                      memory_mb=1024)
        cache_filter = filters.PmemCacheFilter()
        cache_filter.filter_all(self.hosts, spec_obj)
        memo = request_memo.of(spec_obj)
        entry = memo.entries[id(self.hosts[1])]
        self.assertEqual(0.0, entry.inputs[0].total)
        self.hosts[1].free_ram_mb -= 1024
        # The next pass: Nova runs the filters, then the weighers.
        cache_filter.filter_all(self.hosts, spec_obj)
        weighed = weighers.PmemCacheHeadroomWeigher().weigh_objects(
            [mock.Mock(obj=h) for h in self.hosts], spec_obj)
        self.assertEqual(1024.0, entry.inputs[0].total)
        self.assertEqual([0.25, 0.5, 0.0], weighed)
        # A weigher with no filter before it in the pass reads for itself.
        memo.kept = None
        self.hosts[1].free_ram_mb -= 1024
        weighed = weighers.PmemCacheHeadroomWeigher().weigh_objects(
            [mock.Mock(obj=h) for h in self.hosts], spec_obj)
        self.assertEqual(2048.0, entry.inputs[0].total)
        self.assertEqual([0.25, 0.25, 0.0], weighed)
        self.hosts[1].free_ram_mb += 1024
        self.hosts[1].free_ram_mb -= 3072
        self.assertEqual(['mm1', 'dram1'], [h.host for h in
                                            cache_filter.filter_all(
                                                self.hosts, spec_obj)])

    def test_each_pass_of_a_multi_create_counts_the_earlier_ones(self):
        # Nova sets the RequestSpec's instance_uuid to each instance of a
        # multi-create in turn; what the earlier passes placed still counts.
        spec_obj = fakes.request_spec({'pmem:hot_ratio': '1'},
                                      memory_mb=1024,
                                      instance_uuid=uuids.first)
        cache_filter = filters.PmemCacheFilter()
        placed = []
        for n in range(6):
            spec_obj.instance_uuid = getattr(uuids, 'vm%d' % n)
            passing = [h.host for h in cache_filter.filter_all(
                self.hosts[1:2], spec_obj)]
            if not passing:
                break
            self.hosts[1].free_ram_mb -= 1024
            placed.append(passing)
        # mm2's 4096 MB of cache hold four.
        self.assertEqual([['mm2']] * 4, placed)

    def test_a_new_flavor_or_new_defaults_parse_again(self):
        spec_obj = fakes.request_spec()
        first, _error = request_memo.request(spec_obj)
        self.assertIs(first, request_memo.request(spec_obj)[0])
        self.flags(default_hot_ratio=0.25, group='pmem')
        self.assertEqual(0.25, request_memo.request(spec_obj)[0].hot_ratio)
        spec_obj.flavor = fakes.flavor(specs={'pmem:hot_ratio': '0.75'})
        self.assertEqual(0.75, request_memo.request(spec_obj)[0].hot_ratio)

    def patch_usage_of(self, usage_of):
        patcher = mock.patch.object(self.ledger, 'usage_of', usage_of)
        patcher.start()
        self.addCleanup(patcher.stop)


class OnePassTestCase(test_numa_cells._NumaHostTestCase):
    """A request for one instance keeps no entry, and decides the same."""

    def hosts(self):
        return [
            # Cell 0's cache full of a NUMA-bound instance.
            self.full_cell0_host('host1'),
            # NUMA cells, floating instances only.
            test_numa_cells.numa_host(
                'host2', [test_numa_cells.MM4_CELLS],
                [self.instance(uuids.f, 3072, {'pmem:hot_ratio': '1'})]),
            test_numa_cells.numa_host('host3', [test_numa_cells.MM4]),
            fakes.host('mm4', [fakes.memory_mode(4)], free_ram_mb=100000),
            fakes.host('dram1', [fakes.DRAM], free_ram_mb=100000),
        ]

    def run_request(self, spec_obj, instances):
        hosts = self.hosts()
        if instances is not None:
            spec_obj.num_instances = instances
        passing = self._passing(hosts, spec_obj)
        scores = self._scores(weighers.PmemCacheHeadroomWeigher(), hosts,
                              spec_obj)
        return passing, scores, request_memo.of(spec_obj)

    def test_same_verdicts_and_scores_without_entries(self):
        requests = [
            lambda: fakes.request_spec({'pmem:hot_ratio': '1'}),
            lambda: fakes.request_spec({'pmem:hot_ratio': '0.25'},
                                       memory_mb=2048),
            lambda: test_numa_cells.numa_spec({'pmem:hot_ratio': '1'}),
            lambda: test_numa_cells.numa_spec({'pmem:hot_ratio': '0.5'},
                                              memory_mb=2048),
        ]
        rejected = set()
        for make in requests:
            # Unset (a RequestSpec of an older conductor) and 2: entries.
            passing, scores, memo = self.run_request(make(), None)
            rejected.update({'host1', 'host2', 'host3', 'mm4'} - set(passing))
            self.assertNotEqual({}, memo.entries)
            self.assertEqual((passing, scores),
                             self.run_request(make(), 2)[:2])
            one = self.run_request(make(), 1)
            self.assertEqual((passing, scores), one[:2])
            self.assertEqual({}, one[2].entries)
        # Decisions, not a no-op: full cells and full caches.
        self.assertEqual({'host1', 'host2'}, rejected)

    def test_cells_read_only_where_the_rules_use_them(self):
        cell_ids = mock.Mock(wraps=numa.cell_ids)
        with mock.patch.object(numa, 'cell_ids', cell_ids):
            self.run_request(
                fakes.request_spec({'pmem:hot_ratio': '1'}), 1)
            # A floating request: only next to NUMA-bound instances.
            self.assertEqual(['host1'], [call[0][0].host
                                         for call in cell_ids.call_args_list])
            cell_ids.reset_mock()
            self.run_request(
                test_numa_cells.numa_spec({'pmem:hot_ratio': '1'}), 1)
            # A NUMA-bound one: on every tiered host.
            self.assertEqual(['host1', 'host2', 'host3', 'mm4'],
                             sorted({call[0][0].host
                                     for call in cell_ids.call_args_list}))


class KeptTestCase(fakes.PmemTestCase):

    def test_inputs_of_any_hosts_are_those_of_the_dict(self):
        hosts = [
            fakes.host('mm1', [fakes.memory_mode(4)],
                       [self.instance(uuids.a, 3072,
                                      {'pmem:hot_ratio': '1'})],
                       free_ram_mb=100000),
            fakes.host('mm2', [fakes.memory_mode(4)], free_ram_mb=100000),
            fakes.host('dram1', [fakes.DRAM], free_ram_mb=100000),
        ]
        spec_obj = fakes.request_spec({'pmem:hot_ratio': '1'},
                                      memory_mb=2048)
        passing = filters.PmemCacheFilter().filter_all(hosts, spec_obj)
        self.assertEqual(['mm2', 'dram1'], [h.host for h in passing])
        kept = request_memo.of(spec_obj).kept
        for some in (passing, hosts, hosts[::-1], hosts[1:], []):
            self.assertEqual([kept.inputs.get(id(h)) for h in some],
                             kept.of(list(some)))
        self.assertIsNone(kept.of([hosts[2]])[0])
        self.assertEqual(3072.0, kept.of([hosts[0]])[0][0].total)
