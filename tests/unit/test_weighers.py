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
"""Tests of PmemTierWeigher and PmemCacheHeadroomWeigher."""

import threading
from unittest import mock

from oslo_utils.fixture import uuidsentinel as uuids

from nova.scheduler import utils as scheduler_utils
from nova.scheduler import weights

from nova_pmem_filters import weighers
from tests.unit import fakes


class _WeigherTestCase(fakes.PmemTestCase):

    def setUp(self):
        super(_WeigherTestCase, self).setUp()
        self.weight_handler = weights.HostWeightHandler()

    def _weighed(self, hosts, spec_obj, weighers_=None):
        """{host name: weight} from Nova's weight handler."""
        weighed = self.weight_handler.get_weighed_objects(
            weighers_ or self.weighers, hosts, spec_obj)
        return {w.obj.host: w.weight for w in weighed}

    def _winner(self, hosts, spec_obj, weighers_):
        return self.weight_handler.get_weighed_objects(
            weighers_, hosts, spec_obj)[0].obj.host


class PmemTierWeigherTestCase(_WeigherTestCase):

    def setUp(self):
        super(PmemTierWeigherTestCase, self).setUp()
        self.weighers = [weighers.PmemTierWeigher()]
        self.hosts = [
            fakes.host('dram1', [fakes.DRAM]),
            fakes.host('mm1', [fakes.memory_mode(192)]),
            fakes.host('ad1', [fakes.APP_DIRECT]),
            fakes.host('plain1'),
        ]

    def test_high_prefers_dram_backed_hosts(self):
        spec_obj = fakes.request_spec({'pmem:priority': 'high'})
        self.assertEqual({'dram1': 10.0, 'mm1': 0.0, 'ad1': 10.0,
                          'plain1': 10.0},
                         self._weighed(self.hosts, spec_obj))

    def test_low_prefers_memory_mode_hosts(self):
        spec_obj = fakes.request_spec({'pmem:priority': 'low'})
        self.assertEqual({'dram1': 0.0, 'mm1': 10.0, 'ad1': 0.0,
                          'plain1': 0.0},
                         self._weighed(self.hosts, spec_obj))

    def test_normal_has_no_preference(self):
        for specs in ({'pmem:priority': 'normal'}, {}):
            spec_obj = fakes.request_spec(specs)
            self.assertEqual({'dram1': 0.0, 'mm1': 0.0, 'ad1': 0.0,
                              'plain1': 0.0},
                             self._weighed(self.hosts, spec_obj))

    def test_invalid_flavor_has_no_preference(self):
        spec_obj = fakes.request_spec({'pmem:priority': 'urgent'})
        self.assertEqual({'dram1': 0.0, 'mm1': 0.0, 'ad1': 0.0,
                          'plain1': 0.0},
                         self._weighed(self.hosts, spec_obj))

    def test_unknown_profile_is_not_preferred(self):
        hosts = [fakes.host('bad1', [fakes.DRAM, fakes.memory_mode(192)]),
                 fakes.host('mm1', [fakes.memory_mode(192)]),
                 fakes.host('dram1', [fakes.DRAM])]
        self.assertEqual({'bad1': 0.0, 'mm1': 10.0, 'dram1': 0.0},
                         self._weighed(hosts, fakes.request_spec(
                             {'pmem:priority': 'low'})))
        self.assertEqual({'bad1': 0.0, 'mm1': 0.0, 'dram1': 10.0},
                         self._weighed(hosts, fakes.request_spec(
                             {'pmem:priority': 'high'})))

    def test_multiplier_from_config(self):
        self.flags(tier_weight_multiplier=2.5, group='pmem')
        spec_obj = fakes.request_spec({'pmem:priority': 'low'})
        self.assertEqual(2.5, self._weighed(self.hosts, spec_obj)['mm1'])

    def test_negative_multiplier_inverts(self):
        self.flags(tier_weight_multiplier=-1.0, group='pmem')
        spec_obj = fakes.request_spec({'pmem:priority': 'high'})
        self.assertEqual('mm1', self._winner(self.hosts, spec_obj,
                                             self.weighers))

    def test_zero_multiplier_disables(self):
        self.flags(tier_weight_multiplier=0.0, group='pmem')
        spec_obj = fakes.request_spec({'pmem:priority': 'high'})
        self.assertEqual({0.0},
                         set(self._weighed(self.hosts, spec_obj).values()))

    def test_aggregate_multiplier_overrides_config(self):
        hosts = [
            fakes.host('mm1', [fakes.memory_mode(192),
                               {'pmem_tier_weight_multiplier': '3.0'}]),
            fakes.host('mm2', [fakes.memory_mode(192)]),
            fakes.host('dram1', [fakes.DRAM]),
        ]
        spec_obj = fakes.request_spec({'pmem:priority': 'low'})
        self.assertEqual({'mm1': 3.0, 'mm2': 10.0, 'dram1': 0.0},
                         self._weighed(hosts, spec_obj))

    def test_smallest_aggregate_multiplier_wins(self):
        hosts = [
            fakes.host('mm1', [
                dict(fakes.memory_mode(192),
                     pmem_tier_weight_multiplier='5'),
                {'pmem_tier_weight_multiplier': '2'},
                {'pmem_tier_weight_multiplier': '7'}]),
            fakes.host('dram1', [fakes.DRAM]),
        ]
        spec_obj = fakes.request_spec({'pmem:priority': 'low'})
        self.assertEqual(2.0, self._weighed(hosts, spec_obj)['mm1'])

    def test_bad_aggregate_multiplier_falls_back_to_config(self):
        hosts = [
            fakes.host('mm1', [dict(fakes.memory_mode(192),
                                    pmem_tier_weight_multiplier='big')]),
            fakes.host('dram1', [fakes.DRAM]),
        ]
        spec_obj = fakes.request_spec({'pmem:priority': 'low'})
        self.assertEqual(10.0, self._weighed(hosts, spec_obj)['mm1'])

    def test_weigh_objects_scores(self):
        spec_obj = fakes.request_spec({'pmem:priority': 'high'})
        weighed = [weights.WeighedHost(h, 0.0) for h in self.hosts]
        self.assertEqual(
            [1.0, 0.0, 1.0, 1.0],
            weighers.PmemTierWeigher().weigh_objects(weighed, spec_obj))

    def test_fixed_bounds(self):
        # A single remaining preferred host still gets the full weight of
        # the tier, whatever other hosts were filtered out.
        spec_obj = fakes.request_spec({'pmem:priority': 'high'})
        self.assertEqual({'dram1': 10.0, 'ad1': 10.0},
                         self._weighed([self.hosts[0], self.hosts[2]],
                                       spec_obj))


