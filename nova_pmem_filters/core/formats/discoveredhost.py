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
"""The host the tools plan with, read of a host-profile document."""

import dataclasses
import json

from nova_pmem_filters.core.formats import document
from nova_pmem_filters.core.formats import hostfile
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import placement
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters.core.rules import tiering


@dataclasses.dataclass(frozen=True)
class Namespace:
    """A PMem namespace of a discovered host, with its NUMA node."""

    name: str
    dev: str
    mode: str
    # None when ndctl did not say (listed without --verbose).
    numa_node: int
    size_gb: float


@dataclasses.dataclass(frozen=True)
class DiscoveredHost:
    """What the planner and the doctor read of one discovered host."""

    source: str
    hostname: str
    # The hardware mode (a kind, or mixed) and the kind the scheduler
    # should see (mixed is scheduled as memory_mode).
    hardware_mode: str
    mode: str
    visible_memory_gb: float
    # The near memory of a tiered kind; 0 on the others, as for the
    # scheduler.
    dram_cache_gb: float
    # Installed DRAM; None in a profile that does not say.
    dram_gb: float = None
    vcpus: int = None
    region_gb: tuple = ()
    # Namespaces (Namespace) of an app_direct host, as ndctl listed them.
    namespaces: tuple = ()
    # Entries of the profile's sockets list; None when it lists none.
    sockets: int = None
    # ((NUMA node, GB), ...) of dram_cache_gb_per_cell (--numa), or None.
    cell_cache_gb: tuple = None
    # Ids of the NUMA nodes with CPUs (Nova's host cells that take
    # instance cells); None when the profile does not say.
    cell_ids: tuple = None
    # The profile's near_memory_mb (the near memory in whole MB of its
    # unrounded size); None in a profile written before it.
    recorded_near_memory_mb: int = None
    # pmem_kernel_tiering ('on' or 'off') of a kind the kernel tiers whose
    # profile records its tiering; None otherwise.
    kernel_tiering: str = None
    # The profile's kernel_tiering object, None without one.
    tiering_entry: hostfile.KernelTiering = None

    def profile(self):
        """The scheduler's profile of the host, through its metadata."""
        return profile.build(self.mode, self.dram_cache_gb,
                             self.cell_cache_gb, self.kernel_tiering)

    def metadata(self):
        """The aggregate metadata of the host (``--aggregate`` prints it)."""
        return profile.metadata(self.mode, self.dram_cache_gb,
                                self.cell_cache_gb, self.kernel_tiering)

    @property
    def near_memory_gb(self):
        """The near memory Placement is told of; None if not known."""
        return profile.near_memory_gb(self.mode, self.dram_gb,
                                      self.dram_cache_gb)

    @property
    def host_near_memory_mb(self):
        """The near memory in Placement's whole MB; None if not known.

        The ``CUSTOM_NEAR_MEMORY_MB`` total the host reports:
        the profile's exact figure where it records one, else its near
        memory GB (rounded to 0.01 GB) in whole MB.
        """
        if self.recorded_near_memory_mb is not None:
            return self.recorded_near_memory_mb
        near_gb = self.near_memory_gb
        return None if near_gb is None else placement.host_near_memory_mb(
            near_gb)

    @property
    def traits(self):
        return kinds.traits(self.hardware_mode)


def _required(item, key, where):
    value = getattr(item, key)
    if value is hostfile.ABSENT:
        raise hostfile.ProfileError(where, [key], 'missing')
    return value


def host_of(doc, source):
    """The host a document describes, as the planner and the doctor read.

    The rules that tie its keys together are checked here.

    :param doc: a :class:`Document` (:func:`parse_document`, or as
        discovery built it).
    :raises ProfileError: naming ``source`` and the key.
    """
    mode = doc.scheduler_mode
    cache = doc.dram_cache_gb
    if mode in kinds.TIERED and not cache:
        raise hostfile.ProfileError(
            source, ['dram_cache_gb'], 'a %s host needs a positive DRAM '
            'cache, got %s' % (mode, profile.gb_text(cache)))
    cells = None
    if mode in kinds.TIERED:
        cells = _cell_cache(doc, source, mode, cache)
    else:
        cache = 0.0
    vcpus = document.given(doc.vcpus)
    cpus = document.given(doc.cpus)
    if vcpus is None and cpus:
        vcpus = cpus.sockets * cpus.cores_per_socket * cpus.threads_per_core
    regions = namespaces = ()
    # Regions and namespaces matter where vPMEM goes: app_direct hosts.
    if mode in kinds.NAMESPACE_KINDS:
        regions = tuple(sorted(
            _required(region, 'size_gb', '%s: regions.%d' % (source, i))
            for i, region in enumerate(document.given(doc.regions, ()))))
        namespaces = tuple(
            _namespace(ns, '%s: namespaces.%d' % (source, i))
            for i, ns in enumerate(document.given(doc.namespaces, ())))
    entry = _kernel_tiering(doc, source)
    return DiscoveredHost(source=source, hostname=doc.hostname,
                          hardware_mode=doc.mode, mode=mode,
                          visible_memory_gb=doc.visible_memory_gb,
                          dram_cache_gb=cache,
                          dram_gb=document.given(doc.dram_gb),
                          vcpus=vcpus, region_gb=regions,
                          namespaces=namespaces,
                          sockets=_socket_count(doc),
                          cell_cache_gb=cells,
                          cell_ids=_cell_ids(doc, cells),
                          recorded_near_memory_mb=document.given(
                              doc.near_memory_mb),
                          kernel_tiering=(
                              entry.state if entry is not None
                              and mode in kinds.KERNEL_TIERED else None),
                          tiering_entry=entry)


