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
"""Column generation: stabilised duals, pricing once, the anytime fleet."""

import dataclasses
import time
from unittest import mock

import hypothesis
from hypothesis import strategies as st
import numpy as np
import testtools

from nova_pmem_filters.planner import optimize
from nova_pmem_filters.planner.optimize import colgen
from nova_pmem_filters.planner.optimize import master as master_mod
from nova_pmem_filters.planner.optimize import pricing
from nova_pmem_filters.planner.optimize import solver
from nova_pmem_filters.planner.optimize import tranches
from nova_pmem_filters.planner import patterns
from tests.unit.planner.optimize import base
from tests.unit.planner.optimize import test_nodebound


_CACHE = []


def _benchmark_problem():
    """The small benchmark and its problem, built once (building is slow)."""
    if not _CACHE:
        scen = base.small_benchmark()
        _CACHE.append((scen, optimize.build(scen)))
    return _CACHE[0]


class KnownBoundTestCase(testtools.TestCase):
    """What an earlier pricing proves about the next one."""

    @base.PROPERTY
    @hypothesis.given(
        st.integers(min_value=0, max_value=5),
        st.lists(st.integers(min_value=0, max_value=5000), min_size=4,
                 max_size=4),
        st.lists(st.integers(min_value=-500, max_value=500), min_size=4,
                 max_size=4))
    def test_never_below_the_best_pattern(self, ci, before, moves):
        # U(v) <= U(v0) + the quick bound of (v - v0)+: the best pattern at
        # the new values is never worth more than the bound says.
        _scen, problem = _benchmark_problem()
        master = master_mod.Master(problem)
        cand = problem.candidates[ci]
        _value, _counts, top = patterns.best_pattern(
            cand.capacity, problem.demands, before, cand.limits)
        pricing._remember(master, ci, 0, before, top)
        after = [max(0.0, v + m) for v, m in zip(before, moves)]
        best, _counts, _top = patterns.best_pattern(
            cand.capacity, problem.demands, after, cand.limits)
        known = pricing.known_bound(problem, master, ci, 0, after)
        # HiGHS proves its bound within its absolute gap (1e-6).
        self.assertGreaterEqual(known, best - 1e-6 * max(best, 1.0) - 1e-5)

    def test_unchanged_values_need_no_new_pricing(self):
        _scen, problem = _benchmark_problem()
        master = master_mod.Master(problem)
        self.assertIsNone(pricing.known_bound(problem, master, 0, 0,
                                              [1.0] * 4))
        pricing._remember(master, 0, 0, [100.0, 0.0, 50.0, 10.0], 1234.5)
        self.assertAlmostEqual(1234.5, pricing.known_bound(
            problem, master, 0, 0, [100.0, 0.0, 50.0, 10.0]), places=3)
        # Values that only fall cannot raise the best pattern's value.
        self.assertAlmostEqual(1234.5, pricing.known_bound(
            problem, master, 0, 0, [90.0, 0.0, 0.0, 10.0]), places=3)


class ShapeTestCase(testtools.TestCase):
    """Configurations of one shape share their pricing problem."""

    def test_one_pricing_per_shape(self):
        _scen, problem = _benchmark_problem()
        first = problem.candidates[0]
        twin = dataclasses.replace(
            first, name='twin', capex=first.capex * 1.01,
            capacity=dataclasses.replace(first.capacity, name='twin'))
        other = problem.candidates[1]
        problem = dataclasses.replace(problem,
                                      candidates=(first, twin, other))
        self.assertEqual(pricing.shape(first), pricing.shape(twin))
        self.assertNotEqual(pricing.shape(first), pricing.shape(other))
        master = master_mod.Master(problem)
        colgen.seed(problem, master)
        values = [2000.0] * len(problem.workloads)
        priced = {(ci, 0): (0.0, None, values) for ci in range(3)}
        lp = mock.Mock(fun=0.0)
        with mock.patch.object(patterns, 'best_pattern',
                               wraps=patterns.best_pattern) as call:
            pricing.price_all(problem, master, lp, priced, 5.0, None)
        # One call for first and its twin, one for the other.
        self.assertEqual(2, call.call_count)
        # Both twins know their bound.
        self.assertEqual(master.tops[0, 0], master.tops[1, 0])


