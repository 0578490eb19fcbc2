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
"""Placement alone keeps the hot RAM of Memory-Mode hosts within their DRAM.

Two small Memory-Mode hosts report their DRAM as ``CUSTOM_NEAR_MEMORY_MB``
through Nova's provider config, as the discovery tool writes it, and the
flavor requests its hot MB of it with the extra spec the planner emits. With
PmemCacheFilter not enabled, Placement's allocation is the only check::

    mm-a   8 vCPU  64 GB PMem visible   8 GB DRAM   CUSTOM_NEAR_MEMORY_MB 8192
    mm-b   8 vCPU  64 GB PMem visible  12 GB DRAM   CUSTOM_NEAR_MEMORY_MB 12288

The flavor has 8 GB of RAM, 30% hot: 2457.6 hot MB, requested as 2458. RAM
would admit 8 per host; near memory admits 3 on mm-a and 4 on mm-b.
"""

import os

import fixtures
import yaml

from nova_pmem_filters.core.formats import providerconfig
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import placement
from nova_pmem_filters.core.rules import profile
from tests.functional import base

RC = placement.NEAR_MEMORY_RC

MM_A = base.Host('mm-a', vcpus=8, memory_gb=64, local_gb=200)
MM_B = base.Host('mm-b', vcpus=8, memory_gb=64, local_gb=200)
DRAM_GB = {MM_A.name: 8, MM_B.name: 12}

FLAVOR_GB = 8
FLAVOR_VCPUS = 1
HOT_RATIO = 0.3


def _aggregate(host, mode=kinds.MEMORY_MODE):
    return base.Aggregate('pmem-mm-%s' % host.name, [host.name], {
        profile.MODE_KEY: mode,
        profile.DRAM_CACHE_KEY: str(DRAM_GB[host.name])})


class PlacementAccountingTest(base.PmemTestBase):
    """Placement, not PmemCacheFilter, bounds the hot RAM."""

    HOSTS = (MM_A, MM_B)
    AGGREGATES = (_aggregate(MM_A), _aggregate(MM_B))
    CACHE_FILTER = False
    # The hosts' kind: the near memory they report to Placement.
    MODE = kinds.MEMORY_MODE

    def setUp(self):
        # Both are read while PmemTestBase.setUp() starts the scheduler and
        # the computes.
        filters = [f for f in base.ENABLED_FILTERS
                   if self.CACHE_FILTER or f != 'PmemCacheFilter']
        self.useFixture(fixtures.MonkeyPatch(
            'tests.functional.base.ENABLED_FILTERS', filters))
        conf_dir = self.useFixture(fixtures.TempDir()).path
        self.inventories = {
            host: placement.near_memory_inventory(self.MODE, gb)
            for host, gb in DRAM_GB.items()}
        for host, inventory in self.inventories.items():
            with open(os.path.join(conf_dir, '%s.yaml' % host), 'w') as f:
                yaml.safe_dump(providerconfig.near_memory_provider_config(
                    inventory, name=host), f)
        self.flags(provider_config_location=conf_dir, group='compute')
        super(PlacementAccountingTest, self).setUp()

        self.request_mb = placement.instance_near_memory_mb(
            FLAVOR_GB * base.GB, HOT_RATIO)
        specs = {'pmem:modes': kinds.MEMORY_MODE,
                 'pmem:hot_ratio': str(HOT_RATIO)}
        specs.update(placement.near_memory_spec(FLAVOR_GB * base.GB,
                                                HOT_RATIO))
        self.flavor = self._create_pmem_flavor(
            'redis-accounted', memory_gb=FLAVOR_GB, vcpus=FLAVOR_VCPUS,
            extra_specs=specs)

    def _inventory(self, host):
        rp_uuid = self._get_provider_uuid_by_host(host)
        return self._get_provider_inventory(rp_uuid)

    def _near_memory_used(self, host):
        rp_uuid = self._get_provider_uuid_by_host(host)
        return self._get_provider_usages(rp_uuid).get(RC, 0)

    def test_placement_admits_the_accounted_number(self):
        self.assertEqual(2458, self.request_mb)
        # The provider config reached Placement as written.
        accounted = {}
        for host in DRAM_GB:
            inventory = self._inventory(host)[RC]
            for field, value in self.inventories[host].items():
                self.assertEqual(value, inventory[field], (host, field))
            accounted[host] = self._capacity(host, RC, self.request_mb)
            ram_bound = min(
                self._capacity(host, 'MEMORY_MB', FLAVOR_GB * base.GB),
                self._capacity(host, 'VCPU', FLAVOR_VCPUS))
            # Near memory, not RAM or vCPUs, is what binds.
            self.assertLess(accounted[host], ram_bound, host)
        expected = sum(accounted.values())
        self.assertEqual({'mm-a': 3, 'mm-b': 4}, accounted)

        servers = []
        while len(servers) <= expected:
            server = self._boot(self.flavor, expected_state=None)
            if server['status'] == 'ERROR':
                self._assert_no_valid_host(server)
                break
            servers.append(server)
        self.assertEqual(expected, len(servers))
        self.assertIn('Got no allocation candidates from the Placement API',
                      self.stdlog.logger.output)
        self._assert_cache_filter_log()

        by_host = {host: [s for s in servers if self._host_of(s) == host]
                   for host in DRAM_GB}
        for host, on_host in by_host.items():
            self.assertEqual(accounted[host], len(on_host), host)
            # Each server holds its hot MB of its host's near memory.
            self.assertEqual(len(on_host) * self.request_mb,
                             self._near_memory_used(host), host)
            for server in on_host:
                allocations = self._get_allocations_by_server_uuid(
                    server['id'])
                rp_uuid = self._get_provider_uuid_by_host(host)
                self.assertEqual(
                    self.request_mb,
                    allocations[rp_uuid]['resources'][RC])

        # Deleting a server gives its near memory back to Placement.
        gone = by_host['mm-b'][0]
        self._delete(gone)
        self.assertEqual((accounted['mm-b'] - 1) * self.request_mb,
                         self._near_memory_used('mm-b'))
        server = self._boot(self.flavor)
        self.assertEqual('mm-b', self._host_of(server))
        self._assert_no_valid_host(self._boot(self.flavor, 'ERROR'))

    def _assert_cache_filter_log(self):
        self.assertNotIn('PmemCacheFilter', self.stdlog.logger.output)


class PlacementAccountingWithFilterTest(PlacementAccountingTest):
    """PmemCacheFilter enabled too: it leaves the flavor to Placement.

    On mm-b the filter alone would admit 5 (12288 / 2457.6 is 5 exactly);
    Placement admits 4 whole requests of 2458 MB, and the filter does not
    count them a second time.
    """

    CACHE_FILTER = True

    def _assert_cache_filter_log(self):
        self.assertIn("passes pmem cache check: Placement accounts this "
                      "flavor's hot RAM (resources:CUSTOM_NEAR_MEMORY_MB="
                      "2458)", self.pmem_log.output)
        self.assertNotIn('fails pmem cache check', self.pmem_log.output)


class CxlKmemPlacementAccountingTest(PlacementAccountingWithFilterTest):
    """The same accounting on cxl_kmem hosts: their DRAM is near memory.

    The hosts report their DRAM as CUSTOM_NEAR_MEMORY_MB with the cache
    overcommit ratio, as Memory-Mode hosts do, the Memory-Mode flavor lands
    on them, and PmemCacheFilter leaves the bound to Placement.
    """

    AGGREGATES = (_aggregate(MM_A, kinds.CXL_KMEM),
                  _aggregate(MM_B, kinds.CXL_KMEM))
    MODE = kinds.CXL_KMEM
