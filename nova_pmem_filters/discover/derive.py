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

import json
import math
import re

from nova_pmem_filters.core import hostfile
from nova_pmem_filters.core import kinds
from nova_pmem_filters.core import profile
from nova_pmem_filters.discover import errors
from nova_pmem_filters.discover import ipmctl
from nova_pmem_filters.discover import ndctl

GIB = 2 ** 30


def _gb(value):
    return round(float(value), 2)


def near_memory_mb(gib):
    """Whole MiB of an exact GiB figure (Placement's CUSTOM_NEAR_MEMORY_MB).

    From the unrounded size: the profile's GB figures are rounded to 0.01
    GB, up to 5 MB off.
    """
    return int(math.floor(float(gib) * 1024 + 1e-6))


def _meminfo_gib(text):
    match = re.search(r'^MemTotal:\s+([0-9]+)\s+kB', text or '', re.M)
    if not match:
        return None
    return int(match.group(1)) / 2.0 ** 20


def discover(runner, hostname=None, pmem_tools_optional=False):
    """Run (or read) the tools and return the profile as a dict.

    :param pmem_tools_optional: a host without ``ndctl`` or ``ipmctl`` has
        no PMem (``--cxl``: a CXL-only host needs neither), rather than
        that being an error.
    """
    notes = []
    hostname = hostname or runner.hostname() or 'localhost'
    try:
        ndctl_regions, namespaces = ndctl.parse(runner.run('ndctl'))
    except errors.ToolNotFound:
        if not pmem_tools_optional:
            raise
        ndctl_regions, namespaces = [], []
        notes.append('ndctl is not installed: no PMem region')

    try:
        dimm_out = runner.run('dimm')
    except errors.ToolNotFound:
        if not pmem_tools_optional:
            raise
        if ndctl_regions:
            raise errors.DiscoveryError(
                'ndctl lists PMem regions (%s) but ipmctl is not installed:'
                ' install the ipmctl package'
                % ', '.join(r['dev'] for r in ndctl_regions))
        notes.append('ipmctl is not installed: no Optane PMem')
        return _dram_profile(runner, hostname, notes, namespaces)
    state = ipmctl.classify(dimm_out)
    if state == ipmctl.NO_ACCESS and ndctl_regions:
        raise errors.DiscoveryError(
            '%s: no access to the PMem modules (run as root): %s'
            % (dimm_out.source, ipmctl._first_line(dimm_out.text)))
    if state != ipmctl.OK:
        notes.append('no PMem modules found (ipmctl: %s)'
                     % ipmctl._first_line(dimm_out.text)
                     if state == ipmctl.NO_MODULES else
                     'no access to PMem modules and ndctl lists no region '
                     '(ipmctl: %s)' % ipmctl._first_line(dimm_out.text))
        return _dram_profile(runner, hostname, notes, namespaces)

    dimms = ipmctl.dimms(dimm_out)
    mem_out = runner.run('memoryresources')
    ipmctl.classify(mem_out)
    resources = ipmctl.memory_resources(mem_out)
    region_out = runner.run('region')
    ipmctl.classify(region_out)
    ipm_regions = ipmctl.regions(region_out)
    socket_out = runner.run('socket')
    ipmctl.classify(socket_out)
    socket_ids = sorted(set(ipmctl.sockets(socket_out))
                        | {d['socket'] for d in dimms})

    mm_gb = resources['volatile_pmem']
    ad_gb = resources['appdirect_pmem']
    pmem_gb = sum(d['capacity_gb'] for d in dimms)
    if mm_gb + ad_gb <= 0:
        notes.append('PMem modules are installed but not provisioned '
                     '(no Memory Mode or App Direct capacity)')
        mode = kinds.DRAM
        percent = 0
    else:
        percent = int(round(100.0 * mm_gb / (mm_gb + ad_gb)))
        if mm_gb <= 0:
            mode = kinds.APP_DIRECT
        elif ad_gb <= 0:
            mode = kinds.MEMORY_MODE
        else:
            mode = kinds.MIXED
            # A tiny share still rounds to a partial mode, never to 0/100.
            percent = min(max(percent, 1), 99)
            notes.append('partial Memory Mode: %d%% of the PMem capacity '
                         'is memory, the rest App Direct' % percent)

    dram_gb = resources.get('physical_ddr')
    if dram_gb is None:
        dram_gb = ((resources.get('volatile_ddr') or 0.0)
                   + (resources.get('cache_ddr') or 0.0))
    if not dram_gb:
        dram_gb = _meminfo_gib(runner.meminfo()) or 0.0
        notes.append('ipmctl reports no DDR capacity; DRAM size is '
                     'MemTotal of /proc/meminfo')
    if mm_gb > 0:
        cache_gb = resources.get('cache_ddr')
        if cache_gb is None:
            cache_gb = dram_gb
    else:
        cache_gb = 0.0
    volatile = resources.get('volatile_ddr')
    if volatile is None:
        volatile = 0.0 if mm_gb > 0 else dram_gb
    visible_gb = volatile + mm_gb

    sockets = _sockets(socket_ids, dimms, ipm_regions, ndctl_regions,
                       dram_gb, cache_gb, mm_gb, pmem_gb)
    socket_of_region = _socket_of_region(ipm_regions, ndctl_regions)
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
    return {
        'schema': hostfile.SCHEMA,
        'hostname': hostname,
        'mode': mode,
        'scheduler_mode': kinds.scheduler_kind(mode),
        'memory_mode_percent': percent,
        'dram_gb': _gb(dram_gb),
        'pmem_gb': _gb(pmem_gb),
        'visible_memory_gb': _gb(visible_gb),
        'dram_cache_gb': _gb(cache_gb),
        'app_direct_gb': _gb(ad_gb),
        'sockets': sockets,
        'dimms': [{'id': d['id'], 'socket': d['socket'], 'type': 'pmem',
                   'capacity_gb': _gb(d['capacity_gb'])} for d in dimms],
        'regions': [_region(r, socket_of_region) for r in ndctl_regions],
        'namespaces': [_namespace(n) for n in namespaces],
        'notes': notes,
        'near_memory_mb': near_memory_mb(
            cache_gb if kinds.scheduler_kind(mode) in kinds.TIERED
            else dram_gb),
    }


