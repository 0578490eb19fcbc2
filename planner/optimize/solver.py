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
"""Solving: column generation, whole nodes, and the plan with its proven gap.
"""

import dataclasses
import time

import numpy as np
from scipy import optimize as sp_optimize
from scipy import sparse

from planner import errors
from planner.optimize import budgets
from planner.optimize import clock
from planner.optimize import complete
from planner.optimize import exact
from planner.optimize import master as master_mod
from planner.optimize import nodecuts
from planner.optimize import pricing
from planner.optimize import problem as problem_mod
from planner import patterns
from planner import tables


_MAX_ROUNDS = 200
# The name of the fleet of solve(): optimal only when its status is.
OPTIMAL = 'optimal'
BEST_FOUND = 'best-found'
# A gap this small is 0: the answer is proven optimal.
_ZERO_GAP = 1e-6


@dataclasses.dataclass(frozen=True)
class Plan:
    """One fleet: nodes and VMs per configuration and period."""

    name: str
    # {(config, period): nodes}
    nodes: dict
    # {(config, period): {workload: VMs}}
    vms: dict
    # {(config, period): {workload: slots}} of the patterns the nodes run.
    patterns: dict
    # {(config, period): [({workload: VMs}, nodes running that pattern)]}
    runs: dict
    capex: dict
    energy: dict
    objective: float
    lp_bound: float
    gap: float
    status: str
    seconds: float
    rounds: int
    columns: int
    # The time limit cut a stage of the search short (:mod:`clock`): the
    # same inputs may give another answer on another machine.
    time_limited: bool = False


# Share of the time limit column generation may use; the integer program
# gets the rest.
_CG_SHARE = 0.6
# Column generation stops once the LP and its bound are this share of the
# requested gap apart: more patterns could improve the LP by no more.
_CG_SHARE_OF_GAP = 0.1
# Wentges smoothing: the weight of the stability centre in the duals that
# pricing works at.
_SMOOTHING = 0.5
# Column generation stops once this many rounds improved neither the bound
# nor the LP by its share of the gap (tailing off).
_TAIL_ROUNDS = 10


def _round_up(problem, master, res, layout):
    """A fleet from the LP: every pattern's nodes rounded up; its TCO.

    Serves what the LP serves, on more nodes; None when it would break a
    cap (there is then no cheap incumbent).
    """
    cost, a_ub, b_ub, current = master._build()
    vec = master_mod.expand(np.array(res.x, dtype=float), layout, current)
    x0, s0, k0, nvar = current
    vec[x0:s0] = np.ceil(vec[x0:s0] - 1e-9)
    for ci in range(master.nc):
        running = 0.0
        for t in range(master.nt):
            used = sum(vec[x0 + j] for j, (c, tt, _a)
                       in enumerate(master.columns) if c == ci and tt == t)
            running = max(running, used)
            vec[master._n(ci, t)] = running
    vec[k0:] = 0.0
    if master_mod.over(a_ub, vec, b_ub):
        return None, None
    return vec, float(cost @ vec)


def _cover(problem, master, vms, time_limit, gap):
    """Nodes per pattern that cover ``vms`` at least cost (one period).

    The integer program over the patterns alone, without node or serving
    variables: min sum cost x, sum a x >= vms, x integer. Returns the
    pattern counts, or None.
    """
    unit = [problem.node_cost(problem.candidates[ci])
            for ci, _t, _c in master.columns]
    rows, cols, vals = [], [], []
    for j, (_ci, _t, counts) in enumerate(master.columns):
        for w, a in enumerate(counts):
            if a:
                rows.append(w)
                cols.append(j)
                vals.append(float(a))
    nw, nx = len(problem.workloads), len(master.columns)
    matrix = sparse.csr_matrix((vals, (rows, cols)), shape=(nw, nx))
    want = np.array([float(vms.get(name, 0)) for name in problem.workloads])
    res = clock.milp(
        'the integer program covering the rest', np.array(unit),
        integrality=np.ones(nx),
        bounds=sp_optimize.Bounds(np.zeros(nx), np.full(nx, np.inf)),
        constraints=sp_optimize.LinearConstraint(matrix, want, np.inf),
        options={'time_limit': max(time_limit, 0.5), 'mip_rel_gap': gap})
    if res.x is None:
        return None
    return np.round(res.x)


