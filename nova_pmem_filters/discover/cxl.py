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
"""CXL memory (``--cxl``): ``cxl list``, ``daxctl list`` and the NUMA nodes.

``cxl list --memdevs --regions --decoders`` prints ``[]`` on a host without
CXL, a bare object (with ``-u``) or a list when one kind is found, and a list
of ``{"memdevs": [...]}``, ``{"root decoders": [...]}``, ...  containers
when several are, with regions nested under their root decoder as
``"regions:decoder0.0"``. Objects are told apart by their first key:
``memdev``, ``decoder``, ``region``. ``daxctl list --devices`` prints
nothing, one object or a list. Sizes are integers, or ``-u`` strings such
as ``"256.00 GiB (274.88 GB)"``.

A dax device ``daxX.Y`` of a CXL RAM region ``regionX`` has the region's id
(drivers/dax/cxl.c allocates the dax region with the CXL region's id).

Host kind (doc/source/discovery.rst repeats the rules):

- NUMA nodes without CPUs that hold memory, on a host with CXL RAM:
  ``cxl_kmem``: near memory is the nodes with CPUs, far memory the CPU-less
  nodes.
- Else CXL dax devices in ``devdax`` mode: ``cxl_devdax``; near = visible =
  the nodes with CPUs, far memory the devdax devices.
- Else CXL RAM decoded by committed endpoint decoders (or RAM regions) but
  no dax device and no CPU-less node: the firmware put it into the nodes
  with CPUs, ``cxl_flat`` (Xeon 6 flat memory mode); far memory is the
  decoded CXL RAM, near memory what the nodes hold beyond it.
- Else no CXL memory in use: the host keeps its kind (``dram``), with a
  note when CXL devices are present but not provisioned.
"""

import json
import re

from nova_pmem_filters.core import kinds
from nova_pmem_filters.discover import derive
from nova_pmem_filters.discover import errors

GIB = 2 ** 30
KIB_PER_GIB = 2 ** 20

_HUMAN_RE = re.compile(
    r'^([0-9]+(?:\.[0-9]+)?)\s*(B|KiB|MiB|GiB|TiB)(?:\s*\(.*\))?$')
_UNITS = {'B': 1, 'KiB': 2 ** 10, 'MiB': 2 ** 20, 'GiB': 2 ** 30,
          'TiB': 2 ** 40}
_DAX_RE = re.compile(r'^dax([0-9]+)\.([0-9]+)$')
_REGION_RE = re.compile(r'^region([0-9]+)$')
_CPULIST_RE = re.compile(r'^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$')
_MEMTOTAL_RE = r'^Node\s+%d\s+MemTotal:\s+([0-9]+)\s+kB\s*$'
SYSTEM_RAM = 'system-ram'
DEVDAX = 'devdax'


def _gb(value):
    return round(float(value), 2)


def _fail(source, what):
    raise errors.DiscoveryError('%s: %s' % (source, what))


def _name(obj):
    for key in ('memdev', 'decoder', 'region', 'chardev'):
        if isinstance(obj.get(key), str):
            return '%s %s' % (key, obj[key])
    return 'an entry'


def _size(source, obj, key, required=True):
    """Bytes from an integer or a -u string; the message names the field."""
    value = obj.get(key)
    if value is None:
        if required:
            _fail(source, '%s has no %s' % (_name(obj), key))
        return None
    if isinstance(value, int) and not isinstance(value, bool) \
            and value >= 0:
        return value
    if isinstance(value, str):
        match = _HUMAN_RE.match(value.strip())
        if match:
            return int(round(float(match.group(1))
                             * _UNITS[match.group(2)]))
    _fail(source, '%s: %s is not a size: %s'
          % (_name(obj), key, json.dumps(value)[:40]))


def _node(source, obj, key):
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) \
            and value >= 0:
        return value
    _fail(source, '%s: %s is not a NUMA node id: %s'
          % (_name(obj), key, json.dumps(value)[:40]))


