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
"""The observation file: what ``nova-pmem-observe`` measured on one host.

One JSON document per host and window, written by the observer and read by
the planner (``hot-ratios``, scenario workloads whose hot ratio is
observed) and the doctor (``--observations DIR``). Its format is public and
versioned like the host profile (``doc/source/observation-format.rst``)::

    {
      "schema": "nova-pmem-observation/1",
      "hostname": "compute-mm-01",
      "started": "2026-11-25T12:00:00Z",     # ISO 8601, UTC
      "window_s": 60.0,
      "profile": {                     # from nova-pmem-discover, or null
        "pmem_mode": "memory_mode",
        "near_memory_mb": 196608.0,           # DRAM cache or near memory
        "cells": [{"id": 0, "near_memory_mb": 98304.0}, ...]
      },
      "nodes": [{"id": 0, "cpus": true}, {"id": 2, "cpus": false}],
      "instances": [{
        "uuid": "...", "name": "instance-0000002a",
        "flavor": "m1.redis", "flavor_ram_mb": 24576, "flavor_vcpus": 4,
        "pid": 4242,
        "declared_hot_ratio": 0.25 | null,    # the flavor's pmem:hot_ratio
        "method": "damon" | "reference_bits" | null,
        "working_set_mb": 3900.5 | null,
        "hot_ratio": 0.159 | null,            # working set / flavor RAM
        "numa_mb": {"0": 20000.0, "2": 4000.0},
        "cell": 0 | null,              # the cell holding most of its pages
        "gap": null | "why nothing was measured",
        "near_resident_mb": 20000.0,   # optional (see below): numa_mb on
        "far_resident_mb": 4000.0,     # nodes with CPUs, and without;
        "hot_on_far_mb": 0.0,          # hot MB that must sit far
        "bound_off_node_mb": 0.0       # bound memory off its nodes
      }, ...],
      "host": {
        "working_set_mb": 120000.0,
        "near_memory_mb": 196608.0 | null,
        "cells": [{"id": 0, "working_set_mb": 60000.0,
                   "near_memory_mb": 98304.0}, ...]
      },
      "far_memory": {
        "media_read_mb_per_s": 12.5 | null,   # ipmctl, Memory Mode
        "media_write_mb_per_s": 3.1 | null,
        "promote_pages_per_s": 100.0 | null,  # /proc/vmstat, kernel tiering
        "demote_pages_per_s": 80.0 | null
      },
      "tiering": {                     # optional: the kernel's tiering
        "version": 1, "kernel": "6.9.0", "numa_balancing": 2 | null,
        "demotion_enabled": true | null,
        "promotion_rate_limit_mbps": 65536 | null,
        "memory_tiers": [{"tier": 4, "nodes": [0]}, ...] | null,
        "far_nodes": [2], "promotes": true, "demotes": true,
        "state": "on" | "off", "problems": ["demotion-disabled", ...],
        "rates": {"pgpromote_success": 100.0, ...} | null,  # per second
        "node_rates": {"0": {"pgpromote_success": 100.0, ...}},
        "cgroup": "v2" | "v1" | null,   # the cpuset's hierarchy
        "demotes_bound_memory": true     # reclaim may demote bound guests
      },
      "gaps": ["ipmctl: permission denied", ...]
    }

The optional keys are version-1 extensions: written only where known,
read as null where absent, so older files read (and write back) as before.

A measurement that could not be made is a ``gap`` (per instance) or an
entry of ``gaps`` (per host) and its number is ``null``: never a guess.

This module is the document's only home. Each part is a dataclass whose
fields are its keys, in the document's order (:class:`Observation`,
:class:`Profile` and :class:`ProfileCell`, :class:`Node`,
:class:`Instance`, :class:`Host` and :class:`HostCell`,
:class:`FarMemory`, :class:`Tiering` and :class:`MemoryTier`): the
observer builds those and writes :func:`dumps`; every reader gets them
from :func:`parse` (:func:`read`, :func:`load`), which checks every key
and names the file and the key of a bad value, and never reads the JSON
itself.

The rules every reader shares live here too: which instances count, the
distribution of a flavor's observed hot ratios and the value to declare.

This module imports nothing from Nova.
"""

import calendar
import dataclasses
import functools
import json
import re
import time

from nova_pmem_filters.core.formats import document
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import tiering as core_tiering


