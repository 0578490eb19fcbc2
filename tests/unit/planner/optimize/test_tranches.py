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
"""The fleets in tranches and of whole node counts, held to the oracle.

Each fleet it returns is checked here from its nodes alone: every node's
pattern fits (the node model), node counts never fall, every period's
demand is served, the caps hold, and its TCO, recomputed from the node
counts, is what it says and no less than the oracle's optimum.
"""

import dataclasses
import time

import numpy as np
import testtools

from nova_pmem_filters.planner import optimize
from nova_pmem_filters.planner.optimize import budgets
from nova_pmem_filters.planner.optimize import clock
from nova_pmem_filters.planner.optimize import colgen
from nova_pmem_filters.planner.optimize import fleetplan
from nova_pmem_filters.planner.optimize import master as master_mod
from nova_pmem_filters.planner.optimize import served
from nova_pmem_filters.planner.optimize import tranches
from nova_pmem_filters.planner import patterns
from tests.unit.planner.optimize import base
from tests.unit.planner.optimize import test_nodebound
from tests.unit.planner.optimize import test_oracle


class FleetTestCase(testtools.TestCase):
    """What the test cases below share: the problem and its LP."""

    def generated(self, problem):
        return base.generated(problem)

    def problem(self, **caps):
        scen = base.scenario_of(test_nodebound.WORKLOADS,
                                test_nodebound.CONFIGS,
                                demand=test_nodebound.GROWTH)
        return optimize.build(scen, **caps)


