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
"""The capacity report: self-contained HTML, PNG charts, atomic files.

The built-in scenario is the field notes' section 1 case: 14 and 19 Redis
VMs, 15 and 20 MySQL VMs per node, and a Memory-Mode configuration whose
DRAM:PMem ratio (1:2.7) draws a population warning.
"""

import base64
import functools
import html.parser
import io
import json
import os

import fixtures
from matplotlib import image
import testtools

from planner import population
from planner import report
from planner import scenario
from planner import tables
from tests.unit import clitools

PNG_SIGNATURE = b'\x89PNG\r\n\x1a\n'
DATA_PNG = 'data:image/png;base64,'

# Field notes, section 1: VMs per node on (the DRAM node, the MM node).
PUBLISHED_VMS = {'redis': (14, 19), 'mysql': (15, 20)}
CHART_FILES = [spec.name for spec in report.CHARTS]


@functools.lru_cache(maxsize=None)
def builtin():
    """The built-in scenario and its rendered report (rendered once)."""
    scen = scenario.load()
    return scen, tuple(report.build(scen))


class Page(html.parser.HTMLParser):
    """What a test needs of a report page: links, images, tables, text."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.tags = []
        self.links = []
        self.images = []
        self.tables = {}
        self.sections = {}
        self._rows = None
        self._row = None
        self._cell = None
        self._section = None
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append(tag)
        for name in ('src', 'href', 'srcset', 'action', 'data', 'poster'):
            if name in attrs:
                self.links.append((tag, name, attrs[name] or ''))
        if tag == 'img':
            self.images.append(attrs.get('src') or '')
        elif tag == 'table':
            self._rows = self.tables.setdefault(attrs.get('id'), [])
        elif tag == 'tr' and self._rows is not None:
            self._row = []
            self._rows.append(self._row)
        elif tag in ('td', 'th') and self._row is not None:
            self._cell = []
        elif tag == 'section':
            self._section = attrs.get('id')
            self.sections[self._section] = []

    def handle_endtag(self, tag):
        if tag in ('td', 'th') and self._cell is not None:
            self._row.append(''.join(self._cell).strip())
            self._cell = None
        elif tag == 'table':
            self._rows = None
        elif tag == 'section':
            self._section = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if self._section is not None:
            self.sections[self._section].append(data)

    def text(self, section):
        return ' '.join(''.join(self.sections[section]).split())

    def rows(self, table_id):
        """Data rows of a table, without its heading row."""
        return self.tables[table_id][1:]


def assert_png(test, data):
    test.assertTrue(data.startswith(PNG_SIGNATURE), data[:16])
    pixels = image.imread(io.BytesIO(data), format='png')
    test.assertGreater(pixels.shape[0], 100)
    test.assertGreater(pixels.shape[1], 100)


class HtmlTestCase(testtools.TestCase):
    """The HTML page of the built-in scenario."""

    def setUp(self):
        super().setUp()
        self.scen, artifacts = builtin()
        self.html = artifacts[-1].data.decode('utf-8')
        self.page = Page(self.html)
        self.comparison = tables.comparison(self.scen)

    def test_html_is_the_last_artifact(self):
        _, artifacts = builtin()
        self.assertEqual(
            CHART_FILES + [report.HTML_NAME], [a.name for a in artifacts])
        self.assertEqual(['png'] * len(CHART_FILES) + ['html'],
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
            self.assertTrue(src.startswith(DATA_PNG), src[:40])
            assert_png(self, base64.b64decode(src[len(DATA_PNG):],
                                              validate=True))

    def test_embedded_charts_are_the_png_files(self):
        _, artifacts = builtin()
        pngs = [a.data for a in artifacts if a.kind == 'png']
        self.assertEqual(pngs, [base64.b64decode(src[len(DATA_PNG):])
                                for src in self.page.images])

    def test_scenario_name_and_description(self):
        self.assertIn(self.scen.name, self.page.text('warnings') +
                      self.html)
        self.assertIn('<title>PMem capacity report: telco-cost-matched',
                      self.html)
        self.assertIn('Cost-matched 384 GB DRAM node', self.html)

    def test_every_config_and_workload(self):
        rows = self.page.rows('comparison')
        self.assertEqual(
            {(c, w) for c in self.scen.configs for w in self.scen.workloads},
            {(row[0], row[1]) for row in rows})

    def test_comparison_table_is_tables_comparison(self):
        rows = self.page.rows('comparison')
        self.assertEqual(
            [report.COMPARISON_HEADINGS[c] for c in self.comparison.columns],
            self.page.tables['comparison'][0])
        self.assertEqual(len(self.comparison), len(rows))
        for got, want in zip(rows, self.comparison.itertuples(
                index=False, name=None)):
            expected = [report.format_value(v, c)
                        for c, v in zip(self.comparison.columns, want)]
            if expected[-1]:
                expected[-1] = '\u26a0 ' + expected[-1]
            self.assertEqual(expected, got)

    def test_published_densities(self):
        columns = list(self.comparison.columns)
        vms = columns.index('vms_per_node')
        got = {(row[0], row[1]): row[vms]
               for row in self.page.rows('comparison')}
        for workload, (dram, mm) in PUBLISHED_VMS.items():
            self.assertEqual(str(dram), got[('dram-384', workload)])
            self.assertEqual(str(mm), got[('mm-192-512', workload)])

    def test_cost_and_power_numbers(self):
        text = ' '.join(' '.join(row) for row in self.page.rows(
            'comparison'))
        for value in ('982.29', '616.00', '916.80', '585.20', '26.82',
                      '38.31', '13,752.00', '11,704.00', '-14.9%'):
            self.assertIn(value, text)

    def test_population_warnings_are_prominent(self):
        findings = tables.findings_by_config(self.scen)
        warned = [(name, f) for name, found in findings.items()
                  for f in population.warnings(found)]
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
        for row in self.page.rows('comparison'):
            if row[0] == 'mm-192-512':
                self.assertEqual('\u26a0 mm-ratio', row[-1])
            else:
                self.assertEqual('', row[-1])

    def test_calibration_table(self):
        rows = {row[0]: row for row in self.page.rows('calibration')}
        frame = tables.calibration(self.scen)
        self.assertEqual(set(frame['workload']), set(rows))
        columns = list(frame.columns)
        for record in frame.to_dict('records'):
            row = rows[record['workload']]
            for column in ('published_gain', 'baseline_vms', 'config_vms',
                           't_hit', 'model_gain'):
                self.assertEqual(
                    report.format_value(record[column], column),
                    row[columns.index(column)], column)
        self.assertEqual('1.100', rows['redis'][columns.index(
            'published_gain')])
        self.assertEqual('0.8105', rows['redis'][columns.index('t_hit')])

    def test_assumptions(self):
        rows = {row[0]: row[1] for row in self.page.rows('policies')}
        self.assertEqual('0.9', rows['memory_cap'])
        self.assertEqual('0 GB', rows['host_reserve_gb'])
        self.assertEqual('1', rows['cpu_overcommit'])
        self.assertEqual('1', rows['cache_overcommit'])
        self.assertEqual('90 ns', rows['dram_latency_ns'])
        self.assertEqual('350 ns', rows['pmem_latency_ns'])
        workloads = {row[0]: row for row in self.page.rows('workloads')}
        self.assertEqual(set(self.scen.workloads), set(workloads))

    def test_sources_of_prices_and_watts(self):
        rows = {(row[0], row[1]): row for row in self.page.rows('sources')}
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


class WriteTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        _, self.artifacts = builtin()

    def snapshot(self, path):
        return {name: open(os.path.join(path, name), 'rb').read()
                for name in sorted(os.listdir(path))}

    def test_writes_valid_pngs_and_html(self):
        written = report.write(self.artifacts, self.dir)
        self.assertEqual(
            sorted(CHART_FILES + [report.HTML_NAME]),
            sorted(os.listdir(self.dir)))
        self.assertEqual(
            [(os.path.join(self.dir, a.name), a.kind, len(a.data))
             for a in self.artifacts], written)
        for name in CHART_FILES:
            with open(os.path.join(self.dir, name), 'rb') as f:
                assert_png(self, f.read())
        with open(os.path.join(self.dir, report.HTML_NAME),
                  encoding='utf-8') as f:
            self.assertTrue(f.read().startswith('<!DOCTYPE html>'))

    def test_creates_missing_directories(self):
        target = os.path.join(self.dir, 'a', 'b', 'report')
        report.write(self.artifacts[-1:], target)
        self.assertEqual([report.HTML_NAME], os.listdir(target))

    def test_files_are_readable_as_the_umask_allows(self):
        old = os.umask(0o022)
        self.addCleanup(os.umask, old)
        report.write(self.artifacts[-1:], self.dir)
        mode = os.stat(os.path.join(self.dir, report.HTML_NAME)).st_mode
        self.assertEqual(0o644, mode & 0o777)

    def test_replaces_an_existing_report(self):
        old = [report.Artifact(a.name, a.kind, b'old') for a in
               self.artifacts]
        report.write(old, self.dir)
        report.write(self.artifacts, self.dir)
        self.assertEqual({a.name: a.data for a in self.artifacts},
                         self.snapshot(self.dir))

    def _failing(self, name, after):
        """Patch os.<name> to raise ENOSPC from its (after + 1)th call."""
        real = getattr(os, name)
        calls = []

        def fake(*args, **kwargs):
            calls.append(args)
            if len(calls) > after:
                raise OSError(28, 'No space left on device')
            return real(*args, **kwargs)
        self.useFixture(fixtures.MonkeyPatch('os.%s' % name, fake))
        return calls

    def test_failed_sync_leaves_old_report_and_no_temp_files(self):
        report.write(self.artifacts, self.dir)
        before = self.snapshot(self.dir)
        new = [report.Artifact(a.name, a.kind, a.data + b'new')
               for a in self.artifacts]
        self._failing('fsync', after=3)
        self.assertRaises(OSError, report.write, new, self.dir)
        self.assertEqual(before, self.snapshot(self.dir))

    def test_failed_rename_leaves_old_report_and_no_temp_files(self):
        report.write(self.artifacts, self.dir)
        before = self.snapshot(self.dir)
        new = [report.Artifact(a.name, a.kind, b'new')
               for a in self.artifacts]
        self._failing('replace', after=0)
        self.assertRaises(OSError, report.write, new, self.dir)
        self.assertEqual(before, self.snapshot(self.dir))

    def test_html_is_replaced_last(self):
        calls = self._failing('replace', after=len(CHART_FILES))
        self.assertRaises(OSError, report.write, self.artifacts, self.dir)
        self.assertEqual(report.HTML_NAME,
                         os.path.basename(calls[-1][1]))
        # The charts got through, the HTML did not, no temp file is left.
        self.assertEqual(sorted(CHART_FILES), sorted(os.listdir(self.dir)))


class CommandTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.out = os.path.join(self.dir, 'pmem-report')

    def snapshot(self):
        return {name: open(os.path.join(self.out, name), 'rb').read()
                for name in sorted(os.listdir(self.out))}

    def test_writes_report_and_lists_files(self):
        status, out, err = clitools.run_cli(
            self, ['report', '--output-dir', self.out, '-f', 'json'])
        self.assertEqual(0, status, err)
        listing = json.loads(out)
        self.assertEqual(
            [os.path.join(self.out, n)
             for n in CHART_FILES + [report.HTML_NAME]],
            [row['path'] for row in listing])
        for row in listing:
            self.assertEqual(os.path.getsize(row['path']), row['bytes'])
            self.assertEqual(row['path'].endswith('.png') and 'png' or
                             'html', row['kind'])
        # Progress and warnings go to stderr, a line per step.
        self.assertIn('[1/%d] tables' % report.STEPS, err)
        self.assertIn('[3/%d] chart: cost per VM' % report.STEPS, err)
        self.assertIn('[%d/%d] write' % (report.STEPS, report.STEPS), err)
        self.assertIn('mm-ratio', err)
        self.assertNotIn('[1/', out)

    def test_no_png_writes_only_html(self):
        status, out, err = clitools.run_cli(
            self, ['report', '--output-dir', self.out, '--no-png', '-f',
                   'value', '-c', 'kind'])
        self.assertEqual(0, status, err)
        self.assertEqual('html\n', out)
        self.assertEqual([report.HTML_NAME], os.listdir(self.out))
        with open(os.path.join(self.out, report.HTML_NAME),
                  encoding='utf-8') as f:
            self.assertEqual(len(report.CHARTS),
                             len(Page(f.read()).images))

    def test_default_output_dir(self):
        cwd = os.getcwd()
        os.chdir(self.dir)
        self.addCleanup(os.chdir, cwd)
        status, _out, err = clitools.run_cli(
            self, ['report', '--no-png', '-q'])
        self.assertEqual(0, status, err)
        self.assertTrue(os.path.exists(os.path.join(
            self.dir, report.DEFAULT_OUTPUT_DIR, report.HTML_NAME)))
        # -q: no progress lines.
        self.assertNotIn('[1/', err)

    def test_failed_rendering_keeps_old_report(self):
        _, artifacts = builtin()
        report.write(artifacts, self.out)
        before = self.snapshot()
        real = report.chart_png
        calls = []

        def fail_on_second(*args):
            calls.append(args)
            if len(calls) == 2:
                raise RuntimeError('renderer broke')
            return real(*args)
        self.useFixture(fixtures.MonkeyPatch(
            'planner.report.charts.chart_png', fail_on_second))
        status, out, err = clitools.run_cli(
            self, ['report', '--output-dir', self.out])
        self.assertNotEqual(0, status)
        self.assertIn('renderer broke', err)
        self.assertEqual('', out)
        self.assertEqual(before, self.snapshot())

    def assert_usage_error(self, status, out, err):
        self.assertEqual(2, status)
        self.assertEqual('', out)
        # One line says what failed; nothing else but population warnings.
        lines = err.strip().splitlines()
        self.assertIn('cannot write the report to', lines[-1])
        for line in lines[:-1]:
            self.assertIn(': warning ', line)
        self.assertNotIn('Traceback', err)

    def test_unwritable_output_dir_exits_2(self):
        blocker = os.path.join(self.dir, 'a-file')
        with open(blocker, 'w') as f:
            f.write('not a directory')
        status, out, err = clitools.run_cli(
            self, ['report', '--output-dir', os.path.join(blocker, 'r')])
        self.assert_usage_error(status, out, err)
        self.assertIn('not a directory', err)

    def test_write_failure_exits_2(self):
        # The early check passes; writing itself fails.
        self.useFixture(fixtures.MonkeyPatch(
            'planner.report.output_dir_problem', lambda path: None))
        self.useFixture(fixtures.MonkeyPatch(
            'planner.report.build',
            lambda scen, png=True, progress=None: [
                report.Artifact(report.HTML_NAME, 'html', b'x')]))
        blocker = os.path.join(self.dir, 'a-file')
        with open(blocker, 'w') as f:
            f.write('not a directory')
        status, out, err = clitools.run_cli(
            self, ['report', '-q', '--output-dir',
                   os.path.join(blocker, 'r')])
        self.assert_usage_error(status, out, err)

    def test_no_write_permission_exits_2_before_rendering(self):
        self.useFixture(fixtures.MonkeyPatch(
            'os.access', lambda path, mode: False))
        self.useFixture(fixtures.MonkeyPatch(
            'planner.report.build', self.fail))
        status, out, err = clitools.run_cli(
            self, ['report', '--output-dir', self.out])
        self.assert_usage_error(status, out, err)
        self.assertIn('permission denied on %s' % self.dir, err)
        self.assertFalse(os.path.exists(self.out))

    @testtools.skipIf(os.geteuid() == 0, 'root writes to read-only dirs')
    def test_read_only_output_dir_exits_2(self):
        os.makedirs(self.out)
        os.chmod(self.out, 0o555)
        self.addCleanup(os.chmod, self.out, 0o755)
        status, out, err = clitools.run_cli(
            self, ['report', '--output-dir', self.out])
        self.assert_usage_error(status, out, err)
