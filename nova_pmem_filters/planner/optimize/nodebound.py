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
"""The bound of whole node counts, in every period, under the caps.

:mod:`nodecuts` proves one period without caps. Here the same idea holds
for several periods, with the caps, for the ``tco`` and ``vms``
objectives.

A fleet has whole node counts N[c,t], nondecreasing over the periods
(nodes bought stay), within the caps (capex budget and rack units on the
nodes of the last period, facility power in every period). In period t it
serves v[w,t] VMs of workload w: all the demand with ``tco``, at most the
demand with ``vms``. Relax only how the nodes are packed (patterns
fractional, over *all* patterns). For workload values pi >= 0, no node of
c holds VMs worth more than U[c](pi), the best pattern's value (a pricing
problem's upper bound, or Dantzig's), so a fleet needs, in each period,

    sum_c U[c](pi) N[c,t] >= pi . v[t]                      (a cut)

and by Farkas's lemma v[t] packs onto N[.,t] exactly when every such cut
holds. The periods are independent once N is chosen: a node's pattern may
change from one period to the next. A pattern is the same in every period,
so U[c](pi) is too, and a cut found in one period holds in every other (on
that period's VMs): each cut joins every period (but the many first ones
of the LP's values per configuration, :func:`first_cuts`). So: the
integer program over N and v
(a few hundred integer variables) with the cuts found so far, the caps and
the growth rows gives a bound (the least TCO, or the most VMs served) and
counts N*; per period, the LP that packs v*[t] onto N*[.,t] (column
generation, slack on the demand) either packs it, or its duals give a cut
that N* breaks. Every cut is valid whatever pi is, so the integer
program's value is a bound at every step. When N* packs in every period
(``tco``), whole patterns are sought on exactly those nodes, period by
period (:func:`budgets.fleet_of`): a fleet at the bound's cost is optimal.
When no N better than the fleet at hand by the gap meets the cuts, the
fleet is proven within the gap.

With ``vms`` and ``throughput`` the VMs served are counted per
configuration (v[w,c,t], at most the demand over the configurations; with
``throughput`` a VM's worth is its configuration's) and packed onto the
nodes of their own configuration: the cuts are per configuration,
U[c](pi) N[c,t] >= pi . v[.,c,t], and the first ones are the LP's values
of a VM on each configuration (its serve rows' duals).
"""

import dataclasses
import time

import numpy as np
from scipy import optimize as sp_optimize
from scipy import sparse

from nova_pmem_filters.planner.optimize import budgets
from nova_pmem_filters.planner.optimize import clock
from nova_pmem_filters.planner.optimize import fleetplan
from nova_pmem_filters.planner.optimize import master as master_mod
from nova_pmem_filters.planner.optimize import pricing
from nova_pmem_filters.planner.optimize import tranches


# The objectives this bound serves.
OBJECTIVES = ('tco', 'vms', 'throughput')
# Pricing rounds per packing LP before the round's cut is taken as is.
_ROUNDS = 30
# Integer programs over the node counts before the bound settles for what
# it has (each adds cuts, or ends the search).
MAX_ROUNDS = 300
# Seconds one pricing problem of the packing LP may take at most, at
# first; this many times longer each time pricing cut short by it leaves
# the packing LP without a cut or a new pattern.
_PRICING_SECONDS = 1.0
_LONGER = 4.0
# Slack (VMs) below which a period packs.
_PACKS = 1e-6
# The cutoff of the node counts: better than the fleet at hand by this
# share of the gap.
_INSIDE = 0.999


def applies(problem):
    """Whether the bound serves the problem's objective."""
    return problem.objective in OBJECTIVES


