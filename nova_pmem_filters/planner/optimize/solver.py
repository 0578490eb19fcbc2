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

import contextlib
import dataclasses
import time

import numpy as np

from nova_pmem_filters.planner import errors
from nova_pmem_filters.planner.optimize import clock
from nova_pmem_filters.planner.optimize import colgen
from nova_pmem_filters.planner.optimize import complete
from nova_pmem_filters.planner.optimize import exact
from nova_pmem_filters.planner.optimize import fleetplan
from nova_pmem_filters.planner.optimize import incumbents
from nova_pmem_filters.planner.optimize import master as master_mod
from nova_pmem_filters.planner.optimize import nodebound
from nova_pmem_filters.planner.optimize import pricing
from nova_pmem_filters.planner.optimize import problem as problem_mod
from nova_pmem_filters.planner.optimize import served
from nova_pmem_filters.planner.optimize import tranches
from nova_pmem_filters.planner import tables


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
    colgen.seed(problem, master)
    share = (_FLEET_CG_SHARE if generate and (
        tranches.applies(problem, master) or served.applies(problem))
        else colgen.CG_SHARE)
    with contextlib.ExitStack() as stack:
        sought = _Sought(problem, master, deadline, gap, stack)
        generated = colgen.generate_columns(
            problem, master, deadline, started + share * time_limit, gap,
            generate, progress, time_up=sought.start if generate else None)
        return _after_columns(problem, scen, master, generated, sought,
                              started, deadline, gap, generate, stage)


def _after_columns(problem, scen, master, generated, sought, started,
                   deadline, gap, generate, stage):
    """The stages after column generation: the plan."""
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
    best = None
    seen = set()
    if generate and sought.running is None:
        # Column generation ended before its time.
        sought.start(generated.res, generated.layout)
    if sought.running is not None and _node_bound_applies(problem, master,
                                                          bound):
        # The fleet is sought while the bound rises, side by side.
        best, bound = _fleet_beside_bound(problem, master, sought.running,
                                          bound, deadline, gap,
                                          generated.res, seen, tell)
    elif sought.running is not None:
        what, own, future = sought.running
        best = fleetplan.rebased(problem, future.result(), own, master)
        tell(what, best)
    if best is None:
        # The fleet in tranches or of whole node counts is far closer than
        # the integer program over the patterns gets on large problems:
        # the time goes to the bound.
        best, bound = incumbents.best_of_patterns(
            problem, master, generated.res, generated.layout, bound,
            deadline, gap, generate, tell)
        if (best is not None and hard
                and incumbents.grows_a_cap(master, best)):
            best = None
        tell('fleet from the patterns', best)
    if generate:
        best, bound = _exact_stage(problem, master, best, bound, deadline,
                                   gap, hard, scen, seen)
        tell('integer program with free nodes', best)
    elif best is None:
        raise errors.Infeasible('no fleet of one workload per node meets '
                                'the demand within the caps')
    if problem.objective != 'tco':
        # Before: its objective is cost, which the bound is not about.
        tell('cheapest fleet serving as much', None)
        best = incumbents.cheapest_serving(problem, master, best, deadline,
                                           gap)
    layout = master.layout()
    return fleetplan.build(problem, master, best.vector(master), layout, bound,
                           bool(np.isfinite(bound)), started, generated.rounds,
                           gap)


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
    best = fleetplan.Solution(out.vector, out.value, master.layout())
    if problem.objective != 'tco':
        # As much served, by the cheapest fleet serving it.
        master.keep_served = -out.value * (1 - 1e-9)
        cheap = complete.solve(master, deadline - time.monotonic(), gap)
        if cheap.vector is not None:
            best = fleetplan.Solution(cheap.vector, cheap.value,
                                      master.layout())
    return fleetplan.build(problem, master, best.vector(master),
                           master.layout(),
                           bound, out.bound is not None, started, 0, gap)


# Share of the time limit column generation may use where the fleet comes
# in tranches or from whole node counts: it takes seconds, where the
# integer program over the patterns took the rest of the time, and the
# bound is the LP's.
_FLEET_CG_SHARE = 0.75


# Share of the time left after column generation that the fleet in
# tranches or of whole node counts may take (seconds, where it finds one).
_FLEET_SHARE = 0.5


# Share of the time left that the bound of whole node counts (and the
# fleet sought beside it) may take (several periods, caps, or the vms
# objective); the exact stage has the rest, with the bound as its lower
# row. Where the exact stage cannot prove (too many free nodes), the bound
# is the only proof: it takes nearly all, since the fleet it must prove
# comes while it rises (at four fifths, a fleet that came at 116 s of
# 120 was left 0.13% from the bound).
_NODE_BOUND_SHARE = 0.5
_NODE_BOUND_SHARE_ALONE = 0.95


def _node_bound_applies(problem, master, bound):
    """Whether :mod:`nodebound` may raise the bound (and find a fleet).

    One period without caps (TCO) has its own (:mod:`nodecuts`, in
    :func:`incumbents.best_of_patterns`).
    """
    return _node_bound_serves(problem, master) and bool(np.isfinite(bound))


def _node_bound_serves(problem, master):
    """Whether the problem is one the bound of whole node counts serves."""
    return (nodebound.applies(problem)
            and not pricing.farley_applies(problem, master))


