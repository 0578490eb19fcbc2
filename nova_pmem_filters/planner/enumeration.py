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
"""Every population of one socket within a budget band: the enumeration."""

import collections
import itertools
import math

import numpy as np

from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.planner import model
from nova_pmem_filters.planner import population
from nova_pmem_filters.planner.population import common
from nova_pmem_filters.planner import scenario


# Populations judged between two progress reports.
PROGRESS_BATCH = 1000

MODE_PREFIX = {k.name: k.prefix for k in kinds.KINDS.values()}


# Modes that run on DRAM and CXL memory devices. A socket carries 1 to
# (CXL lanes // device lanes) devices of one capacity beside its DRAM;
# the lane, ratio and CPU rules (nova_pmem_filters.planner.population.cxl)
# judge them after.
CXL_MODES = kinds.CXL_MODES


# Modes that run on DRAM and PMem; ``dram`` is searched with DRAM only.
PMEM_MODES = kinds.PMEM_MODES


# Findings on a node with a single module of one type that mean the type can
# never be installed with this platform and CPU.
DIMM_CODES = frozenset(['pmem-unsupported-cpu', 'pmem-unsupported-platform',
                        'pmem-module-too-large', 'memory-limit',
                        'dimm-type-unsupported', 'cxl-unsupported-cpu',
                        'cxl-unsupported-platform', 'cxl-lanes'])


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


def dimm_order(dimm):
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
                                key=lambda kv: dimm_order(kv[0])) if n]
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
    for finding in common.errors(population.check(probe)):
        if finding.code in DIMM_CODES:
            return finding
    return None


def usable_dimms(catalog, platform, cpu):
    """The catalog's DIMM types this platform and CPU can take."""
    return sorted((d for d in catalog.dimms.values()
                   if dimm_problem(platform, cpu, d) is None),
                  key=dimm_order)


def _fixed_cost(platform, cpu):
    # model.node: base + CPUs + every module; only the modules vary here.
    return platform.base_cost + cpu.price * platform.sockets


def _split(dimms):
    unique = sorted(set(dimms), key=dimm_order)
    return ([d for d in unique if d.is_dram],
            [d for d in unique if d.is_pmem])


def _cxl(dimms):
    return sorted({d for d in dimms if d.is_cxl}, key=dimm_order)


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
    labels = dimm_labels(sorted(set(dimms), key=dimm_order))
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
