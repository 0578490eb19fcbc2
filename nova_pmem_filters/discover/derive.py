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
"""From the tools' outputs to the host profile of host-profile-format.rst.

Rules (doc/source/discovery.rst repeats them for operators):

- No PMem modules (or ipmctl refused us and ndctl lists no region): mode
  ``dram``, with a note.
- Otherwise the PMem capacity ipmctl reports as volatile (Memory Mode) and
  App Direct gives ``memory_mode_percent``: 100 is ``memory_mode``, 0 is
  ``app_direct``, anything between is ``mixed`` (scheduled as
  ``memory_mode``, the conservative choice: the host's DRAM is a cache).
- ``dram_cache_gb`` is the DDR ipmctl reports as cache; ipmctl reports DDR
  per platform only, so each socket gets an equal share of it.
- Regions, namespaces and their sizes are what ndctl reports.
- With ``--numa`` (:func:`add_numa`): each NUMA node's sockets, DRAM,
  Memory-Mode cache, regions and namespaces. A socket's node is the
  ``numa_node`` ndctl gives its region, else its socket id (ndctl lists no
  region in Memory Mode); a namespace's node is its own ``numa_node``.
"""

import collections
import dataclasses
import json
import re

from nova_pmem_filters.core.formats import hostfile
from nova_pmem_filters.core.grammars import errors
from nova_pmem_filters.core.grammars import ipmctl
from nova_pmem_filters.core.grammars import ndctl
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import placement
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters.discover import runner as runner_files

GIB = 2 ** 30
# The type of the modules ipmctl lists.
PMEM = 'pmem'

# What ipmctl reports of a host with PMem modules.
Ipmctl = collections.namedtuple('Ipmctl', 'dimms resources regions sockets')


def _gb(value):
    return round(float(value), 2)


def _meminfo_gib(text):
    match = re.search(r'^MemTotal:\s+([0-9]+)\s+kB', text or '', re.M)
    if not match:
        return None
    return int(match.group(1)) / 2.0 ** 20


def discover(runner, hostname=None, pmem_tools_optional=False):
    """Run (or read) the tools and return the profile.

    :param pmem_tools_optional: a host without ``ndctl`` or ``ipmctl`` has
        no PMem (``--cxl``: a CXL-only host needs neither), rather than
        that being an error.
    :returns: a :class:`hostfile.Document`.
    """
    notes = []
    hostname = hostname or runner.hostname() or 'localhost'
    ndctl_regions, namespaces = _ndctl(runner, pmem_tools_optional, notes)
    dimm_out = _ipmctl_dimms(runner, pmem_tools_optional, ndctl_regions,
                             notes)
    if dimm_out is None or not _pmem_modules(dimm_out, ndctl_regions,
                                             notes):
        return _dram_profile(runner, hostname, notes, namespaces)
    return _pmem_profile(runner, hostname, notes, _ipmctl(runner, dimm_out),
                         ndctl_regions, namespaces)


def _ndctl(runner, optional, notes):
    """ndctl's (regions, namespaces); none when it is optional and absent."""
    try:
        return ndctl.parse(runner.run('ndctl'))
    except errors.ToolNotFound:
        if not optional:
            raise
        notes.append('ndctl is not installed: no PMem region')
        return [], []


def _ipmctl_dimms(runner, optional, ndctl_regions, notes):
    """ipmctl's module listing; None when it is optional and absent.

    ndctl regions without ipmctl are an error: PMem we cannot describe.
    """
    try:
        return runner.run('dimm')
    except errors.ToolNotFound:
        if not optional:
            raise
        if ndctl_regions:
            raise errors.DiscoveryError(
                'ndctl lists PMem regions (%s) but ipmctl is not installed:'
                ' install the ipmctl package'
                % ', '.join(r['dev'] for r in ndctl_regions))
        notes.append('ipmctl is not installed: no Optane PMem')
        return None


def _pmem_modules(dimm_out, ndctl_regions, notes):
    """Whether ipmctl lists PMem modules we may read.

    No modules, or no access and no region ndctl lists, is a ``dram`` host
    with a note; no access while ndctl lists regions is an error.
    """
    state = ipmctl.classify(dimm_out)
    if state == ipmctl.OK:
        return True
    first = ipmctl._first_line(dimm_out.text)
    if state == ipmctl.NO_ACCESS and ndctl_regions:
        raise errors.DiscoveryError(
            '%s: no access to the PMem modules (run as root): %s'
            % (dimm_out.source, first))
    notes.append('no PMem modules found (ipmctl: %s)' % first
                 if state == ipmctl.NO_MODULES else
                 'no access to PMem modules and ndctl lists no region '
                 '(ipmctl: %s)' % first)
    return False


