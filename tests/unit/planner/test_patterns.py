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
"""Node patterns: every pattern fits one node, and none is missed."""

import hypothesis
from hypothesis import strategies as st
import testtools

from nova_pmem_filters.core.formats import scenario_sections as sec
from nova_pmem_filters.planner import model
from nova_pmem_filters.planner import patterns
from nova_pmem_filters.planner.scenario import loading
from nova_pmem_filters.planner import vmsizing
from tests.unit.planner.optimize import base


class PatternTestCase(testtools.TestCase):

    @base.PROPERTY
    @hypothesis.given(
        config=st.sampled_from(sorted(base.BUILTIN.configs)),
        vcpus=st.integers(min_value=1, max_value=32),
        ram_gb=st.integers(min_value=1, max_value=256),
        used=st.floats(min_value=0.1, max_value=1.0),
        hot=st.sampled_from(['0.05', '0.2', '0.5', '1']))
    def test_single_limit_is_the_model_density(self, config, vcpus, ram_gb,
                                               used, hot):
        w = loading._build_workload('w', sec.Workload(
            vcpus=vcpus, ram_gb=ram_gb,
            used_gb=round(ram_gb * used, 2) or 0.01,
            hot_ratio=float(hot)), 'test')
        node = model.node(base.BUILTIN.configs[config], base.BUILTIN.policies)
        cap = patterns.Capacity.of(node, base.BUILTIN.policies)
        vms, _binding = vmsizing.density(node, w, base.BUILTIN.policies)
        self.assertEqual(vms, patterns.single_limit(
            cap, patterns.Demand.of(w)))
        if vms:
            counts = (vms,)
            self.assertTrue(patterns.fits(cap, (patterns.Demand.of(w),),
                                          counts))
            self.assertFalse(patterns.fits(cap, (patterns.Demand.of(w),),
                                           (vms + 1,)))
