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
"""The bound of whole node counts in every period, under caps, per objective.

Each case is small enough for the oracle of :mod:`test_oracle` (every
fleet enumerated, nothing of the solver called) and is solved by column
generation (``every_pattern=False``), the path of problems too large to
list. The bound is run alone on the LP of column generation: it must
never pass the oracle's optimum (a cut that cut off the optimum would),
and a fleet it finds is feasible, so no better than the optimum. Then the
whole solve must give the oracle's answer, proven. The property tests of
:mod:`test_oracle` run the same path on random scenarios; these pin one
case of each kind.
"""

import itertools
import time
from unittest import mock

import numpy as np
import testtools

from nova_pmem_filters.planner import optimize
from nova_pmem_filters.planner.optimize import clock
from nova_pmem_filters.planner.optimize import colgen
from nova_pmem_filters.planner.optimize import complete
from nova_pmem_filters.planner.optimize import master as master_mod
from nova_pmem_filters.planner.optimize import nodebound
from nova_pmem_filters.planner.optimize import pricing
from nova_pmem_filters.planner import patterns
from tests.unit.planner.optimize import base
from tests.unit.planner.optimize import test_oracle

WORKLOADS = {
    'redis': {'vcpus': 4, 'ram_gb': 24, 'used_gb': 20, 'hot_ratio': 0.2},
    'mysql': {'vcpus': 8, 'ram_gb': 64, 'used_gb': 60, 'hot_ratio': 0.5,
              'modes': ['dram', 'memory_mode']},
}
CONFIGS = {name: test_oracle.POOL[name]
           for name in ('dram-384', 'mm-192-512', 'mm-256-1024')}
# Two periods: growth, nodes bought staying.
GROWTH = [{'name': 'y1', 'years': 2, 'vms': {'redis': 20, 'mysql': 6}},
          {'name': 'y2', 'years': 3, 'vms': {'redis': 41, 'mysql': 13}}]


class NodeBoundTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        # A pricing problem of a packing LP is never cut short by time
        # here (the bound's proofs do not wait on the machine's speed).
        patcher = mock.patch.object(nodebound, '_PRICING_SECONDS', base.LONG)
        patcher.start()
        self.addCleanup(patcher.stop)

    def problem(self, objective, periods=GROWTH, **caps):
        scen = base.scenario_of(WORKLOADS, CONFIGS, demand=periods)
        problem = optimize.build(scen, objective=objective, **caps)
        answer = test_oracle.Oracle(problem).best(**{
            cap: caps.get(cap) for cap in test_oracle.CAPS})
        self.assertIsNotNone(answer)
        # The master minimises: TCO, or minus what is served.
        optimum = (answer.objective if objective == 'tco'
                   else -answer.objective)
        return scen, problem, answer, optimum

    def check(self, objective, periods=GROWTH, **caps):
        scen, problem, answer, optimum = self.problem(objective, periods,
                                                      **caps)
        slack = 1e-6 * max(abs(optimum), 1.0)
        # The bound alone, from the LP of column generation: never past
        # the optimum, never below the LP's; a fleet it finds on its
        # nodes (tco) is no better than the optimum.
        master, generated = base.generated(problem)
        deadline = time.monotonic() + base.LONG
        found = []
        bound = nodebound.raise_bound(problem, master, None,
                                      generated.bound, deadline, 0.0,
                                      found.append, generated.res)
        self.assertLessEqual(generated.bound, optimum + slack)
        self.assertLessEqual(bound, optimum + slack)
        self.assertGreaterEqual(bound, generated.bound - slack)
        for fleet in found:
            self.assertGreaterEqual(fleet.fun, optimum - slack)
        # The whole solve, on the path of problems too large to list.
        raised = []
        real = nodebound.raise_bound

        def watched(*args, **kwargs):
            raised.append(real(*args, **kwargs))
            return raised[-1]

        with mock.patch.object(nodebound, 'raise_bound', watched):
            plan = optimize.solve(problem, scen=scen, time_limit=base.LONG,
                                  gap=0.0, every_pattern=False)
        for each in raised:
            self.assertLessEqual(each, optimum + slack)
        self.assertTrue(test_oracle.close(answer.objective, plan.objective),
                        '%r, the oracle %r' % (plan.objective,
                                               answer.objective))
        self.assertEqual('optimal', plan.status)
        return bound, generated.bound, answer

    def test_tco_in_two_periods(self):
        bound, lp, _answer = self.check('tco')
        # Whole nodes cost more than the LP's fractional ones.
        self.assertGreater(bound, lp)

    def test_tco_under_a_power_cap(self):
        # The least power any fleet serving the demand draws: it binds.
        self.check('tco', **self.binding_caps())

    def least_budget(self):
        _scen, problem, _answer, _optimum = self.problem('tco')
        return test_oracle.Oracle(problem).least()['budget']

    def binding_caps(self):
        """The least power any fleet serving the demand draws, and room."""
        _scen, problem, _answer, _optimum = self.problem('tco')
        least = test_oracle.Oracle(problem).least()
        return {'power_kw': least['power_kw'],
                'rack_units': least['rack_units'] + 2}

    def test_vms_under_a_budget(self):
        # Less than any fleet serving all of it costs: some is not served.
        _b, _lp, answer = self.check('vms', budget=0.8 * self.least_budget())
        wanted = sum(sum(p['vms'].values()) for p in GROWTH)
        self.assertLess(answer.objective, wanted)

    def test_throughput_under_a_budget(self):
        self.check('throughput', budget=0.8 * self.least_budget())

    def test_one_period_under_a_cap(self):
        self.check('tco', periods={'redis': 41, 'mysql': 13},
                   rack_units=10.0)

    def test_a_cut_holds_in_every_period(self):
        # A node's best pattern is the same in every period, so each cut
        # the bound finds, in whichever period, joins every period. Every
        # fleet the oracle enumerates that serves a period's demand meets
        # every cut in that period.
        _scen, problem, _answer, _optimum = self.problem('tco')
        oracle = test_oracle.Oracle(problem)
        made = []
        real = nodebound.Bound

        def bound(*args, **kwargs):
            made.append(real(*args, **kwargs))
            return made[-1]

        master, generated = base.generated(problem, generate=False)
        deadline = time.monotonic() + base.LONG
        separated = []
        real_separate = nodebound.separate

        def separate(problem, master, t, *args):
            separated.append(t)
            return real_separate(problem, master, t, *args)

        with mock.patch.object(nodebound, 'Bound', bound), \
                mock.patch.object(nodebound, 'separate', separate):
            nodebound.raise_bound(problem, master, None, generated.bound,
                                  deadline, 0.0, None, generated.res)
        cuts = made[0].cuts
        # Cuts from the packing LPs of both periods, beyond the first.
        self.assertEqual({0, 1}, set(separated))
        self.assertGreater(len(cuts), 2)
        checked = 0
        for t, demand in enumerate(oracle.demand):
            fleets = [f for f in oracle.box
                      if oracle.served[t][f] == sum(demand)]
            self.assertTrue(fleets)
            for period, ci, upper, pi in cuts:
                # With tco, every cut joins every period.
                self.assertEqual((None, None), (period, ci))
                need = float(np.dot(pi, demand))
                for fleet in fleets:
                    self.assertGreaterEqual(
                        float(np.dot(upper, fleet)),
                        need * (1 - 1e-9) - 1e-9, (t, fleet, pi))
                    checked += 1
        self.assertGreater(checked, 0)

    def test_the_fleet_is_sought_beside_the_bound(self):
        # Several periods (tco), and the most VMs for a budget: the fleet
        # heuristic runs in its own thread while the bound rises, and the
        # answer is still the oracle's, proven.
        for objective, caps in (('tco', {}), ('vms', {
                'budget': 0.8 * self.least_budget()})):
            with mock.patch.object(clock, 'beside',
                                   wraps=clock.beside) as beside:
                self.check(objective, **caps)
            self.assertEqual(1, beside.call_count)


