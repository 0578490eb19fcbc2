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
"""Node budgets: a fleet within a gap of the bound (one period, no caps).

The TCO of a fleet is the price of its nodes: once the number of nodes of
each configuration (a *budget*) is chosen, what remains is to pack the
demand onto them. So:

1. a small integer program picks whole node counts costing at most the
   bound / (1 - gap), the patterns left fractional, and among them the
   budget whose LP over the known patterns costs the least (the most room
   for whole patterns); it takes well under a second;
2. the LP within that budget is rounded down: most nodes run its
   patterns;
3. the VMs left over go onto the budget's remaining nodes, each a *free*
   node under its configuration's own rows (:func:`patterns.node_rows`),
   in a feasibility program; every node is checked with
   :func:`patterns.fits`;
4. a budget that does not pack gives way to the next costlier one.

A heuristic: a fleet it returns is feasible and covers the demand, so its
TCO is an upper bound and the gap to the bound is proven; finding none
proves nothing. Run again with a smaller gap, it finds cheaper fleets
while there is time.
"""

import time

import numpy as np
from scipy import optimize as sp_optimize
from scipy import sparse

from nova_pmem_filters.planner.optimize import clock
from nova_pmem_filters.planner import patterns


# Budgets tried for one gap before giving up.
TRIES = 4
# Seconds the packing of one budget may take at most: one that packs does
# in 0.2-2.3 s on the benchmark's 200 nodes; one that does not would take
# all the time given, where the next budget may pack at once.
PACK_SECONDS = 2.5


def node_budgets(problem, master, most, time_limit, above=None):
    """Whole node counts {ci: n} costing at most ``most``, or None.

    The patterns stay fractional (over the master's columns); of such
    budgets, the one whose LP costs the least. ``above``: the budget costs
    more than this (after a cheaper one did not pack).
    """
    cost, a_ub, b_ub, layout = master._build()
    nvar, nc = layout[3], master.nc
    link = sparse.lil_matrix((nc + 1, nvar + nc))
    for ci in range(nc):
        link[ci, master._n(ci, 0)] = 1.0
        link[ci, nvar + ci] = -1.0
        link[nc, nvar + ci] = problem.node_cost(problem.candidates[ci])
    lower = np.concatenate([np.full(a_ub.shape[0] + nc, -np.inf),
                            [-np.inf if above is None
                             else above + 1e-6 * max(abs(above), 1.0)]])
    upper = np.concatenate([b_ub, np.zeros(nc), [most]])
    matrix = sparse.vstack([
        sparse.hstack([a_ub, sparse.csr_matrix((a_ub.shape[0], nc))]),
        link.tocsr()]).tocsr()
    integrality = np.zeros(nvar + nc)
    integrality[nvar:] = 1
    res = clock.milp(
        'the node budgets', np.concatenate([cost, np.zeros(nc)]),
        integrality=integrality,
        bounds=sp_optimize.Bounds(0, np.inf),
        constraints=sp_optimize.LinearConstraint(matrix, lower, upper),
        options={'time_limit': max(time_limit, 0.5), 'mip_rel_gap': 1e-9})
    if res.x is None:
        return None
    return {ci: int(round(res.x[nvar + ci])) for ci in range(nc)
            if res.x[nvar + ci] > 0.5}


def least_budget(problem, master, at_most, time_limit, above=None):
    """The cheapest whole node counts {ci: n} the LP packs onto, or None.

    The patterns stay fractional (over the master's columns); at most
    ``at_most[ci]`` nodes of each configuration; costing more than
    ``above`` (the next budget after one that did not pack).
    """
    res, _layout = master.solve_mip(
        max(time_limit, 0.5), 1e-9, what='the least node budget',
        nodes_only=True,
        node_limits={(ci, 0): at_most[ci] for ci in range(master.nc)},
        above=above)
    if res.x is None:
        return None
    return {ci: int(round(res.x[master._n(ci, 0)]))
            for ci in range(master.nc) if res.x[master._n(ci, 0)] > 0.5}


def floor_within(problem, master, budget):
    """The LP within ``budget``, its patterns rounded down.

    Returns ({(ci, counts): nodes}, {ci: nodes left}, VMs left per
    workload), or None when the LP has no solution within the budget.
    """
    cost, a_ub, b_ub, layout = master._build()
    x0, _s0, _k0, nvar = layout
    upper = np.full(nvar, np.inf)
    for ci in range(master.nc):
        upper[master._n(ci, 0)] = budget.get(ci, 0)
    res = sp_optimize.linprog(cost, A_ub=a_ub, b_ub=b_ub,
                              bounds=list(zip(np.zeros(nvar), upper)),
                              method='highs')
    if res.status != 0:
        return None
    fixed, left = {}, dict(budget)
    rest = np.array([problem.periods[0].vms.get(name, 0)
                     for name in problem.workloads], dtype=float)
    for j, (ci, _t, counts) in enumerate(master.columns):
        n = int(np.floor(res.x[x0 + j] + 1e-9))
        if n:
            fixed[ci, tuple(counts)] = n
            left[ci] -= n
            rest -= n * np.array(counts, dtype=float)
    return fixed, left, np.maximum(rest, 0).astype(int)