def _vector(problem, master, x):
    """The master problem's solution vector of pattern counts x."""
    cost, a_ub, b_ub, current = master._build()
    x0, s0, _k0, nvar = current
    nw = len(problem.workloads)
    period = problem.periods[0]
    vec = np.zeros(nvar)
    vec[x0:s0] = x
    slots = {}
    for j, (ci, t, counts) in enumerate(master.columns):
        vec[master._n(ci, t)] += x[j]
        for w in range(nw):
            slots[w, ci, t] = slots.get((w, ci, t), 0.0) + counts[w] * x[j]
    # Each workload's VMs go to its slots in candidate order.
    left = [float(period.vms.get(name, 0)) for name in problem.workloads]
    for j, (w, ci, t) in enumerate(master.serve):
        take = min(slots.get((w, ci, t), 0.0), left[w])
        vec[s0 + j] = take
        left[w] -= take
    if master_mod.over(a_ub, vec, b_ub):
        return None, None
    return vec, float(cost @ vec)


def _residual(problem, master, lp_res, lp_layout, time_limit, gap,
              mix=True):
    """A fleet from the LP: patterns rounded down, the rest covered.

    One period, no caps. ``mix``: the rest may also go to free nodes that
    mix workloads. Returns (vector, TCO), or (None, None).
    """
    current = master.layout()
    lp = master_mod.expand(
        np.asarray(lp_res.x, dtype=float), lp_layout, current)
    x0, s0, _k0, _nvar = current
    x = np.floor(lp[x0:s0] + 1e-9)
    period = problem.periods[0]
    served = np.zeros(len(problem.workloads))
    covered = 0.0
    for j, (ci, _t, counts) in enumerate(master.columns):
        served += np.array(counts, dtype=float) * x[j]
        cand = problem.candidates[ci]
        covered += x[j] * problem.node_cost(cand)
    rest = {name: max(0, int(period.vms.get(name, 0) - served[w]))
            for w, name in enumerate(problem.workloads)}
    if any(rest.values()):
        # The gap asked of the whole, as a share of what is left to cover.
        whole = max(abs(lp_res.fun), 1.0)
        sub_gap = min(1.0, gap * whole / max(whole - covered, 1e-9) / 2)
        started = time.monotonic()
        more = _cover(problem, master, rest, time_limit / 2, sub_gap)
        cost = None
        if more is not None:
            cost = sum(m * problem.node_cost(problem.candidates[ci])
                       for m, (ci, _t, _c)
                       in zip(more, master.columns))
        # What is left over, on free nodes of the configurations the LP
        # uses: a node may hold the few VMs of several workloads.
        configs = sorted({ci for j, (ci, _t, _c) in enumerate(master.columns)
                          if lp[x0 + j] > 1e-9})
        runs = None
        if mix:
            runs = _leftover(problem, master, configs, rest, cost,
                             time_limit - (time.monotonic() - started))
        if runs is not None:
            more = _pattern_counts(master, runs)
        if more is None:
            return None, None
        x = np.concatenate([x, np.zeros(len(more) - len(x))]) + more
    return _vector(problem, master, x)


def _leftover(problem, master, configs, rest, incumbent, time_limit):
    """The least-cost nodes of ``configs`` for the VMs in ``rest``.

    The exact integer stage on that small problem alone (one period, no
    caps): its free nodes run any pattern. Returns [(candidate index,
    counts, nodes)] if it beats ``incumbent`` (a TCO, or None), else None.
    """
    if not configs:
        return None
    if time_limit <= 0:
        clock.cut('the leftover VMs on free nodes')
        return None
    period = problem.periods[0]
    sub = dataclasses.replace(
        problem, periods=(dataclasses.replace(period, vms=rest),),
        candidates=tuple(problem.candidates[ci] for ci in configs))
    sub_master = master_mod.Master(sub)
    index = {ci: k for k, ci in enumerate(configs)}
    for ci, _t, counts in master.columns:
        if ci in index:
            sub_master.add(index[ci], 0, counts)
    out = exact.solve(sub, sub_master, incumbent, max(time_limit, 0.5),
                      1e-6, False)
    if out.vector is None:
        return None
    x0 = sub_master.layout()[0]
    runs = []
    for j, (k, _t, counts) in enumerate(sub_master.columns):
        n = int(round(out.vector[x0 + j]))
        if n:
            runs.append((configs[k], counts, n))
    return runs


class _Solution(object):
    """A fleet: the master's vector in the layout it was found in."""

    def __init__(self, x, fun, layout, message='found from the LP'):
        self.x = x
        self.fun = fun
        self.layout = layout
        self.message = message

    def vector(self, master):
        """The vector in the master's current layout (more columns)."""
        current = master.layout()
        if tuple(self.layout) == tuple(current):
            return self.x
        return master_mod.expand(self.x, self.layout, current)

    def configs(self, master):
        """Indexes of the configurations the fleet has nodes of."""
        return {ci for ci in range(master.nc) for t in range(master.nt)
                if self.x[master._n(ci, t)] > 0.5}


