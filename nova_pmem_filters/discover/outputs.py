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
"""What the host profile means for Nova: aggregate metadata, a provider
config file and the ``[libvirt] pmem_namespaces`` value; and the profile as
a table.

The aggregate metadata and the provider config are those of the host the
profile describes, as the planner and the doctor read it
(:class:`nova_pmem_filters.core.formats.discoveredhost.DiscoveredHost`: through
:func:`nova_pmem_filters.core.formats.discoveredhost.host_of` for the profile
discovery built); ``--libvirt`` and the table read the profile itself (a
:class:`nova_pmem_filters.core.formats.hostfile.Document`).
"""

import re
import shlex


from nova_pmem_filters.cli import oscscript
from nova_pmem_filters.core.formats import hostfile
from nova_pmem_filters.core.formats import providerconfig
from nova_pmem_filters.core.grammars import errors
from nova_pmem_filters.core.grammars import kernellist
from nova_pmem_filters.core.rules import defaults
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import placement
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters.core.rules import tiering
from nova_pmem_filters.core.rules import vpmem
from nova_pmem_filters import fileutil

# The first line of the provider config file.
WRITTEN_BY = 'Written by nova-pmem-discover; regenerate rather than edit.'
# Every compute node root provider of the nova-compute reading the file.
COMPUTE_NODE = providerconfig.COMPUTE_NODE
# The namespace mode vPMEM uses.
DEVDAX = 'devdax'


# --- aggregates -----------------------------------------------------------

def aggregate_metadata(host):
    """The aggregate metadata of the host, as ordered (key, value) pairs.

    The core's :func:`profile.metadata`: the kind and, on tiered kinds, the
    near memory (per NUMA node too in a profile with the NUMA listing).

    :param host: a :class:`discoveredhost.DiscoveredHost`.
    """
    return list(host.metadata().items())


def _uneven_cells(host):
    """The per-cell cache if it is not the scheduler's even split."""
    cells = dict(host.cell_cache_gb or ())
    if cells and len(set(cells.values())) > 1:
        return cells
    return None


# The default aggregate name's suffix for a host whose kernel does not
# tier (pmem_kernel_tiering=off).
TIERING_OFF_SUFFIX = '-tiering-off'


def aggregate_name(host):
    """One aggregate per mode and, in Memory Mode, per DRAM cache size.

    A per-cell cache that is not an even split is part of the hardware
    group too: hosts that differ in it must not share an aggregate. So is
    ``pmem_kernel_tiering=off``: set on an aggregate it would hold for the
    hosts whose kernel tiers too. A host whose kernel tiers keeps the name
    it had before the key existed.
    """
    mode = host.mode
    if mode in kinds.TIERED:
        name = 'pmem-%s-%sgb' % (mode.replace('_', '-'), profile.gb_text(
            host.dram_cache_gb).replace('.', '_'))
        cells = _uneven_cells(host)
        if cells:
            name += '-cells-' + '-'.join(
                '%d_%s' % (cell, profile.gb_text(gb).replace('.', '_'))
                for cell, gb in sorted(cells.items()))
        if host.kernel_tiering == tiering.OFF:
            name += TIERING_OFF_SUFFIX
        return name
    return 'pmem-%s' % mode.replace('_', '-')


def aggregate_lines(host, name=None):
    name = name or aggregate_name(host)
    pairs = aggregate_metadata(host)
    lines = ['%s=%s' % pair for pair in pairs]
    props = ' '.join('--property %s' % shlex.quote('%s=%s' % pair)
                     for pair in pairs)
    # Each line runs as printed and again: the aggregate is created and
    # the host added only when missing; setting a property is idempotent.
    lines.append(oscscript.create_aggregate_command(name))
    lines.append('openstack aggregate set %s %s'
                 % (props, shlex.quote(name)))
    lines.append(oscscript.add_host_command(name, host.hostname))
    return lines


# --- provider config ------------------------------------------------------