SCHEMA = 'nova-pmem-observation/1'


DAMON = 'damon'


REFERENCE_BITS = 'reference_bits'


METHODS = (DAMON, REFERENCE_BITS)


# ``started``: ISO 8601, UTC, whole seconds.
STARTED_FORMAT = '%Y-%m-%dT%H:%M:%SZ'


# The version of the ``tiering`` object (a version-1 extension): it gains
# keys, never loses or changes one.
TIERING_VERSION = 1


_COUNTER_RE = re.compile(r'^[a-z][a-z0-9_]*$')


class ObservationError(document.DocumentError):
    """A bad observation file, naming the file and the key."""

    def __init__(self, source, keys, message):
        super().__init__(source, keys, message)

    @property
    def keys(self):
        return self.path

    @classmethod
    def describe(cls, source, path, rule):
        where = ''.join('[%s]' % json.dumps(k) for k in path)
        return '%s%s: %s' % (source, where, rule)


def _or_null(make, what, nullable, **options):
    """``make(what)``, or if ``nullable`` it or null."""
    if nullable:
        return document.nullable(make(what + ' or null', **options))
    return make(what, **options)


def _number(nullable=True):
    # As written: an integer stays one, so the document writes back the
    # same bytes.
    return _or_null(document.number, 'a number 0.0 or more', nullable,
                    least=0.0)


def _whole(nullable=True):
    return _or_null(document.whole, 'a whole number 0 or more', nullable)


def _text(nullable=False):
    return _or_null(document.text, 'a non-empty string', nullable)


def _choice(choices, nullable=True):
    return _or_null(functools.partial(document.choice, choices),
                    'one of %s' % ', '.join(choices), nullable)


_NUMBER = _number()


def _ratio(value, source, path):
    """A pmem:hot_ratio as a number: above 0 and at most 1, or null."""
    value = _NUMBER(value, source, path)
    if value is not None and not 0.0 < value <= 1.0:
        document.refuse(source, path, 'expected a number above 0 and at '
                        'most 1, or null, got {got}', value)
    return value


def _started(value, source, path):
    try:
        time.strptime(value, STARTED_FORMAT)
    except (TypeError, ValueError):
        document.refuse(source, path, 'expected a UTC time as '
                        '2026-11-25T12:00:00Z, got {got}', value)
    return value


def _texts(value, source, path):
    if not isinstance(value, list) or not all(isinstance(g, str)
                                              for g in value):
        document.refuse(source, path, 'expected a list of strings')
    return tuple(value)


_MB = _number(nullable=False)


def _per_node(check, what):
    """{NUMA node id: ``check``-ed value}; the JSON keys are the ids."""
    def per_node(value, source, path):
        if value is None:
            return {}
        if not isinstance(value, dict):
            document.refuse(source, path, 'expected an object of %s per '
                            'node' % what)
        found = {}
        for node in value:
            if not (node.isascii() and node.isdigit()
                    and str(int(node)) == node):
                document.refuse(source, path, 'expected NUMA node ids (0, '
                                '1, ...) as keys, got {got}', node)
            found[int(node)] = check(value[node], source, list(path) + [node])
        return found
    return per_node


_mb_per_node = _per_node(_MB, 'MB')


def _counter_rates(value, source, path):
    """{vmstat counter: per second}; null: not counted."""
    if value is None:
        return None
    if not isinstance(value, dict):
        document.refuse(source, path, 'expected an object of counts per '
                        'second per vmstat counter, or null')
    for name in value:
        if not _COUNTER_RE.match(name):
            document.refuse(source, path, 'expected vmstat counter names '
                            '(pgpromote_success, ...) as keys, got {got}',
                            name)
    return {name: _MB(value[name], source, list(path) + [name])
            for name in value}


_node_rates = _per_node(_counter_rates, 'counter rates')


def _object(cls, empty=None):
    """A section: ``cls`` read from an object; ``empty()`` for null."""
    return document.nullable(document.object_of(cls),
                             null=empty() if empty is not None else None)


def _objects(cls, required=False):
    objects = document.objects(cls)
    return objects if required else document.nullable(objects, null=())


def _key(check, default=None):
    """A field of the document: its key is the field's name."""
    if callable(default):
        return document.key(check, default_factory=default)
    return document.key(check, default=default)


