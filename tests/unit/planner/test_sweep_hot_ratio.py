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
"""The sweep's hot ratios: written as the core writes them, read back.

A variant's workloads carry the ratio as flavor extra specs (what
``nova-config`` would set); the text must be one the core's grammar
accepts (no exponent: ``repr(1e-05)`` is ``1e-05``) and read back as the
ratio the variant plans with.
"""

import hypothesis
from hypothesis import strategies as st
import testtools

from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.planner import scenario
from nova_pmem_filters.planner import sweep
from tests.unit import hypo


class SweepHotRatioTestCase(testtools.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.scen = scenario.parse(*scenario.read_text('telco-cost-matched'))

    def assertWritten(self, ratio):
        variant = sweep.variant(self.scen, sweep.Point(hot_ratio=ratio))
        self.assertEqual(set(self.scen.workloads), set(variant.workloads))
        for name, workload in variant.workloads.items():
            text = workload.extra_specs[extra_specs.HOT_RATIO_KEY]
            # Raises if the grammar (and so nova-api) refuses it.
            extra_specs.validate(extra_specs.HOT_RATIO_KEY, text)
            self.assertEqual(extra_specs.format_hot_ratio(ratio), text)
            request = extra_specs.parse(workload.extra_specs)
            self.assertEqual(float(ratio), request.hot_ratio, name)
            self.assertEqual(request.hot_ratio, workload.request.hot_ratio)

    def test_small_and_whole_ratios(self):
        for ratio in (1e-05, 5e-324, 0.1 + 0.2, 0.25, 1.0, 1):
            self.assertWritten(ratio)
        variant = sweep.variant(self.scen, sweep.Point(hot_ratio=1e-05))
        self.assertEqual({'0.00001'}, {
            w.extra_specs[extra_specs.HOT_RATIO_KEY]
            for w in variant.workloads.values()})

    @hypo.settings(200)
    @hypothesis.given(st.floats(min_value=0.0, max_value=1.0,
                                exclude_min=True))
    def test_never_a_ratio_the_grammar_refuses(self, ratio):
        self.assertWritten(ratio)

    def test_every_point_of_a_grid(self):
        for point in sweep.grid(hot_ratios=[1e-06, 0.5, 1.0],
                                power_prices=[0.1]):
            self.assertWritten(point.hot_ratio)
