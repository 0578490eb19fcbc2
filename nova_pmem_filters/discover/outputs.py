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
config file and the ``[libvirt] pmem_namespaces`` value.
"""

import re
import shlex

import jsonschema
import yaml

from nova_pmem_filters.core import kinds
from nova_pmem_filters.core import placement
from nova_pmem_filters.core import profile
from nova_pmem_filters.core import vpmem
from nova_pmem_filters.discover import errors
from nova_pmem_filters import fileutil
from nova_pmem_filters import oscscript

# Every compute node root provider of the nova-compute reading the file.
COMPUTE_NODE = '$COMPUTE_NODE'

# The part of Nova's provider config schema 1.0 (nova/compute/
# provider_config.py) that we write, plus its custom-name rule. Nova is not
# imported here: this runs on compute hosts, but a file Nova refuses stops
# nova-compute, so it is checked before it is written.
_CUSTOM_NAME = '^CUSTOM_[A-Z0-9_]{1,248}$'
_INVENTORY = {
    'type': 'object',
    'properties': {
        'total': {'type': 'integer', 'minimum': 1},
        'reserved': {'type': 'integer', 'minimum': 0},
        'min_unit': {'type': 'integer', 'minimum': 1},
        'max_unit': {'type': 'integer', 'minimum': 1},
        'step_size': {'type': 'integer', 'minimum': 1},
        'allocation_ratio': {'type': 'number', 'exclusiveMinimum': 0},
    },
    'required': ['total'],
    'additionalProperties': False,
}
PROVIDER_CONFIG_SCHEMA = {
    'type': 'object',
    'properties': {
        'meta': {
            'type': 'object',
            'properties': {'schema_version': {'type': 'string',
                                              'const': '1.0'}},
            'required': ['schema_version'],
        },
        'providers': {
            'type': 'array',
            'minItems': 1,
            'items': {
                'type': 'object',
                'properties': {
                    'identification': {
                        'type': 'object',
                        'properties': {'uuid': {'const': COMPUTE_NODE}},
                        'required': ['uuid'],
                        'additionalProperties': False,
                    },
                    'traits': {
                        'type': 'object',
                        'properties': {'additional': {
                            'type': 'array', 'minItems': 1,
                            'items': {'type': 'string',
                                      'pattern': _CUSTOM_NAME}}},
                        'required': ['additional'],
                        'additionalProperties': False,
                    },
                    'inventories': {
                        'type': 'object',
                        'properties': {'additional': {
                            'type': 'array',
                            'items': {
                                'type': 'object',
                                'patternProperties': {
                                    _CUSTOM_NAME: _INVENTORY},
                                'additionalProperties': False,
                                'minProperties': 1,
                            }}},
                        'additionalProperties': False,
                    },
                },
                'required': ['identification', 'traits'],
                'additionalProperties': False,
            },
        },
    },
    'required': ['meta', 'providers'],
    'additionalProperties': False,
}


# --- aggregates -----------------------------------------------------------

def _cell_near(prof):
    """{cell: GB} of the per-cell key (--numa), or None."""
    raw = prof.get('dram_cache_gb_per_cell')
    if not raw:
        return None
    cells, _problem = profile.parse_cell_cache(raw)
    return cells


def aggregate_metadata(prof):
    """The aggregate metadata of the host, as ordered (key, value) pairs.

    The core's :func:`profile.metadata`: the kind and, on tiered kinds, the
    near memory (per NUMA node too in a profile with the NUMA listing).
    """
    return list(profile.metadata(prof['scheduler_mode'],
                                 prof['dram_cache_gb'],
                                 _cell_near(prof)).items())


def _uneven_cells(prof):
    """The per-cell cache if it is not the scheduler's even split."""
    cells = _cell_near(prof)
    if cells and len(set(cells.values())) > 1:
        return cells
    return None


def aggregate_name(prof):
    """One aggregate per mode and, in Memory Mode, per DRAM cache size.

    A per-cell cache that is not an even split is part of the hardware
    group too: hosts that differ in it must not share an aggregate.
    """
    mode = prof['scheduler_mode']
    if mode in kinds.TIERED:
        name = 'pmem-%s-%sgb' % (mode.replace('_', '-'), profile.gb_text(
            prof['dram_cache_gb']).replace('.', '_'))
        cells = _uneven_cells(prof)
        if cells:
            name += '-cells-' + '-'.join(
                '%d_%s' % (cell, profile.gb_text(gb).replace('.', '_'))
                for cell, gb in sorted(cells.items()))
        return name
    return 'pmem-%s' % mode.replace('_', '-')


