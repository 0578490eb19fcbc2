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
"""The master problem over the patterns: its LP and its integer program."""

import copy

import numpy as np
from scipy import optimize as sp_optimize
from scipy import sparse

from nova_pmem_filters.planner import errors
from nova_pmem_filters.planner.optimize import clock


# The right-hand side of every cap's row (a cap of 0 stays 0).
CAP_SCALE = 1e3
# A fleet meets a cap when its use is at most this much (relative) over.
CAP_TOLERANCE = 1e-9


def over(a_ub, vec, b_ub):
    """Whether ``vec`` breaks a row of the master problem.

    The rows count whole VMs and nodes, and the caps scaled to
    :data:`CAP_SCALE`: over by a millionth of a VM, or by
    :data:`CAP_TOLERANCE` of a cap, is over.
    """
    return bool(np.any(a_ub @ vec > b_ub + np.maximum(
        1e-6, CAP_TOLERANCE * np.abs(b_ub))))


class Master(object):
    """The LP / MILP over the patterns generated so far."""

    def __init__(self, problem):
        self.p = problem
        self.nc = len(problem.candidates)
        self.nt = len(problem.periods)
        self.nw = len(problem.workloads)
        self.columns = []          # (ci, t, counts)
        self.known = set()
        # s[w,c,t] only where w may run on c at all.
        self.serve = [(w, ci, t) for t in range(self.nt)
                      for ci, cand in enumerate(problem.candidates)
                      for w in range(self.nw) if cand.limits[w] > 0]
        self.caps = []
        if problem.budget is not None:
            self.caps.append(('budget', None, problem.budget))
        if problem.power_kw is not None:
            self.caps.extend(('power_kw', t, problem.power_kw)
                             for t in range(self.nt))
        if problem.rack_units is not None:
            self.caps.append(('rack_units', None, problem.rack_units))
        self.elastic = problem.objective == 'tco'
        # Max objectives, second stage: serve at least this much.
        self.keep_served = None
        # A valid cut: every fleet has at least this many nodes.
        self.min_nodes = None
        self.cut_row = None
        # {(candidate, period): (workload values, upper bound on the best
        # pattern's value)} of the last exact pricing (pricing.known_bound).
        self.tops = {}
        # How close to their optimum the pricing programs get
        # (pricing.pricing_gap).
        self.pricing_gap = 1e-3

    def copy(self):
        """A master of the same problem and patterns, to grow apart.

        What one adds (patterns, pricing bounds, caps) the other does not
        see: a stage in another thread works on its own copy
        (:func:`clock.beside`).
        """
        twin = copy.copy(self)
        twin.columns = list(self.columns)
        twin.known = set(self.known)
        twin.tops = dict(self.tops)
        twin.caps = list(self.caps)
        return twin

    def add(self, ci, t, counts):
        key = (ci, t, tuple(counts))
        if key in self.known or not any(counts):
            return False
        self.known.add(key)
        self.columns.append(key)
        return True

    # Layout: N (nc x nt), x (columns), s (serve), slack (caps if elastic).
    def _n(self, ci, t):
        return ci * self.nt + t

    def _build(self):
        p = self.p
        n_n = self.nc * self.nt
        n_x = len(self.columns)
        n_s = len(self.serve)
        n_k = len(self.caps) if self.elastic else 0
        x0, s0, k0 = n_n, n_n + n_x, n_n + n_x + n_s
        nvar = k0 + n_k
        cost = np.zeros(nvar)
        last = self.nt - 1
        tco = np.zeros(nvar)
        for ci, cand in enumerate(p.candidates):
            tco[self._n(ci, last)] += cand.capex
            for t, period in enumerate(p.periods):
                tco[self._n(ci, t)] += p.energy(cand, period)
        if p.objective == 'tco':
            cost += tco
            scale = max(tco.max(), 1.0)
            for k, (_kind, _t, value) in enumerate(self.caps):
                # Growing a cap costs more than any fleet could.
                cost[k0 + k] = 1e4 * scale / max(value, 1.0)
        else:
            for j, (w, ci, t) in enumerate(self.serve):
                weight = (p.candidates[ci].throughput[w]
                          if p.objective == 'throughput' else 1.0)
                cost[s0 + j] = -weight
            if self.keep_served is not None:
                # Second stage: the cheapest fleet that serves as much.
                cost = tco.copy()
        rows, cols, vals, rhs, kinds = [], [], [], [], []

        def row(entries, b, kind):
            r = len(rhs)
            for c, v in entries:
                rows.append(r)
                cols.append(c)
                vals.append(v)
            rhs.append(b)
            kinds.append(kind)
            return r

        self.link_row = {}
        by_group = {}
        for j, (ci, t, counts) in enumerate(self.columns):
            by_group.setdefault((ci, t), []).append((j, counts))
        for ci in range(self.nc):
            for t in range(self.nt):
                entries = [(x0 + j, 1.0) for j, _c in by_group.get((ci, t),
                                                                   ())]
                self.link_row[ci, t] = row(
                    entries + [(self._n(ci, t), -1.0)], 0.0, 'link')
        self.serve_row = {}
        for j, (w, ci, t) in enumerate(self.serve):
            entries = [(s0 + j, 1.0)]
            entries += [(x0 + i, -float(counts[w]))
                        for i, counts in by_group.get((ci, t), ())
                        if counts[w]]
            self.serve_row[w, ci, t] = row(entries, 0.0, 'serve')
        self.demand_row = {}
        for t, period in enumerate(p.periods):
            for w, name in enumerate(p.workloads):
                entries = [(s0 + j, 1.0) for j, (ww, ci, tt)
                           in enumerate(self.serve) if ww == w and tt == t]
                want = float(period.vms.get(name, 0))
                if p.objective == 'tco':
                    self.demand_row[w, t] = row(
                        [(c, -v) for c, v in entries], -want, 'demand')
                else:
                    self.demand_row[w, t] = row(entries, want, 'demand')
        for ci in range(self.nc):
            for t in range(1, self.nt):
                row([(self._n(ci, t - 1), 1.0), (self._n(ci, t), -1.0)],
                    0.0, 'grow')
        if self.keep_served is not None:
            row([(s0 + j, -(p.candidates[ci].throughput[w]
                            if p.objective == 'throughput' else 1.0))
                 for j, (w, ci, t) in enumerate(self.serve)],
                -self.keep_served, 'keep')
        self.cut_row = None
        if self.min_nodes:
            self.cut_row = row([(self._n(ci, last), -1.0)
                                for ci in range(self.nc)],
                               -float(self.min_nodes), 'cut')
        self._cap_rows(row, k0, last)
        a_ub = sparse.csr_matrix((vals, (rows, cols)),
                                 shape=(len(rhs), nvar))
        return cost, a_ub, np.array(rhs), (x0, s0, k0, nvar)

    def _cap_rows(self, row, k0, last):
        """The caps' rows: what the nodes take of each cap, within it."""
        self.cap_row = []
        for k, (kind, t, value) in enumerate(self.caps):
            entries = self.cap_entries(kind, t)
            if self.elastic:
                entries.append((k0 + k, -1.0))
            # Scaled to CAP_SCALE: HiGHS's feasibility tolerance is
            # absolute, and a cap of a few kW must not let a fleet over it
            # by a millionth pass (caps hold to CAP_TOLERANCE).
            scale = CAP_SCALE / value if value > 0 else 1.0
            self.cap_row.append(row([(c, v * scale) for c, v in entries],
                                    float(value) * scale, 'cap'))

    def cap_period(self, kind, t):
        """The period whose nodes a cap of period ``t`` counts.

        The capex budget and the rack units count the nodes of the last
        period (nodes bought stay); the power cap those of its period.
        """
        return t if kind == 'power_kw' else self.nt - 1

    def cap_weights(self, kind):
        """What a node of each configuration takes of a cap, in order."""
        p = self.p
        if kind == 'budget':
            return [c.capex for c in p.candidates]
        if kind == 'power_kw':
            return [p.kw(c) for c in p.candidates]
        return [c.rack_units for c in p.candidates]

    def cap_entries(self, kind, t):
        """[(N variable, what a node takes of the cap)] of one cap."""
        counted = self.cap_period(kind, t)
        return [(self._n(ci, counted), weight)
                for ci, weight in enumerate(self.cap_weights(kind))]

    def bound_node_counts(self, upper_bounds, limits, position=None):
        """Bound each node count N[c,t] by its limit, rounded down.

        ``limits``: {(c, t): K} (:func:`pricing.node_limits`);
        ``position``: where N[c,t] is among the variables (default: in
        the master's own layout).
        """
        position = position or self._n
        for (ci, t), k in limits.items():
            if k is not None and np.isfinite(k):
                upper_bounds[position(ci, t)] = np.floor(k + 1e-9)

    def layout(self):
        n_n = self.nc * self.nt
        x0 = n_n
        s0 = x0 + len(self.columns)
        k0 = s0 + len(self.serve)
        return x0, s0, k0, k0 + (len(self.caps) if self.elastic else 0)

    def solve_lp(self, interior=False):
        """The LP over the patterns: (result, layout).

        ``interior``: by the interior point method (HiGHS's, with its
        crossover to a basic solution), the simplex method if that fails:
        the same LP, other optimal duals where it is degenerate (several
        periods, caps). Column generation priced at those converges in
        far fewer rounds (20 workloads x 100 configurations, 3 periods
        under caps: the LP the simplex method's duals reach in about
        190 s, in 80 s). With ``tco`` it is solved without its serve
        layer (:meth:`_covering`), a tenth of the rows, and lifted back.
        """
        cost, a_ub, b_ub, layout = self._build()
        covering = self._covering(a_ub, b_ub, layout)
        if covering is not None:
            res = self._solve(cost[covering.columns], covering.matrix,
                              covering.rhs, interior)
            return covering.lift(res, a_ub, b_ub, layout), layout
        return self._solve(cost, a_ub, b_ub, interior), layout

    def _solve(self, cost, a_ub, b_ub, interior):
        res = None
        if interior:
            res = sp_optimize.linprog(cost, A_ub=a_ub, b_ub=b_ub,
                                      bounds=(0, None), method='highs-ipm')
        if res is None or res.status != 0:
            res = sp_optimize.linprog(cost, A_ub=a_ub, b_ub=b_ub,
                                      bounds=(0, None), method='highs')
        if res.status != 0:
            raise errors.PlannerError('the LP relaxation could not be '
                                      'solved: %s' % res.message)
        return res

    def _covering(self, a_ub, b_ub, layout):
        """The LP without its serve layer (``tco``), or None.

        With ``tco`` a VM served, s[w,c,t], is in its serve row
        (s <= what the patterns of c hold) and its demand row (the sum over
        the configurations >= the demand) only, at no cost: summing the
        serve rows of (w, t) into its demand row takes s out (the patterns
        of every configuration cover the demand), a tenth of the rows.
        """
        if self.p.objective != 'tco' or self.keep_served is not None:
            return None
        _x0, s0, k0, nvar = layout
        nrows = a_ub.shape[0]
        keep = np.ones(nrows, dtype=bool)
        keep[list(self.serve_row.values())] = False
        kept = np.flatnonzero(keep)
        position = np.full(nrows, -1)
        position[kept] = np.arange(len(kept))
        rows = list(range(len(kept)))
        cols = list(kept)
        for (w, _ci, t), r in self.serve_row.items():
            rows.append(position[self.demand_row[w, t]])
            cols.append(r)
        summed = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)),
                                   shape=(len(kept), nrows))
        columns = np.concatenate([np.arange(s0), np.arange(k0, nvar)])
        matrix = (summed @ a_ub).tocsc()
        # Nothing of s is left (up to rounding), or this is not the LP.
        if np.any(np.abs(matrix[:, s0:k0].data) > 1e-12):
            return None
        return _Covering(matrix=matrix[:, columns].tocsr(),
                         rhs=summed @ b_ub, columns=columns, kept=kept,
                         master=self)

    def solve_mip(self, time_limit, gap, hold_caps=False,
                  what='the integer program over the patterns',
                  nodes_only=False, node_limits=None, above=None):
        """The integer program over the patterns: (result, layout).

        ``hold_caps``: no cap grows (the master lets one grow at a
        prohibitive price otherwise). ``nodes_only``: only the node
        counts are whole, the patterns stay fractional. ``node_limits``:
        {(ci, t): the most nodes of ci in period t}. ``above``: only
        solutions whose objective is above this (the next cheapest after
        one that did not do).
        """
        cost, a_ub, b_ub, layout = self._build()
        x0, s0, k0, nvar = layout
        integrality = np.zeros(nvar)
        integrality[:x0 if nodes_only else s0] = 1
        upper = np.full(nvar, np.inf)
        if hold_caps:
            upper[k0:] = 0.0
        self.bound_node_counts(upper, node_limits or {})
        constraints = [sp_optimize.LinearConstraint(a_ub, -np.inf, b_ub)]
        if above is not None:
            constraints.append(sp_optimize.LinearConstraint(
                cost[np.newaxis, :],
                above + 1e-6 * max(abs(above), 1.0), np.inf))
        res = clock.milp(
            what, cost, integrality=integrality,
            bounds=sp_optimize.Bounds(np.zeros(nvar), upper),
            constraints=constraints,
            options={'time_limit': time_limit, 'mip_rel_gap': gap})
        return res, layout


