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
"""The cloud as the scheduler sees it: what every check of the doctor reads.

Built once from a snapshot (:func:`view`) with the core's own code: host
profiles from aggregate metadata, flavor requests with nova.conf's
defaults, and the hot RAM of placed instances as PmemCacheFilter's ledger
counts it.
"""

import dataclasses

from nova_pmem_filters.core import cache
from nova_pmem_filters.core import extra_specs
from nova_pmem_filters.core import kinds
from nova_pmem_filters.core import placement
from nova_pmem_filters.core import profile
from nova_pmem_filters.doctor import novaconf


@dataclasses.dataclass(frozen=True)
class View:
    """Derived values every check reads, computed once."""

    config: novaconf.NovaConfig
    # host -> HostProfile from its aggregates, as the filters read it.
    profiles: dict
    # host -> aggregates holding it.
    aggregates_of: dict
    # flavor name -> (PmemRequest or None, error or None).
    requests: dict
    # host -> discovered host (core.hostfile.DiscoveredHost).
    discovered: dict


def aggregates_by_host(hosts, aggregates):
    """{host: [aggregates holding it]}, for ``hosts`` and every host named."""
    aggregates_of = {host: [] for host in hosts}
    for agg in aggregates:
        for host in agg.hosts:
            aggregates_of.setdefault(host, []).append(agg)
    return aggregates_of


def host_profiles(hosts, aggregates, default_mode):
    """{host: HostProfile}, as the scheduler reads each host's aggregates."""
    return {host: profile.from_metadata([a.metadata for a in aggs],
                                        default_mode=default_mode)
            for host, aggs in aggregates_by_host(hosts, aggregates).items()}


def view(snap):
    config = snap.config or novaconf.defaults()
    hosts = [c.host for c in snap.computes]
    aggregates_of = aggregates_by_host(hosts, snap.aggregates)
    profiles = host_profiles(hosts, snap.aggregates,
                             config.default_host_mode)
    requests = {f.name: extra_specs.request_of(f.extra_specs, config.defaults)
                for f in snap.flavors}
    discovered = {}
    if snap.fleet is not None:
        nodes = {n: c.host for c in snap.computes for n in c.nodes}
        for prof in snap.fleet:
            host = nodes.get(prof.hostname, prof.hostname)
            discovered[host] = prof
    return View(config=config, profiles=profiles,
                aggregates_of=aggregates_of, requests=requests,
                discovered=discovered)


def hot_mb(server, config):
    """Hot MB of a placed instance, as PmemCacheFilter's ledger counts it."""
    request, _error = extra_specs.request_of(server.extra_specs,
                                             config.defaults)
    return extra_specs.counted_hot_mb(server.ram_mb, request)


def hot_ram(servers, config):
    """The HotRam of ``servers`` (one host's), as the ledger sums it.

    A server's hot MB charges its host NUMA cells in proportion to their
    memory when its topology is known and it has cells; else it floats.

    :returns: (cache.HotRam, [(server, hot MB, {cell: hot MB} or None)]).
    """
    used = cache.HotRam(0.0)
    placed = []
    for server in servers:
        hot = hot_mb(server, config)
        cells = cache.bound_cells(server.numa_cells, hot, server.ram_mb)
        used.add(hot, cells, server.ram_mb, cache.bound_cells(
            server.numa_cells, server.ram_mb, server.ram_mb))
        placed.append((server, hot, dict(cells) if cells else None))
    return used, placed


def tiered_hosts(view):
    return sorted(h for h, p in view.profiles.items()
                  if p.mode in kinds.TIERED)


def tiered_flavors(snap, view):
    """(flavor, request) of valid flavors that may land in Memory Mode."""
    return [(f, view.requests[f.name][0]) for f in snap.flavors
            if view.requests[f.name][0] is not None
            and kinds.TIERED & view.requests[f.name][0].modes]


def unaccounted(snap, view):
    """Memory-Mode-eligible flavors that do not request near memory."""
    return [f for f, _r in tiered_flavors(snap, view)
            if placement.requested_near_memory(f.extra_specs) is None]