def solve(problem, scen=None, time_limit=60.0, gap=1e-3, progress=None,
          generate=True, stage=None, every_pattern=True):
    """Optimise; returns the :class:`Plan` of the best fleet found.

    Its status (and its name, :data:`OPTIMAL` or :data:`BEST_FOUND`) says
    whether it is proven within ``gap`` of the optimum; ``time_limited``
    whether the time limit cut the search short.

    :param generate: generate patterns that mix workloads (column
        generation); False keeps one workload per node, without a bound.
    :param progress: called as ``progress(round, patterns, LP value,
        bound)`` after each column-generation round.
    :param stage: called as ``stage(what, incumbent, bound)`` as each
        stage after column generation ends (``incumbent`` None: no fleet
        yet); the values are the minimised objective's.
    :param every_pattern: where the maximal patterns are few, list them
        all and solve the exact integer program over them
        (:mod:`complete`) instead of generating columns; False generates
        columns always.

    :raises errors.Infeasible: naming what makes the demand impossible.
    """
    with clock.watch() as cut:
        plan = _solve(problem, scen, time_limit, gap, progress, generate,
                      stage, every_pattern)
    return dataclasses.replace(plan, time_limited=bool(cut))


def _solve(problem, scen, time_limit, gap, progress, generate, stage,
           every_pattern):
    started = time.monotonic()
    deadline = started + time_limit
    if scen is not None and problem.objective == 'tco':
        problem_mod.check_carriable(problem, scen)
    master = master_mod.Master(problem)
    master.pricing_gap = pricing.pricing_gap(gap)
    pool = complete.listing(problem) if generate and every_pattern else None
    if pool is not None:
        return _solve_complete(problem, scen, master, pool, started,
                               deadline, gap, stage)
    _seed(problem, master)
    generated = _generate_columns(
        problem, master, deadline, started + _CG_SHARE * time_limit, gap,
        generate, progress)
    bound = generated.bound

    def tell(what, best=None, at=None):
        # ``at``: a bound that rose inside a stage.
        if stage is not None:
            stage(what, None if best is None else best.fun,
                  bound if at is None else at)

    tell('column generation: %d patterns after %d rounds'
         % (len(master.columns), generated.rounds), None)
    # With TCO the master problem lets a cap grow (so that column
    # generation always has a fleet); the integer stages hold it.
    hard = master.elastic and bool(master.caps)
    best, bound = _incumbent(problem, master, generated.res,
                             generated.layout, bound, deadline, gap,
                             generate, tell)
    if best is not None and hard and _grows_a_cap(master, best):
        best = None
    tell('fleet from the patterns', best)
    if generate:
        best, bound = _exact_stage(problem, master, best, bound, deadline,
                                   gap, hard, scen)
        tell('integer program with free nodes', best)
    elif best is None:
        raise errors.Infeasible('no fleet of one workload per node meets '
                                'the demand within the caps')
    if problem.objective != 'tco':
        # Before: its objective is cost, which the bound is not about.
        tell('cheapest fleet serving as much', None)
        best = _cheapest_serving(problem, master, best, deadline, gap)
    layout = master.layout()
    return _plan(problem, master, best.vector(master), layout, bound,
                 bool(np.isfinite(bound)), started, generated.rounds, gap)


def _solve_complete(problem, scen, master, pool, started, deadline, gap,
                    stage):
    """The plan of the exact integer program over every pattern."""
    complete.add_all(problem, master, pool)
    if stage is not None:
        stage('every pattern listed: %d' % len(master.columns), None,
              -np.inf)
    out = complete.solve(master, deadline - time.monotonic(), gap)
    if out.infeasible:
        raise errors.Infeasible(_infeasible(problem, scen, master, deadline,
                                            gap))
    if out.vector is None:
        raise errors.Infeasible(_unproven_infeasible(master))
    bound = -np.inf if out.bound is None else out.bound
    if stage is not None:
        stage('integer program over every pattern', out.value, bound)
    best = _Solution(out.vector, out.value, master.layout())
    if problem.objective != 'tco':
        # As much served, by the cheapest fleet serving it.
        master.keep_served = -out.value * (1 - 1e-9)
        cheap = complete.solve(master, deadline - time.monotonic(), gap)
        if cheap.vector is not None:
            best = _Solution(cheap.vector, cheap.value, master.layout())
    return _plan(problem, master, best.vector(master), master.layout(),
                 bound, out.bound is not None, started, 0, gap)


def _unproven_infeasible(master):
    return ('no fleet of whole nodes that meets the demand%s was found '
            'within the time limit; it is not proven that none exists: '
            'give optimize more --time-limit'
            % (' within the caps' if master.caps else ''))


def _seed(problem, master):
    """The first columns: each workload alone, as many as a node holds."""
    nw = len(problem.workloads)
    for ci, cand in enumerate(problem.candidates):
        for t in range(len(problem.periods)):
            for w, limit in enumerate(cand.limits):
                if limit:
                    counts = [0] * nw
                    counts[w] = limit
                    master.add(ci, t, counts)


