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
"""The best fleet of the patterns generated: budgets, node bounds, covers."""

import time

import numpy as np

from nova_pmem_filters.planner.optimize import budgets
from nova_pmem_filters.planner.optimize import clock
from nova_pmem_filters.planner.optimize import exact
from nova_pmem_filters.planner.optimize import fleetplan
from nova_pmem_filters.planner.optimize import master as master_mod
from nova_pmem_filters.planner.optimize import nodecuts
from nova_pmem_filters.planner.optimize import pricing
from nova_pmem_filters.planner.optimize import rounding


def best_of_patterns(problem, master, lp_res, lp_layout, bound, deadline, gap,
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
        best = fleetplan.Solution(np.array(mip.x), float(mip.fun), layout)
    return best, bound


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
        best = fleetplan.Solution(vec, cost, master.layout())
        if found is not None and not fleetplan.is_proven(best, bound, gap):
            found(what, best, bound)
        return best

    best = better(*rounding.round_up(problem, master, lp_res, lp_layout), None,
                  'fleet rounded from the LP')
    if mix and not fleetplan.is_proven(best, bound, gap):
        best = _budgeted(problem, master, best, bound, gap, deadline, found)
    if mix and not fleetplan.is_proven(best, bound, gap):
        best, bound = _node_bound(problem, master, best, bound, lp_res,
                                  deadline, gap)
        if found is not None:
            found('bound of whole node counts', best, bound)
    if fleetplan.is_proven(best, bound, gap):
        return best, bound
    remaining = max(deadline - time.monotonic(), 1.0)
    best = better(*rounding.round_down(problem, master, lp_res, lp_layout,
                                       remaining / 4, gap, mix), best,
                  'fleet rounded down from the LP, the rest covered')
    if fleetplan.is_proven(best, bound, gap):
        return best, bound
    remaining = max(deadline - time.monotonic(), 1.0)
    if best is None or exact.free_nodes(problem, master, best.fun,
                                        False)[2]:
        # Half the time left for the exact stage's proof.
        remaining /= 2
    else:
        # No proof is affordable: the time goes to the best fleet.
        remaining *= 0.8
    x = rounding.cover_rest(problem, master, problem.periods[0].vms,
                            remaining, gap / 2)
    vec, cost = ((None, None) if x is None
                 else rounding.pattern_vector(problem, master, x))
    if vec is not None and (best is None or cost < best.fun):
        best = fleetplan.Solution(vec, cost, master.layout())
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
        vec, cost = rounding.fleet_vector(problem, master, out[0])
        if vec is None or (best is not None and cost >= best.fun):
            break
        best = fleetplan.Solution(vec, cost, master.layout())
        if fleetplan.is_proven(best, bound, gap):
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
    if not np.isfinite(bound) or fleetplan.is_proven(best, bound, gap):
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
        vec, cost = rounding.fleet_vector(problem, master, fleet)
        if vec is not None and (best is None or cost < best.fun):
            best = fleetplan.Solution(vec, cost, master.layout())
    return best, bound


def grows_a_cap(master, best):
    _x0, _s0, k0, nvar = best.layout
    return any(best.x[k0 + k] > master_mod.CAP_TOLERANCE * max(value, 1e-9)
               for k, (_kind, _t, value) in enumerate(master.caps))


# Seconds a stage needs at least to be worth starting past the other ones.
_LEAST_SECONDS = 0.5


# The share of the time left the last integer program's own limit gets.
_BUILT = 0.8


def cheapest_serving(problem, master, best, deadline, gap):
    """As much served, by the cheapest fleet that serves it.

    In the time left only: what a fleet serves is what counts, its cost
    breaks ties, so past the deadline the fleet at hand stays (and the
    plan says the time limit cut this short).
    """
    if deadline - time.monotonic() < _LEAST_SECONDS:
        clock.cut('the cheapest fleet serving as much')
        return best
    master.keep_served = -best.fun * (1 - 1e-9)
    cost, _a, _b, layout = master._build()
    tco = float(cost @ best.vector(master))
    second, second_layout = master.solve_mip(
        (deadline - time.monotonic()) / 2, gap)
    if second.x is not None and second.fun < tco:
        best = fleetplan.Solution(np.array(second.x), float(second.fun),
                                  second_layout)
        tco = float(second.fun)
    remaining = deadline - time.monotonic()
    if remaining < _LEAST_SECONDS:
        clock.cut('the cheapest fleet serving as much')
        return best
    # HiGHS's time limit counts from its start, after the model is built
    # (about 0.4 s of 15 on the benchmark of 20 x 100), and it may stop a
    # little past it: a fifth is kept (with a tenth, the answer came 0.2 s
    # past a 120 s limit once).
    out = exact.solve(problem, master, tco, _BUILT * remaining, gap, False,
                      focus=best.configs(master))
    if out.vector is not None and out.value < tco:
        best = fleetplan.Solution(out.vector, out.value, master.layout())
    return best
