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
"""The hot-RAM ledger: one batched query per cell, entries kept and renewed."""


from oslo_utils.fixture import uuidsentinel as uuids

from nova import context as nova_context
from nova import objects

from nova_pmem_filters import filters
from tests.unit import fakes


class HotRamLedgerTestCase(fakes.PmemTestCase):

    def setUp(self):
        super(HotRamLedgerTestCase, self).setUp()
        self.flags(instance_cache_ttl=600, group='pmem')

    def _used(self, hosts, exclude_uuid=None):
        return {key: None if usage is None else usage.total
                for key, usage in self.ledger.usage_by_host(
                    hosts, exclude_uuid=exclude_uuid).items()}

    def test_lazy_load_guard(self):
        # The guard of PmemTestCase notices a lazy-load, so the tests that
        # rely on it are not passing by accident.
        inst = self.instance(uuids.a)
        self.assertRaises(AssertionError, getattr, inst, 'flavor')
        self.assertEqual([(uuids.a, 'flavor')], self.lazy_loads)
        del self.lazy_loads[:]

    def test_bare_instances_loaded_in_one_query(self):
        host1 = fakes.host('host1', instances=[
            self.instance(uuids.a, 1024, {'pmem:hot_ratio': '0.5'}),
            self.instance(uuids.b, 2048, {'pmem:hot_ratio': '0.25'})])
        host2 = fakes.host('host2', instances=[
            self.instance(uuids.c, 4096, {'pmem:hot_ratio': '1'})])
        host3 = fakes.host('host3')
        used = self._used([host1, host2, host3])
        self.assertEqual({('host1', 'host1-node'): 1024.0,
                          ('host2', 'host2-node'): 4096.0,
                          ('host3', 'host3-node'): 0.0}, used)
        self.get_by_filters.assert_called_once_with(
            self.ctxt, {'uuid': sorted([uuids.a, uuids.b, uuids.c])},
            expected_attrs=['flavor', 'numa_topology'])
        self.assertEqual(1, self.ledger.queries)

    def test_default_hot_ratio_of_existing_instances(self):
        self.flags(default_hot_ratio=0.25, group='pmem')
        host1 = fakes.host('host1', instances=[self.instance(uuids.a, 4096)])
        self.assertEqual({('host1', 'host1-node'): 1024.0},
                         self._used([host1]))

    def test_cached_entries_reused(self):
        host1 = fakes.host('host1', instances=[self.instance(uuids.a, 1024),
                                               self.instance(uuids.b, 1024)])
        first = self._used([host1])
        self.now += 599
        # A fresh HostState with fresh bare objects, as on the next request.
        host1 = fakes.host('host1', instances=[
            objects.Instance(self.ctxt, uuid=uuids.a),
            objects.Instance(self.ctxt, uuid=uuids.b)])
        self.assertEqual(first, self._used([host1]))
        self.assertEqual(1, self.get_by_filters.call_count)

    def test_only_new_instances_queried(self):
        host1 = fakes.host('host1', instances=[self.instance(uuids.a, 1024)])
        self._used([host1])
        host1 = fakes.host('host1', instances=[
            self.instance(uuids.a, 1024),
            self.instance(uuids.b, 2048, {'pmem:hot_ratio': '1'})])
        self.assertEqual({('host1', 'host1-node'): 2560.0},
                         self._used([host1]))
        self.assertEqual([[uuids.a], [uuids.b]], self.queried_uuids())

    def test_instance_on_another_host_is_reloaded(self):
        inst = self.instance(uuids.a, 1024, {'pmem:hot_ratio': '1'})
        self._used([fakes.host('host1', instances=[inst])])
        # Resized while it moved: the new flavor is in the database.
        self.instance(uuids.a, 4096, {'pmem:hot_ratio': '1'})
        used = self._used([fakes.host('host1'),
                           fakes.host('host2', instances=[inst])])
        self.assertEqual({('host1', 'host1-node'): 0.0,
                          ('host2', 'host2-node'): 4096.0}, used)
        self.assertEqual([[uuids.a], [uuids.a]], self.queried_uuids())
        # Recorded on its new host: no query on the next request.
        self._used([fakes.host('host2', instances=[inst])])
        self.assertEqual(2, self.get_by_filters.call_count)

    def test_ttl_expiry(self):
        inst = self.instance(uuids.a, 1024, {'pmem:hot_ratio': '1'})
        host1 = fakes.host('host1', instances=[inst])
        self._used([host1])
        # A same-host resize goes unnoticed until the entry expires.
        self.instance(uuids.a, 2048, {'pmem:hot_ratio': '1'})
        self.now += 599.5
        self.assertEqual({('host1', 'host1-node'): 1024.0},
                         self._used([host1]))
        self.assertEqual(1, self.get_by_filters.call_count)
        self.now += 0.5
        self.assertEqual({('host1', 'host1-node'): 2048.0},
                         self._used([host1]))
        self.assertEqual(2, self.get_by_filters.call_count)

    def test_zero_ttl_reads_every_request(self):
        self.flags(instance_cache_ttl=0, group='pmem')
        host1 = fakes.host('host1', instances=[self.instance(uuids.a)])
        for _ in range(3):
            self._used([host1])
        self.assertEqual(3, self.get_by_filters.call_count)

    def test_old_entries_pruned(self):
        self.flags(instance_cache_ttl=10, group='pmem')
        self._used([fakes.host('host1', instances=[self.instance(uuids.a)])])
        self.assertIn(uuids.a, self.ledger._entries)
        self.now += 61
        self._used([fakes.host('host2', instances=[self.instance(uuids.b)])])
        self.assertIn(uuids.a, self.ledger._entries)
        self.now += 60
        self._used([fakes.host('host2', instances=[self.instance(uuids.b)])])
        self.assertNotIn(uuids.a, self.ledger._entries)
        self.assertIn(uuids.b, self.ledger._entries)

    def test_loaded_flavors_need_no_query(self):
        # track_instance_changes: nova-compute pushed full objects.
        host1 = fakes.host('host1', instances=[
            self.instance(uuids.a, 1024, {'pmem:hot_ratio': '0.5'},
                          loaded=True, in_db=False),
            self.instance(uuids.b, 2048, {'pmem:hot_ratio': '0.5'},
                          loaded=True, in_db=False)])
        self.assertEqual({('host1', 'host1-node'): 1536.0},
                         self._used([host1]))
        self.get_by_filters.assert_not_called()
        self.assertEqual(0, self.ledger.queries)

    def test_loaded_flavor_refreshes_entry(self):
        host1 = fakes.host('host1', instances=[
            self.instance(uuids.a, 1024, {'pmem:hot_ratio': '1'})])
        self._used([host1])
        host1 = fakes.host('host1', instances=[
            self.instance(uuids.a, 512, {'pmem:hot_ratio': '1'},
                          loaded=True)])
        self.assertEqual({('host1', 'host1-node'): 512.0},
                         self._used([host1]))
        # The pushed value is kept for the bare object of a later request.
        host1 = fakes.host('host1', instances=[
            objects.Instance(self.ctxt, uuid=uuids.a)])
        self.assertEqual({('host1', 'host1-node'): 512.0},
                         self._used([host1]))
        self.assertEqual(1, self.get_by_filters.call_count)

    def test_failing_load(self):
        self.get_by_filters.side_effect = Exception('database is away')
        host1 = fakes.host('host1', instances=[self.instance(uuids.a)])
        host2 = fakes.host('host2', instances=[
            self.instance(uuids.b, loaded=True)])
        host3 = fakes.host('host3')
        self.assertEqual({('host1', 'host1-node'): None,
                          ('host2', 'host2-node'): 512.0,
                          ('host3', 'host3-node'): 0.0},
                         self._used([host1, host2, host3]))
        self.assertEqual(1, len(self.log_lines('WARNING')))
        # Nothing is remembered from a failed read: the next request
        # retries and succeeds.
        self.get_by_filters.side_effect = self._get_by_filters
        self.assertEqual({('host1', 'host1-node'): 512.0},
                         self._used([host1]))
        self.assertEqual(2, self.get_by_filters.call_count)

    def test_deleted_and_missing_instances_count_zero(self):
        host1 = fakes.host('host1', instances=[
            self.instance(uuids.gone, 4096, deleted=True),
            self.instance(uuids.missing, 4096, in_db=False),
            self.instance(uuids.live, 1024)])
        self.assertEqual({('host1', 'host1-node'): 512.0},
                         self._used([host1]))
        # Recorded as zero: not queried again on the next request.
        self._used([host1])
        self.assertEqual(1, self.get_by_filters.call_count)

    def test_invalid_specs_count_all_ram(self):
        host1 = fakes.host('host1', instances=[
            self.instance(uuids.a, 2048, {'pmem:hot_ratio': '2'}),
            self.instance(uuids.b, 1024, {'pmem:typo': 'x'}),
            self.instance(uuids.c, 1024, {'pmem:hot_ratio': '0.25'})])
        self.assertEqual({('host1', 'host1-node'): 3328.0},
                         self._used([host1]))
        warnings = sorted(self.log_lines('WARNING'))
        expected = sorted([
            "WARNING nova_pmem_filters.scheduler.ledger Instance %s has a "
            "flavor "
            "with invalid pmem extra specs (extra spec 'pmem:hot_ratio' has "
            "value '2', expected a decimal number greater than 0 and at "
            "most 1); counting all its RAM as hot." % uuids.a,
            "WARNING nova_pmem_filters.scheduler.ledger Instance %s has a "
            "flavor "
            "with invalid pmem extra specs (extra spec 'pmem:typo' has "
            "value 'x', expected one of the keys pmem:hot_ratio, "
            "pmem:modes, pmem:priority); counting all its RAM as hot."
            % uuids.b])
        self.assertEqual(expected, warnings)

    def test_contradictory_specs_use_their_hot_ratio(self):
        host1 = fakes.host('host1', instances=[
            self.instance(uuids.a, 2048, {'hw:pmem': 'SMALL',
                                          'pmem:modes': 'dram',
                                          'pmem:hot_ratio': '0.25'})])
        self.assertEqual({('host1', 'host1-node'): 512.0},
                         self._used([host1]))

    def test_excluded_instance(self):
        host1 = fakes.host('host1', instances=[
            self.instance(uuids.a, 1024, {'pmem:hot_ratio': '1'}),
            self.instance(uuids.b, 1024, {'pmem:hot_ratio': '1'})])
        self.assertEqual({('host1', 'host1-node'): 1024.0},
                         self._used([host1], exclude_uuid=uuids.a))
        self.assertEqual([[uuids.b]], self.queried_uuids())

    def test_one_query_per_cell(self):
        cell1 = nova_context.get_admin_context()
        cell1.cell_uuid = uuids.cell1
        cell2 = nova_context.get_admin_context()
        cell2.cell_uuid = uuids.cell2
        hosts = [
            fakes.host('host1', instances=[
                self.instance(uuids.a, ctxt=cell1),
                self.instance(uuids.b, ctxt=cell1)]),
            fakes.host('host2', instances=[
                self.instance(uuids.c, ctxt=cell2)]),
            fakes.host('host3', instances=[
                self.instance(uuids.d, ctxt=cell1)]),
        ]
        self._used(hosts)
        self.assertEqual(2, self.get_by_filters.call_count)
        by_context = {call.args[0].cell_uuid: call.args[1]['uuid']
                      for call in self.get_by_filters.call_args_list}
        self.assertEqual(
            {uuids.cell1: sorted([uuids.a, uuids.b, uuids.d]),
             uuids.cell2: [uuids.c]}, by_context)

    def test_context_less_stubs_skipped(self):
        # Nova adds Instance(uuid=...) stubs, with no context, for the
        # instances of a multi-create request it has just placed; they are
        # in no database yet and count as the RAM the request placed
        # (request_memo).
        stub = objects.Instance(uuid=uuids.stub)
        host1 = fakes.host('host1', instances=[
            stub, self.instance(uuids.a, 1024)])
        self.assertEqual({('host1', 'host1-node'): 512.0},
                         self._used([host1]))
        self.assertEqual([[uuids.a]], self.queried_uuids())
        self.assertNotIn(uuids.stub, self.ledger._entries)