def aggregate_lines(prof, name=None):
    name = name or aggregate_name(prof)
    pairs = aggregate_metadata(prof)
    lines = ['%s=%s' % pair for pair in pairs]
    props = ' '.join('--property %s' % shlex.quote('%s=%s' % pair)
                     for pair in pairs)
    # Each line runs as printed and again: the aggregate is created and
    # the host added only when missing; setting a property is idempotent.
    lines.append(oscscript.create_aggregate_command(name))
    lines.append('openstack aggregate set %s %s'
                 % (props, shlex.quote(name)))
    lines.append(oscscript.add_host_command(name, prof['hostname']))
    return lines


# --- provider config ------------------------------------------------------

def traits(prof):
    """CUSTOM_PMEM_MODE_<MODE>; a mixed host also gets its kind's.

    See :func:`nova_pmem_filters.core.kinds.traits`.
    """
    return kinds.traits(prof['mode'])


def provider_config(prof, ram_allocation_ratio=1.0,
                    cache_overcommit_ratio=1.0):
    """The Nova provider config of a host: traits and near memory.

    Every host reports ``CUSTOM_NEAR_MEMORY_MB`` (see
    :func:`nova_pmem_filters.core.placement.near_memory_inventory`): its
    near memory (:func:`nova_pmem_filters.core.profile.near_memory_gb`;
    ``near_memory_mb``, the exact figure, where the profile has it), so
    that flavors which request near memory can land on every kind.
    """
    provider = {
        'identification': {'uuid': COMPUTE_NODE},
        'traits': {'additional': traits(prof)},
    }
    if prof.get('near_memory_mb') is not None:
        # Exact: the GB figures are rounded to 0.01 GB.
        near_gb = prof['near_memory_mb'] / float(profile.MB_PER_GB)
    else:
        near_gb = profile.near_memory_gb(prof['scheduler_mode'],
                                         prof['dram_gb'],
                                         prof['dram_cache_gb'])
    inventory = placement.near_memory_inventory(
        prof['scheduler_mode'], near_gb,
        cache_overcommit_ratio=cache_overcommit_ratio,
        ram_allocation_ratio=ram_allocation_ratio)
    if inventory['total'] > 0:
        provider['inventories'] = {'additional': [
            {placement.NEAR_MEMORY_RC: inventory}]}
    return {'meta': {'schema_version': '1.0'}, 'providers': [provider]}


def validate_provider_config(config):
    """Raise DiscoveryError unless ``config`` is one Nova would load."""
    try:
        jsonschema.validate(config, PROVIDER_CONFIG_SCHEMA)
    except jsonschema.ValidationError as exc:
        raise errors.DiscoveryError(
            'generated provider config is invalid at %s: %s'
            % ('/'.join(str(p) for p in exc.absolute_path) or '(top)',
               exc.message))
    for provider in config['providers']:
        for inventory in provider.get('inventories', {}).get(
                'additional', []):
            for rc, inv in inventory.items():
                if not (inv.get('min_unit', 1) <= inv.get('max_unit', 1)
                        <= inv['total']):
                    raise errors.DiscoveryError(
                        'generated provider config: %s needs min_unit <= '
                        'max_unit <= total' % rc)


def render_provider_config(config):
    validate_provider_config(config)
    text = ('# Written by nova-pmem-discover; regenerate rather than edit.\n'
            + yaml.safe_dump(config, default_flow_style=False,
                             sort_keys=False))
    # What Nova will read back must be what we validated.
    if yaml.safe_load(text) != config:
        raise errors.DiscoveryError(
            'provider config does not survive a YAML round trip')
    return text


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
    return [(vpmem.label_for(ns['size_gb']), ns['name'])
            for ns in prof['namespaces']
            if ns['mode'] == 'devdax' and ns['name']]


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
    regions = sorted(prof['regions'],
                     key=lambda r: (r['socket'] if r['socket'] is not None
                                    else -1, r['id']))
    if not regions:
        raise errors.UsageError('--plan: the host has no PMem region')
    free = {r['id']: r['available_gb'] for r in regions}
    used = {ns['name'] for ns in prof['namespaces'] if ns['name']}
    numbers = [int(n[2:]) for n in used if re.match(r'^ns[0-9]+$', n)]
    next_number = max(numbers) + 1 if numbers else 0
    commands = []
    entries = []
    turn = 0
    for count, size in items:
        for _ in range(count):
            for step in range(len(regions)):
                region = regions[(turn + step) % len(regions)]
                if free[region['id']] + 1e-9 >= size:
                    break
            else:
                raise errors.UsageError(
                    '--plan %s: no region has %d GiB free left (free: %s)'
                    % (spec, size, ', '.join(
                        '%s %.2f GiB' % (r['id'], free[r['id']])
                        for r in regions)))
            turn = (regions.index(region) + 1) % len(regions)
            free[region['id']] -= size
            name = 'ns%d' % next_number
            next_number += 1
            commands.append(
                'ndctl create-namespace --mode devdax --region %s '
                '--size %dG --name %s' % (region['id'], size, name))
            entries.append((vpmem.label_for(size), name))
    return commands, entries