@dataclasses.dataclass(frozen=True)
class _Generated:
    """Where column generation ended: the last LP and the bound."""

    res: object
    layout: object
    rounds: int
    bound: float


def _generate_columns(problem, master, deadline, cg_deadline, gap,
                      generate, progress):
    """Column generation: solve the LP, add the patterns worth adding.

    It stops when the LP is within its share of ``gap`` of the bound, when
    no pattern is worth adding, after :data:`_MAX_ROUNDS` rounds, or past
    ``cg_deadline`` once pricing is exact.

    Where Farley's bound applies the duals are stabilised (Wentges
    smoothing): pricing works at a point between the LP's duals and the
    duals of the best bound so far (the centre), which damps the
    oscillation of the LP's duals from round to round; when nothing pays
    there (a mispricing), the round prices at the LP's own duals, so that
    column generation ends where it would have without smoothing.
    """
    rounds = 0
    bound = -np.inf
    incumbent = None
    centre = None
    # (LP value, bound) of each round.
    history = []
    while True:
        rounds += 1
        res, layout = master.solve_lp()
        incumbent = _rounded_incumbent(problem, master, res, layout,
                                       incumbent)
        out_of_time = time.monotonic() > cg_deadline
        if out_of_time:
            clock.cut('column generation')
        if not generate:
            break
        duals = -res.ineqlin.marginals
        if pricing.farley_applies(problem, master):
            duals = pricing.cover_duals(problem, master, duals)
        points = [(duals, float(res.fun))]
        if (centre is not None and len(centre[0]) == len(duals)
                and not out_of_time):
            points.insert(0, (_SMOOTHING * centre[0]
                              + (1 - _SMOOTHING) * duals,
                              _SMOOTHING * centre[1]
                              + (1 - _SMOOTHING) * float(res.fun)))
        for point, value in points:
            added, lower, priced_exactly = _price(
                problem, master, res, point, value, out_of_time, deadline,
                incumbent)
            if lower > bound:
                bound = lower
                if pricing.farley_applies(problem, master):
                    centre = (point, value)
            if added:
                break
        if progress:
            progress(rounds, len(master.columns), res.fun, bound)
        tol = _CG_SHARE_OF_GAP * gap * max(abs(res.fun), 1.0)
        close = priced_exactly and res.fun - bound <= tol
        history.append((res.fun, bound))
        if close or not added or rounds >= _MAX_ROUNDS or (
                out_of_time and priced_exactly) or (
                priced_exactly and _tailing_off(history, tol)):
            if _cut_nodes(problem, master, res, out_of_time, rounds):
                centre = None
                continue
            break
    return _Generated(res=res, layout=layout, rounds=rounds, bound=bound)


def _tailing_off(history, tol):
    """Whether the last :data:`_TAIL_ROUNDS` rounds moved nothing that counts.

    The LP improved by no more than ``tol`` (its share of the gap) and the
    bound not at all: more rounds of the kind would improve the LP, whose
    bound is already proven, by no more than that, and the time is the
    integer stage's. The bound stays valid: it is the best one proven.
    """
    if len(history) <= _TAIL_ROUNDS:
        return False
    lp_then, bound_then = history[-1 - _TAIL_ROUNDS]
    lp_now, bound_now = history[-1]
    return (np.isfinite(bound_now) and bound_now <= bound_then
            and lp_then - lp_now <= tol)


def _price(problem, master, res, duals, value, out_of_time, deadline,
           incumbent):
    """One round's pricing at ``duals`` (their dual objective ``value``).

    Greedy first; exact pricing when greedy finds nothing, for the bound
    too. Returns (patterns added, lower bound or -inf, priced exactly).
    """
    priced, added = _price_greedily(problem, master, duals, out_of_time)
    if added:
        return added, -np.inf, False
    # Greedy found nothing: price exactly, for the bound too.
    added, lower = _price_exactly(problem, master, res, duals, value,
                                  priced, deadline, incumbent)
    return added, lower, True


def _rounded_incumbent(problem, master, res, layout, incumbent):
    """The least TCO of a fleet at hand: the LP rounded up, or ``incumbent``.

    The Lagrangian bound's node limits use it.
    """
    if (problem.objective == 'tco' and not master.caps
            and not pricing.farley_applies(problem, master)):
        _vec, cost = _round_up(problem, master, res, layout)
        if cost is not None:
            incumbent = cost if incumbent is None else min(incumbent, cost)
    return incumbent


