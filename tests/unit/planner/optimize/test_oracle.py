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
"""The optimiser against an oracle: the true optimum of small problems.

The oracle enumerates fleets, node counts per configuration, inside a box
that no optimal fleet leaves (:meth:`Oracle._alone`). What a fleet serves
in a period comes from the node model alone (:func:`patterns.fits`): the
VM-count vectors n nodes of a configuration hold are the sums of n
patterns, and a fleet's are the sums over its configurations. Nothing here
calls the solver, its master problem or its pricing.

:class:`OracleSelfTestCase` holds the oracle to answers worked out by hand;
:class:`OracleTestCase` holds ``optimize.solve`` to the oracle on random
scenarios, for each objective, with and without caps, over one or two
periods.
"""

import dataclasses
import itertools
import re

import hypothesis
from hypothesis import strategies as st
import numpy as np
import testtools

from nova_pmem_filters.planner import errors
from nova_pmem_filters.planner import optimize
from nova_pmem_filters.planner import patterns
from tests.unit.planner.optimize import base


# Configurations the scenarios draw from (all valid in the built-in
# catalog): DRAM, Memory Mode and App Direct, small and large.
POOL = {
    'dram-192': {'platform': 'purley-2s', 'cpu': 'xeon-gold-6148',
                 'mode': 'dram', 'per_socket': {'ddr4-16': 6}},
    'dram-384': {'platform': 'purley-2s', 'cpu': 'xeon-gold-6148',
                 'mode': 'dram', 'per_socket': {'ddr4-16': 12}},
    'mm-192-512': {'platform': 'cascade-lake-2s', 'cpu': 'xeon-gold-6230n',
                   'mode': 'memory_mode',
                   'per_socket': {'ddr4-16': 6, 'pmem100-128': 2}},
    'ad-192-512': {'platform': 'cascade-lake-2s', 'cpu': 'xeon-gold-6230n',
                   'mode': 'app_direct',
                   'per_socket': {'ddr4-16': 6, 'pmem100-128': 2}},
    'mm-256-1024': {'platform': 'ice-lake-2s', 'cpu': 'xeon-gold-6330',
                    'mode': 'memory_mode',
                    'per_socket': {'ddr4-16': 8, 'pmem200-128': 4}},
}

CAPS = ('budget', 'power_kw', 'rack_units')
# How an Infeasible message names each cap.
CAP_WORDS = {'budget': 'the capex budget of %s',
             'power_kw': 'the power cap of %s kW (PUE included)',
             'rack_units': 'the cap of %s'}

# Relative tolerance of the comparisons with the solver.
TOL = 1e-6
# Fleets the oracle enumerates at most (the box of node counts).
MAX_BOX = 3000


def num(value):
    """A number as the optimiser's messages print it."""
    return ('%d' % value) if float(value).is_integer() else '%.6g' % value


def cap_text(cap, value):
    """How an Infeasible message names a cap of ``value``."""
    text = num(value)
    if cap == 'rack_units':
        text += ' rack unit' if value == 1 else ' rack units'
    return CAP_WORDS[cap] % text


def close(a, b, tol=TOL):
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def within(value, cap):
    """Whether a fleet's use of a cap is within it (None: no cap)."""
    return cap is None or value <= cap + 1e-9 * max(1.0, abs(cap))


# Node patterns and the VM vectors of whole fleets, as boolean grids.

def maximal(vectors):
    """The vectors no other one is at least as large as everywhere."""
    kept = []
    # Any vector that dominates another sorts before it.
    for v in sorted(set(vectors), reverse=True):
        if not any(all(a >= b for a, b in zip(k, v)) for k in kept):
            kept.append(v)
    return kept