class TranchesTestCase(FleetTestCase):

    def check_fleet(self, problem, master, solution):
        """The fleet's nodes, checked one by one; returns its TCO."""
        x0, s0, _k0, _nvar = solution.layout
        nc, nt = master.nc, master.nt
        nodes = np.array([[solution.x[master._n(ci, t)] for t in range(nt)]
                          for ci in range(nc)])
        self.assertTrue(np.all(nodes == np.round(nodes)))
        self.assertTrue(np.all(np.diff(nodes, axis=1) >= 0))
        served = np.zeros((nt, len(problem.workloads)))
        running = np.zeros((nc, nt))
        for j, (ci, t, counts) in enumerate(master.columns[:s0 - x0]):
            n = solution.x[x0 + j]
            if n < 0.5:
                continue
            self.assertEqual(n, round(n))
            self.assertTrue(patterns.fits(problem.candidates[ci].capacity,
                                          problem.demands, counts))
            served[t] += n * np.array(counts)
            running[ci, t] += n
        self.assertTrue(np.all(running <= nodes))
        for t, period in enumerate(problem.periods):
            for w, name in enumerate(problem.workloads):
                self.assertGreaterEqual(served[t, w], period.vms.get(name, 0))
        last = nodes[:, -1]
        cands = problem.candidates
        if problem.power_kw is not None:
            for t in range(nt):
                self.assertLessEqual(
                    sum(problem.kw(c) * n for c, n in zip(cands, nodes[:, t])),
                    problem.power_kw * (1 + 1e-9))
        if problem.rack_units is not None:
            self.assertLessEqual(
                sum(c.rack_units * n for c, n in zip(cands, last)),
                problem.rack_units)
        tco = sum(c.capex * n for c, n in zip(cands, last)) + sum(
            problem.energy(c, period) * nodes[ci, t]
            for ci, c in enumerate(cands)
            for t, period in enumerate(problem.periods))
        self.assertAlmostEqual(tco, solution.fun, delta=1e-6 * tco)
        return tco

    def test_a_fleet_in_two_periods(self):
        problem = self.problem()
        master, generated = self.generated(problem)
        self.assertTrue(tranches.applies(problem, master))
        solution = tranches.fleet(problem, master, generated.res,
                                  generated.layout,
                                  time.monotonic() + base.LONG, 0.0)
        self.assertIsNotNone(solution)
        tco = self.check_fleet(problem, master, solution)
        optimum = test_oracle.Oracle(problem).best().objective
        self.assertGreaterEqual(tco, optimum * (1 - 1e-9))
        self.assertGreaterEqual(tco, generated.res.fun * (1 - 1e-9))

    def test_the_chosen_configurations_priced_alone(self):
        # Column generation over all the configurations cut short (here,
        # not run); the chosen ones, priced alone, get every pattern their
        # LP needs: its value is that of their LP over every pattern their
        # nodes hold, which the oracle lists.
        problem = self.problem(rack_units=12.0)
        master = base.seeded(problem)
        before = set(master.columns)
        chosen = [0, 2]
        with clock.watch() as cut:
            colgen.price_alone(problem, master, chosen,
                               time.monotonic() + base.LONG, 0.0)
        self.assertEqual([], cut)
        new = set(master.columns) - before
        self.assertTrue(new)
        for ci, _t, counts in new:
            self.assertIn(ci, chosen)
            self.assertTrue(patterns.fits(problem.candidates[ci].capacity,
                                          problem.demands, counts))
        alone = dataclasses.replace(problem, candidates=tuple(
            problem.candidates[ci] for ci in chosen))

        def lp(columns):
            sub = master_mod.Master(alone)
            for column in columns:
                sub.add(*column)
            return float(sub.solve_lp()[0].fun)

        index = {ci: k for k, ci in enumerate(chosen)}
        got = lp((index[ci], t, counts) for ci, t, counts in master.columns
                 if ci in index)
        every = lp((k, t, counts) for k, cand in enumerate(alone.candidates)
                   for counts in test_oracle.node_patterns(
                       cand, problem.demands, cand.limits)
                   for t in range(len(problem.periods)))
        self.assertAlmostEqual(every, got, delta=1e-6 * every)
        # Before, the seed patterns were not enough.
        seed = lp((index[ci], t, counts) for ci, t, counts in before
                  if ci in index)
        self.assertGreater(seed, every * (1 + 1e-3))

    def test_pricing_the_chosen_is_cut_short_by_its_time(self):
        problem = self.problem()
        master = base.seeded(problem)
        seed = len(master.columns)
        with clock.watch() as cut:
            colgen.price_alone(problem, master, [1],
                               time.monotonic() - 1.0, 0.0)
        self.assertIn('column generation', cut)
        self.assertLessEqual({ci for ci, _t, _c in master.columns[seed:]},
                             {1})

    def test_a_fleet_after_column_generation_cut_short(self):
        # The LP of the seed patterns alone: the fleet's configurations
        # are priced before it is sought, and it holds.
        problem = self.problem(rack_units=12.0)
        master = base.seeded(problem)
        res, layout = master.solve_lp()
        solution = tranches.fleet(problem, master, res, layout,
                                  time.monotonic() + base.LONG, 0.0)
        self.assertIsNotNone(solution)
        tco = self.check_fleet(problem, master, solution)
        optimum = test_oracle.Oracle(problem).best(rack_units=12.0)
        self.assertGreaterEqual(tco, optimum.objective * (1 - 1e-9))

    def test_a_fleet_found_on_a_copy(self):
        # The fleet sought beside the bound works on a copy of the master,
        # while the master grows apart: each keeps its own patterns, and
        # the fleet, rebased, is the same one in the master's layout.
        problem = self.problem()
        master, generated = self.generated(problem)
        own = master.copy()
        self.assertEqual(master.layout(), own.layout())
        lone = [0] * len(problem.workloads)
        lone[0] = 1
        self.assertTrue(master.add(0, 0, lone))
        self.assertNotIn((0, 0, tuple(lone)), own.known)
        solution = tranches.fleet(problem, own, generated.res,
                                  generated.layout,
                                  time.monotonic() + base.LONG, 0.0)
        self.assertIsNotNone(solution)
        before = len(master.columns)
        rebased = fleetplan.rebased(problem, solution, own, master)
        self.assertIsNone(fleetplan.rebased(problem, None, own, master))
        self.assertEqual(tuple(master.layout()), tuple(rebased.layout))
        self.assertAlmostEqual(solution.fun, rebased.fun,
                               delta=1e-9 * solution.fun)
        self.assertEqual(self.check_fleet(problem, own, solution),
                         self.check_fleet(problem, master, rebased))

        def runs(sol, of):
            x0, s0, _k0, _nvar = sol.layout
            return sorted((key, sol.x[x0 + j])
                          for j, key in enumerate(of.columns[:s0 - x0])
                          if sol.x[x0 + j] > 0.5)

        self.assertEqual(runs(solution, own), runs(rebased, master))
        # Only the fleet's own patterns joined the master.
        used = {key for key, _n in runs(rebased, master)}
        self.assertLessEqual(set(master.columns[before:]), used)

    def uncapped(self):
        """(problem, master, fleet in tranches) without caps."""
        problem = self.problem()
        master, generated = self.generated(problem)
        solution = tranches.fleet(problem, master, generated.res,
                                  generated.layout,
                                  time.monotonic() + base.LONG, 0.0)
        self.assertIsNotNone(solution)
        return problem, master, solution

    def usage(self, problem, master, solution):
        """(peak kW, rack units) of a fleet, from its node counts."""
        nodes = np.array([[solution.x[master._n(ci, t)]
                           for t in range(master.nt)]
                          for ci in range(master.nc)])
        cands = problem.candidates
        kw = max(sum(problem.kw(c) * n for c, n in zip(cands, nodes[:, t]))
                 for t in range(master.nt))
        return kw, sum(c.rack_units * n for c, n in zip(cands, nodes[:, -1]))

    def test_the_caps_hold(self):
        plain, master, solution = self.uncapped()
        kw, units = self.usage(plain, master, solution)
        # The rack units any fleet needs at least: that cap binds.
        self.assertEqual(
            test_oracle.Oracle(plain).least()['rack_units'], units)
        problem = self.problem(power_kw=kw, rack_units=units)
        master, generated = self.generated(problem)
        capped = tranches.fleet(problem, master, generated.res,
                                generated.layout,
                                time.monotonic() + base.LONG, 0.0)
        self.assertIsNotNone(capped)
        self.check_fleet(problem, master, capped)

    def test_a_fleet_over_a_cap_is_none(self):
        plain, master, solution = self.uncapped()
        kw, units = self.usage(plain, master, solution)
        x0, s0, _k0, _nvar = solution.layout
        runs = [(ci, t, counts, solution.x[x0 + j])
                for j, (ci, t, counts) in enumerate(master.columns[:s0 - x0])
                if solution.x[x0 + j] > 0.5]
        whole = np.array([[solution.x[master._n(ci, t)]
                           for t in range(master.nt)]
                          for ci in range(master.nc)])
        for power, fits in ((kw, True), (0.99 * kw, False)):
            problem = self.problem(power_kw=power, rack_units=units)
            capped = master_mod.Master(problem)
            found = fleetplan.of_runs(problem, capped, whole, runs, 'test')
            self.assertEqual(fits, found is not None, power)

    def test_what_it_serves(self):
        scen = base.scenario_of(test_nodebound.WORKLOADS,
                                test_nodebound.CONFIGS,
                                demand={'redis': 41, 'mysql': 13})
        one = optimize.build(scen)
        self.assertFalse(tranches.applies(one, master_mod.Master(one)))
        capped = optimize.build(scen, rack_units=10.0)
        self.assertTrue(tranches.applies(capped,
                                         master_mod.Master(capped)))
        scen = base.scenario_of(test_nodebound.WORKLOADS,
                                test_nodebound.CONFIGS,
                                demand=test_nodebound.GROWTH)
        vms = optimize.build(scen, objective='vms', budget=1e6)
        self.assertFalse(tranches.applies(vms, master_mod.Master(vms)))

    def test_the_least_budget(self):
        """The cheapest node counts the LP packs onto, by enumeration."""
        scen = base.scenario_of(test_nodebound.WORKLOADS,
                                test_nodebound.CONFIGS,
                                demand={'redis': 41, 'mysql': 13})
        problem = optimize.build(scen)
        master = master_mod.Master(problem)
        colgen.seed(problem, master)
        at_most = [6, 5, 6]
        budget = budgets.least_budget(problem, master, at_most, 10.0)
        self.assertIsNotNone(budget)
        cost = [problem.node_cost(c) for c in problem.candidates]

        def packs(counts):
            return budgets.floor_within(problem, master, dict(
                enumerate(counts))) is not None

        best = min((sum(c * n for c, n in zip(cost, counts)), counts)
                   for counts in np.ndindex(*(k + 1 for k in at_most))
                   if packs(counts))
        got = [budget.get(ci, 0) for ci in range(master.nc)]
        self.assertAlmostEqual(best[0], sum(c * n
                                            for c, n in zip(cost, got)))
        self.assertTrue(all(n <= k for n, k in zip(got, at_most)))
        # The next one (after a budget that did not pack): the cheapest
        # costing more.
        following = budgets.least_budget(
            problem, master, at_most, 10.0,
            above=budgets.cost_of(problem, budget))
        self.assertIsNotNone(following)
        after = min(sum(c * n for c, n in zip(cost, counts))
                    for counts in np.ndindex(*(k + 1 for k in at_most))
                    if sum(c * n for c, n in zip(cost, counts))
                    > best[0] * (1 + 1e-6) and packs(counts))
        self.assertAlmostEqual(after, budgets.cost_of(problem, following))


