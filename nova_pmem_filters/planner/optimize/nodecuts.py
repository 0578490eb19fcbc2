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
"""The bound of whole node counts (one period, no caps, TCO).

A fleet has a whole number N[c] of nodes of each configuration, and its
TCO is sum cost[c] N[c]. Relax only how the nodes are packed (patterns
fractional, over *all* patterns): the cheapest N that can hold the demand
so is a lower bound on every fleet, above the LP's whenever the LP's node
counts are fractional.

Which N hold the demand? For workload values pi >= 0, no node of c holds
VMs worth more than U[c](pi), the best pattern's value (a pricing
problem's upper bound, or Dantzig's bound), so a fleet needs

    sum_c U[c](pi) N[c] >= pi . demand                       (a cut)

and by Farkas's lemma N holds the demand (patterns fractional) exactly
when every such cut holds. So: the integer program over N (a hundred
integer variables) with the cuts found so far gives a bound and counts
N*; the LP that packs the demand onto N* (column generation, slack on the
demand) either packs it, or its duals pi give a cut that N* breaks. Every
cut is valid whatever pi is, so the integer program's value is a bound at
every step. When N* packs, the budget N* is tried as a fleet
(:mod:`budgets`): whole patterns on its nodes, at the bound's own cost,
prove it optimal. When no N cheaper than the fleet at hand by the gap
meets the cuts, the fleet is proven within the gap.
"""

import time

import numpy as np
from scipy import optimize as sp_optimize
from scipy import sparse

from nova_pmem_filters.planner.optimize import budgets
from nova_pmem_filters.planner.optimize import clock
from nova_pmem_filters.planner.optimize import pricing


# Pricing rounds per packing LP before the round's cut is taken as is.
_ROUNDS = 30
# Integer programs over the node counts before the bound settles for what
# it has (each adds a cut, or ends the search).
MAX_ROUNDS = 500


class Bound(object):
    """The integer program over node counts, and its cuts."""

    def __init__(self, problem, master, lower):
        self.problem = problem
        self.master = master
        self.cost = np.array([problem.node_cost(cand)
                              for cand in problem.candidates])
        self.demand = np.array([problem.periods[0].vms.get(name, 0)
                                for name in problem.workloads], dtype=float)
        self.lower = lower
        # Each cut: (U per configuration, pi . demand).
        self.cuts = []

    def add(self, pi, exact_upper=None):
        """The cut of workload values ``pi`` (upper bounds where known)."""
        upper = np.array([
            pricing.pricing_bound(cand, self.problem.demands, list(pi))
            for cand in self.problem.candidates])
        for ci, top in (exact_upper or {}).items():
            upper[ci] = min(upper[ci], top)
        self.cuts.append((upper, float(pi @ self.demand)))

    def cheapest(self, below, time_limit):
        """(counts, bound) of the cheapest N meeting the cuts, below ``below``.

        counts None: no such N (the bound is then ``below``); the bound is
        HiGHS's dual bound (its optimum when proven).
        """
        nc = len(self.cost)
        rows = [upper for upper, _rhs in self.cuts] + [self.cost]
        lower = [rhs for _upper, rhs in self.cuts] + [self.lower]
        res = clock.milp(
            'the node counts', self.cost, integrality=np.ones(nc),
            bounds=sp_optimize.Bounds(np.zeros(nc), np.full(nc, np.inf)),
            constraints=sp_optimize.LinearConstraint(
                sparse.csr_matrix(np.array(rows)), lower,
                [np.inf] * len(self.cuts) + [below]),
            options={'time_limit': max(time_limit, 0.5),
                     'mip_rel_gap': 1e-9})
        if res.status == 2:
            return None, below
        dual = getattr(res, 'mip_dual_bound', None)
        bound = (float(dual) if dual is not None and np.isfinite(dual)
                 else self.lower)
        if res.x is None:
            return None, max(bound, self.lower)
        counts = {ci: int(round(v)) for ci, v in enumerate(res.x)
                  if v > 0.5}
        return counts, max(bound, self.lower)


