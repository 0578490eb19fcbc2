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
"""The doctor's checks: findings about a cloud, from a Snapshot.

Each check reads the same values the scheduler reads, through the same code:
host profiles from aggregate metadata (``profile.from_metadata``), flavor
requests from extra specs (``extra_specs.request_of``), the cache bound
(``cache.fits_cache``) and Placement's near memory
(``placement.near_memory_mb``, ``discover.outputs``). What the doctor reports
is therefore what PmemModeFilter and PmemCacheFilter would do.

Every finding has a severity, a code, the object it is about, what is wrong
and what to do. Codes are stable: operators filter on them.
"""

import dataclasses
import difflib

from nova_pmem_filters.core import cache
from nova_pmem_filters.core import classes
from nova_pmem_filters.core import extra_specs
from nova_pmem_filters.core import kinds
from nova_pmem_filters.core import placement
from nova_pmem_filters.core import profile
from nova_pmem_filters.core import vpmem
from nova_pmem_filters.doctor import novaconf
from nova_pmem_filters.doctor import snapshot

ERROR = 'error'
WARNING = 'warning'
INFO = 'info'
SEVERITIES = (ERROR, WARNING, INFO)

OUR_FILTERS = classes.FILTERS
OUR_WEIGHERS = classes.WEIGHERS
FILTERS_PATH = classes.FILTERS_MODULE
WEIGHERS_PATH = classes.WEIGHERS_MODULE
ALL_FILTERS = classes.ALL_FILTERS
ALL_WEIGHERS = classes.ALL_WEIGHERS
NOVA_WEIGHERS_PREFIX = 'nova.scheduler.weights'
# What goes missing without each of our weighers.
WEIGHER_ROLES = {
    classes.TIER_WEIGHER: 'pmem:priority does not steer flavors between '
                          'DRAM and Memory-Mode hosts',
    classes.HEADROOM_WEIGHER: 'Memory-Mode hosts are not chosen by free '
                              'DRAM cache',
    classes.NUMA_CELL_WEIGHER: 'pmem:priority=high flavors are not given '
                               'the least loaded NUMA cells',
}

AGGREGATE_KEYS = profile.AGGREGATE_KEYS
CACHE_KEYS = profile.CACHE_KEYS
PMEM_SPEC_KEYS = tuple(sorted(extra_specs.RULES))

# What the integration suite measured with filter-only accounting and two
# scheduler workers (doc/source/integration.rst): 36 concurrent boots to two
# Memory-Mode hosts whose caches hold 24.
MEASURED_OVER_ADMISSION = ('the integration suite measured 30 instances '
                           'admitted where the DRAM caches of two hosts hold '
                           '24, with 2 workers')
PLACEMENT_ACCOUNTING_FIX = (
    'account near memory in Placement: give each compute the provider '
    'config of nova-pmem-discover --provider-config (CUSTOM_NEAR_MEMORY_MB) '
    'and each flavor the resources:CUSTOM_NEAR_MEMORY_MB that '
    'nova-pmem-planner nova-config --placement-accounting prints')
# Instances listed by name in one finding before "and N more".
MAX_LISTED = 10
# Tolerance of Placement capacities against the cache bound: the provider
# config rounds the total down to a whole MB.
_MB_TOLERANCE = 1.0


# Every code a finding may have, by what it is about; doc/source/doctor.rst
# lists the same.
CODES = (
    # nova.conf
    'nova-conf-not-read', 'filter-not-available', 'filter-not-enabled',
    'weighers-not-configured', 'nova-weighers-dropped',
    'filter-only-cache-accounting',
    # aggregates
    'invalid-pmem-mode', 'invalid-dram-cache', 'invalid-dram-cache-per-cell',
    'memory-mode-without-cache',
    'dram-cache-without-memory-mode', 'invalid-weight-multiplier',
    # aggregates and flavors
    'misspelt-key',
    # flavors
    'invalid-extra-spec', 'vpmem-modes-conflict', 'near-memory-mismatch',
    'placement-accounting-partial',
    # hosts
    'aggregates-disagree', 'profile-mismatch', 'mode-trait-mismatch',
    'near-memory-inventory-missing', 'near-memory-inventory-mismatch',
    'cache-overcommitted', 'fleet-host-unknown',
    # instances with vPMEM
    'vpmem-numa-remote', 'vpmem-numa-unknown', 'vpmem-guest-numa-nodes',
)


