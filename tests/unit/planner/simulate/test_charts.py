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

from nova_pmem_filters.planner import scenario
from nova_pmem_filters.planner import simulate
from nova_pmem_filters.planner.simulate import charts
from tests.unit.planner.report import base as report_base


@functools.lru_cache(maxsize=None)
def replay(name):
    """A short replay on two nodes of every configuration of a scenario.

    Two nodes hold few of the scenario's demand: Nova refuses boots.
    """
    scen = scenario.load(name)
    return simulate.run(scen, nodes={config: 2 for config in scen.configs},
                        days=20).result


def timeline(name):
    return replay(name).timeline


def _style(line):
    return (line.get_linestyle(), line.get_marker())


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

    def test_legends_are_words_not_column_names(self):
        # It showed memory_util:memory_mode and cache_pressure_max.
        kinds = {c.split(':', 1)[1] for c in self.timeline
                 if c.startswith('vms:')}
        labels = [t.get_text() for ax in self.fig.axes
                  for t in ax.get_legend().get_texts()]
        for label in labels:
            if label not in kinds:
                self.assertNotIn(':', label)
                self.assertNotIn('_', label)
        modes = {c.split(':', 1)[1] for c in self.timeline
                 if c.startswith('memory_util:')}
        self.assertTrue(modes)
        for mode in modes:
            self.assertIn('memory used, %s nodes' % charts.MODE_WORDS[mode],
                          labels)

    def test_all_nodes_does_not_hide_a_kind(self):
        # The total was drawn over the line of a fleet of one kind, in
        # the same style: one line showed, under "all".
        top = self.fig.axes[0]
        lines = {line.get_label(): line for line in top.get_lines()}
        total = lines.pop(charts.ALL_NODES)
        kinds = [line for label, line in lines.items()
                 if label != charts.REFUSED]
        self.assertTrue(kinds)
        for line in kinds:
            self.assertNotEqual(_style(total), _style(line),
                                line.get_label())

    def test_refused_boots_are_plotted(self):
        result = replay(self.name)
        refused = sum(sum(by.values()) for by in result.rejected.values())
        self.assertGreater(refused, 0)
        lines = {line.get_label(): line
                 for line in self.fig.axes[0].get_lines()}
        self.assertIn(charts.REFUSED, lines)
        ydata = list(lines[charts.REFUSED].get_ydata())
        # Cumulative: never down, and at the end every boot refused.
        self.assertEqual(sorted(ydata), ydata)
        self.assertEqual(refused, ydata[-1])