def libvirt_lines(prof, spec=None):
    """Lines for --libvirt: commands (with --plan), then the option."""
    if prof['mode'] not in (kinds.APP_DIRECT, kinds.MIXED):
        raise errors.DiscoveryError(
            'vPMEM needs App Direct namespaces; this host is %s'
            % prof['mode'])
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


def _numa_rows(prof):
    """One row per NUMA node; its namespaces as name (or dev) and size."""
    by_dev = {n['dev']: n for n in prof['namespaces']}
    rows = []
    for node in prof['numa_nodes']:
        rows.append({
            'numa_node': node['numa_node'],
            'sockets': _cells(node['sockets']),
            'dram_gb': node['dram_gb'],
            'dram_cache_gb': node['dram_cache_gb'],
            'memory_mode_gb': node['memory_mode_gb'],
            'app_direct_gb': node['app_direct_gb'],
            'regions': _cells(node['regions']),
            'namespaces': _cells(
                '%s %s %gG' % (by_dev[d]['name'] or d, by_dev[d]['mode'],
                               by_dev[d]['size_gb'])
                for d in node['namespaces']),
        })
    return rows


def table_lines(prof):
    numa = 'numa_nodes' in prof
    summary = _SUMMARY + (('dram_cache_gb_per_cell',) if numa else ())
    if 'vcpus' in prof:
        summary += ('vcpus',)
    lines = _table(('Field', 'Value'),
                   [(k, prof[k]) for k in summary])
    ns_columns = ('name', 'dev', 'mode', 'region', 'numa_node', 'size_gb',
                  'chardev', 'blockdev')
    if numa:
        ns_columns = ns_columns[:4] + ('socket',) + ns_columns[4:]
    tables = [
        ('sockets', ('socket', 'numa_node', 'dram_gb', 'pmem_gb',
                     'memory_mode_gb', 'app_direct_gb', 'dram_cache_gb'),
         prof['sockets']),
        ('regions', ('id', 'socket', 'numa_node', 'size_gb',
                     'available_gb'), prof['regions']),
        ('namespaces', ns_columns, prof['namespaces'])]
    if numa:
        tables.append(('numa nodes', ('numa_node', 'sockets', 'dram_gb',
                                      'dram_cache_gb', 'memory_mode_gb',
                                      'app_direct_gb', 'regions',
                                      'namespaces'), _numa_rows(prof)))
    section = prof.get('cxl')
    if section:
        lines.append('')
        lines.append('cxl')
        lines.extend(_table(('Field', 'Value'), [
            (k, section[k]) for k in ('kind', 'near_memory_gb',
                                      'far_memory_gb', 'visible_memory_gb')]))
        tables.extend([
            ('cxl memdevs', ('memdev', 'host', 'serial', 'numa_node',
                             'ram_gb', 'pmem_gb'), section['memdevs']),
            ('cxl regions', ('region', 'type', 'size_gb', 'decode_state',
                             'dax_devices'),
             [dict(r, dax_devices=_cells(r['dax_devices']))
              for r in section['regions']]),
            ('cxl decoders', ('decoder', 'mode', 'size_gb', 'region'),
             section['decoders']),
            ('dax devices', ('chardev', 'region', 'mode', 'size_gb',
                             'numa_node', 'movable'),
             section['dax_devices']),
            ('numa nodes (sysfs)', ('numa_node', 'cpus', 'memory_gb',
                                    'near_memory_gb', 'tier'),
             [dict(n, cpus=n['cpus'] or '-')
              for n in section['numa_nodes']])])
    for key, columns, items in tables:
        if items:
            lines.append('')
            lines.append(key)
            lines.extend(_table(columns, [[item[c] for c in columns]
                                          for item in items]))
    for note in prof['notes']:
        lines.append('note: %s' % note)
    return lines