def _ipmctl(runner, dimm_out):
    """The modules, memory resources, regions and sockets ipmctl lists."""
    dimms = ipmctl.dimms(dimm_out)
    found = {}
    for key, parse in (('memoryresources', ipmctl.memory_resources),
                       ('region', ipmctl.regions),
                       ('socket', ipmctl.sockets)):
        output = runner.run(key)
        ipmctl.classify(output)
        found[key] = parse(output)
    return Ipmctl(dimms=dimms, resources=found['memoryresources'],
                  regions=found['region'],
                  sockets=sorted(set(found['socket'])
                                 | {d['socket'] for d in dimms}))


def _pmem_profile(runner, hostname, notes, ipm, ndctl_regions, namespaces):
    mm_gb = ipm.resources['volatile_pmem']
    ad_gb = ipm.resources['appdirect_pmem']
    pmem_gb = sum(d['capacity_gb'] for d in ipm.dimms)
    mode, percent = _mode(mm_gb, ad_gb, notes)
    dram_gb = _dram_gb(ipm.resources, runner, notes)
    cache_gb = _cache_gb(ipm.resources, mm_gb, dram_gb)
    notes.extend(_region_notes(ipm.regions, ndctl_regions, ad_gb))
    socket_of_region = _socket_of_region(ipm.regions, ndctl_regions)
    return _document(
        hostname, mode, percent, dram_gb=dram_gb, pmem_gb=pmem_gb,
        visible_gb=_visible_gb(ipm.resources, mm_gb, dram_gb),
        cache_gb=cache_gb, ad_gb=ad_gb,
        sockets=_sockets(ipm.sockets, ipm.dimms, ipm.regions, ndctl_regions,
                         dram_gb, cache_gb, mm_gb, pmem_gb),
        dimms=[hostfile.DimmEntry(id=d['id'], socket=d['socket'], type=PMEM,
                                  capacity_gb=_gb(d['capacity_gb']))
               for d in ipm.dimms],
        regions=[_region(r, socket_of_region) for r in ndctl_regions],
        namespaces=[_namespace(n) for n in namespaces], notes=notes)


def _document(hostname, mode, percent, dram_gb, pmem_gb, visible_gb,
              cache_gb, ad_gb, sockets=(), dimms=(), regions=(),
              namespaces=(), notes=()):
    """The profile of the exact sizes worked out.

    Rounded to 0.01 GB here; the near memory in whole MB of the exact size.
    """
    kind = kinds.scheduler_kind(mode)
    return hostfile.Document(
        hostname=hostname, mode=mode,
        scheduler_mode=kind, memory_mode_percent=percent,
        dram_gb=_gb(dram_gb), pmem_gb=_gb(pmem_gb),
        visible_memory_gb=_gb(visible_gb), dram_cache_gb=_gb(cache_gb),
        app_direct_gb=_gb(ad_gb), sockets=sockets, dimms=dimms,
        regions=regions, namespaces=namespaces, notes=notes,
        near_memory_mb=placement.host_near_memory_mb(
            profile.near_memory_gb(kind, dram_gb, cache_gb)))


def _mode(mm_gb, ad_gb, notes):
    """(hardware mode, memory_mode_percent) of ipmctl's MM and AD capacity."""
    if mm_gb + ad_gb <= 0:
        notes.append('PMem modules are installed but not provisioned '
                     '(no Memory Mode or App Direct capacity)')
        return kinds.DRAM, 0
    percent = int(round(100.0 * mm_gb / (mm_gb + ad_gb)))
    if mm_gb <= 0:
        return kinds.APP_DIRECT, percent
    if ad_gb <= 0:
        return kinds.MEMORY_MODE, percent
    # A tiny share still rounds to a partial mode, never to 0/100.
    percent = min(max(percent, 1), 99)
    notes.append('partial Memory Mode: %d%% of the PMem capacity is memory, '
                 'the rest App Direct' % percent)
    return kinds.MIXED, percent