def _price_greedily(problem, master, duals, out_of_time):
    """Add the greedy pattern of each (candidate, period) worth adding.

    :returns: ({(candidate, period): (dual, quick bound) or (dual, None,
        workload values)} of those that got none, the number added).
    """
    nw = len(problem.workloads)
    priced = {}
    added = 0
    for ci, cand in enumerate(problem.candidates):
        for t in range(len(problem.periods)):
            mu = duals[master.link_row[ci, t]]
            values = [duals[master.serve_row[w, ci, t]]
                      if (w, ci, t) in master.serve_row else 0.0
                      for w in range(nw)]
            tol = pricing.RC_TOL * max(mu, 1e-6)
            quick = pricing.pricing_bound(cand, problem.demands, values)
            known = pricing.known_bound(problem, master, ci, t, values)
            if known is not None:
                quick = min(quick, known)
            if quick <= mu + tol:
                priced[ci, t] = (mu, quick)
                continue
            if not out_of_time:
                value, counts = patterns.greedy_pattern(
                    cand.capacity, problem.demands, values, cand.limits)
                if value > mu + tol and master.add(ci, t, counts):
                    added += 1
                    continue
            priced[ci, t] = (mu, None, values)
    return priced, added


def _price_exactly(problem, master, res, duals, value, priced, deadline,
                   incumbent):
    """(patterns added, lower bound) of exact pricing at ``duals``.

    The Lagrangian bound (no Farley) holds at the LP's own duals only:
    at others it is not computed (-inf).
    """
    left = max(deadline - time.monotonic(), 1.0)
    per_call = max(0.2, 0.05 * left / max(len(priced), 1))
    if pricing.farley_applies(problem, master):
        return pricing.price_farley(problem, master, duals, value, priced,
                                    per_call)
    return pricing.price_all(problem, master, res, priced, per_call,
                             incumbent)


def _cut_nodes(problem, master, res, out_of_time, rounds):
    """Whether a cut on the number of nodes is worth more rounds."""
    if (pricing.farley_applies(problem, master)
            and master.min_nodes is None
            and not out_of_time and rounds < _MAX_ROUNDS):
        master.min_nodes = pricing.node_cut(
            problem, master, res, 1.0) or 0
        return bool(master.min_nodes)
    return False


def _incumbent(problem, master, lp_res, lp_layout, bound, deadline, gap,
               mix=True, found=None):
    """(the best fleet of the patterns generated so far or None, bound).

    ``mix``: leftover VMs may share free nodes (False for one workload per
    node). ``found``: called as ``found(what, fleet, bound)`` with each
    better fleet before the longer integer program (so that progress
    shows a fleet and its gap early).
    """
    if pricing.farley_applies(problem, master):
        return _farley_incumbent(problem, master, lp_res, lp_layout, bound,
                                 deadline, gap, mix, found)
    best = None
    remaining = max(deadline - time.monotonic(), 1.0) / 2
    mip, layout = master.solve_mip(remaining, gap)
    if mip.x is not None:
        best = _Solution(np.array(mip.x), float(mip.fun), layout)
    return best, bound


def _proven(best, bound, gap):
    """Whether ``best`` is proven within ``gap`` (or 0) of ``bound``."""
    return best is not None and within(proven_gap(best.fun, bound), gap)


def _farley_incumbent(problem, master, lp_res, lp_layout, bound, deadline,
                      gap, mix, found):
    """(the best fleet or None, bound): one period without caps (TCO).

    The LP rounded up at once, then fleets within node budgets
    (:mod:`budgets`), the bound of whole node counts (:mod:`nodecuts`),
    then the LP rounded down with the rest covered, then the integer
    program over the patterns; each only while the fleet at hand is not
    proven within ``gap``.
    """
    def better(vec, cost, best, what):
        if vec is None or (best is not None and cost >= best.fun):
            return best
        best = _Solution(vec, cost, master.layout())
        if found is not None and not _proven(best, bound, gap):
            found(what, best, bound)
        return best

    best = better(*_round_up(problem, master, lp_res, lp_layout), None,
                  'fleet rounded from the LP')
    if mix and not _proven(best, bound, gap):
        best = _budgeted(problem, master, best, bound, gap, deadline, found)
    if mix and not _proven(best, bound, gap):
        best, bound = _node_bound(problem, master, best, bound, lp_res,
                                  deadline, gap)
        if found is not None:
            found('bound of whole node counts', best, bound)
    if _proven(best, bound, gap):
        return best, bound
    remaining = max(deadline - time.monotonic(), 1.0)
    best = better(*_residual(problem, master, lp_res, lp_layout,
                             remaining / 4, gap, mix), best,
                  'fleet rounded down from the LP, the rest covered')
    if _proven(best, bound, gap):
        return best, bound
    remaining = max(deadline - time.monotonic(), 1.0)
    if best is None or exact.free_nodes(problem, master, best.fun,
                                        False)[2]:
        # Half the time left for the exact stage's proof.
        remaining /= 2
    else:
        # No proof is affordable: the time goes to the best fleet.
        remaining *= 0.8
    x = _cover(problem, master, problem.periods[0].vms, remaining, gap / 2)
    vec, cost = (None, None) if x is None else _vector(problem, master, x)
    if vec is not None and (best is None or cost < best.fun):
        best = _Solution(vec, cost, master.layout())
    return best, bound


