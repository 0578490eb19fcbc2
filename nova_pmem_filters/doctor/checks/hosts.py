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
"""Checks of each host: its aggregates against discovery, its Placement
traits and near-memory inventory, and the hot RAM placed on it.
"""

from nova_pmem_filters.core.rules import charging
from nova_pmem_filters.core.rules import decide
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import nearmem
from nova_pmem_filters.core.rules import placement
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters.core.rules import tiering
from nova_pmem_filters.doctor import cloud
from nova_pmem_filters.doctor import findings


# Tolerance of Placement capacities against the cache bound: the provider
# config rounds the total down to a whole MB.
_MB_TOLERANCE = 1.0


def _expected_mode_traits(host, view):
    """(mode traits expected, how strictly): from discovery, else labels."""
    prof = view.discovered.get(host)
    if prof is not None:
        return set(prof.traits), True
    label = view.profiles[host]
    if not label.known:
        return None, False
    return {kinds.trait(label.mode)}, False


def _mode_traits(provider):
    return {t for t in provider.traits if t.startswith(kinds.TRAIT_PREFIX)}


def check(snap, view):
    found = []
    nodes = {c.host: c.nodes for c in snap.computes}
    traits_in_use = any(_mode_traits(p) for p in snap.providers.values())
    near_requested = sorted(
        f.name for f in snap.flavors
        if placement.requested_near_memory(f.extra_specs) is not None)
    hosts = sorted(set(nodes) | set(view.profiles))
    for host in hosts:
        obj = 'host %s' % host
        label = view.profiles[host]
        if label.problem_code == profile.DISAGREE:
            found.append(findings.Finding(
                findings.ERROR, 'aggregates-disagree', obj,
                '%s (%s): %s' % (label.problem, ', '.join(
                    a.name for a in view.aggregates_of[host]),
                    findings.rejected('the host')),
                'keep the host in one aggregate per memory profile, or make '
                'its aggregates carry the same values'))
        prof = view.discovered.get(host)
        if prof is not None and label.known:
            found.extend(_compare_discovered(obj, label, prof))
        for node in nodes.get(host, ()):
            provider = snap.providers.get(node)
            if provider is None:
                continue
            where = obj if node == host else '%s (node %s)' % (obj, node)
            found.extend(_check_provider(where, host, provider, view,
                                         traits_in_use, near_requested))
        if label.mode in kinds.TIERED:
            found.extend(_check_cache_use(obj, host, label, snap, view))
    if snap.fleet is not None:
        known = set(nodes) | {n for ns in nodes.values() for n in ns}
        for prof in snap.fleet:
            if prof.hostname not in known:
                found.append(findings.Finding(
                    findings.INFO, 'fleet-host-unknown',
                    'host %s' % prof.hostname,
                    'the discovered profile %s names a host that is not a '
                    'compute of this cloud' % prof.source,
                    'check the hostname in the profile, or remove the file '
                    'of a host that left the cloud'))
    return found


def _compare_discovered(obj, label, prof):
    if prof.mode != label.mode:
        return [findings.Finding(
            findings.ERROR, 'profile-mismatch', obj,
            'its aggregates say %s but discovery (%s) found %s: flavors are '
            'placed by the wrong memory mode'
            % (label.mode, prof.source, prof.mode),
            'move the host to the aggregate of its profile '
            '(nova-pmem-discover --aggregate prints it)')]
    if label.mode not in kinds.TIERED:
        return []
    if abs(label.dram_cache_gb - prof.dram_cache_gb) < 0.01:
        return []
    larger = label.dram_cache_gb > prof.dram_cache_gb
    return [findings.Finding(
        findings.ERROR if larger else findings.WARNING, 'profile-mismatch',
        obj,
        'its aggregates give a DRAM cache of %g GB but discovery (%s) found '
        '%g GB: PmemCacheFilter admits %s hot RAM than the cache holds'
        % (label.dram_cache_gb, prof.source, prof.dram_cache_gb,
           'more' if larger else 'less'),
        'move the host to an aggregate with %s=%g'
        % (profile.DRAM_CACHE_KEY, prof.dram_cache_gb))]