class TailingOffTestCase(testtools.TestCase):

    def test_rounds_that_move_nothing_stop_generation(self):
        still = [(100.0, 90.0)] * (colgen.TAIL_ROUNDS + 1)
        self.assertTrue(colgen.tailing_off(still, 0.01))
        # Too few rounds to tell.
        self.assertFalse(colgen.tailing_off(still[1:], 0.01))

    def test_a_rising_bound_or_a_falling_lp_goes_on(self):
        rounds = colgen.TAIL_ROUNDS + 1
        rising = [(100.0, 90.0 + i) for i in range(rounds)]
        self.assertFalse(colgen.tailing_off(rising, 0.01))
        falling = [(100.0 - i, 90.0) for i in range(rounds)]
        self.assertFalse(colgen.tailing_off(falling, 0.01))
        # Unless the LP fell by no more than the tolerance.
        self.assertTrue(colgen.tailing_off(falling, float(rounds)))

    def test_no_bound_yet_goes_on(self):
        still = [(100.0, -np.inf)] * (colgen.TAIL_ROUNDS + 1)
        self.assertFalse(colgen.tailing_off(still, 0.01))


class AnytimeTestCase(testtools.TestCase):
    """The fleet a run reports never gets worse; its bound holds."""

    def test_fleets_told_never_get_worse(self):
        scen, problem = _benchmark_problem()
        told = []
        plan = optimize.solve(
            problem, scen=scen, time_limit=60, gap=0.0,
            stage=lambda what, best, bound: told.append((what, best, bound)),
            every_pattern=False)
        fleets = [best for _what, best, _bound in told if best is not None]
        self.assertTrue(fleets, told)
        for earlier, later in zip(fleets, fleets[1:]):
            self.assertLessEqual(later, earlier + 1e-6, told)
        self.assertLessEqual(plan.objective, fleets[-1] + 1e-6)
        bounds = [bound for _what, _best, bound in told]
        for earlier, later in zip(bounds, bounds[1:]):
            self.assertGreaterEqual(later, earlier - 1e-6, told)
        self.assertLessEqual(plan.lp_bound, plan.objective + 1e-6)

    def test_the_quick_fleet_is_told_before_the_integer_program(self):
        # A problem whose fleet rounded from the LP is not proven optimal
        # at once (then the integer program is spared).
        scen = base.fleet_optimize.make_scenario(workloads=4, configs=6,
                                                 seed=4)
        problem = optimize.build(scen)
        told = []
        optimize.solve(
            problem, scen=scen, time_limit=10, gap=0.0,
            stage=lambda what, best, bound: told.append((what, best)),
            every_pattern=False)
        names = [what for what, _best in told]
        # Farley's case (TCO, one period, no caps): the fleet rounded from
        # the LP comes first, with a value.
        self.assertIn('fleet rounded from the LP', names)
        quick = names.index('fleet rounded from the LP')
        self.assertLess(quick, names.index('fleet from the patterns'))
        self.assertIsNotNone(told[quick][1])

    def test_smoothed_bound_stays_below_the_optimum(self):
        # Column generation's bound (Farley's, at the stabilised duals)
        # never passes the proven optimum of the same problem.
        scen, problem = _benchmark_problem()
        plan = optimize.solve(problem, scen=scen, time_limit=base.LONG,
                              gap=0.0)
        self.assertEqual('optimal', plan.status, plan.gap)
        master = master_mod.Master(problem)
        colgen.seed(problem, master)
        generated = colgen.generate_columns(
            problem, master, float('inf'), float('inf'), 0.0, True, None)
        self.assertLessEqual(generated.bound, plan.objective * (1 + 1e-9))
        self.assertLessEqual(generated.bound,
                             generated.res.fun * (1 + 1e-9))