def node_patterns(cand, demands, top):
    """The largest VM-count vectors (each count <= top) one node holds.

    Each count is bounded by floor(memory / used) + 1 and by ``top``; the
    node model is monotone, so the scan of the last count stops at the
    first vector :func:`patterns.fits` refuses.
    """
    bounds = [min(t, int(cand.capacity.memory_gb // d.used_gb) + 1)
              for t, d in zip(top, demands)]
    found = []
    for head in itertools.product(*(range(b + 1) for b in bounds[:-1])):
        last = -1
        while last < bounds[-1] and patterns.fits(
                cand.capacity, demands, head + (last + 1,)):
            last += 1
        if last >= 0:
            found.append(head + (last,))
    return maximal(found)


def down(grid):
    """The down-closure of a boolean grid: every vector below one in it."""
    for axis in range(grid.ndim):
        grid = np.flip(np.logical_or.accumulate(np.flip(grid, axis),
                                                axis=axis), axis)
    return grid


def shifted(shape, v):
    """(destination, source) slices that move a grid up by v, truncated."""
    return (tuple(slice(x, None) for x in v),
            tuple(slice(0, n - x) for n, x in zip(shape, v)))


def plus_node(grid, tops):
    """The vectors served with one node more, running one of ``tops``.

    ``grid`` is down-closed and each pattern is at most the grid's corner,
    so truncating at the corner is capping the sums at the demand.
    """
    out = np.zeros_like(grid)
    for p in tops:
        dst, src = shifted(grid.shape, p)
        out[dst] |= grid[src]
    return down(out)


@dataclasses.dataclass(frozen=True)
class Answer:
    """The oracle's optimum: objective, TCO and nodes per period."""

    objective: float
    tco: float
    # One tuple of node counts (in candidate order) per period.
    fleet: tuple


class Oracle(object):
    """The true optimum of a small problem, by enumerating every fleet."""

    def __init__(self, problem):
        if len(problem.periods) > 2:
            raise ValueError('the oracle plans one or two periods')
        self.problem = problem
        cands = problem.candidates
        nw = len(problem.workloads)
        self.demand = [tuple(int(p.vms.get(w, 0)) for w in problem.workloads)
                       for p in problem.periods]
        top = tuple(max(d[w] for d in self.demand) for w in range(nw))
        tops = [node_patterns(c, problem.demands, top) for c in cands]
        self.unplaceable = [
            name for w, name in enumerate(problem.workloads)
            if top[w] and not any(p[w] for ps in tops for p in ps)]
        # The patterns of each period, capped at its demand.
        self.tops = [[maximal(tuple(min(a, b) for a, b in zip(p, d))
                              for p in ps) for ps in tops]
                     for d in self.demand]
        self.bounds = tuple(
            max(self._alone(c, t) for t in range(len(self.demand)))
            for c in range(len(cands)))
        self.box = list(itertools.product(
            *(range(u + 1) for u in self.bounds)))
        self.grids = [self._grids(t) for t in range(len(self.demand))]
        self.served = [self._served(t) for t in range(len(self.demand))]
        self._memo = {}

    def _zero(self, t):
        grid = np.zeros([d + 1 for d in self.demand[t]], dtype=bool)
        grid[(0,) * grid.ndim] = True
        return grid

    def _alone(self, c, t):
        """Nodes of c alone that serve all of period t's demand c holds.

        An optimal fleet has no more nodes of c than this in period t
        (fewer serve what its c nodes serve), and no more in the last
        period than the most over the periods.
        """
        tops = self.tops[t][c]
        target = tuple(d if any(p[w] for p in tops) else 0
                       for w, d in enumerate(self.demand[t]))
        grid, n = self._zero(t), 0
        while not grid[target]:
            grid, n = plus_node(grid, tops), n + 1
        return n

    def _grids(self, t):
        """{fleet: the down-closed grid of VM vectors it serves in t}."""
        if len(self.box) > MAX_BOX:
            raise ValueError('%d fleets: too many' % len(self.box))
        grids = {}
        for fleet in self.box:
            if not any(fleet):
                grids[fleet] = self._zero(t)
                continue
            c = max(i for i, n in enumerate(fleet) if n)
            less = fleet[:c] + (fleet[c] - 1,) + fleet[c + 1:]
            grids[fleet] = plus_node(grids[less], self.tops[t][c])
        return grids

    def _served(self, t):
        """{fleet: the most VMs it serves in period t}."""
        grid = self._zero(t)
        sizes = np.indices(grid.shape).sum(axis=0)
        return {fleet: int(sizes[g].max()) for fleet, g in
                self.grids[t].items()}

    def _alone_grid(self, t, c, n):
        return self.grids[t][tuple(n if i == c else 0
                                   for i in range(len(self.bounds)))]

    def _weights(self, t, c):
        tput = self.problem.candidates[c].throughput
        index = np.indices(self._zero(t).shape)
        return sum(tput[w] * index[w] for w in range(len(tput)))

    def _within_x(self, t, c, counts):
        """h(x): the most throughput configurations c.. serve within x.

        h(x) = max over s served by c (down-closed, s <= x) of the weight
        of s plus what the configurations after c serve within x - s.
        """
        key = (t, c, counts)
        if key not in self._memo:
            reach = self._alone_grid(t, c, counts[0])
            weight = self._weights(t, c)
            if len(counts) == 1:
                h = np.where(reach, weight, -np.inf)
                for axis in range(h.ndim):
                    h = np.maximum.accumulate(h, axis=axis)
            else:
                rest = self._within_x(t, c + 1, counts[1:])
                h = np.full(reach.shape, -np.inf)
                for s in map(tuple, np.argwhere(reach)):
                    dst, src = shifted(h.shape, s)
                    np.maximum(h[dst], weight[s] + rest[src], out=h[dst])
            self._memo[key] = h
        return self._memo[key]

    def throughput(self, t, fleet):
        """The most throughput ``fleet`` serves in period t."""
        reach = self._alone_grid(t, 0, fleet[0])
        value = self._weights(t, 0)
        if len(fleet) > 1:
            # What the others serve within demand - s, for each s.
            value = value + np.flip(self._within_x(t, 1, fleet[1:]))
        return float(np.max(np.where(reach, value, -np.inf)))

    def usage(self, fleet):
        """{cap: what the last period's nodes of ``fleet`` use of it}."""
        cands = self.problem.candidates
        return {
            'budget': sum(c.capex * n for c, n in zip(cands, fleet)),
            'power_kw': sum(self.problem.kw(c) * n
                            for c, n in zip(cands, fleet)),
            'rack_units': sum(c.rack_units * n
                              for c, n in zip(cands, fleet))}

    def _energy(self, t, fleet):
        period = self.problem.periods[t]
        return sum(self.problem.energy(c, period) * n
                   for c, n in zip(self.problem.candidates, fleet))

    def _values(self):
        """Per period, {fleet: what the objective counts it serving}."""
        if self.problem.objective != 'throughput':
            return self.served
        if 'values' not in self._memo:
            self._memo['values'] = [
                {f: self.throughput(t, f) for f in self.box}
                for t in range(len(self.demand))]
        return self._memo['values']

    def covering(self):
        """The fleets (last period's nodes) that serve all the demand."""
        return [f for f in self.box
                if all(self.served[t][f] == sum(d)
                       for t, d in enumerate(self.demand))]

    def least(self):
        """{cap: its least use by any fleet serving all the demand}."""
        fleets = self.covering()
        if not fleets:
            return None
        return {cap: min(self.usage(f)[cap] for f in fleets) for cap in CAPS}

    def best(self, budget=None, power_kw=None, rack_units=None):
        """The optimal fleet within the caps, as an :class:`Answer`.

        ``tco``: least TCO serving all the demand (None if none does);
        ``vms`` / ``throughput``: the most served (summed over the
        periods), then least TCO. The last period's nodes decide the caps
        (nodes stay, so their power is the most of any period); an
        earlier period's nodes are the cheapest ones below them that
        serve as much as those would.
        """
        caps = {'budget': budget, 'power_kw': power_kw,
                'rack_units': rack_units}
        fleets = [f for f in self.box
                  if all(within(u, caps[k])
                         for k, u in self.usage(f).items())]
        values = self._values()
        last = len(self.demand) - 1
        if self.problem.objective == 'tco':
            whole = set(self.covering())
            good = [f for f in fleets if f in whole]
        else:
            total = {f: sum(v[f] for v in values) for f in fleets}
            most = max(total.values())
            good = [f for f in fleets if close(total[f], most, 1e-9)]
        best = None
        for cost, f in sorted((self._cost(f, last), f) for f in good):
            if best is not None and cost >= best.tco:
                break
            chain, tco = (f,), cost
            if last:
                # The cheapest earlier nodes, below f, serving as much.
                first = min(
                    (g for g in itertools.product(
                        *(range(n + 1) for n in f))
                     if close(values[0][g], values[0][f], 1e-9)),
                    key=lambda g: self._energy(0, g))
                chain, tco = (first, f), tco + self._energy(0, first)
            if best is None or tco < best.tco:
                value = (tco if self.problem.objective == 'tco'
                         else sum(values[t][g] for t, g in enumerate(chain)))
                best = Answer(objective=value, tco=tco, fleet=chain)
        return best

    def _cost(self, fleet, t):
        """Capex of ``fleet`` plus its energy over period t."""
        return self.usage(fleet)['budget'] + self._energy(t, fleet)


# Random scenarios.

MODES = (['dram'], ['dram', 'app_direct'], ['memory_mode'], ['app_direct'])
HOT = (0.05, 0.1, 0.25, 0.5, 0.75, 1.0)
SPEEDS = (0.5, 1.0, 1.5, 2.0)
# A period asks at most this many GB of one workload: few nodes.
MOST_GB = 1200


@st.composite
def workloads(draw, configs, speeds=False):
    """1-3 workloads, each with the most VMs a period may ask of it."""
    out, most = {}, {}
    for i in range(draw(st.sampled_from([2, 3, 1]))):
        ram = draw(st.integers(4, 192))
        w = {'vcpus': draw(st.sampled_from([1, 2, 4, 8, 16])),
             'ram_gb': ram, 'used_gb': draw(st.integers(1, ram)),
             'hot_ratio': draw(st.sampled_from(HOT))}
        kind = draw(st.integers(0, 5))
        if kind == 3:
            # The mode of one of the configurations, maybe DRAM too.
            mode = POOL[draw(st.sampled_from(configs))]['mode']
            w['modes'] = sorted({mode, draw(st.sampled_from([mode,
                                                             'dram']))})
        elif kind == 4:
            # Any modes: maybe none of the configurations'.
            w['modes'] = draw(st.sampled_from(MODES))
        elif kind == 5 and any(POOL[c]['mode'] == 'app_direct'
                               for c in configs):
            w['modes'] = ['app_direct']
            w['vpmem'] = {'label': 'pm',
                          'size_gb': draw(st.sampled_from([16, 64, 128]))}
        if speeds and draw(st.booleans()):
            w['throughput'] = {m: draw(st.sampled_from(SPEEDS))
                               for m in ('dram', 'memory_mode',
                                         'app_direct')}
        name = 'w%d' % i
        out[name] = w
        size = max(w['used_gb'], w['hot_ratio'] * ram,
                   w.get('vpmem', {}).get('size_gb', 0))
        most[name] = int(max(1, min(15, MOST_GB // size)))
    return out, most


@st.composite
def scenarios(draw, periods=(1, 2), configs=3, speeds=False):
    """A scenario's parts: 1-``configs`` configurations, workloads, demand.

    Given to :func:`base.scenario_of` (as a dict, which hypothesis prints
    readably when a test fails).
    """
    size = min(configs, draw(st.sampled_from([2, 3, 1])))
    names = draw(st.lists(st.sampled_from(sorted(POOL)), min_size=size,
                          max_size=size, unique=True))
    loads, most = draw(workloads(names, speeds))

    def vms():
        # Rare cases sit mid-range: hypothesis favours the ends.
        if draw(st.integers(0, 12)) == 6:
            return {w: 0 for w in loads}
        return {w: 0 if draw(st.integers(0, 6)) == 3
                else draw(st.integers(1, most[w])) for w in loads}

    if draw(st.sampled_from(periods)) == 1:
        demand = vms()
    else:
        demand = [{'name': 'y1', 'years': 1, 'vms': vms()},
                  {'name': 'y2', 'years': 2, 'vms': vms()}]
    economics = {'power_price_per_kwh': draw(st.sampled_from(
        [0.05, 0.1, 0.4])), 'pue': draw(st.sampled_from([1.2, 1.5])),
        'years': draw(st.sampled_from([1, 3, 5]))}
    return {'workloads': loads, 'configs': {n: POOL[n] for n in names},
            'demand': demand, 'economics': economics}


SHARES = (None, None, None, 0.0, 0.5, 0.75, 0.9, 1.0, 1.25)


def caps_around(draw, usage, shares=SHARES):
    """Caps drawn about a fleet's use of them (None: no cap)."""
    caps = {}
    for cap in CAPS:
        share = draw(st.sampled_from(shares))
        caps[cap] = None if share is None else usage[cap] * share
    return caps


# The cases run twice, by two subclasses (two executors) of one test
# case: derandomized and without a database, they replay the same.
PROPERTY = hypothesis.settings(
    base.PROPERTY, max_examples=40,
    suppress_health_check=list(base.PROPERTY.suppress_health_check)
    + [hypothesis.HealthCheck.differing_executors])


class OracleTestCase(testtools.TestCase):
    """The optimiser's answer is the oracle's, for every objective.

    These problems are small: the optimiser lists every maximal pattern
    and solves the exact integer program over them.
    """

    every_pattern = True

    def _solve(self, problem, scen):
        return optimize.solve(problem, scen=scen, time_limit=base.LONG,
                              gap=0.0, every_pattern=self.every_pattern)

    def _oracle(self, scen, objective):
        """The oracle of a scenario (too many fleets: a rejected example)."""
        problem = optimize.build(scen, objective=objective)
        try:
            oracle = Oracle(problem)
        except ValueError:
            hypothesis.reject()
        return oracle

    def _agree(self, scen, objective, oracle, caps):
        """The plan within ``caps`` is feasible and as good as the oracle's.

        A demand that no fleet serves within them must raise Infeasible,
        naming each cap too small with the least it would take.
        """
        problem = optimize.build(scen, objective=objective, **caps)
        answer = oracle.best(**caps)
        if answer is None:
            exc = self.assertRaises(errors.Infeasible, self._solve,
                                    problem, scen)
            self._check_infeasible(oracle, caps, str(exc))
            return
        plan = self._solve(problem, scen)
        self._check_plan(problem, plan, caps)
        self.assertTrue(close(answer.objective, plan.objective),
                        'objective %r, the oracle %r (fleet %s)'
                        % (plan.objective, answer.objective, answer.fleet))
        tco = sum(plan.capex.values()) + sum(plan.energy.values())
        self.assertTrue(close(answer.tco, tco),
                        'TCO %r, the oracle %r (fleet %s)'
                        % (tco, answer.tco, answer.fleet))
        # The bound is on the right side of the optimum (a gap is an
        # absolute value: a bound past the optimum would pass as one).
        slack = 1e-6 * max(abs(answer.objective), 1.0)
        if objective == 'tco':
            self.assertLessEqual(plan.lp_bound, answer.objective + slack)
        else:
            self.assertGreaterEqual(plan.lp_bound, answer.objective - slack)
        self.assertEqual('optimal', plan.status,
                         'gap %r, bound %r' % (plan.gap, plan.lp_bound))
        self.assertIsNotNone(plan.gap)
        self.assertLessEqual(plan.gap, 1e-6)

    def _check_infeasible(self, oracle, caps, message):
        if oracle.unplaceable:
            self.assertIn('cannot be met', message)
            return
        least = oracle.least()
        self.assertIsNotNone(least)
        for cap in CAPS:
            if caps[cap] is None:
                continue
            words = re.escape(cap_text(cap, caps[cap]))
            said = words + r'( in period \S+)? is too small'
            if within(least[cap], caps[cap]):
                self.assertIsNone(
                    re.search(said, message),
                    '%s: %s is not too small (the demand needs %s)'
                    % (message, cap, num(least[cap])))
            else:
                self.assertIsNotNone(
                    re.search(said + ': the demand needs at least '
                              + re.escape(num(least[cap])) + r'(?![\d.])',
                              message),
                    '%s: should say %s %s is too small, needing %s'
                    % (message, cap, caps[cap], num(least[cap])))

    def _check_plan(self, problem, plan, caps):
        """Whole feasible nodes, within the caps; the costs add up."""
        cands, periods = problem.candidates, problem.periods
        last = periods[-1].name
        for cand in cands:
            counts = [plan.nodes[cand.name, p.name] for p in periods]
            self.assertEqual(sorted(counts), counts)
            for period in periods:
                key = (cand.name, period.name)
                slots = dict.fromkeys(problem.workloads, 0)
                for pattern, n in plan.runs[key]:
                    vector = tuple(pattern[w] for w in problem.workloads)
                    self.assertTrue(
                        patterns.fits(cand.capacity, problem.demands, vector),
                        '%s runs %s, which does not fit' % (key, pattern))
                    for w in slots:
                        slots[w] += pattern[w] * n
                self.assertLessEqual(sum(n for _p, n in plan.runs[key]),
                                     plan.nodes[key])
                for w in problem.workloads:
                    self.assertLessEqual(plan.vms[key][w], slots[w])
        for period in periods:
            for w in problem.workloads:
                served = sum(plan.vms[c.name, period.name][w] for c in cands)
                wanted = period.vms.get(w, 0)
                if problem.objective == 'tco':
                    self.assertGreaterEqual(served, wanted)
                else:
                    self.assertLessEqual(served, wanted)
            kw = sum(problem.kw(c) * plan.nodes[c.name, period.name]
                     for c in cands)
            self.assertTrue(within(kw, caps['power_kw']))
        if problem.objective != 'tco':
            # What the plan says it serves is what its objective counts.
            self.assertTrue(close(plan.objective, sum(
                (c.throughput[w] if problem.objective == 'throughput'
                 else 1.0) * plan.vms[c.name, p.name][name]
                for c in cands for p in periods
                for w, name in enumerate(problem.workloads))))
        capex = sum(c.capex * plan.nodes[c.name, last] for c in cands)
        energy = sum(problem.energy(c, p) * plan.nodes[c.name, p.name]
                     for c in cands for p in periods)
        self.assertTrue(close(capex, sum(plan.capex.values())))
        self.assertTrue(close(energy, sum(plan.energy.values())))
        self.assertTrue(within(capex, caps['budget']))
        self.assertTrue(within(
            sum(c.rack_units * plan.nodes[c.name, last] for c in cands),
            caps['rack_units']))

    def _free(self, raw, objective):
        """The scenario, its oracle and its optimum without caps."""
        scen = base.scenario_of(**raw)
        oracle = self._oracle(scen, objective)
        return scen, oracle, oracle.best()

    def test_a_cap_too_small_names_the_least_it_takes(self):
        # 200 redis take 10 Memory-Mode nodes at least: 117040 of capex.
        scen = base.scenario_of({'redis': {'vcpus': 4, 'ram_gb': 24,
                                           'used_gb': 20, 'hot_ratio': 0.2}},
                                demand={'redis': 200})
        oracle = Oracle(optimize.build(scen))
        self.assertEqual(117040, oracle.least()['budget'])
        caps = dict.fromkeys(CAPS)
        caps['budget'] = 50000
        self._agree(scen, 'tco', oracle, caps)

    def test_caps_met_alone_but_not_together_are_not_too_small(self):
        # 13 VMs, 2 a node of dram-192 or mm-192-512, 3 of mm-256-1024:
        # 2 dram-192 and 3 mm-256-1024 cost the least (67824) but draw
        # 4.824 kW; 5 dram-192 and 1 mm-256-1024 draw the least (4.767
        # kW) but cost 72216. Each cap alone is met, not both.
        scen = base.scenario_of(
            {'w0': {'vcpus': 1, 'ram_gb': 90, 'used_gb': 69,
                    'hot_ratio': 0.75}},
            {n: POOL[n] for n in ('dram-192', 'mm-192-512', 'mm-256-1024')},
            demand={'w0': 13},
            economics={'power_price_per_kwh': 0.05, 'pue': 1.5, 'years': 3})
        oracle = Oracle(optimize.build(scen))
        least = oracle.least()
        self.assertEqual(67824, least['budget'])
        self.assertAlmostEqual(4.767, least['power_kw'])
        caps = {'budget': least['budget'], 'power_kw': least['power_kw'],
                'rack_units': None}
        self.assertIsNone(oracle.best(**caps))
        self._agree(scen, 'tco', oracle, caps)

    @PROPERTY
    @hypothesis.given(scenarios(periods=(1,)))
    def test_tco_one_period(self, raw):
        scen, oracle, _free = self._free(raw, 'tco')
        self._agree(scen, 'tco', oracle, dict.fromkeys(CAPS))

    @PROPERTY
    @hypothesis.given(scenarios(periods=(2,)))
    def test_tco_two_periods(self, raw):
        scen, oracle, _free = self._free(raw, 'tco')
        self._agree(scen, 'tco', oracle, dict.fromkeys(CAPS))

    @PROPERTY
    @hypothesis.given(scenarios(), st.data())
    def test_tco_with_caps(self, raw, data):
        scen, oracle, free = self._free(raw, 'tco')
        hypothesis.assume(free is not None)
        self._agree(scen, 'tco', oracle, caps_around(
            data.draw, oracle.usage(free.fleet[-1])))

    @PROPERTY
    @hypothesis.given(scenarios(), st.data())
    def test_tco_caps_too_small_are_named(self, raw, data):
        # About the least each cap takes: each may be met alone and not
        # all at once.
        scen, oracle, free = self._free(raw, 'tco')
        hypothesis.assume(free is not None)
        self._agree(scen, 'tco', oracle, caps_around(
            data.draw, oracle.least(), (None, 0.9, 1.0, 1.0, 1.1)))

    @PROPERTY
    @hypothesis.given(scenarios(), st.data())
    def test_tco_caps_a_hair_from_their_least_values(self, raw, data):
        # Just below the least a cap takes it is too small, named with
        # that least; at it or just above, it is met.
        scen, oracle, free = self._free(raw, 'tco')
        hypothesis.assume(free is not None)
        self._agree(scen, 'tco', oracle, caps_around(
            data.draw, oracle.least(),
            (None, 1 - 1e-6, 1 - 1e-6, 1.0, 1 + 1e-6)))

    @PROPERTY
    @hypothesis.given(scenarios())
    def test_vms(self, raw):
        scen, oracle, _free = self._free(raw, 'vms')
        self._agree(scen, 'vms', oracle, dict.fromkeys(CAPS))

    @PROPERTY
    @hypothesis.given(scenarios(), st.data())
    def test_vms_with_caps(self, raw, data):
        scen, oracle, free = self._free(raw, 'vms')
        self._agree(scen, 'vms', oracle, caps_around(
            data.draw, oracle.usage(free.fleet[-1])))

    @PROPERTY
    @hypothesis.given(scenarios(speeds=True))
    def test_throughput(self, raw):
        scen, oracle, _free = self._free(raw, 'throughput')
        self._agree(scen, 'throughput', oracle, dict.fromkeys(CAPS))

    @PROPERTY
    @hypothesis.given(scenarios(speeds=True), st.data())
    def test_throughput_with_caps(self, raw, data):
        scen, oracle, free = self._free(raw, 'throughput')
        self._agree(scen, 'throughput', oracle, caps_around(
            data.draw, oracle.usage(free.fleet[-1])))


class OracleSelfTestCase(testtools.TestCase):
    """The oracle against answers worked out by hand."""

    def test_brute_force_agrees(self):
        # test_solver's brute force: 23 a and 17 b take 4 nodes.
        _scen, problem = base.brute_force_case()
        answer = Oracle(problem).best()
        cand, period = problem.candidates[0], problem.periods[0]
        self.assertEqual(((4,),), answer.fleet)
        self.assertAlmostEqual(
            4 * (cand.capex + problem.energy(cand, period)), answer.tco)

    def test_least_budget(self):
        # 200 redis: 20 a Memory-Mode node (vCPUs), 17 a DRAM node
        # (memory); 10 Memory-Mode nodes are the cheapest mix.
        scen = base.scenario_of({'redis': {'vcpus': 4, 'ram_gb': 24,
                                           'used_gb': 20, 'hot_ratio': 0.2}},
                                demand={'redis': 200})
        problem = optimize.build(scen)
        oracle = Oracle(problem)
        self.assertEqual([[(17,)], [(20,)]], oracle.tops[0])
        self.assertEqual(10 * 11704, oracle.least()['budget'])
        self.assertEqual(20, oracle.least()['rack_units'])
        self.assertIsNone(oracle.best(budget=10 * 11704 - 1))
        self.assertEqual(((0, 10),), oracle.best(budget=10 * 11704).fleet)

    def test_two_periods(self):
        # 19 redis a node: 20 then 5 keep the 2 nodes bought; 5 then 20
        # buy 1, then 1 more.
        for first, second, fleet in ((20, 5, ((2,), (2,))),
                                     (5, 20, ((1,), (2,)))):
            scen = base.scenario_of(
                {'redis': {'vcpus': 4, 'ram_gb': 32, 'used_gb': 24,
                           'hot_ratio': 0.25}},
                demand=[{'name': 'y1', 'years': 1, 'vms': {'redis': first}},
                        {'name': 'y2', 'years': 2,
                         'vms': {'redis': second}}])
            problem = optimize.build(scen, configs=['mm-192-512'])
            cand = problem.candidates[0]
            answer = Oracle(problem).best()
            self.assertEqual(fleet, answer.fleet)
            y1, y2 = problem.periods
            self.assertAlmostEqual(
                fleet[1][0] * cand.capex
                + fleet[0][0] * problem.energy(cand, y1)
                + fleet[1][0] * problem.energy(cand, y2), answer.tco)
            vms = Oracle(dataclasses.replace(problem, objective='vms'))
            self.assertEqual(first + second,
                             vms.best(budget=cand.capex * 2).objective)
            self.assertEqual(min(first, 19) + min(second, 19),
                             vms.best(budget=cand.capex).objective)

    @hypothesis.settings(base.PROPERTY, max_examples=30)
    @hypothesis.given(scenarios())
    def test_throughput_of_one_is_vms(self, raw):
        # Weighing every VM 1, the throughput oracle (per-configuration
        # weights) counts what the VM count (one grid) counts.
        problem = optimize.build(base.scenario_of(**raw),
                                 objective='throughput')
        problem = dataclasses.replace(problem, candidates=tuple(
            dataclasses.replace(c, throughput=(1.0,) * len(c.throughput))
            for c in problem.candidates))
        try:
            oracle = Oracle(problem)
        except ValueError:
            hypothesis.reject()
        for t in range(len(problem.periods)):
            for fleet in oracle.box:
                self.assertEqual(oracle.served[t][fleet],
                                 oracle.throughput(t, fleet))


class OneNodeTestCase(testtools.TestCase):
    """10 redis and 9 mysql VMs of the built-in scenario: one node.

    One Memory-Mode node holds all 19 (11,704 of capex, plus its energy).
    """

    DEMAND = {'redis': 10, 'mysql': 9}

    def _solve(self, objective='tco', **caps):
        problem = optimize.build(base.BUILTIN, objective=objective,
                                 demand=self.DEMAND, **caps)
        answer = Oracle(problem).best(**caps)
        plan = optimize.solve(problem, scen=base.BUILTIN, time_limit=30,
                              gap=0.0)
        self.assertEqual(((0, 1),), answer.fleet)
        self.assertEqual({('dram-384', 'all'): 0, ('mm-192-512', 'all'): 1},
                         plan.nodes)
        self.assertEqual(11704, sum(plan.capex.values()))
        self.assertTrue(close(answer.objective, plan.objective),
                        'objective %r, the oracle %r'
                        % (plan.objective, answer.objective))
        self.assertEqual('optimal', plan.status)
        return problem, answer, plan

    def _tco(self, **caps):
        problem, answer, plan = self._solve(**caps)
        mm = problem.candidates[1]
        self.assertEqual('mm-192-512', mm.name)
        self.assertTrue(patterns.fits(mm.capacity, problem.demands, (10, 9)))
        self.assertAlmostEqual(
            11704 + problem.energy(mm, problem.periods[0]), answer.tco)

    def test_one_node(self):
        self._tco()

    def test_one_node_within_its_budget(self):
        self._tco(budget=11704)

    def test_one_node_within_two_rack_units(self):
        self._tco(rack_units=2)

    def test_all_19_vms_within_the_budget_of_one_node(self):
        _problem, answer, plan = self._solve('vms', budget=11704)
        self.assertEqual(19, answer.objective)
        self.assertEqual(19, plan.objective)


class GeneratedOracleTestCase(OracleTestCase):
    """The same problems by column generation and the free-node program.

    The path of the problems whose maximal patterns are too many to list.
    """

    every_pattern = False