def provider_config(
        host, ram_allocation_ratio=placement.INITIAL_RAM_ALLOCATION_RATIO,
        cache_overcommit_ratio=defaults.CACHE_OVERCOMMIT_RATIO):
    """The Nova provider config of a host: traits and near memory.

    Its mode traits (:func:`nova_pmem_filters.core.rules.kinds.traits`) and,
    every host, its near memory as ``CUSTOM_NEAR_MEMORY_MB`` (see
    :func:`nova_pmem_filters.core.rules.placement.near_memory_inventory`): the
    whole MB of the profile (``near_memory_mb``, exact) where it has them,
    so that flavors which request near memory can land on every kind.

    :param host: a :class:`discoveredhost.DiscoveredHost`.
    """
    total_mb = host.host_near_memory_mb
    inventory = None
    if total_mb is not None:
        inventory = placement.near_memory_inventory(
            host.mode, total_mb=total_mb,
            cache_overcommit_ratio=cache_overcommit_ratio,
            ram_allocation_ratio=ram_allocation_ratio)
    return providerconfig.near_memory_provider_config(inventory,
                                                      traits=host.traits)


def render_provider_config(config):
    """``config`` as the file Nova reads: checked, then written.

    Nova must load it (:func:`providerconfig.dumps`), and discovery
    writes one provider, every compute node of the nova-compute that
    reads it, with traits.
    """
    source = 'generated provider config'
    try:
        parsed = providerconfig.parse(config, source)
        for prov in parsed.providers:
            if not prov.every_compute_node or not prov.traits:
                raise providerconfig.ProviderConfigError(
                    '%s: a provider that is not %s with traits'
                    % (source, COMPUTE_NODE))
        return providerconfig.dumps(parsed, source, (WRITTEN_BY,))
    except providerconfig.ProviderConfigError as exc:
        raise errors.DiscoveryError(str(exc))


def write_atomic(path, text, mode=0o644):
    """Replace ``path`` with ``text`` or leave it as it was.

    The text goes to a temporary file in the same directory (not matching
    Nova's ``*.yaml`` glob), is fsynced and renamed over ``path``.
    """
    try:
        fileutil.write_atomic(path, text, mode=mode)
    except OSError as exc:
        raise errors.UsageError('%s: cannot write: %s'
                                % (path, exc.strerror or exc))


def _label_key(label):
    return (int(label[:-2]), label)


def pmem_namespaces(entries):
    """'LABEL:ns0|ns1,...' from (label, name) pairs, small labels first."""
    groups = {}
    for label, name in entries:
        groups.setdefault(label, []).append(name)
    return ','.join('%s:%s' % (label, '|'.join(groups[label]))
                    for label in sorted(groups, key=_label_key))


def named_devdax(prof):
    """(label, name) of the named devdax namespaces of a Document."""
    return [(vpmem.label_for(ns.size_gb), ns.name) for ns in prof.namespaces
            if ns.mode == DEVDAX and ns.name]


_PLAN_ITEM = re.compile(r'^([0-9]+)[xX]([0-9]+)\s*([GT])(?:i?B)?$')


def parse_plan(spec):
    """'4x32G[,2x128G]' -> [(count, size_gib), ...]."""
    items = []
    for part in spec.split(','):
        match = _PLAN_ITEM.match(part.strip())
        if not match:
            raise errors.UsageError(
                '--plan %r: expected COUNTxSIZE[G|T][,...], e.g. 4x32G'
                % spec)
        count, size = int(match.group(1)), int(match.group(2))
        if match.group(3) == 'T':
            size *= 1024
        if count < 1 or size < 1 or count > 1024:
            raise errors.UsageError('--plan %r: count and size must be '
                                    'positive (count at most 1024)' % spec)
        items.append((count, size))
    return items


