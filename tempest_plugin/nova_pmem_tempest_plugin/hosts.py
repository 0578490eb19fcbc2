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
"""The cloud as the tests see it: each compute host's kind and load.

Read through the admin APIs and judged by the documented contract
(:mod:`nova_pmem_tempest_plugin.contract`, written from the project's
docs, not imported from it): a host's kind and cache from its aggregates'
metadata, the hot RAM of the instances on it, and whether a flavor fits
its DRAM cache. So the tests expect what the docs promise
PmemModeFilter and PmemCacheFilter decide.

Nothing here is a test; the functions take Tempest's service clients.
"""

import dataclasses
import math

from nova_pmem_tempest_plugin import contract

# More digits than this in a pmem:hot_ratio make no test sharper.
MAX_RATIO_DIGITS = 8


def compute_hosts(services_client):
    """The hosts whose nova-compute is up and enabled, sorted."""
    services = services_client.list_services(
        binary='nova-compute')['services']
    return sorted(s['host'] for s in services
                  if s['state'] == 'up' and s['status'] == 'enabled')


def host_profiles(aggregates_client, hosts, default_mode):
    """{host: contract.Host}, as the scheduler reads each host's aggregates.

    :param default_mode: ``[pmem] default_host_mode`` of the scheduler,
        the kind of a host that is in no aggregate with ``pmem_mode``.
    """
    aggregates = aggregates_client.list_aggregates()['aggregates']
    metadata = {host: [] for host in hosts}
    for agg in aggregates:
        for host in agg.get('hosts') or ():
            if host in metadata:
                metadata[host].append(agg.get('metadata') or {})
    return {host: contract.host(metas, default_mode=default_mode)
            for host, metas in metadata.items()}


def describe_kinds(modes):
    return ' or '.join(sorted(modes, key=contract.kind_order))


def split_hosts(profiles, request):
    """(hosts the flavor may land on, hosts it must not), known kinds only.

    Hosts whose profile is unknown (aggregates that disagree or do not
    parse) are in neither list: the scheduler refuses them for any flavor
    that constrains modes, which a test of kinds does not show.
    """
    allowed, refused = [], []
    for host in sorted(profiles):
        prof = profiles[host]
        if not prof.known:
            continue
        (allowed if request.allows(prof.mode) else refused).append(host)
    return allowed, refused


def hot_ram(servers, default_hot_ratio):
    """Hot MB of the servers on one host, as PmemCacheFilter counts it.

    Every instance floats (the API does not say which host NUMA cells an
    instance is bound to, and with only floating instances the filter
    checks the host-wide bound); a flavor whose ``pmem:`` specs are
    invalid counts all its RAM as hot (doc/source/scheduling.rst,
    PmemCacheFilter).

    :param servers: server details at microversion 2.47 or later (the
        flavor embedded with its extra specs).
    :param default_hot_ratio: ``[pmem] default_hot_ratio`` of the
        scheduler.
    """
    return sum((contract.hot_mb(server['flavor']['ram'],
                                server['flavor'].get('extra_specs'),
                                default_hot_ratio)
                for server in servers), contract.exact(0))


def free_memory_mb(hypervisor_client, providers_client, host):
    """(MB of RAM Placement can still allocate on ``host``, largest unit).

    From the host's resource provider (the hypervisor's id at microversion
    2.53 and later): ``(total - reserved) x allocation_ratio - used`` of
    MEMORY_MB, and its ``max_unit``.

    :returns: ``((free MB, max_unit MB), None)`` or ``(None, why not)``.
    """
    nodes = [h for h in hypervisor_client.list_hypervisors(
        detail=True)['hypervisors']
        if (h.get('service') or {}).get('host') == host]
    if len(nodes) != 1:
        return None, ('host %s has %d compute nodes; the test needs exactly '
                      'one' % (host, len(nodes)))
    provider = nodes[0]['id']
    inventory = providers_client.list_resource_provider_inventories(
        provider)['inventories'].get('MEMORY_MB')
    if not inventory:
        return None, ('resource provider %s of host %s has no MEMORY_MB '
                      'inventory' % (provider, host))
    used = providers_client.list_resource_provider_usages(
        provider)['usages'].get('MEMORY_MB', 0)
    free = ((inventory['total'] - inventory['reserved'])
            * inventory['allocation_ratio'] - used)
    return (free, inventory['max_unit']), None


