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
"""Node budgets: the packing decision against the oracle; fleets checked."""

import time

import hypothesis
from hypothesis import strategies as st
import numpy as np
import testtools

from nova_pmem_filters.planner import optimize
from nova_pmem_filters.planner.optimize import budgets
from nova_pmem_filters.planner.optimize import colgen
from nova_pmem_filters.planner.optimize import master as master_mod
from nova_pmem_filters.planner import patterns
from tests.unit.planner.optimize import base
from tests.unit.planner.optimize import test_oracle


LONG = base.LONG


def one_period(raw):
    """The problem of a drawn scenario in one period, and its oracle."""
    raw = dict(raw)
    if isinstance(raw['demand'], list):
        raw['demand'] = raw['demand'][-1]['vms']
    problem = optimize.build(base.scenario_of(**raw))
    try:
        oracle = test_oracle.Oracle(problem)
    except ValueError:
        hypothesis.reject()
    return problem, oracle


def with_optimum(raw):
    """(problem, oracle, its optimum, a master with its first patterns)."""
    problem, oracle = one_period(raw)
    answer = oracle.best()
    hypothesis.assume(answer is not None and answer.tco > 0)
    master = master_mod.Master(problem)
    colgen.seed(problem, master)
    return problem, oracle, answer, master


class PackTestCase(testtools.TestCase):
    """Whether a budget of nodes holds the demand: the oracle decides."""

    @test_oracle.PROPERTY
    @hypothesis.given(test_oracle.scenarios(periods=(1,)), st.data())
    def test_packs_exactly_the_budgets_that_hold_the_demand(self, raw,
                                                            data):
        problem, oracle = one_period(raw)
        fleet = data.draw(st.sampled_from(oracle.box))
        rest = np.array(oracle.demand[0])
        left = {ci: n for ci, n in enumerate(fleet)}
        nodes = budgets.pack(problem, rest, left, LONG)
        holds = oracle.served[0][fleet] == sum(oracle.demand[0])
        self.assertEqual(holds, nodes is not None,
                         'fleet %s, nodes %s' % (fleet, nodes))
        if nodes is None:
            return
        served = np.zeros(len(rest), dtype=int)
        for ci, counts in nodes:
            self.assertTrue(patterns.fits(problem.candidates[ci].capacity,
                                          problem.demands, counts))
            served += np.array(counts)
        self.assertTrue(np.all(served >= rest), (served, rest))
        for ci, n in left.items():
            self.assertLessEqual(sum(1 for c, _n in nodes if c == ci), n)


class FleetWithinTestCase(testtools.TestCase):
    """A fleet within a budget of cost is whole, feasible and no dearer."""

    @hypothesis.settings(test_oracle.PROPERTY, max_examples=25)
    @hypothesis.given(test_oracle.scenarios(periods=(1,)),
                      st.sampled_from([0.0, 1e-3, 0.01, 0.05]))
    def test_never_dearer_than_asked_nor_below_the_optimum(
            self, raw, share):
        problem, oracle, answer, master = with_optimum(raw)
        most = answer.tco * (1 + share)
        out = budgets.fleet_within(problem, master, most,
                                   time.monotonic() + LONG)
        if out is None:
            return
        fleet, tco = out
        self.assertLessEqual(tco, most * (1 + 1e-9))
        self.assertGreaterEqual(tco, answer.tco * (1 - 1e-9))
        served = np.zeros(len(problem.workloads), dtype=int)
        for (ci, counts), n in fleet.items():
            self.assertTrue(patterns.fits(problem.candidates[ci].capacity,
                                          problem.demands, counts))
            served += n * np.array(counts)
        self.assertTrue(np.all(served >= np.array(oracle.demand[0])))