def plan(prof, spec):
    """ndctl commands carving ``spec`` and the resulting entries.

    Namespaces go round-robin over the regions in socket order, each to
    the next region that still has room, so they spread over sockets.
    """
    items = parse_plan(spec)
    regions = sorted(prof.regions,
                     key=lambda r: (r.socket if r.socket is not None
                                    else -1, r.id))
    if not regions:
        raise errors.UsageError('--plan: the host has no PMem region')
    free = {r.id: r.available_gb for r in regions}
    used = {ns.name for ns in prof.namespaces if ns.name}
    numbers = [int(n[2:]) for n in used if re.match(r'^ns[0-9]+$', n)]
    next_number = max(numbers) + 1 if numbers else 0
    commands = []
    entries = []
    turn = 0
    for count, size in items:
        for _ in range(count):
            for step in range(len(regions)):
                region = regions[(turn + step) % len(regions)]
                if free[region.id] + 1e-9 >= size:
                    break
            else:
                raise errors.UsageError(
                    '--plan %s: no region has %d GiB free left (free: %s)'
                    % (spec, size, ', '.join(
                        '%s %.2f GiB' % (r.id, free[r.id])
                        for r in regions)))
            turn = (regions.index(region) + 1) % len(regions)
            free[region.id] -= size
            name = 'ns%d' % next_number
            next_number += 1
            commands.append(
                'ndctl create-namespace --mode devdax --region %s '
                '--size %dG --name %s' % (region.id, size, name))
            entries.append((vpmem.label_for(size), name))
    return commands, entries


def libvirt_lines(prof, spec=None):
    """Lines for --libvirt: commands (with --plan), then the option."""
    if prof.mode not in kinds.NAMESPACE_MODES:
        raise errors.DiscoveryError(
            'vPMEM needs App Direct namespaces; this host is %s'
            % prof.mode)
    entries = named_devdax(prof)
    lines = []
    if spec:
        commands, planned = plan(prof, spec)
        lines.extend(commands)
        entries = entries + planned
    if not entries:
        raise errors.DiscoveryError(
            'no named devdax namespace on this host (see --plan)')
    lines.append('[libvirt]')
    lines.append('pmem_namespaces = %s' % pmem_namespaces(entries))
    return lines


# --- table ----------------------------------------------------------------

_SUMMARY = ('hostname', 'mode', 'scheduler_mode', 'memory_mode_percent',
            'dram_gb', 'pmem_gb', 'visible_memory_gb', 'dram_cache_gb',
            'app_direct_gb')


