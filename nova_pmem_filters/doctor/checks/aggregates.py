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
"""Checks of the aggregates' metadata: our keys, read as the scheduler reads
them.
"""

import math

from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters.core.rules import tiering
from nova_pmem_filters.doctor import findings


def _looks_like_ours(key):
    normal = key.strip().lower().replace('-', '_').replace('.', '_')
    if normal in profile.AGGREGATE_KEYS:
        return normal
    keys = profile.AGGREGATE_KEYS
    if normal.startswith('pmem') or findings.suggest(normal, keys, 0.8):
        return findings.suggest(normal, keys, 0.0) or keys[0]
    return None


# What the operator fills in for a value the filters would not read.
_PLACEHOLDERS = {
    profile.MODE_KEY: '<mode>',
    profile.DRAM_CACHE_KEY: '<GB of DRAM cache per host>',
    profile.DRAM_CACHE_PER_CELL_KEY: '<cell:GB,...>',
    profile.TIER_WEIGHT_MULTIPLIER_KEY: '<number>',
    profile.HEADROOM_WEIGHT_MULTIPLIER_KEY: '<number>',
    profile.NUMA_CELL_WEIGHT_MULTIPLIER_KEY: '<number>',
    profile.KERNEL_TIERING_KEY: '<on or off>',
}


def _moved_value(key, value):
    """The value to set under ``key`` for a misspelt key holding ``value``.

    Judged alone, as the checks below judge it: moved as it is, a value
    they reject would turn the warning into another finding, so a
    placeholder is printed instead; a mode is written as the scheduler
    reads it, without spaces.
    """
    if key in profile.WEIGHT_MULTIPLIER_KEYS:
        try:
            finite = math.isfinite(float(value))
        except (TypeError, ValueError):
            finite = False
        return value if finite else _PLACEHOLDERS[key]
    meta = {profile.MODE_KEY: kinds.MEMORY_MODE}
    if key != profile.DRAM_CACHE_PER_CELL_KEY:
        meta[profile.DRAM_CACHE_KEY] = '1'
    meta[key] = value
    parsed = profile.from_metadata([meta])
    if not parsed.known:
        hint = _mode_hint(value) if key == profile.MODE_KEY else None
        return hint or _PLACEHOLDERS[key]
    return parsed.mode if key == profile.MODE_KEY else value


def _mode_hint(raw_mode):
    """The mode a value that names none looks like, or None."""
    return findings.suggest(str(raw_mode).strip().lower().replace('-', '_'),
                            kinds.ALL_MODES, 0.6)


def _hosts_note(agg):
    if not agg.hosts:
        return 'no hosts yet'
    return 'hosts %s' % findings.names(agg.hosts)


def check(snap, view):
    found = []
    for agg in snap.aggregates:
        found += _misspelt_keys(agg)
        mode, mode_found = _mode(agg)
        found += mode_found
        found += _dram_cache(agg, view)
        found += _dram_cache_per_cell(agg)
        found += _tiered_without_cache(agg, mode, view)
        found += _weight_multiplier(agg)
        found += _kernel_tiering(agg, view)
    return found


def _object(agg):
    return 'aggregate %s' % agg.name


def _misspelt_keys(agg):
    """misspelt-key: keys the filters do not read that look like ours."""
    found = []
    meta = agg.metadata
    for key in sorted(meta):
        if key in profile.AGGREGATE_KEYS:
            continue
        suggestion = _looks_like_ours(key)
        if suggestion:
            found.append(findings.Finding(
                findings.WARNING, 'misspelt-key', _object(agg),
                'metadata key %r is not one the filters read; it looks '
                'like %s, so %s ignore it' % (key, suggestion,
                                              _hosts_note(agg)),
                findings.replace_property(
                    'aggregate', agg.name, key, suggestion,
                    _moved_value(suggestion, meta[key]))))
    return found