def _heuristic(problem, master, res, layout, gap):
    """(stage, ``find(master, deadline)``): the fleet heuristic, or None.

    The fleet in tranches (TCO) or of whole node counts (the objectives
    that count VMs served); ``find`` returns a :class:`fleetplan.Solution`
    of the master it is given, or None. ``res`` (in ``layout``): the
    master's LP.
    """
    if tranches.applies(problem, master):
        return ('fleet bought in tranches',
                lambda own, until: tranches.fleet(
                    problem, own, res, layout, until, gap))
    if served.applies(problem):
        return ('fleet of whole node counts',
                lambda own, until: served.fleet(problem, own, until))
    return None


class _Sought(object):
    """The fleet heuristic, sought beside the stages that follow it.

    It starts (:meth:`start`) as soon as column generation's time is up,
    beside its last round (every configuration priced exactly, for the
    bound: seconds, and more on a loaded machine), or when column
    generation ends before its time; it runs on its own copy of the
    master (:func:`clock.beside`), until its share of the time ends.
    ``running``: (stage, its master, its future), or None.
    """

    def __init__(self, problem, master, deadline, gap, stack):
        self.problem = problem
        self.master = master
        self.deadline = deadline
        self.gap = gap
        self.stack = stack
        self.running = None

    def start(self, res, layout):
        """Seek the fleet from the LP ``res`` (in ``layout``), if any."""
        problem, master = self.problem, self.master
        heuristic = _heuristic(problem, master, res, layout, self.gap)
        if heuristic is None:
            return
        if _node_bound_serves(problem, master):
            # Beside the bound of whole node counts: its share.
            until = _node_bound_until(problem, master, self.deadline)
        else:
            until = time.monotonic() + _FLEET_SHARE * max(
                self.deadline - time.monotonic(), 0.0)
        own = master.copy()
        future = self.stack.enter_context(clock.beside(heuristic[1], own,
                                                       until))
        self.running = (heuristic[0], own, future)


def _node_bound_until(problem, master, deadline):
    """When the bound of whole node counts stops (its share of the time)."""
    hard = master.elastic and bool(master.caps)
    proves = exact.free_nodes(problem, master, None, hard)[2]
    share = _NODE_BOUND_SHARE if proves else _NODE_BOUND_SHARE_ALONE
    return time.monotonic() + share * max(deadline - time.monotonic(), 0.0)


def _fleet_beside_bound(problem, master, running, bound, deadline, gap,
                        lp_res, seen, tell):
    """(best fleet, bound): the fleet heuristic beside the node bound.

    The heuristic takes seconds that are random (a packing that HiGHS
    finds in a tenth of a second or not in several), and the bound of
    whole node counts needs them: the heuristic runs in another thread
    (``running``: :attr:`_Sought.running`), until the bound's share of
    the time ends; the bound takes its fleet as the one to prove as soon
    as it comes. Its fleet then joins the master
    (:func:`fleetplan.rebased`). What each finds depends on how far the
    other got: the time limit decides, as it does for each stage.
    """
    what, own, future = running
    until = _node_bound_until(problem, master, deadline)
    fleets = []

    def latest():
        if future.done() and future.exception() is None:
            found = future.result()
            return None if found is None else found.fun
        return None

    bound = nodebound.raise_bound(problem, master, None, bound, until, gap,
                                  fleets.append, lp_res, seen, latest)
    found = fleetplan.rebased(problem, future.result(), own, master)
    tell(what, found, bound)
    best = None
    for solution in fleets + [found]:
        if solution is not None and (best is None
                                     or solution.fun < best.fun):
            best = solution
    tell('bound of whole node counts', best, bound)
    return best, bound


def _unproven_infeasible(master):
    return ('no fleet of whole nodes that meets the demand%s was found '
            'within the time limit; it is not proven that none exists: '
            'give optimize more --time-limit'
            % (' within the caps' if master.caps else ''))


# Seconds the integer program with free nodes needs, with a fleet at hand,
# to be worth starting: HiGHS gets half a second at least, after the
# model is built (the answer came 0.6 s past a 120 s limit when it started
# with a second left).
_EXACT_LEAST_SECONDS = 2.0


def _exact_stage(problem, master, best, bound, deadline, gap, hard, scen,
                 seen=()):
    """The integer program with free nodes, when the fleet is not proven.

    Without a proof affordable, the free nodes go to the configurations of
    the fleet at hand and those of the bound's node counts (``seen``).
    Returns (best fleet, bound); raises Infeasible when no fleet exists.
    """
    proven = fleetplan.is_proven(best, bound, gap)
    remaining = deadline - time.monotonic()
    # With a fleet at hand, too little time left to be worth the start.
    least = _EXACT_LEAST_SECONDS if best is not None else 0.0
    if not proven and remaining <= least:
        clock.cut('the integer program with free nodes')
    if not proven and remaining > least:
        focus = set(seen) | (best.configs(master) if best is not None
                             else set())
        out = exact.solve(
            problem, master, None if best is None else best.fun,
            max(remaining, 1.0), gap, hard,
            lower=bound if np.isfinite(bound) else None, focus=focus,
            step=_least_better(problem, best))
        if out.vector is not None and (best is None
                                       or out.value < best.fun):
            best = fleetplan.Solution(out.vector, out.value, master.layout())
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
    if plan.gap is not None and plan.gap <= fleetplan.ZERO_GAP:
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
