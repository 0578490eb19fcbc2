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
"""The fleet optimiser: bounds, optimality and named failures."""

import itertools
import math
import time
from unittest import mock

import testtools

from nova_pmem_filters.planner import errors
from nova_pmem_filters.planner import optimize
from nova_pmem_filters.planner.optimize import clock
from nova_pmem_filters.planner.optimize import colgen
from nova_pmem_filters.planner.optimize import exact
from nova_pmem_filters.planner.optimize import fleetplan
from nova_pmem_filters.planner.optimize import master as master_mod
from nova_pmem_filters.planner.optimize import solver
from nova_pmem_filters.planner import patterns
from tests.unit.planner.optimize import base


class OptimizeTestCase(testtools.TestCase):

    def test_builtin_answer_is_proven_optimal(self):
        problem = optimize.build(base.BUILTIN)
        plan = optimize.solve(problem, scen=base.BUILTIN, time_limit=60)
        self.assertEqual('optimal', plan.status)
        self.assertLessEqual(plan.lp_bound, plan.objective + 1e-6)
        self._check_plan(base.BUILTIN, problem, plan)

    def _check_plan(self, scen, problem, plan):
        """Every node's pattern fits; the demand is served; costs add up."""
        for cand in problem.candidates:
            for period in problem.periods:
                key = (cand.name, period.name)
                running = sum(n for _p, n in plan.runs[key])
                self.assertLessEqual(running, plan.nodes[key])
                for pattern, _n in plan.runs[key]:
                    counts = tuple(pattern[w] for w in problem.workloads)
                    self.assertTrue(patterns.fits(
                        cand.capacity, problem.demands, counts),
                        '%s runs %s, which does not fit' % (key[0], pattern))
                for w in problem.workloads:
                    self.assertLessEqual(plan.vms[key][w],
                                         plan.patterns[key][w])
        if problem.objective == 'tco':
            for period in problem.periods:
                for w in problem.workloads:
                    self.assertGreaterEqual(
                        sum(plan.vms[c.name, period.name][w]
                            for c in problem.candidates),
                        period.vms.get(w, 0))
            self.assertAlmostEqual(
                plan.objective,
                sum(plan.capex.values()) + sum(plan.energy.values()),
                places=4)

    def test_benchmark_scenario_plan_is_feasible_and_bounded(self):
        scen = base.small_benchmark()
        problem = optimize.build(scen)
        plan = optimize.solve(problem, scen=scen, time_limit=60, gap=0.01)
        self._check_plan(scen, problem, plan)
        self.assertLessEqual(plan.lp_bound, plan.objective + 1e-6)
        self.assertLess(plan.gap, 0.01 + 1e-9)
        # Mixing VMs on a node never costs more than one workload per node.
        single = optimize.solve(problem, scen=scen, time_limit=60,
                                generate=False)
        self.assertLessEqual(plan.objective, single.objective + 1e-6)
        # Without generation every node holds one workload.
        for runs in single.runs.values():
            for pattern, _n in runs:
                self.assertEqual(1, sum(1 for v in pattern.values() if v),
                                 pattern)

    def test_generated_plan_is_feasible_and_bounded(self):
        # The path of problems too large to list every pattern: column
        # generation, node budgets, the bound of whole node counts.
        scen = base.fleet_optimize.make_scenario(workloads=6, configs=8,
                                                 seed=2)
        problem = optimize.build(scen)
        plan = optimize.solve(problem, scen=scen, time_limit=120, gap=0.0,
                              every_pattern=False)
        self._check_plan(scen, problem, plan)
        self.assertLessEqual(plan.lp_bound, plan.objective * (1 + 1e-9))
        listed = optimize.solve(problem, scen=scen, time_limit=120,
                                gap=0.0)
        # Whatever each path proves, neither bound passes the other's
        # fleet.
        self.assertLessEqual(plan.lp_bound, listed.objective * (1 + 1e-9))
        self.assertLessEqual(listed.lp_bound, plan.objective * (1 + 1e-9))

    def test_brute_force_agrees(self):
        # Two workloads, one configuration: every fleet of up to 12 nodes
        # and every split of the VMs over them, by enumeration.
        scen, problem = base.brute_force_case()
        cand = problem.candidates[0]
        limits = cand.limits
        fitting = [c for c in itertools.product(
            range(limits[0] + 1), range(limits[1] + 1))
            if any(c) and patterns.fits(cand.capacity, problem.demands, c)]
        best = None
        for nodes in range(1, 13):
            # The most of b a fleet of `nodes` holds with at least 23 of a,
            # by dynamic programming over the nodes.
            reach = {(0, 0)}
            for _ in range(nodes):
                reach = {(min(a + p[0], 23), min(b + p[1], 17))
                         for a, b in reach for p in fitting + [(0, 0)]}
            if (23, 17) in reach:
                best = nodes
                break
        plan = optimize.solve(problem, scen=scen, time_limit=60)
        self.assertEqual(best, plan.nodes['mm-192-512', 'all'])
        per_node = cand.capex + problem.energy(cand, problem.periods[0])
        self.assertAlmostEqual(best * per_node, plan.objective, places=4)

    def test_periods_keep_the_nodes_bought(self):
        scen = base.scenario_of(
            {'redis': {'vcpus': 4, 'ram_gb': 24, 'used_gb': 20,
                       'hot_ratio': 0.2}},
            demand=[{'name': 'y1', 'years': 1, 'vms': {'redis': 100}},
                    {'name': 'y2', 'years': 2, 'vms': {'redis': 60}},
                    {'name': 'y3', 'years': 2, 'vms': {'redis': 300}}])
        problem = optimize.build(scen)
        plan = optimize.solve(problem, scen=scen, time_limit=60)
        self._check_plan(scen, problem, plan)
        for cand in problem.candidates:
            counts = [plan.nodes[cand.name, p.name] for p in problem.periods]
            self.assertEqual(sorted(counts), counts)

    def test_a_workload_no_node_holds_is_named(self):
        scen = base.scenario_of({'huge': {'vcpus': 4, 'ram_gb': 4096,
                                          'used_gb': 4000}},
                                demand={'huge': 3})
        exc = self.assertRaises(errors.Infeasible, optimize.solve,
                                optimize.build(scen), scen=scen)
        self.assertIn('3 huge VMs cannot be met', str(exc))
        self.assertIn('dram-384: memory', str(exc))

    def test_a_cap_too_small_is_named_with_what_it_needs(self):
        scen = base.scenario_of({'redis': {'vcpus': 4, 'ram_gb': 24,
                                           'used_gb': 20, 'hot_ratio': 0.2}},
                                demand={'redis': 200},
                                economics={'budget': 50000, 'rack_units': 100})
        exc = self.assertRaises(errors.Infeasible, optimize.solve,
                                optimize.build(scen), scen=scen)
        self.assertIn('the capex budget of 50000 is too small', str(exc))
        self.assertIn('needs at least', str(exc))
        self.assertNotIn('rack units', str(exc))

    def test_most_vms_under_a_budget(self):
        scen = base.scenario_of({'redis': {'vcpus': 4, 'ram_gb': 24,
                                           'used_gb': 20, 'hot_ratio': 0.2},
                                 'mysql': {'vcpus': 4, 'ram_gb': 32,
                                           'used_gb': 24, 'hot_ratio': 0.3,
                                           'modes': ['dram']}},
                                demand={'redis': 500, 'mysql': 500},
                                economics={'budget': 100000})
        problem = optimize.build(scen, objective='vms')
        plan = optimize.solve(problem, scen=scen, time_limit=60)
        self._check_plan(scen, problem, plan)
        self.assertLessEqual(sum(plan.capex.values()), 100000 + 1e-6)
        served = sum(sum(v.values()) for v in plan.vms.values())
        self.assertEqual(served, plan.objective)
        self.assertGreater(served, 0)
        # No node more could be bought: the budget binds.
        cheapest = min(c.capex for c in problem.candidates)
        self.assertGreater(sum(plan.capex.values()) + cheapest, 100000)
        self.assertLessEqual(plan.objective, plan.lp_bound + 1e-6)
        self.assertTrue(math.isfinite(plan.lp_bound))