def _table(columns, rows):
    cells = [[str(c) for c in columns]] + [
        ['-' if v is None else str(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    rule = '+' + '+'.join('-' * (w + 2) for w in widths) + '+'
    out = [rule]
    for index, row in enumerate(cells):
        out.append('| ' + ' | '.join(c.ljust(w) for c, w in
                                     zip(row, widths)) + ' |')
        if index == 0:
            out.append(rule)
    out.append(rule)
    return out


def _cells(values):
    return ','.join(str(v) for v in values) or '-'


def _rows(items, columns):
    """The values of ``columns`` (keys of the entries) of ``items``."""
    return [[getattr(item, c) for c in columns] for item in items]


def _numa_rows(prof):
    """One row per NUMA node; its namespaces as name (or dev) and size."""
    by_dev = {n.dev: n for n in prof.namespaces}
    return [[node.numa_node, _cells(node.sockets), node.dram_gb,
             node.dram_cache_gb, node.memory_mode_gb, node.app_direct_gb,
             _cells(node.regions), _cells(
                 '%s %s %gG' % (by_dev[d].name or d, by_dev[d].mode,
                                by_dev[d].size_gb)
                 for d in node.namespaces)]
            for node in prof.numa_nodes]


def _tiers_text(tiers):
    """memory_tiers as ``4:0-1 22:2-3``; None on a kernel without them."""
    if tiers is None:
        return None
    return ' '.join('%d:%s' % (t.tier, _node_list(t.nodes))
                    for t in tiers) or '(none)'


def _node_list(nodes):
    """[0, 1, 2, 5] -> '0-2,5', as the kernel prints it; '-' for none."""
    return kernellist.format(nodes) or '-'


def _tiering_lines(prof):
    """The ``kernel tiering`` table of a profile with ``kernel_tiering``."""
    entry = hostfile.given(prof.kernel_tiering)
    if entry is None:
        return []
    rows = [('state', entry.state), ('promotes', entry.promotes),
            ('demotes', entry.demotes),
            ('numa_balancing', entry.numa_balancing),
            ('demotion_enabled', entry.demotion_enabled),
            ('promotion_rate_limit_mbps', entry.promotion_rate_limit_mbps),
            ('memory_tiers', _tiers_text(entry.memory_tiers)),
            ('far_nodes', _node_list(entry.far_nodes)),
            ('problems', _cells(entry.problems)),
            ('demotes_bound_memory',
             hostfile.given(entry.demotes_bound_memory)),
            ('kernel', entry.kernel), ('cgroup', hostfile.given(entry.cgroup))]
    return ['', 'kernel tiering'] + _table(('Field', 'Value'), rows)


def summary(prof):
    """The (field, value) rows of the first table of -f table.

    What ``-f csv`` and ``-f value`` print, and ``-c`` picks from.
    """
    numa = prof.numa_nodes is not hostfile.ABSENT
    fields = _SUMMARY + (('dram_cache_gb_per_cell',) if numa else ())
    if prof.vcpus is not hostfile.ABSENT:
        fields += ('vcpus',)
    return [(k, getattr(prof, k)) for k in fields]


def summary_table(fields):
    """The (field, value) rows as the Field and Value table."""
    return _table(('Field', 'Value'), fields)


def table_lines(prof):
    """The profile (a :class:`hostfile.Document`) as tables."""
    numa = prof.numa_nodes is not hostfile.ABSENT
    lines = summary_table(summary(prof))
    ns_columns = ('name', 'dev', 'mode', 'region', 'numa_node', 'size_gb',
                  'chardev', 'blockdev')
    if numa:
        ns_columns = ns_columns[:4] + ('socket',) + ns_columns[4:]
    tables = [
        ('sockets', hostfile.keys(hostfile.SocketEntry),
         _rows(prof.sockets, hostfile.keys(hostfile.SocketEntry))),
        ('regions', hostfile.keys(hostfile.RegionEntry),
         _rows(prof.regions, hostfile.keys(hostfile.RegionEntry))),
        ('namespaces', ns_columns, _rows(prof.namespaces, ns_columns))]
    if numa:
        tables.append(('numa nodes', ('numa_node', 'sockets', 'dram_gb',
                                      'dram_cache_gb', 'memory_mode_gb',
                                      'app_direct_gb', 'regions',
                                      'namespaces'), _numa_rows(prof)))
    section = hostfile.given(prof.cxl)
    if section:
        lines.append('')
        lines.append('cxl')
        lines.extend(_table(('Field', 'Value'), [
            (k, getattr(section, k)) for k in (
                'kind', 'near_memory_gb', 'far_memory_gb',
                'visible_memory_gb')]))
        memdev_columns = hostfile.keys(hostfile.CxlMemdev)
        region_columns = hostfile.keys(hostfile.CxlRegion)
        decoder_columns = hostfile.keys(hostfile.CxlDecoder)
        dax_columns = hostfile.keys(hostfile.CxlDaxDevice)
        node_columns = hostfile.keys(hostfile.CxlNumaNode)
        tables.extend([
            ('cxl memdevs', memdev_columns,
             _rows(section.memdevs, memdev_columns)),
            ('cxl regions', region_columns,
             [row[:-1] + [_cells(row[-1])]
              for row in _rows(section.regions, region_columns)]),
            ('cxl decoders', decoder_columns,
             _rows(section.decoders, decoder_columns)),
            ('dax devices', dax_columns,
             _rows(section.dax_devices, dax_columns)),
            ('numa nodes (sysfs)', node_columns,
             [[row[0], row[1] or '-'] + row[2:]
              for row in _rows(section.numa_nodes, node_columns)])])
    for key, columns, rows in tables:
        if rows:
            lines.append('')
            lines.append(key)
            lines.extend(_table(columns, rows))
    lines.extend(_tiering_lines(prof))
    for note in prof.notes:
        lines.append('note: %s' % note)
    return lines