def _mode(agg):
    """(the mode as the scheduler reads it or None, its findings)."""
    raw_mode = agg.metadata.get(profile.MODE_KEY)
    if raw_mode is None:
        return None, []
    # As the scheduler reads it (the core strips spaces); with a cache
    # size, so that only the mode is judged here.
    parsed = profile.from_metadata([{profile.MODE_KEY: raw_mode,
                                     profile.DRAM_CACHE_KEY: '1'}])
    mode = parsed.mode
    if not parsed.known:
        hint = _mode_hint(raw_mode)
        return mode, [findings.Finding(
            findings.ERROR, 'invalid-pmem-mode', _object(agg),
            '%s=%r is not one of %s: %s' % (
                profile.MODE_KEY, raw_mode, ', '.join(kinds.ALL_MODES),
                findings.rejected_in(agg)),
            findings.command(
                'openstack', 'aggregate', 'set', '--property',
                '%s=%s' % (profile.MODE_KEY,
                           hint or _PLACEHOLDERS[profile.MODE_KEY]),
                agg.name))]
    if raw_mode != mode:
        return mode, [findings.Finding(
            findings.WARNING, 'untidy-pmem-mode', _object(agg),
            '%s=%r has spaces around it: the scheduler reads %s, but '
            'tools that compare the value as written do not'
            % (profile.MODE_KEY, raw_mode, mode),
            findings.command(
                'openstack', 'aggregate', 'set', '--property',
                '%s=%s' % (profile.MODE_KEY, mode), agg.name))]
    return mode, []


def _dram_cache(agg, view):
    """invalid-dram-cache, dram-cache-without-memory-mode."""
    meta = agg.metadata
    if profile.DRAM_CACHE_KEY not in meta:
        return []
    cache = meta[profile.DRAM_CACHE_KEY]
    parsed = profile.from_metadata([{profile.MODE_KEY: kinds.MEMORY_MODE,
                                     profile.DRAM_CACHE_KEY: cache}])
    if not parsed.known:
        return [findings.Finding(
            findings.ERROR, 'invalid-dram-cache', _object(agg),
            '%s=%r is not a positive number of GB: %s'
            % (profile.DRAM_CACHE_KEY, cache, findings.rejected_in(agg)),
            'openstack aggregate set --property %s=<GB of DRAM '
            'cache per host> %s (nova-pmem-discover --aggregate '
            'prints it)' % (profile.DRAM_CACHE_KEY, agg.name))]
    if agg.hosts and all(view.profiles[h].known
                         and view.profiles[h].mode not in kinds.TIERED
                         for h in agg.hosts):
        return [findings.Finding(
            findings.WARNING, 'dram-cache-without-memory-mode',
            _object(agg),
            '%s is set but its hosts are not in Memory Mode (%s): '
            'the cache size is ignored' % (
                profile.DRAM_CACHE_KEY, ', '.join(sorted(
                    '%s %s' % (h, view.profiles[h].mode)
                    for h in agg.hosts))),
            'set %s=%s on the aggregate if these hosts run in '
            'Memory Mode, or unset %s'
            % (profile.MODE_KEY, kinds.MEMORY_MODE,
               profile.DRAM_CACHE_KEY))]
    return []


def _dram_cache_per_cell(agg):
    """invalid-dram-cache-per-cell."""
    meta = agg.metadata
    if profile.DRAM_CACHE_PER_CELL_KEY not in meta:
        return []
    checked = {profile.MODE_KEY: kinds.MEMORY_MODE,
               profile.DRAM_CACHE_PER_CELL_KEY:
                   meta[profile.DRAM_CACHE_PER_CELL_KEY]}
    if profile.DRAM_CACHE_KEY in meta:
        checked[profile.DRAM_CACHE_KEY] = meta[profile.DRAM_CACHE_KEY]
    parsed = profile.from_metadata([checked])
    if parsed.known:
        return []
    return [findings.Finding(
        findings.ERROR, 'invalid-dram-cache-per-cell', _object(agg),
        '%s: %s' % (parsed.problem, findings.rejected_in(agg)),
        'openstack aggregate set --property %s=<cell:GB,...> %s '
        '(nova-pmem-discover --numa --aggregate prints it), or '
        'openstack aggregate unset --property %s %s to split '
        '%s evenly over the cells'
        % (profile.DRAM_CACHE_PER_CELL_KEY, agg.name,
           profile.DRAM_CACHE_PER_CELL_KEY, agg.name,
           profile.DRAM_CACHE_KEY))]


def _tiered_without_cache(agg, mode, view):
    """memory-mode-without-cache: a tiered mode and no cache size."""
    meta = agg.metadata
    if (mode not in kinds.TIERED
            or any(key in meta for key in profile.CACHE_KEYS)):
        return []
    uncached = [h for h in agg.hosts
                if not any(key in a.metadata
                           for key in profile.CACHE_KEYS
                           for a in view.aggregates_of.get(h, ()))]
    if not uncached and agg.hosts:
        return []
    return [findings.Finding(
        findings.ERROR if uncached else findings.WARNING,
        'memory-mode-without-cache', _object(agg),
        '%s=%s without %s%s' % (
            profile.MODE_KEY, mode, profile.DRAM_CACHE_KEY,
            ' (no cache bound to keep): %s'
            % findings.rejected('hosts %s' % findings.names(uncached))
            if uncached else
            ': hosts added to it will be rejected'),
        'openstack aggregate set --property %s=<GB of DRAM '
        'cache per host> %s' % (profile.DRAM_CACHE_KEY, agg.name))]