class _Covering(object):
    """The master's LP without its serve layer, and its way back."""

    def __init__(self, matrix, rhs, columns, kept, master):
        self.matrix = matrix
        self.rhs = rhs
        self.columns = columns
        self.kept = kept
        self.master = master

    def lift(self, res, a_ub, b_ub, layout):
        """The covering LP's optimum as an optimum of the master's LP.

        Each s at what the patterns hold (its serve row tight, within the
        demand row: the patterns cover the demand); each serve row's dual
        at its demand row's (s's reduced cost 0, a pattern's the same as
        in the covering LP).
        """
        m = self.master
        _x0, s0, k0, nvar = layout
        x = np.zeros(nvar)
        x[self.columns] = res.x
        serve_rows = [m.serve_row[key] for key in m.serve]
        x[s0:k0] = -(a_ub[serve_rows] @ x)
        marginals = np.zeros(a_ub.shape[0])
        marginals[self.kept] = res.ineqlin.marginals
        for key, r in zip(m.serve, serve_rows):
            marginals[r] = marginals[m.demand_row[key[0], key[2]]]
        reduced = np.zeros(nvar)
        reduced[self.columns] = res.lower.marginals
        return sp_optimize.OptimizeResult(
            x=x, fun=res.fun, status=res.status, success=res.success,
            message=res.message, nit=res.nit,
            slack=b_ub - a_ub @ x,
            ineqlin=sp_optimize.OptimizeResult(marginals=marginals),
            lower=sp_optimize.OptimizeResult(marginals=reduced),
            upper=sp_optimize.OptimizeResult(marginals=np.zeros(nvar)))


def expand(vec, old, new):
    """A solution vector of an older layout, in a layout with more columns."""
    ox0, os0, ok0, onvar = old
    nx0, ns0, nk0, nnvar = new
    out = np.zeros(nnvar)
    out[:ox0] = vec[:ox0]
    out[nx0:nx0 + (os0 - ox0)] = vec[ox0:os0]
    out[ns0:nk0] = vec[os0:ok0]
    out[nk0:] = vec[ok0:]
    return out
