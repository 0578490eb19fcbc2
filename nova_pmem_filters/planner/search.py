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

import collections
import dataclasses
import itertools
import math

import numpy as np
import pandas as pd


from nova_pmem_filters.core.formats import scenario as document
from nova_pmem_filters.core.rules import kinds

from nova_pmem_filters.planner import errors
from nova_pmem_filters.planner import model
from nova_pmem_filters.planner import population
from nova_pmem_filters.planner import scenario

# Objective -> True when a larger value is better.
OBJECTIVES = {
    'cost_per_vm': False,
    'vms_per_node': True,
    'vms_per_kw': True,
    'node_throughput': True,
}
DEFAULT_OBJECTIVE = 'cost_per_vm'
DEFAULT_BAND = 0.10
DEFAULT_LIMIT = 20
# Populations judged between two progress reports.
PROGRESS_BATCH = 1000

# Ties on the objective are broken by these, in order.
_TIE_BREAKERS = (('cost_per_vm', True), ('vms_per_node', False),
                 ('node_cost', True), ('node_watts', True), ('config', True))

MODE_PREFIX = {kinds.DRAM: 'dram', kinds.MEMORY_MODE: 'mm',
               kinds.APP_DIRECT: 'ad', kinds.CXL_FLAT: 'flat',
               kinds.CXL_KMEM: 'kmem', kinds.CXL_DEVDAX: 'devdax'}

# Modes that run on DRAM and CXL memory devices. A socket carries 1 to
# (CXL lanes // device lanes) devices of one capacity beside its DRAM;
# the lane, ratio and CPU rules (nova_pmem_filters.planner.population.cxl)
# judge them after.
CXL_MODES = kinds.CXL_MODES

# Modes that run on DRAM and PMem; ``dram`` is searched with DRAM only.
PMEM_MODES = (kinds.MEMORY_MODE, kinds.APP_DIRECT)

# Findings on a node with a single module of one type that mean the type can
# never be installed with this platform and CPU.
DIMM_CODES = frozenset(['pmem-unsupported-cpu', 'pmem-unsupported-platform',
                        'pmem-module-too-large', 'memory-limit',
                        'dimm-type-unsupported', 'cxl-unsupported-cpu',
                        'cxl-unsupported-platform', 'cxl-lanes'])

COLUMNS = ('rank', 'config', 'mode', 'population', 'visible_memory_gb',
           'dram_cache_gb', 'vms_per_node', 'binding', 'node_cost',
           'cost_vs_budget', 'cost_per_vm', 'node_watts', 'vms_per_kw',
           'node_throughput', 'warnings', 'equivalents')
# The table of ``search`` without --long; the config name spells the mode
# (dram-, mm-, ad-) and the population out.
SHORT_COLUMNS = ('rank', 'config', 'vms_per_node', 'binding',
                 'cost_per_vm', 'vms_per_kw', 'node_throughput', 'warnings',
                 'equivalents')

# Relative tolerance of the band edges: a population priced exactly at an
# edge is in, whatever order its prices were added in.
_EDGE = 1e-9
# Wider tolerance of the cost pre-filters, so that they never drop a
# population the final test on the model's node cost would keep.
_SLACK = 1e-6


def band_limits(budget, band):
    """(lowest, highest) node cost within ``budget`` +- ``band``."""
    return budget * (1.0 - band), budget * (1.0 + band)


def in_band(cost, low, high, tolerance=_EDGE):
    slack = tolerance * max(1.0, abs(low), abs(high))
    return low - slack <= cost <= high + slack


def _dimm_order(dimm):
    return (dimm.is_pmem, dimm.capacity_gb, dimm.name)


def dimm_labels(dimms):
    """Short label of each DIMM type for configuration names, by name.

    The capacity in GB ("16"), unless another type of the same kind (DRAM or
    PMem) has that capacity too; then the DIMM's name.
    """
    labels = {}
    for dimm in dimms:
        text = '%g' % dimm.capacity_gb
        same = [d for d in dimms if d.is_pmem == dimm.is_pmem
                and '%g' % d.capacity_gb == text]
        labels[dimm.name] = text if len(same) == 1 else dimm.name
    return labels


