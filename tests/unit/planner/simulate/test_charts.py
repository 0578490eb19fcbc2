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
"""The timeline chart: legends beside the data, never over it."""

import functools

import testscenarios
import testtools

from planner import scenario
from planner import simulate
from planner.simulate import charts
from tests.unit.planner.report import base as report_base


@functools.lru_cache(maxsize=None)
def timeline(name):
    """A short replay on two nodes of every configuration of a scenario."""
    scen = scenario.load(name)
    run = simulate.run(scen, nodes={config: 2 for config in scen.configs},
                       days=20)
    return run.result.timeline


class TimelineChartTestCase(testscenarios.WithScenarios,
                            testtools.TestCase):
    """The chart of ``simulate --chart`` and ``report --simulate``."""

    scenarios = [(name, {'name': name}) for name in report_base.SCENARIOS]

    def setUp(self):
        super().setUp()
        self.timeline = timeline(self.name)
        self.fig = charts.timeline_figure(self.timeline, 'title')

    def test_legends_are_outside_the_axes(self):
        # One legend per plot, VMs and shares.
        self.assertEqual(2, len(report_base.legends(self.fig)))
        report_base.assert_legends_outside(self, self.fig)

    def test_legends_name_every_line(self):
        for ax in self.fig.axes:
            self.assertEqual(
                [line.get_label() for line in ax.get_lines()],
                [t.get_text() for t in ax.get_legend().get_texts()])

    def test_png_is_the_figure_and_repeatable(self):
        data = charts.chart_png(self.timeline, 'title')
        report_base.assert_png(self, data)
        self.assertEqual(data, charts.chart_png(self.timeline, 'title'))
        self.assertEqual(data, charts.png(self.fig))
