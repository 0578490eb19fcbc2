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
"""Tests of the hot-RAM ledger and the HostState / RequestSpec adapters."""

import threading
import time

import fixtures
from oslo_utils.fixture import uuidsentinel as uuids

from nova import context as nova_context
from nova import objects

from nova_pmem_filters import filters
from nova_pmem_filters import hostinfo
from nova_pmem_filters import profile
from tests.unit import fakes


class HotRamLedgerTestCase(fakes.PmemTestCase):

    def setUp(self):
        super(HotRamLedgerTestCase, self).setUp()
        self.flags(instance_cache_ttl=600, group='pmem')

    def _used(self, hosts, exclude_uuid=None):
        return self.ledger.used_by_host(hosts, exclude_uuid=exclude_uuid)

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
            "WARNING nova_pmem_filters.hostinfo Instance %s has a flavor "
            "with invalid pmem extra specs (extra spec 'pmem:hot_ratio' has "
            "value '2', expected a decimal number greater than 0 and at "
            "most 1); counting all its RAM as hot." % uuids.a,
            "WARNING nova_pmem_filters.hostinfo Instance %s has a flavor "
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
        # in no database yet and count through pending_ram_mb().
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


class AdapterTestCase(fakes.PmemTestCase):

    def test_host_profile(self):
        prof = hostinfo.host_profile(
            fakes.host('host1', [fakes.memory_mode(64)]))
        self.assertEqual(profile.HostProfile(mode='memory_mode',
                                             dram_cache_gb=64.0), prof)
        self.assertEqual([], self.log_lines('WARNING'))

    def test_host_profile_warns_once(self):
        bad = fakes.host('host1', [fakes.DRAM, fakes.APP_DIRECT])
        for _ in range(3):
            self.assertFalse(hostinfo.host_profile(bad).known)
        self.assertEqual(1, len(self.log_lines('WARNING')))
        # Another host with the same problem gets its own warning.
        other = fakes.host('host2', [fakes.DRAM, fakes.APP_DIRECT])
        hostinfo.host_profile(other)
        self.assertEqual(2, len(self.log_lines('WARNING')))

    def test_warned_set_is_bounded(self):
        self.useFixture(fixtures.MockPatchObject(hostinfo, '_WARNED_MAX', 3))
        for n in range(7):
            hostinfo.warn_once(('k', n), 'problem %(n)s', {'n': n})
        self.assertLessEqual(len(hostinfo._WARNED), 3)
        self.assertEqual(7, len(self.log_lines('WARNING')))

    def test_unreadable_aggregates(self):
        host1 = fakes.host('host1')
        host1.aggregates = [object()]
        prof = hostinfo.host_profile(host1)
        self.assertFalse(prof.known)
        self.assertIn('unreadable aggregates', prof.problem)

    def test_flavor_request_reads_no_unset_field(self):
        flavor = objects.Flavor(name='bare', memory_mb=1024)
        request, error = hostinfo.flavor_request(flavor)
        self.assertIsNone(error)
        self.assertFalse(request.constrains_modes)

    def test_spec_request_without_flavor(self):
        request, error = hostinfo.spec_request(objects.RequestSpec())
        self.assertIsNone(request)
        self.assertIn('request has no flavor', error)


