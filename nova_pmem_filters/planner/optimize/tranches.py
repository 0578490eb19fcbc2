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
"""A fleet bought in tranches: the last period's nodes first (TCO).

With several periods (or caps) the integer program over the patterns
stops 2-5% over the LP on large problems. Nodes bought stay, so the last
period's fleet holds every node ever bought, and an earlier period runs
some of them. So:

1. the last period alone, on the configurations the LP buys, each node
   costing its capex, its energy in the last period and its energy in
   each earlier one times the share of the LP's nodes of that
   configuration that run then: a one-period problem, whose fleet the node
   budgets find (:func:`budgets.budgets_in_turn` within each of
   :data:`GAP_STEPS` in turn, each costlier than the last that did not
   pack; a few tenths of a second),
   or, where whole nodes cost far more than the LP's (few nodes), the
   least budget grown as below;
2. then each earlier period, latest first, alone: the nodes that run in
   it cost their energy then, and are at most those of the period after
   (:func:`budgets.least_budget` within those limits, then
   :func:`budgets.fleet_of`); a budget that does not pack gives way to
   the next cheapest one within the limits (another mix of as many
   nodes, or a node more).

Patterns are the same in every period, so each period's problem gets the
patterns column generation found for any period; first, the configurations
the LP buys are priced further, alone (:func:`colgen.price_alone`). A
heuristic: the fleet is checked against every row of the master problem
(the caps included, held), so its TCO is an upper bound and its gap to the
bound is proven; finding none proves nothing, and the integer program over
the patterns follows.
"""

import dataclasses
import time

import numpy as np

from nova_pmem_filters.planner.optimize import budgets
from nova_pmem_filters.planner.optimize import clock
from nova_pmem_filters.planner.optimize import colgen
from nova_pmem_filters.planner.optimize import fleetplan
from nova_pmem_filters.planner.optimize import master as master_mod
from nova_pmem_filters.planner.optimize import pricing


# The node budgets of the last period look for a fleet within each of
# these multiples of the gap asked for over the LP, in turn.
GAP_STEPS = (0.25, 0.5, 1.0, 2.0, 4.0, 10.0)
# The gap the steps are multiples of when none is asked for (gap 0).
_LEAST_GAP = 1e-4
# Budgets after the least one an earlier period tries before giving up.
_MORE_NODES = 8
# LP node counts below this are none.
_NONE = 1e-6
# Seconds (at most, and this share of the time left) of column generation
# over the configurations the LP buys alone, before their fleet is sought.
_CHOSEN_SECONDS = 3.0
_CHOSEN_SHARE = 0.25


def applies(problem, master):
    """TCO, but not one period without caps (:mod:`budgets` serves it)."""
    return (problem.objective == 'tco'
            and not pricing.farley_applies(problem, master))


def fleet(problem, master, lp_res, lp_layout, deadline, gap):
    """A fleet bought in tranches, or None: a :class:`fleetplan.Solution`.

    ``lp_res`` (in ``lp_layout``): the master's LP, whose node counts
    choose the configurations and the shares of their nodes that run in
    each period.
    """
    nc, nt = master.nc, master.nt
    lp = master_mod.expand(np.asarray(lp_res.x, dtype=float), lp_layout,
                           master.layout())
    counts = np.array([[lp[master._n(ci, t)] for t in range(nt)]
                       for ci in range(nc)])
    chosen = [ci for ci in range(nc) if counts[ci, -1] > _NONE]
    if not chosen:
        return None
    colgen.price_alone(problem, master, chosen, time.monotonic() + min(
        _CHOSEN_SECONDS, _CHOSEN_SHARE * max(deadline - time.monotonic(),
                                             0.0)), gap)
    whole = np.zeros((nc, nt))
    runs = []
    found = _last_period(problem, master, chosen, counts, deadline, gap)
    for t in range(nt - 1, -1, -1):
        if t < nt - 1:
            found = _earlier_period(problem, master, chosen, t,
                                    whole[:, t + 1], deadline)
        if found is None:
            return None
        for (k, pattern), n in found.items():
            whole[chosen[k], t] += n
            runs.append((chosen[k], t, pattern, n))
    return fleetplan.of_runs(problem, master, whole, runs,
                             'a fleet bought in tranches')


def period_alone(problem, master, t, chosen, capex=None):
    """Period t alone, on ``chosen`` (at ``capex``): (problem, master).

    TCO without caps; the configurations ``chosen`` (indexes) at their own
    capex or at ``capex`` (in the same order); its master gets every
    pattern of the chosen configurations, whatever the period it was found
    for (patterns are the same in every period).
    """
    candidates = tuple(
        problem.candidates[ci] if capex is None else dataclasses.replace(
            problem.candidates[ci], capex=capex[k])
        for k, ci in enumerate(chosen))
    alone = dataclasses.replace(
        problem, periods=(problem.periods[t],), candidates=candidates,
        objective='tco', budget=None, power_kw=None, rack_units=None)
    sub = master_mod.Master(alone)
    index = {ci: k for k, ci in enumerate(chosen)}
    for ci, _t, pattern in master.columns:
        if ci in index:
            sub.add(index[ci], 0, pattern)
    return alone, sub


def _last_period(problem, master, chosen, counts, deadline, gap):
    """{(k, pattern): nodes} of the last period (k: index in ``chosen``).

    Each node costs its capex, its energy in the last period and, in each
    earlier one, its energy times the LP's share of running nodes then.
    """
    last = len(problem.periods) - 1
    capex = []
    for ci in chosen:
        cand = problem.candidates[ci]
        capex.append(cand.capex + sum(
            problem.energy(cand, problem.periods[t])
            * min(1.0, counts[ci, t] / counts[ci, last])
            for t in range(last)))
    alone, sub = period_alone(problem, master, last, chosen, capex)
    res, _layout = sub.solve_lp()
    step = max(gap, _LEAST_GAP)
    # The budgets within each step in turn, each costlier than the last
    # that did not pack (a wider step does not try them again).
    above = None
    for share in GAP_STEPS:
        if time.monotonic() >= deadline:
            clock.cut('the fleet bought in tranches')
            return None
        found, above = budgets.budgets_in_turn(
            alone, sub, float(res.fun) / (1 - min(share * step, 0.5)),
            deadline, above)
        if found is not None:
            return found[0]
    # Few nodes: whole ones cost far more than the LP's; the least budget,
    # grown until it packs.
    return _packed(alone, sub, [np.inf] * len(chosen), deadline)


def _earlier_period(problem, master, chosen, t, most, deadline):
    """{(k, pattern): nodes} of period t, at most ``most`` nodes each.

    ``most``: nodes per configuration (all of them) in period t + 1.
    """
    alone, sub = period_alone(problem, master, t, chosen,
                              [0.0] * len(chosen))
    return _packed(alone, sub, [int(most[ci]) for ci in chosen], deadline)


def _packed(alone, sub, limits, deadline):
    """{(k, pattern): nodes}: the least budget within ``limits``, packed.

    A budget that does not pack gives way to the next cheapest one within
    ``limits`` (another mix of as many nodes, or one node more).
    """
    budget = budgets.least_budget(alone, sub, limits,
                                  deadline - time.monotonic())
    for _more in range(_MORE_NODES + 1):
        if budget is None:
            return None
        if time.monotonic() >= deadline:
            clock.cut('the fleet bought in tranches')
            return None
        found = budgets.fleet_of(alone, sub, budget, deadline)
        if found is not None:
            return found[0]
        budget = budgets.least_budget(
            alone, sub, limits, deadline - time.monotonic(),
            above=budgets.cost_of(alone, budget))
    return None
