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
"""The outputs of cxl list, daxctl list and the NUMA nodes' files, parsed."""

import json
import re

from nova_pmem_filters.core.grammars import errors
from nova_pmem_filters.core.grammars import kernellist


_HUMAN_RE = re.compile(
    r'^([0-9]+(?:\.[0-9]+)?)\s*(B|KiB|MiB|GiB|TiB)(?:\s*\(.*\))?$')


_UNITS = {'B': 1, 'KiB': 2 ** 10, 'MiB': 2 ** 20, 'GiB': 2 ** 30,
          'TiB': 2 ** 40}


_DAX_RE = re.compile(r'^dax([0-9]+)\.([0-9]+)$')


REGION_RE = re.compile(r'^region([0-9]+)$')


_MEMTOTAL_RE = r'^Node\s+%d\s+MemTotal:\s+([0-9]+)\s+kB\s*$'


SYSTEM_RAM = 'system-ram'


DEVDAX = 'devdax'


def fail(source, what):
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
            fail(source, '%s has no %s' % (_name(obj), key))
        return None
    if isinstance(value, int) and not isinstance(value, bool) \
            and value >= 0:
        return value
    if isinstance(value, str):
        match = _HUMAN_RE.match(value.strip())
        if match:
            return int(round(float(match.group(1))
                             * _UNITS[match.group(2)]))
    fail(source, '%s: %s is not a size: %s'
         % (_name(obj), key, json.dumps(value)[:40]))


def _node(source, obj, key):
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) \
            and value >= 0:
        return value
    fail(source, '%s: %s is not a NUMA node id: %s'
         % (_name(obj), key, json.dumps(value)[:40]))


def _memblocks(source, obj):
    """(online, total) memory blocks of a system-ram device, or Nones.

    daxctl counts the blocks of /sys/devices/system/memory that the device
    spans and those whose state is online.
    """
    found = []
    for key in ('online_memblocks', 'total_memblocks'):
        value = obj.get(key)
        if value is not None and not (
                isinstance(value, int) and not isinstance(value, bool)
                and value >= 0):
            fail(source, '%s: %s is not a count of memory blocks: %s'
                 % (_name(obj), key, json.dumps(value)[:40]))
        found.append(value)
    online, total = found
    if online is not None and total is not None and online > total:
        fail(source, '%s: online_memblocks %d is more than total_memblocks '
             '%d' % (_name(obj), online, total))
    return online, total