def pack(problem, rest, left, time_limit):
    """VM counts on ``left[ci]`` free nodes of each ci covering ``rest``.

    A feasibility program (the nodes are bought already). Returns
    [(ci, counts)] of the busy nodes, or None. As the pricing problem
    does, it takes the node model's rows as they are and tightens them
    by a hair only when the solver's tolerance let a node slip past
    :func:`patterns.fits` (a node filling its DRAM cache exactly fits).
    """
    nw = len(problem.workloads)
    blocks, width = [], 0
    for ci, count in sorted(left.items()):
        cand = problem.candidates[ci]
        use = [w for w in range(nw) if cand.limits[w] and rest[w] > 0]
        if use and count > 0:
            rows = patterns.node_rows(cand.capacity, problem.demands, use,
                                      cand.limits)
            for _k in range(count):
                blocks.append((ci, use, width, rows))
                width += len(rows[3])
    if not blocks:
        return None if np.any(rest > 0) else []
    for tighten in (0.0, 1e-9, 1e-8, 1e-7):
        matrix, lower, upper, bounds = _pack_rows(rest, blocks, width, nw,
                                                  tighten)
        res = clock.milp(
            'packing the VMs left over', np.zeros(width),
            integrality=np.ones(width),
            bounds=sp_optimize.Bounds(0, bounds),
            constraints=sp_optimize.LinearConstraint(matrix, lower, upper),
            options={'time_limit': max(time_limit, 0.5)})
        if res.x is None:
            return None
        nodes = _nodes(problem, blocks, res.x)
        if nodes is not None:
            return nodes
    return None


def _nodes(problem, blocks, x):
    """The busy free nodes of a solution, or None if one does not fit."""
    nw = len(problem.workloads)
    nodes = []
    for ci, use, base, _rows in blocks:
        counts = [0] * nw
        for j, w in enumerate(use):
            counts[w] = int(round(x[base + j]))
        if any(counts):
            if not patterns.fits(problem.candidates[ci].capacity,
                                 problem.demands, counts):
                return None
            nodes.append((ci, tuple(counts)))
    return nodes


def _pack_rows(rest, blocks, width, nw, tighten):
    """The rows of :func:`pack`: cover ``rest``; each node within its own.

    ``tighten``: each node's capacities less this share of themselves.
    """
    r_i, c_i, val, lower, upper = [], [], [], [], []

    def row(entries, low, high):
        for c, v in entries:
            r_i.append(len(lower))
            c_i.append(c)
            val.append(v)
        lower.append(low)
        upper.append(high)

    for w in range(nw):
        row([(base + use.index(w), 1.0) for _ci, use, base, _r in blocks
             if w in use], rest[w], np.inf)
    bounds, previous = np.zeros(width), {}
    for ci, _use, base, (rows, lbs, ubs, var_ubs) in blocks:
        bounds[base:base + len(var_ubs)] = var_ubs
        for coeffs, low, high in zip(rows, lbs, ubs):
            if tighten and np.isfinite(high) and high:
                high -= tighten * max(abs(high), 1.0)
            row([(base + j, v) for j, v in coeffs], low, high)
        if ci in previous:
            # Free nodes of a configuration are alike: order them.
            row([(base, 1.0), (previous[ci], -1.0)], -np.inf, 0.0)
        previous[ci] = base
    matrix = sparse.csr_matrix((val, (r_i, c_i)), shape=(len(lower), width))
    return matrix, lower, upper, bounds


def fleet_within(problem, master, most, deadline):
    """A fleet costing at most ``most``, or None (a heuristic).

    Returns ({(ci, counts): nodes}, TCO).
    """
    return budgets_in_turn(problem, master, most, deadline, tries=TRIES)[0]


def budgets_in_turn(problem, master, most, deadline, above=None,
                    tries=None):
    """(a fleet or None, above): budgets costing at most ``most``, in turn.

    Each budget (:func:`node_budgets`) costs more than ``above`` and than
    the last one that did not pack; ``tries``: how many at most (default:
    while there are). The ``above`` returned is the cost of the last one
    that did not pack, where a call with a larger ``most`` goes on.
    """
    attempt = 0
    while tries is None or attempt < tries:
        attempt += 1
        left = deadline - time.monotonic()
        if left <= 0:
            clock.cut('the node budgets')
            return None, above
        budget = node_budgets(problem, master, most, left / 4, above)
        if budget is None:
            return None, above
        fleet = fleet_of(problem, master, budget, deadline)
        if fleet is not None:
            return fleet, above
        above = cost_of(problem, budget)
    return None, above


def fleet_of(problem, master, budget, deadline):
    """A fleet of the nodes of ``budget`` ({ci: nodes}), or None.

    The LP within the budget rounded down, the rest packed on the nodes
    left. Returns ({(ci, counts): nodes}, TCO).
    """
    floored = floor_within(problem, master, budget)
    if floored is None:
        return None
    fixed, spare, rest = floored
    nodes = pack(problem, rest, spare,
                 min((deadline - time.monotonic()) / 2, PACK_SECONDS))
    if nodes is None:
        return None
    for ci, counts in nodes:
        fixed[ci, counts] = fixed.get((ci, counts), 0) + 1
    nodes = {}
    for (ci, _counts), n in fixed.items():
        nodes[ci] = nodes.get(ci, 0) + n
    return fixed, cost_of(problem, nodes)


def cost_of(problem, nodes):
    """TCO of ``nodes`` ({ci: nodes})."""
    return sum(problem.node_cost(problem.candidates[ci]) * n
               for ci, n in nodes.items())