class AggregateViewCheckTestCase(fakes.PmemTestCase):
    """check_aggregate_view, with Nova's database and RPC replaced.

    tests/functional/test_stale_aggregates.py runs it in a real Nova.
    """

    def setUp(self):
        super(AggregateViewCheckTestCase, self).setUp()
        self.useFixture(fixtures.MonkeyPatch(
            'nova_pmem_filters.hostinfo._VIEW_CHECKED_PID', None))
        self.useFixture(fixtures.MonkeyPatch(
            'nova_pmem_filters.hostinfo._VIEW_REPAIR', None))
        self.fresh = []
        self.get_all = self.useFixture(fixtures.MockPatch(
            'nova.objects.AggregateList.get_all',
            side_effect=lambda ctx: self.fresh)).mock
        self.client = self.useFixture(fixtures.MockPatch(
            'nova.scheduler.client.query.SchedulerQueryClient')).mock()
        self.log = self.useFixture(fixtures.FakeLogger(
            name='nova_pmem_filters'))
        self.spec = fakes.request_spec()
        self.spec._context = nova_context.get_admin_context()

    def _agg(self, agg_id, hosts, metadata):
        return objects.Aggregate(id=agg_id, name='agg%d' % agg_id,
                                 hosts=hosts, metadata=metadata)

    def test_repairs_stale_hosts_only(self):
        mm = {profile.MODE_KEY: profile.MEMORY_MODE,
              profile.DRAM_CACHE_KEY: '192'}
        dram = {profile.MODE_KEY: profile.DRAM}
        fresh_mm = self._agg(1, ['mm1'], mm)
        fresh_dram = self._agg(2, ['dram1'], dram)
        self.fresh = [fresh_mm, fresh_dram]
        stale_host = fakes.host('mm1')      # held no aggregate at all
        ok_host = fakes.host('dram1')
        ok_host.aggregates = [self._agg(2, ['dram1'], dram)]
        gone = self._agg(7, ['dram1'], {profile.MODE_KEY: 'memory_mode'})
        other = fakes.host('ad1')
        other.aggregates = [gone]

        stale = hostinfo.check_aggregate_view(
            self.spec, [stale_host, ok_host, other])

        self.assertEqual(['mm1', 'ad1'], stale)
        self.assertEqual([fresh_mm], stale_host.aggregates)
        self.assertEqual([], other.aggregates)
        self.assertEqual(profile.MEMORY_MODE,
                         hostinfo.host_profile(stale_host).mode)
        self.client.update_aggregates.assert_called_once_with(
            self.spec._context, self.fresh)
        self.client.delete_aggregate.assert_called_once_with(
            self.spec._context, gone)
        self.assertIn('differ from the database', self.log.output)
        self.assertIn("ad1 held [7 {'pmem_mode': 'memory_mode'}], "
                      "database []; mm1 held [], database [1 {",
                      self.log.output)

    def test_once_per_process_and_quiet_when_fresh(self):
        self.fresh = [self._agg(1, ['mm1'], {profile.MODE_KEY: 'dram'})]
        host = fakes.host('mm1')
        host.aggregates = [self._agg(1, ['mm1'], {profile.MODE_KEY: 'dram'})]
        self.assertEqual([], hostinfo.check_aggregate_view(self.spec, [host]))
        self.assertEqual([], hostinfo.check_aggregate_view(
            self.spec, [fakes.host('mm1')]))
        self.assertEqual(1, self.get_all.call_count)
        self.assertFalse(self.client.update_aggregates.called)
        self.assertEqual('', self.log.output)

    def test_no_context_or_disabled_means_no_check(self):
        self.assertEqual([], hostinfo.check_aggregate_view(
            fakes.request_spec(), [fakes.host('mm1')]))
        self.flags(check_aggregate_view=False, group='pmem')
        self.assertEqual([], hostinfo.check_aggregate_view(
            self.spec, [fakes.host('mm1')]))
        self.assertFalse(self.get_all.called)
        # Not marked as done while it could not run.
        self.assertIsNone(hostinfo._VIEW_CHECKED_PID)

    def test_database_error_keeps_the_view(self):
        self.get_all.side_effect = RuntimeError('database gone')
        host = fakes.host('mm1')
        self.assertEqual([], hostinfo.check_aggregate_view(self.spec, [host]))
        self.assertIn('Could not compare', self.log.output)
        self.assertIn('database gone', self.log.output)

    def test_filter_serves_while_the_check_fails(self):
        self.get_all.side_effect = RuntimeError('database gone')
        host = fakes.host('dram1', metadata=[{profile.MODE_KEY: 'dram'}])
        self.spec.flavor.extra_specs = {'pmem:modes': 'dram'}
        self.assertEqual([host], filters.PmemModeFilter().filter_all(
            [host], self.spec))

    def test_requests_until_the_fanout_arrives_are_repaired_too(self):
        mm = {profile.MODE_KEY: profile.MEMORY_MODE,
              profile.DRAM_CACHE_KEY: '192'}
        self.fresh = [self._agg(1, ['mm1'], mm)]
        first = fakes.host('mm1')
        self.assertEqual(['mm1'],
                         hostinfo.check_aggregate_view(self.spec, [first]))
        # A request that ran meanwhile in another thread, or before Nova's
        # fanout reached this worker, still carries the stale copy.
        second = fakes.host('mm1')
        self.assertEqual(['mm1'],
                         hostinfo.check_aggregate_view(self.spec, [second]))
        self.assertEqual(self.fresh, second.aggregates)
        self.assertEqual(1, self.get_all.call_count)
        self.assertEqual(1, self.client.update_aggregates.call_count)
        # Once the window is over, Nova's copy is trusted again.
        self.useFixture(fixtures.MockPatch(
            'time.monotonic',
            return_value=time.monotonic() + hostinfo.VIEW_REPAIR_WINDOW_S + 1))
        late = fakes.host('mm1')
        self.assertEqual([], hostinfo.check_aggregate_view(self.spec, [late]))
        self.assertEqual([], late.aggregates)

    def test_concurrent_request_is_repaired_too(self):
        mm = {profile.MODE_KEY: profile.MEMORY_MODE,
              profile.DRAM_CACHE_KEY: '192'}
        self.fresh = [self._agg(1, ['mm1'], mm)]
        other = fakes.host('mm1')
        seen = {}

        def read_while_another_request_starts(ctx):
            # Another scheduler thread starts a request during the read.
            if 'thread' not in seen:
                seen['thread'] = threading.Thread(
                    target=lambda: seen.setdefault(
                        'stale',
                        hostinfo.check_aggregate_view(self.spec, [other])))
                seen['thread'].start()
                seen['thread'].join(10)
            return self.fresh

        self.get_all.side_effect = read_while_another_request_starts
        self.assertEqual(['mm1'], hostinfo.check_aggregate_view(
            self.spec, [fakes.host('mm1')]))
        self.assertEqual(['mm1'], seen['stale'])
        self.assertEqual(self.fresh, other.aggregates)
        # Later requests use the repair, with no read of their own.
        late = fakes.host('mm1')
        self.assertEqual(['mm1'],
                         hostinfo.check_aggregate_view(self.spec, [late]))
        self.assertEqual(2, self.get_all.call_count)