class TimeUpTestCase(testtools.TestCase):
    """The fleet heuristic starts when column generation's time is up."""

    def problem(self):
        scen = base.scenario_of(test_nodebound.WORKLOADS,
                                test_nodebound.CONFIGS,
                                demand=test_nodebound.GROWTH)
        return scen, optimize.build(scen, rack_units=12.0)

    def generate(self, cg_deadline):
        _scen, problem = self.problem()
        master = master_mod.Master(problem)
        colgen.seed(problem, master)
        calls = []
        real = colgen._price

        def price(*args):
            calls.append('price')
            return real(*args)

        def time_up(res, layout):
            calls.append(('time up', float(res.fun), layout))

        now = time.monotonic()
        with mock.patch.object(colgen, '_price', price):
            generated = colgen.generate_columns(
                problem, master, now + base.LONG, now + cg_deadline, 0.0,
                True, None, time_up=time_up)
        return generated, calls

    def test_told_once_before_the_last_round_prices(self):
        generated, calls = self.generate(-1.0)
        told = [call for call in calls if call != 'price']
        self.assertEqual(1, len(told))
        # The first round found the time up: told its LP, then priced.
        self.assertEqual(told[0], calls[0])
        self.assertEqual('price', calls[1])
        self.assertTrue(np.isfinite(told[0][1]))
        self.assertEqual(1, generated.rounds)

    def test_not_told_when_column_generation_ends_in_time(self):
        generated, calls = self.generate(base.LONG)
        self.assertEqual({'price'}, set(calls))
        self.assertGreater(generated.rounds, 1)

    def test_the_fleet_is_sought_beside_the_last_round(self):
        # Column generation's time is up at once: the fleet in tranches
        # starts from the first LP before that round prices, and the plan
        # holds the fleet it found (or a better one).
        scen, problem = self.problem()
        calls = []
        real_price, real_start = colgen._price, solver._Sought.start
        real_fleet = tranches.fleet

        def price(*args):
            calls.append('price')
            return real_price(*args)

        def start(sought, res, layout):
            calls.append('start')
            return real_start(sought, res, layout)

        def fleet(*args):
            found = real_fleet(*args)
            calls.append(('fleet', None if found is None else found.fun))
            return found

        with mock.patch.object(colgen, '_price', price), \
                mock.patch.object(solver._Sought, 'start', start), \
                mock.patch.object(tranches, 'fleet', fleet), \
                mock.patch.object(solver, '_FLEET_CG_SHARE', 0.0):
            plan = optimize.solve(problem, scen=scen,
                                  time_limit=base.LONG, gap=0.0,
                                  every_pattern=False)
        self.assertEqual(['start', 'price'], calls[:2])
        self.assertEqual(1, calls.count('start'))
        fleets = [call[1] for call in calls if isinstance(call, tuple)]
        self.assertEqual(1, len(fleets))
        self.assertIsNotNone(fleets[0])
        self.assertLessEqual(plan.objective, fleets[0] * (1 + 1e-9))


class CoverDualsTestCase(testtools.TestCase):
    """Pricing at the demand rows' duals: as feasible, the same objective."""

    def _check(self, problem, master):
        res, layout = master.solve_lp()
        duals = pricing.cover_duals(problem, master,
                                    -res.ineqlin.marginals)
        cost, a_ub, b_ub, _layout = master._build()
        # Dual feasible for the LP (min cost.v, A v <= b, v >= 0, with
        # duals y = -marginals >= 0): cost + A^T y >= 0 in every column.
        self.assertTrue(np.all(duals >= -1e-9))
        reduced = cost + a_ub.T @ duals
        self.assertGreaterEqual(reduced.min(), -1e-6 * abs(res.fun))
        # The same dual objective: the LP's value.
        self.assertAlmostEqual(res.fun, float(-b_ub @ duals),
                               delta=1e-6 * abs(res.fun))
        return duals

    def test_feasible_with_the_lps_value(self):
        scen, problem = _benchmark_problem()
        master = master_mod.Master(problem)
        colgen.seed(problem, master)
        for _round in range(4):
            duals = self._check(problem, master)
            # Every slot valued at its workload's demand dual.
            for (w, _ci, _t), row in master.serve_row.items():
                self.assertEqual(duals[master.demand_row[w, 0]],
                                 duals[row])
            priced, added = colgen.price_greedily(problem, master, duals,
                                                  False)
            if not added:
                break
        # With the cut on nodes too.
        master.min_nodes = int(np.ceil(sum(
            master.solve_lp()[0].x[master._n(ci, 0)]
            for ci in range(master.nc)))) + 1
        self._check(problem, master)


class FewGreedyPatternsTestCase(testtools.TestCase):
    """Greedy pricing that finds little: the rest priced in the round."""

    def _price(self, farley, greedy):
        master = mock.Mock(nc=10, nt=3)
        priced = {(0, 0): (1.0, None, [1.0])}
        with mock.patch.object(colgen, 'price_greedily',
                               return_value=(priced, greedy)), \
                mock.patch.object(colgen, '_price_exactly',
                                  return_value=(2, 123.0)) as exactly, \
                mock.patch.object(pricing, 'farley_applies',
                                  return_value=farley):
            out = colgen._price(None, master, None, None, 0.0, False, 0.0,
                                None)
        return out, exactly.call_count

    def test_few_patterns_price_the_rest_without_a_bound(self):
        # 1 of 30 pairs: the others priced too; no bound (not all were).
        self.assertEqual(((3, -np.inf, False), 1), self._price(False, 1))
        # Enough: the LP first.
        self.assertEqual(((3, -np.inf, False), 0), self._price(False, 3))
        # Farley's bound: the LP first, as before.
        self.assertEqual(((1, -np.inf, False), 0), self._price(True, 1))
        # None: exact pricing, its bound.
        self.assertEqual(((2, 123.0, True), 1), self._price(False, 0))