@dataclasses.dataclass(frozen=True)
class Finding:
    severity: str
    code: str
    object: str
    problem: str
    fix: str

    def __post_init__(self):
        if self.severity not in SEVERITIES or self.code not in CODES:
            raise ValueError('finding %s %s is not one the doctor documents'
                             % (self.severity, self.code))

    def sort_key(self):
        return (SEVERITIES.index(self.severity), self.code, self.object)


def exit_status(findings):
    """0 clean (info only), 1 with warnings, 2 with errors."""
    severities = {f.severity for f in findings}
    if ERROR in severities:
        return 2
    return 1 if WARNING in severities else 0


# --- what the scheduler sees ----------------------------------------------

@dataclasses.dataclass(frozen=True)
class _View:
    """Derived values every check reads, computed once."""

    config: novaconf.NovaConfig
    # host -> HostProfile from its aggregates, as the filters read it.
    profiles: dict
    # host -> aggregates holding it.
    aggregates_of: dict
    # flavor name -> (PmemRequest or None, error or None).
    requests: dict
    # host -> discovered HostProfile (discover.profiles).
    discovered: dict


def _view(snap):
    config = snap.config or novaconf.defaults()
    aggregates_of = {c.host: [] for c in snap.computes}
    for agg in snap.aggregates:
        for host in agg.hosts:
            aggregates_of.setdefault(host, []).append(agg)
    profiles = {
        host: profile.from_metadata([a.metadata for a in aggs],
                                    default_mode=config.default_host_mode)
        for host, aggs in aggregates_of.items()}
    requests = {f.name: extra_specs.request_of(f.extra_specs, config.defaults)
                for f in snap.flavors}
    discovered = {}
    if snap.fleet is not None:
        nodes = {n: c.host for c in snap.computes for n in c.nodes}
        for prof in snap.fleet:
            host = nodes.get(prof.hostname, prof.hostname)
            discovered[host] = prof
    return _View(config=config, profiles=profiles,
                 aggregates_of=aggregates_of, requests=requests,
                 discovered=discovered)


def _hot_mb(server, config):
    """Hot MB of a placed instance, as PmemCacheFilter's ledger counts it."""
    request, _error = extra_specs.request_of(server.extra_specs,
                                             config.defaults)
    return extra_specs.counted_hot_mb(server.ram_mb, request)


def _memory_mode_hosts(view):
    return sorted(h for h, p in view.profiles.items()
                  if p.mode in kinds.TIERED)


def _memory_mode_flavors(snap, view):
    """(flavor, request) of valid flavors that may land in Memory Mode."""
    return [(f, view.requests[f.name][0]) for f in snap.flavors
            if view.requests[f.name][0] is not None
            and kinds.TIERED & view.requests[f.name][0].modes]


def _unaccounted(snap, view):
    """Memory-Mode-eligible flavors that do not request near memory."""
    return [f for f, _r in _memory_mode_flavors(snap, view)
            if placement.requested_near_memory(f.extra_specs) is None]


def _rejected(what):
    """What the filters do with hosts whose profile is unknown."""
    return ('PmemCacheFilter rejects %s for every flavor, PmemModeFilter '
            'for every flavor that names modes' % what)


def _rejected_in(agg):
    if agg.hosts:
        return _rejected('hosts %s' % _names(agg.hosts))
    return ('hosts added to it will be rejected (by PmemCacheFilter for '
            'every flavor, by PmemModeFilter for every flavor that names '
            'modes)')


def _names(items, limit=MAX_LISTED):
    items = list(items)
    shown = ', '.join(items[:limit])
    if len(items) > limit:
        shown += ' and %d more' % (len(items) - limit)
    return shown


# --- nova.conf --------------------------------------------------------------

def _conf_object(group, option):
    return 'nova.conf [%s] %s' % (group, option)


