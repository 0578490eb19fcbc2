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
"""The exact integer stage: whole nodes that may run any pattern.

The integer program over the patterns that column generation produced for
the LP cannot use a pattern it never saw: a node that holds the few VMs of
each workload left over once the LP's patterns are rounded down (such as 10
redis and 9 mysql VMs on one node) is missing, and the fleet buys a node
too many. Here each configuration and period also gets *free nodes*: nodes
whose VM counts are variables of the integer program, under the node's own
constraints (:func:`nova_pmem_filters.planner.patterns.node_rows`, the rows of
the pricing problem), so a free node runs any pattern the node model admits.

With as many free nodes of (c, t) as there are busy nodes of c in period t
in some optimal fleet
(:func:`nova_pmem_filters.planner.optimize.pricing.node_limits`), the program
is exact: every optimal fleet is one of its solutions (its nodes on free nodes,
or on the patterns already known), and the solver's dual bound holds for the
whole problem. Where that would take too many variables, the free nodes go to
the configurations the fleet at hand uses, and the result is only a better
fleet: its bound stays the LP's.

The solve asks for a fleet better than the one at hand by more than the
requested gap (a cutoff row); a proof that there is none proves the fleet
at hand within the gap.
"""

import dataclasses

import numpy as np
from scipy import optimize as sp_optimize
from scipy import sparse

from nova_pmem_filters.planner.optimize import clock
from nova_pmem_filters.planner.optimize import pricing
from nova_pmem_filters.planner import patterns


# More integer variables than this in free nodes and the stage settles for
# a better fleet rather than a proof.
MAX_FREE_VARIABLES = 4000
# Without a proof, free nodes per configuration in use.
_FREE_PER_CONFIG = 4


@dataclasses.dataclass
class Outcome:
    """What the stage found.

    ``vector``: the best fleet in the master's layout (None: none found);
    ``value``: its objective; ``bound``: a proven bound on the optimum of
    the whole problem (None: nothing proven beyond what was given);
    ``infeasible``: proven that no fleet exists (within the hard caps);
    ``exact``: the free nodes covered every optimal fleet.
    """

    vector: object = None
    value: float = None
    bound: float = None
    infeasible: bool = False
    exact: bool = False
    message: str = ''


def free_nodes(problem, master, incumbent, hard_caps):
    """Free nodes per (configuration index, period), and whether exact."""
    limits = pricing.node_limits(problem, master, incumbent,
                                 hard_caps=hard_caps)
    wanted = {}
    cost = 0
    for (ci, t), k in limits.items():
        cand = problem.candidates[ci]
        period = problem.periods[t]
        # Busy nodes hold a VM each at least.
        vms = sum(period.vms.get(name, 0)
                  for w, name in enumerate(problem.workloads)
                  if cand.limits[w])
        count = int(np.floor(min(k, vms) + 1e-9))
        if count > 0:
            wanted[ci, t] = count
            cost += count * _width(problem, cand)
    return limits, wanted, cost <= MAX_FREE_VARIABLES


def _use(problem, cand, t):
    period = problem.periods[t]
    return [w for w in range(len(problem.workloads))
            if cand.limits[w] and period.vms.get(problem.workloads[w], 0)]


def _width(problem, cand):
    use = [w for w in range(len(problem.workloads)) if cand.limits[w]]
    vpmem = [w for w in use if problem.demands[w].vpmem_gb]
    return 1 + len(use) + len(vpmem) * len(cand.capacity.regions)