def _text(source, obj, key, required=False):
    value = obj.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        _fail(source, '%s: %s is not a non-empty string: %s'
              % (_name(obj), key, json.dumps(value)[:40]))
    return value


def _serial(source, obj):
    value = obj.get('serial')
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) \
            and value >= 0:
        return value
    if isinstance(value, str) and re.match(r'^(0[xX][0-9a-fA-F]+|[0-9]+)$',
                                           value.strip()):
        return int(value.strip(), 0)
    _fail(source, '%s: serial is not a number: %s'
          % (_name(obj), json.dumps(value)[:40]))


def _load(output):
    """The tool's JSON, or None when it printed nothing."""
    if output.returncode != 0:
        first = output.text.strip().splitlines()
        _fail(output.source, 'exit status %d: %s'
              % (output.returncode, first[0][:200] if first
                 else 'no output'))
    text = output.text.strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        _fail(output.source, 'not valid JSON (%s)' % exc)


def _walk(source, data, found):
    """Collect memdev, decoder and region objects from any nesting."""
    if isinstance(data, list):
        for item in data:
            _walk(source, item, found)
        return
    if not isinstance(data, dict):
        _fail(source, 'an entry is not an object: %s'
              % json.dumps(data)[:40])
    if 'decoder' in data:
        found['decoders'].append(data)
    elif 'region' in data:
        found['regions'].append(data)
    elif 'memdev' in data:
        found['memdevs'].append(data)
    elif not any(isinstance(v, list) for v in data.values()):
        # Buses, ports and endpoints are containers only; an object that
        # holds nothing we know and no list is not cxl list output.
        _fail(source, 'an entry is not a memdev, decoder or region: %s'
              % json.dumps(data)[:60])
    for key, value in data.items():
        if isinstance(value, list):
            if key in ('mappings', 'media_errors', 'dports'):
                continue
            _walk(source, value, found)


def parse_cxl(output):
    """Memdevs, regions and endpoint decoders of ``cxl list``; bytes."""
    source = output.source
    data = _load(output)
    found = {'memdevs': [], 'decoders': [], 'regions': []}
    if data is not None:
        _walk(source, data, found)
    memdevs = []
    for raw in found['memdevs']:
        memdevs.append({
            'memdev': _text(source, raw, 'memdev', required=True),
            'host': _text(source, raw, 'host'),
            'serial': _serial(source, raw),
            'numa_node': _node(source, raw, 'numa_node'),
            'ram_size': _size(source, raw, 'ram_size', required=False) or 0,
            'pmem_size': _size(source, raw, 'pmem_size',
                               required=False) or 0,
        })
    regions = []
    for raw in found['regions']:
        name = _text(source, raw, 'region', required=True)
        if not _REGION_RE.match(name):
            _fail(source, 'region %s: not a regionN name' % name)
        if raw.get('state') == 'disabled':
            continue
        regions.append({
            'region': name,
            'type': _text(source, raw, 'type'),
            'size': _size(source, raw, 'size'),
            'decode_state': _text(source, raw, 'decode_state'),
        })
    decoders = []
    for raw in found['decoders']:
        if 'dpa_size' not in raw and 'mode' not in raw:
            # Root and switch decoders: only endpoints name a device mode.
            continue
        decoders.append({
            'decoder': _text(source, raw, 'decoder', required=True),
            'mode': _text(source, raw, 'mode'),
            'dpa_size': _size(source, raw, 'dpa_size', required=False) or 0,
            'region': _text(source, raw, 'region'),
        })
    return {'memdevs': memdevs, 'regions': regions, 'decoders': decoders}