class _Section(document.Document):
    """A part of the document: one field per key, in the document's order.

    ``from_dict`` (``parse``) is the reader of every key (checked as its
    field says) and ``to_dict`` the writer: the keys are named once, by
    the fields.
    """

    error = ObservationError
    missing = None
    not_an_object = 'expected an object, got {got}'

    # Keys added to version 1 after its first files (version-1
    # extensions) that are left out when null: a file without one reads
    # the same as before, and a reader gets null.
    optional = ()

    @classmethod
    def parse(cls, value, where, source):
        return cls.from_dict(value, source, where)

    def to_dict(self):
        found = super().to_dict()
        for name in self.optional:
            if found.get(name) is None:
                found.pop(name, None)
        return found


@dataclasses.dataclass(frozen=True)
class ProfileCell(_Section):
    """A NUMA cell of the host profile and its near memory."""

    id: int = _key(_whole(nullable=False))
    near_memory_mb: float = _key(_number(nullable=False))


@dataclasses.dataclass(frozen=True)
class Profile(_Section):
    """What the host profile (``--profile``) says of near memory."""

    # Its scheduler mode (a host kind).
    pmem_mode: str = _key(_choice(kinds.HARDWARE_MODES, nullable=False))
    near_memory_mb: float = _key(_NUMBER)
    cells: tuple = _key(_objects(ProfileCell), default=tuple)


@dataclasses.dataclass(frozen=True)
class Node(_Section):
    """A NUMA node of sysfs; CPU-less nodes are the far tier."""

    id: int = _key(_whole(nullable=False))
    cpus: bool = _key(document.flag())


@dataclasses.dataclass(frozen=True)
class Instance(_Section):
    """One running Nova instance and what was measured of it."""

    uuid: str = _key(_text())
    # The libvirt domain.
    name: str = _key(_text(nullable=True))
    flavor: str = _key(_text(nullable=True))
    flavor_ram_mb: int = _key(_NUMBER)
    flavor_vcpus: int = _key(_whole())
    # The QEMU process.
    pid: int = _key(_whole())
    # The flavor's pmem:hot_ratio where Nova's metadata carries it (a key
    # that files written before it lack).
    declared_hot_ratio: float = _key(_ratio)
    # What measured it: one of METHODS; None when nothing was.
    method: str = _key(_choice(METHODS))
    working_set_mb: float = _key(_NUMBER)
    # working_set_mb / flavor_ram_mb.
    hot_ratio: float = _key(_NUMBER)
    # {NUMA node id: resident MB} of the process.
    numa_mb: dict = _key(_mb_per_node, default=dict)
    # The node with CPUs that holds most of its pages.
    cell: int = _key(_whole())
    # Why nothing was measured.
    gap: str = _key(_text(nullable=True))
    # numa_mb on the nodes with CPUs and on those without (the far tier),
    # and the hot MB that must sit on the far nodes: the working set less
    # what is resident near, at most what is resident far. Version-1
    # extensions, left out where not known.
    near_resident_mb: float = _key(_NUMBER)
    far_resident_mb: float = _key(_NUMBER)
    hot_on_far_mb: float = _key(_NUMBER)
    # The MB of its memory bound with MPOL_BIND (libvirt's strict numatune)
    # resident on nodes outside that binding: pages something moved there
    # (reclaim's demotion). Left out where it binds no memory.
    bound_off_node_mb: float = _key(_NUMBER)

    optional = ('near_resident_mb', 'far_resident_mb', 'hot_on_far_mb',
                'bound_off_node_mb')

    @property
    def measured(self):
        """Whether its hot ratio counts for its flavor (see measured())."""
        return self.hot_ratio is not None and bool(self.flavor)


@dataclasses.dataclass(frozen=True)
class HostCell(_Section):
    """A cell of the host: the working set of the instances on it."""

    id: int = _key(_whole(nullable=False))
    working_set_mb: float = _key(_NUMBER)
    near_memory_mb: float = _key(_NUMBER)


@dataclasses.dataclass(frozen=True)
class Host(_Section):
    """The host's measured working set against its near memory."""

    working_set_mb: float = _key(_NUMBER)
    near_memory_mb: float = _key(_NUMBER)
    cells: tuple = _key(_objects(HostCell), default=tuple)