@dataclasses.dataclass(frozen=True)
class CacheProbe:
    """Three flavors that show a Memory-Mode host's DRAM-cache bound.

    ``over`` and ``fit`` have the same RAM, vCPUs and disk, so Placement
    and every other filter treat them alike; only their
    ``pmem:hot_ratio`` differs: ``over``'s hot RAM is more than the host's
    free cache, ``fit``'s is not. Once ``fit`` runs there, ``small`` (all
    hot) no longer fits, though it fitted before: the filter counts what
    already runs on the host.
    """

    host: str
    ram_mb: int
    over_ratio: str
    fit_ratio: str
    small_ram_mb: int
    capacity_mb: float
    used_mb: float

    @property
    def remaining_mb(self):
        return self.capacity_mb - self.used_mb

    def describe(self):
        return ('host %s: DRAM cache %.0f MB, hot RAM already there %.0f MB,'
                ' free %.0f MB; flavors of %d MB RAM with pmem:hot_ratio %s '
                '(over) and %s (fits), then %d MB all hot'
                % (self.host, self.capacity_mb, self.used_mb,
                   self.remaining_mb, self.ram_mb, self.over_ratio,
                   self.fit_ratio, self.small_ram_mb))


def _fits(prof, overcommit, used, ratio_text, memory_mb):
    """(admitted, hot MB) of a Memory-Mode flavor of ``ratio_text``."""
    hot = contract.hot_mb(memory_mb, {contract.HOT_RATIO_KEY: ratio_text})
    return contract.admits(prof, overcommit, used, hot), hot


def _fit_ratio(prof, overcommit, used, ram_mb, remaining, small_ram_mb):
    """The hot ratio of the flavor that fits: (text, hot MB).

    The largest ratio of few digits whose hot RAM fits the free cache and
    leaves less of it than ``small_ram_mb``; (None, None) if there is none.
    """
    for digits in range(2, MAX_RATIO_DIGITS + 1):
        numerator = math.floor(remaining / ram_mb * 10 ** digits)
        if numerator <= 0:
            continue
        text = contract.ratio_text(numerator, digits)
        passes, hot = _fits(prof, overcommit, used, text, ram_mb)
        if not passes:
            continue
        if not _fits(prof, overcommit, used + hot, '1', small_ram_mb)[0]:
            return text, hot
    return None, None


def plan_cache_probe(host, prof, overcommit, used, memory, small_ram_mb):
    """The :class:`CacheProbe` of a Memory-Mode host, or why there is none.

    :param prof: the host's :class:`contract.Host` (``memory_mode``).
    :param overcommit: ``[pmem] cache_overcommit_ratio``.
    :param used: hot MB of the servers on the host (:func:`hot_ram`).
    :param memory: ``(free MB, max_unit MB)`` (:func:`free_memory_mb`).
    :param small_ram_mb: RAM of the third flavor (all of it hot).
    :returns: ``(CacheProbe, None)`` or ``(None, why not)``.
    """
    used = contract.exact(used)
    capacity = contract.cache_bound_mb(prof, overcommit)
    remaining = capacity - used
    free, max_unit = memory
    limit = int(min(free, max_unit))
    if remaining < small_ram_mb:
        return None, ('host %s has %.0f MB of its DRAM cache free (%.0f MB '
                      'x %s, %.0f MB hot already there), less than the '
                      '%d MB the test needs'
                      % (host, remaining, capacity / overcommit if overcommit
                         else 0.0, overcommit, used, small_ram_mb))
    # Over the free cache by a quarter, at least 1 GB, within the RAM and
    # leaving RAM for the small one: it must be refused for the cache only.
    ram_mb = min(limit - small_ram_mb,
                 int(remaining) + max(int(remaining / 4), 1024))
    if ram_mb <= remaining:
        return None, ('host %s: Placement can allocate %d MB of RAM there, '
                      'not more than the %.0f MB of DRAM cache free and %d '
                      'MB: RAM runs out before the cache, so no flavor '
                      'overruns the cache that the host\'s RAM could take'
                      % (host, limit, remaining, small_ram_mb))
    over_ratio = '1.0'
    if _fits(prof, overcommit, used, over_ratio, ram_mb)[0]:
        return None, ('host %s: the bound admits %d MB all hot next to '
                      '%.0f MB of %.0f MB' % (host, ram_mb, used, capacity))
    fit_ratio, _hot = _fit_ratio(prof, overcommit, used, ram_mb, remaining,
                                 small_ram_mb)
    if fit_ratio is None:
        return None, ('host %s: no pmem:hot_ratio of %d digits fits %d MB '
                      'of RAM into %.0f MB of free cache and leaves less '
                      'than %d MB' % (host, MAX_RATIO_DIGITS, ram_mb,
                                      remaining, small_ram_mb))
    return CacheProbe(host=host, ram_mb=ram_mb, over_ratio=over_ratio,
                      fit_ratio=fit_ratio, small_ram_mb=small_ram_mb,
                      capacity_mb=float(capacity), used_mb=float(used)), None