class PricingInPeriodsTestCase(NodeBoundTestCase):
    """Column generation over several periods: its duals, its patterns."""

    def master(self, objective, **caps):
        _scen, problem, _answer, optimum = self.problem(objective, **caps)
        return problem, base.seeded(problem), optimum

    def test_lp_duals_are_optimal_duals(self):
        # The serve rows' duals lowered by their VMs' reduced costs: as
        # feasible in the dual of the LP, with the same objective; by the
        # simplex method and by the interior point's.
        for objective, interior in itertools.product(
                ('tco', 'vms', 'throughput'), (False, True)):
            caps = ({'budget': 0.8 * self.least_budget()}
                    if objective != 'tco' else {})
            problem, master, _optimum = self.master(objective, **caps)
            res, _layout = master.solve_lp(interior=interior)
            duals = pricing.lp_duals(master, res)
            cost, a_ub, b_ub, _layout = master._build()
            self.assertTrue(np.all(duals >= 0.0))
            reduced = cost + a_ub.T @ duals
            self.assertGreaterEqual(reduced.min(),
                                    -1e-6 * max(abs(res.fun), 1.0))
            self.assertAlmostEqual(res.fun, float(-b_ub @ duals),
                                   delta=1e-6 * max(abs(res.fun), 1.0))
            # Never above the LP's own.
            own = -res.ineqlin.marginals
            self.assertTrue(np.all(duals <= np.maximum(own, 0.0) + 1e-9))

    def price(self, mu, every):
        """(master, call mock, added, lower) of pricing every period at mu.

        Every workload worth 1000 in every period; the master without
        patterns.
        """
        _scen, problem, _answer, _optimum = self.problem('tco')
        master = master_mod.Master(problem)
        master.pricing_gap = pricing.pricing_gap(0.0)
        values = [1000.0] * len(problem.workloads)
        priced = {(ci, t): (mu, None, values)
                  for ci in range(master.nc) for t in range(master.nt)}
        with mock.patch.object(patterns, 'best_pattern',
                               wraps=patterns.best_pattern) as call:
            added, lower = pricing.price_all(problem, master,
                                             mock.Mock(fun=0.0), priced,
                                             5.0, None, every=every)
        return master, call, added, lower

    def test_a_pattern_joins_the_periods_where_it_pays(self):
        master, call, added, lower = self.price(0.0, False)
        # One pricing problem per configuration; its pattern in both
        # periods; no bound from a round that did not price them all.
        self.assertEqual(master.nc, call.call_count)
        self.assertEqual(master.nc * master.nt, added)
        for ci in range(master.nc):
            self.assertEqual(
                [c for cj, t, c in master.columns if cj == ci and t == 0],
                [c for cj, t, c in master.columns if cj == ci and t == 1])
        self.assertEqual(-np.inf, lower)
        # Priced in every period: a bound.
        _master, _call, _added, lower = self.price(0.0, True)
        self.assertTrue(np.isfinite(lower))

    def test_every_period_priced_bounds(self):
        problem, master, optimum = self.master('tco')
        res, _layout = master.solve_lp()
        duals = pricing.lp_duals(master, res)
        priced, _added = colgen.price_greedily(problem, master, duals, True)
        _added, lower = pricing.price_all(problem, master, res, priced, 5.0,
                                          None, every=True)
        self.assertTrue(np.isfinite(lower))
        self.assertLessEqual(lower, min(res.fun, optimum) + 1e-6 * optimum)

    def test_no_pattern_pays_at_the_loose_gap(self):
        # Nothing pays and the loose bounds leave no doubt: one pass at
        # the loose gap, and its bounds make the round's bound.
        _master, call, added, lower = self.price(1e9, False)
        self.assertEqual(0, added)
        self.assertEqual(0.0, lower)
        self.assertEqual({pricing.LOOSE_PRICING_GAP},
                         {each.kwargs['gap'] for each in call.call_args_list})

    def test_the_covering_lp_is_the_lp(self):
        # TCO: the LP without its serve layer, lifted, is an optimum of
        # the master's own LP (the same value, feasible in its rows, its
        # reduced costs those of the duals), by either method; with the
        # other objectives the serve layer stays.
        for caps, interior in itertools.product(
                ({}, self.binding_caps()), (False, True)):
            problem, master, _optimum = self.master('tco', **caps)
            deadline = time.monotonic() + base.LONG
            colgen.generate_columns(problem, master, deadline, deadline,
                                    0.0, True, None)
            cost, a_ub, b_ub, _layout = master._build()
            self.assertIsNotNone(master._covering(a_ub, b_ub, _layout))
            res, _layout = master.solve_lp(interior=interior)
            whole = master_mod.sp_optimize.linprog(
                cost, A_ub=a_ub, b_ub=b_ub, bounds=(0, None),
                method='highs')
            slack = 1e-7 * abs(whole.fun)
            self.assertAlmostEqual(whole.fun, res.fun, delta=slack)
            self.assertAlmostEqual(res.fun, float(cost @ res.x),
                                   delta=slack)
            self.assertFalse(master_mod.over(a_ub, res.x, b_ub))
            self.assertGreaterEqual(res.x.min(), 0.0)
            duals = -res.ineqlin.marginals
            self.assertGreaterEqual(duals.min(), 0.0)
            reduced = cost + a_ub.T @ duals
            np.testing.assert_allclose(reduced, res.lower.marginals,
                                       atol=1e-6 * abs(res.fun))
            self.assertAlmostEqual(res.fun, float(-b_ub @ duals),
                                   delta=slack)
        for objective in ('vms', 'throughput'):
            problem, master, _optimum = self.master(
                objective, budget=0.8 * self.least_budget())
            cost, a_ub, b_ub, layout = master._build()
            self.assertIsNone(master._covering(a_ub, b_ub, layout))

    def test_the_node_counts_from_the_first_lp(self):
        # From the LP of the first patterns alone (no pricing, no bound
        # yet), the bound of whole node counts prices what it needs in
        # its packing LPs: still a bound, and given the time it proves
        # the optimum.
        for objective in ('tco', 'vms'):
            caps = ({'budget': 0.8 * self.least_budget()}
                    if objective != 'tco' else self.binding_caps())
            problem, master, optimum = self.master(objective, **caps)
            deadline = time.monotonic() + base.LONG
            generated = colgen.generate_columns(
                problem, master, deadline, deadline, 0.0, False, None)
            self.assertEqual(-np.inf, generated.bound)
            bound = nodebound.raise_bound(
                problem, master, None, generated.bound, deadline, 0.0,
                None, generated.res)
            slack = 1e-6 * max(abs(optimum), 1.0)
            self.assertLessEqual(bound, optimum + slack)
            if objective == 'tco':
                self.assertGreaterEqual(bound, optimum - slack)
            else:
                # VMs served are fractional in it: no whole VM more.
                self.assertGreater(bound, optimum - 1.0)

    def test_a_fleet_that_comes_beside(self):
        # The fleet sought beside the bound comes while it rises: it is
        # asked for before each round, and once there the bound proves it
        # within the gap (from the first LP, far from it), never passing
        # the optimum.
        problem, master, optimum = self.master('tco', **self.binding_caps())
        deadline = time.monotonic() + base.LONG
        generated = colgen.generate_columns(
            problem, master, deadline, deadline, 0.0, False, None)
        asked, rounds = [], []
        real = nodebound.Bound.best

        def best(bound, *args, **kwargs):
            rounds.append(len(asked))
            return real(bound, *args, **kwargs)

        def latest():
            asked.append(None)
            return None if len(asked) < 2 else optimum

        gap = 0.05
        with mock.patch.object(nodebound.Bound, 'best', best):
            bound = nodebound.raise_bound(
                problem, master, None, generated.bound, deadline, gap,
                None, generated.res, latest=latest)
        self.assertEqual(list(range(1, len(rounds) + 1)), rounds)
        slack = 1e-6 * optimum
        self.assertLessEqual(bound, optimum + slack)
        self.assertGreaterEqual(bound, optimum * (1 - gap) - slack)

    def test_the_last_round_prices_to_the_bound_gap(self):
        # Every configuration priced for the bound: each to the bound's
        # gap, looser than the rounds' own; the bound still holds
        # (test_every_period_priced_bounds).
        master, call, _added, lower = self.price(0.0, True)
        self.assertTrue(np.isfinite(lower))
        self.assertEqual({pricing.bound_gap(master)},
                         {each.kwargs['gap'] for each in call.call_args_list})
        self.assertEqual(10 * master.pricing_gap, pricing.bound_gap(master))
        master.pricing_gap = pricing.pricing_gap(1e-2)
        self.assertEqual(pricing.LOOSEST_PRICING_GAP,
                         pricing.bound_gap(master))

    def too_few(self):
        """(problem, master, counts, VMs): a node each, the second period."""
        problem, master, _optimum = self.master('tco')
        counts = np.ones(master.nc)
        want = np.array([problem.periods[1].vms[name]
                         for name in problem.workloads], dtype=float)
        return problem, master, counts, want

    def assert_cut(self, problem, counts, want, status, cuts):
        """Every cut holds for every pattern; the counts break the last."""
        self.assertEqual('cut', status)
        listed = complete.listing(problem)
        for pi, upper in cuts:
            for ci, top in upper.items():
                best = max(float(np.dot(pi, a)) for a in listed[ci])
                self.assertGreaterEqual(top, best * (1 - 1e-9) - 1e-9)
        pi, upper = cuts[-1]
        self.assertLess(sum(upper[ci] * counts[ci] for ci in upper),
                        float(pi @ want))

    def test_every_cut_of_a_packing_holds(self):
        # Counts too few to pack a period.
        problem, master, counts, want = self.too_few()
        status, cuts = nodebound.separate(problem, master, 1, counts, want,
                                          time.monotonic() + base.LONG)
        self.assert_cut(problem, counts, want, status, cuts)

    def test_a_pricing_cut_short_is_priced_longer(self):
        # The packing LP of counts too few: every pricing problem given
        # the first seconds stops by its time with a loose upper bound,
        # so no round has a cut or a pattern. Priced longer, the cut
        # comes, and it holds for every pattern (listed).
        problem, master, counts, want = self.too_few()
        real = pricing.best_by
        given = []

        def best_by(problem, master, ci, values, deadline):
            seconds = deadline - time.monotonic()
            given.append(seconds)
            value, best, top = real(problem, master, ci, values, deadline)
            if seconds <= 10.0:
                # Cut short: no better pattern, an upper bound far off.
                return 0.0, best, 10 * top + 10
            return value, best, top

        with mock.patch.object(nodebound, '_PRICING_SECONDS', 10.0), \
                mock.patch.object(pricing, 'best_by', best_by):
            status, cuts = nodebound.separate(
                problem, master, 1, counts, want,
                time.monotonic() + base.LONG)
        # Four times the first seconds (40), however busy the machine.
        self.assertGreater(max(given), 2 * 10.0)
        self.assert_cut(problem, counts, want, status, cuts)

    def test_node_counts_not_found_in_time_are_sought_longer(self):
        # The first integer program over the node counts stops by its time
        # with no counts: that proves nothing, and the next one gets twice
        # as long. The bound still proves the optimum (tco).
        problem, master, optimum = self.master('tco', **self.binding_caps())
        deadline = time.monotonic() + base.LONG
        generated = colgen.generate_columns(
            problem, master, deadline, deadline, 0.0, True, None)
        real = clock.milp
        limits = []

        def milp(what, *args, **kwargs):
            if what != 'the node counts':
                return real(what, *args, **kwargs)
            limits.append(kwargs['options']['time_limit'])
            if len(limits) == 1:
                return mock.Mock(status=1, x=None, mip_dual_bound=np.nan)
            return real(what, *args, **kwargs)

        with mock.patch.object(clock, 'milp', milp):
            bound = nodebound.raise_bound(
                problem, master, None, generated.bound, deadline, 0.0,
                None, generated.res)
        self.assertEqual([nodebound._ROUND_SECONDS,
                          2 * nodebound._ROUND_SECONDS], limits[:2])
        slack = 1e-6 * optimum
        self.assertLessEqual(bound, optimum + slack)
        self.assertGreaterEqual(bound, optimum - slack)

    def test_no_separation_past_the_deadline(self):
        # The deadline passes during the first period's packing LP: the
        # next period's is not started (each takes half a second at
        # least), and the time limit is recorded as having cut the bound.
        problem, master, _optimum = self.master('tco')
        deadline = time.monotonic() + base.LONG
        generated = colgen.generate_columns(
            problem, master, deadline, deadline, 0.0, False, None)
        real = nodebound.separate
        late = [0.0]
        periods = []

        def separate(problem, master, t, *args):
            periods.append(t)
            out = real(problem, master, t, *args)
            late[0] = 2 * base.LONG
            return out

        shifted = mock.Mock(monotonic=lambda: time.monotonic() + late[0])
        with mock.patch.object(nodebound, 'separate', separate), \
                mock.patch.object(nodebound, 'time', shifted), \
                clock.watch() as cut:
            bound = nodebound.raise_bound(
                problem, master, None, generated.bound, deadline, 0.0,
                None, generated.res)
        self.assertEqual([0], periods)
        self.assertEqual(['the bound of whole node counts'], cut)
        self.assertGreaterEqual(bound, generated.bound)

    def test_the_lp_by_interior_point(self):
        # The same LP value; the simplex method where it fails.
        _problem, master, _optimum = self.master('tco')
        simplex, _layout = master.solve_lp()
        interior, _layout = master.solve_lp(interior=True)
        self.assertAlmostEqual(simplex.fun, interior.fun,
                               delta=1e-7 * abs(simplex.fun))
        real = master_mod.sp_optimize.linprog

        def failing(*args, **kwargs):
            if kwargs['method'] == 'highs-ipm':
                return mock.Mock(status=4)
            return real(*args, **kwargs)

        with mock.patch.object(master_mod.sp_optimize, 'linprog',
                               failing):
            res, _layout = master.solve_lp(interior=True)
        self.assertEqual(simplex.fun, res.fun)
