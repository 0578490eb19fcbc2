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
"""The host-profile file: what ``nova-pmem-discover`` writes, read back.

``nova-pmem-discover`` prints a host's profile as JSON
(``doc/source/host-profile-format.rst``) with :func:`dumps` or
:func:`write`; operators keep one file per host in a directory. The planner
(``fleet``, ``compare --fleet``, ``simulate --fleet``) and the doctor
(``--fleet``) read such directories through :func:`load`, so both accept and
refuse the same files with the same one-line messages, and see the same
scheduler profile (:meth:`DiscoveredHost.profile`).

This module imports nothing from Nova.
"""

import dataclasses
import glob
import json
import math
import os

from nova_pmem_filters.core import kinds
from nova_pmem_filters.core import profile
from nova_pmem_filters import fileutil

SCHEMA = 'nova-pmem-host-profile/1'
MIXED = kinds.MIXED
HARDWARE_MODES = kinds.HARDWARE_MODES


class ProfileError(ValueError):
    """A profile that cannot be used; the message names the file and key."""

    def __init__(self, source, path, rule):
        self.source = source
        self.path = list(path)
        self.rule = rule
        where = '.'.join(str(p) for p in path) or '(top level)'
        super().__init__(' '.join(('%s: %s: %s' % (source, where, rule))
                                  .splitlines()))


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

    def profile(self):
        """The scheduler's profile of the host, through its metadata."""
        return profile.build(self.mode, self.dram_cache_gb,
                             self.cell_cache_gb)

    def metadata(self):
        """The aggregate metadata of the host (``--aggregate`` prints it)."""
        return profile.metadata(self.mode, self.dram_cache_gb,
                                self.cell_cache_gb)

    @property
    def near_memory_gb(self):
        """The near memory Placement is told of; None if not known."""
        return profile.near_memory_gb(self.mode, self.dram_gb,
                                      self.dram_cache_gb)

    @property
    def traits(self):
        return kinds.traits(self.hardware_mode)


def _is_number(value):
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def _number(data, key, source, positive=False):
    if key not in data:
        raise ProfileError(source, [key], 'missing')
    value = data[key]
    if not _is_number(value) or value < 0 or (positive and value == 0):
        raise ProfileError(
            source, [key], 'expected a %s number of GB, got %s'
            % ('positive' if positive else 'non-negative',
               json.dumps(value)))
    return float(value)


def _text(data, key, source, allowed=None):
    if key not in data:
        raise ProfileError(source, [key], 'missing')
    value = data[key]
    if not isinstance(value, str) or not value.strip():
        raise ProfileError(source, [key], 'expected a non-empty string, '
                           'got %s' % json.dumps(value))
    if allowed is not None and value not in allowed:
        raise ProfileError(source, [key], '%s is not one of %s'
                           % (json.dumps(value), ', '.join(allowed)))
    return value


def _regions(data, source):
    regions = data.get('regions', [])
    if not isinstance(regions, list):
        raise ProfileError(source, ['regions'], 'expected a list')
    sizes = []
    for i, region in enumerate(regions):
        if not isinstance(region, dict):
            raise ProfileError(source, ['regions', i], 'expected an object')
        sizes.append(_number(region, 'size_gb', '%s: regions.%d'
                             % (source, i)))
    return tuple(sorted(sizes))


def _optional_text(item, key, where):
    value = item.get(key)
    if value is not None and (not isinstance(value, str) or not value):
        raise ProfileError(where, [key], 'expected a non-empty string or '
                           'null, got %s' % json.dumps(value))
    return value


def _namespaces(data, source):
    items = data.get('namespaces', [])
    if not isinstance(items, list):
        raise ProfileError(source, ['namespaces'], 'expected a list')
    found = []
    for i, item in enumerate(items):
        where = '%s: namespaces.%d' % (source, i)
        if not isinstance(item, dict):
            raise ProfileError(source, ['namespaces', i],
                               'expected an object')
        node = item.get('numa_node')
        if node is not None and (not isinstance(node, int)
                                 or isinstance(node, bool) or node < 0):
            raise ProfileError(where, ['numa_node'], 'expected a NUMA node '
                               'id (an integer >= 0) or null, got %s'
                               % json.dumps(node))
        found.append(Namespace(
            name=_optional_text(item, 'name', where),
            dev=_text(item, 'dev', where),
            mode=_text(item, 'mode', where),
            numa_node=node, size_gb=_number(item, 'size_gb', where)))
    return tuple(found)


def parse(data, source):
    """Check one host profile (a decoded JSON document).

    :raises ProfileError: naming ``source`` and the key.
    """
    if not isinstance(data, dict):
        raise ProfileError(source, [], 'expected a JSON object')
    if data.get('schema') != SCHEMA:
        raise ProfileError(source, ['schema'], 'expected %s, got %s'
                           % (json.dumps(SCHEMA),
                              json.dumps(data.get('schema'))))
    hostname = _text(data, 'hostname', source)
    hardware_mode = _text(data, 'mode', source, HARDWARE_MODES)
    mode = _text(data, 'scheduler_mode', source, kinds.ALL_MODES)
    visible = _number(data, 'visible_memory_gb', source, positive=True)
    cache = _number(data, 'dram_cache_gb', source)
    if mode in kinds.TIERED and not cache:
        raise ProfileError(source, ['dram_cache_gb'], 'a %s host needs a '
                           'positive DRAM cache, got %s'
                           % (mode, json.dumps(data['dram_cache_gb'])))
    cells = None
    if mode in kinds.TIERED:
        cells = _cell_cache(data, source, mode, cache)
    else:
        cache = 0.0
    dram = (_number(data, 'dram_gb', source) if 'dram_gb' in data
            else None)
    vcpus = data.get('vcpus')
    if vcpus is not None and not _positive_int(vcpus):
        raise ProfileError(source, ['vcpus'], 'expected a positive integer, '
                           'got %s' % json.dumps(vcpus))
    cpus = _cpus(data, source)
    if vcpus is None and cpus:
        vcpus = (cpus['sockets'] * cpus['cores_per_socket']
                 * cpus['threads_per_core'])
    regions = _regions(data, source) if mode == kinds.APP_DIRECT else ()
    # Namespaces matter where vPMEM goes: app_direct hosts.
    namespaces = (_namespaces(data, source) if mode == kinds.APP_DIRECT
                  else ())
    return DiscoveredHost(source=source, hostname=hostname,
                          hardware_mode=hardware_mode, mode=mode,
                          visible_memory_gb=visible, dram_cache_gb=cache,
                          dram_gb=dram, vcpus=vcpus, region_gb=regions,
                          namespaces=namespaces,
                          sockets=_socket_count(data, source),
                          cell_cache_gb=cells,
                          cell_ids=_cell_ids(data, cells))


