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
"""Column generation: the LP over the patterns, and the patterns to add."""

import dataclasses
import time

import numpy as np

from nova_pmem_filters.planner.optimize import clock
from nova_pmem_filters.planner.optimize import master as master_mod
from nova_pmem_filters.planner.optimize import pricing
from nova_pmem_filters.planner.optimize import rounding
from nova_pmem_filters.planner import patterns


MAX_ROUNDS = 200


# Share of the time limit column generation may use; the integer program
# gets the rest.
CG_SHARE = 0.6


# Column generation stops once the LP and its bound are this share of the
# requested gap apart: more patterns could improve the LP by no more.
_CG_SHARE_OF_GAP = 0.1


# Wentges smoothing: the weight of the stability centre in the duals that
# pricing works at.
_SMOOTHING = 0.5


# Column generation stops once this many rounds improved neither the bound
# nor the LP by its share of the gap (tailing off).
TAIL_ROUNDS = 10


def seed(problem, master):
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


def generate_columns(problem, master, deadline, cg_deadline, gap,
                     generate, progress, time_up=None):
    """Column generation: solve the LP, add the patterns worth adding.

    It stops when the LP is within its share of ``gap`` of the bound, when
    no pattern is worth adding, after :data:`MAX_ROUNDS` rounds, or past
    ``cg_deadline`` once pricing is exact. ``time_up``: called once as
    ``time_up(res, layout)`` with the LP of the round that finds
    ``cg_deadline`` passed, before that round prices every configuration
    exactly (for the bound), which takes seconds.

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
        # Farley's bound has its own stabilisation (smoothing).
        res, layout = master.solve_lp(
            interior=not pricing.farley_applies(problem, master))
        incumbent = rounding.rounded_incumbent(problem, master, res, layout,
                                               incumbent)
        out_of_time = time.monotonic() > cg_deadline
        if out_of_time:
            clock.cut('column generation')
        if not generate:
            break
        if out_of_time and time_up is not None:
            time_up(res, layout)
            time_up = None
        duals = pricing.lp_duals(master, res)
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
        if close or not added or rounds >= MAX_ROUNDS or (
                out_of_time and priced_exactly) or (
                priced_exactly and tailing_off(history, tol)):
            if _cut_nodes(problem, master, res, out_of_time, rounds):
                centre = None
                continue
            break
    return _Generated(res=res, layout=layout, rounds=rounds, bound=bound)


def tailing_off(history, tol):
    """Whether the last :data:`TAIL_ROUNDS` rounds moved nothing that counts.

    The LP improved by no more than ``tol`` (its share of the gap) and the
    bound not at all: more rounds of the kind would improve the LP, whose
    bound is already proven, by no more than that, and the time is the
    integer stage's. The bound stays valid: it is the best one proven.
    """
    if len(history) <= TAIL_ROUNDS:
        return False
    lp_then, bound_then = history[-1 - TAIL_ROUNDS]
    lp_now, bound_now = history[-1]
    return (np.isfinite(bound_now) and bound_now <= bound_then
            and lp_then - lp_now <= tol)


def _price(problem, master, res, duals, value, out_of_time, deadline,
           incumbent):
    """One round's pricing at ``duals`` (their dual objective ``value``).

    Greedy first; exact pricing when greedy finds nothing, for the bound
    too, or (without Farley's bound) when greedy finds patterns for fewer
    than :data:`GREEDY_ENOUGH` of the configurations and periods: the
    others are priced exactly in the same round, which saves the LP a
    round that would move little. Several periods: a configuration is
    priced in the periods its patterns found so far do not pay in
    (:func:`pricing.price_all`), and in all once past the time of column
    generation; the round is exact (and bounds) when it priced them all.
    Returns (patterns added, lower bound or -inf, priced exactly).
    """
    priced, greedy = price_greedily(problem, master, duals, out_of_time)
    enough = (pricing.farley_applies(problem, master)
              or greedy >= GREEDY_ENOUGH * master.nc * master.nt)
    if greedy and enough:
        return greedy, -np.inf, False
    # Greedy found nothing, or little: price exactly, for the bound too.
    added, lower = _price_exactly(problem, master, res, duals, value,
                                  priced, deadline, incumbent, out_of_time)
    if greedy:
        return greedy + added, -np.inf, False
    return added, lower, bool(np.isfinite(lower)) or not added


# The share of the (configuration, period) pairs that greedy pricing must
# find patterns for, or the others are priced exactly in the same round.
GREEDY_ENOUGH = 0.1


def price_greedily(problem, master, duals, out_of_time):
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
                   incumbent, out_of_time):
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
                             incumbent, every=out_of_time)


def _cut_nodes(problem, master, res, out_of_time, rounds):
    """Whether a cut on the number of nodes is worth more rounds."""
    if (pricing.farley_applies(problem, master)
            and master.min_nodes is None
            and not out_of_time and rounds < MAX_ROUNDS):
        master.min_nodes = pricing.node_cut(
            problem, master, res, 1.0) or 0
        return bool(master.min_nodes)
    return False


def price_alone(problem, master, chosen, until, gap):
    """Column generation over the configurations ``chosen`` alone.

    Every period, the caps as the master has them; it starts from the
    master's patterns of those configurations and ends by ``until`` (then
    it is cut short, as column generation is), and the patterns it finds
    join the master. Where column generation over all of them was cut
    short by its time, the patterns of a few are not all found yet, and a
    fleet of them costs more; a few take a fraction of a second a round,
    where all of them took seconds. On the benchmark (3 periods, caps), 2 s
    of it over the LP's configurations after 32 rounds over all gave the
    fleet in tranches of a column generation run to its end (93 rounds),
    or a cheaper one.
    """
    sub = dataclasses.replace(problem, candidates=tuple(
        problem.candidates[ci] for ci in chosen))
    own = master_mod.Master(sub)
    own.pricing_gap = master.pricing_gap
    index = {ci: k for k, ci in enumerate(chosen)}
    for ci, t, pattern in master.columns:
        if ci in index:
            own.add(index[ci], t, pattern)
    generate_columns(sub, own, until, until, gap, True, None)
    for k, t, pattern in own.columns:
        master.add(chosen[k], t, pattern)
