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
"""Checks of the scheduler's nova.conf: our filters and weighers loaded and
enabled, and a cache bound that several workers can keep.
"""

import math

from nova_pmem_filters.conf import nova_scheduler
from nova_pmem_filters.conf import schedulerconf
from nova_pmem_filters.core.rules import classes
from nova_pmem_filters.doctor import cloud
from nova_pmem_filters.doctor import findings


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


# The weigher each [pmem] multiplier option scales.
MULTIPLIER_WEIGHERS = {
    'tier_weight_multiplier': classes.TIER_WEIGHER,
    'cache_headroom_weight_multiplier': classes.HEADROOM_WEIGHER,
    'numa_cell_weight_multiplier': classes.NUMA_CELL_WEIGHER,
}


def _conf_object(group, option):
    return 'nova.conf [%s] %s' % (group, option)


def loadable_filters(available):
    """Class names enabled_filters may use, or None if not known here.

    As nova-scheduler matches them: ``__name__`` of the classes that
    ``available_filters`` loads. None when it names a loader of another
    package, whose classes the doctor cannot list without importing it.
    """
    names = set()
    for entry in available:
        if entry == nova_scheduler.NOVA_ALL_FILTERS:
            names |= nova_scheduler.NOVA_FILTERS
        elif entry == classes.ALL_FILTERS:
            names |= set(classes.FILTERS)
        else:
            last = entry.rpartition('.')[2]
            if not last[:1].isupper():
                return None
            names.add(last)
    return names


def _filter_lookalike(name, names):
    for known in sorted(names):
        if known.lower() == name.lower():
            return known
    return findings.suggest(name, sorted(names), 0.8)


def _enabled_fix(enabled, unknown, add, also=''):
    """The enabled_filters line without ``unknown`` names, with ``add``."""
    fixed = []
    for name in enabled:
        if name in unknown:
            name = unknown[name]
        if name and name not in fixed:
            fixed.append(name)
    fixed += [name for name in add if name not in fixed]
    return ('set [filter_scheduler] enabled_filters = %s%s and restart '
            'nova-scheduler' % (','.join(fixed), also))


def _multiplier_findings(conf):
    found = []
    weighers = set(conf.weight_classes)
    for option, value in conf.weight_multipliers:
        if math.isfinite(value):
            continue
        weigher = MULTIPLIER_WEIGHERS[option]
        loaded = (classes.ALL_WEIGHERS in weighers or '%s.%s' % (
            classes.WEIGHERS_MODULE, weigher) in weighers)
        found.append(findings.Finding(
            findings.ERROR if loaded else findings.WARNING,
            'weight-multiplier-not-finite', _conf_object('pmem', option),
            '%s = %s is not a finite number: %s' % (
                option, value,
                'the scheduler adds %s x score to every host\'s weight, '
                'so every weight is NaN (or infinite) and hosts are '
                'chosen in no useful order, whatever Nova\'s weighers say'
                % option if loaded else
                '%s is not loaded now, but every host\'s weight becomes '
                'NaN once it is' % weigher),
            'set [pmem] %s to a finite number (the default is %g) and '
            'restart nova-scheduler'
            % (option, schedulerconf.defaults_of(option))))
    return found


def check(snap, view):
    if snap.config is None:
        return [findings.Finding(
            findings.INFO, 'nova-conf-not-read', 'nova.conf',
            'no nova.conf was given, so the scheduler settings were not '
            'audited; the [pmem] defaults were assumed (default_host_mode '
            '%s, default_hot_ratio %g, cache_overcommit_ratio %g)'
            % (view.config.default_host_mode, view.config.default_hot_ratio,
               view.config.cache_overcommit_ratio),
            'run the doctor with --config-file /etc/nova/nova.conf (the '
            'file nova-scheduler reads)')]
    conf = snap.config
    # Whether the cache filter has a bound to keep: Memory-Mode hosts and
    # flavors whose hot RAM Placement does not account.
    mm_hosts = cloud.tiered_hosts(view)
    unaccounted = cloud.unaccounted(snap, view)
    needs_cache_filter = bool(mm_hosts and unaccounted)
    unknown = _unknown_filters(conf)
    missing = [name for name in classes.FILTERS
               if name not in conf.enabled_filters
               and (name != classes.CACHE_FILTER or needs_cache_filter)]
    found = _filters_unknown(conf, unknown, missing)
    found += _our_filters(conf, unknown, missing, needs_cache_filter,
                          unaccounted)
    found += _multiplier_findings(conf)
    found += _weighers(conf)
    found += _workers(conf, needs_cache_filter, unaccounted)
    return found


def _unknown_filters(conf):
    """Unknown names of enabled_filters, each to the name it stands for.

    None for a name to drop; {} when the loadable names are not known here.
    """
    loadable = loadable_filters(conf.available_filters)
    unknown = {}
    if loadable is not None:
        for name in conf.enabled_filters:
            if name not in loadable and name not in classes.FILTERS:
                unknown[name] = _filter_lookalike(
                    name, loadable | set(classes.FILTERS))
    return unknown