def _dram_gb(resources, runner, notes):
    """Installed DDR: ipmctl's, else /proc/meminfo's MemTotal.

    ipmctl's DDR ``Physical``, unless it is less than the ``Volatile`` and
    ``Cache`` DDR of the same output, which it holds: ipmctl 02.00.00.3716
    and later compute DDR ``Inaccessible`` as Physical - Volatile - Cache
    unchecked, and print about 2^34 GiB when Physical is wrongly 0. Then
    Volatile and Cache are the size, and a note says why. Without any DDR
    figure, MemTotal; without that either, no profile (a host without
    DRAM is not one).
    """
    physical = resources.get('physical_ddr')
    held = ((resources.get('volatile_ddr') or 0.0)
            + (resources.get('cache_ddr') or 0.0))
    if physical is not None and physical >= held and physical > 0:
        return physical
    if held > 0:
        if physical is not None:
            notes.append(
                'ipmctl reports DDR Physical %.3f GiB, less than the %.3f '
                'GiB of its DDR Volatile and Cache (an ipmctl fault: its '
                'DDR Inaccessible is then Physical - Volatile - Cache '
                'wrapped around); DRAM size is Volatile + Cache'
                % (physical, held))
        return held
    dram_gb = _meminfo_gib(runner.meminfo())
    if dram_gb is None:
        raise errors.DiscoveryError(
            'no DRAM size: ipmctl show -memoryresources reports no DDR '
            'capacity and there is no MemTotal in /proc/meminfo (with '
            '--from DIR: DIR/%s)' % runner_files.MEMINFO_FILE)
    notes.append('ipmctl reports no DDR capacity; DRAM size is '
                 'MemTotal of /proc/meminfo')
    return dram_gb


def _cache_gb(resources, mm_gb, dram_gb):
    """The Memory-Mode cache; none without Memory Mode.

    The DDR ipmctl reports as cache (all of it when it does not say).
    """
    if mm_gb <= 0:
        return 0.0
    cache_gb = resources.get('cache_ddr')
    return dram_gb if cache_gb is None else cache_gb


def _visible_gb(resources, mm_gb, dram_gb):
    """What the OS sees as memory: volatile DDR and Memory-Mode PMem."""
    volatile = resources.get('volatile_ddr')
    if volatile is None:
        volatile = 0.0 if mm_gb > 0 else dram_gb
    return volatile + mm_gb


def _region_notes(ipm_regions, ndctl_regions, ad_gb):
    notes = []
    if any(r['iset_id'] is not None for r in ipm_regions):
        for region in ndctl_regions:
            if region['iset_id'] is None:
                notes.append(
                    'ndctl gives %s no usable interleave set id (ndctl 73 '
                    'to 78 print 0x7fffffffffffffff with -u); its socket '
                    'is its NUMA node (%s)'
                    % (region['dev'], region['numa_node']))
    if ad_gb > 0 and not ndctl_regions:
        notes.append('ipmctl reports App Direct capacity but ndctl lists '
                     'no region (is the nvdimm driver loaded?)')
    return notes


def _dram_profile(runner, hostname, notes, namespaces):
    dram_gb = _meminfo_gib(runner.meminfo())
    if dram_gb is None:
        # Unknown is not 0 GB: no profile rather than a host without DRAM.
        raise errors.DiscoveryError(
            'no DRAM size: no MemTotal in /proc/meminfo (with --from DIR: '
            'DIR/%s)' % runner_files.MEMINFO_FILE)
    notes.append('DRAM size is MemTotal of /proc/meminfo')
    if namespaces:
        notes.append('ndctl lists namespaces but no PMem module was found')
    return _document(hostname, kinds.DRAM, 0, dram_gb=dram_gb, pmem_gb=0.0,
                     visible_gb=dram_gb, cache_gb=0.0, ad_gb=0.0,
                     notes=notes)


def _socket_of_region(ipm_regions, ndctl_regions):
    """ndctl region dev -> socket: by interleave set id, else NUMA node."""
    by_iset = {r['iset_id']: r['socket'] for r in ipm_regions
               if r['iset_id'] is not None}
    result = {}
    for region in ndctl_regions:
        socket = by_iset.get(region['iset_id'])
        if socket is None:
            # One NUMA node per socket (sub-NUMA clustering off).
            socket = region['numa_node']
        result[region['dev']] = socket
    return result


