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
"""What the doctor reads of a live cloud, as plain values.

:func:`gather` reads it through an openstacksdk connection (compute and
placement APIs, admin credentials); the checks of
:mod:`nova_pmem_filters.doctor.checks` then work on these values only, so
they are tested without a cloud.
"""

import dataclasses
import urllib.parse

from openstack import exceptions as sdk_exceptions

from nova_pmem_filters.conf import schedulerconf
from nova_pmem_filters.core.plans import rebalance
from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.doctor import cloud

# Microversions the doctor reads at: flavors with their extra specs (2.61),
# servers with their embedded flavor (2.47), hypervisors with their service
# host (2.53); a server's NUMA topology with its host nodes (2.78, host_node
# for admins); provider traits (Placement 1.6).
FLAVOR_MICROVERSION = '2.61'
SERVER_MICROVERSION = '2.47'
HYPERVISOR_MICROVERSION = '2.53'
TOPOLOGY_MICROVERSION = '2.78'
PLACEMENT_MICROVERSION = '1.6'


@dataclasses.dataclass(frozen=True)
class Aggregate:
    name: str
    id: str
    hosts: tuple
    metadata: dict


@dataclasses.dataclass(frozen=True)
class Flavor:
    name: str
    id: str
    ram_mb: int
    extra_specs: dict


@dataclasses.dataclass(frozen=True)
class Compute:
    """A nova-compute host and the nodes (hypervisors) it runs."""

    host: str
    nodes: tuple


@dataclasses.dataclass(frozen=True)
class Provider:
    """A compute node's root resource provider in Placement."""

    uuid: str
    name: str
    traits: frozenset
    # resource class -> inventory record (total, reserved, allocation_ratio,
    # ...), as Placement returns it.
    inventories: dict
    # resource class -> amount allocated (GET .../usages).
    usages: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Server:
    id: str
    name: str
    # The nova-compute host; None for a server on no host (ERROR before
    # scheduling, shelved offloaded).
    host: str
    status: str
    flavor_name: str
    ram_mb: int
    extra_specs: dict
    # Host NUMA node of each guest NUMA node, guest node 0 first (GET
    # /servers/{id}/topology): read for servers with vPMEM (hw:pmem) and
    # for servers on tiered hosts; None when not read or when the API hides
    # the host nodes, () for a server without a NUMA topology.
    numa_nodes: tuple = None
    # (host NUMA node, memory MB) of each guest NUMA node, as numa_nodes.
    numa_cells: tuple = None
    # The vCPUs of its flavor.
    vcpus: int = 0


@dataclasses.dataclass(frozen=True)
class Thresholds:
    """The thresholds of the rebalancing plan (``--act-above`` etc.).

    The fix of ``working-set-over-near-memory`` is the core's plan
    (:func:`nova_pmem_filters.core.plans.rebalance.plan`) with these; a host is
    reported when its measured working set exceeds ``act_above`` x its
    near memory.
    """

    act_above: float = rebalance.ACT_ABOVE
    aim_below: float = rebalance.AIM_BELOW
    max_moves: int = rebalance.MAX_MOVES


@dataclasses.dataclass(frozen=True)
class Snapshot:
    aggregates: tuple = ()
    flavors: tuple = ()
    computes: tuple = ()
    servers: tuple = ()
    # Provider name (the node name) -> Provider.
    providers: dict = dataclasses.field(default_factory=dict)
    # The nova.conf read (doctor.novaconf.NovaConfig), or None if none was
    # given.
    config: object = None
    # Discovered hosts (core.formats.discoveredhost.DiscoveredHost), or None.
    fleet: tuple = None
    # Observation documents (core.formats.observation), or None.
    observations: tuple = None
    # The thresholds of the rebalancing plan.
    thresholds: Thresholds = Thresholds()


def _get(proxy, path, microversion):
    response = proxy.get(path, microversion=microversion)
    sdk_exceptions.raise_from_response(response)
    return response.json()


def _pages(proxy, path, key, microversion):
    """Every item of a paged Nova listing."""
    while path:
        body = _get(proxy, path, microversion)
        yield from body.get(key) or ()
        path = None
        for link in body.get('%s_links' % key) or ():
            if link.get('rel') == 'next':
                path = link['href']


def _aggregates(conn):
    body = _get(conn.compute, '/os-aggregates', None)
    return tuple(Aggregate(name=a['name'], id=str(a['id']),
                           hosts=tuple(a.get('hosts') or ()),
                           metadata=dict(a.get('metadata') or {}))
                 for a in body.get('aggregates') or ())


