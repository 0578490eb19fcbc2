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
"""A scheduler whose aggregates are older than the database.

Nova's HostManager reads the aggregates in the parent nova-scheduler process
and hears of later changes by fanout. A worker the parent forks again after
a crash starts from the parent's start-up copy; the integration suite saw
such a worker take the Memory-Mode host for a DRAM host. Here the in-process
scheduler is given that copy (no aggregates: the parent started before they
were made) and the filters' first request must repair it.
"""

from nova_pmem_filters.scheduler import aggregate_view
from tests.functional import base

CAPACITY_SPECS = {'pmem:modes': 'memory_mode', 'pmem:hot_ratio': '0.5'}


class StaleAggregateViewTest(base.PmemTestBase):

    EXPECT_STALE_VIEW = True

    def _forget_aggregates(self):
        """What a re-forked worker holds: the copy from before they existed."""
        host_manager = self.scheduler_service.manager.host_manager
        host_manager.aggs_by_id.clear()
        host_manager.host_aggregates_map.clear()
        aggregate_view._VIEW_CHECKED_PID = None
        return host_manager

    def test_first_request_repairs_the_view(self):
        host_manager = self._forget_aggregates()
        flavor = self._create_pmem_flavor('cap', 32,
                                          extra_specs=CAPACITY_SPECS)
        server = self._boot(flavor)
        self.assertEqual(base.MM_HOST, self._host_of(server))
        self.assertIn('differ from the database', self.pmem_log.output)
        # Nova's own copy is repaired, for every later request.
        mm_agg = self.aggregates[base.MEMORY_MODE_AGGREGATE.name]
        self.assertEqual({mm_agg},
                         host_manager.host_aggregates_map[base.MM_HOST])
        self.assertEqual(
            dict(base.MEMORY_MODE_AGGREGATE.metadata),
            {k: v for k, v in host_manager.aggs_by_id[mm_agg].metadata.items()
             if k.startswith('pmem_')})
        # Checked once per process: a second boot does not look again.
        server = self._boot(flavor)
        self.assertEqual(base.MM_HOST, self._host_of(server))
        self.assertEqual(
            1, self.pmem_log.output.count('differ from the database'))

    def test_deleted_aggregate_is_dropped(self):
        host_manager = self.scheduler_service.manager.host_manager
        # The copy still has an aggregate the database no longer has: a
        # memory_mode label on the DRAM host.
        stale = self.admin_api.post_aggregate(
            {'aggregate': {'name': 'gone'}})
        self.admin_api.post_aggregate_action(stale['id'], {
            'set_metadata': {'metadata': {'pmem_mode': 'memory_mode'}}})
        self.admin_api.add_host_to_aggregate(stale['id'], base.DRAM_HOST)
        kept = host_manager.aggs_by_id[stale['id']]
        self.admin_api.remove_host_from_aggregate(stale['id'],
                                                  base.DRAM_HOST)
        self.admin_api.delete_aggregate(stale['id'])
        host_manager.aggs_by_id[stale['id']] = kept
        host_manager.host_aggregates_map[base.DRAM_HOST].add(stale['id'])
        aggregate_view._VIEW_CHECKED_PID = None

        flavor = self._create_pmem_flavor(
            'dram-only', 8, extra_specs={'pmem:modes': 'dram'})
        server = self._boot(flavor)
        self.assertEqual(base.DRAM_HOST, self._host_of(server))
        self.assertNotIn(stale['id'], host_manager.aggs_by_id)
        self.assertNotIn(stale['id'],
                         host_manager.host_aggregates_map[base.DRAM_HOST])

    def test_without_the_check_nova_misroutes(self):
        # What Nova does on its own, and why the check exists: the
        # Memory-Mode host looks like a DRAM host.
        self.flags(check_aggregate_view=False, group='pmem')
        self._forget_aggregates()
        flavor = self._create_pmem_flavor('cap', 32,
                                          extra_specs=CAPACITY_SPECS)
        server = self._boot(flavor, expected_state='ERROR')
        self._assert_no_valid_host(server)
        dram_only = self._create_pmem_flavor(
            'dram-only', 8, extra_specs={'pmem:modes': 'dram'})
        hosts = {self._host_of(self._boot(dram_only)) for _ in range(3)}
        self.assertIn(base.MM_HOST, hosts)