def _sockets(socket_ids, dimms, ipm_regions, ndctl_regions, dram_gb,
             cache_gb, mm_gb, pmem_gb):
    numa_of_socket = {}
    by_iset = {r['iset_id']: r['socket'] for r in ipm_regions
               if r['iset_id'] is not None}
    for region in ndctl_regions:
        socket = by_iset.get(region['iset_id'])
        if socket is not None and region['numa_node'] is not None:
            numa_of_socket[socket] = region['numa_node']
    count = len(socket_ids) or 1
    result = []
    for socket in socket_ids:
        mine = [d for d in dimms if d['socket'] == socket]
        s_pmem = sum(d['capacity_gb'] for d in mine)
        if mine and all(d['memory_gb'] is not None for d in mine):
            s_mm = sum(d['memory_gb'] for d in mine)
        else:
            s_mm = mm_gb * s_pmem / pmem_gb if pmem_gb else 0.0
        s_regions = [r for r in ipm_regions if r['socket'] == socket]
        if s_regions:
            s_ad = sum(r['capacity_gb'] for r in s_regions)
        else:
            s_ad = sum(d['app_direct_gb'] or 0.0 for d in mine)
        result.append(hostfile.SocketEntry(
            socket=socket,
            numa_node=numa_of_socket.get(socket, socket),
            dram_gb=_gb(dram_gb / count),
            pmem_gb=_gb(s_pmem),
            memory_mode_gb=_gb(s_mm),
            app_direct_gb=_gb(s_ad),
            dram_cache_gb=_gb(cache_gb / count if s_mm > 0 else 0.0)))
    return result


def _region(region, socket_of_region):
    return hostfile.RegionEntry(
        id=region['dev'],
        socket=socket_of_region.get(region['dev']),
        numa_node=region['numa_node'],
        size_gb=_gb(region['size'] / GIB),
        available_gb=_gb(region['available_size'] / GIB))


def _namespace(ns):
    return hostfile.NamespaceEntry(
        name=ns['name'],
        dev=ns['dev'],
        mode=ns['mode'],
        region=ns['region'],
        numa_node=ns['numa_node'],
        size_gb=_gb(ns['size'] / GIB),
        chardev=ns['chardev'],
        blockdev=ns['blockdev'],
        align=ns['align'])


# --- CPUs (lscpu -J) -------------------------------------------------------

_LSCPU_FIELDS = {'CPU(s):': 'cpus', 'Socket(s):': 'sockets',
                 'Core(s) per socket:': 'cores_per_socket',
                 'Thread(s) per core:': 'threads_per_core'}


def _lscpu_fields(entries, found):
    # util-linux 2.38 and later nest fields under "Vendor ID" and "Model
    # name" as children; older ones print a flat list.
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        key = _LSCPU_FIELDS.get(entry.get('field'))
        if key and key not in found:
            found[key] = entry.get('data')
        if isinstance(entry.get('children'), list):
            _lscpu_fields(entry['children'], found)


def parse_lscpu(output):
    """{vcpus, sockets, cores_per_socket, threads_per_core} of lscpu -J.

    :raises DiscoveryError: naming the file and field that is missing or
        not a positive integer.
    """
    source = output.source
    if output.returncode != 0:
        first = output.text.strip().splitlines()
        raise errors.DiscoveryError('%s: exit status %d: %s' % (
            source, output.returncode, first[0][:200] if first
            else 'no output'))
    try:
        data = json.loads(output.text)
    except ValueError as exc:
        raise errors.DiscoveryError('%s: not valid JSON (%s)'
                                    % (source, exc))
    if not isinstance(data, dict) or not isinstance(data.get('lscpu'),
                                                    list):
        raise errors.DiscoveryError('%s: not lscpu -J output (no "lscpu" '
                                    'list)' % source)
    found = {}
    _lscpu_fields(data['lscpu'], found)
    result = {}
    for field, key in _LSCPU_FIELDS.items():
        value = found.get(key)
        if not (isinstance(value, str) and value.strip().isdigit()
                and int(value) > 0):
            raise errors.DiscoveryError(
                '%s: "%s" is %s, expected a positive integer'
                % (source, field, json.dumps(value)))
        result[key] = int(value)
    return {'vcpus': result['cpus'], 'sockets': result['sockets'],
            'cores_per_socket': result['cores_per_socket'],
            'threads_per_core': result['threads_per_core']}


def add_cpus(prof, runner):
    """``prof`` with ``vcpus`` and ``cpus`` (lscpu -J) where known."""
    output = runner.run_optional('lscpu')
    if output is None:
        # A --from DIR saved before lscpu was read (or no util-linux).
        return prof
    cpus = parse_lscpu(output)
    return dataclasses.replace(prof, vcpus=cpus.pop('vcpus'),
                               cpus=hostfile.Cpus(**cpus))


# --- NUMA nodes (--numa) ----------------------------------------------------

EVEN_SPLIT_NOTE = ('ipmctl reports DDR per platform only: each NUMA node\'s '
                   'DRAM and Memory-Mode cache is an even share of the '
                   'host\'s')


