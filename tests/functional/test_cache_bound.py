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
"""PmemCacheFilter keeps a Memory-Mode host's hot RAM within its DRAM cache.

The flavor is the field notes' Redis VM: 4 vCPU and 32 GB, of which 24 GB
are really used, so ``pmem:hot_ratio=0.75``. On mm1 (512 GB of PMem behind a
192 GB DRAM cache) RAM alone would admit 15 of them; the cache admits 8.
"""

import math

import fixtures

from nova import utils

from nova_pmem_filters.scheduler import ledger
from tests.functional import base

FLAVOR_GB = 32
FLAVOR_VCPUS = 4
HOT_RATIO = 0.75


class CacheBoundTest(base.PmemTestBase):
    """The bound, with computes pushing their instances to the scheduler."""

    HOSTS = (base.DRAM, base.MEMORY_MODE)
    AGGREGATES = (base.DRAM_AGGREGATE, base.MEMORY_MODE_AGGREGATE)

    def setUp(self):
        super(CacheBoundTest, self).setUp()
        self.flavor = self._create_pmem_flavor(
            'redis', memory_gb=FLAVOR_GB, vcpus=FLAVOR_VCPUS,
            extra_specs={'pmem:modes': 'memory_mode',
                         'pmem:hot_ratio': str(HOT_RATIO)})
        self.ram_bound = min(
            self._capacity(base.MM_HOST, 'MEMORY_MB', FLAVOR_GB * base.GB),
            self._capacity(base.MM_HOST, 'VCPU', FLAVOR_VCPUS))

    def _cache_bound(self, overcommit_ratio):
        return math.floor(base.MM_CACHE_GB * base.GB * overcommit_ratio
                          / (FLAVOR_GB * base.GB * HOT_RATIO))

    def _boot_until_no_valid_host(self):
        """Boot the flavor until the scheduler refuses; list the servers.

        Each boot is one scheduling request, which may read the flavors of
        the instances it does not know yet in one query, at most.
        """
        servers = []
        while len(servers) <= self.ram_bound:
            queries = ledger.LEDGER.queries
            server = self._boot(self.flavor, expected_state=None)
            self.assertLessEqual(ledger.LEDGER.queries - queries, 1)
            if server['status'] == 'ERROR':
                self._assert_no_valid_host(server)
                return servers
            self.assertEqual(base.MM_HOST, self._host_of(server))
            servers.append(server)
        self.fail('%d servers fit on %s: the DRAM cache did not bind'
                  % (len(servers), base.MM_HOST))

    def test_cache_not_ram_bounds_memory_mode_host(self):
        expected = self._cache_bound(1.0)
        self.assertEqual(8, expected)
        self.assertLess(expected, self.ram_bound)

        servers = self._boot_until_no_valid_host()
        self.assertEqual(expected, len(servers))
        self.assertIn('Filter PmemCacheFilter returned 0 hosts',
                      self.stdlog.logger.output)
        hot_mb = FLAVOR_GB * base.GB * HOT_RATIO
        self.assertRegex(
            self.pmem_log.output,
            r'\(mm1, mm1\) .* fails pmem cache check: hot RAM %d MB \+ %d MB '
            r'requested exceeds the DRAM-cache bound of %d MB \(192 GB x '
            r'cache_overcommit_ratio 1.0\)'
            % (expected * hot_mb, hot_mb, base.MM_CACHE_GB * base.GB))

        # Deleting a server gives its hot RAM back.
        self._delete(servers.pop())
        self.assertEqual(1, len(self._boot_until_no_valid_host()))

        # A restarted scheduler starts with an empty ledger: its first
        # request reads the flavors of the 8 instances on mm1 (at most one
        # query) and still refuses a ninth.
        fresh = ledger.HotRamLedger()
        self.useFixture(fixtures.MonkeyPatch(
            'nova_pmem_filters.scheduler.ledger.LEDGER', fresh))
        self._assert_no_valid_host(self._boot(self.flavor, 'ERROR'))
        self._assert_ledger_reads_after_restart(fresh.queries)

        # Accept some cache misses: 1.5 x the cache.
        self.flags(cache_overcommit_ratio=1.5, group='pmem')
        expected = self._cache_bound(1.5)
        self.assertEqual(12, expected)
        self.assertLess(expected, self.ram_bound)
        self.assertEqual(expected - self._cache_bound(1.0),
                         len(self._boot_until_no_valid_host()))

    def _assert_ledger_reads_after_restart(self, queries):
        # Computes push instances with their flavors; only those the
        # scheduler loaded itself from the database (bare Instance objects,
        # here the first one on the host) need reading.
        self.assertLessEqual(queries, 1)


