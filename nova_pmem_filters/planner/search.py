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
"""Search every DIMM population of one platform and CPU within a budget.

A population is what one socket carries; sockets are populated alike (the
asymmetric-sockets rule of :mod:`nova_pmem_filters.planner.population`), so one
socket is enumerated and replicated. Capacity, cost,
watts and every population rule depend only on how many modules of each type
a socket holds, never on which slot holds which, so the search enumerates
count vectors, not slot assignments:

* DRAM: every vector of counts over the DRAM types with at most
  ``channels x slots_per_channel`` modules in all;
* PMem: for each PMem capacity (all PMem of a node is one size), every
  vector of counts over the PMem types of that capacity with 1 to
  ``channels`` modules (at most one PMem module per channel);
* ``dram`` mode takes the DRAM vectors alone (not the empty one: a socket
  carries at least one module); ``memory_mode`` and ``app_direct`` take
  every DRAM vector beside every PMem vector with at most
  ``channels x slots_per_channel`` modules in all.

Such counts can always be laid out in the slots (one PMem module on each of
the first channels, DRAM in the rest), and every vector is built once, so
there is nothing to deduplicate afterwards.

Prices are never negative, so the vectors are grown one DIMM type at a time
in numpy and a partial vector that already costs more than the top of the
budget band is dropped with all its extensions. Only the vectors whose node
cost falls in the band are turned into node configurations; those are
judged by :func:`nova_pmem_filters.planner.population.check` (no errors: valid)
and measured by the node model (:func:`nova_pmem_filters.planner.model.node`
and :func:`nova_pmem_filters.planner.model.fit`), which apply the scheduler's
own arithmetic. :class:`NaiveSearch` is the slot-by-slot enumeration the fast
one is tested and timed against.
"""

import math

from nova_pmem_filters.core.formats import scenario_schema as sch
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.planner import enumeration
from nova_pmem_filters.planner import errors
from nova_pmem_filters.planner import model
from nova_pmem_filters.planner import population
from nova_pmem_filters.planner.population import common
from nova_pmem_filters.planner.population import cpus
from nova_pmem_filters.planner import ranking


DEFAULT_OBJECTIVE = 'cost_per_vm'
DEFAULT_BAND = 0.10
DEFAULT_LIMIT = 20

# The table of ``search`` without --long; the config name spells the mode
# (dram-, mm-, ad-) and the population out.
SHORT_COLUMNS = ('rank', 'config', 'vms_per_node', 'binding',
                 'cost_per_vm', 'vms_per_kw', 'node_throughput', 'warnings',
                 'equivalents')


def _lookup(table, name, option, what):
    try:
        return table[name]
    except KeyError:
        raise errors.PlannerError('%s: unknown %s %r (known: %s)'
                                  % (option, what, name,
                                     ', '.join(sorted(table))))


def _modes(requested, workload, pmem, cxl=()):
    if not requested:
        # The modes the flavor's pmem:modes extra spec allows, and of
        # those only the ones the DIMMs can build.
        modes = [m for m in kinds.ALL_MODES if workload.request.allows(m)
                 and (pmem or m not in enumeration.PMEM_MODES)
                 and (cxl or m not in enumeration.CXL_MODES)]
        if not modes:
            raise errors.PlannerError(
                '--modes: workload %s runs only in %s, which need PMem, and '
                'no PMem DIMM was given' % (workload.name, ', '.join(
                    sorted(workload.request.modes))))
        return tuple(modes)
    modes = []
    for item in requested:
        for mode in item.split(','):
            mode = mode.strip()
            if mode not in kinds.ALL_MODES:
                raise errors.PlannerError(
                    '--modes: unknown mode %r (known: %s)'
                    % (mode, ', '.join(kinds.ALL_MODES)))
            if mode in enumeration.CXL_MODES and not cxl:
                raise errors.PlannerError(
                    '--modes: mode %s needs CXL memory devices and none was '
                    'given or none fits this platform and CPU' % mode)
            if mode in enumeration.PMEM_MODES and not pmem:
                raise errors.PlannerError(
                    '--modes: mode %s needs PMem DIMMs and none was given '
                    'or none fits this platform and CPU' % mode)
            if mode not in modes:
                modes.append(mode)
    return tuple(modes)


def _number(value, option, integer=False, positive=False):
    try:
        number = int(value) if integer else float(value)
    except (TypeError, ValueError, OverflowError):
        number = math.nan
    if math.isnan(number):
        raise errors.PlannerError('%s: expected %s, got %r' % (
            option, 'a whole number' if integer else 'a number', value))
    # The scenario's bound on every number, in its words: 1e300 was an
    # 884-character message with two 300-digit numbers.
    if number > sch.NUMBER_LIMIT:
        raise errors.PlannerError('%s: must be at most %s, got %s' % (
            option, sch.short_number(sch.NUMBER_LIMIT),
            sch.short_number(number)))
    if number < 0 or (positive and number == 0):
        raise errors.PlannerError('%s: must be %s, got %r' % (
            option, 'greater than 0' if positive else 'at least 0', value))
    return number