def config_name(mode, per_socket, labels=None):
    """A name such as ``mm-6x16+2x128``: mode, then modules per socket.

    DRAM comes first and PMem last, each by capacity.

    :param labels: {DIMM name: label}; default :func:`dimm_labels` of the
        DIMMs of ``per_socket``.
    """
    if labels is None:
        labels = dimm_labels(list(per_socket))
    parts = ['%dx%s' % (n, labels.get(d.name, d.name))
             for d, n in sorted(per_socket.items(),
                                key=lambda kv: _dimm_order(kv[0])) if n]
    return '%s-%s' % (MODE_PREFIX.get(mode, mode),
                      '+'.join(parts) or 'empty')


def make_config(platform, cpu, mode, per_socket, labels=None):
    """The NodeConfig with ``per_socket`` ({Dimm: count}) on every socket."""
    per = {d: int(n) for d, n in per_socket.items() if n}
    return scenario.NodeConfig(
        name=config_name(mode, per, labels), platform=platform, cpu=cpu,
        mode=mode, sockets=tuple(dict(per) for _ in range(platform.sockets)))


def dimm_problem(platform, cpu, dimm):
    """The finding that keeps ``dimm`` out of this platform and CPU, or None.

    Asked of the population rules themselves: one module of the type on
    each socket, in ``app_direct`` mode for PMem and ``dram`` mode for DRAM.
    """
    mode = (kinds.APP_DIRECT if dimm.is_pmem else
            kinds.CXL_KMEM if dimm.is_cxl else kinds.DRAM)
    probe = make_config(platform, cpu, mode, {dimm: 1})
    for finding in population.errors(population.check(probe)):
        if finding.code in DIMM_CODES:
            return finding
    return None


def usable_dimms(catalog, platform, cpu):
    """The catalog's DIMM types this platform and CPU can take."""
    return sorted((d for d in catalog.dimms.values()
                   if dimm_problem(platform, cpu, d) is None),
                  key=_dimm_order)


def _fixed_cost(platform, cpu):
    # model.node: base + CPUs + every module; only the modules vary here.
    return platform.base_cost + cpu.price * platform.sockets


def _split(dimms):
    unique = sorted(set(dimms), key=_dimm_order)
    return ([d for d in unique if d.is_dram],
            [d for d in unique if d.is_pmem])


def _cxl(dimms):
    return sorted({d for d in dimms if d.is_cxl}, key=_dimm_order)


def _capacity_groups(pmem):
    groups = collections.defaultdict(list)
    for dimm in pmem:
        groups[dimm.capacity_gb].append(dimm)
    return [groups[c] for c in sorted(groups)]


def compositions(dimms, max_total, max_cost, min_total=0):
    """Count vectors over ``dimms`` that fit the modules and the price.

    Every vector with ``min_total`` to ``max_total`` modules whose price is
    at most ``max_cost``.

    :returns: (counts, cost, total): an int array of one row per vector and
        one column per DIMM type, and the price and module count of each
        row.
    """
    counts = np.zeros((1, 0), dtype=np.int64)
    cost = np.zeros(1)
    total = np.zeros(1, dtype=np.int64)
    if max_cost < 0:
        return counts[:0], cost[:0], total[:0]
    steps = np.arange(max_total + 1)
    for dimm in dimms:
        new_total = total[:, None] + steps[None, :]
        new_cost = cost[:, None] + dimm.price * steps[None, :]
        # Prices are not negative: a vector over budget stays over budget
        # whatever the types after this one add, so it is dropped here.
        rows, cols = np.nonzero((new_total <= max_total)
                                & (new_cost <= max_cost))
        counts = np.column_stack([counts[rows], steps[cols]])
        cost = new_cost[rows, cols]
        total = new_total[rows, cols]
    keep = total >= min_total
    return counts[keep], cost[keep], total[keep]


