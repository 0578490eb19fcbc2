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
"""Repair of the aggregates a re-forked scheduler worker holds stale."""

import threading
import time

import fixtures

from nova import context as nova_context
from nova import objects

from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters import filters
from nova_pmem_filters.scheduler import aggregate_view
from nova_pmem_filters.scheduler import host_profiles
from tests.unit import fakes


check_view = aggregate_view.check_aggregate_view


class AggregateViewCheckTestCase(fakes.PmemTestCase):
    """check_aggregate_view, with Nova's database and RPC replaced.

    tests/functional/test_stale_aggregates.py runs it in a real Nova.
    """

    def setUp(self):
        super(AggregateViewCheckTestCase, self).setUp()
        self.useFixture(fixtures.MonkeyPatch(
            aggregate_view.__name__ + '._VIEW_CHECKED_PID', None))
        self.useFixture(fixtures.MonkeyPatch(
            'nova_pmem_filters.scheduler.aggregate_view._VIEW_REPAIR', None))
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
        mm = {profile.MODE_KEY: kinds.MEMORY_MODE,
              profile.DRAM_CACHE_KEY: '192'}
        dram = {profile.MODE_KEY: kinds.DRAM}
        fresh_mm = self._agg(1, ['mm1'], mm)
        fresh_dram = self._agg(2, ['dram1'], dram)
        self.fresh = [fresh_mm, fresh_dram]
        stale_host = fakes.host('mm1')      # held no aggregate at all
        ok_host = fakes.host('dram1')
        ok_host.aggregates = [self._agg(2, ['dram1'], dram)]
        gone = self._agg(7, ['dram1'], {profile.MODE_KEY: 'memory_mode'})
        other = fakes.host('ad1')
        other.aggregates = [gone]

        stale = check_view(
            self.spec, [stale_host, ok_host, other])

        self.assertEqual(['mm1', 'ad1'], stale)
        self.assertEqual([fresh_mm], stale_host.aggregates)
        self.assertEqual([], other.aggregates)
        self.assertEqual(kinds.MEMORY_MODE,
                         host_profiles.host_profile(stale_host).mode)
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
        self.assertEqual([], check_view(self.spec, [host]))
        self.assertEqual([], check_view(
            self.spec, [fakes.host('mm1')]))
        self.assertEqual(1, self.get_all.call_count)
        self.assertFalse(self.client.update_aggregates.called)
        self.assertEqual('', self.log.output)

    def test_no_context_or_disabled_means_no_check(self):
        self.assertEqual([], check_view(
            fakes.request_spec(), [fakes.host('mm1')]))
        self.flags(check_aggregate_view=False, group='pmem')
        self.assertEqual([], check_view(
            self.spec, [fakes.host('mm1')]))
        self.assertFalse(self.get_all.called)
        # Not marked as done while it could not run.
        self.assertIsNone(aggregate_view._VIEW_CHECKED_PID)

    def test_database_error_keeps_the_view(self):
        self.get_all.side_effect = RuntimeError('database gone')
        host = fakes.host('mm1')
        self.assertEqual([], check_view(self.spec, [host]))
        self.assertIn('Could not compare', self.log.output)
        self.assertIn('database gone', self.log.output)

    def test_filter_serves_while_the_check_fails(self):
        self.get_all.side_effect = RuntimeError('database gone')
        host = fakes.host('dram1', metadata=[{profile.MODE_KEY: 'dram'}])
        self.spec.flavor.extra_specs = {'pmem:modes': 'dram'}
        self.assertEqual([host], filters.PmemModeFilter().filter_all(
            [host], self.spec))

    def test_requests_until_the_fanout_arrives_are_repaired_too(self):
        mm = {profile.MODE_KEY: kinds.MEMORY_MODE,
              profile.DRAM_CACHE_KEY: '192'}
        self.fresh = [self._agg(1, ['mm1'], mm)]
        first = fakes.host('mm1')
        self.assertEqual(['mm1'],
                         check_view(self.spec, [first]))
        # A request that ran meanwhile in another thread, or before Nova's
        # fanout reached this worker, still carries the stale copy.
        second = fakes.host('mm1')
        self.assertEqual(['mm1'],
                         check_view(self.spec, [second]))
        self.assertEqual(self.fresh, second.aggregates)
        self.assertEqual(1, self.get_all.call_count)
        self.assertEqual(1, self.client.update_aggregates.call_count)
        # Once the window is over, Nova's copy is trusted again.
        self.useFixture(fixtures.MockPatch(
            'time.monotonic',
            return_value=(time.monotonic()
                          + aggregate_view.VIEW_REPAIR_WINDOW_S + 1)))
        late = fakes.host('mm1')
        self.assertEqual([], check_view(self.spec, [late]))
        self.assertEqual([], late.aggregates)

    def test_concurrent_request_is_repaired_too(self):
        mm = {profile.MODE_KEY: kinds.MEMORY_MODE,
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
                        check_view(self.spec, [other])))
                seen['thread'].start()
                seen['thread'].join(10)
            return self.fresh

        self.get_all.side_effect = read_while_another_request_starts
        self.assertEqual(['mm1'], check_view(
            self.spec, [fakes.host('mm1')]))
        self.assertEqual(['mm1'], seen['stale'])
        self.assertEqual(self.fresh, other.aggregates)
        # Later requests use the repair, with no read of their own.
        late = fakes.host('mm1')
        self.assertEqual(['mm1'],
                         check_view(self.spec, [late]))
        self.assertEqual(2, self.get_all.call_count)