def run(scen, platform, cpu, workload=None, dimms=None, modes=None,
        budget=None, band=DEFAULT_BAND, objective=DEFAULT_OBJECTIVE,
        limit=DEFAULT_LIMIT, progress=None):
    """Search, by names as the command line gives them.

    :param scen: a loaded scenario (catalog, workloads, policies).
    :param dimms: DIMM names; default every DIMM the platform and CPU take.
    :param modes: mode names (comma lists allowed); default the modes the
        workload's flavor allows.
    :param budget: node cost; default the scenario baseline's.
    :param progress: called as ``progress(text, done, total)`` as the
        search goes (``done`` and ``total`` may be None).
    :raises errors.PlannerError: with a one-line message.
    """
    catalog = scen.catalog
    if not platform:
        raise errors.PlannerError('--platform: required (known: %s)'
                                  % ', '.join(sorted(catalog.platforms)))
    if not cpu:
        raise errors.PlannerError('--cpu: required (known: %s)'
                                  % ', '.join(sorted(catalog.cpus)))
    plat = _lookup(catalog.platforms, platform, '--platform', 'platform')
    proc = _lookup(catalog.cpus, cpu, '--cpu', 'CPU')
    # The scenario loader refuses such a configuration by the same rule;
    # searching it would rank populations of a machine that cannot exist.
    problem = cpus.cpu_problem(plat, proc, catalog)
    if problem is not None:
        raise errors.PlannerError('--cpu: %s (%s) [%s]' % (
            problem.message, problem.code, problem.source))
    work = _lookup(scen.workloads, workload or next(iter(scen.workloads)),
                   '--workload', 'workload')
    if objective not in ranking.OBJECTIVES:
        raise errors.PlannerError(
            '--objective: unknown objective %r (known: %s)'
            % (objective, ', '.join(ranking.OBJECTIVES)))
    if dimms:
        chosen = []
        for name in dimms:
            dimm = _lookup(catalog.dimms, name, '--dimm', 'DIMM')
            problem = enumeration.dimm_problem(plat, proc, dimm)
            if problem is not None:
                raise errors.PlannerError(
                    '--dimm: %s cannot be used on platform %s with CPU %s: '
                    '%s (%s) [%s]' % (name, plat.name, proc.name,
                                      problem.message, problem.code,
                                      problem.source))
            chosen.append(dimm)
        chosen = sorted(set(chosen), key=enumeration.dimm_order)
    else:
        chosen = enumeration.usable_dimms(catalog, plat, proc)
    pmem = [d for d in chosen if d.is_pmem]
    mode_list = _modes(modes, work, pmem, enumeration._cxl(chosen))
    if budget is None:
        budget = model.node(scen.configs[scen.baseline], scen.policies).cost
    budget = _number(budget, '--budget', positive=True)
    band = _number(band, '--band')
    limit = _number(limit, '--limit', integer=True)
    low, high = enumeration.band_limits(budget, band)

    def judged(done, total, valid):
        progress('populations judged, %d valid (%s with %s)'
                 % (valid, plat.name, proc.name), done, total)

    if progress is not None:
        progress('enumerating populations of %s with %s costing %.2f to '
                 '%.2f (%s)' % (plat.name, proc.name, low, high,
                                ', '.join(mode_list)), None, None)
    nodes = enumeration.find(
        plat, proc, chosen, mode_list, low, high, scen.policies,
        progress=judged if progress is not None else None)
    if not nodes:
        raise errors.PlannerError(_nothing_found(
            plat, proc, chosen, mode_list, budget, band, low, high,
            scen.policies))
    cal = model.calibrate(scen)
    t_hit = cal[work.name].t_hit if work.name in cal else None
    by_name = {n.config.name: n for n in nodes}
    fits = {}
    for index, (name, n) in enumerate(by_name.items(), start=1):
        fits[name] = model.fit(n, work, scen.policies, scen.performance,
                               t_hit=t_hit)
        if progress is not None and (index % enumeration.PROGRESS_BATCH == 0
                                     or index == len(by_name)):
            progress('sizing for workload %s' % work.name, index,
                     len(by_name))
    return ranking.Result(
        frame=ranking.rank(fits, by_name, objective, budget, limit),
        nodes=by_name, platform=plat, cpu=proc, workload=work,
        dimms=tuple(chosen), modes=mode_list, budget=budget, low=low,
        high=high, objective=objective)


def _nothing_found(platform, cpu, dimms, modes, budget, band, low, high,
                   policies):
    short = sch.short_number
    what = ('no valid population of platform %s with CPU %s (%s; %s) costs '
            '%s +-%g%% (%s to %s)'
            % (platform.name, cpu.name, ', '.join(modes),
               ', '.join(d.name for d in dimms) or 'no DIMMs', short(budget),
               100.0 * band, short(round(low, 2)), short(round(high, 2))))
    inside = enumeration.candidates(platform, cpu, dimms, modes, low, high)
    if inside:
        mode, per = inside[0]
        findings = common.errors(population.check(
            enumeration.make_config(platform, cpu, mode, per)))
        first = findings[0] if findings else None
        return ('%s: the %d populations in the band are all invalid, e.g. '
                '%s: %s (%s)' % (what, len(inside), enumeration.make_config(
                    platform, cpu, mode, per).name,
                    first.message if first else 'out of band',
                    first.code if first else '-'))
    cheapest, dearest = enumeration.cost_range(platform, cpu, dimms, modes)
    return ('%s; populations of these DIMMs cost %s to %s per node: '
            'change --budget or widen --band'
            % (what, short(round(cheapest, 2)), short(round(dearest, 2))))