def solve(problem, master, incumbent, time_limit, gap, hard_caps,
          lower=None, focus=(), step=None):
    """The integer program with free nodes; an :class:`Outcome`.

    :param incumbent: objective of a fleet at hand (the master's
        minimisation: TCO, or minus what is served), or None.
    :param hard_caps: hold the caps (no growing them).
    :param lower: a proven lower bound, added as a row (helps the solver).
    :param focus: configuration indexes the fleet at hand uses: where no
        proof is affordable, the free nodes go to them.
    :param step: every fleet better than the incumbent is better by more
        than this (VMs served are whole), so a proof that none is better
        by ``step`` proves the incumbent optimal; default: the gap.
    """
    limits, wanted, exact = free_nodes(problem, master, incumbent,
                                       hard_caps)
    if not exact:
        wanted = {(ci, t): min(count, _FREE_PER_CONFIG)
                  for (ci, t), count in wanted.items() if ci in focus}
    cost, a_ub, b_ub, layout = master._build()
    x0, s0, k0, nvar = layout
    blocks = []
    cols = nvar
    for (ci, t), count in sorted(wanted.items()):
        cand = problem.candidates[ci]
        use = _use(problem, cand, t)
        if not use:
            continue
        rows, lbs, ubs, var_ubs = patterns.node_rows(
            cand.capacity, problem.demands, use, cand.limits)
        for k in range(count):
            blocks.append((ci, t, k, use, cols, rows, lbs, ubs, var_ubs))
            cols += 1 + len(var_ubs)
    out = Outcome(exact=exact)
    tighten = 0.0
    for _attempt in range(4):
        res = _milp(problem, master, cost, a_ub, b_ub, layout, blocks, cols,
                    limits, incumbent, gap, time_limit, hard_caps, lower,
                    tighten, step)
        if res.status == 2 or (res.x is None and res.status == 0):
            # No fleet better than the incumbent (or none at all).
            if tighten == 0.0 and exact:
                out.infeasible = incumbent is None
                out.bound = (None if incumbent is None
                             else incumbent if step is not None
                             else _cutoff(incumbent, gap, step))
            out.message = 'no better fleet'
            return out
        if tighten == 0.0 and exact:
            dual = getattr(res, 'mip_dual_bound', None)
            if dual is not None and np.isfinite(dual):
                out.bound = dual
                if incumbent is not None:
                    # Fleets above the cutoff were left out: none of them
                    # is better than the incumbent by more than the gap.
                    out.bound = min(dual, _cutoff(incumbent, gap, step))
        if res.x is None:
            out.message = res.message
            return out
        vector = _standard(problem, master, res.x, layout, blocks)
        if vector is not None:
            out.vector = vector
            new_cost, _a, _b, _layout = master._build()
            out.value = float(new_cost @ vector)
            out.message = res.message
            return out
        # The solver's tolerance let a node's row slip by a hair: tighten
        # the free nodes' rows (the first solve's bound still holds).
        tighten = tighten * 10 if tighten else 1e-9
    out.message = 'the free nodes did not fit the node model'
    return out


def _cutoff(incumbent, gap, step=None):
    """How good a fleet must be to count: better by the gap, or by step."""
    if step is not None:
        return incumbent - step
    return incumbent - max(gap, 1e-7) * max(abs(incumbent), 1e-3)