class NumaOptimizeTestCase(testtools.TestCase):
    """Patterns count host-wide: NUMA-bound workloads are not planned."""

    WORKLOADS = {
        'redis': {'vcpus': 4, 'ram_gb': 32, 'used_gb': 24},
        'split': {'vcpus': 4, 'ram_gb': 32, 'used_gb': 24,
                  'numa_nodes': 2},
    }

    def test_refused_with_demand(self):
        scen = base.scenario_of(
            self.WORKLOADS, demand={'redis': 10, 'split': 5})
        exc = self.assertRaises(errors.PlannerError, optimize.build, scen)
        self.assertIn('workload split has numa_nodes: 2', str(exc))
        self.assertNotIsInstance(exc, errors.Infeasible)

    def test_in_no_pattern_without_demand(self):
        scen = base.scenario_of(
            self.WORKLOADS, demand={'redis': 30, 'split': 0})
        problem = optimize.build(scen)
        split = problem.workloads.index('split')
        for cand in problem.candidates:
            self.assertEqual(0, cand.limits[split])
            self.assertLess(0, cand.limits[1 - split])
        plan = optimize.solve(problem, scen=scen, time_limit=30)
        for vms in plan.vms.values():
            self.assertEqual(0, vms.get('split', 0))
        self.assertEqual(30, sum(sum(v.values())
                                 for v in plan.vms.values()))