class ServedTestCase(FleetTestCase):
    """The fleet of whole node counts (vms): its nodes, and the oracle."""

    def test_most_vms_under_a_budget(self):
        least = test_oracle.Oracle(self.problem()).least()['budget']
        problem = self.problem(objective='vms', budget=0.8 * least)
        master, generated = self.generated(problem)
        self.assertTrue(served.applies(problem))
        solution = served.fleet(problem, master,
                                time.monotonic() + base.LONG)
        self.assertIsNotNone(solution)
        x0, s0, _k0, _nvar = solution.layout
        nodes = np.array([[solution.x[master._n(ci, t)]
                           for t in range(master.nt)]
                          for ci in range(master.nc)])
        self.assertTrue(np.all(nodes == np.round(nodes)))
        self.assertTrue(np.all(np.diff(nodes, axis=1) >= 0))
        slots = {}
        for j, (ci, t, counts) in enumerate(master.columns[:s0 - x0]):
            n = solution.x[x0 + j]
            if n > 0.5:
                self.assertTrue(patterns.fits(
                    problem.candidates[ci].capacity, problem.demands,
                    counts))
                for w, a in enumerate(counts):
                    slots[w, ci, t] = slots.get((w, ci, t), 0) + a * n
        total = 0.0
        per_period = {}
        for j, (w, ci, t) in enumerate(master.serve):
            vms = solution.x[s0 + j]
            self.assertLessEqual(vms, slots.get((w, ci, t), 0))
            per_period[w, t] = per_period.get((w, t), 0) + vms
            total += vms
        for (w, t), vms in per_period.items():
            self.assertLessEqual(vms, problem.periods[t].vms.get(
                problem.workloads[w], 0))
        capex = sum(c.capex * n
                    for c, n in zip(problem.candidates, nodes[:, -1]))
        self.assertLessEqual(capex, problem.budget * (1 + 1e-9))
        self.assertAlmostEqual(total, -solution.fun)
        optimum = test_oracle.Oracle(problem).best(
            budget=problem.budget).objective
        self.assertLessEqual(total, optimum + 1e-6)
        self.assertFalse(served.applies(self.problem()))