def _milp(problem, master, cost, a_ub, b_ub, layout, blocks, cols, limits,
          incumbent, gap, time_limit, hard_caps, lower, tighten, step):
    x0, s0, k0, nvar = layout
    n_rows = a_ub.shape[0]
    extra_rows, extra_cols, extra_vals = [], [], []
    lbs = [-np.inf] * n_rows
    ubs = list(b_ub)

    def entry(r, c, v):
        extra_rows.append(r)
        extra_cols.append(c)
        extra_vals.append(v)

    r = n_rows
    previous = {}
    integrality = np.zeros(cols)
    integrality[:s0] = 1
    lower_bounds = np.zeros(cols)
    upper_bounds = np.full(cols, np.inf)
    master.bound_node_counts(upper_bounds, limits)
    if hard_caps and master.elastic:
        upper_bounds[k0:nvar] = 0.0
    for ci, t, k, use, base, rows, row_lbs, row_ubs, var_ubs in blocks:
        z = base
        integrality[z:z + 1 + len(var_ubs)] = 1
        upper_bounds[z] = 1.0
        upper_bounds[z + 1:z + 1 + len(var_ubs)] = var_ubs
        entry(master.link_row[ci, t], z, 1.0)
        for j, w in enumerate(use):
            if (w, ci, t) in master.serve_row:
                entry(master.serve_row[w, ci, t], z + 1 + j, -1.0)
            # A count only on a node in use.
            entry(r, z + 1 + j, 1.0)
            entry(r, z, -float(var_ubs[j]))
            lbs.append(-np.inf)
            ubs.append(0.0)
            r += 1
        for coeffs, lb, ub in zip(rows, row_lbs, row_ubs):
            for j, v in coeffs:
                entry(r, z + 1 + j, v)
            if tighten and np.isfinite(ub) and ub != 0.0:
                ub -= tighten * max(abs(ub), 1.0)
            lbs.append(lb)
            ubs.append(ub)
            r += 1
        key = (ci, t)
        if key in previous:
            # Free nodes of a configuration are alike: the first ones are
            # the ones in use, and hold the most of the first workload.
            other = previous[key]
            entry(r, z, 1.0)
            entry(r, other, -1.0)
            lbs.append(-np.inf)
            ubs.append(0.0)
            r += 1
            entry(r, z + 1, 1.0)
            entry(r, other + 1, -1.0)
            lbs.append(-np.inf)
            ubs.append(0.0)
            r += 1
        previous[key] = z
    full_cost = np.zeros(cols)
    full_cost[:nvar] = cost
    if incumbent is not None:
        for c in np.nonzero(full_cost)[0]:
            entry(r, c, full_cost[c])
        lbs.append(-np.inf if lower is None else lower)
        ubs.append(_cutoff(incumbent, gap, step))
        r += 1
    elif lower is not None:
        for c in np.nonzero(full_cost)[0]:
            entry(r, c, full_cost[c])
        lbs.append(lower)
        ubs.append(np.inf)
        r += 1
    top = sparse.csr_matrix(a_ub, shape=(n_rows, nvar))
    top = sparse.hstack([top, sparse.csr_matrix((n_rows, cols - nvar))])
    more = sparse.csr_matrix((extra_vals, (extra_rows, extra_cols)),
                             shape=(r, cols))
    matrix = (sparse.vstack([top, sparse.csr_matrix((r - n_rows, cols))])
              + more).tocsr()
    return clock.milp(
        'the integer program with free nodes', full_cost,
        integrality=integrality,
        bounds=sp_optimize.Bounds(lower_bounds, upper_bounds),
        constraints=sp_optimize.LinearConstraint(matrix, lbs, ubs),
        options={'time_limit': max(time_limit, 0.5),
                 'mip_rel_gap': gap})


def _standard(problem, master, x, layout, blocks):
    """The solution with its free nodes as patterns, in the master's layout.

    Each busy free node's pattern joins the master problem. None when a
    free node's counts do not fit the node model.
    """
    x0, s0, k0, nvar = layout
    nw = len(problem.workloads)
    extra = {}
    for ci, t, k, use, base, _rows, _lbs, _ubs, _var_ubs in blocks:
        counts = [0] * nw
        for j, w in enumerate(use):
            counts[w] = int(round(x[base + 1 + j]))
        if not any(counts):
            continue
        cand = problem.candidates[ci]
        if not patterns.fits(cand.capacity, problem.demands, counts):
            return None
        key = (ci, t, tuple(counts))
        extra[key] = extra.get(key, 0) + 1
    old_columns = list(master.columns)
    for ci, t, counts in extra:
        master.add(ci, t, counts)
    current = master.layout()
    nx0, ns0, nk0, nnvar = current
    vec = np.zeros(nnvar)
    vec[:x0] = np.round(x[:x0])
    index = {key: j for j, key in enumerate(master.columns)}
    for j, key in enumerate(old_columns):
        vec[nx0 + index[key]] += np.round(x[x0 + j])
    for key, count in extra.items():
        vec[nx0 + index[key]] += count
    vec[ns0:nk0] = x[s0:k0]
    vec[nk0:] = x[k0:nvar]
    return vec