class ExactStageTestCase(testtools.TestCase):
    """The integer program with free nodes in the last seconds."""

    def stage(self, best, left):
        """(exact.solve's calls, what the clock cut) with ``left`` s left."""
        problem = optimize.build(base.BUILTIN)
        master = master_mod.Master(problem)
        colgen.seed(problem, master)
        out = exact.Outcome(exact=False)
        with mock.patch.object(exact, 'solve', return_value=out) as call:
            with clock.watch() as cut:
                try:
                    solver._exact_stage(problem, master, best, 0.0,
                                        time.monotonic() + left, 1e-3,
                                        False, None)
                except errors.Infeasible:
                    # No fleet at hand, and none found.
                    cut.append('infeasible')
        return call, cut

    def test_a_fleet_at_hand_is_not_held_past_the_limit(self):
        # Too little time left to be worth the start: the fleet at hand
        # stays, and the plan says the time limit cut the stage short.
        best = mock.Mock(fun=100.0)
        best.configs.return_value = set()
        call, cut = self.stage(best, 0.5 * solver._EXACT_LEAST_SECONDS)
        self.assertEqual(0, call.call_count)
        self.assertEqual(['the integer program with free nodes'], cut)
        # Time enough: it runs, within the time left.
        call, cut = self.stage(best, 2 * solver._EXACT_LEAST_SECONDS)
        self.assertEqual(1, call.call_count)
        self.assertLessEqual(call.call_args[0][3],
                             2 * solver._EXACT_LEAST_SECONDS)

    def test_without_a_fleet_it_runs_in_the_last_second(self):
        # No fleet yet: it is the last chance of one, given a second.
        call, cut = self.stage(None, 0.5)
        self.assertEqual(1, call.call_count)
        self.assertEqual(1.0, call.call_args[0][3])
        self.assertEqual(['infeasible'], cut)


class ProvenGapTestCase(testtools.TestCase):

    def test_gap(self):
        self.assertEqual(0.5, fleetplan.proven_gap(200.0, 100.0))
        self.assertEqual(0.5, fleetplan.proven_gap(-10.0, -15.0))
        self.assertEqual(0.0, fleetplan.proven_gap(0.0, 0.0))
        # An answer of 0 against a bound above it: no finite share.
        self.assertIsNone(fleetplan.proven_gap(0.0, 1.7))