def _filters_unknown(conf, unknown, missing):
    """filter-unknown: names nova-scheduler cannot load."""
    return [findings.Finding(
        findings.ERROR, 'filter-unknown',
        _conf_object('filter_scheduler', 'enabled_filters'),
        '%r is in enabled_filters but is no filter available_filters '
        'loads (names match the class, case included)%s: '
        'nova-scheduler does not start (SchedulerHostFilterNotFound)'
        % (name, '; it looks like %s' % right if right else ''),
        _enabled_fix(conf.enabled_filters, unknown, missing))
        for name, right in sorted(unknown.items())]


def _our_filters(conf, unknown, missing, needs_cache_filter, unaccounted):
    """filter-not-available, filter-not-enabled: each of our filters."""
    available = set(conf.available_filters)
    enabled = set(conf.enabled_filters)
    found = []
    # One finding for the key: every filter it lacks has the same fix.
    not_available = []
    for name in classes.FILTERS:
        path = '%s.%s' % (classes.FILTERS_MODULE, name)
        is_available = (classes.ALL_FILTERS in available
                        or path in available)
        if name in enabled:
            if not is_available:
                not_available.append(name)
            continue
        if name == 'PmemCacheFilter' and not needs_cache_filter:
            # Without Memory-Mode hosts, or with every flavor accounted in
            # Placement, the filter has nothing to add.
            continue
        why = ('host memory modes and pmem:modes are ignored: flavors land '
               'on any host' if name == 'PmemModeFilter' else
               'nothing keeps the hot RAM of %s within the DRAM cache of '
               'the Memory-Mode hosts'
               % findings.names(f.name for f in unaccounted))
        found.append(findings.Finding(
            findings.ERROR, 'filter-not-enabled',
            _conf_object('filter_scheduler', 'enabled_filters'),
            '%s is not enabled: %s' % (name, why),
            ('append %s to [filter_scheduler] enabled_filters%s and '
             'restart nova-scheduler' % (name, '' if is_available else
                                         ', add "available_filters = %s"'
                                         % classes.ALL_FILTERS))
            if not unknown else
            # The line also holds names nova-scheduler refuses: print it
            # whole, so that the fix does not keep them.
            _enabled_fix(conf.enabled_filters, unknown, missing,
                         '' if is_available else
                         ', add "available_filters = %s"'
                         % classes.ALL_FILTERS)))
    if not_available:
        found.append(findings.Finding(
            findings.ERROR, 'filter-not-available',
            _conf_object('filter_scheduler', 'available_filters'),
            '%s in enabled_filters but not in available_filters: '
            'nova-scheduler does not start (SchedulerHostFilterNotFound)'
            % findings.are(not_available),
            'add the line "available_filters = %s" to '
            '[filter_scheduler], keeping Nova\'s own '
            '(nova.scheduler.filters.all_filters)' % classes.ALL_FILTERS))
    return found


def _weighers(conf):
    """weighers-not-configured, nova-weighers-dropped."""
    found = []
    weighers = set(conf.weight_classes)
    if classes.ALL_WEIGHERS not in weighers:
        missing = [w for w in classes.WEIGHERS
                   if '%s.%s' % (classes.WEIGHERS_MODULE, w) not in weighers]
        if missing:
            found.append(findings.Finding(
                findings.WARNING, 'weighers-not-configured',
                _conf_object('filter_scheduler', 'weight_classes'),
                '%s not in weight_classes: %s'
                % (findings.are(missing),
                   '; '.join(WEIGHER_ROLES[w] for w in missing)),
                'set [filter_scheduler] weight_classes = '
                'nova.scheduler.weights.all_weighers,%s'
                % classes.ALL_WEIGHERS))
    if (any(w.startswith(classes.WEIGHERS_MODULE) for w in weighers)
            and not any(w.startswith(NOVA_WEIGHERS_PREFIX)
                        for w in weighers)):
        found.append(findings.Finding(
            findings.WARNING, 'nova-weighers-dropped',
            _conf_object('filter_scheduler', 'weight_classes'),
            'weight_classes lists our weighers but none of Nova\'s: it '
            'replaces Nova\'s default, so the RAM, CPU, disk and other '
            'weighers of Nova are off',
            'set [filter_scheduler] weight_classes = '
            'nova.scheduler.weights.all_weighers,%s' % classes.ALL_WEIGHERS))
    return found


def _workers(conf, needs_cache_filter, unaccounted):
    """filter-only-cache-accounting: workers and a filter-kept bound."""
    workers = conf.scheduler_workers
    if not ('PmemCacheFilter' in conf.enabled_filters and needs_cache_filter
            and (workers is None or workers > 1)):
        return []
    return [findings.Finding(
        findings.WARNING, 'filter-only-cache-accounting',
        _conf_object('scheduler', 'workers'),
        '%s, and the DRAM-cache bound of flavors %s is kept by '
        'PmemCacheFilter alone: workers schedule concurrently and can '
        'admit more hot RAM than a cache holds (%s)'
        % ('%d nova-scheduler workers' % workers if workers else
           'workers is unset, so nova-scheduler runs one worker per CPU',
           findings.names(f.name for f in unaccounted),
           MEASURED_OVER_ADMISSION),
        PLACEMENT_ACCOUNTING_FIX + ', or set [scheduler] workers = 1')]