def _check_provider(obj, host, provider, view, traits_in_use,
                    near_requested):
    found = []
    expected, strict = _expected_mode_traits(host, view)
    actual = _mode_traits(provider)
    if traits_in_use and expected is not None:
        if strict:
            wrong = actual != expected
        else:
            # Without a discovered profile only the labelled mode is known:
            # it must be there, and no trait of another scheduler mode.
            others = {kinds.trait(m) for m in kinds.ALL_MODES}
            wrong = not expected <= actual or bool(
                (actual & others) - expected)
        if wrong:
            found.append(findings.Finding(
                findings.WARNING, 'mode-trait-mismatch', obj,
                'Placement traits %s, expected %s (from %s): flavors that '
                'require a CUSTOM_PMEM_MODE_* trait are placed by the wrong '
                'mode' % (', '.join(sorted(actual)) or 'none',
                          ', '.join(sorted(expected)),
                          'discovery' if strict else 'its aggregates'),
                'regenerate the provider config with nova-pmem-discover '
                '--provider-config and restart nova-compute'))
    inventory = provider.inventories.get(placement.NEAR_MEMORY_RC)
    if inventory is None:
        if near_requested:
            found.append(findings.Finding(
                findings.ERROR, 'near-memory-inventory-missing', obj,
                'no %s inventory in Placement, but flavors %s request it: '
                'they never land on this host' % (
                    placement.NEAR_MEMORY_RC, findings.names(near_requested)),
                'give the host the provider config of nova-pmem-discover '
                '--provider-config and restart nova-compute'))
        return found
    finding = _check_near_inventory(obj, host, inventory, view)
    if finding:
        found.append(finding)
    return found


def _check_near_inventory(obj, host, inventory, view):
    config = view.config
    prof = view.discovered.get(host)
    label = view.profiles[host]
    actual = placement.capacity_mb(inventory)
    if label.mode in kinds.TIERED:
        cache_gb = prof.near_memory_gb if prof is not None and (
            prof.mode == label.mode) else label.dram_cache_gb
        expected = placement.capacity(placement.near_memory_inventory(
            label.mode, cache_gb)['total'], 0, config.cache_overcommit_ratio)
        if abs(actual - expected) <= _MB_TOLERANCE * max(
                config.cache_overcommit_ratio, 1.0):
            return None
        larger = actual > expected
        return findings.Finding(
            findings.ERROR if larger else findings.WARNING,
            'near-memory-inventory-mismatch', obj,
            'Placement offers %g MB of %s, but the DRAM cache of %g GB '
            'at cache_overcommit_ratio %g bounds hot RAM to %g MB: Placement '
            'admits %s than PmemCacheFilter'
            % (actual, placement.NEAR_MEMORY_RC, cache_gb,
               config.cache_overcommit_ratio, expected,
               'more' if larger else 'less'),
            'regenerate the provider config with nova-pmem-discover '
            '--provider-config --cache-overcommit-ratio %g and restart '
            'nova-compute' % config.cache_overcommit_ratio)
    if prof is None or prof.dram_gb is None or not label.known:
        # Without discovery the DRAM of a dram or app_direct host is not
        # known here; the host's ram_allocation_ratio never is.
        return None
    expected_total = placement.near_memory_inventory(
        label.mode, profile.near_memory_gb(label.mode, prof.dram_gb,
                                           prof.dram_cache_gb))['total']
    if abs(inventory.get('total', 0) - expected_total) <= _MB_TOLERANCE:
        return None
    return findings.Finding(
        findings.WARNING, 'near-memory-inventory-mismatch', obj,
        'Placement has %s MB of %s, but discovery (%s) found %g GB of DRAM '
        '(%d MB)' % (inventory.get('total'), placement.NEAR_MEMORY_RC,
                     prof.source, prof.dram_gb, expected_total),
        'regenerate the provider config with nova-pmem-discover '
        '--provider-config and restart nova-compute')


_MIGRATE = ('live-migrate instances away (openstack server migrate --live-'
            'migration SERVER), largest hot RAM first, until the bound holds')


def _lowered_cache_note(host, label, snap, view):
    """What a cache size lowered on purpose needs before new boots keep it.

    PmemCacheFilter reads the aggregate at once; Placement admits flavors
    that request near memory by the host's inventory, which nova-compute
    reports from its provider config.
    """
    ratio = view.config.cache_overcommit_ratio
    accounted = sorted(
        f.name for f in snap.flavors
        if placement.requested_near_memory(f.extra_specs) is not None)
    inventory = placement.near_memory_inventory(label.mode,
                                                label.dram_cache_gb, ratio)
    bound = placement.capacity_mb(inventory)
    nodes = [n for c in snap.computes if c.host == host for n in c.nodes]
    larger = [n for n in nodes if n in snap.providers
              and placement.NEAR_MEMORY_RC in snap.providers[n].inventories
              and placement.capacity_mb(snap.providers[n].inventories[
                  placement.NEAR_MEMORY_RC]) > bound + _MB_TOLERANCE]
    if not (accounted and larger):
        return ('if the cache size was lowered on purpose, new boots '
                'already respect it')
    return ('if the cache size was lowered on purpose, PmemCacheFilter '
            'holds new boots to it, but Placement still admits flavors '
            'requesting %s (%s) by the larger inventory of %s: lower it '
            'too, in the host\'s provider config ([compute] '
            'provider_config_location) set %s total: %d and '
            'allocation_ratio: %g, then restart nova-compute'
            % (placement.NEAR_MEMORY_RC, findings.names(accounted),
               findings.names(larger), placement.NEAR_MEMORY_RC,
               inventory['total'], ratio))