def parse_daxctl(output):
    """Dax devices of ``daxctl list --devices``: chardev, size, mode."""
    source = output.source
    data = _load(output)
    if data is None:
        return []
    items = data if isinstance(data, list) else [data]
    devices = []
    for raw in items:
        if not isinstance(raw, dict):
            _fail(source, 'an entry is not an object: %s'
                  % json.dumps(raw)[:40])
        if 'devices' in raw and 'chardev' not in raw:
            # --regions: a dax region holding its devices.
            devices.extend(parse_daxctl(_Sub(output, raw['devices'])))
            continue
        chardev = _text(source, raw, 'chardev', required=True)
        match = _DAX_RE.match(chardev)
        if not match:
            _fail(source, 'chardev %s: not a daxN.M name' % chardev)
        mode = _text(source, raw, 'mode', required=True)
        if mode not in (SYSTEM_RAM, DEVDAX):
            _fail(source, 'chardev %s: mode is %s, expected %s or %s'
                  % (chardev, json.dumps(mode), SYSTEM_RAM, DEVDAX))
        movable = raw.get('movable')
        if movable is not None and not isinstance(movable, bool):
            _fail(source, 'chardev %s: movable is not true or false: %s'
                  % (chardev, json.dumps(movable)[:40]))
        devices.append({
            'chardev': chardev,
            'region_id': int(match.group(1)),
            'size': _size(source, raw, 'size'),
            'target_node': _node(source, raw, 'target_node'),
            'mode': mode,
            'movable': movable,
            'online_memblocks': raw.get('online_memblocks'),
            'total_memblocks': raw.get('total_memblocks'),
        })
    return devices


class _Sub:
    """A piece of an output, parsed again with the output's source."""

    def __init__(self, output, data):
        self.source = output.source
        self.returncode = 0
        self.text = json.dumps(data)


def parse_cpulist(text, source):
    """'0-3,8' -> [0, 1, 2, 3, 8]; an empty file is a node without CPUs."""
    text = text.strip()
    if not text:
        return []
    if not _CPULIST_RE.match(text):
        _fail(source, 'not a CPU list: %s' % json.dumps(text[:40]))
    cpus = []
    for part in text.split(','):
        low, _, high = part.partition('-')
        low, high = int(low), int(high or low)
        if high < low:
            _fail(source, 'not a CPU list: %s' % json.dumps(text[:40]))
        cpus.extend(range(low, high + 1))
    return cpus


def parse_nodes(node_files):
    """[{numa_node, cpus, memory_kb}] from the nodes' cpulist and meminfo."""
    nodes = []
    for files in node_files:
        match = re.search(_MEMTOTAL_RE % files.node, files.meminfo, re.M)
        if not match:
            _fail(files.meminfo_source, 'no "Node %d MemTotal: <N> kB" line'
                  % files.node)
        nodes.append({
            'numa_node': files.node,
            'cpus': parse_cpulist(files.cpulist, files.cpulist_source),
            'memory_kb': int(match.group(1)),
        })
    return nodes


def _format_cpus(cpus):
    """[0, 1, 2, 5] -> '0-2,5' (as the kernel prints a cpulist)."""
    ranges = []
    for cpu in cpus:
        if ranges and ranges[-1][1] == cpu - 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ','.join(str(a) if a == b else '%d-%d' % (a, b)
                    for a, b in ranges)