def _weight_multiplier(agg):
    """invalid-weight-multiplier: not a number, or not a finite one."""
    multiplier = agg.metadata.get(profile.TIER_WEIGHT_MULTIPLIER_KEY)
    if multiplier is None:
        return []
    try:
        value = float(multiplier)
    except (TypeError, ValueError):
        value = None
    if value is None:
        return [findings.Finding(
            findings.WARNING, 'invalid-weight-multiplier', _object(agg),
            '%s=%r is not a number: Nova logs a warning and uses '
            '[pmem] tier_weight_multiplier for %s'
            % (profile.TIER_WEIGHT_MULTIPLIER_KEY, multiplier,
               _hosts_note(agg)),
            'openstack aggregate set --property %s=<number> %s'
            % (profile.TIER_WEIGHT_MULTIPLIER_KEY, agg.name))]
    if not math.isfinite(value):
        # Nova takes it (float() does): the weights become NaN.
        return [findings.Finding(
            findings.ERROR, 'invalid-weight-multiplier', _object(agg),
            '%s=%r is not a finite number: Nova uses it, and the '
            'weight of %s becomes NaN (or infinite), so hosts are '
            'chosen in no useful order'
            % (profile.TIER_WEIGHT_MULTIPLIER_KEY, multiplier,
               _hosts_note(agg)),
            findings.command(
                'openstack', 'aggregate', 'unset', '--property',
                profile.TIER_WEIGHT_MULTIPLIER_KEY, agg.name))]
    return []


def _kernel_tiering_ignored(agg, view):
    """kernel-tiering-ignored: the key on hosts the kernel does not tier.

    Only a ``cxl_kmem`` host reads ``pmem_kernel_tiering``; on the others
    it is ignored, as the cache size is on untiered kinds.
    """
    if not agg.hosts or not all(
            view.profiles[h].known
            and view.profiles[h].mode not in kinds.KERNEL_TIERED
            for h in agg.hosts):
        return []
    return [findings.Finding(
        findings.WARNING, 'kernel-tiering-ignored', _object(agg),
        '%s is set but the kernel tiers none of its hosts (%s): only %s '
        'hosts read it' % (
            profile.KERNEL_TIERING_KEY, ', '.join(sorted(
                '%s %s' % (h, view.profiles[h].mode) for h in agg.hosts)),
            ', '.join(sorted(kinds.KERNEL_TIERED))),
        findings.command('openstack', 'aggregate', 'unset', '--property',
                         profile.KERNEL_TIERING_KEY, agg.name))]


def _kernel_tiering(agg, view):
    """invalid-kernel-tiering: ``pmem_kernel_tiering`` neither on nor off.

    Read as the scheduler reads it: the host's profile is unknown, whatever
    its kind. The fix sets what discovery found on every host of the
    aggregate (``--fleet``), else the state the value looks like.
    """
    raw = agg.metadata.get(profile.KERNEL_TIERING_KEY)
    if raw is None:
        return []
    parsed = profile.from_metadata([{
        profile.MODE_KEY: kinds.CXL_KMEM, profile.DRAM_CACHE_KEY: '1',
        profile.KERNEL_TIERING_KEY: raw}])
    if parsed.known:
        return _kernel_tiering_ignored(agg, view)
    states = {getattr(view.discovered.get(h), 'kernel_tiering', None)
              for h in agg.hosts}
    value = (states.pop() if agg.hosts and len(states) == 1
             and None not in states else
             findings.suggest(str(raw).strip().lower(), tiering.STATES, 0.6)
             or _PLACEHOLDERS[profile.KERNEL_TIERING_KEY])
    return [findings.Finding(
        findings.ERROR, 'invalid-kernel-tiering', _object(agg),
        '%s=%r is not one of %s: %s' % (
            profile.KERNEL_TIERING_KEY, raw, ', '.join(tiering.STATES),
            findings.rejected_in(agg)),
        findings.command('openstack', 'aggregate', 'set', '--property',
                         '%s=%s' % (profile.KERNEL_TIERING_KEY, value),
                         agg.name))]