def _as_charged(label, placed):
    """``placed`` with what each instance charges the host's near memory.

    Its hot MB, but on a kernel-tiered host its whole RAM where
    :func:`charging.whole_ram` says so, as :func:`decide.overcommitted`
    counts it.
    """
    found = []
    for server, hot, cell_mb in placed:
        if charging.whole_ram(label, cell_mb is not None):
            hot = server.ram_mb
            if cell_mb is not None:
                cell_mb = dict(nearmem.bound_cells(
                    server.numa_cells, server.ram_mb, server.ram_mb))
        found.append((server, hot, cell_mb))
    return found


def _charge_words(label):
    """(what is bounded, the word after each instance's MB) for messages."""
    if not tiering.kernel_tiered(label):
        return 'the hot RAM', 'hot'
    if not tiering.promotes(label):
        return ('the RAM charged (every instance\'s whole RAM: %s=off)'
                % profile.KERNEL_TIERING_KEY), 'charged'
    return ('the RAM charged (hot RAM, the whole RAM of NUMA-bound '
            'instances: the kernel cannot move it)'), 'charged'


def _check_cache_use(obj, host, label, snap, view):
    """The hot RAM placed on a tiered host, as PmemCacheFilter bounds it.

    Host-wide, or cell by cell when NUMA-bound instances are on a host
    whose cells are known (:func:`decide.overcommitted`).
    """
    config = view.config
    ratio = config.cache_overcommit_ratio
    used, placed = cloud.hot_ram(
        [s for s in snap.servers if s.host == host], config)
    cells = cloud.host_cells(host, label, view)
    cell_view, over = decide.overcommitted(label, ratio, used, cells)
    placed = _as_charged(label, placed)
    what, unit = _charge_words(label)
    if cell_view is None:
        found = []
        if over:
            capacity = label.cache_capacity_mb(ratio)
            used = charging.charged(label, used)
            placed.sort(key=lambda item: (-item[1], item[0].name,
                                          item[0].id))
            found.append(findings.Finding(
                findings.ERROR, 'cache-overcommitted', obj,
                '%s placed on it, %g MB, exceeds its DRAM-cache '
                'bound of %g MB (%g GB x cache_overcommit_ratio %g): %s'
                % (what, used.total, capacity, label.dram_cache_gb, ratio,
                   findings.names('%s (%s, %g MB %s)'
                                  % (s.name, s.id, hot, unit)
                                  for s, hot, _cells in placed)),
                _MIGRATE + '; ' + _lowered_cache_note(host, label, snap,
                                                      view)))
        if used.bound and cells is None:
            found.append(findings.Finding(
                findings.INFO, 'cache-cells-unchecked', obj,
                'NUMA-bound instances are on it (%s) and PmemCacheFilter '
                'bounds each NUMA cell\'s hot RAM, but the doctor does not '
                'know its cells: only the host-wide bound was checked'
                % findings.names(s.name for s, _hot, cell_mb in placed
                                 if cell_mb),
                'give the doctor --fleet DIR with the host\'s profile from '
                'nova-pmem-discover --numa, or set %s on its aggregate'
                % profile.DRAM_CACHE_PER_CELL_KEY))
        return found
    if cell_view.capacities is None:
        return [findings.Finding(
            findings.ERROR, 'invalid-dram-cache-per-cell', obj,
            '%s: PmemCacheFilter rejects the host for every flavor that '
            'is NUMA-bound or lands next to NUMA-bound instances'
            % cell_view.problem,
            'openstack aggregate set --property %s=<cell:GB,...> AGGREGATE '
            'naming the host\'s NUMA nodes (nova-pmem-discover --numa '
            '--aggregate prints it)' % profile.DRAM_CACHE_PER_CELL_KEY)]
    found = []
    for cell in over:
        # Its instances: those bound to it, and the floating ones' share.
        on_cell = sorted(
            ((s, cell_mb[cell] if cell_mb
              else nearmem.spread_mb(hot, cell_view.capacities)[cell],
              cell_mb is None)
             for s, hot, cell_mb in placed
             if cell_mb is None or cell in cell_mb),
            key=lambda item: (-item[1], item[0].name, item[0].id))
        found.append(findings.Finding(
            findings.ERROR, 'cache-overcommitted',
            '%s (NUMA cell %d)' % (obj, cell),
            '%s placed on NUMA cell %d, %g MB, exceeds the cell\'s '
            'DRAM-cache bound of %g MB (cache_overcommit_ratio %g), though '
            'the host-wide sum may fit: PmemCacheFilter bounds each cell '
            'once NUMA-bound instances are on the host: %s'
            % (what, cell, cell_view.used[cell], cell_view.capacities[cell],
               ratio, findings.names(
                   '%s (%s, %g MB %s on the cell%s)'
                   % (s.name, s.id, mb, unit,
                      ', floating' if floating else '')
                   for s, mb, floating in on_cell)),
            _MIGRATE + ' on the cell (a NUMA-bound instance moves with its '
            'cells)'))
    return found
