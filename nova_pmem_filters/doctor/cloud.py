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
counts it. :func:`rebalance_hosts` translates the snapshot and the latest
observation of each host into the input of the core's rebalancing plan.
"""

import dataclasses

from nova_pmem_filters.conf import schedulerconf
from nova_pmem_filters.core.plans import rebalance
from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import nearmem
from nova_pmem_filters.core.rules import placement
from nova_pmem_filters.core.rules import profile

# Placement's resource classes of a guest's RAM and vCPUs.
MEMORY_RC = 'MEMORY_MB'
VCPU_RC = 'VCPU'


@dataclasses.dataclass(frozen=True)
class View:
    """Derived values every check reads, computed once."""

    config: schedulerconf.NovaConfig
    # host -> HostProfile from its aggregates, as the filters read it.
    profiles: dict
    # host -> aggregates holding it.
    aggregates_of: dict
    # flavor name -> (PmemRequest or None, error or None).
    requests: dict
    # host -> discovered host (core.formats.discoveredhost.DiscoveredHost).
    discovered: dict


def aggregates_by_host(hosts, aggregates):
    """{host: [aggregates holding it]}, for ``hosts`` and every host named."""
    aggregates_of = {host: [] for host in hosts}
    for agg in aggregates:
        for host in agg.hosts:
            aggregates_of.setdefault(host, []).append(agg)
    return aggregates_of


def host_profiles(hosts, aggregates, default_mode):
    """{host: HostProfile} of ``hosts`` and every host an aggregate names."""
    return profile.host_profiles(
        aggregates_by_host(hosts, aggregates),
        ((a.hosts, a.metadata) for a in aggregates), default_mode)


def view(snap):
    config = snap.config or schedulerconf.defaults()
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

    :returns: (nearmem.HotRam, [(server, hot MB, {cell: hot MB} or None)]).
    """
    used = nearmem.HotRam(0.0)
    placed = []
    for server in servers:
        hot = hot_mb(server, config)
        cells = nearmem.bound_cells(server.numa_cells, hot, server.ram_mb)
        used.add(hot, cells, server.ram_mb, nearmem.bound_cells(
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


def host_cells(host, label, view):
    """Ids of the host's NUMA cells with CPUs, or None if not known.

    From its discovered profile, else from its aggregates' per-cell sizes;
    Nova's APIs do not tell a host's cells.
    """
    prof = view.discovered.get(host)
    if prof is not None and prof.cell_ids:
        return list(prof.cell_ids)
    if label.cell_cache_gb:
        return [cell for cell, _gb in label.cell_cache_gb]
    return None


def latest_observations(snap):
    """{compute host: its latest observation document}: the host now.

    A document names the host as the observer saw it; a node name is read
    as the host that runs the node, as for discovered profiles.
    """
    nodes = {n: c.host for c in snap.computes for n in c.nodes}
    latest = {}
    for doc in snap.observations or ():
        host = nodes.get(doc.hostname, doc.hostname)
        seen = latest.get(host)
        if seen is None or doc.started_time >= seen.started_time:
            latest[host] = doc
    return latest


def _free(provider, resource_class):
    """What Placement still offers of a resource class of a provider."""
    inventory = provider.inventories.get(resource_class)
    if inventory is None:
        return 0.0
    return (placement.capacity_mb(inventory)
            - provider.usages.get(resource_class, 0))


def free_room(compute, providers):
    """(free RAM MB, free vCPUs) of a host, as Placement counts them.

    Capacity x allocation ratio, less reserved, less allocations. A host
    with several nodes (hypervisors) is counted by the node with the most
    free RAM: an instance lands on one node. A node missing from Placement
    offers nothing.
    """
    room = (0.0, 0.0)
    for node in compute.nodes:
        provider = providers.get(node)
        if provider is not None:
            room = max(room, (_free(provider, MEMORY_RC),
                              _free(provider, VCPU_RC)))
    return room


def _instance_cells(server):
    """``((host cell, MB), ...)`` of a server Nova placed on NUMA cells.

    None for a server without a NUMA topology or whose host nodes are not
    known; guest cells on the same host cell are one.
    """
    if not server.numa_cells:
        return None
    merged = {}
    for node, mb in server.numa_cells:
        merged[int(node)] = merged.get(int(node), 0) + mb
    return tuple(sorted(merged.items()))


def rebalance_hosts(snap, view):
    """The hosts of the rebalancing plan (:class:`rebalance.Host`).

    Each compute host with its profile as the scheduler reads it, its
    free RAM and vCPUs in Placement, its cells (:func:`host_cells`, else
    the nodes with CPUs of its latest observation) and the servers Nova
    has on it, each with the working set its host's latest observation
    measured, by the core's rule for its status, Watcher's too
    (:func:`~nova_pmem_filters.core.plans.rebalance.instance`): a server that
    window did not measure (a ``gap``, or not listed) has none, and the
    plan does not guess it, unless it runs no guest (``SHUTOFF``,
    ``SUSPENDED``, ``SHELVED``: 0 MB); only an ``ACTIVE`` server moves.
    """
    latest = latest_observations(snap)
    servers = {}
    for server in snap.servers:
        if server.host:
            servers.setdefault(server.host, []).append(server)
    hosts = []
    for compute in snap.computes:
        host = compute.host
        doc = latest.get(host)
        measured = ({i.uuid: i.working_set_mb for i in doc.instances}
                    if doc is not None else {})
        cells = host_cells(host, view.profiles[host], view)
        if cells is None and doc is not None and doc.cpu_nodes:
            cells = sorted(doc.cpu_nodes)
        ram, vcpus = free_room(compute, snap.providers)
        hosts.append(rebalance.Host(
            name=host, profile=view.profiles[host], free_ram_mb=ram,
            free_vcpus=vcpus,
            cells=(None if cells is None
                   else tuple(rebalance.Cell(c) for c in cells)),
            instances=tuple(
                rebalance.instance(
                    s.id, s.status, measured.get(s.id), name=s.name or None,
                    memory_mb=s.ram_mb, vcpus=s.vcpus,
                    extra_specs=dict(s.extra_specs),
                    cells=_instance_cells(s))
                for s in sorted(servers.get(host, ()), key=lambda s: s.id))))
    return hosts
