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
"""Tests of PmemModeFilter and PmemCacheFilter."""

from oslo_utils.fixture import uuidsentinel as uuids

from nova import objects
from nova.scheduler import filters as nova_filters

from nova_pmem_filters import filters
from tests.unit import fakes


class PmemModeFilterTestCase(fakes.PmemTestCase):

    def setUp(self):
        super(PmemModeFilterTestCase, self).setUp()
        self.filt_cls = filters.PmemModeFilter()
        self.dram = fakes.host('host1', [fakes.DRAM])
        self.mm = fakes.host('host2', [fakes.memory_mode(192)])
        self.ad = fakes.host('host3', [fakes.APP_DIRECT])
        self.unlabelled = fakes.host('host4')
        self.hosts = [self.dram, self.mm, self.ad, self.unlabelled]

    def _passing(self, spec_obj, hosts=None):
        hosts = self.hosts if hosts is None else hosts
        return [h.host for h in self.filt_cls.filter_all(hosts, spec_obj)]

    def test_unconstrained_flavor_passes_all(self):
        spec_obj = fakes.request_spec()
        self.assertEqual(['host1', 'host2', 'host3', 'host4'],
                         self._passing(spec_obj))

    def test_modes(self):
        cases = {
            'dram': ['host1', 'host4'],
            'memory_mode': ['host2'],
            'app_direct': ['host3'],
            'dram,app_direct': ['host1', 'host3', 'host4'],
            ' memory_mode , app_direct': ['host2', 'host3'],
        }
        for modes, expected in cases.items():
            spec_obj = fakes.request_spec({'pmem:modes': modes})
            self.assertEqual(expected, self._passing(spec_obj), modes)

    def test_host_passes(self):
        spec_obj = fakes.request_spec({'pmem:modes': 'memory_mode'})
        self.assertTrue(self.filt_cls.host_passes(self.mm, spec_obj))
        self.assertFalse(self.filt_cls.host_passes(self.dram, spec_obj))

    def test_rejection_is_logged_at_debug(self):
        spec_obj = fakes.request_spec({'pmem:modes': 'memory_mode'})
        self._passing(spec_obj, [self.dram])
        self.assertEqual(
            ["DEBUG nova_pmem_filters.filters %s fails pmem mode check: "
             "host mode dram is not in the flavor's modes memory_mode"
             % self.dram],
            self.log_lines('DEBUG'))
        self.assertEqual([], self.log_lines('WARNING'))

    def test_default_host_mode(self):
        self.flags(default_host_mode='app_direct', group='pmem')
        spec_obj = fakes.request_spec({'pmem:modes': 'app_direct'})
        self.assertEqual(['host3', 'host4'], self._passing(spec_obj))

    def test_default_flavor_modes(self):
        self.flags(default_flavor_modes=['dram'], group='pmem')
        self.assertEqual(['host1', 'host4'],
                         self._passing(fakes.request_spec()))
        spec_obj = fakes.request_spec({'pmem:modes': 'memory_mode'})
        self.assertEqual(['host2'], self._passing(spec_obj))

    def test_hw_pmem_needs_app_direct(self):
        spec_obj = fakes.request_spec({'hw:pmem': 'SMALL'})
        self.assertEqual(['host3'], self._passing(spec_obj))

    def test_unknown_profile_rejected_for_constrained_flavor(self):
        conflicting = fakes.host('host5', [fakes.DRAM, fakes.APP_DIRECT])
        garbage = fakes.host('host6', [{'pmem_mode': 'optane'}])
        no_cache = fakes.host('host7', [{'pmem_mode': 'memory_mode'}])
        hosts = [conflicting, garbage, no_cache, self.dram]
        spec_obj = fakes.request_spec({'pmem:modes': 'dram,app_direct'})
        self.assertEqual(['host1'], self._passing(spec_obj, hosts))
        warnings = self.log_lines('WARNING')
        self.assertEqual(3, len(warnings), warnings)
        self.assertIn("Host host5 (node host5-node) has an unknown pmem "
                      "profile: aggregates disagree on pmem_mode: "
                      "'app_direct', 'dram'", warnings[0])
        self.assertIn("pmem_mode='optane' is not one of", warnings[1])
        self.assertIn('needs pmem_dram_cache_gb', warnings[2])

        # One warning per host and problem: later requests log at debug.
        self.assertEqual(['host1'], self._passing(spec_obj, hosts))
        self.assertEqual(3, len(self.log_lines('WARNING')))

    def test_unknown_profile_passes_unconstrained_flavor(self):
        conflicting = fakes.host('host5', [fakes.DRAM, fakes.APP_DIRECT])
        self.assertEqual(['host5'],
                         self._passing(fakes.request_spec(), [conflicting]))
        spec_obj = fakes.request_spec(
            {'pmem:modes': 'app_direct,dram,memory_mode'})
        self.assertEqual(['host5'], self._passing(spec_obj, [conflicting]))

    def test_invalid_flavor_rejects_every_host(self):
        spec_obj = fakes.request_spec({'pmem:priority': 'urgent'})
        self.assertEqual([], self._passing(spec_obj))
        self.assertEqual(
            ["WARNING nova_pmem_filters.filters PmemModeFilter rejects every "
             "host for instance %s: extra spec 'pmem:priority' has value "
             "'urgent', expected one of high, normal, low" % uuids.new],
            self.log_lines('WARNING'))

    def test_contradiction_rejects_every_host_with_one_warning(self):
        spec_obj = fakes.request_spec(
            {'hw:pmem': 'SMALL', 'pmem:modes': 'dram'}, name='vpmem.dram')
        self.assertEqual([], self._passing(spec_obj))
        self.assertEqual(
            ["WARNING nova_pmem_filters.filters PmemModeFilter rejects every "
             "host for instance %s: flavor vpmem.dram is contradictory: "
             "hw:pmem=SMALL needs an app_direct host but pmem:modes allows "
             "only dram" % uuids.new],
            self.log_lines('WARNING'))
        self.assertEqual([], self.log_lines('DEBUG'))

    def test_rebuild_passes(self):
        self.assertFalse(filters.PmemModeFilter.RUN_ON_REBUILD)
        spec_obj = fakes.request_spec({'pmem:modes': 'memory_mode'},
                                      rebuild=True)
        self.assertEqual(['host1', 'host2', 'host3', 'host4'],
                         self._passing(spec_obj))
        # Even a flavor the filter cannot read keeps its host on rebuild.
        spec_obj = fakes.request_spec({'pmem:modes': 'bogus'}, rebuild=True)
        self.assertEqual(['host1', 'host2', 'host3', 'host4'],
                         self._passing(spec_obj))
        self.assertEqual([], self.log_lines('WARNING'))

    def test_through_nova_filter_handler(self):
        handler = nova_filters.HostFilterHandler()
        classes = handler.get_matching_classes(
            ['nova_pmem_filters.filters.all_filters'])
        self.assertEqual([filters.PmemModeFilter, filters.PmemCacheFilter],
                         classes)
        spec_obj = fakes.request_spec({'pmem:modes': 'memory_mode'})
        passing = handler.get_filtered_objects(
            [cls() for cls in classes], self.hosts, spec_obj)
        self.assertEqual([self.mm], list(passing))

        spec_obj = fakes.request_spec({'pmem:modes': 'dram'}, rebuild=True)
        passing = handler.get_filtered_objects(
            [cls() for cls in classes], self.hosts, spec_obj)
        self.assertEqual(self.hosts, list(passing))

    def test_request_without_instance_uuid(self):
        # Nova's own filter tests build RequestSpecs without an instance;
        # the filter must still decide on the flavor alone.
        spec_obj = fakes.request_spec({'pmem:modes': 'memory_mode'})
        del spec_obj.instance_uuid
        self.assertEqual(['host2'], self._passing(spec_obj))