def _dram_profile(runner, hostname, notes, namespaces):
    dram_gb = _meminfo_gib(runner.meminfo())
    if dram_gb is None:
        dram_gb = 0.0
        notes.append('DRAM size unknown (no MemTotal in /proc/meminfo)')
    else:
        notes.append('DRAM size is MemTotal of /proc/meminfo')
    if namespaces:
        notes.append('ndctl lists namespaces but no PMem module was found')
    return {
        'schema': hostfile.SCHEMA,
        'hostname': hostname,
        'mode': kinds.DRAM,
        'scheduler_mode': kinds.DRAM,
        'memory_mode_percent': 0,
        'dram_gb': _gb(dram_gb),
        'pmem_gb': 0.0,
        'visible_memory_gb': _gb(dram_gb),
        'dram_cache_gb': 0.0,
        'app_direct_gb': 0.0,
        'sockets': [],
        'dimms': [],
        'regions': [],
        'namespaces': [],
        'notes': notes,
        'near_memory_mb': near_memory_mb(dram_gb),
    }


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
        result.append({
            'socket': socket,
            'numa_node': numa_of_socket.get(socket, socket),
            'dram_gb': _gb(dram_gb / count),
            'pmem_gb': _gb(s_pmem),
            'memory_mode_gb': _gb(s_mm),
            'app_direct_gb': _gb(s_ad),
            'dram_cache_gb': _gb(cache_gb / count if s_mm > 0 else 0.0),
        })
    return result


def _region(region, socket_of_region):
    return {
        'id': region['dev'],
        'socket': socket_of_region.get(region['dev']),
        'numa_node': region['numa_node'],
        'size_gb': _gb(region['size'] / GIB),
        'available_gb': _gb(region['available_size'] / GIB),
    }