class Bound(object):
    """The integer program over node counts and VMs served, and its cuts.

    VMs served per workload and period (``tco``: all the demand, on any
    node), or per workload, configuration and period (``vms``,
    ``throughput``), each packed onto the nodes it runs on.
    """

    def __init__(self, problem, master):
        self.p = problem
        self.m = master
        self.nc = len(problem.candidates)
        self.nt = len(problem.periods)
        self.nw = len(problem.workloads)
        # Per configuration where the LP's values of a VM are (its serve
        # rows' duals): the cuts then start where the LP is.
        self.per_config = problem.objective != 'tco'
        self.demand = np.array([[period.vms.get(name, 0)
                                 for name in problem.workloads]
                                for period in problem.periods], dtype=float)
        cost, _a, _b, _layout = master_mod.Master(
            dataclasses.replace(problem, objective='tco'))._build()
        # What a node of c in period t costs: its energy in t, and its
        # capex in the last period (nodes bought stay).
        self.node_cost = np.array([cost[master._n(ci, t)]
                                   for ci in range(self.nc)
                                   for t in range(self.nt)])
        # The VMs served: (w, ci, t), ci None where not per configuration.
        if self.per_config:
            self.served = [(w, ci, t) for t in range(self.nt)
                           for ci, cand in enumerate(problem.candidates)
                           for w in range(self.nw) if cand.limits[w] > 0]
        else:
            self.served = [(w, None, t) for t in range(self.nt)
                           for w in range(self.nw)]
        self.index = {key: self.nc * self.nt + j
                      for j, key in enumerate(self.served)}
        # Each cut: (its period, or None in every one; configuration or
        # None; U per configuration; pi per workload).
        self.cuts = []

    def _n(self, ci, t):
        return ci * self.nt + t

    def add(self, pi, exact_upper=None, ci=None, t=None):
        """The cut of values ``pi`` (upper bounds where known).

        It holds in every period (a node's best pattern at ``pi`` is the
        same in each), and joins every one, or only period ``t``. ``ci``:
        the cut of one configuration's VMs (``vms``, ``throughput``).
        """
        upper = np.array([
            pricing.pricing_bound(cand, self.p.demands, list(pi))
            if ci is None or c == ci else 0.0
            for c, cand in enumerate(self.p.candidates)])
        for c, top in (exact_upper or {}).items():
            upper[c] = min(upper[c], top)
        self.cuts.append((t, ci, upper, np.asarray(pi, dtype=float)))

    def objective(self):
        """The integer program's cost vector (the master's sense)."""
        n_n = self.nc * self.nt
        cost = np.zeros(n_n + len(self.served))
        if self.p.objective == 'tco':
            cost[:n_n] = self.node_cost
        elif self.per_config:
            for (w, ci, _t), j in self.index.items():
                cost[j] = -self.p.candidates[ci].throughput[w]
        else:
            cost[n_n:] = -1.0
        return cost

    def _served_of(self, t, ci):
        """{w: variable} of the VMs of period t (on ci, per configuration)."""
        return {w: j for (w, c, tt), j in self.index.items()
                if tt == t and c == ci}

    def best(self, below, lower, limits, time_limit, gap=1e-9):
        """(N, served, bound): the best node counts meeting the cuts.

        ``below``: only those better than this (the master's sense: TCO,
        or minus what is served); ``lower``: a bound known already;
        ``gap``: how close to their optimum the counts may stop (the
        bound is the integer program's own, whatever it is).
        ``served``: {(ci or None, t): VMs per workload}. N None: none is
        (the bound is then ``below``).
        """
        p = self.p
        n_n = self.nc * self.nt
        nvar = n_n + len(self.served)
        cost = self.objective()
        rows, lbs, ubs = [], [], []

        def row(entries, lb, ub):
            rows.append(entries)
            lbs.append(lb)
            ubs.append(ub)

        for ci in range(self.nc):
            for t in range(1, self.nt):
                row([(self._n(ci, t - 1), 1.0), (self._n(ci, t), -1.0)],
                    -np.inf, 0.0)
        for kind, t, value in self.m.caps:
            # The master's rows (its N variables come first, as here).
            scale = master_mod.CAP_SCALE / value if value > 0 else 1.0
            row([(j, v * scale) for j, v in self.m.cap_entries(kind, t)],
                -np.inf, float(value) * scale)
        if self.per_config:
            # At most the demand, over the configurations.
            for t in range(self.nt):
                for w in range(self.nw):
                    entries = [(j, 1.0) for (ww, _c, tt), j
                               in self.index.items() if ww == w and tt == t]
                    if entries:
                        row(entries, -np.inf, self.demand[t, w])
        for period, ci, upper, pi in self.cuts:
            for t in range(self.nt) if period is None else (period,):
                entries = [(self._n(c, t), upper[c])
                           for c in range(self.nc) if upper[c]]
                entries += [(j, -pi[w])
                            for w, j in self._served_of(t, ci).items()
                            if pi[w]]
                row(entries, 0.0, np.inf)
        row([(j, cost[j]) for j in np.nonzero(cost)[0]],
            -np.inf if lower is None else lower, below)
        r, c, v = [], [], []
        for i, entries in enumerate(rows):
            for j, value in entries:
                r.append(i)
                c.append(j)
                v.append(value)
        matrix = sparse.csr_matrix((v, (r, c)), shape=(len(rows), nvar))
        lower_bounds = np.zeros(nvar)
        upper_bounds = np.full(nvar, np.inf)
        self.m.bound_node_counts(upper_bounds, limits, self._n)
        for (w, _ci, t), j in self.index.items():
            upper_bounds[j] = self.demand[t, w]
            if p.objective == 'tco':
                lower_bounds[j] = self.demand[t, w]
        integrality = np.zeros(nvar)
        integrality[:n_n] = 1
        res = clock.milp(
            'the node counts', cost, integrality=integrality,
            bounds=sp_optimize.Bounds(lower_bounds, upper_bounds),
            constraints=sp_optimize.LinearConstraint(matrix, lbs, ubs),
            options={'time_limit': max(time_limit, 0.5),
                     'mip_rel_gap': max(gap, 1e-9)})
        known = -np.inf if lower is None else lower
        if res.status == 2:
            return None, None, below
        dual = getattr(res, 'mip_dual_bound', None)
        bound = (float(dual) if dual is not None and np.isfinite(dual)
                 else known)
        bound = max(bound, known)
        if res.x is None:
            # Stopped by its time limit before any counts (status 1), or
            # failed: not a proof that none are better than ``below``.
            return None, None, bound
        counts = np.round(res.x[:n_n]).reshape(self.nc, self.nt)
        served = {}
        for (w, ci, t), j in self.index.items():
            served.setdefault((ci, t), np.zeros(self.nw))[w] = res.x[j]
        return counts, served, bound