def split_exact(total_gb, weights):
    """``total_gb`` over ``weights`` ({key: weight}) in hundredths of a GB.

    The parts sum to ``total_gb`` (rounded to 0.01 as the profile rounds
    it) exactly: the largest remainders get the leftover hundredths.
    """
    total = int(round(total_gb * 100))
    weight_sum = float(sum(weights.values()))
    if not weights or weight_sum <= 0:
        return {}
    shares = {k: total * w / weight_sum for k, w in weights.items()}
    parts = {k: int(v) for k, v in shares.items()}
    leftover = total - sum(parts.values())
    for key in sorted(shares, key=lambda k: (parts[k] - shares[k], k)):
        if leftover <= 0:
            break
        parts[key] += 1
        leftover -= 1
    return {k: v / 100.0 for k, v in parts.items()}


def cell_cache(prof):
    """{NUMA node: GB of DRAM cache}, summing to ``dram_cache_gb``.

    Only nodes whose socket has Memory-Mode PMem hold cache; ipmctl gives
    DDR per platform, so those sockets share the cache evenly.
    """
    if not prof.dram_cache_gb:
        return {}
    cached = [s for s in prof.sockets if s.memory_mode_gb > 0]
    if not cached:
        # No per-socket split known: the whole cache on the sockets seen.
        cached = prof.sockets
    if not cached:
        return {}
    weights = {}
    for sock in cached:
        weights[sock.numa_node] = weights.get(sock.numa_node, 0) + 1
    return split_exact(prof.dram_cache_gb, weights)


def add_numa(prof):
    """``prof`` with the per-NUMA-node listing.

    Additive fields of host-profile-format.rst: ``numa_nodes``,
    ``dram_cache_gb_per_cell`` and each namespace's ``socket``.
    """
    section = hostfile.given(prof.cxl)
    if section and section.kind:
        return _add_cxl_numa(prof, section)
    socket_of_region = {r.id: r.socket for r in prof.regions}
    namespaces = [dataclasses.replace(ns, socket=socket_of_region.get(
        ns.region)) for ns in prof.namespaces]
    cache = cell_cache(prof)
    nodes = ({s.numa_node for s in prof.sockets}
             | {r.numa_node for r in prof.regions}
             | {n.numa_node for n in namespaces})
    nodes.discard(None)
    dram = split_exact(prof.dram_gb, {
        node: sum(1 for s in prof.sockets if s.numa_node == node)
        for node in nodes}) if prof.sockets else {}
    listing = []
    for node in sorted(nodes):
        mine = [s for s in prof.sockets if s.numa_node == node]
        listing.append(hostfile.NumaNodeEntry(
            numa_node=node,
            sockets=[s.socket for s in mine],
            dram_gb=dram.get(node, 0.0),
            dram_cache_gb=cache.get(node, 0.0),
            memory_mode_gb=_gb(sum(s.memory_mode_gb for s in mine)),
            app_direct_gb=_gb(sum(s.app_direct_gb for s in mine)),
            regions=[r.id for r in prof.regions if r.numa_node == node],
            namespaces=[n.dev for n in namespaces if n.numa_node == node]))
    notes = list(prof.notes)
    unplaced = [n.dev for n in namespaces if n.numa_node is None]
    if unplaced:
        notes.append('ndctl gives no numa_node for %s (run with --verbose)'
                     % ', '.join(unplaced))
    if len(prof.sockets) > 1:
        notes.append(EVEN_SPLIT_NOTE)
    return dataclasses.replace(
        prof, namespaces=namespaces, notes=notes, numa_nodes=listing,
        dram_cache_gb_per_cell=(profile.format_cell_cache(cache)
                                if cache else None))


def cxl_cell_near(prof):
    """{NUMA node with CPUs: near memory GB} of a tiered CXL host, else {}.

    Nova's libvirt driver reports every NUMA node as a cell, the CPU-less
    ones with no CPUs; an instance's NUMA cell needs CPUs, so it never
    lands on those, and only the nodes with CPUs bound hot RAM.
    """
    section = hostfile.given(prof.cxl)
    if not section or section.kind not in kinds.TIERED:
        return {}
    return {n.numa_node: n.near_memory_gb for n in section.numa_nodes
            if n.cpus and n.near_memory_gb > 0}


def _add_cxl_numa(prof, section):
    cache = cxl_cell_near(prof)
    return dataclasses.replace(prof, numa_nodes=[hostfile.NumaNodeEntry(
        numa_node=node.numa_node, sockets=[], dram_gb=node.near_memory_gb,
        dram_cache_gb=cache.get(node.numa_node, 0.0), memory_mode_gb=0.0,
        app_direct_gb=0.0, regions=[], namespaces=[])
        for node in section.numa_nodes],
        dram_cache_gb_per_cell=(profile.format_cell_cache(cache)
                                if cache else None))
