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
"""The HTML page: self-contained, every chart inlined, every value formatted.
"""

import base64

import testscenarios
import testtools

from nova_pmem_filters.planner.population import common
from nova_pmem_filters.planner import report
from nova_pmem_filters.planner import tables
from tests.unit.planner.report import base


class HtmlTestCase(testtools.TestCase):
    """The HTML page of the built-in scenario."""

    def setUp(self):
        super().setUp()
        self.scen, artifacts = base.builtin()
        self.html = artifacts[-1].data.decode('utf-8')
        self.page = base.Page(self.html)
        self.comparison = tables.comparison(self.scen)

    def test_html_is_the_last_artifact(self):
        _, artifacts = base.builtin()
        self.assertEqual(
            base.CHART_FILES + [report.HTML_NAME], [a.name for a in artifacts])
        self.assertEqual(['png'] * len(base.CHART_FILES) + ['html'],
                         [a.kind for a in artifacts])

    def test_no_external_resources(self):
        for tag, attr, value in self.page.links:
            self.assertFalse(
                value.lower().startswith(('http://', 'https://', '//')),
                '%s %s=%s' % (tag, attr, value[:80]))
            if tag == 'a':
                self.assertTrue(value.startswith('#'), value)
        for tag in ('script', 'link', 'iframe', 'object', 'embed'):
            self.assertNotIn(tag, self.page.tags)
        self.assertNotIn('@import', self.html)
        self.assertNotIn('url(', self.html)

    def test_every_image_is_an_embedded_png(self):
        self.assertEqual(len(report.CHARTS), len(self.page.images))
        for src in self.page.images:
            self.assertTrue(src.startswith(base.DATA_PNG), src[:40])
            base.assert_png(self, base64.b64decode(src[len(base.DATA_PNG):],
                                                   validate=True))

    def test_embedded_charts_are_the_png_files(self):
        _, artifacts = base.builtin()
        pngs = [a.data for a in artifacts if a.kind == 'png']
        self.assertEqual(pngs, [base64.b64decode(src[len(base.DATA_PNG):])
                                for src in self.page.images])

    def test_scenario_name_and_description(self):
        self.assertIn(self.scen.name, self.page.text('warnings') +
                      self.html)
        self.assertIn('<title>PMem capacity report: telco-cost-matched',
                      self.html)
        self.assertIn('Cost-matched 384 GB DRAM node', self.html)

    def test_every_config_and_workload(self):
        rows = self.page.rows('comparison-table')
        self.assertEqual(
            {(c, w) for c in self.scen.configs for w in self.scen.workloads},
            {(row[0], row[1]) for row in rows})

    def test_comparison_table_is_tables_comparison(self):
        rows = self.page.rows('comparison-table')
        self.assertEqual(
            [report.COMPARISON_HEADINGS[c] for c in self.comparison.columns],
            self.page.tables['comparison-table'][0])
        self.assertEqual(len(self.comparison), len(rows))
        for got, want in zip(rows, self.comparison.itertuples(
                index=False, name=None)):
            expected = [report.format_value(v, c)
                        for c, v in zip(self.comparison.columns, want)]
            if expected[-1]:
                expected[-1] = '\u26a0 ' + expected[-1]
            self.assertEqual(expected, got)

    def test_published_densities(self):
        # The published case: hosts that run one workload each.
        for workload, (dram, mm) in base.PUBLISHED_VMS.items():
            got = {(row['config'], row['workload']): row['vms_per_node']
                   for row in tables.comparison_rows(
                       self.scen, workloads=[workload])}
            self.assertEqual(dram, got[('dram-384', workload)])
            self.assertEqual(mm, got[('mm-192-512', workload)])

    def test_cost_and_power_numbers(self):
        # The page plans both workloads on each configuration's hosts.
        text = ' '.join(' '.join(row) for row in self.page.rows(
            'comparison-table'))
        for value in ('982.29', '616.00', '26.82', '38.31', '13,752.00',
                      '11,704.00', '-14.9%', 'shared_ratio'):
            self.assertIn(value, text)
        mysql = {row['config']: row['cost_per_vm'] for row in
                 tables.comparison_rows(self.scen, workloads=['mysql'])}
        self.assertEqual({'dram-384': 916.8, 'mm-192-512': 585.2}, mysql)

    def test_population_warnings_are_prominent(self):
        findings = tables.findings_by_config(self.scen)
        warned = [(name, f) for name, found in findings.items()
                  for f in common.warnings(found)]
        self.assertIn('mm-ratio', [f.code for _, f in warned])
        text = self.page.text('warnings')
        for name, finding in warned:
            self.assertIn(name, text)
            self.assertIn(finding.code, text)
            self.assertIn(finding.message, text)
        self.assertIn('1:2.7', text)
        # Before every table: it is the first section of the page.
        self.assertEqual('warnings', next(iter(self.page.sections)))
        self.assertIn('class="warnings"', self.html)

    def test_warning_marks_comparison_rows(self):
        for row in self.page.rows('comparison-table'):
            if row[0] == 'mm-192-512':
                self.assertEqual('\u26a0 mm-ratio', row[-1])
            else:
                self.assertEqual('', row[-1])

    def test_calibration_table(self):
        rows = {row[0]: row for row in self.page.rows('calibration-table')}
        frame = tables.calibration(self.scen)
        self.assertEqual(set(frame['workload']), set(rows))
        # The page shows the gain once, as node_gain.
        columns = [c for c in frame.columns if c != 'published_gain']
        self.assertEqual(len(columns), len(rows['redis']))
        for record in frame.to_dict('records'):
            row = rows[record['workload']]
            for column in ('node_gain', 'baseline_vms', 'config_vms',
                           't_hit', 'model_gain'):
                self.assertEqual(
                    report.format_value(record[column], column),
                    row[columns.index(column)], column)
        self.assertEqual('1.100', rows['redis'][columns.index(
            'node_gain')])
        self.assertEqual('0.8105', rows['redis'][columns.index('t_hit')])

    def test_assumptions(self):
        rows = {row[0]: row[1] for row in self.page.rows('policies-table')}
        self.assertEqual('0.9', rows['memory_cap'])
        self.assertEqual('0 GB', rows['host_reserve_gb'])
        self.assertEqual('1', rows['cpu_overcommit'])
        self.assertEqual('1', rows['cache_overcommit'])
        self.assertEqual('90 ns', rows['dram_latency_ns'])
        self.assertEqual('350 ns', rows['pmem_latency_ns'])
        workloads = {row[0]: row
                     for row in self.page.rows('workloads-table')}
        self.assertEqual(set(self.scen.workloads), set(workloads))

    def test_sources_of_prices_and_watts(self):
        rows = {(row[0], row[1]): row
                for row in self.page.rows('sources-table')}
        catalog = self.scen.catalog
        used = {('platform', 'purley-2s'), ('platform', 'cascade-lake-2s'),
                ('CPU', 'xeon-gold-6148'), ('CPU', 'xeon-gold-6230n'),
                ('DIMM', 'ddr4-16'), ('DIMM', 'pmem100-128')}
        self.assertEqual(used, set(rows))
        dimm = catalog.dimms['pmem100-128']
        self.assertEqual([dimm.price_source, dimm.watts_source],
                         [rows[('DIMM', 'pmem100-128')][4],
                          rows[('DIMM', 'pmem100-128')][6]])
        cpu = catalog.cpus['xeon-gold-6230n']
        self.assertTrue(cpu.price_source)
        self.assertEqual([cpu.price_source, cpu.watts_source],
                         [rows[('CPU', 'xeon-gold-6230n')][4],
                          rows[('CPU', 'xeon-gold-6230n')][6]])
        plat = catalog.platforms['purley-2s']
        self.assertTrue(plat.base_cost_source)
        self.assertEqual([plat.base_cost_source, plat.base_watts_source],
                         [rows[('platform', 'purley-2s')][4],
                          rows[('platform', 'purley-2s')][6]])
        self.assertIn('dram-384 (24)', rows[('DIMM', 'ddr4-16')][2])
        self.assertIn('mm-192-512 (12)', rows[('DIMM', 'ddr4-16')][2])


