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
"""The host-profile document: built, written and read back here.

``nova-pmem-discover`` describes a host as one JSON document
(``doc/source/host-profile-format.rst``, version :data:`VERSION`):
discovery builds it as a :class:`Document` of the entries below and prints
or writes it with :func:`dumps` or :func:`write`. Each key is declared once,
as a field of the entry that holds it (the field's name is the key, its
check is the rule readers apply; :func:`keys` lists them in the order they
are written). :func:`parse_document` reads all of a document back, every
key checked, to the same :class:`Document` (:func:`to_dict` gives the
decoded JSON again).

Operators keep one file per host in a directory. The planner (``fleet``,
``compare --fleet``, ``simulate --fleet``), the doctor (``--fleet``) and
the observer (``--profile``) read them through :func:`load`, :func:`read`
or :func:`parse`, which give the host they plan with
(:class:`DiscoveredHost`), so all accept and refuse the same files with
the same one-line messages, and see the same scheduler profile
(:meth:`DiscoveredHost.profile`). Discovery's own outputs (aggregate
metadata, provider config) read the document it built the same way
(:func:`host_of`).

The document is only ever extended: a version gains keys (readers of the
version ignore keys they do not know) and never loses one or changes what
one means; readers accept a document without the keys added later
(``near_memory_mb``, ``vcpus``, ``cpus``, the ``--numa`` and ``--cxl``
keys).

This module imports nothing from Nova.
"""

import dataclasses
import json

from nova_pmem_filters.core.formats import document
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import tiering
from nova_pmem_filters import fileutil


VERSION = 1


SCHEMA = 'nova-pmem-host-profile/%d' % VERSION


MIXED = kinds.MIXED


HARDWARE_MODES = kinds.HARDWARE_MODES


class ProfileError(document.DocumentError):
    """A profile that cannot be used; the message names the file and key."""


ABSENT = document.ABSENT


given = document.given


def _gb(positive=False):
    return document.number('a %s number of GB' % (
        'positive' if positive else 'non-negative'),
        least=0, above=0 if positive else None, convert=float)


_whole = document.whole('an integer >= 0')


_percent = document.whole('a percentage (an integer from 0 to 100)',
                          most=100)


_positive = document.whole('a positive integer', least=1)


_node = document.whole('a NUMA node id (an integer >= 0)')


_node_or_null = document.nullable(document.whole(
    'a NUMA node id (an integer >= 0) or null'))


_text_or_null = document.nullable(document.text(
    'a non-empty string or null'))


_string = document.text('a string', empty=True)


_bool = document.flag()


_nullable = document.nullable


_list_of = document.list_of


_object = document.object_of


def _text(allowed=None):
    text = document.text(blank=False)
    return text if allowed is None else document.choice(allowed, check=text)


def _entries(entry):
    """A list of ``entry`` objects; an error names ``key.N`` and the key."""
    return document.objects(entry, item_in_source=True)


_key = document.key


class _Entry(document.Document):
    """An object of the document; its fields are its keys, in order.

    A key it leaves out stays out (ABSENT), and is refused where required.
    """

    error = ProfileError


_GB = _gb()


_TEXT = _text()


@dataclasses.dataclass(frozen=True)
class SocketEntry(_Entry):
    """One socket (ipmctl): its DRAM (an even share), PMem and cache."""

    socket: int = _key(_whole)
    numa_node: int = _key(_node_or_null)
    dram_gb: float = _key(_GB)
    pmem_gb: float = _key(_GB)
    memory_mode_gb: float = _key(_GB)
    app_direct_gb: float = _key(_GB)
    dram_cache_gb: float = _key(_GB)


@dataclasses.dataclass(frozen=True)
class DimmEntry(_Entry):
    """One PMem module (ipmctl)."""

    id: str = _key(_TEXT)
    socket: int = _key(_whole)
    type: str = _key(_TEXT)
    capacity_gb: float = _key(_GB)