class CacheFilterLedgerTestCase(fakes.PmemTestCase):
    """The ledger as PmemCacheFilter uses it, one request after another."""

    def setUp(self):
        super(CacheFilterLedgerTestCase, self).setUp()
        self.filt_cls = filters.PmemCacheFilter()

    def _hosts(self):
        return [fakes.host('host%d' % n, [fakes.memory_mode(4)],
                           [objects.Instance(self.ctxt, uuid=uuid)
                            for uuid in uuid_list])
                for n, uuid_list in enumerate(self.layout)]

    def test_one_query_per_request_then_none(self):
        self.layout = []
        for n in range(5):
            uuid_list = [getattr(uuids, 'h%di%d' % (n, i)) for i in range(4)]
            for uuid in uuid_list:
                self.instance(uuid, 1024)
            self.layout.append(uuid_list)
        passing = self.filt_cls.filter_all(self._hosts(),
                                           fakes.request_spec())
        self.assertEqual(5, len(passing))
        self.assertEqual(1, self.get_by_filters.call_count)
        self.assertEqual(20, len(self.queried_uuids()[0]))
        passing = self.filt_cls.filter_all(self._hosts(),
                                           fakes.request_spec())
        self.assertEqual(5, len(passing))
        self.assertEqual(1, self.get_by_filters.call_count)

    def test_dram_hosts_not_accounted(self):
        hosts = [fakes.host('host1', [fakes.DRAM],
                            [self.instance(uuids.a)])]
        self.filt_cls.filter_all(hosts, fakes.request_spec())
        self.get_by_filters.assert_not_called()