def separate(problem, master, counts, deadline):
    """Whether the demand packs onto ``counts``, patterns fractional.

    Column generation on the LP that packs the demand onto the nodes
    ``counts`` with a slack per workload; the patterns it prices join the
    master problem. Returns ('packs', None), ('cut', (pi, exact upper
    bounds)) of a cut ``counts`` breaks, or ('unknown', None) when the
    time or the rounds ran out.
    """
    demand = np.array([problem.periods[0].vms.get(name, 0)
                       for name in problem.workloads], dtype=float)
    for _round in range(_ROUNDS):
        pi, slack = _packing_lp(problem, master, counts)
        if slack <= 1e-6:
            return 'packs', None
        upper, added = {}, 0
        for ci in counts:
            _value, best, upper[ci] = pricing.best_by(problem, master, ci,
                                                      pi, deadline)
            if master.add(ci, 0, best):
                added += 1
        if sum(upper[ci] * n for ci, n in counts.items()) < (
                pi @ demand) * (1 - 1e-9) - 1e-9:
            return 'cut', (pi, upper)
        if not added or time.monotonic() > deadline:
            break
    return 'unknown', None


def _packing_lp(problem, master, counts):
    """(workload values pi, total slack) of packing onto ``counts``.

    The master's LP with N[c] at most ``counts`` and the cost of slack on
    each demand row instead of the nodes' price.
    """
    cost, a_ub, b_ub, layout = master._build()
    _x0, _s0, _k0, nvar = layout
    nw = len(problem.workloads)
    slack = sparse.lil_matrix((a_ub.shape[0], nw))
    for w in range(nw):
        slack[master.demand_row[w, 0], w] = -1.0
    matrix = sparse.hstack([a_ub, slack.tocsr()]).tocsr()
    upper = [None] * (nvar + nw)
    for ci in range(master.nc):
        upper[master._n(ci, 0)] = float(counts.get(ci, 0))
    objective = np.concatenate([np.zeros(nvar), np.ones(nw)])
    res = sp_optimize.linprog(objective, A_ub=matrix, b_ub=b_ub,
                              bounds=[(0, u) for u in upper],
                              method='highs')
    duals = -res.ineqlin.marginals
    pi = np.array([max(0.0, duals[master.demand_row[w, 0]])
                   for w in range(nw)])
    return pi, float(res.fun)


def raise_bound(problem, master, best, bound, pi, deadline, gap, found):
    """The bound of whole node counts, and maybe a fleet that meets it.

    :param best: TCO of the fleet at hand (None: none).
    :param bound: the bound so far; ``pi``: the LP's demand duals (the
        first cut).
    :param found: called as ``found(fleet, TCO)`` with a fleet
        ({(ci, counts): nodes}) at the bound's cost.
    :returns: the bound, never below ``bound``.
    """
    cuts = Bound(problem, master, bound)
    pi = np.asarray(pi, dtype=float)
    known = {}
    for ci in range(master.nc):
        top = pricing.known_bound(problem, master, ci, 0, list(pi))
        if top is not None:
            known[ci] = top
    cuts.add(pi, known)
    for _round in range(MAX_ROUNDS):
        if time.monotonic() >= deadline:
            clock.cut('the bound of whole node counts')
            return bound
        below = (np.inf if best is None
                 else best - max(gap, 1e-7) * abs(best))
        counts, lower = cuts.cheapest(below, deadline - time.monotonic())
        bound = max(bound, lower)
        cuts.lower = bound
        if counts is None:
            return bound
        status, cut = separate(problem, master, counts, deadline)
        if status == 'cut':
            cuts.add(*cut)
            continue
        if status == 'packs':
            # Whole patterns on exactly those nodes: a fleet at the
            # bound's cost.
            fleet = budgets.fleet_of(problem, master, counts, deadline)
            if fleet is not None:
                found(*fleet)
        return bound
    return bound