def candidates(platform, cpu, dimms, modes, low, high):
    """Per-socket populations whose node cost is in [low, high].

    Nothing is judged here: the population rules come after.

    :returns: a list of (mode, {Dimm: modules per socket}), each population
        once.
    """
    dram, pmem = _split(dimms)
    slots = platform.slots_per_socket
    sockets = platform.sockets
    fixed = _fixed_cost(platform, cpu)
    slack = _SLACK * max(1.0, abs(low), abs(high))
    socket_low = (low - slack - fixed) / sockets
    socket_high = (high + slack - fixed) / sockets
    found = []
    d_counts, d_cost, d_total = compositions(dram, slots, socket_high)
    d_rows = d_counts.tolist()
    if kinds.DRAM in modes:
        # A socket without any module is no population.
        for row in np.nonzero((d_cost >= socket_low)
                              & (d_total > 0))[0].tolist():
            found.append((kinds.DRAM, _population(dram, d_rows[row])))
    cxl_modes = [m for m in modes if m in CXL_MODES]
    lanes = min(platform.cxl_lanes, cpu.cxl_lanes)
    for group in (_capacity_groups(_cxl(dimms))
                  if cxl_modes and len(d_cost) else []):
        most = lanes // min(d.lanes for d in group)
        c_counts, c_cost, _c_total = compositions(group, most, socket_high,
                                                  min_total=1)
        cost = d_cost[:, None] + c_cost[None, :]
        rows, cols = np.nonzero((d_total[:, None] > 0)
                                & (cost >= socket_low)
                                & (cost <= socket_high))
        c_rows = c_counts.tolist()
        for row, col in zip(rows.tolist(), cols.tolist()):
            for mode in cxl_modes:
                found.append((mode, {**_population(dram, d_rows[row]),
                                     **_population(group, c_rows[col])}))
    pmem_modes = [m for m in modes if m in PMEM_MODES]
    if not pmem_modes or not len(d_cost):
        return found
    for group in _capacity_groups(pmem):
        p_counts, p_cost, p_total = compositions(
            group, min(platform.channels_per_socket, slots), socket_high,
            min_total=1)
        cost = d_cost[:, None] + p_cost[None, :]
        rows, cols = np.nonzero(
            (d_total[:, None] + p_total[None, :] <= slots)
            & (cost >= socket_low) & (cost <= socket_high))
        p_rows = p_counts.tolist()
        pairs = [(_population(dram, d_rows[row]),
                  _population(group, p_rows[col]))
                 for row, col in zip(rows.tolist(), cols.tolist())]
        for mode in pmem_modes:
            found.extend((mode, {**dram_part, **pmem_part})
                         for dram_part, pmem_part in pairs)
    return found


def _population(dimms, counts):
    return {d: n for d, n in zip(dimms, counts) if n}


def cost_range(platform, cpu, dimms, modes):
    """(cheapest, dearest) node cost over the search space, valid or not."""
    everything = candidates(platform, cpu, dimms, modes, -math.inf,
                            math.inf)
    fixed = _fixed_cost(platform, cpu)
    costs = [fixed + platform.sockets * sum(d.price * n
                                            for d, n in per.items())
             for _, per in everything]
    return (min(costs), max(costs)) if costs else (fixed, fixed)


def _evaluate(platform, cpu, mode, per_socket, policies, low, high, labels):
    """The model.Node of a population if it is valid and in the band."""
    node_ = model.node(make_config(platform, cpu, mode, per_socket, labels),
                       policies)
    if node_.valid and in_band(node_.cost, low, high):
        return node_
    return None


