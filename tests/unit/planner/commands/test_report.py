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
"""The report command."""

import json
import os

import fixtures
import testtools

from nova_pmem_filters.planner import report
from tests.unit import clitools
from tests.unit.planner.report import base


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
             for n in base.CHART_FILES + [report.HTML_NAME]],
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
                             len(base.Page(f.read()).images))

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
        _, artifacts = base.builtin()
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
            'nova_pmem_filters.planner.report.charts.chart_png',
            fail_on_second))
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
            'nova_pmem_filters.planner.report.output_dir_problem',
            lambda path: None))
        self.useFixture(fixtures.MonkeyPatch(
            'nova_pmem_filters.planner.report.build',
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
            'nova_pmem_filters.planner.report.build', self.fail))
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