def check_config(snap, view):
    if snap.config is None:
        return [Finding(
            INFO, 'nova-conf-not-read', 'nova.conf',
            'no nova.conf was given, so the scheduler settings were not '
            'audited; the [pmem] defaults were assumed (default_host_mode '
            '%s, default_hot_ratio %g, cache_overcommit_ratio %g)'
            % (view.config.default_host_mode, view.config.default_hot_ratio,
               view.config.cache_overcommit_ratio),
            'run the doctor with --config-file /etc/nova/nova.conf (the '
            'file nova-scheduler reads)')]
    conf = snap.config
    found = []
    available = set(conf.available_filters)
    enabled = set(conf.enabled_filters)
    mm_hosts = _memory_mode_hosts(view)
    unaccounted = _unaccounted(snap, view)
    for name in OUR_FILTERS:
        is_available = (ALL_FILTERS in available
                        or '%s.%s' % (FILTERS_PATH, name) in available)
        if name in enabled and not is_available:
            found.append(Finding(
                ERROR, 'filter-not-available',
                _conf_object('filter_scheduler', 'available_filters'),
                '%s is in enabled_filters but not in available_filters: '
                'nova-scheduler does not start (SchedulerHostFilterNotFound)'
                % name,
                'add the line "available_filters = %s" to '
                '[filter_scheduler], keeping Nova\'s own '
                '(nova.scheduler.filters.all_filters)' % ALL_FILTERS))
        if name in enabled:
            continue
        if name == 'PmemCacheFilter' and not (mm_hosts and unaccounted):
            # Without Memory-Mode hosts, or with every flavor accounted in
            # Placement, the filter has nothing to add.
            continue
        why = ('host memory modes and pmem:modes are ignored: flavors land '
               'on any host' if name == 'PmemModeFilter' else
               'nothing keeps the hot RAM of %s within the DRAM cache of '
               'the Memory-Mode hosts' % _names(f.name for f in unaccounted))
        found.append(Finding(
            ERROR, 'filter-not-enabled',
            _conf_object('filter_scheduler', 'enabled_filters'),
            '%s is not enabled: %s' % (name, why),
            'append %s to [filter_scheduler] enabled_filters%s and restart '
            'nova-scheduler' % (name, '' if is_available else
                                ', add "available_filters = %s"'
                                % ALL_FILTERS)))
    weighers = set(conf.weight_classes)
    if ALL_WEIGHERS not in weighers:
        missing = [w for w in OUR_WEIGHERS
                   if '%s.%s' % (WEIGHERS_PATH, w) not in weighers]
        if missing:
            found.append(Finding(
                WARNING, 'weighers-not-configured',
                _conf_object('filter_scheduler', 'weight_classes'),
                '%s %s not in weight_classes: %s'
                % (' and '.join(missing),
                   'is' if len(missing) == 1 else 'are',
                   '; '.join(WEIGHER_ROLES[w] for w in missing)),
                'set [filter_scheduler] weight_classes = '
                'nova.scheduler.weights.all_weighers,%s' % ALL_WEIGHERS))
    if (any(w.startswith(WEIGHERS_PATH) for w in weighers)
            and not any(w.startswith(NOVA_WEIGHERS_PREFIX)
                        for w in weighers)):
        found.append(Finding(
            WARNING, 'nova-weighers-dropped',
            _conf_object('filter_scheduler', 'weight_classes'),
            'weight_classes lists our weighers but none of Nova\'s: it '
            'replaces Nova\'s default, so the RAM, CPU, disk and other '
            'weighers of Nova are off',
            'set [filter_scheduler] weight_classes = '
            'nova.scheduler.weights.all_weighers,%s' % ALL_WEIGHERS))
    workers = conf.scheduler_workers
    if ('PmemCacheFilter' in enabled and mm_hosts and unaccounted
            and (workers is None or workers > 1)):
        found.append(Finding(
            WARNING, 'filter-only-cache-accounting',
            _conf_object('scheduler', 'workers'),
            '%s, and the DRAM-cache bound of flavors %s is kept by '
            'PmemCacheFilter alone: workers schedule concurrently and can '
            'admit more hot RAM than a cache holds (%s)'
            % ('%d nova-scheduler workers' % workers if workers else
               'workers is unset, so nova-scheduler runs one worker per CPU',
               _names(f.name for f in unaccounted), MEASURED_OVER_ADMISSION),
            PLACEMENT_ACCOUNTING_FIX + ', or set [scheduler] workers = 1'))
    return found