def find(platform, cpu, dimms, modes, low, high, policies, progress=None):
    """Every valid population whose node cost is in [low, high].

    :param progress: called as ``progress(judged, total, valid)`` after
        each batch of :data:`PROGRESS_BATCH` populations and at the end.
    :returns: a list of model.Node, one per population.
    """
    labels = dimm_labels(sorted(set(dimms), key=_dimm_order))
    nodes = []
    found = candidates(platform, cpu, dimms, modes, low, high)
    for index, (mode, per) in enumerate(found, start=1):
        node_ = _evaluate(platform, cpu, mode, per, policies, low, high,
                          labels)
        if node_ is not None:
            nodes.append(node_)
        if progress is not None and (index % PROGRESS_BATCH == 0
                                     or index == len(found)):
            progress(index, len(found), len(nodes))
    return nodes


class NaiveSearch(object):
    """The slot-by-slot enumeration :func:`find` is checked against.

    Every assignment of {empty, each DIMM type} to every slot of a socket
    (PMem types only in the PMem modes), the product over all slots, with
    at most one PMem module per channel. An assignment in the budget band
    is reduced to its counts and judged by the same rules and node model;
    counts already judged are not judged again.
    """

    def __init__(self, platform, cpu, dimms, modes, low, high, policies):
        self.platform = platform
        self.cpu = cpu
        self.modes = tuple(modes)
        self.low = low
        self.high = high
        self.policies = policies
        self.dram, self.pmem = _split(dimms)
        self.labels = dimm_labels(self.dram + self.pmem)
        self.fixed = _fixed_cost(platform, cpu)
        self.slack = _SLACK * max(1.0, abs(low), abs(high))
        self.found = {}
        self.judged = set()
        self.visited = 0

    def options(self, mode):
        return ([None] + self.dram
                + (self.pmem if mode in PMEM_MODES else []))

    def space_size(self, mode=None):
        """How many assignments there are (of one mode, or of all)."""
        modes = [mode] if mode else self.modes
        return sum(len(self.options(m)) ** self.platform.slots_per_socket
                   for m in modes)

    def assignments(self, mode):
        return itertools.product(self.options(mode),
                                 repeat=self.platform.slots_per_socket)

    def visit(self, mode, slots):
        """Judge one assignment: a tuple of DIMMs (or None), slot by slot."""
        self.visited += 1
        if all(d is None for d in slots):
            return
        per_channel = self.platform.slots_per_channel
        for start in range(0, len(slots), per_channel):
            if sum(1 for d in slots[start:start + per_channel]
                   if d is not None and d.is_pmem) > 1:
                return
        cost = self.fixed + self.platform.sockets * sum(
            d.price for d in slots if d is not None)
        if not (self.low - self.slack <= cost <= self.high + self.slack):
            return
        per = collections.Counter(d for d in slots if d is not None)
        key = (tuple(sorted((d.name, n) for d, n in per.items())), mode)
        if key in self.judged:
            return
        self.judged.add(key)
        node_ = _evaluate(self.platform, self.cpu, mode, per, self.policies,
                          self.low, self.high, self.labels)
        if node_ is not None:
            self.found[key] = node_

    def run(self):
        """Visit every assignment; return the nodes found, as find does."""
        for mode in self.modes:
            for slots in self.assignments(mode):
                self.visit(mode, slots)
        return list(self.found.values())


@dataclasses.dataclass(frozen=True)
class Result:
    """A finished search: the ranked table and what it was asked."""

    frame: pd.DataFrame
    # Every valid population in the band, by configuration name.
    nodes: dict
    platform: scenario.Platform
    cpu: scenario.Cpu
    workload: scenario.Workload
    dimms: tuple
    modes: tuple
    budget: float
    low: float
    high: float
    objective: str


def _round(value, digits):
    if value is None or not math.isfinite(value):
        return None
    return round(float(value), digits)


def module_class(dimm):
    """What the rules and the model read of a module: all but its name.

    Modules of different vendors with the same class (capacity, price,
    watts, bandwidth, latency, lanes...) are interchangeable in a plan.
    """
    return tuple(getattr(dimm, f.name) for f in dataclasses.fields(dimm)
                 if f.name not in _NOT_MEASURES)


