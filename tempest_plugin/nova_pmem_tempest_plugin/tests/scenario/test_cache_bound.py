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
"""A Memory-Mode host refuses what would overrun its DRAM cache.

On a Memory-Mode host the hot RAM of its instances (RAM x
``pmem:hot_ratio``) must stay within ``pmem_dram_cache_gb`` x ``[pmem]
cache_overcommit_ratio`` (PmemCacheFilter). The test reads the host's
cache from its aggregates and the hot RAM already there from the servers
on it, then sizes three flavors with the documented rule
(:func:`nova_pmem_tempest_plugin.hosts.plan_cache_probe`, the plugin's
own arithmetic of the docs) and boots them on
that host by name (2.74 ``host``, through the filters):

1. RAM R, all of it hot, more than the free cache: refused (NoValidHost);
2. the same RAM R with a hot ratio that just fits: ACTIVE on the host.
   Only ``pmem:hot_ratio`` differs from 1, so Placement and every other
   filter treat the two alike: the refusal is the cache bound's;
3. a small flavor, all hot, that fitted before 2 ran: now refused, since
   the filter counts the instances already on the host.
"""

from tempest import config
from tempest.lib import decorators
from tempest.lib import exceptions as lib_exc

from nova_pmem_tempest_plugin import contract
from nova_pmem_tempest_plugin import hosts
from nova_pmem_tempest_plugin.tests import base

CONF = config.CONF


class PmemCacheBoundTest(base.BasePlacementTest):
    """PmemCacheFilter on a Memory-Mode host, named in the request."""

    def candidates(self):
        mm_hosts = self.hosts_of(contract.MEMORY_MODE)
        wanted = CONF.pmem_filters.memory_mode_host
        if wanted:
            if wanted not in mm_hosts:
                raise lib_exc.InvalidConfiguration(
                    '[pmem_filters] memory_mode_host = %s is not an enabled '
                    'nova-compute host of kind memory_mode (those are: %s)'
                    % (wanted, ', '.join(mm_hosts) or 'none'))
            return [wanted]
        if not mm_hosts:
            raise self.skipException(
                'no compute host of kind memory_mode (no enabled '
                'nova-compute host is in an aggregate with pmem_mode='
                'memory_mode)')
        return mm_hosts

    def probe(self, host):
        """The host's CacheProbe from what the APIs say now, or why not."""
        servers = self.admin_servers_client.list_servers(
            detail=True, all_tenants=True, host=host)['servers']
        used = hosts.hot_ram(servers, self.default_hot_ratio)
        memory, why = hosts.free_memory_mb(
            self.admin_hypervisor_client, self.admin_providers_client, host)
        if memory is None:
            return None, why
        return hosts.plan_cache_probe(
            host, self.profiles[host],
            CONF.pmem_filters.cache_overcommit_ratio, used, memory,
            CONF.pmem_filters.flavor_ram_mb)

    def pick(self):
        """The probe on the host with the most free cache."""
        probes, reasons = [], []
        for host in self.candidates():
            found, why = self.probe(host)
            (probes.append(found) if found else reasons.append(why))
        if not probes:
            raise self.skipException('no Memory-Mode host can show its '
                                     'cache bound: %s' % '; '.join(reasons))
        return max(probes, key=lambda p: (p.remaining_mb, p.host))

    def cache_flavor(self, label, ram_mb, ratio):
        return self.create_flavor(label, ram_mb, {
            contract.MODES_KEY: contract.MEMORY_MODE,
            contract.HOT_RATIO_KEY: ratio})

    @decorators.idempotent_id('0fa16c26-5317-4614-9c3d-113f341a88c5')
    def test_memory_mode_host_refuses_cache_overrun(self):
        probe = self.pick()
        host = probe.host
        over = self.cache_flavor('over', probe.ram_mb, probe.over_ratio)
        fit = self.cache_flavor('fit', probe.ram_mb, probe.fit_ratio)
        small = self.cache_flavor('small', probe.small_ram_mb, '1.0')

        self.assert_no_valid_host(
            self.boot(over, host),
            'its %d MB of hot RAM overrun the free DRAM cache (%s)'
            % (probe.ram_mb, probe.describe()))
        self.assert_active(self.boot(fit, host), on=[host])
        self.assert_no_valid_host(
            self.boot(small, host),
            'the server of flavor fit already fills the DRAM cache (%s)'
            % probe.describe())