# --- aggregates -------------------------------------------------------------

def _suggest(word, choices, cutoff):
    match = difflib.get_close_matches(word, choices, n=1, cutoff=cutoff)
    return match[0] if match else None


def _looks_like_ours(key):
    normal = key.strip().lower().replace('-', '_').replace('.', '_')
    if normal in AGGREGATE_KEYS:
        return normal
    if normal.startswith('pmem') or _suggest(normal, AGGREGATE_KEYS, 0.8):
        return _suggest(normal, AGGREGATE_KEYS, 0.0) or AGGREGATE_KEYS[0]
    return None


def _hosts_note(agg):
    return ('hosts %s' % _names(agg.hosts)) if agg.hosts else 'no hosts yet'


def check_aggregates(snap, view):
    found = []
    for agg in snap.aggregates:
        obj = 'aggregate %s' % agg.name
        meta = agg.metadata
        for key in sorted(meta):
            if key in AGGREGATE_KEYS:
                continue
            suggestion = _looks_like_ours(key)
            if suggestion:
                found.append(Finding(
                    WARNING, 'misspelt-key', obj,
                    'metadata key %r is not one the filters read; it looks '
                    'like %s, so %s ignore it' % (key, suggestion,
                                                  _hosts_note(agg)),
                    'openstack aggregate set --property %s=%s %s && '
                    'openstack aggregate unset --property %s %s'
                    % (suggestion, meta[key], agg.name, key, agg.name)))
        mode = meta.get(profile.MODE_KEY)
        if mode is not None and mode not in kinds.ALL_MODES:
            hint = _suggest(str(mode).strip().lower().replace('-', '_'),
                            kinds.ALL_MODES, 0.6)
            found.append(Finding(
                ERROR, 'invalid-pmem-mode', obj,
                '%s=%r is not one of %s: %s' % (
                    profile.MODE_KEY, mode, ', '.join(kinds.ALL_MODES),
                    _rejected_in(agg)),
                'openstack aggregate set --property %s=%s %s'
                % (profile.MODE_KEY, hint or '<mode>', agg.name)))
        if profile.DRAM_CACHE_KEY in meta:
            cache = meta[profile.DRAM_CACHE_KEY]
            parsed = profile.from_metadata([{
                profile.MODE_KEY: kinds.MEMORY_MODE,
                profile.DRAM_CACHE_KEY: cache}])
            if not parsed.known:
                found.append(Finding(
                    ERROR, 'invalid-dram-cache', obj,
                    '%s=%r is not a positive number of GB: %s'
                    % (profile.DRAM_CACHE_KEY, cache,
                       _rejected_in(agg)),
                    'openstack aggregate set --property %s=<GB of DRAM '
                    'cache per host> %s (nova-pmem-discover --aggregate '
                    'prints it)' % (profile.DRAM_CACHE_KEY, agg.name)))
            elif agg.hosts and all(
                    view.profiles[h].known
                    and view.profiles[h].mode not in kinds.TIERED
                    for h in agg.hosts):
                found.append(Finding(
                    WARNING, 'dram-cache-without-memory-mode', obj,
                    '%s is set but its hosts are not in Memory Mode (%s): '
                    'the cache size is ignored' % (
                        profile.DRAM_CACHE_KEY, ', '.join(sorted(
                            '%s %s' % (h, view.profiles[h].mode)
                            for h in agg.hosts))),
                    'set %s=%s on the aggregate if these hosts run in '
                    'Memory Mode, or unset %s'
                    % (profile.MODE_KEY, kinds.MEMORY_MODE,
                       profile.DRAM_CACHE_KEY)))
        if profile.DRAM_CACHE_PER_CELL_KEY in meta:
            cells = meta[profile.DRAM_CACHE_PER_CELL_KEY]
            checked = {profile.MODE_KEY: kinds.MEMORY_MODE,
                       profile.DRAM_CACHE_PER_CELL_KEY: cells}
            if profile.DRAM_CACHE_KEY in meta:
                checked[profile.DRAM_CACHE_KEY] = meta[profile.DRAM_CACHE_KEY]
            parsed = profile.from_metadata([checked])
            if not parsed.known:
                found.append(Finding(
                    ERROR, 'invalid-dram-cache-per-cell', obj,
                    '%s: %s' % (parsed.problem, _rejected_in(agg)),
                    'openstack aggregate set --property %s=<cell:GB,...> %s '
                    '(nova-pmem-discover --numa --aggregate prints it), or '
                    'openstack aggregate unset --property %s %s to split '
                    '%s evenly over the cells'
                    % (profile.DRAM_CACHE_PER_CELL_KEY, agg.name,
                       profile.DRAM_CACHE_PER_CELL_KEY, agg.name,
                       profile.DRAM_CACHE_KEY)))
        if (mode in kinds.TIERED
                and not any(key in meta for key in CACHE_KEYS)):
            uncached = [h for h in agg.hosts
                        if not any(key in a.metadata for key in CACHE_KEYS
                                   for a in view.aggregates_of.get(h, ()))]
            if uncached or not agg.hosts:
                found.append(Finding(
                    ERROR if uncached else WARNING,
                    'memory-mode-without-cache', obj,
                    '%s=%s without %s%s' % (
                        profile.MODE_KEY, mode, profile.DRAM_CACHE_KEY,
                        ' (no cache bound to keep): %s'
                        % _rejected('hosts %s' % _names(uncached))
                        if uncached else
                        ': hosts added to it will be rejected'),
                    'openstack aggregate set --property %s=<GB of DRAM '
                    'cache per host> %s' % (profile.DRAM_CACHE_KEY,
                                            agg.name)))
        multiplier = meta.get(profile.TIER_WEIGHT_MULTIPLIER_KEY)
        if multiplier is not None:
            try:
                float(multiplier)
            except (TypeError, ValueError):
                found.append(Finding(
                    WARNING, 'invalid-weight-multiplier', obj,
                    '%s=%r is not a number: Nova logs a warning and uses '
                    '[pmem] tier_weight_multiplier for %s'
                    % (profile.TIER_WEIGHT_MULTIPLIER_KEY, multiplier,
                       _hosts_note(agg)),
                    'openstack aggregate set --property %s=<number> %s'
                    % (profile.TIER_WEIGHT_MULTIPLIER_KEY, agg.name)))
    return found