def _text(source, obj, key, required=False):
    value = obj.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        fail(source, '%s: %s is not a non-empty string: %s'
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
    fail(source, '%s: serial is not a number: %s'
         % (_name(obj), json.dumps(value)[:40]))


def _load(output):
    """The tool's JSON, or None when it printed nothing."""
    if output.returncode != 0:
        first = output.text.strip().splitlines()
        fail(output.source, 'exit status %d: %s'
             % (output.returncode, first[0][:200] if first
                 else 'no output'))
    text = output.text.strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        fail(output.source, 'not valid JSON (%s)' % exc)


# Keys of objects that hold objects of their own. Lists under any other key
# are containers (``memdevs``, ``endpoints:port1``, ``regions:decoder0.0``)
# and are walked; these hold what is not a memdev, decoder or region.
_NOT_CONTAINERS = ('mappings', 'media_errors', 'dports', 'targets')


# Objects that only hold others (``cxl list -B -P -E``, ``-v``).
_TOPOLOGY = ('bus', 'port', 'endpoint')


def _walk(source, data, found):
    """Collect memdev, decoder and region objects from cxl list's nesting.

    Buses hold ports, ports hold endpoints, an endpoint holds its memdev as
    an object (``-v`` and more) and its decoders; decoders list their
    ``targets`` (``-T``), regions their ``mappings`` and, with ``-vvv``,
    their ``daxregion``: those are not walked.
    """
    if isinstance(data, list):
        for item in data:
            _walk(source, item, found)
        return
    if not isinstance(data, dict):
        fail(source, 'an entry is not an object: %s'
             % json.dumps(data)[:40])
    if isinstance(data.get('decoder'), str):
        found['decoders'].append(data)
    elif isinstance(data.get('region'), str):
        found['regions'].append(data)
    elif isinstance(data.get('memdev'), str):
        found['memdevs'].append(data)
    elif not any(isinstance(data.get(k), str) for k in _TOPOLOGY) \
            and not any(isinstance(v, list) for v in data.values()):
        # Containers ({"memdevs": [...]}) hold lists; an object that is
        # none of cxl list's and holds none is not its output.
        fail(source, 'an entry is not a bus, port, endpoint, memdev, '
             'decoder or region: %s' % json.dumps(data)[:60])
    for key, value in data.items():
        if key == 'memdev' and isinstance(value, dict):
            _walk(source, value, found)
        elif isinstance(value, list) and key not in _NOT_CONTAINERS:
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
        if not REGION_RE.match(name):
            fail(source, 'region %s: not a regionN name' % name)
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


def dax_origin(path):
    """'cxl', 'hmem', 'nvdimm' or None from a dax region's sysfs path.

    A CXL RAM region's dax region is ``.../decoderX.Y/regionN/
    dax_regionN``; the HMEM driver's (memory the firmware marks specific
    purpose) is ``/platform/hmem.N``; an nvdimm namespace's is under
    ``ndbusN``.
    """
    if not path:
        return None
    parts = path.strip('/').split('/')
    if parts[-1].startswith('dax_region') and any(
            REGION_RE.match(p) for p in parts):
        return 'cxl'
    if any(p.startswith('hmem') for p in parts):
        return 'hmem'
    if any(p.startswith('ndbus') for p in parts):
        return 'nvdimm'
    return None


def parse_daxctl(output):
    """Dax devices of ``daxctl list --regions --devices``.

    Each device: chardev, size, mode and, under a region that prints its
    ``path``, the ``origin`` of :func:`dax_origin`. ``daxctl list
    --devices`` (no regions, no path) is read too.
    """
    data = _load(output)
    if data is None:
        return []
    regions = [r for r in (data if isinstance(data, list) else [data])
               if isinstance(r, dict) and 'chardev' not in r and 'id' in r]
    if regions and not any('devices' in r for r in regions):
        fail(output.source, 'dax regions (%s) but no dax devices: saved '
             '"daxctl list --regions" without --devices; save "daxctl '
             'list --regions --devices"'
             % ', '.join(json.dumps(r['id'])[:20] for r in regions))
    return _dax_devices(output.source, data, None)


def _dax_devices(source, data, path):
    items = data if isinstance(data, list) else [data]
    devices = []
    for raw in items:
        if not isinstance(raw, dict):
            fail(source, 'an entry is not an object: %s'
                 % json.dumps(raw)[:40])
        if 'chardev' not in raw and 'id' in raw:
            # --regions: a dax region holding its devices (--devices).
            region_path = raw.get('path')
            if region_path is not None and not isinstance(region_path,
                                                          str):
                fail(source, 'dax region %s: path is not a string: %s'
                     % (raw['id'], json.dumps(region_path)[:40]))
            devices.extend(_dax_devices(source, raw.get('devices', []),
                                        region_path))
            continue
        chardev = _text(source, raw, 'chardev', required=True)
        match = _DAX_RE.match(chardev)
        if not match:
            fail(source, 'chardev %s: not a daxN.M name' % chardev)
        mode = _text(source, raw, 'mode', required=True)
        if mode not in (SYSTEM_RAM, DEVDAX):
            fail(source, 'chardev %s: mode is %s, expected %s or %s'
                 % (chardev, json.dumps(mode), SYSTEM_RAM, DEVDAX))
        online, total = _memblocks(source, raw)
        movable = raw.get('movable')
        if movable is not None and not isinstance(movable, bool):
            fail(source, 'chardev %s: movable is not true or false: %s'
                 % (chardev, json.dumps(movable)[:40]))
        devices.append({
            'chardev': chardev,
            'region_id': int(match.group(1)),
            'size': _size(source, raw, 'size'),
            'target_node': _node(source, raw, 'target_node'),
            'mode': mode,
            'movable': movable,
            'online_memblocks': online,
            'total_memblocks': total,
            'path': path or None,
            'origin': dax_origin(path),
        })
    return devices


def parse_cpulist(text, source):
    """'0-3,8' -> [0, 1, 2, 3, 8]; an empty file is a node without CPUs."""
    cpus = kernellist.parse(text)
    if cpus is None:
        fail(source, 'not a CPU list: %s (%s)' % (
            json.dumps(text.strip()[:40]), kernellist.ALLOWED))
    return cpus


def parse_nodes(node_files):
    """[{numa_node, cpus, memory_kb}] from the nodes' cpulist and meminfo."""
    nodes = []
    for files in node_files:
        match = re.search(_MEMTOTAL_RE % files.node, files.meminfo, re.M)
        if not match:
            fail(files.meminfo_source, 'no "Node %d MemTotal: <N> kB" line'
                 % files.node)
        nodes.append({
            'numa_node': files.node,
            'cpus': parse_cpulist(files.cpulist, files.cpulist_source),
            'memory_kb': int(match.group(1)),
        })
    return nodes
