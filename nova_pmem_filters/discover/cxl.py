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
``"regions:decoder0.0"``; with ``-v`` and more, buses hold ports hold
endpoints, each holding its memdev as an object. Objects are told apart by
the key naming them: ``memdev``, ``decoder``, ``region`` (``bus``,
``port``, ``endpoint`` only hold others). ``daxctl list --regions
--devices`` prints nothing, one object or a list of dax regions, each with
its sysfs ``path`` and its ``devices``. Sizes are integers, or ``-u``
strings such as ``"256.00 GiB (274.88 GB)"``.

A dax device ``daxX.Y`` of a CXL RAM region ``regionX`` has the region's id
(drivers/dax/cxl.c allocates the dax region with the CXL region's id), and
its dax region's path ends in ``regionX/dax_regionX``; the HMEM driver's
(drivers/dax/hmem: memory the firmware provisioned) is
``/platform/hmem.N``.

Host kind (doc/source/discovery.rst repeats the rules):

- NUMA nodes without CPUs that hold memory, on a host with CXL RAM:
  ``cxl_kmem``: near memory is the nodes with CPUs, far memory the CPU-less
  nodes. Without CXL RAM, the same when each such node is an HMEM device's
  memory onlined as system RAM (soft-reserved memory the kernel tiers);
  an error when one is not.
- Else CXL dax devices in ``devdax`` mode: ``cxl_devdax``; near = visible =
  the nodes with CPUs, far memory the devdax devices. HMEM devices on a
  host with CXL RAM count as that RAM.
- Else CXL RAM decoded by committed endpoint decoders (or RAM regions) but
  no dax device and no CPU-less node: the firmware put it into the nodes
  with CPUs, ``cxl_flat`` (Xeon 6 flat memory mode); far memory is the
  decoded CXL RAM, near memory what the nodes hold beyond it. Never while
  a devdax device of unknown origin (no region path) exists.
- Else no CXL memory in use: the host keeps its kind (``dram``), with a
  note when CXL devices are present but not provisioned.

The kernel's tiering (:func:`add_kernel_tiering`): the settings
``core.grammars.sysfs`` reads, judged for the CPU-less nodes holding memory
(the far nodes), recorded in every ``--cxl`` profile as ``kernel_tiering``; a
``cxl_kmem`` host whose kernel does not both promote and demote gets the
verdict's note (what to set). A ``--from DIR`` recorded before discovery
read the files has no ``kernel_tiering``: it cannot tell what the kernel
does, and says so in a note on a ``cxl_kmem`` host.
"""

import collections
import dataclasses
import os
import re

from nova_pmem_filters.core.formats import hostfile
from nova_pmem_filters.core.grammars import cxltools
from nova_pmem_filters.core.grammars import errors
from nova_pmem_filters.core.grammars import kernellist
from nova_pmem_filters.core.grammars import sysfs
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import placement
from nova_pmem_filters.core.rules import tiering
from nova_pmem_filters.discover import derive
from nova_pmem_filters.discover import runner as runners


GIB = 2 ** 30


KIB_PER_GIB = 2 ** 20


_PROC_MEMTOTAL_RE = re.compile(r'^MemTotal:\s+([0-9]+)\s+kB', re.M)


# /proc/meminfo's MemTotal and the NUMA nodes' disagree beyond this share
# of the larger: on Linux both count the pages the kernel manages, in all
# and per node; a virtual machine or a container can show other figures.
SOURCES_TOLERANCE = 0.01


def _gb(value):
    return round(float(value), 2)


def _cxl_region(device, region_ids):
    """The CXL region of a dax device, None for an HMEM device."""
    if device['origin'] == 'cxl':
        return [p for p in device['path'].split('/')
                if cxltools.REGION_RE.match(p)][-1]
    if device['origin'] == 'hmem':
        return None
    return region_ids.get(device['region_id'])


# What the CXL memory in use makes of a host: its kind (None: none in
# use), the GB of far memory and {NUMA node with CPUs: GB of near memory}.
Tier = collections.namedtuple('Tier', 'kind far_gb cell_near')


def classify(listing, dax_devices, nodes, sources):
    """The ``cxl`` section of the profile (see the module docstring).

    :param sources: {'cxl': ..., 'daxctl': ..., 'nodes': ...} names for
        messages.
    :returns: (a :class:`hostfile.Cxl`, notes).
    """
    regions = {r['region']: r for r in listing['regions']}
    region_ids = {int(cxltools.REGION_RE.match(r).group(1)): r
                  for r in regions}
    cpu_nodes = [n for n in nodes if n['cpus']]
    tier_nodes = [n for n in nodes if not n['cpus'] and n['memory_kb'] > 0]
    if not cpu_nodes:
        cxltools.fail(sources['nodes'], 'no NUMA node with CPUs')
    cxl_dax = _cxl_dax_devices(listing, dax_devices, regions, region_ids,
                               {n['numa_node'] for n in tier_nodes})
    if sum(m['ram_size'] for m in listing['memdevs']):
        notes = ['%s is an HMEM device (%s): firmware-provisioned memory, '
                 'taken as the CXL RAM' % (d['chardev'], d['path'])
                 for d in cxl_dax if d['origin'] == 'hmem']
    else:
        notes = ['%s is soft-reserved memory (HMEM, %s) onlined as system '
                 'RAM in NUMA node %s, which has no CPUs: whatever is behind '
                 'it (CXL the firmware set up, HBM, PMem), the kernel tiers '
                 'it as it tiers CXL memory, so the host is described as '
                 'cxl_kmem' % (d['chardev'], d['path'], d['target_node'])
                 for d in cxl_dax if d['origin'] == 'hmem']
    tier = _tier(listing, dax_devices, cxl_dax, cpu_nodes, tier_nodes,
                 sources, notes)
    return _section(listing, cxl_dax, region_ids, nodes, tier_nodes,
                    tier), notes


def _cxl_dax_devices(listing, dax_devices, regions, region_ids,
                     tier_node_ids):
    """The dax devices of CXL memory, or of memory the kernel tiers as such.

    A device under a CXL region's dax region; without the region's path
    (daxctl list --devices), one with a CXL RAM region's id. HMEM devices
    (firmware-provisioned memory) on a host with CXL RAM are that RAM;
    without CXL RAM, an HMEM device onlined as system RAM in a node without
    CPUs is a far node the kernel tiers.
    """
    ram_total = sum(m['ram_size'] for m in listing['memdevs'])
    return [d for d in dax_devices if d['origin'] == 'cxl' or (
        d['origin'] is None and d['region_id'] in region_ids
        and regions[region_ids[d['region_id']]]['type'] != 'pmem')
        or (d['origin'] == 'hmem' and ram_total)
        or (d['origin'] == 'hmem' and d['mode'] == cxltools.SYSTEM_RAM
            and d['target_node'] in tier_node_ids)]


def _tier(listing, dax_devices, cxl_dax, cpu_nodes, tier_nodes, sources,
          notes):
    """The host's kind, by the first rule of the module docstring to hold.

    An error where the outputs contradict each other.
    """
    ram_total = sum(m['ram_size'] for m in listing['memdevs'])
    own = {n['numa_node']: n['memory_kb'] / KIB_PER_GIB for n in cpu_nodes}
    if ram_total and tier_nodes:
        return _kmem(cxl_dax, tier_nodes, own, notes)
    if tier_nodes:
        # No CXL RAM: each CPU-less node must be memory the kernel tiers,
        # soft-reserved memory onlined by kmem; else no kind describes it.
        onlined = {d['target_node'] for d in cxl_dax
                   if d['origin'] == 'hmem'}
        for node in tier_nodes:
            if node['numa_node'] not in onlined:
                cxltools.fail(sources['nodes'], 'NUMA node %s holds %.2f GiB '
                              'and has no CPUs, but no CXL RAM and no HMEM '
                              'device in system-ram mode (daxctl) is its '
                              'memory: no kind describes such a host'
                              % (node['numa_node'],
                                 node['memory_kb'] / KIB_PER_GIB))
        return _kmem(cxl_dax, tier_nodes, own, notes)
    if ram_total and any(d['mode'] == cxltools.SYSTEM_RAM for d in cxl_dax):
        _refuse_system_ram(cxl_dax, cpu_nodes, sources)
    if ram_total and any(d['mode'] == cxltools.DEVDAX for d in cxl_dax):
        return Tier(kinds.CXL_DEVDAX, sum(
            d['size'] for d in cxl_dax
            if d['mode'] == cxltools.DEVDAX) / GIB, own)
    decoded = _decoded_bytes(listing)
    unknown_devdax = [d for d in dax_devices if d['origin'] is None
                      and d['mode'] == cxltools.DEVDAX and d not in cxl_dax]
    if ram_total and decoded and unknown_devdax:
        # Flat memory mode has no dax device: this one may be the CXL RAM
        # exposed by the HMEM driver; only its region's path tells.
        cxltools.fail(sources['daxctl'], 'chardev %s: a devdax device of no '
                      'CXL region in %s, and no region path to tell whether '
                      'it is the CXL RAM (HMEM) or other memory: save '
                      '"daxctl list --regions --devices"'
                      % (unknown_devdax[0]['chardev'], sources['cxl']))
    if ram_total and decoded:
        return _flat(listing, decoded, cpu_nodes, sources)
    if listing['memdevs']:
        notes.append('CXL memory devices (%s) but no CXL RAM in use: no '
                     'region, dax device or decoder maps it'
                     % ', '.join(m['memdev'] for m in listing['memdevs']))
    return Tier(None, 0.0, own)


def _decoded_bytes(listing):
    """CXL RAM the endpoint decoders map; else the RAM regions' size."""
    decoded = sum(d['dpa_size'] for d in listing['decoders']
                  if d['mode'] == 'ram')
    return decoded or sum(r['size'] for r in listing['regions']
                          if r['type'] == 'ram')


def _kmem(cxl_dax, tier_nodes, own, notes):
    """cxl_kmem: far memory is the CPU-less nodes' memory."""
    online = {n['numa_node'] for n in tier_nodes}
    for dev in cxl_dax:
        if (dev['mode'] == cxltools.SYSTEM_RAM
                and dev['target_node'] not in online):
            notes.append('%s is system-ram but node %s holds no memory'
                         % (dev['chardev'], dev['target_node']))
        notes.extend(_offline_blocks_note(dev))
    return Tier(kinds.CXL_KMEM, sum(n['memory_kb'] for n in tier_nodes)
                / KIB_PER_GIB, own)


def _offline_blocks_note(dev):
    """Say how much of a system-ram device is offline, and how to online it.

    Far memory is what the NUMA node holds: the online blocks only.
    """
    blocks, total = dev['online_memblocks'], dev['total_memblocks']
    if (dev['mode'] != cxltools.SYSTEM_RAM or blocks is None or not total
            or blocks == total):
        return []
    offline_gib = (dev['size'] or 0) * (total - blocks) / total / 2 ** 30
    return ['%s (system-ram, NUMA node %s) has %d of its %d memory blocks '
            'offline, %.2f GiB: far memory counts the online part only; '
            'online them with: daxctl online-memory %s'
            % (dev['chardev'], dev['target_node'], total - blocks, total,
               offline_gib, dev['chardev'])]


def _refuse_system_ram(cxl_dax, cpu_nodes, sources):
    """A system-ram device and no CPU-less node holding memory: say why."""
    dev = [d for d in cxl_dax if d['mode'] == cxltools.SYSTEM_RAM][0]
    with_cpus = {n['numa_node'] for n in cpu_nodes}
    online = (dev['online_memblocks'] is not None
              and dev['online_memblocks'] == dev['total_memblocks'])
    if dev['target_node'] in with_cpus and online:
        cxltools.fail(sources['daxctl'], 'chardev %s: system-ram with all %s '
                      'memory blocks online, in NUMA node %s, which has CPUs: '
                      'its CXL memory is counted as that node\'s DRAM, no '
                      'tier the scheduler can tell apart (cxl_kmem needs it '
                      'in a node without CPUs; the firmware\'s SRAT sets '
                      'target_node)' % (dev['chardev'], dev['total_memblocks'],
                                        dev['target_node']))
    if online:
        cxltools.fail(sources['daxctl'], 'chardev %s: system-ram with all %s '
                      'memory blocks online, but %s lists no NUMA node %s '
                      'holding memory: save the node<N> files of every node'
                      % (dev['chardev'], dev['total_memblocks'],
                         sources['nodes'], dev['target_node']))
    cxltools.fail(sources['daxctl'], 'chardev %s: mode is system-ram but no '
                  'NUMA node without CPUs holds memory (target_node %s, '
                  'online_memblocks %s of %s): online it with daxctl '
                  'online-memory' % (dev['chardev'], dev['target_node'],
                                     dev['online_memblocks'],
                                     dev['total_memblocks']))


def _flat(listing, decoded, cpu_nodes, sources):
    """cxl_flat: the decoded CXL RAM is far memory.

    Near memory is what the nodes with CPUs hold beyond it.
    """
    near_kb = sum(n['memory_kb'] for n in cpu_nodes)
    far_gb = decoded / GIB
    near_gb = near_kb / KIB_PER_GIB - far_gb
    if near_gb <= 0:
        cxltools.fail(sources['nodes'], 'the nodes with CPUs hold %.2f GiB, '
                      'no more than the %.2f GiB of CXL RAM that %s decodes: '
                      'not a flat memory mode host'
                      % (near_kb / KIB_PER_GIB, far_gb, sources['cxl']))
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
    return Tier(kinds.CXL_FLAT, far_gb,
                {k: near_gb * w / sum(weights.values())
                 for k, w in weights.items()})


def _dax_of_region(region, cxl_dax, region_ids):
    return [d['chardev'] for d in cxl_dax
            if _cxl_region(d, region_ids) == region]


def _section(listing, cxl_dax, region_ids, nodes, tier_nodes, tier):
    """The ``cxl`` object: the tier's sizes and what the tools list."""
    near_exact = sum(tier.cell_near.values())
    near = _gb(near_exact)
    kind = kinds.get(tier.kind)
    if kind is None or kinds.CXL_MEDIUM not in kind.guest_memory:
        visible = near
    elif kind.far_in_cpu_nodes:
        # The nodes with CPUs hold the CXL RAM too.
        visible = sum(n['memory_kb'] for n in nodes
                      if n['cpus']) / KIB_PER_GIB
    else:
        visible = near + tier.far_gb
    # Per node in hundredths of a GB, adding up to the host's exactly.
    cell_near = derive.split_exact(near, tier.cell_near)
    tier_ids = {n['numa_node'] for n in tier_nodes}
    return hostfile.Cxl(
        kind=tier.kind,
        near_memory_gb=_gb(near),
        near_memory_mb=placement.host_near_memory_mb(near_exact),
        far_memory_gb=_gb(tier.far_gb),
        visible_memory_gb=_gb(visible),
        memdevs=[hostfile.CxlMemdev(
            memdev=m['memdev'], host=m['host'], serial=m['serial'],
            numa_node=m['numa_node'], ram_gb=_gb(m['ram_size'] / GIB),
            pmem_gb=_gb(m['pmem_size'] / GIB)) for m in listing['memdevs']],
        regions=[hostfile.CxlRegion(
            region=r['region'], type=r['type'],
            size_gb=_gb(r['size'] / GIB), decode_state=r['decode_state'],
            dax_devices=_dax_of_region(r['region'], cxl_dax, region_ids))
            for r in listing['regions']],
        decoders=[hostfile.CxlDecoder(
            decoder=d['decoder'], mode=d['mode'],
            size_gb=_gb(d['dpa_size'] / GIB), region=d['region'])
            for d in listing['decoders']],
        dax_devices=[hostfile.CxlDaxDevice(
            chardev=d['chardev'], region=_cxl_region(d, region_ids),
            mode=d['mode'], size_gb=_gb(d['size'] / GIB),
            numa_node=d['target_node'], movable=d['movable'])
            for d in cxl_dax],
        numa_nodes=[hostfile.CxlNumaNode(
            numa_node=n['numa_node'], cpus=kernellist.format(n['cpus']),
            memory_gb=_gb(n['memory_kb'] / KIB_PER_GIB),
            near_memory_gb=cell_near.get(n['numa_node'], 0.0),
            tier=n['numa_node'] in tier_ids) for n in nodes],
        tier_nodes=[hostfile.CxlTierNode(
            numa_node=n['numa_node'],
            memory_gb=_gb(n['memory_kb'] / KIB_PER_GIB))
            for n in tier_nodes])


def check_without_cxl(prof, runner):
    """Without ``--cxl``: refuse to call memory DRAM that is not.

    NUMA nodes without CPUs that hold memory (CXL memory onlined by kmem,
    the usual case) would count as DRAM in a ``dram`` profile; that is an
    error naming ``--cxl``. Saved ``cxl list`` output in ``--from DIR``
    listing memory devices is a note.

    :returns: ``prof``, with that note.
    """
    if prof.mode != kinds.DRAM:
        return prof
    try:
        nodes = cxltools.parse_nodes(runner.numa_nodes())
    except errors.DiscoveryError:
        # No NUMA nodes to read (or recorded): nothing to tell.
        nodes = []
    tier_nodes = [n for n in nodes if not n['cpus'] and n['memory_kb'] > 0]
    if tier_nodes:
        raise errors.DiscoveryError(
            'NUMA node%s %s hold%s %.2f GiB of memory but no CPUs (CXL '
            'memory onlined as its own node): that is no DRAM; run with '
            '--cxl to describe it' % (
                's' if len(tier_nodes) > 1 else '',
                ', '.join(str(n['numa_node']) for n in tier_nodes),
                '' if len(tier_nodes) > 1 else 's',
                sum(n['memory_kb'] for n in tier_nodes) / KIB_PER_GIB))
    if runner.recorded('cxl'):
        try:
            memdevs = cxltools.parse_cxl(runner.run('cxl'))['memdevs']
        except errors.DiscoveryError:
            memdevs = []
        if memdevs:
            return dataclasses.replace(prof, notes=prof.notes + (
                'CXL memory devices (%s) in the saved cxl list output: run '
                'with --cxl to describe them'
                % ', '.join(m['memdev'] for m in memdevs),))
    return prof


def _node_source(node_files):
    """Where the NUMA nodes were read, for messages."""
    if not node_files:
        return 'NUMA nodes'
    # /sys/devices/system/node/node0/meminfo or DIR/node-0-meminfo.txt
    source = os.path.dirname(node_files[0].meminfo_source)
    if os.path.basename(node_files[0].meminfo_source) == 'meminfo':
        source = os.path.dirname(source)
    return source


def apply(prof, runner):
    """Read CXL, daxctl, the NUMA nodes and the kernel's tiering.

    :returns: ``prof`` with ``cxl`` and ``kernel_tiering``. A host whose
        CXL memory is in use gets the CXL kind as ``mode`` and
        ``scheduler_mode``, its DRAM as ``dram_gb`` and, for the tiered
        kinds, as ``dram_cache_gb`` (the near memory
        ``pmem_dram_cache_gb`` carries).
    :raises DiscoveryError: on a host with Optane PMem in use and CXL
        memory in use: one ``pmem_mode`` cannot describe both tiers.
    """
    cxl_out = runner.run('cxl')
    listing = cxltools.parse_cxl(cxl_out)
    dax_out = runner.run('daxctl')
    dax_devices = cxltools.parse_daxctl(dax_out)
    node_files = runner.numa_nodes()
    nodes = cxltools.parse_nodes(node_files)
    section, notes = classify(
        listing, dax_devices, nodes,
        {'cxl': cxl_out.source, 'daxctl': dax_out.source,
         'nodes': _node_source(node_files)})
    notes += sources_notes(runner.meminfo(), nodes,
                           _node_source(node_files), section.kind)
    return add_kernel_tiering(_with_section(prof, section, notes, cxl_out),
                              runner, nodes)


def sources_notes(meminfo, nodes, nodes_source, kind):
    """A note when /proc/meminfo and the NUMA nodes count other memory.

    ``dram_gb`` of a host without CXL in use is /proc/meminfo's MemTotal,
    the ``cxl`` section is the nodes': the profile would show two sizes
    of one host's memory with nothing to say why.

    :returns: a list of none or one note.
    """
    match = _PROC_MEMTOTAL_RE.search(meminfo or '')
    if not match or not nodes:
        return []
    total_kb = int(match.group(1))
    nodes_kb = sum(n['memory_kb'] for n in nodes)
    if abs(total_kb - nodes_kb) <= SOURCES_TOLERANCE * max(
            total_kb, nodes_kb):
        return []
    return ['MemTotal of /proc/meminfo is %.2f GiB but the NUMA nodes (%s) '
            'hold %.2f GiB: the two sources disagree (as a virtual machine '
            'or container can show them); cxl.near_memory_gb and '
            'cxl.numa_nodes are the NUMA nodes\'%s'
            % (total_kb / KIB_PER_GIB, nodes_source, nodes_kb / KIB_PER_GIB,
               ', and so is dram_gb' if kind is not None else '')]


def _with_section(prof, section, notes, cxl_out):
    """``prof`` with the ``cxl`` section and the kind it gives the host."""
    kind = section.kind
    if kind is None:
        return dataclasses.replace(prof, notes=prof.notes + tuple(notes),
                                   cxl=section)
    if prof.mode != kinds.DRAM:
        raise errors.DiscoveryError(
            'this host has Optane PMem in %s (ipmctl) and CXL memory in '
            'use as %s (%s): one pmem_mode cannot describe both; use one '
            'tier or leave --cxl off to describe the PMem only'
            % (prof.mode, kind, cxl_out.source))
    # The DRAM is no longer /proc/meminfo's MemTotal (it counts the
    # CPU-less nodes too).
    notes.insert(0, 'DRAM size is MemTotal of the NUMA nodes with CPUs'
                 + (' less the CXL RAM' if kinds.get(kind).far_in_cpu_nodes
                    else ''))
    return dataclasses.replace(
        prof, mode=kind, scheduler_mode=kind,
        dram_gb=section.near_memory_gb,
        near_memory_mb=section.near_memory_mb,
        visible_memory_gb=section.visible_memory_gb,
        dram_cache_gb=(section.near_memory_gb if kind in kinds.TIERED
                       else 0.0),
        notes=tuple(n for n in prof.notes if not n.startswith('DRAM size '))
        + tuple(notes),
        cxl=section)


def not_recorded_note():
    """The note of a ``cxl_kmem`` host whose DIR holds no tiering files."""
    return ('kernel tiering not recorded: the --from directory has neither '
            'proc/ nor sys/ (saved before nova-pmem-discover read the '
            'tiering files), so whether this kernel promotes and demotes '
            'cannot be told: kernel_tiering is left out and '
            'pmem_kernel_tiering takes its default, on; record them on the '
            'host with: %s' % runners.RECORD_TIERING)


def read_kernel_tiering(runner, nodes):
    """The host's ``kernel_tiering`` object and its verdict.

    The settings under the runner's root (``/``, or ``--from DIR``),
    judged for the nodes of :func:`parse_nodes`: the far nodes are the
    CPU-less ones holding memory.

    :returns: (:class:`hostfile.KernelTiering`, :class:`tiering.Verdict`),
        or None when ``--from DIR`` holds no tiering file.
    :raises DiscoveryError: naming the file that cannot be read or holds
        what the kernel does not write.
    """
    root = runner.tiering_root()
    if root is None:
        return None
    try:
        state = sysfs.read_state(root)
        if state.kernel is None and sysfs.read_text(
                root, tiering.OSRELEASE_FILE) is not None:
            raise sysfs.TieringError(
                os.path.join(root, tiering.OSRELEASE_FILE),
                'empty (a truncated read?)')
    except sysfs.TieringError as exc:
        raise errors.DiscoveryError(str(exc))
    cpu_nodes = [n['numa_node'] for n in nodes if n['cpus']]
    far_nodes = [n['numa_node'] for n in nodes
                 if not n['cpus'] and n['memory_kb'] > 0]
    untiered = [n for n in far_nodes if state.tiers is not None
                and state.tier_of(n) is None]
    if untiered:
        # The kernel puts every node holding memory in a tier.
        cxltools.fail(os.path.join(root, tiering.MEMORY_TIERING_DIR),
                      'NUMA node %d holds memory but no memory_tierN/nodelist '
                      'lists it (a recording that left a tier out?)'
                      % untiered[0])
    above = _above_dram(state, cpu_nodes, far_nodes)
    if above:
        node, tier, dram = above
        cxltools.fail(os.path.join(root, tiering.MEMORY_TIERING_DIR),
                      'NUMA node %d holds memory without CPUs in '
                      'memory_tier%d, above the DRAM\'s memory_tier%d: '
                      'memory faster than the DRAM (HBM, placed by the '
                      'firmware\'s HMAT data), not far memory; no kind '
                      'describes such a host' % (node, tier, dram))
    return hostfile.kernel_tiering_entry(state, cpu_nodes, far_nodes)


def _above_dram(state, cpu_nodes, far_nodes):
    """(node, its tier, the DRAM's) of a far node in a faster tier.

    The kernel numbers tiers by abstract distance (memory_tierN, N the
    distance over its chunk): a lower N is faster memory. The DRAM is
    memory_tier4 without HMAT data; memory the firmware describes as
    faster (HBM) gets a lower tier from Linux 6.7 (HMAT-based abstract
    distance), and the kernel demotes to the DRAM from it, never to it.
    None when every far node is in the DRAM's tier or below.
    """
    dram = [state.tier_of(n) for n in cpu_nodes]
    dram = [t for t in dram if t is not None]
    if state.tiers is None or not dram:
        return None
    for node in sorted(far_nodes):
        tier = state.tier_of(node)
        if tier is not None and tier < min(dram):
            return node, tier, min(dram)
    return None


def add_kernel_tiering(prof, runner, nodes):
    """``prof`` with ``kernel_tiering`` and, on ``cxl_kmem``, its note.

    Every ``--cxl`` profile records what the kernel does (on a host
    without far nodes it tiers nothing, and the settings still show how
    the kernel is set); only on a ``cxl_kmem`` host does it matter, and
    one note then says what to set where the kernel does not both promote
    and demote, or that DIR did not record it, and another where its
    reclaim may demote the memory of guests Nova binds.
    """
    found = read_kernel_tiering(runner, nodes)
    kmem = prof.mode in kinds.KERNEL_TIERED
    if found is None:
        if not kmem:
            return prof
        return dataclasses.replace(prof, notes=prof.notes + (
            not_recorded_note(),))
    entry, verdict = found
    notes = prof.notes
    if kmem and verdict.state != tiering.ON:
        notes += (verdict.note(),)
    if kmem and verdict.demotes_bound_memory:
        notes += (verdict.bound_note(),)
    return dataclasses.replace(prof, notes=notes, kernel_tiering=entry)