@dataclasses.dataclass(frozen=True)
class FarMemory(_Section):
    """Far-memory traffic over the window; None where not counted."""

    # ipmctl's media counters (Memory Mode), MiB per second.
    media_read_mb_per_s: float = _key(_NUMBER)
    media_write_mb_per_s: float = _key(_NUMBER)
    # /proc/vmstat (kernel tiering), pages per second.
    promote_pages_per_s: float = _key(_NUMBER)
    demote_pages_per_s: float = _key(_NUMBER)


@dataclasses.dataclass(frozen=True)
class MemoryTier(_Section):
    """One memory tier of the kernel (``memory_tierN/nodelist``)."""

    tier: int = _key(_whole(nullable=False))
    nodes: tuple = _key(document.list_of(_whole(nullable=False)),
                        default=tuple)


@dataclasses.dataclass(frozen=True)
class Tiering(_Section):
    """The kernel's tiering on the host, and its counters over the window.

    The settings as read (null: the file is absent), the CPU-less nodes
    holding memory they are judged for, the verdict of
    :func:`~nova_pmem_filters.core.rules.tiering.judge` (``state`` is what
    ``pmem_kernel_tiering`` would carry) and the tiering counters of
    vmstat per second, host-wide and per node where the kernel counts per
    node. The keys of the settings and the verdict are those of the host
    profile's ``kernel_tiering`` object.
    """

    version: int = document.key(
        document.whole('a version (a whole number 1 or more)', least=1),
        required=True, default=TIERING_VERSION)
    kernel: str = _key(_text(nullable=True))
    numa_balancing: int = _key(document.nullable(document.whole(
        'a whole number from 0 to %d or null'
        % core_tiering.NUMA_BALANCING_MAX,
        most=core_tiering.NUMA_BALANCING_MAX)))
    demotion_enabled: bool = _key(document.nullable(document.flag(
        'true, false or null')))
    promotion_rate_limit_mbps: int = _key(_whole())
    # null on a kernel without memory tiers (before 6.1).
    memory_tiers: tuple = _key(document.nullable(document.objects(
        MemoryTier)))
    far_nodes: tuple = _key(document.nullable(document.list_of(
        _whole(nullable=False)), null=()), default=tuple)
    promotes: bool = document.key(document.flag(), required=True,
                                  default=False)
    demotes: bool = document.key(document.flag(), required=True,
                                 default=False)
    state: str = document.key(_choice(core_tiering.STATES, nullable=False),
                              required=True, default=core_tiering.OFF)
    # Codes of tiering.Problem.
    problems: tuple = _key(document.nullable(_texts, null=()),
                           default=tuple)
    # {vmstat counter: per second} over the window; null: not counted.
    rates: dict = _key(_counter_rates)
    # {node: {vmstat counter: per second}}, where the kernel counts per
    # node (about Linux 6.9 on).
    node_rates: dict = _key(_node_rates, default=dict)
    # The cpuset controller's hierarchy (/proc/mounts); null: not read or
    # not mounted. Absent from documents written before it was read.
    cgroup: str = _key(_choice(core_tiering.CGROUPS))
    # Whether reclaim may demote memory Nova binds
    # (tiering.bound_demotion); absent from documents written before.
    demotes_bound_memory: bool = _key(document.nullable(document.flag(
        'true, false or null')))

    @classmethod
    def from_dict(cls, data, source, path=()):
        found = super().from_dict(data, source, path)
        problem = core_tiering.state_problem(found.state, found.promotes,
                                             found.demotes)
        if problem:
            raise ObservationError(source, list(path) + ['state'], problem)
        if found.demotes_bound_memory and not found.demotes:
            raise ObservationError(
                source, list(path) + ['demotes_bound_memory'],
                'is true but demotes is false: a kernel that does not '
                'demote moves no bound memory')
        return found

    @classmethod
    def of(cls, state, cpu_nodes, far_nodes, rates=None, node_rates=None):
        """The object of a :class:`tiering.State` judged for those nodes.

        :returns: (:class:`Tiering`, :class:`tiering.Verdict`).
        """
        verdict = core_tiering.judge(state, cpu_nodes, far_nodes)
        return cls(
            kernel=state.kernel, numa_balancing=state.numa_balancing,
            demotion_enabled=state.demotion_enabled,
            promotion_rate_limit_mbps=state.promotion_rate_limit_mbps,
            memory_tiers=None if state.tiers is None else tuple(
                MemoryTier(tier=tier, nodes=tuple(nodes))
                for tier, nodes in state.tiers),
            far_nodes=tuple(sorted(far_nodes)), promotes=verdict.promotes,
            demotes=verdict.demotes, state=verdict.state,
            problems=tuple(p.code for p in verdict.problems), rates=rates,
            node_rates=dict(node_rates or {}), cgroup=state.cgroup,
            demotes_bound_memory=verdict.demotes_bound_memory), verdict

    def settings(self):
        """The :class:`tiering.State` the object records."""
        return core_tiering.State(
            kernel=self.kernel, numa_balancing=self.numa_balancing,
            demotion_enabled=self.demotion_enabled,
            promotion_rate_limit_mbps=self.promotion_rate_limit_mbps,
            tiers=None if self.memory_tiers is None else tuple(
                (t.tier, tuple(t.nodes)) for t in self.memory_tiers),
            cgroup=self.cgroup)

    def verdict(self, cpu_nodes):
        """The settings judged again: the problems with their fixes."""
        return core_tiering.judge(self.settings(), cpu_nodes,
                                  self.far_nodes)

    def lagging(self):
        """:func:`tiering.lagging` of the host-wide rates; [] without."""
        return core_tiering.lagging(self.rates or {})