def _kernel_tiering(doc, source):
    """The kernel_tiering object, its verdict checked against its settings.

    None without one.
    """
    entry = document.given(doc.kernel_tiering)
    if entry is None:
        return None
    problem = tiering.state_problem(entry.state, entry.promotes,
                                    entry.demotes)
    if problem:
        raise hostfile.ProfileError(source, ['kernel_tiering', 'state'],
                                    problem)
    return entry


def _namespace(item, where):
    return Namespace(name=document.given(item.name),
                     dev=_required(item, 'dev', where),
                     mode=_required(item, 'mode', where),
                     numa_node=document.given(item.numa_node),
                     size_gb=_required(item, 'size_gb', where))


def parse(data, source):
    """Check one host profile (a decoded JSON document).

    :returns: the :class:`DiscoveredHost` it describes.
    :raises ProfileError: naming ``source`` and the key.
    """
    return host_of(hostfile.parse_document(data, source), source)


def _cxl_nodes_with_cpus(doc):
    """The CXL listing's NUMA nodes with CPUs; None without a listing."""
    section = document.given(doc.cxl)
    listing = document.given(section.numa_nodes) if section else None
    if listing is None:
        return None
    return [node for node in listing if document.given(node.cpus)]


def _socket_count(doc):
    """How many sockets the host has; None if the profile does not say.

    ipmctl lists the sockets of an Optane host; a host without Optane
    lists none, and with ``--cxl`` its NUMA nodes with CPUs stand for them.
    """
    sockets = document.given(doc.sockets, ())
    if sockets:
        return len(sockets)
    nodes = _cxl_nodes_with_cpus(doc)
    return (len(nodes) or None) if nodes is not None else None


def _cell_ids(doc, cells):
    """The ids of the NUMA nodes with CPUs, None if the profile lacks them.

    The per-cell key's nodes, else the sockets' nodes, else the CXL
    listing's nodes with CPUs.
    """
    if cells:
        return tuple(cell for cell, hostfile._gb in cells)
    nodes = {document.given(s.numa_node)
             for s in document.given(doc.sockets, ())}
    if not nodes:
        nodes = {document.given(n.numa_node)
                 for n in _cxl_nodes_with_cpus(doc) or ()}
    nodes.discard(None)
    return tuple(sorted(nodes)) if nodes else None


def _cell_cache(doc, source, mode, cache_gb):
    """The per-cell near memory of a tiered host, as the scheduler reads."""
    raw = document.given(doc.dram_cache_gb_per_cell)
    if raw is None:
        return None
    prof = profile.from_metadata([dict(
        profile.metadata(mode, cache_gb),
        **{profile.DRAM_CACHE_PER_CELL_KEY: raw})])
    if not prof.known:
        raise hostfile.ProfileError(source, ['dram_cache_gb_per_cell'],
                                    prof.problem)
    return prof.cell_cache_gb


def read(path):
    """Read and check one profile file.

    :raises ProfileError: naming the file and, where it applies, the key.
    """
    data = document.read_json(path, hostfile.ProfileError)
    return parse(data, path)


def load(directory):
    """Every ``*.json`` profile of ``directory``, in file-name order.

    :raises ProfileError: on the first bad file, on a hostname given by two
        files and on a directory with no profile.
    """
    paths = document.json_files(directory, hostfile.ProfileError,
                                'host profile')
    hosts = []
    seen = {}
    for path in paths:
        host = read(path)
        if host.hostname in seen:
            raise hostfile.ProfileError(
                path, ['hostname'], '%s is also described by %s'
                % (json.dumps(host.hostname), seen[host.hostname]))
        seen[host.hostname] = path
        hosts.append(host)
    return hosts