def _pack(problem, master, t, counts, want):
    """(pi, slack, nu) of packing ``want`` onto the nodes ``counts`` in t.

    The LP over the master's patterns of period t: nodes of c at most
    counts[c], slack on each workload's VMs; pi the values of the VMs, nu
    those of a node of each configuration.
    """
    nw = len(problem.workloads)
    # A pattern is the same in every period: those found for any.
    columns = sorted({(ci, cnt) for ci, _t, cnt in master.columns
                      if counts[ci] > 0})
    columns = [(j, ci, cnt) for j, (ci, cnt) in enumerate(columns)]
    used = sorted({ci for ci in range(len(counts)) if counts[ci] > 0})
    node_row = {ci: i for i, ci in enumerate(used)}
    n_x = len(columns)
    r, c, v = [], [], []
    for k, (_j, ci, cnt) in enumerate(columns):
        r.append(node_row[ci])
        c.append(k)
        v.append(1.0)
        for w in range(nw):
            if cnt[w]:
                r.append(len(used) + w)
                c.append(k)
                v.append(-float(cnt[w]))
    for w in range(nw):
        r.append(len(used) + w)
        c.append(n_x + w)
        v.append(-1.0)
    matrix = sparse.csr_matrix((v, (r, c)), shape=(len(used) + nw, n_x + nw))
    b_ub = np.concatenate([[float(counts[ci]) for ci in used],
                           -np.asarray(want, dtype=float)])
    objective = np.concatenate([np.zeros(n_x), np.ones(nw)])
    res = sp_optimize.linprog(objective, A_ub=matrix, b_ub=b_ub,
                              bounds=(0, None), method='highs')
    duals = -res.ineqlin.marginals
    pi = np.maximum(duals[len(used):], 0.0)
    nu = {ci: max(0.0, duals[node_row[ci]]) for ci in used}
    return pi, float(res.fun), nu