@dataclasses.dataclass(frozen=True)
class RegionEntry(_Entry):
    """One PMem region (ndctl), with its socket."""

    id: str = _key(_TEXT)
    socket: int = _key(_nullable(_whole))
    numa_node: int = _key(_node_or_null)
    size_gb: float = _key(_GB)
    available_gb: float = _key(_GB)


@dataclasses.dataclass(frozen=True)
class NamespaceEntry(_Entry):
    """One PMem namespace (ndctl); ``socket`` with ``--numa``."""

    name: str = _key(_text_or_null)
    dev: str = _key(_TEXT)
    mode: str = _key(_TEXT)
    region: str = _key(_text_or_null)
    numa_node: int = _key(_node_or_null)
    size_gb: float = _key(_GB)
    chardev: str = _key(_text_or_null)
    blockdev: str = _key(_text_or_null)
    align: int = _key(_nullable(_whole))
    socket: int = _key(_nullable(_whole))


@dataclasses.dataclass(frozen=True)
class NumaNodeEntry(_Entry):
    """One NUMA node of the ``--numa`` listing."""

    numa_node: int = _key(_node)
    sockets: tuple = _key(_list_of(_whole))
    dram_gb: float = _key(_GB)
    dram_cache_gb: float = _key(_GB)
    memory_mode_gb: float = _key(_GB)
    app_direct_gb: float = _key(_GB)
    regions: tuple = _key(_list_of(_TEXT))
    namespaces: tuple = _key(_list_of(_TEXT))


@dataclasses.dataclass(frozen=True)
class Cpus(_Entry):
    """The ``cpus`` object (lscpu)."""

    sockets: int = _key(_positive, required=True)
    cores_per_socket: int = _key(_positive, required=True)
    threads_per_core: int = _key(_positive, required=True)


@dataclasses.dataclass(frozen=True)
class CxlMemdev(_Entry):
    memdev: str = _key(_TEXT)
    host: str = _key(_text_or_null)
    serial: int = _key(_nullable(_whole))
    numa_node: int = _key(_node_or_null)
    ram_gb: float = _key(_GB)
    pmem_gb: float = _key(_GB)


@dataclasses.dataclass(frozen=True)
class CxlRegion(_Entry):
    region: str = _key(_TEXT)
    type: str = _key(_text_or_null)
    size_gb: float = _key(_GB)
    decode_state: str = _key(_text_or_null)
    dax_devices: tuple = _key(_list_of(_TEXT))


@dataclasses.dataclass(frozen=True)
class CxlDecoder(_Entry):
    decoder: str = _key(_TEXT)
    mode: str = _key(_text_or_null)
    size_gb: float = _key(_GB)
    region: str = _key(_text_or_null)


@dataclasses.dataclass(frozen=True)
class CxlDaxDevice(_Entry):
    chardev: str = _key(_TEXT)
    region: str = _key(_text_or_null)
    mode: str = _key(_TEXT)
    size_gb: float = _key(_GB)
    numa_node: int = _key(_node_or_null)
    movable: bool = _key(_nullable(_bool))


@dataclasses.dataclass(frozen=True)
class CxlNumaNode(_Entry):
    """A NUMA node of sysfs: ``cpus`` is its cpulist, empty without CPUs."""

    numa_node: int = _key(_node)
    cpus: str = _key(_string)
    memory_gb: float = _key(_GB)
    near_memory_gb: float = _key(_GB)
    tier: bool = _key(_bool)


@dataclasses.dataclass(frozen=True)
class CxlTierNode(_Entry):
    numa_node: int = _key(_node)
    memory_gb: float = _key(_GB)


