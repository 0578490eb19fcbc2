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
"""Every maximal pattern listed, and the exact integer program over them."""

import dataclasses

import fixtures
import hypothesis
import testtools

from nova_pmem_filters.planner import optimize
from nova_pmem_filters.planner.optimize import complete
from nova_pmem_filters.planner import patterns
from tests.unit.planner.optimize import base
from tests.unit.planner.optimize import test_oracle


class MaximalTestCase(testtools.TestCase):
    """patterns.maximal against the oracle's own scan of the node model."""

    @base.PROPERTY
    @hypothesis.given(test_oracle.scenarios())
    def test_the_oracles_maximal_patterns(self, raw):
        problem = optimize.build(base.scenario_of(**raw))
        use = range(len(problem.workloads))
        for cand in problem.candidates:
            box = 1
            for limit in cand.limits[:-1]:
                box *= limit + 1
            hypothesis.assume(box <= 20000)
            listed = patterns.maximal(cand.capacity, problem.demands,
                                      cand.limits, use,
                                      patterns.Budget(10 ** 7, 10 ** 6))
            scanned = test_oracle.node_patterns(cand, problem.demands,
                                                cand.limits)
            # The oracle's scan keeps a node holding nothing.
            self.assertEqual(sorted(v for v in scanned if any(v)),
                             sorted(listed), cand.name)
            for counts in listed:
                self.assertTrue(patterns.fits(cand.capacity,
                                              problem.demands, counts))

    def test_the_budget_stops_the_listing(self):
        problem = optimize.build(base.small_benchmark())
        cand = problem.candidates[0]
        use = range(len(problem.workloads))
        found = patterns.maximal(cand.capacity, problem.demands,
                                 cand.limits, use,
                                 patterns.Budget(10 ** 7, 10 ** 6))
        self.assertGreater(len(found), 2)
        self.assertRaises(patterns.TooMany, patterns.maximal,
                          cand.capacity, problem.demands, cand.limits, use,
                          patterns.Budget(10 ** 7, len(found) - 1))
        self.assertRaises(patterns.TooMany, patterns.maximal,
                          cand.capacity, problem.demands, cand.limits, use,
                          patterns.Budget(3, 10 ** 6))


class ListingTestCase(testtools.TestCase):

    def test_one_listing_per_shape(self):
        problem = optimize.build(base.small_benchmark())
        twin = dataclasses.replace(problem.candidates[0], name='twin',
                                   capex=problem.candidates[0].capex * 2)
        problem = dataclasses.replace(
            problem, candidates=problem.candidates + (twin,))
        pool = complete.listing(problem)
        self.assertIs(pool[0], pool[len(problem.candidates) - 1])

    def test_workloads_without_demand_get_no_slots(self):
        scen = base.small_benchmark()
        problem = optimize.build(scen)
        idle = problem.workloads[0]
        period = dataclasses.replace(problem.periods[0], vms=dict(
            problem.periods[0].vms, **{idle: 0}))
        pool = complete.listing(dataclasses.replace(problem,
                                                    periods=(period,)))
        for found in pool.values():
            for counts in found:
                self.assertEqual(0, counts[0])

    def test_too_many_patterns_generate_columns(self):
        scen = base.small_benchmark()
        problem = optimize.build(scen)
        listed = optimize.solve(problem, scen=scen, time_limit=base.LONG,
                                gap=0.0)
        self.assertEqual(0, listed.rounds)
        self.assertEqual('optimal', listed.status)
        self.useFixture(fixtures.MonkeyPatch(
            'nova_pmem_filters.planner.optimize.complete.MAX_PATTERNS', 5))
        self.assertIsNone(complete.listing(problem))
        # Whatever the time limit lets it find or prove, it holds.
        generated = optimize.solve(problem, scen=scen, time_limit=10,
                                   gap=1e-3)
        self.assertGreater(generated.rounds, 0)
        # The proven optimum bounds the other path's fleet; both bounds
        # are below both fleets.
        self.assertGreaterEqual(generated.objective,
                                listed.objective * (1 - 1e-9))
        self.assertLessEqual(generated.lp_bound,
                             listed.objective * (1 + 1e-9))
        self.assertLessEqual(listed.lp_bound,
                             generated.objective * (1 + 1e-9))


class SmallProblemsTestCase(testtools.TestCase):
    """The benchmark's small problems: 3 workloads, 4 configurations."""

    def test_proven_optimal(self):
        for seed in (1, 2, 5):
            scen = base.fleet_optimize.make_scenario(workloads=3, configs=4,
                                                     seed=seed)
            problem = optimize.build(scen)
            plan = optimize.solve(problem, scen=scen, time_limit=base.LONG,
                                  gap=0.0)
            self.assertEqual('optimal', plan.status, seed)
            self.assertLessEqual(plan.gap, 1e-6)
            # Never better than what the proof says is the least.
            self.assertLessEqual(plan.lp_bound,
                                 plan.objective * (1 + 1e-9))
            generated = optimize.solve(problem, scen=scen, time_limit=5,
                                       gap=1e-3, every_pattern=False)
            self.assertGreaterEqual(generated.objective,
                                    plan.objective * (1 - 1e-9), seed)