def _positive_int(value):
    return isinstance(value, int) and not isinstance(value, bool) \
        and value >= 1


CPU_KEYS = ('sockets', 'cores_per_socket', 'threads_per_core')


def _cpus(data, source):
    """The optional ``cpus`` object (lscpu); None in older profiles."""
    cpus = data.get('cpus')
    if cpus is None:
        return None
    if not isinstance(cpus, dict):
        raise ProfileError(source, ['cpus'], 'expected an object')
    for key in CPU_KEYS:
        if not _positive_int(cpus.get(key)):
            raise ProfileError(source, ['cpus', key], 'expected a positive '
                               'integer, got %s' % json.dumps(cpus.get(key)))
    return cpus


def _socket_count(data, source):
    """How many sockets the host has; None if the profile does not say.

    ipmctl lists the sockets of an Optane host; a host without Optane
    lists none, and with ``--cxl`` its NUMA nodes with CPUs stand for them.
    """
    sockets = data.get('sockets', [])
    if not isinstance(sockets, list):
        raise ProfileError(source, ['sockets'], 'expected a list')
    if sockets:
        return len(sockets)
    section = data.get('cxl')
    nodes = section.get('numa_nodes') if isinstance(section, dict) else None
    if isinstance(nodes, list):
        return sum(1 for node in nodes
                   if isinstance(node, dict) and node.get('cpus')) or None
    return None


def _cell_ids(data, cells):
    """The ids of the NUMA nodes with CPUs, None if the profile lacks them.

    The per-cell key's nodes, else the sockets' nodes, else the CXL
    listing's nodes with CPUs.
    """
    if cells:
        return tuple(cell for cell, _gb in cells)
    nodes = {s.get('numa_node') for s in data.get('sockets') or ()
             if isinstance(s, dict)}
    if not nodes:
        section = data.get('cxl')
        listing = section.get('numa_nodes') if isinstance(section, dict) \
            else None
        nodes = {n.get('numa_node') for n in listing or ()
                 if isinstance(n, dict) and n.get('cpus')}
    nodes.discard(None)
    if not nodes or not all(isinstance(n, int) and not isinstance(n, bool)
                            for n in nodes):
        return None
    return tuple(sorted(nodes))


def _cell_cache(data, source, mode, cache_gb):
    """The per-cell near memory of a tiered host, as the scheduler reads."""
    raw = data.get('dram_cache_gb_per_cell')
    if raw is None:
        return None
    prof = profile.from_metadata([dict(
        profile.metadata(mode, cache_gb),
        **{profile.DRAM_CACHE_PER_CELL_KEY: raw})])
    if not prof.known:
        raise ProfileError(source, ['dram_cache_gb_per_cell'], prof.problem)
    return prof.cell_cache_gb


def read(path):
    """Read and check one profile file.

    :raises ProfileError: naming the file and, where it applies, the key.
    """
    try:
        with open(path, encoding='utf-8') as f:
            text = f.read()
    except OSError as exc:
        raise ProfileError(path, [], 'cannot read the file: %s'
                           % exc.strerror)
    except UnicodeDecodeError:
        raise ProfileError(path, [], 'not UTF-8 text')
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ProfileError(path, [], 'not valid JSON: %s' % exc)
    return parse(data, path)


def load(directory):
    """Every ``*.json`` profile of ``directory``, in file-name order.

    :raises ProfileError: on the first bad file, on a hostname given by two
        files and on a directory with no profile.
    """
    if not os.path.isdir(directory):
        raise ProfileError(directory, [], 'not a directory')
    paths = sorted(glob.glob(os.path.join(directory, '*.json')))
    if not paths:
        raise ProfileError(directory, [], 'no *.json host profile in the '
                           'directory')
    hosts = []
    seen = {}
    for path in paths:
        host = read(path)
        if host.hostname in seen:
            raise ProfileError(path, ['hostname'], '%s is also described by '
                               '%s' % (json.dumps(host.hostname),
                                       seen[host.hostname]))
        seen[host.hostname] = path
        hosts.append(host)
    return hosts


def dumps(prof):
    """The text of a host-profile file (``prof`` as discovery builds it)."""
    return json.dumps(prof, indent=2)


def write(path, prof):
    """Write a host-profile file atomically: the old file or the new.

    :raises ProfileError: naming ``path`` when it cannot be written.
    """
    try:
        fileutil.write_atomic(path, dumps(prof) + '\n')
    except OSError as exc:
        raise ProfileError(path, [], 'cannot write the file: %s'
                           % (exc.strerror or exc))