class StructureTestCase(testscenarios.WithScenarios, testtools.TestCase):
    """Ids are unique and every in-page link lands.

    Whatever the report holds: each built-in scenario, with and without
    --simulate.
    """

    scenarios = [('%s%s' % (name, ', simulated' if simulated else ''),
                  {'name': name, 'simulated': simulated})
                 for name in base.SCENARIOS for simulated in (False, True)]

    def setUp(self):
        super().setUp()
        self.html = base.written_html(self.name, self.simulated)
        self.page = base.Structure(self.html)

    def test_ids_are_unique(self):
        self.assertEqual([], self.page.duplicate_ids())

    def test_in_page_links_land_on_an_id(self):
        self.assertTrue(self.page.anchors)
        self.assertEqual([], self.page.broken_anchors())

    def test_every_element_is_closed_in_order(self):
        self.assertEqual([], self.page.problems)

    def test_sections_and_tables(self):
        # What a script finds by id: the nav's sections and their tables.
        sections = ['warnings', 'summary', 'comparison', 'charts',
                    'calibration', 'configs', 'assumptions', 'sources']
        tables = ['summary-table', 'comparison-table', 'configs-table',
                  'policies-table', 'workloads-table', 'sources-table']
        if self.simulated:
            sections.append('simulation')
            tables.append('simulation-table')
        for wanted in sections + tables:
            self.assertEqual(1, self.page.ids[wanted], wanted)


class StructureCheckTestCase(testtools.TestCase):
    """The structure check itself finds what it is meant to."""

    def test_finds_duplicates_broken_links_and_unclosed_tables(self):
        page = base.Structure(
            '<nav><a href="#a">a</a><a href="#gone">x</a></nav>'
            '<section id="a"><table id="a"><tr><td>1</td></tr></section>'
            '<img src="x.png" alt="">')
        self.assertEqual(['a'], page.duplicate_ids())
        self.assertEqual(['gone'], page.broken_anchors())
        self.assertIn('</section> at line 1', page.problems[0])
        self.assertIn('closes <table>', page.problems[0])
        self.assertIn('<table> at line 1', page.problems[-1])
        self.assertIn('is not closed', page.problems[-1])


class FormatTestCase(testtools.TestCase):

    def test_values(self):
        self.assertEqual('14', report.format_value(14))
        self.assertEqual('13,752.00', report.format_value(13752.0,
                                                          'node_cost'))
        self.assertEqual('384', report.format_value(384.0))
        self.assertEqual('26.82', report.format_value(26.82))
        self.assertEqual('1.100', report.format_value(
            1.1, 'relative_throughput'))
        self.assertEqual('n/a', report.format_value(float('nan')))
        self.assertEqual('', report.format_value(None))
        self.assertEqual('+0.0%', report.format_value('+0.0%'))