# --- hosts ------------------------------------------------------------------

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


def check_hosts(snap, view):
    found = []
    config = view.config
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
            found.append(Finding(
                ERROR, 'aggregates-disagree', obj,
                '%s (%s): %s' % (label.problem, ', '.join(
                    a.name for a in view.aggregates_of[host]),
                    _rejected('the host')),
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
            finding = _check_cache_use(obj, host, label, snap, config)
            if finding:
                found.append(finding)
    if snap.fleet is not None:
        known = set(nodes) | {n for ns in nodes.values() for n in ns}
        for prof in snap.fleet:
            if prof.hostname not in known:
                found.append(Finding(
                    INFO, 'fleet-host-unknown', 'host %s' % prof.hostname,
                    'the discovered profile %s names a host that is not a '
                    'compute of this cloud' % prof.source,
                    'check the hostname in the profile, or remove the file '
                    'of a host that left the cloud'))
    return found


def _compare_discovered(obj, label, prof):
    if prof.mode != label.mode:
        return [Finding(
            ERROR, 'profile-mismatch', obj,
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
    return [Finding(
        ERROR if larger else WARNING, 'profile-mismatch', obj,
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
            found.append(Finding(
                WARNING, 'mode-trait-mismatch', obj,
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
            found.append(Finding(
                ERROR, 'near-memory-inventory-missing', obj,
                'no %s inventory in Placement, but flavors %s request it: '
                'they never land on this host' % (
                    placement.NEAR_MEMORY_RC, _names(near_requested)),
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
        expected = (placement.near_memory_inventory(
            label.mode, cache_gb)['total']
            * config.cache_overcommit_ratio)
        if abs(actual - expected) <= _MB_TOLERANCE * max(
                config.cache_overcommit_ratio, 1.0):
            return None
        larger = actual > expected
        return Finding(
            ERROR if larger else WARNING, 'near-memory-inventory-mismatch',
            obj, 'Placement offers %g MB of %s, but the DRAM cache of %g GB '
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
    return Finding(
        WARNING, 'near-memory-inventory-mismatch', obj,
        'Placement has %s MB of %s, but discovery (%s) found %g GB of DRAM '
        '(%d MB)' % (inventory.get('total'), placement.NEAR_MEMORY_RC,
                     prof.source, prof.dram_gb, expected_total),
        'regenerate the provider config with nova-pmem-discover '
        '--provider-config and restart nova-compute')


def _check_cache_use(obj, host, label, snap, config):
    placed = [(s, _hot_mb(s, config)) for s in snap.servers
              if s.host == host]
    used = sum(hot for _s, hot in placed)
    capacity = label.cache_capacity_mb(config.cache_overcommit_ratio)
    if cache.fits_cache(used, 0.0, capacity):
        return None
    placed.sort(key=lambda item: (-item[1], item[0].name, item[0].id))
    return Finding(
        ERROR, 'cache-overcommitted', obj,
        'the hot RAM placed on it, %g MB, exceeds its DRAM-cache bound of '
        '%g MB (%g GB x cache_overcommit_ratio %g): %s'
        % (used, capacity, label.dram_cache_gb,
           config.cache_overcommit_ratio, _names(
               '%s (%s, %g MB hot)' % (s.name, s.id, hot)
               for s, hot in placed)),
        'live-migrate instances away (openstack server migrate --live-'
        'migration SERVER), largest hot RAM first, until the bound holds; '
        'if the cache size was lowered on purpose, new boots already '
        'respect it')


# --- flavors ----------------------------------------------------------------

def _spec_lookalike(key):
    """The pmem: key a misspelt extra-spec key stands for, or None."""
    if key.startswith(extra_specs.NAMESPACE + ':'):
        return None
    normal = key.strip().lower()
    for sep in ('_', '.', '-', '='):
        if normal.startswith(extra_specs.NAMESPACE + sep):
            normal = extra_specs.NAMESPACE + ':' + normal[len(sep) + 4:]
            break
    if normal in PMEM_SPEC_KEYS:
        return normal
    if normal.startswith(extra_specs.NAMESPACE):
        return _suggest(normal, PMEM_SPEC_KEYS, 0.6)
    return None


def _spec_fix(key, value, flavor):
    if key in extra_specs.RULES:
        return ('openstack flavor set --property %s=<%s> %s'
                % (key, extra_specs.RULES[key][0], flavor))
    right = _suggest(key, PMEM_SPEC_KEYS, 0.0)
    try:
        extra_specs.validate(right, value)
    except extra_specs.InvalidExtraSpec:
        value = '<%s>' % extra_specs.RULES[right][0]
    return ('openstack flavor set --property %s=%s %s && openstack flavor '
            'unset --property %s %s' % (right, value, flavor, key, flavor))


def check_flavors(snap, view):
    found = []
    mm_hosts = _memory_mode_hosts(view)
    any_accounted = any(
        placement.requested_near_memory(f.extra_specs) is not None
        for f, _r in _memory_mode_flavors(snap, view))
    for flavor in snap.flavors:
        obj = 'flavor %s' % flavor.name
        specs = flavor.extra_specs
        bad = False
        for key in sorted(k for k in specs
                          if k.startswith(extra_specs.NAMESPACE + ':')):
            try:
                extra_specs.validate(key, specs[key])
            except extra_specs.InvalidExtraSpec as exc:
                bad = True
                found.append(Finding(
                    ERROR, 'invalid-extra-spec', obj,
                    '%s: the filters reject every host for it (NoValidHost) '
                    'and count all RAM of its instances as hot' % exc,
                    _spec_fix(key, specs[key], flavor.name)))
        for key in sorted(specs):
            lookalike = _spec_lookalike(key)
            if lookalike:
                found.append(Finding(
                    WARNING, 'misspelt-key', obj,
                    'extra spec %r is not read by the filters; it looks '
                    'like %s' % (key, lookalike),
                    'openstack flavor set --property %s=%s %s && openstack '
                    'flavor unset --property %s %s'
                    % (lookalike, specs[key], flavor.name, key,
                       flavor.name)))
        if bad:
            continue
        request, _error = view.requests[flavor.name]
        if request.conflict:
            found.append(Finding(
                ERROR, 'vpmem-modes-conflict', obj,
                '%s: PmemModeFilter rejects every host for it' %
                request.conflict,
                'add app_direct to %s, or remove %s'
                % (extra_specs.MODES_KEY, extra_specs.VPMEM_KEY)))
            continue
        requested = placement.requested_near_memory(specs)
        if requested is not None:
            expected = placement.near_memory_mb(flavor.ram_mb,
                                                request.hot_ratio)
            if requested != expected:
                less = requested < expected
                found.append(Finding(
                    ERROR if less else WARNING, 'near-memory-mismatch', obj,
                    'requests %d MB of %s, but %d MB RAM x hot ratio %g is '
                    '%d MB: Placement admits %s instances than the DRAM '
                    'cache holds' % (requested, placement.NEAR_MEMORY_RC,
                                     flavor.ram_mb, request.hot_ratio,
                                     expected, 'more' if less else 'fewer'),
                    'openstack flavor set --property %s=%d %s'
                    % (placement.NEAR_MEMORY_KEY, expected, flavor.name)))
        elif (mm_hosts and any_accounted
              and kinds.TIERED & request.modes):
            found.append(Finding(
                WARNING, 'placement-accounting-partial', obj,
                'it may land on Memory-Mode hosts but does not request %s, '
                'while other flavors do: Placement does not see the DRAM '
                'cache its instances use, and admits the other flavors '
                'into it' % placement.NEAR_MEMORY_RC,
                'openstack flavor set --property %s=%d %s'
                % (placement.NEAR_MEMORY_KEY, placement.near_memory_mb(
                    flavor.ram_mb, request.hot_ratio), flavor.name)))
    return found


# --- vPMEM and NUMA ----------------------------------------------------------

VPMEM_DOC = 'doc/source/numa-vpmem.rst'


def _vpmem_labels(server):
    return extra_specs.vpmem_labels(server.extra_specs)


def _label_nodes(label, prof, inventories):
    """NUMA nodes of the namespaces Nova may give for ``label``, or a reason.

    Labels are mapped to namespaces by [libvirt] pmem_namespaces on the
    compute host, which the doctor cannot read: it takes discovery's rule
    (nova-pmem-discover --libvirt) and trusts it only where Placement has
    as many CUSTOM_PMEM_NAMESPACE_<LABEL> as the rule finds namespaces.
    """
    named = [ns for ns in prof.namespaces
             if ns.mode == 'devdax' and ns.name
             and vpmem.label_for(ns.size_gb) == label]
    rc = vpmem.resource_class(label)
    totals = {inv[rc].get('total') for inv in inventories if rc in inv}
    if not named or totals != {len(named)}:
        return None, ('label %s: discovery (%s) finds %d namespace(s) of '
                      'that size, Placement has %s %s'
                      % (label, prof.source, len(named),
                         ' or '.join(str(t) for t in sorted(totals))
                         if totals else 'no', rc))
    if any(ns.numa_node is None for ns in named):
        return None, ('label %s: discovery (%s) has no NUMA node for its '
                      'namespaces' % (label, prof.source))
    return {ns.name: ns.numa_node for ns in named}, None


def _where(names):
    """'ns0, ns1 on node 1' from {name: node}."""
    by_node = {}
    for name, node in sorted(names.items()):
        by_node.setdefault(node, []).append(name)
    return '; '.join('%s on node %d' % (', '.join(ns), node)
                     for node, ns in sorted(by_node.items()))


def check_vpmem_numa(snap, view):
    """Instances whose vPMEM is not on the host node of their guest node 0.

    Nova's libvirt driver claims any free namespace of the label, whatever
    the instance's host NUMA cells, and attaches every vPMEM to guest NUMA
    node 0 (doc/source/numa-vpmem.rst).
    """
    found = []
    nodes = {c.host: c.nodes for c in snap.computes}
    by_host = {}
    for server in snap.servers:
        if server.host and _vpmem_labels(server):
            by_host.setdefault(server.host, []).append(server)
    for host in sorted(by_host):
        obj = 'host %s' % host
        servers = sorted(by_host[host], key=lambda s: (s.name, s.id))
        multi = [s for s in servers if s.numa_nodes
                 and len(s.numa_nodes) > 1]
        if multi:
            found.append(Finding(
                WARNING, 'vpmem-guest-numa-nodes', obj,
                'instances with vPMEM and several guest NUMA nodes see '
                'their vPMEM on guest node 0 only (Nova attaches every '
                'vPMEM there); the vCPUs of the other nodes reach it '
                'across sockets: %s' % _names(
                    '%s (%s, host nodes %s)' % (
                        s.name, s.id, ','.join(str(n) for n in s.numa_nodes))
                    for s in multi),
                'give vPMEM flavors hw:numa_nodes=1 (see %s); existing '
                'instances keep their layout until resized to such a '
                'flavor' % VPMEM_DOC))
        prof = view.discovered.get(host)
        inventories = [snap.providers[n].inventories
                       for n in nodes.get(host, ())
                       if n in snap.providers]
        remote = []
        unknown = []
        for server in servers:
            what = '%s (%s)' % (server.name, server.id)
            if not server.numa_nodes:
                unknown.append('%s: its host NUMA nodes are not visible '
                               '(GET /servers/%s/topology at microversion '
                               '%s gave no host_node)'
                               % (what, server.id,
                                  snapshot.TOPOLOGY_MICROVERSION))
                continue
            if prof is None:
                # Without --fleet the namespaces' nodes are unknown; the
                # doctor says nothing rather than guess.
                continue
            local = server.numa_nodes[0]
            for label in _vpmem_labels(server):
                names, reason = _label_nodes(label, prof, inventories)
                if names is None:
                    unknown.append('%s: %s' % (what, reason))
                elif local not in names.values():
                    remote.append('%s: guest node 0 on host node %d, %s '
                                  'namespaces %s' % (what, local, label,
                                                     _where(names)))
                elif set(names.values()) != {local}:
                    unknown.append(
                        '%s: guest node 0 on host node %d; Nova\'s API '
                        'does not say which %s namespace it holds (%s)'
                        % (what, local, label, _where(names)))
        if remote:
            found.append(Finding(
                WARNING, 'vpmem-numa-remote', obj,
                'instances whose vPMEM namespace is on another NUMA node '
                'than their guest node 0, so every access crosses sockets: '
                '%s' % _names(remote),
                'carve namespaces of each label on every socket '
                '(nova-pmem-discover --libvirt --plan spreads them), then '
                'cold-migrate these instances (openstack server migrate '
                'SERVER): Nova draws a namespace without regard to NUMA, '
                'so check again with the doctor (see %s)' % VPMEM_DOC))
        if unknown:
            found.append(Finding(
                INFO, 'vpmem-numa-unknown', obj,
                'cannot tell whether the vPMEM of these instances is on the '
                'NUMA node of their guest node 0: %s' % _names(unknown),
                'run nova-pmem-discover on the host into the --fleet '
                'directory; on the host, virsh dumpxml INSTANCE shows the '
                '/dev/daxX.Y each vPMEM uses and ndctl list -N -v its '
                'numa_node'))
    return found


CHECKS = (check_config, check_aggregates, check_flavors, check_hosts,
          check_vpmem_numa)


def run(snap):
    """Every finding about the cloud of ``snap``, errors first."""
    view = _view(snap)
    found = []
    for check in CHECKS:
        found.extend(check(snap, view))
    return sorted(found, key=Finding.sort_key)