# The fields of a module that name it or cite where its figures come from:
# every other field (one added later too) is a figure a rule or the model
# may read.
_NOT_MEASURES = frozenset(['name', 'source', 'price_source',
                           'watts_source'])


def equivalence_key(config):
    """Populations with the same key differ only in equivalent modules."""
    counts = collections.Counter()
    for dimm, n in config.per_socket.items():
        counts[module_class(dimm)] += int(n)
    return config.mode, tuple(sorted(
        (cls, n) for cls, n in counts.items() if n))


def _representatives(names, nodes):
    """One population of each equivalence class, and how many it folds.

    A class is placed where the first of its members is in ``names``, and
    named by its member with the fewest module types (3 x one vendor's
    module rather than a mix of vendors), then by name.

    :returns: [(name, how many equivalent populations it stands for
        besides itself)], in the order of ``names``.
    """
    members = {}
    for name in names:
        members.setdefault(equivalence_key(nodes[name].config),
                           []).append(name)

    def simplest(name):
        per = nodes[name].config.per_socket
        return sum(1 for n in per.values() if n), name

    return [(min(group, key=simplest), len(group) - 1)
            for group in members.values()]


def rank(fits, nodes, objective, budget, limit=None):
    """The ranked table of the search command.

    Populations that differ only in equivalent modules (:func:`module_class`:
    the same figures from another vendor) have the same measures: one row
    stands for them all, the first in the ranking, and ``equivalents``
    says how many others it stands for.

    :param fits: model.Fit of each population, by configuration name.
    :param nodes: model.Node of each population, by configuration name.
    :param limit: keep the best ``limit`` rows; None or 0 keeps all.
    """
    if objective not in OBJECTIVES:
        raise errors.PlannerError('--objective: unknown objective %r '
                                  '(known: %s)' % (objective,
                                                   ', '.join(OBJECTIVES)))
    order = [(objective, not OBJECTIVES[objective])]
    order += [(c, up) for c, up in _TIE_BREAKERS if c != objective]
    keys = pd.DataFrame({column: [getattr(f, column) for f in fits.values()]
                         for column, _ in order})
    keys = keys.sort_values([c for c, _ in order],
                            ascending=[up for _, up in order],
                            kind='mergesort')
    kept = _representatives(list(keys['config']), nodes)
    if limit:
        kept = kept[:limit]
    rows = []
    for index, (name, equivalents) in enumerate(kept, start=1):
        fit = fits[name]
        rows.append({
            'rank': index,
            'config': name,
            'mode': fit.mode,
            'population': nodes[name].config.population_label(),
            'visible_memory_gb': _round(fit.visible_memory_gb, 1),
            'dram_cache_gb': _round(fit.dram_cache_gb, 1),
            'vms_per_node': fit.vms_per_node,
            'binding': fit.binding,
            'node_cost': _round(fit.node_cost, 2),
            'cost_vs_budget': '%+.1f%%' % (100.0 * (fit.node_cost / budget
                                                    - 1.0)),
            'cost_per_vm': _round(fit.cost_per_vm, 2),
            'node_watts': _round(fit.node_watts, 1),
            'vms_per_kw': _round(fit.vms_per_kw, 2),
            'node_throughput': _round(fit.node_throughput, 3),
            'warnings': ','.join(fit.warnings),
            'equivalents': equivalents,
        })
    # object columns keep None (an infinite cost per VM) as None, not NaN.
    return pd.DataFrame(rows, columns=COLUMNS, dtype=object)


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
                 and (pmem or m not in PMEM_MODES)
                 and (cxl or m not in CXL_MODES)]
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
            if mode in CXL_MODES and not cxl:
                raise errors.PlannerError(
                    '--modes: mode %s needs CXL memory devices and none was '
                    'given or none fits this platform and CPU' % mode)
            if mode in PMEM_MODES and not pmem:
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
    if number > document.NUMBER_LIMIT:
        raise errors.PlannerError('%s: must be at most %s, got %s' % (
            option, document.short_number(document.NUMBER_LIMIT),
            document.short_number(number)))
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
    problem = population.cpu_problem(plat, proc, catalog)
    if problem is not None:
        raise errors.PlannerError('--cpu: %s (%s) [%s]' % (
            problem.message, problem.code, problem.source))
    work = _lookup(scen.workloads, workload or next(iter(scen.workloads)),
                   '--workload', 'workload')
    if objective not in OBJECTIVES:
        raise errors.PlannerError('--objective: unknown objective %r '
                                  '(known: %s)' % (objective,
                                                   ', '.join(OBJECTIVES)))
    if dimms:
        chosen = []
        for name in dimms:
            dimm = _lookup(catalog.dimms, name, '--dimm', 'DIMM')
            problem = dimm_problem(plat, proc, dimm)
            if problem is not None:
                raise errors.PlannerError(
                    '--dimm: %s cannot be used on platform %s with CPU %s: '
                    '%s (%s) [%s]' % (name, plat.name, proc.name,
                                      problem.message, problem.code,
                                      problem.source))
            chosen.append(dimm)
        chosen = sorted(set(chosen), key=_dimm_order)
    else:
        chosen = usable_dimms(catalog, plat, proc)
    pmem = [d for d in chosen if d.is_pmem]
    mode_list = _modes(modes, work, pmem, _cxl(chosen))
    if budget is None:
        budget = model.node(scen.configs[scen.baseline], scen.policies).cost
    budget = _number(budget, '--budget', positive=True)
    band = _number(band, '--band')
    limit = _number(limit, '--limit', integer=True)
    low, high = band_limits(budget, band)

    def judged(done, total, valid):
        progress('populations judged, %d valid (%s with %s)'
                 % (valid, plat.name, proc.name), done, total)

    if progress is not None:
        progress('enumerating populations of %s with %s costing %.2f to '
                 '%.2f (%s)' % (plat.name, proc.name, low, high,
                                ', '.join(mode_list)), None, None)
    nodes = find(plat, proc, chosen, mode_list, low, high, scen.policies,
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
        if progress is not None and (index % PROGRESS_BATCH == 0
                                     or index == len(by_name)):
            progress('sizing for workload %s' % work.name, index,
                     len(by_name))
    return Result(frame=rank(fits, by_name, objective, budget, limit),
                  nodes=by_name, platform=plat, cpu=proc, workload=work,
                  dimms=tuple(chosen), modes=mode_list, budget=budget,
                  low=low, high=high, objective=objective)


def _nothing_found(platform, cpu, dimms, modes, budget, band, low, high,
                   policies):
    short = document.short_number
    what = ('no valid population of platform %s with CPU %s (%s; %s) costs '
            '%s +-%g%% (%s to %s)'
            % (platform.name, cpu.name, ', '.join(modes),
               ', '.join(d.name for d in dimms) or 'no DIMMs', short(budget),
               100.0 * band, short(round(low, 2)), short(round(high, 2))))
    inside = candidates(platform, cpu, dimms, modes, low, high)
    if inside:
        mode, per = inside[0]
        findings = population.errors(population.check(
            make_config(platform, cpu, mode, per)))
        first = findings[0] if findings else None
        return ('%s: the %d populations in the band are all invalid, e.g. '
                '%s: %s (%s)' % (what, len(inside), make_config(
                    platform, cpu, mode, per).name,
                    first.message if first else 'out of band',
                    first.code if first else '-'))
    cheapest, dearest = cost_range(platform, cpu, dimms, modes)
    return ('%s; populations of these DIMMs cost %s to %s per node: '
            'change --budget or widen --band'
            % (what, short(round(cheapest, 2)), short(round(dearest, 2))))