@dataclasses.dataclass(frozen=True)
class Cxl(_Entry):
    """The ``cxl`` object (``--cxl``).

    ``kind`` is None on a host without CXL memory in use.
    """

    kind: str = _key(_nullable(_text(kinds.CXL_MODES)))
    near_memory_gb: float = _key(_GB)
    # The near memory in Placement's whole MB, of the unrounded size.
    near_memory_mb: int = _key(_whole)
    far_memory_gb: float = _key(_GB)
    visible_memory_gb: float = _key(_GB)
    memdevs: tuple = _key(_entries(CxlMemdev))
    regions: tuple = _key(_entries(CxlRegion))
    decoders: tuple = _key(_entries(CxlDecoder))
    dax_devices: tuple = _key(_entries(CxlDaxDevice))
    numa_nodes: tuple = _key(_entries(CxlNumaNode))
    tier_nodes: tuple = _key(_entries(CxlTierNode))


@dataclasses.dataclass(frozen=True)
class MemoryTier(_Entry):
    """One memory tier of the kernel (``memory_tierN/nodelist``)."""

    tier: int = _key(_whole, required=True)
    nodes: tuple = _key(_list_of(_node), required=True)


# The version of the kernel_tiering object: it gains keys, never loses or
# changes one.
KERNEL_TIERING_VERSION = 1


@dataclasses.dataclass(frozen=True)
class KernelTiering(_Entry):
    """The ``kernel_tiering`` object (``--cxl``): what the kernel does.

    The settings as read (null: the file is absent), the CPU-less nodes
    they are judged for, and the verdict (:func:`tiering.judge`):
    ``state`` is what ``pmem_kernel_tiering`` carries.
    """

    version: int = _key(document.whole('a version (an integer >= 1)',
                                       least=1), required=True,
                        default=KERNEL_TIERING_VERSION)
    kernel: str = _key(_text_or_null)
    numa_balancing: int = _key(_nullable(document.whole(
        'an integer from 0 to %d or null' % tiering.NUMA_BALANCING_MAX,
        most=tiering.NUMA_BALANCING_MAX)))
    demotion_enabled: bool = _key(_nullable(_bool))
    promotion_rate_limit_mbps: int = _key(_nullable(_whole))
    # null on a kernel without memory tiers (before 6.1).
    memory_tiers: tuple = _key(_nullable(_entries(MemoryTier)))
    far_nodes: tuple = _key(_list_of(_node))
    promotes: bool = _key(_bool, required=True)
    demotes: bool = _key(_bool, required=True)
    state: str = _key(_text(tiering.STATES), required=True)
    # Codes of tiering.Problem, each explained in the notes.
    problems: tuple = _key(_list_of(_TEXT))
    # The cpuset controller's hierarchy (/proc/mounts), null when not read
    # or not mounted; absent from profiles written before it was read.
    cgroup: str = _key(_nullable(_text(tiering.CGROUPS)))
    # Whether reclaim may demote memory Nova binds (tiering.bound_demotion),
    # explained in the notes; absent from profiles written before.
    demotes_bound_memory: bool = _key(_bool)

    def settings(self):
        """The :class:`tiering.State` the object records."""
        tiers = given(self.memory_tiers)
        return tiering.State(
            kernel=given(self.kernel),
            numa_balancing=given(self.numa_balancing),
            demotion_enabled=given(self.demotion_enabled),
            promotion_rate_limit_mbps=given(self.promotion_rate_limit_mbps),
            tiers=None if tiers is None else tuple(
                (t.tier, tuple(t.nodes)) for t in tiers),
            cgroup=given(self.cgroup))


def kernel_tiering_entry(state, cpu_nodes, far_nodes):
    """The ``kernel_tiering`` object of ``state`` for those nodes.

    :returns: (:class:`KernelTiering`, :class:`tiering.Verdict`).
    """
    verdict = tiering.judge(state, cpu_nodes, far_nodes)
    return KernelTiering(
        kernel=state.kernel, numa_balancing=state.numa_balancing,
        demotion_enabled=state.demotion_enabled,
        promotion_rate_limit_mbps=state.promotion_rate_limit_mbps,
        memory_tiers=None if state.tiers is None else [
            MemoryTier(tier=tier, nodes=list(nodes))
            for tier, nodes in state.tiers],
        far_nodes=sorted(far_nodes), promotes=verdict.promotes,
        demotes=verdict.demotes, state=verdict.state,
        problems=[p.code for p in verdict.problems], cgroup=state.cgroup,
        demotes_bound_memory=verdict.demotes_bound_memory), verdict


