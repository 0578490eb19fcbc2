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
"""Fleets of whole nodes from the LP: rounded up, or down and covered."""

import dataclasses
import time

import numpy as np
from scipy import optimize as sp_optimize
from scipy import sparse

from nova_pmem_filters.planner.optimize import clock
from nova_pmem_filters.planner.optimize import exact
from nova_pmem_filters.planner.optimize import fleetplan
from nova_pmem_filters.planner.optimize import master as master_mod
from nova_pmem_filters.planner.optimize import pricing


def round_up(problem, master, res, layout):
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


def cover_rest(problem, master, vms, time_limit, gap):
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


def pattern_vector(problem, master, x):
    """The master problem's vector (and TCO) of pattern counts x (one period).

    (None, None) where it breaks a row of the master.
    """
    runs = [(ci, t, counts, x[j])
            for j, (ci, t, counts) in enumerate(master.columns) if x[j]]
    whole = np.zeros((master.nc, master.nt))
    for ci, t, _counts, n in runs:
        whole[ci, t] += n
    found = fleetplan.of_runs(problem, master, whole, runs,
                              'found from the LP')
    if found is None:
        return None, None
    return found.x, found.fun


def round_down(problem, master, lp_res, lp_layout, time_limit, gap,
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
        more = cover_rest(problem, master, rest, time_limit / 2, sub_gap)
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
            more = pattern_counts(master, runs)
        if more is None:
            return None, None
        x = np.concatenate([x, np.zeros(len(more) - len(x))]) + more
    return pattern_vector(problem, master, x)


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


def rounded_incumbent(problem, master, res, layout, incumbent):
    """The least TCO of a fleet at hand: the LP rounded up, or ``incumbent``.

    The Lagrangian bound's node limits use it.
    """
    if (problem.objective == 'tco' and not master.caps
            and not pricing.farley_applies(problem, master)):
        _vec, cost = round_up(problem, master, res, layout)
        if cost is not None:
            incumbent = cost if incumbent is None else min(incumbent, cost)
    return incumbent


def fleet_vector(problem, master, fleet):
    """The master's vector (and TCO) of {(ci, counts): nodes}, one period."""
    return pattern_vector(problem, master, pattern_counts(
        master, [(ci, counts, n) for (ci, counts), n in fleet.items()]))


def pattern_counts(master, runs):
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