# The node budgets first look for a fleet within this gap of the bound
# (or the gap asked for, if larger), then this many times it, then for
# fleets cheaper than the last by _BUDGET_STEP.
_BUDGET_GAPS = (1e-3, 4e-3)
_BUDGET_STEP = 5e-5
# Share of the time left that the node budgets may take.
_BUDGET_SHARE = 0.6


def _budgeted(problem, master, best, bound, gap, deadline, found):
    """Fleets within node budgets, each cheaper than the last."""
    if not np.isfinite(bound):
        return best
    until = time.monotonic() + _BUDGET_SHARE * (deadline - time.monotonic())
    targets = [bound / (1 - max(gap, g)) for g in _BUDGET_GAPS]
    while targets and time.monotonic() < until:
        most = targets.pop(0)
        if best is not None:
            most = min(most, best.fun * (1 - _BUDGET_STEP))
        out = budgets.fleet_within(problem, master, most, until)
        if out is None:
            continue
        vec, cost = _fleet_vector(problem, master, out[0])
        if vec is None or (best is not None and cost >= best.fun):
            break
        best = _Solution(vec, cost, master.layout())
        if _proven(best, bound, gap):
            break
        if found is not None:
            found('fleet within node budgets', best, bound)
        # Then cheaper ones, while they are found.
        targets = [best.fun * (1 - _BUDGET_STEP)]
    return best


# Share of the time left that the bound of whole node counts may take.
_NODE_BOUND_SHARE = 0.8


def _node_bound(problem, master, best, bound, lp_res, deadline, gap):
    """The bound of whole node counts (:mod:`nodecuts`), when not proven.

    Returns (best fleet, bound): the fleet at the bound's cost if one was
    found there.
    """
    if not np.isfinite(bound) or _proven(best, bound, gap):
        return best, bound
    duals = -lp_res.ineqlin.marginals
    pi = [max(0.0, duals[master.demand_row[w, 0]])
          for w in range(len(problem.workloads))]
    until = time.monotonic() + _NODE_BOUND_SHARE * (
        deadline - time.monotonic())
    fleets = []
    bound = nodecuts.raise_bound(
        problem, master, None if best is None else best.fun, bound, pi,
        until, gap, lambda fleet, tco: fleets.append(fleet))
    for fleet in fleets:
        vec, cost = _fleet_vector(problem, master, fleet)
        if vec is not None and (best is None or cost < best.fun):
            best = _Solution(vec, cost, master.layout())
    return best, bound


def _fleet_vector(problem, master, fleet):
    """The master's vector (and TCO) of {(ci, counts): nodes}, one period."""
    return _vector(problem, master, _pattern_counts(
        master, [(ci, counts, n) for (ci, counts), n in fleet.items()]))


def _pattern_counts(master, runs):
    """Nodes per master column of ``runs`` [(ci, counts, nodes)], one period.

    Patterns the master lacks join it.
    """
    for ci, counts, _n in runs:
        master.add(ci, 0, counts)
    index = {key: j for j, key in enumerate(master.columns)}
    x = np.zeros(len(master.columns))
    for ci, counts, n in runs:
        x[index[ci, 0, tuple(counts)]] += n
    return x


def _grows_a_cap(master, best):
    _x0, _s0, k0, nvar = best.layout
    return any(best.x[k0 + k] > master_mod.CAP_TOLERANCE * max(value, 1e-9)
               for k, (_kind, _t, value) in enumerate(master.caps))


def _exact_stage(problem, master, best, bound, deadline, gap, hard, scen):
    """The integer program with free nodes, when the fleet is not proven.

    Returns (best fleet, bound); raises Infeasible when no fleet exists.
    """
    proven = _proven(best, bound, gap)
    remaining = deadline - time.monotonic()
    if not proven and remaining <= 0:
        clock.cut('the integer program with free nodes')
    if not proven and remaining > 0:
        focus = best.configs(master) if best is not None else ()
        out = exact.solve(
            problem, master, None if best is None else best.fun,
            max(remaining, 1.0), gap, hard,
            lower=bound if np.isfinite(bound) else None, focus=focus,
            step=_least_better(problem, best))
        if out.vector is not None and (best is None
                                       or out.value < best.fun):
            best = _Solution(out.vector, out.value, master.layout())
        if out.bound is not None:
            bound = max(bound, out.bound)
        if out.infeasible:
            raise errors.Infeasible(_infeasible(problem, scen, master,
                                                deadline, gap))
    if best is None:
        raise errors.Infeasible(_unproven_infeasible(master))
    return best, bound