def _namespace(ns):
    return {
        'name': ns['name'],
        'dev': ns['dev'],
        'mode': ns['mode'],
        'region': ns['region'],
        'numa_node': ns['numa_node'],
        'size_gb': _gb(ns['size'] / GIB),
        'chardev': ns['chardev'],
        'blockdev': ns['blockdev'],
        'align': ns['align'],
    }


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
    """Add ``vcpus`` and ``cpus`` (lscpu -J) to ``prof`` where known."""
    output = runner.run_optional('lscpu')
    if output is None:
        # A --from DIR saved before lscpu was read (or no util-linux).
        return prof
    cpus = parse_lscpu(output)
    prof['vcpus'] = cpus.pop('vcpus')
    prof['cpus'] = cpus
    return prof


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
    if not prof['dram_cache_gb']:
        return {}
    cached = [s for s in prof['sockets'] if s['memory_mode_gb'] > 0]
    if not cached:
        # No per-socket split known: the whole cache on the sockets seen.
        cached = prof['sockets']
    if not cached:
        return {}
    weights = {}
    for sock in cached:
        node = sock['numa_node']
        weights[node] = weights.get(node, 0) + 1
    return split_exact(prof['dram_cache_gb'], weights)


def add_numa(prof):
    """Add the per-NUMA-node listing to ``prof`` (in place) and return it.

    Additive fields of host-profile-format.rst: ``numa_nodes``,
    ``dram_cache_gb_per_cell`` and each namespace's ``socket``.
    """
    section = prof.get('cxl')
    if section and section['kind']:
        return _add_cxl_numa(prof, section)
    socket_of_region = {r['id']: r['socket'] for r in prof['regions']}
    for ns in prof['namespaces']:
        ns['socket'] = socket_of_region.get(ns['region'])
    cache = cell_cache(prof)
    nodes = ({s['numa_node'] for s in prof['sockets']}
             | {r['numa_node'] for r in prof['regions']}
             | {n['numa_node'] for n in prof['namespaces']})
    nodes.discard(None)
    listing = []
    dram = split_exact(prof['dram_gb'], {
        node: sum(1 for s in prof['sockets'] if s['numa_node'] == node)
        for node in nodes}) if prof['sockets'] else {}
    for node in sorted(nodes):
        mine = [s for s in prof['sockets'] if s['numa_node'] == node]
        listing.append({
            'numa_node': node,
            'sockets': [s['socket'] for s in mine],
            'dram_gb': dram.get(node, 0.0),
            'dram_cache_gb': cache.get(node, 0.0),
            'memory_mode_gb': _gb(sum(s['memory_mode_gb'] for s in mine)),
            'app_direct_gb': _gb(sum(s['app_direct_gb'] for s in mine)),
            'regions': [r['id'] for r in prof['regions']
                        if r['numa_node'] == node],
            'namespaces': [n['dev'] for n in prof['namespaces']
                           if n['numa_node'] == node],
        })
    unplaced = [n['dev'] for n in prof['namespaces']
                if n['numa_node'] is None]
    if unplaced:
        prof['notes'].append(
            'ndctl gives no numa_node for %s (run with --verbose)'
            % ', '.join(unplaced))
    if len(prof['sockets']) > 1:
        prof['notes'].append(EVEN_SPLIT_NOTE)
    prof['numa_nodes'] = listing
    prof['dram_cache_gb_per_cell'] = (profile.format_cell_cache(cache)
                                      if cache else None)
    return prof


def cxl_cell_near(prof):
    """{NUMA node with CPUs: near memory GB} of a tiered CXL host, else {}.

    Nova's libvirt driver reports every NUMA node as a cell, the CPU-less
    ones with no CPUs; an instance's NUMA cell needs CPUs, so it never
    lands on those, and only the nodes with CPUs bound hot RAM.
    """
    section = prof.get('cxl')
    if not section or section['kind'] not in kinds.TIERED:
        return {}
    return {n['numa_node']: n['near_memory_gb']
            for n in section['numa_nodes']
            if n['cpus'] and n['near_memory_gb'] > 0}


def _add_cxl_numa(prof, section):
    cache = cxl_cell_near(prof)
    prof['numa_nodes'] = [{
        'numa_node': node['numa_node'],
        'sockets': [],
        'dram_gb': node['near_memory_gb'],
        'dram_cache_gb': cache.get(node['numa_node'], 0.0),
        'memory_mode_gb': 0.0,
        'app_direct_gb': 0.0,
        'regions': [],
        'namespaces': [],
    } for node in section['numa_nodes']]
    prof['dram_cache_gb_per_cell'] = (profile.format_cell_cache(cache)
                                      if cache else None)
    return prof