class CacheBoundUntrackedTest(CacheBoundTest):
    """The bound, with ``track_instance_changes`` off.

    The scheduler then knows the instances of a host only by UUID, and
    PmemCacheFilter reads their flavors from the database.
    """

    TRACK_INSTANCE_CHANGES = False

    def _assert_ledger_reads_after_restart(self, queries):
        # All 8 flavors in one query.
        self.assertEqual(1, queries)


class MultiCreateTest(base.PmemTestBase):
    """The instances of one request count against the cache as they land.

    Nova schedules the instances of a multi-create request one after the
    other, without adding them to the host's instances in between.
    """

    HOSTS = (base.MEMORY_MODE,)
    AGGREGATES = (base.MEMORY_MODE_AGGREGATE,)

    def _create(self, flavor, count, group=None):
        body = self._build_server(flavor_id=flavor, image_uuid=base.IMAGE,
                                  networks='none')
        body.update(min_count=count, max_count=count,
                    return_reservation_id=True)
        request = {'server': body}
        if group:
            request['os:scheduler_hints'] = {'group': group}
        reservation = self.api.post_server(request)['reservation_id']
        servers = [self._wait_for_state_change(server, ('ACTIVE', 'ERROR'))
                   for server in self.api.get_servers(
                       search_opts={'reservation_id': reservation})]
        self._builds += len([s for s in servers if s['status'] == 'ACTIVE'])
        self.notifier.wait_for_versioned_notifications(
            'instance.create.end', n_events=self._builds)
        return servers

    def test_multi_create_stops_at_the_cache_bound(self):
        # 64 GB with 48 GB hot: 4 fit the 192 GB cache, 7 the RAM.
        flavor = self._create_pmem_flavor(
            'big-redis', memory_gb=64, vcpus=8,
            extra_specs={'pmem:modes': 'memory_mode',
                         'pmem:hot_ratio': '0.75'})
        servers = self._create(flavor, 5)
        self.assertEqual(5, len(servers))
        for server in servers:
            self._assert_no_valid_host(server)
        self.assertIn('Filter PmemCacheFilter returned 0 hosts',
                      self.stdlog.logger.output)

        # Through a server group too: Nova then adds a stub of each placed
        # instance to the host's instances.
        group = self.api.post_server_groups(
            {'name': 'redis', 'policy': 'affinity'})
        servers = self._create(flavor, 4, group=group['id'])
        self.assertEqual([('ACTIVE', base.MM_HOST)] * 4,
                         [(s['status'], self._host_of(s)) for s in servers])
        self._assert_no_valid_host(self._boot(flavor, 'ERROR'))


class LegacyFlavorTest(base.PmemTestBase):
    """An instance whose flavor has specs the API now refuses.

    Such a flavor was stored before microversion 2.86 and the instance forced
    onto its host by an admin. PmemCacheFilter counts all its RAM as hot.
    """

    HOSTS = (base.MEMORY_MODE,)
    AGGREGATES = (base.MEMORY_MODE_AGGREGATE,)
    TRACK_INSTANCE_CHANGES = False

    def test_invalid_specs_count_all_ram_as_hot(self):
        legacy = self._create_pmem_flavor('legacy', memory_gb=64)
        with utils.temporary_mutation(self.admin_api, microversion='2.85'):
            self.admin_api.post_extra_spec(
                legacy, {'extra_specs': {'pmem:hot_ratio': '50%'}})
        # nova:<host> forces the host: no filter runs.
        server = self._boot(legacy, az='nova:' + base.MM_HOST)
        self.assertEqual(base.MM_HOST, self._host_of(server))

        flavor = self._create_pmem_flavor(
            'redis', memory_gb=FLAVOR_GB, vcpus=FLAVOR_VCPUS,
            extra_specs={'pmem:modes': 'memory_mode',
                         'pmem:hot_ratio': str(HOT_RATIO)})
        # (192 GB - 64 GB) / 24 GB: 5, where the default hot ratio would
        # have left room for 6.
        for _ in range(5):
            self._boot(flavor)
        self._assert_no_valid_host(self._boot(flavor, 'ERROR'))
        self.assertIn(
            "WARNING [nova_pmem_filters.scheduler.ledger] Instance %s has a "
            "flavor "
            "with invalid pmem extra specs (extra spec 'pmem:hot_ratio' has "
            "value '50%%', expected a decimal number greater than 0 and at "
            "most 1); counting all its RAM as hot." % server['id'],
            self.pmem_log.output.splitlines())