class PmemCacheFilterTestCase(fakes.PmemTestCase):

    def setUp(self):
        super(PmemCacheFilterTestCase, self).setUp()
        self.filt_cls = filters.PmemCacheFilter()

    def _passing(self, hosts, spec_obj):
        return [h.host for h in self.filt_cls.filter_all(hosts, spec_obj)]

    def test_other_modes_pass(self):
        hosts = [fakes.host('host1', [fakes.DRAM]),
                 fakes.host('host2', [fakes.APP_DIRECT]),
                 fakes.host('host3')]
        # Far more hot RAM than any cache: irrelevant off Memory Mode.
        spec_obj = fakes.request_spec({'pmem:hot_ratio': '1'},
                                      memory_mb=10 ** 7)
        self.assertEqual(['host1', 'host2', 'host3'],
                         self._passing(hosts, spec_obj))
        self.get_by_filters.assert_not_called()

    def test_empty_memory_mode_host(self):
        # 1 GB cache, default hot ratio 0.5: 2048 MB of RAM fit, 2050 not.
        mm = fakes.host('host1', [fakes.memory_mode(1)])
        self.assertEqual(['host1'], self._passing(
            [mm], fakes.request_spec(memory_mb=2048)))
        self.assertEqual([], self._passing(
            [mm], fakes.request_spec(memory_mb=2050)))

    def test_bound_exactly_at_the_limit(self):
        # 2 GB cache; 1024 MB already hot (2 x 1024 MB at ratio 0.5).
        insts = [self.instance(uuids.a, 1024, {'pmem:hot_ratio': '0.5'}),
                 self.instance(uuids.b, 1024, {'pmem:hot_ratio': '0.5'})]
        mm = fakes.host('host1', [fakes.memory_mode(2)], insts)
        at_limit = fakes.request_spec({'pmem:hot_ratio': '0.25'},
                                      memory_mb=4096)
        self.assertEqual(['host1'], self._passing([mm], at_limit))
        over = fakes.request_spec({'pmem:hot_ratio': '0.25'},
                                  memory_mb=4100)
        self.assertEqual([], self._passing([mm], over))
        self.assertEqual(
            ["DEBUG nova_pmem_filters.filters %s fails pmem cache check: hot "
             "RAM 1024 MB + 1025 MB requested exceeds the DRAM-cache bound "
             "of 2048 MB (2 GB x cache_overcommit_ratio 1.0)" % mm],
            self.log_lines('DEBUG'))

    def test_bound_with_float_sums(self):
        # Nine instances at hot ratio 0.7 plus a tenth fill 7 GB exactly;
        # the float sum is a hair above and must still be admitted.
        insts = [self.instance(getattr(uuids, 'i%d' % i), 1024,
                               {'pmem:hot_ratio': '0.7'}) for i in range(9)]
        mm = fakes.host('host1', [fakes.memory_mode(7)], insts)
        spec_obj = fakes.request_spec({'pmem:hot_ratio': '0.7'})
        self.assertEqual(['host1'], self._passing([mm], spec_obj))

    def test_hot_ratio_of_existing_instances(self):
        # 4 GB cache. host1: 8 GB at 0.25 = 2 GB hot; host2: 8 GB at the
        # default 0.5 = 4 GB hot (full); host3: 4 GB at 1.0 = 4 GB hot.
        hosts = [
            fakes.host('host1', [fakes.memory_mode(4)], [self.instance(
                uuids.a, 8192, {'pmem:hot_ratio': '0.25'})]),
            fakes.host('host2', [fakes.memory_mode(4)], [self.instance(
                uuids.b, 8192)]),
            fakes.host('host3', [fakes.memory_mode(4)], [self.instance(
                uuids.c, 4096, {'pmem:hot_ratio': '1.0'})]),
        ]
        spec_obj = fakes.request_spec(memory_mb=4096)
        self.assertEqual(['host1'], self._passing(hosts, spec_obj))
        spec_obj = fakes.request_spec({'pmem:hot_ratio': '0.001'},
                                      memory_mb=4096)
        self.assertEqual(['host1'], self._passing(hosts, spec_obj))

    def test_cache_overcommit_ratio(self):
        insts = [self.instance(uuids.a, 2048, {'pmem:hot_ratio': '1'})]
        mm = fakes.host('host1', [fakes.memory_mode(2)], insts)
        spec_obj = fakes.request_spec({'pmem:hot_ratio': '1'},
                                      memory_mb=1024)
        self.assertEqual([], self._passing([mm], spec_obj))
        self.flags(cache_overcommit_ratio=1.5, group='pmem')
        self.assertEqual(['host1'], self._passing([mm], spec_obj))
        spec_obj = fakes.request_spec({'pmem:hot_ratio': '1'},
                                      memory_mb=1025)
        self.assertEqual([], self._passing([mm], spec_obj))
        self.flags(cache_overcommit_ratio=0.0, group='pmem')
        empty = fakes.host('host2', [fakes.memory_mode(2)])
        self.assertEqual([], self._passing([empty], spec_obj))

    def test_default_hot_ratio(self):
        mm = fakes.host('host1', [fakes.memory_mode(1)])
        spec_obj = fakes.request_spec(memory_mb=4096)
        self.assertEqual([], self._passing([mm], spec_obj))
        self.flags(default_hot_ratio=0.25, group='pmem')
        self.assertEqual(['host1'], self._passing([mm], spec_obj))

    def test_moved_instance_not_counted_twice(self):
        # The instance being moved (resize to the same host, or a migration
        # back) is already in the host's usage; it fills the cache.
        insts = [self.instance(uuids.moving, 2048, {'pmem:hot_ratio': '1'})]
        mm = fakes.host('host1', [fakes.memory_mode(2)], insts)
        spec_obj = fakes.request_spec({'pmem:hot_ratio': '1'},
                                      memory_mb=2048,
                                      instance_uuid=uuids.moving)
        self.assertEqual(['host1'], self._passing([mm], spec_obj))
        # It is not even read.
        self.get_by_filters.assert_not_called()
        other = fakes.request_spec({'pmem:hot_ratio': '1'}, memory_mb=2048,
                                   instance_uuid=uuids.other)
        self.assertEqual([], self._passing([mm], other))

    def test_multi_create_counts_its_own_placements(self):
        # Nova filters again for each instance of a multi-create request and
        # consumes free_ram_mb of the chosen host in between, without adding
        # the instance to host_state.instances (or only as a stub).
        mm = fakes.host('host1', [fakes.memory_mode(2)], free_ram_mb=65536)
        spec_obj = fakes.request_spec({'pmem:hot_ratio': '0.5'},
                                      memory_mb=2048)
        placed = []
        for n in range(3):
            if not self._passing([mm], spec_obj):
                break
            placed.append(n)
            mm.free_ram_mb -= 2048
            mm.instances[getattr(uuids, 'stub%d' % n)] = objects.Instance(
                uuid=getattr(uuids, 'stub%d' % n))
        self.assertEqual([0, 1], placed)
        self.get_by_filters.assert_not_called()

    def test_unknown_profile_always_rejected(self):
        hosts = [fakes.host('host1', [{'pmem_mode': 'memory_mode'}]),
                 fakes.host('host2', [fakes.DRAM, fakes.memory_mode(4)]),
                 fakes.host('host3', [fakes.memory_mode('lots')])]
        for spec_obj in (fakes.request_spec(),
                         fakes.request_spec({'pmem:hot_ratio': '0.001'},
                                            memory_mb=1)):
            self.assertEqual([], self._passing(hosts, spec_obj))
        self.assertEqual(3, len(self.log_lines('WARNING')))

    def test_invalid_flavor_rejects_every_host(self):
        hosts = [fakes.host('host1', [fakes.DRAM]),
                 fakes.host('host2', [fakes.memory_mode(192)])]
        spec_obj = fakes.request_spec({'pmem:hot_ratio': '0'})
        self.assertEqual([], self._passing(hosts, spec_obj))
        self.assertEqual(
            ["WARNING nova_pmem_filters.filters PmemCacheFilter rejects "
             "every host for instance %s: extra spec 'pmem:hot_ratio' has "
             "value '0', expected a decimal number greater than 0 and at "
             "most 1" % uuids.new],
            self.log_lines('WARNING'))

    def test_rebuild_passes(self):
        self.assertFalse(filters.PmemCacheFilter.RUN_ON_REBUILD)
        insts = [self.instance(uuids.a, 2048, {'pmem:hot_ratio': '1'})]
        hosts = [fakes.host('host1', [fakes.memory_mode(2)], insts),
                 fakes.host('host2', [{'pmem_mode': 'memory_mode'}])]
        spec_obj = fakes.request_spec({'pmem:hot_ratio': '1'},
                                      memory_mb=2048, rebuild=True,
                                      instance_uuid=uuids.rebuilt)
        self.assertEqual(['host1', 'host2'], self._passing(hosts, spec_obj))
        self.get_by_filters.assert_not_called()

    def test_unreadable_flavors_reject_the_host(self):
        self.get_by_filters.side_effect = Exception('database is away')
        hosts = [
            fakes.host('host1', [fakes.memory_mode(192)],
                       [self.instance(uuids.a)]),
            fakes.host('host2', [fakes.memory_mode(192)]),
            fakes.host('host3', [fakes.DRAM], [self.instance(uuids.b)]),
        ]
        self.assertEqual(['host2', 'host3'],
                         self._passing(hosts, fakes.request_spec()))
        self.assertEqual(
            ["WARNING nova_pmem_filters.scheduler.ledger Could not read the "
             "flavors of 1 instances (database is away); tiered hosts with "
             "those instances are rejected by PmemCacheFilter for this "
             "request."],
            self.log_lines('WARNING'))
        self.assertEqual(
            ["DEBUG nova_pmem_filters.filters %s fails pmem cache check: the "
             "flavors of its instances could not be read" % hosts[0]],
            self.log_lines('DEBUG'))

    def test_host_passes(self):
        mm = fakes.host('host1', [fakes.memory_mode(1)])
        self.assertTrue(self.filt_cls.host_passes(
            mm, fakes.request_spec(memory_mb=2048)))
        self.assertFalse(self.filt_cls.host_passes(
            mm, fakes.request_spec(memory_mb=4096)))

    def test_request_without_instance_uuid(self):
        mm = fakes.host('host1', [fakes.memory_mode(1)],
                        [self.instance(uuids.a, 1024)])
        spec_obj = fakes.request_spec(memory_mb=1024)
        del spec_obj.instance_uuid
        self.assertEqual(['host1'], self._passing([mm], spec_obj))
        self.assertEqual([], self.log_lines('WARNING'))


class AllFiltersTestCase(fakes.PmemTestCase):

    def test_all_filters(self):
        self.assertEqual([filters.PmemModeFilter, filters.PmemCacheFilter],
                         filters.all_filters())
        for cls in filters.all_filters():
            self.assertTrue(cls.__name__.startswith('Pmem'))
            self.assertTrue(issubclass(cls, nova_filters.BaseHostFilter))