class PmemCacheHeadroomWeigherTestCase(_WeigherTestCase):

    def setUp(self):
        super(PmemCacheHeadroomWeigherTestCase, self).setUp()
        self.weighers = [weighers.PmemCacheHeadroomWeigher()]

    def test_prefers_more_free_cache(self):
        # 2 GB caches; the new instance adds 512 MB hot (1024 MB x 0.5).
        hosts = [
            fakes.host('mm_empty', [fakes.memory_mode(2)]),
            fakes.host('mm_half', [fakes.memory_mode(2)], [
                self.instance(uuids.a, 1024, {'pmem:hot_ratio': '1'})]),
            fakes.host('mm_full', [fakes.memory_mode(2)], [
                self.instance(uuids.b, 2048, {'pmem:hot_ratio': '1'})]),
            fakes.host('dram1', [fakes.DRAM]),
            fakes.host('ad1', [fakes.APP_DIRECT]),
            fakes.host('bad1', [{'pmem_mode': 'memory_mode'}]),
        ]
        self.assertEqual({'mm_empty': 0.75, 'mm_half': 0.25, 'mm_full': 0.0,
                          'dram1': 0.0, 'ad1': 0.0, 'bad1': 0.0},
                         self._weighed(hosts, fakes.request_spec()))
        self.assertEqual(1, self.get_by_filters.call_count)

    def test_share_of_cache_not_absolute(self):
        # 1 GB free of 4 GB scores below 1 GB free of 2 GB.
        hosts = [
            fakes.host('big', [fakes.memory_mode(4)], [
                self.instance(uuids.a, 3072, {'pmem:hot_ratio': '1'})]),
            fakes.host('small', [fakes.memory_mode(2)], [
                self.instance(uuids.b, 1024, {'pmem:hot_ratio': '1'})]),
        ]
        spec_obj = fakes.request_spec({'pmem:hot_ratio': '0.001'},
                                      memory_mb=0)
        self.assertEqual({'big': 0.25, 'small': 0.5},
                         self._weighed(hosts, spec_obj))

    def test_multiplier(self):
        self.flags(cache_headroom_weight_multiplier=4.0, group='pmem')
        hosts = [fakes.host('mm1', [fakes.memory_mode(2)]),
                 fakes.host('dram1', [fakes.DRAM])]
        self.assertEqual({'mm1': 3.0, 'dram1': 0.0},
                         self._weighed(hosts, fakes.request_spec()))

    def test_aggregate_multiplier_overrides_config(self):
        self.flags(cache_headroom_weight_multiplier=4.0, group='pmem')
        hosts = [
            fakes.host('mm1', [dict(
                fakes.memory_mode(2),
                pmem_cache_headroom_weight_multiplier='2')]),
            fakes.host('mm2', [fakes.memory_mode(2)]),
            fakes.host('dram1', [fakes.DRAM])]
        self.assertEqual({'mm1': 1.5, 'mm2': 3.0, 'dram1': 0.0},
                         self._weighed(hosts, fakes.request_spec()))

    def test_multiplier_override_per_weigher(self):
        # Each weigher reads its own key: "pmem_" and its option's name.
        host = fakes.host('mm1', [{
            'pmem_tier_weight_multiplier': '3',
            'pmem_cache_headroom_weight_multiplier': '5',
            'pmem_numa_cell_weight_multiplier': '7'}])
        self.assertEqual(
            [3.0, 5.0, 7.0],
            [cls().weight_multiplier(host) for cls in (
                weighers.PmemTierWeigher, weighers.PmemCacheHeadroomWeigher,
                weighers.PmemNumaCellWeigher)])

    def test_multiplier_read_once_per_set_of_aggregates(self):
        self.flags(cache_headroom_weight_multiplier=4.0, group='pmem')
        shared = fakes.host('mm1', [fakes.memory_mode(2)]).aggregates
        override = fakes.host('mm9', [dict(
            fakes.memory_mode(2),
            pmem_cache_headroom_weight_multiplier='2')]).aggregates
        hosts = [fakes.host('mm%d' % i) for i in (1, 2, 3, 4, 9)]
        for host in hosts[:4]:
            host.aggregates = list(shared)
        hosts[4].aggregates = list(override)
        weigher = weighers.PmemCacheHeadroomWeigher()
        reads = mock.Mock(wraps=scheduler_utils.get_weight_multiplier)
        with mock.patch.object(scheduler_utils, 'get_weight_multiplier',
                               reads):
            weighed = self._weighed(hosts, fakes.request_spec(), [weigher])
            # One read per set of aggregates, whatever the hosts' number.
            self.assertEqual(2, reads.call_count)
            self.assertEqual(dict({'mm%d' % i: 3.0 for i in range(1, 5)},
                                  mm9=1.5), weighed)
            # A new pass reads again: the option changed since.
            self.flags(cache_headroom_weight_multiplier=8.0, group='pmem')
            weighed = self._weighed(hosts, fakes.request_spec(), [weigher])
            self.assertEqual(4, reads.call_count)
            self.assertEqual(6.0, weighed['mm1'])
            self.assertEqual(1.5, weighed['mm9'])

    def test_multiplier_of_another_thread_pass_not_shared(self):
        # nova-scheduler weighs several requests at once with one weigher:
        # what one thread's pass read is not another's.
        weigher = weighers.PmemCacheHeadroomWeigher()
        host = fakes.host('mm1', [fakes.memory_mode(2)])
        self._weighed([host, fakes.host('mm2', [fakes.memory_mode(2)])],
                      fakes.request_spec(), [weigher])
        self.flags(cache_headroom_weight_multiplier=5.0, group='pmem')
        seen = []
        thread = threading.Thread(
            target=lambda: seen.append(weigher.weight_multiplier(host)))
        thread.start()
        thread.join()
        self.assertEqual([5.0], seen)

    def test_negative_multiplier_packs(self):
        self.flags(cache_headroom_weight_multiplier=-1.0, group='pmem')
        hosts = [
            fakes.host('mm_empty', [fakes.memory_mode(2)]),
            fakes.host('mm_half', [fakes.memory_mode(2)], [
                self.instance(uuids.a, 1024, {'pmem:hot_ratio': '1'})]),
        ]
        self.assertEqual('mm_half', self._winner(
            hosts, fakes.request_spec(), self.weighers))

    def test_unreadable_usage_scores_zero(self):
        self.get_by_filters.side_effect = Exception('database is away')
        hosts = [
            fakes.host('mm1', [fakes.memory_mode(2)], [
                self.instance(uuids.a)]),
            fakes.host('mm2', [fakes.memory_mode(2)]),
        ]
        self.assertEqual({'mm1': 0.0, 'mm2': 0.75},
                         self._weighed(hosts, fakes.request_spec()))

    def test_invalid_flavor_scores_zero(self):
        hosts = [fakes.host('mm1', [fakes.memory_mode(2)]),
                 fakes.host('mm2', [fakes.memory_mode(4)])]
        spec_obj = fakes.request_spec({'pmem:hot_ratio': 'half'})
        self.assertEqual({'mm1': 0.0, 'mm2': 0.0},
                         self._weighed(hosts, spec_obj))

    def test_zero_overcommit_scores_zero(self):
        self.flags(cache_overcommit_ratio=0.0, group='pmem')
        hosts = [fakes.host('mm1', [fakes.memory_mode(2)]),
                 fakes.host('dram1', [fakes.DRAM])]
        self.assertEqual({'mm1': 0.0, 'dram1': 0.0},
                         self._weighed(hosts, fakes.request_spec()))

    def test_moved_instance_not_counted(self):
        hosts = [
            fakes.host('mm1', [fakes.memory_mode(2)], [
                self.instance(uuids.moving, 1024, {'pmem:hot_ratio': '1'})]),
            fakes.host('mm2', [fakes.memory_mode(2)]),
        ]
        spec_obj = fakes.request_spec({'pmem:hot_ratio': '1'},
                                      instance_uuid=uuids.moving)
        self.assertEqual({'mm1': 0.5, 'mm2': 0.5},
                         self._weighed(hosts, spec_obj))


