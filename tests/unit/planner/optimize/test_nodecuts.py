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
"""The bound of whole node counts: every cut and bound against the oracle."""

import time

import hypothesis
from hypothesis import strategies as st
import numpy as np
import testtools

from nova_pmem_filters.planner.optimize import nodecuts
from tests.unit.planner.optimize import test_budgets
from tests.unit.planner.optimize import test_oracle


class CutTestCase(testtools.TestCase):
    """No cut removes a fleet that holds the demand."""

    @test_oracle.PROPERTY
    @hypothesis.given(test_oracle.scenarios(periods=(1,)), st.data())
    def test_cuts_keep_every_fleet_that_holds_the_demand(self, raw, data):
        problem, oracle, _answer, master = test_budgets.with_optimum(raw)
        fleet = data.draw(st.sampled_from(oracle.box))
        counts = {ci: n for ci, n in enumerate(fleet) if n}
        status, cut = nodecuts.separate(
            problem, master, counts, time.monotonic() + test_budgets.LONG)
        holds = oracle.served[0][fleet] == sum(oracle.demand[0])
        if holds:
            self.assertNotEqual('cut', status, fleet)
        if status != 'cut':
            return
        bound = nodecuts.Bound(problem, master, 0.0)
        bound.add(*cut)
        upper, rhs = bound.cuts[0]
        # The fleet it was asked about breaks it; none that holds the
        # demand does.
        self.assertLess(float(np.dot(upper, fleet)), rhs)
        for other in oracle.covering():
            self.assertGreaterEqual(float(np.dot(upper, other)),
                                    rhs * (1 - 1e-9) - 1e-9, other)


class RaiseBoundTestCase(testtools.TestCase):
    """The bound never passes the optimum, and never falls."""

    @hypothesis.settings(test_oracle.PROPERTY, max_examples=30)
    @hypothesis.given(test_oracle.scenarios(periods=(1,)))
    def test_below_the_optimum(self, raw):
        problem, oracle, answer, master = test_budgets.with_optimum(raw)
        res, _layout = master.solve_lp()
        duals = -res.ineqlin.marginals
        pi = [max(0.0, duals[master.demand_row[w, 0]])
              for w in range(len(problem.workloads))]
        found = []
        start = 0.5 * answer.tco
        bound = nodecuts.raise_bound(
            problem, master, None, start, pi,
            time.monotonic() + test_budgets.LONG, 0.0,
            lambda fleet, tco: found.append(tco))
        self.assertGreaterEqual(bound, start)
        self.assertLessEqual(bound, answer.tco * (1 + 1e-9))
        for tco in found:
            self.assertGreaterEqual(tco, answer.tco * (1 - 1e-9))