@dataclasses.dataclass(frozen=True)
class Document(_Entry):
    """A host-profile document, as discovery writes it.

    Its top-level keys in order: version 1 (``schema`` to ``notes``), then
    what was added to it.
    """

    schema: str = _key(document.exactly(SCHEMA), required=True,
                       default=SCHEMA)
    hostname: str = _key(_TEXT, required=True)
    # The hardware mode: a kind, or mixed.
    mode: str = _key(_text(kinds.HARDWARE_MODES), required=True)
    # The kind the scheduler sees (pmem_mode); mixed is memory_mode.
    scheduler_mode: str = _key(_text(kinds.ALL_MODES), required=True)
    memory_mode_percent: int = _key(_percent)
    dram_gb: float = _key(_GB)
    pmem_gb: float = _key(_GB)
    visible_memory_gb: float = _key(_gb(positive=True), required=True)
    dram_cache_gb: float = _key(_GB, required=True)
    app_direct_gb: float = _key(_GB)
    sockets: tuple = _key(_entries(SocketEntry))
    dimms: tuple = _key(_entries(DimmEntry))
    regions: tuple = _key(_entries(RegionEntry))
    namespaces: tuple = _key(_entries(NamespaceEntry))
    notes: tuple = _key(_list_of(_string))
    # The near memory in Placement's whole MB, of the unrounded size
    # (placement.host_near_memory_mb): the provider config's total.
    near_memory_mb: int = _key(_whole)
    # --cxl
    cxl: Cxl = _key(_object(Cxl))
    # lscpu: the logical CPUs, and the topology.
    vcpus: int = _key(_nullable(_positive))
    cpus: Cpus = _key(_nullable(_object(Cpus)))
    # --numa
    numa_nodes: tuple = _key(_entries(NumaNodeEntry))
    dram_cache_gb_per_cell: str = _key(_text_or_null)
    # --cxl: the kernel's tiering (KERNEL_TIERING_VERSION).
    kernel_tiering: KernelTiering = _key(_object(KernelTiering))


def keys(entry):
    """The keys of an entry class (or entry), in the order written."""
    return document.keys(entry)


CPU_KEYS = keys(Cpus)


def to_dict(entry):
    """The decoded JSON of a :class:`Document` (or of one of its entries).

    Its keys in order, without those it leaves out.
    """
    return entry.to_dict()


def parse_document(data, source):
    """All of one host-profile document (decoded JSON), every key checked.

    Keys it does not know (of a later version) are ignored.

    :returns: a :class:`Document`; :func:`to_dict` of it is ``data``, but
        for those keys.
    :raises ProfileError: naming ``source`` and the key.
    """
    return Document.from_document(data, source, SCHEMA)


def dumps(prof):
    """The text of a host-profile file.

    :param prof: a :class:`Document`, or its decoded JSON (a dict).
    """
    if isinstance(prof, Document):
        prof = to_dict(prof)
    return json.dumps(prof, indent=2)


def dumps_yaml(prof):
    """The same document as YAML (``-f yaml``): the keys in that order.

    :param prof: a :class:`Document`.
    """
    return document.yaml_text(to_dict(prof))


def write(path, prof):
    """Write a host-profile file atomically: the old file or the new.

    :param prof: a :class:`Document`, or its decoded JSON (a dict).
    :raises ProfileError: naming ``path`` when it cannot be written.
    """
    try:
        fileutil.write_atomic(path, dumps(prof) + '\n')
    except OSError as exc:
        raise ProfileError(path, [], 'cannot write the file: %s'
                           % (exc.strerror or exc))