class DefaultMultipliersTestCase(_WeigherTestCase):
    """With the default multipliers the tier beats Nova's own weighers."""

    def setUp(self):
        super(DefaultMultipliersTestCase, self).setUp()
        classes = self.weight_handler.get_matching_classes(
            ['nova.scheduler.weights.all_weighers',
             'nova_pmem_filters.weighers.all_weighers'])
        self.assertIn(weighers.PmemTierWeigher, classes)
        self.assertIn(weighers.PmemCacheHeadroomWeigher, classes)
        self.all_weighers = [cls() for cls in classes]
        self.nova_weighers = [cls() for cls in weights.all_weighers()]

    @staticmethod
    def _big(name, metadata):
        # Everything Nova's default weighers like: free RAM, CPU and disk,
        # no I/O, fewer instances, a newer hypervisor.
        return fakes.host(name, metadata, free_ram_mb=1024 * 1024,
                          total_usable_ram_mb=1024 * 1024, vcpus_total=256,
                          vcpus_used=0, cpu_allocation_ratio=1,
                          free_disk_mb=10 ** 7, num_io_ops=0,
                          num_instances=0, hypervisor_version=9000000)

    @staticmethod
    def _small(name, metadata):
        return fakes.host(name, metadata, free_ram_mb=2048,
                          total_usable_ram_mb=65536,
                          vcpus_total=8, vcpus_used=7, cpu_allocation_ratio=1,
                          free_disk_mb=1024, num_io_ops=8,
                          num_instances=20, hypervisor_version=1000000)

    def _spec(self, priority):
        spec_obj = fakes.request_spec({'pmem:priority': priority},
                                      instance_uuid=uuids.new)
        spec_obj.instance_group = None
        return spec_obj

    def test_high_goes_to_dram(self):
        hosts = [self._small('dram1', [fakes.DRAM]),
                 self._big('mm1', [fakes.memory_mode(768)])]
        spec_obj = self._spec('high')
        # Nova alone, and our cache weigher, would take the Memory-Mode host.
        self.assertEqual('mm1', self._winner(hosts, spec_obj,
                                             self.nova_weighers))
        self.assertEqual('dram1', self._winner(hosts, spec_obj,
                                               self.all_weighers))

    def test_low_goes_to_memory_mode(self):
        hosts = [self._big('dram1', [fakes.DRAM]),
                 self._small('mm1', [fakes.memory_mode(768)])]
        spec_obj = self._spec('low')
        self.assertEqual('dram1', self._winner(hosts, spec_obj,
                                               self.nova_weighers))
        self.assertEqual('mm1', self._winner(hosts, spec_obj,
                                             self.all_weighers))

    def test_normal_follows_nova(self):
        hosts = [self._big('dram1', [fakes.DRAM]),
                 self._small('mm1', [fakes.memory_mode(768)])]
        spec_obj = self._spec('normal')
        self.assertEqual('dram1', self._winner(hosts, spec_obj,
                                               self.all_weighers))