def classify(listing, dax_devices, nodes, sources):
    """The ``cxl`` section of the profile (see the module docstring).

    :param sources: {'cxl': ..., 'daxctl': ..., 'nodes': ...} names for
        messages.
    """
    regions = {r['region']: r for r in listing['regions']}
    region_ids = {int(_REGION_RE.match(r).group(1)): r for r in regions}
    ram_total = sum(m['ram_size'] for m in listing['memdevs'])
    cxl_dax = [d for d in dax_devices if d['region_id'] in region_ids
               and regions[region_ids[d['region_id']]]['type'] != 'pmem']
    cpu_nodes = [n for n in nodes if n['cpus']]
    tier_nodes = [n for n in nodes if not n['cpus'] and n['memory_kb'] > 0]
    if not cpu_nodes:
        _fail(sources['nodes'], 'no NUMA node with CPUs')
    near_kb = sum(n['memory_kb'] for n in cpu_nodes)
    decoded = sum(d['dpa_size'] for d in listing['decoders']
                  if d['mode'] == 'ram')
    if not decoded:
        decoded = sum(r['size'] for r in listing['regions']
                      if r['type'] == 'ram')
    notes = []
    kind = None
    far_gb = 0.0
    cell_near = {n['numa_node']: n['memory_kb'] / KIB_PER_GIB
                 for n in cpu_nodes}
    if ram_total and tier_nodes:
        kind = kinds.CXL_KMEM
        far_gb = sum(n['memory_kb'] for n in tier_nodes) / KIB_PER_GIB
        online = {n['numa_node'] for n in tier_nodes}
        for dev in cxl_dax:
            if dev['mode'] == SYSTEM_RAM and dev['target_node'] not in online:
                notes.append('%s is system-ram but node %s holds no memory'
                             % (dev['chardev'], dev['target_node']))
    elif ram_total and any(d['mode'] == SYSTEM_RAM for d in cxl_dax):
        dev = [d for d in cxl_dax if d['mode'] == SYSTEM_RAM][0]
        _fail(sources['daxctl'], 'chardev %s: mode is system-ram but no '
              'NUMA node without CPUs holds memory (target_node %s, '
              'online_memblocks %s of %s): online it with daxctl '
              'online-memory' % (dev['chardev'], dev['target_node'],
                                 dev['online_memblocks'],
                                 dev['total_memblocks']))
    elif ram_total and any(d['mode'] == DEVDAX for d in cxl_dax):
        kind = kinds.CXL_DEVDAX
        far_gb = sum(d['size'] for d in cxl_dax
                     if d['mode'] == DEVDAX) / GIB
    elif ram_total and decoded:
        kind = kinds.CXL_FLAT
        far_gb = decoded / GIB
        near_gb = near_kb / KIB_PER_GIB - far_gb
        if near_gb <= 0:
            _fail(sources['nodes'], 'the nodes with CPUs hold %.2f GiB, no '
                  'more than the %.2f GiB of CXL RAM that %s decodes: not '
                  'a flat memory mode host' % (near_kb / KIB_PER_GIB,
                                               far_gb, sources['cxl']))
        # Each node's near memory: its MemTotal less its CXL devices' RAM
        # (memdevs report their node); the rest shared by weight.
        weights = {}
        for node in cpu_nodes:
            own = sum(m['ram_size'] for m in listing['memdevs']
                      if m['numa_node'] == node['numa_node']) / GIB
            weights[node['numa_node']] = max(
                node['memory_kb'] / KIB_PER_GIB - own, 0.0)
        if not any(weights.values()):
            weights = {n['numa_node']: 1.0 for n in cpu_nodes}
        cell_near = {k: near_gb * w / sum(weights.values())
                     for k, w in weights.items()}
    elif listing['memdevs']:
        notes.append('CXL memory devices (%s) but no CXL RAM in use: no '
                     'region, dax device or decoder maps it'
                     % ', '.join(m['memdev'] for m in listing['memdevs']))
    near = _gb(sum(cell_near.values()))
    if kind == kinds.CXL_FLAT:
        visible = near_kb / KIB_PER_GIB
    else:
        visible = near + (far_gb if kind == kinds.CXL_KMEM else 0.0)
    # Per node in hundredths of a GB, adding up to the host's exactly.
    cell_near = derive.split_exact(near, cell_near)
    tier_ids = {n['numa_node'] for n in tier_nodes}
    section = {
        'kind': kind,
        'near_memory_gb': _gb(near),
        'far_memory_gb': _gb(far_gb),
        'visible_memory_gb': _gb(visible),
        'memdevs': [{
            'memdev': m['memdev'], 'host': m['host'], 'serial': m['serial'],
            'numa_node': m['numa_node'], 'ram_gb': _gb(m['ram_size'] / GIB),
            'pmem_gb': _gb(m['pmem_size'] / GIB)}
            for m in listing['memdevs']],
        'regions': [{
            'region': r['region'], 'type': r['type'],
            'size_gb': _gb(r['size'] / GIB),
            'decode_state': r['decode_state'],
            'dax_devices': [
                d['chardev'] for d in cxl_dax
                if region_ids[d['region_id']] == r['region']]}
            for r in listing['regions']],
        'decoders': [{
            'decoder': d['decoder'], 'mode': d['mode'],
            'size_gb': _gb(d['dpa_size'] / GIB), 'region': d['region']}
            for d in listing['decoders']],
        'dax_devices': [{
            'chardev': d['chardev'],
            'region': region_ids[d['region_id']], 'mode': d['mode'],
            'size_gb': _gb(d['size'] / GIB), 'numa_node': d['target_node'],
            'movable': d['movable']} for d in cxl_dax],
        'numa_nodes': [{
            'numa_node': n['numa_node'], 'cpus': _format_cpus(n['cpus']),
            'memory_gb': _gb(n['memory_kb'] / KIB_PER_GIB),
            'near_memory_gb': cell_near.get(n['numa_node'], 0.0),
            'tier': n['numa_node'] in tier_ids} for n in nodes],
        'tier_nodes': [{'numa_node': n['numa_node'],
                        'memory_gb': _gb(n['memory_kb'] / KIB_PER_GIB)}
                       for n in tier_nodes],
    }
    return section, notes