def _least_better(problem, best):
    """How much better than ``best`` any better fleet is, if known.

    VMs served are whole: a fleet that serves more serves one VM more at
    least, and from nothing served, at least one VM of the least weight.
    None: no such step (TCO, or no fleet at hand).
    """
    if best is None or problem.objective == 'tco':
        return None
    if problem.objective == 'vms':
        return 1.0 - 1e-6
    if abs(best.fun) < 1e-9:
        weights = [t for c in problem.candidates for t in c.throughput
                   if t > 0]
        return min(weights) * (1 - 1e-6) if weights else None
    return None


def _cheapest_serving(problem, master, best, deadline, gap):
    """As much served, by the cheapest fleet that serves it."""
    master.keep_served = -best.fun * (1 - 1e-9)
    cost, _a, _b, layout = master._build()
    tco = float(cost @ best.vector(master))
    remaining = max(deadline - time.monotonic(), 1.0)
    second, second_layout = master.solve_mip(remaining / 2, gap)
    if second.x is not None and second.fun < tco:
        best = _Solution(np.array(second.x), float(second.fun),
                         second_layout)
        tco = float(second.fun)
    out = exact.solve(problem, master, tco,
                      max(deadline - time.monotonic(), 1.0), gap, False,
                      focus=best.configs(master))
    if out.vector is not None and out.value < tco:
        best = _Solution(out.vector, out.value, master.layout())
    return best


def _infeasible(problem, scen, master, deadline, gap):
    """Why no fleet exists: each cap too small, with the least it needs."""
    if not master.caps:
        return 'no fleet of whole nodes of the candidates meets the demand'
    words = {'budget': 'the capex budget of %s',
             'power_kw': 'the power cap of %s (PUE included)',
             'rack_units': 'the cap of %s'}
    short, least = [], []
    seen = set()
    for kind, _t, value in master.caps:
        if kind in seen:
            continue
        seen.add(kind)
        need, proven = _least(problem, scen, kind, deadline, gap)
        if need is None:
            continue
        text = _amount(kind, need)
        if need > value * (1 + 1e-9) + 1e-9:
            short.append('%s is too small: the demand needs at least %s%s'
                         % (words[kind] % _amount(kind, value), text,
                            '' if proven else ' (a proven lower bound)'))
        else:
            least.append('%s %s' % (kind.replace('_', ' '), text))
    if short:
        return 'the demand does not fit the caps: %s' % '; '.join(short)
    return ('the demand does not fit the caps together, although each '
            'alone could be met (the least each needs: %s): raise one of '
            'them' % ', '.join(least))


def _least(problem, scen, kind, deadline, gap):
    """The least value of a cap that a fleet meeting the demand needs.

    Nodes bought stay, so every cap binds in the last period: the least
    is the optimum of the same demand with each node costing what it
    takes of the cap, and no energy. Returns (value, proven optimal).
    """
    def weight(cand):
        if kind == 'budget':
            return cand.capex
        if kind == 'power_kw':
            return problem.kw(cand)
        return cand.rack_units

    candidates = tuple(dataclasses.replace(c, capex=weight(c), watts=0.0)
                       for c in problem.candidates)
    sub = dataclasses.replace(problem, objective='tco',
                              candidates=candidates, budget=None,
                              power_kw=None, rack_units=None,
                              price_per_kwh=0.0)
    left = deadline - time.monotonic()
    try:
        plan = solve(sub, scen=scen, time_limit=max(left / 3, 2.0), gap=gap)
    except errors.Infeasible:
        return None, False
    if plan.gap is not None and plan.gap <= _ZERO_GAP:
        return plan.objective, True
    return plan.lp_bound, False


def _num(value):
    return ('%d' % value) if float(value).is_integer() else '%.6g' % value


def _amount(kind, value):
    """A value of a cap, with its unit: ``1 rack unit``, ``3.5 kW``."""
    if kind == 'rack_units':
        return tables.counted(value, 'rack unit', _num(value))
    if kind == 'power_kw':
        return '%s kW' % _num(value)
    return _num(value)


