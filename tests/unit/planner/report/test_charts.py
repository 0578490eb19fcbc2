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
"""The report's charts: legends beside the data, never over it."""

import testscenarios
import testtools

from nova_pmem_filters.planner import report
from nova_pmem_filters.planner import scenario
from nova_pmem_filters.planner import tables
from tests.unit.planner.report import base


class LegendTestCase(testscenarios.WithScenarios, testtools.TestCase):
    """Every chart of the report with a legend keeps it off the data area.

    Checked on the figure each chart's PNG is saved from, once it is drawn
    (its layout places legends and axes at draw time).
    """

    scenarios = [(name, {'name': name}) for name in base.SCENARIOS]

    def test_legends_are_outside_the_axes(self):
        scen = scenario.load(self.name)
        comparison = tables.comparison(scen)
        with_legend = []
        for spec in report.CHARTS:
            fig = spec.draw(comparison, scen.baseline)
            if base.legends(fig):
                with_legend.append(spec.name)
            base.assert_legends_outside(self, fig)
        # The bar charts name their configurations, binding its resources.
        self.assertEqual([spec.name for spec in report.CHARTS], with_legend)