def apply(prof, runner):
    """Read CXL, daxctl and the NUMA nodes; add ``cxl`` to ``prof``.

    A host whose CXL memory is in use gets the CXL kind as ``mode`` and
    ``scheduler_mode``, its DRAM as ``dram_gb`` and, for the tiered kinds,
    as ``dram_cache_gb`` (the near memory ``pmem_dram_cache_gb`` carries).

    :raises DiscoveryError: on a host with Optane PMem in use and CXL
        memory in use: one ``pmem_mode`` cannot describe both tiers.
    """
    cxl_out = runner.run('cxl')
    listing = parse_cxl(cxl_out)
    dax_out = runner.run('daxctl')
    dax_devices = parse_daxctl(dax_out)
    node_files = runner.numa_nodes()
    nodes = parse_nodes(node_files)
    node_source = (node_files[0].meminfo_source.rsplit('/', 2)[0]
                   if node_files else 'NUMA nodes')
    section, notes = classify(
        listing, dax_devices, nodes,
        {'cxl': cxl_out.source, 'daxctl': dax_out.source,
         'nodes': node_source})
    kind = section['kind']
    if kind is not None and prof['mode'] != kinds.DRAM:
        raise errors.DiscoveryError(
            'this host has Optane PMem in %s (ipmctl) and CXL memory in '
            'use as %s (%s): one pmem_mode cannot describe both; use one '
            'tier or leave --cxl off to describe the PMem only'
            % (prof['mode'], kind, cxl_out.source))
    if kind is not None:
        prof['mode'] = kind
        prof['scheduler_mode'] = kind
        prof['dram_gb'] = section['near_memory_gb']
        prof['visible_memory_gb'] = section['visible_memory_gb']
        prof['dram_cache_gb'] = (section['near_memory_gb']
                                 if kind in kinds.TIERED else 0.0)
        # The DRAM is no longer /proc/meminfo's MemTotal (it counts the
        # CPU-less nodes too).
        prof['notes'] = [n for n in prof['notes']
                         if not n.startswith('DRAM size ')]
        notes.insert(0, 'DRAM size is MemTotal of the NUMA nodes with CPUs'
                     + (' less the CXL RAM' if kind == kinds.CXL_FLAT
                        else ''))
    prof['notes'].extend(notes)
    prof['cxl'] = section
    return prof