def _plan(problem, master, vec, layout, lp_bound, converged, started,
          rounds, asked):
    """The plan of ``vec``; optimal when proven within ``asked`` (--gap)."""
    x0, s0, _k0, _nvar = layout
    nodes, vms, slots, capex, energy, runs = {}, {}, {}, {}, {}, {}
    last = len(problem.periods) - 1
    for ci, cand in enumerate(problem.candidates):
        for t, period in enumerate(problem.periods):
            n = int(round(vec[master._n(ci, t)]))
            key = (cand.name, period.name)
            nodes[key] = n
            vms[key] = {w: 0 for w in problem.workloads}
            slots[key] = {w: 0 for w in problem.workloads}
            runs[key] = []
            energy[key] = n * problem.energy(cand, period)
            capex[key] = (n * cand.capex if t == last else 0.0)
    for j, (ci, t, counts) in enumerate(master.columns):
        count = int(round(vec[x0 + j]))
        if count:
            key = (problem.candidates[ci].name, problem.periods[t].name)
            runs[key].append((dict(zip(problem.workloads, counts)), count))
            for w, a in enumerate(counts):
                slots[key][problem.workloads[w]] += a * count
    for j, (w, ci, t) in enumerate(master.serve):
        key = (problem.candidates[ci].name, problem.periods[t].name)
        vms[key][problem.workloads[w]] += vec[s0 + j]
    for key in vms:
        # Served VMs are whole; the solver may leave a hair.
        vms[key] = {w: int(round(v)) for w, v in vms[key].items()}
    value = _objective_value(problem, vms, capex, energy)
    # The LP minimised the TCO, or minus what is served.
    bound = lp_bound if problem.objective == 'tco' else -lp_bound
    gap = proven_gap(value, bound) if converged else None
    status = 'optimal' if within(gap, asked) else 'feasible'
    return Plan(name=OPTIMAL if status == 'optimal' else BEST_FOUND,
                nodes=nodes, vms=vms, patterns=slots, runs=runs,
                capex=capex, energy=energy, objective=value,
                lp_bound=bound, gap=gap, status=status,
                seconds=time.monotonic() - started, rounds=rounds,
                columns=len(master.columns))


def within(gap, asked):
    """Whether a proven gap (None: none) is within the gap asked for.

    The search stops once within ``asked``; rounding may leave a hair over.
    A gap of at most :data:`_ZERO_GAP` is 0 whatever was asked.
    """
    return gap is not None and gap <= max(asked * (1 + 1e-6) + 1e-12,
                                          _ZERO_GAP)


def proven_gap(value, bound):
    """(answer - bound) / answer, in absolute values; None if unknown.

    An answer of 0 is proven only by a bound of 0 (gap 0); against any
    other bound its relative gap has no finite value (None).
    """
    if abs(value) > 1e-9:
        return abs(value - bound) / abs(value)
    return 0.0 if abs(bound) <= 1e-9 else None


def _objective_value(problem, vms, capex, energy):
    if problem.objective == 'tco':
        return sum(capex.values()) + sum(energy.values())
    total = 0.0
    for cand in problem.candidates:
        for period in problem.periods:
            for w, name in enumerate(problem.workloads):
                weight = (cand.throughput[w]
                          if problem.objective == 'throughput' else 1.0)
                total += weight * vms[cand.name, period.name][name]
    return total


def best_single(problem, scen=None, time_limit=60.0, gap=1e-3,
                progress=None):
    """The best fleet of one configuration only (None: none carries it).

    It is ``time_limited`` when the time limit cut the search of any
    configuration short (that one might have been better).

    :param progress: called as ``progress(index, count, configuration)``
        before each configuration is solved.
    """
    best = None
    with clock.watch() as cut:
        for index, cand in enumerate(problem.candidates, start=1):
            if progress is not None:
                progress(index, len(problem.candidates), cand.name)
            best = _better_single(problem, cand, best, scen, time_limit,
                                  gap)
    if best is not None:
        best = dataclasses.replace(best, time_limited=bool(cut))
    return best


def _better_single(problem, cand, best, scen, time_limit, gap):
    """The fleet of ``cand`` alone if better than ``best``, else best."""
    sub = problem.restricted([cand.name])
    try:
        plan = solve(sub, scen=scen, time_limit=time_limit, gap=gap)
    except errors.Infeasible:
        return best
    better = (best is None or
              (plan.objective < best.objective
               if problem.objective == 'tco'
               else plan.objective > best.objective))
    if better:
        return dataclasses.replace(plan, name='single:%s' % cand.name)
    return best


def utilisation(problem, plan, config, period):
    """Used share of each node resource of one configuration's nodes."""
    cand = next(c for c in problem.candidates if c.name == config)
    n = plan.nodes.get((config, period), 0)
    counts = [plan.vms[config, period][w] for w in problem.workloads]
    cap = cand.capacity
    ds = problem.demands

    def share(size, total):
        if not n or not total:
            return None
        return sum(c * size(d) for c, d in zip(counts, ds)) / (n * total)

    return {
        'vcpu': share(lambda d: d.vcpus, cap.vcpus),
        'memory': share(lambda d: d.used_gb, cap.memory_gb),
        'dram_cache': share(cap.near_mb, cap.cache_mb),
        'namespaces': share(lambda d: d.vpmem_gb, sum(cap.regions)),
    }
