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
from planner.optimize import master as master_mod
from planner.optimize import pricing
from planner.optimize import problem as problem_mod
from planner import patterns


_MAX_ROUNDS = 200


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


# Share of the time limit column generation may use; the integer program
# gets the rest.
_CG_SHARE = 0.6
# Column generation stops once the LP and its bound are this share of the
# requested gap apart: more patterns could improve the LP by no more.
_CG_SHARE_OF_GAP = 0.1


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
    if np.any(a_ub @ vec > b_ub + 1e-6 * np.maximum(1.0, abs(b_ub))):
        return None, None
    return vec, float(cost @ vec)


def _cover(problem, master, vms, time_limit, gap):
    """Nodes per pattern that cover ``vms`` at least cost (one period).

    The integer program over the patterns alone, without node or serving
    variables: min sum cost x, sum a x >= vms, x integer. Returns the
    pattern counts, or None.
    """
    period = problem.periods[0]
    unit = [problem.candidates[ci].capex
            + problem.energy(problem.candidates[ci], period)
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
    res = sp_optimize.milp(
        np.array(unit), integrality=np.ones(nx),
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
    if np.any(a_ub @ vec > b_ub + 1e-6 * np.maximum(1.0, abs(b_ub))):
        return None, None
    return vec, float(cost @ vec)


def _residual(problem, master, lp_res, lp_layout, time_limit, gap):
    """A fleet from the LP: patterns rounded down, the rest covered.

    One period, no caps. Returns (vector, TCO), or (None, None).
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
        covered += x[j] * (cand.capex + problem.energy(cand, period))
    rest = {name: max(0, int(period.vms.get(name, 0) - served[w]))
            for w, name in enumerate(problem.workloads)}
    if any(rest.values()):
        # The gap asked of the whole, as a share of what is left to cover.
        whole = max(abs(lp_res.fun), 1.0)
        sub_gap = min(1.0, gap * whole / max(whole - covered, 1e-9) / 2)
        more = _cover(problem, master, rest, time_limit, sub_gap)
        if more is None:
            return None, None
        x = x + more
    return _vector(problem, master, x)


class _Solution(object):
    def __init__(self, x, fun, message='found from the LP'):
        self.x = x
        self.fun = fun
        self.message = message


def solve(problem, scen=None, time_limit=60.0, gap=1e-3, progress=None,
          generate=True):
    """Optimise; returns the :class:`Plan` of the optimal fleet.

    :param generate: generate patterns that mix workloads (column
        generation); False keeps one workload per node, without a bound.

    :raises errors.Infeasible: naming what makes the demand impossible.
    """
    started = time.monotonic()
    deadline = started + time_limit
    cg_deadline = started + _CG_SHARE * time_limit
    if scen is not None and problem.objective == 'tco':
        problem_mod.check_carriable(problem, scen)
    master = master_mod.Master(problem)
    nt, nw = len(problem.periods), len(problem.workloads)
    for ci, cand in enumerate(problem.candidates):
        for t in range(nt):
            for w, limit in enumerate(cand.limits):
                if limit:
                    counts = [0] * nw
                    counts[w] = limit
                    master.add(ci, t, counts)
    rounds = 0
    bound = -np.inf
    incumbent = None
    while True:
        rounds += 1
        res, layout = master.solve_lp()
        duals = -res.ineqlin.marginals
        if (problem.objective == 'tco' and not master.caps
                and not pricing.farley_applies(problem, master)):
            # The Lagrangian bound's node limits use a fleet at hand.
            _vec, cost = _round_up(problem, master, res, layout)
            if cost is not None:
                incumbent = cost if incumbent is None else min(incumbent,
                                                               cost)
        out_of_time = time.monotonic() > cg_deadline
        if not generate:
            break
        priced = {}
        added = 0
        for ci, cand in enumerate(problem.candidates):
            for t in range(nt):
                mu = duals[master.link_row[ci, t]]
                values = [duals[master.serve_row[w, ci, t]]
                          if (w, ci, t) in master.serve_row else 0.0
                          for w in range(nw)]
                tol = pricing.RC_TOL * max(mu, 1e-6)
                quick = pricing.pricing_bound(cand, problem.demands, values)
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
        exact = not added
        if exact:
            # Greedy found nothing: price exactly, for the bound too.
            left = max(deadline - time.monotonic(), 1.0)
            per_call = max(0.2, 0.05 * left / max(len(priced), 1))
            if pricing.farley_applies(problem, master):
                added, lower = pricing.price_farley(
                    problem, master, res, priced,
                    per_call)
            else:
                added, lower = pricing.price_all(problem, master, res, priced,
                                                 per_call, incumbent)
            bound = max(bound, lower)
        if progress:
            progress(rounds, len(master.columns), res.fun, bound)
        close = (exact and res.fun - bound
                 <= _CG_SHARE_OF_GAP * gap * max(abs(res.fun), 1.0))
        if close or not added or rounds >= _MAX_ROUNDS or (
                out_of_time and exact):
            if (pricing.farley_applies(problem, master)
                    and master.min_nodes is None
                    and not out_of_time and rounds < _MAX_ROUNDS):
                master.min_nodes = pricing.node_cut(
                    problem, master, res, 1.0) or 0
                if master.min_nodes:
                    continue
            break
    lp_res, lp_layout = res, layout
    _check_caps(problem, master, lp_res, layout)
    best = None
    if pricing.farley_applies(problem, master):
        # Quick fleets from the LP first: its patterns rounded down and
        # what they leave covered by a small integer program, or all of
        # them rounded up. If one is close enough, the big one is spared.
        remaining = max(deadline - time.monotonic(), 1.0)
        for vec, cost in (_residual(problem, master, lp_res, lp_layout,
                                    remaining / 4, gap),
                          _round_up(problem, master, lp_res, lp_layout)):
            if vec is not None and (best is None or cost < best.fun):
                best = _Solution(vec, cost)
    layout = master.layout()
    if best is not None and best.fun - bound <= gap * abs(best.fun):
        mip = best
    elif pricing.farley_applies(problem, master):
        remaining = max(deadline - time.monotonic(), 1.0)
        x = _cover(problem, master, problem.periods[0].vms, remaining,
                   gap / 2)
        vec, cost = (None, None) if x is None else _vector(problem, master,
                                                           x)
        if vec is not None and (best is None or cost < best.fun):
            best = _Solution(vec, cost)
        mip = best or _Solution(None, None, 'no fleet found in time')
    else:
        remaining = max(deadline - time.monotonic(), 1.0)
        mip, layout = master.solve_mip(remaining, gap)
        if best is not None and (mip.x is None or best.fun < mip.fun):
            mip = best
    if mip.x is None:
        raise errors.Infeasible('no integer fleet of the candidates meets the '
                                'demand within the caps (%s)' % mip.message)
    _check_caps(problem, master, mip, layout, integer=True)
    if problem.objective != 'tco':
        # As much served, by the cheapest fleet that serves it.
        master.keep_served = -mip.fun * (1 - 1e-9)
        remaining = max(deadline - time.monotonic(), 1.0)
        second, layout = master.solve_mip(remaining, gap)
        if second.x is not None:
            mip = second
    return _plan('optimal', problem, master, mip, layout, bound,
                 bool(np.isfinite(bound)), started, rounds)


def _check_caps(problem, master, res, layout, integer=False):
    if not master.elastic or not master.caps:
        return
    _x0, _s0, k0, _nvar = layout
    short = []
    words = {'budget': ('the capex budget of %s', 'of nodes'),
             'power_kw': ('the power cap of %s kW (PUE included)', 'kW'),
             'rack_units': ('the cap of %s rack units', 'rack units')}
    for k, (kind, t, value) in enumerate(master.caps):
        slack = res.x[k0 + k]
        if slack > 1e-6 * max(value, 1.0):
            where = (' in period %s' % problem.periods[t].name
                     if t is not None and len(problem.periods) > 1 else '')
            cap, unit = words[kind]
            short.append('%s%s is too small: the demand needs at least %s '
                         '%s' % (cap % _num(value), where,
                                 _num(value + slack), unit))
    if short:
        raise errors.Infeasible('the demand does not fit the caps%s: %s'
                                % (' with whole nodes' if integer else '',
                                   '; '.join(short)))


def _num(value):
    return ('%d' % value) if float(value).is_integer() else '%.6g' % value


def _plan(name, problem, master, res, layout, lp_bound, converged, started,
          rounds):
    x0, s0, _k0, _nvar = layout
    nodes, vms, slots, capex, energy, runs = {}, {}, {}, {}, {}, {}
    last = len(problem.periods) - 1
    for ci, cand in enumerate(problem.candidates):
        for t, period in enumerate(problem.periods):
            n = int(round(res.x[master._n(ci, t)]))
            key = (cand.name, period.name)
            nodes[key] = n
            vms[key] = {w: 0 for w in problem.workloads}
            slots[key] = {w: 0 for w in problem.workloads}
            runs[key] = []
            energy[key] = n * problem.energy(cand, period)
            capex[key] = (n * cand.capex if t == last else 0.0)
    for j, (ci, t, counts) in enumerate(master.columns):
        count = int(round(res.x[x0 + j]))
        if count:
            key = (problem.candidates[ci].name, problem.periods[t].name)
            runs[key].append((dict(zip(problem.workloads, counts)), count))
            for w, a in enumerate(counts):
                slots[key][problem.workloads[w]] += a * count
    for j, (w, ci, t) in enumerate(master.serve):
        key = (problem.candidates[ci].name, problem.periods[t].name)
        vms[key][problem.workloads[w]] += res.x[s0 + j]
    for key in vms:
        # Served VMs are whole; the solver may leave a hair.
        vms[key] = {w: int(round(v)) for w, v in vms[key].items()}
    value = _objective_value(problem, vms, capex, energy)
    # The LP minimised the TCO, or minus what is served.
    bound = lp_bound if problem.objective == 'tco' else -lp_bound
    gap = proven_gap(value, bound) if converged else None
    return Plan(name=name, nodes=nodes, vms=vms, patterns=slots, runs=runs,
                capex=capex, energy=energy, objective=value,
                lp_bound=bound, gap=gap,
                status='optimal' if gap is not None and gap <= 1e-6
                else 'feasible', seconds=time.monotonic() - started,
                rounds=rounds, columns=len(master.columns))


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


def best_single(problem, scen=None, time_limit=60.0, gap=1e-3):
    """The best fleet of one configuration only (None: none carries it)."""
    best = None
    for cand in problem.candidates:
        sub = problem.restricted([cand.name])
        try:
            plan = solve(sub, scen=scen, time_limit=time_limit, gap=gap)
        except errors.Infeasible:
            continue
        better = (best is None or
                  (plan.objective < best.objective
                   if problem.objective == 'tco'
                   else plan.objective > best.objective))
        if better:
            best = dataclasses.replace(plan, name='single:%s' % cand.name)
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
        'dram_cache': share(lambda d: d.hot_mb, cap.cache_mb),
        'namespaces': share(lambda d: d.vpmem_gb, sum(cap.regions)),
    }