def _flavors(conn):
    # is_public=None: public and private flavors alike.
    flavors = _pages(conn.compute, '/flavors/detail?is_public=None',
                     'flavors', FLAVOR_MICROVERSION)
    return tuple(Flavor(name=f['name'], id=f['id'], ram_mb=f['ram'],
                        extra_specs=dict(f.get('extra_specs') or {}))
                 for f in flavors)


def _computes(conn):
    nodes = {}
    for hyp in _pages(conn.compute, '/os-hypervisors/detail', 'hypervisors',
                      HYPERVISOR_MICROVERSION):
        host = (hyp.get('service') or {}).get('host')
        if host:
            nodes.setdefault(host, []).append(hyp['hypervisor_hostname'])
    return tuple(Compute(host=h, nodes=tuple(sorted(n)))
                 for h, n in sorted(nodes.items()))


def _numa_cells(conn, server_id):
    """(host node, memory MB) of each guest NUMA node; None if hidden."""
    try:
        body = _get(conn.compute, '/servers/%s/topology'
                    % urllib.parse.quote(server_id), TOPOLOGY_MICROVERSION)
    except sdk_exceptions.NotFoundException:
        # Deleted since the listing.
        return None
    except sdk_exceptions.HttpException:
        # A cloud older than 2.78, or a server in a state the API does not
        # describe: the doctor reports the host nodes as unknown.
        return None
    nodes = body.get('nodes') or ()
    if any('host_node' not in n for n in nodes):
        return None
    return tuple((n['host_node'], n.get('memory_mb') or 0) for n in nodes)


def _servers(conn, tiered_hosts):
    """The servers; the NUMA cells of those with vPMEM or on tiered hosts.

    :param tiered_hosts: hosts whose near-memory bound the doctor checks
        (cell by cell for NUMA-bound servers, as PmemCacheFilter does).
    """
    servers = []
    for s in _pages(conn.compute, '/servers/detail?all_tenants=1',
                    'servers', SERVER_MICROVERSION):
        flavor = s.get('flavor') or {}
        specs = dict(flavor.get('extra_specs') or {})
        host = s.get('OS-EXT-SRV-ATTR:host')
        cells = None
        if host and (specs.get(extra_specs.VPMEM_KEY)
                     or host in tiered_hosts):
            cells = _numa_cells(conn, s['id'])
        servers.append(Server(
            id=s['id'], name=s.get('name') or '',
            host=host, status=s.get('status'),
            flavor_name=flavor.get('original_name', ''),
            ram_mb=flavor.get('ram') or 0, extra_specs=specs,
            numa_nodes=(None if cells is None
                        else tuple(node for node, _mb in cells)),
            numa_cells=cells, vcpus=flavor.get('vcpus') or 0))
    return tuple(servers)


def _providers(conn, node_names):
    providers = {}
    body = _get(conn.placement, '/resource_providers',
                PLACEMENT_MICROVERSION)
    for rp in body.get('resource_providers') or ():
        if rp['name'] not in node_names:
            continue
        uuid = rp['uuid']
        base = '/resource_providers/%s' % urllib.parse.quote(uuid)
        traits = _get(conn.placement, base + '/traits',
                      PLACEMENT_MICROVERSION).get('traits') or ()
        inventories = _get(conn.placement, base + '/inventories',
                           PLACEMENT_MICROVERSION).get('inventories') or {}
        usages = _get(conn.placement, base + '/usages',
                      PLACEMENT_MICROVERSION).get('usages') or {}
        providers[rp['name']] = Provider(uuid=uuid, name=rp['name'],
                                         traits=frozenset(traits),
                                         inventories=dict(inventories),
                                         usages=dict(usages))
    return providers


def gather(conn, config=None, fleet=None, observations=None,
           thresholds=None):
    """Read the cloud through an openstacksdk Connection.

    :param thresholds: the plan's (:class:`Thresholds`); None for the
        core's defaults.

    :raises openstack.exceptions.SDKException, keystoneauth1 exceptions:
        as the connection raises them; the CLI turns them into one line.
    """
    computes = _computes(conn)
    node_names = {n for c in computes for n in c.nodes}
    aggregates = _aggregates(conn)
    profiles = cloud.host_profiles(
        [c.host for c in computes], aggregates,
        (config or schedulerconf.defaults()).default_host_mode)
    tiered = {host for host, prof in profiles.items() if prof.tiered}
    return Snapshot(aggregates=aggregates, flavors=_flavors(conn),
                    computes=computes, servers=_servers(conn, tiered),
                    providers=_providers(conn, node_names), config=config,
                    fleet=tuple(fleet) if fleet is not None else None,
                    observations=(tuple(observations)
                                  if observations is not None else None),
                    thresholds=thresholds or Thresholds())