def separate(problem, master, t, counts, want, deadline):
    """Whether ``want`` packs onto ``counts`` in period t, patterns fractional.

    Column generation on the packing LP; the patterns it prices join the
    master problem. The packing LP has the patterns found for any period
    (a pattern is the same in every one); each pricing problem takes
    :data:`_PRICING_SECONDS` at first (its upper bound holds however it
    stops), :data:`_LONGER` times longer each time one cut short by it
    leaves the round without a pattern or a cut. Returns ('packs', None),
    ('cut', [(pi, upper bounds)]) of the rounds' cuts (each valid, the
    last one broken by ``counts``), or ('unknown', those cuts) when the
    deadline comes first or pricing to its gap finds neither.
    """
    want = np.asarray(want, dtype=float)
    found = []
    seconds = _PRICING_SECONDS
    for _round in range(_ROUNDS):
        pi, slack, nu = _pack(problem, master, t, counts, want)
        if slack <= _PACKS:
            return 'packs', None
        upper, added, short = {}, 0, False
        until = min(deadline, time.monotonic() + seconds)
        answers = clock.each(
            lambda ci: pricing.best_by(problem, master, ci, pi, until),
            nu)
        for ci, (value, best, upper[ci]) in zip(nu, answers):
            if value > nu[ci] + 1e-9 and master.add(ci, t, best):
                added += 1
            # Stopped by its time, not its gap, above the node's value.
            short |= upper[ci] > nu[ci] + 1e-9 and upper[ci] - value > (
                2 * master.pricing_gap * max(abs(upper[ci]), 1.0))
        # Every round's values give a valid cut; the counts break this one.
        found.append((pi, upper))
        if sum(upper[ci] * counts[ci] for ci in upper) < (
                pi @ want) * (1 - 1e-9) - 1e-9:
            return 'cut', found
        if time.monotonic() > deadline:
            break
        if not added:
            if not short:
                break
            seconds *= _LONGER
    return 'unknown', found


def fleet(problem, master, counts, deadline):
    """A fleet of whole patterns on exactly the nodes ``counts``, or None.

    Period by period (:func:`budgets.fleet_of` on the period alone); the
    nodes of a period that no pattern uses stay idle. Returns a
    :class:`fleetplan.Solution` in the master's layout.
    """
    runs = []
    for t, period in enumerate(problem.periods):
        budget = {ci: int(counts[ci, t]) for ci in range(len(counts))
                  if counts[ci, t] > 0}
        if not budget:
            if any(period.vms.values()):
                return None
            continue
        alone, sub = tranches.period_alone(problem, master, t,
                                           range(len(counts)))
        found = budgets.fleet_of(alone, sub, budget, deadline)
        if found is None:
            return None
        runs.extend((ci, t, cnt, n) for (ci, cnt), n in found[0].items())
    return fleetplan.of_runs(problem, master, counts, runs,
                             'whole patterns on the nodes of the bound')


def first_cuts(problem, master, lp_res, cuts):
    """The cuts to start from: the LP's values of the VMs, and one each.

    The LP's own values of a VM (the duals of its demand rows with
    ``tco``; of its serve rows, per configuration, otherwise, each slot at
    its worth as column generation priced them, :func:`pricing.lp_duals`,
    so that the last pricing's bounds hold for them as they are): the cut
    the LP itself meets. And a VM worth 1 (no node holds more VMs than its best
    pattern) and, per configuration, a VM worth its throughput there.
    """
    nw = len(problem.workloads)
    if lp_res is not None:
        duals = pricing.lp_duals(master, lp_res)
        for t in range(len(problem.periods)):
            if not cuts.per_config:
                pi = np.array([max(0.0, duals[master.demand_row[w, t]])
                               for w in range(nw)])
                if pi.any():
                    cuts.add(pi, _known(problem, master, t, pi))
                continue
            for ci in range(len(problem.candidates)):
                pi = np.array([
                    max(0.0, duals[master.serve_row[w, ci, t]])
                    if (w, ci, t) in master.serve_row else 0.0
                    for w in range(nw)])
                if pi.any():
                    # One per configuration and period: in every period,
                    # they made each integer program slower than they
                    # made it stronger.
                    known = _known(problem, master, t, pi)
                    cuts.add(pi, {ci: known[ci]} if ci in known else None,
                             ci=ci, t=t)
    ones = np.ones(len(problem.workloads))
    if not cuts.per_config:
        cuts.add(ones)
        return
    for ci, cand in enumerate(problem.candidates):
        cuts.add(ones, ci=ci)
        cuts.add(np.asarray(cand.throughput, dtype=float), ci=ci)