@dataclasses.dataclass(frozen=True)
class Observation(_Section):
    """One document: one host, one window."""

    hostname: str = _key(_text())
    # The start of the window (STARTED_FORMAT).
    started: str = _key(_started)
    window_s: float = _key(_number(nullable=False))
    # None without a host profile.
    profile: Profile = _key(_object(Profile))
    nodes: tuple = _key(_objects(Node), default=tuple)
    instances: tuple = _key(_objects(Instance, required=True),
                            default=tuple)
    host: Host = _key(_object(Host, empty=Host), default=Host)
    far_memory: FarMemory = _key(_object(FarMemory, empty=FarMemory),
                                 default=FarMemory)
    # The kernel's tiering (a version-1 extension); None where not read.
    tiering: Tiering = _key(_object(Tiering))
    gaps: tuple = document.key(_texts, default_factory=tuple, missing=[])

    optional = ('tiering',)

    def to_dict(self):
        return dict({'schema': SCHEMA}, **super().to_dict())

    @property
    def started_time(self):
        """``started`` in seconds since the epoch."""
        return float(calendar.timegm(time.strptime(self.started,
                                                   STARTED_FORMAT)))

    @property
    def cpuless_nodes(self):
        """The ids of the NUMA nodes without CPUs (the far tier)."""
        return frozenset(n.id for n in self.nodes if not n.cpus)

    @property
    def cpu_nodes(self):
        """The ids of the NUMA nodes with CPUs."""
        return frozenset(n.id for n in self.nodes if n.cpus)


def format_started(seconds):
    """Seconds since the epoch as ``started`` (UTC, whole seconds)."""
    return time.strftime(STARTED_FORMAT, time.gmtime(seconds))


def parse(data, source):
    """Read a document (the JSON value) into an :class:`Observation`.

    Every key the format names is checked; keys it does not name are
    ignored (a later version 1 may add some), and a key that files of an
    earlier version 1 lack reads as null.

    :raises ObservationError: naming the file and the key.
    """
    return Observation.from_document(data, source, SCHEMA)


def checked(doc, source):
    """``doc`` as every reader reads it: what a writer may write.

    :raises ObservationError: when it is not.
    """
    return parse(doc.to_dict(), source)


def dumps(doc):
    """The JSON text of a document, as ``nova-pmem-observe`` writes it."""
    return json.dumps(doc.to_dict(), indent=2) + '\n'


def dumps_yaml(doc):
    """The same document as YAML (``-f yaml``): the keys in that order."""
    return document.yaml_text(doc.to_dict())


def read(path):
    """Read and check one observation file."""
    data = document.read_json(path, ObservationError)
    return parse(data, path)


def load(directory):
    """Every ``*.json`` observation of ``directory``, in file-name order.

    :raises ObservationError: on the first bad file, or when the directory
        holds none.
    """
    paths = document.json_files(directory, ObservationError, 'observation')
    return [read(path) for path in paths]