def _known(problem, master, t, pi):
    """{ci: an upper bound on its best pattern} from its last pricing."""
    known = {}
    for ci in range(len(problem.candidates)):
        top = pricing.known_bound(problem, master, ci, t, list(pi))
        if top is not None:
            known[ci] = top
    return known


# Seconds each integer program over the node counts may take at most, at
# first: its bound counts when it stops, and the next round adds cuts;
# after one that stopped without any counts, twice as long.
_ROUND_SECONDS = 10.0
# How close to its optimum each integer program over the node counts
# gets, as a share of the gap asked for: its counts need not be the best
# to give cuts, and its own bound is what counts. Solved exactly, one took
# 0.5-10 s on the benchmark.
_IP_SHARE = 0.1


def raise_bound(problem, master, best, bound, deadline, gap, found=None,
                lp_res=None, seen=None, latest=None):
    """The bound of whole node counts; maybe a fleet that meets it.

    :param best: the fleet at hand (a :class:`fleetplan.Solution`) or
        None; ``bound``: the bound so far (the master's sense).
    :param found: called as ``found(solution)`` with each fleet of whole
        patterns on the bound's nodes (``tco``).
    :param lp_res: the master's LP, whose duals give the first cuts.
    :param seen: a set that gets the configurations (indexes) of the node
        counts found, where the integer stages may look for a fleet.
    :param latest: called before each round, the value (the master's
        sense) of a fleet found since, by a stage beside this one, or
        None: the fleet the bound must prove.
    :returns: the bound, never below ``bound``.
    """
    cuts = Bound(problem, master)
    first_cuts(problem, master, lp_res, cuts)
    at_hand = None if best is None else best.fun
    limits = None
    seconds = _ROUND_SECONDS
    for _round in range(MAX_ROUNDS):
        if time.monotonic() >= deadline:
            clock.cut('the bound of whole node counts')
            return bound
        value = None if latest is None else latest()
        if value is not None and (at_hand is None or value < at_hand):
            at_hand, limits = value, None
        if limits is None:
            limits = pricing.node_limits(problem, master, at_hand,
                                         hard_caps=True)
        # A hair inside the gap, so that a proof is one within it.
        below = (np.inf if at_hand is None else at_hand - _INSIDE * max(
            gap, 1e-7) * max(abs(at_hand), 1e-3))
        counts, served, at = cuts.best(
            below, None, limits, min(deadline - time.monotonic(),
                                     seconds), _IP_SHARE * gap)
        bound = max(bound, at)
        if counts is None:
            if at >= below:
                return bound
            # No counts within its seconds, and none proven beyond the
            # fleet: the next one gets twice as long.
            seconds *= 2
            continue
        if seen is not None:
            seen.update(int(ci) for ci in np.nonzero(counts.sum(axis=1))[0])
        broken = 0
        unknown = False
        for (ci, t), want in sorted(served.items(),
                                    key=lambda item: (item[0][1],
                                                      item[0][0] or 0)):
            nodes = counts[:, t]
            if ci is not None:
                if not want.any():
                    continue
                nodes = np.zeros(len(nodes))
                nodes[ci] = counts[ci, t]
            if time.monotonic() >= deadline:
                # A separation takes half a second at least.
                clock.cut('the bound of whole node counts')
                return bound
            status, cut = separate(problem, master, t, nodes, want,
                                   deadline)
            for values, upper in cut or ():
                # Each valid, in every period; the counts break the last
                # one of a 'cut' in period t.
                cuts.add(values, upper, ci=ci)
            broken += status == 'cut'
            unknown |= status == 'unknown'
        if broken:
            continue
        if unknown:
            return bound
        if problem.objective == 'tco':
            solution = fleet(problem, master, counts, deadline)
            if solution is not None and found is not None:
                found(solution)
        return bound
    return bound
