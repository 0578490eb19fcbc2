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
"""The report's files: written atomically, the old report kept on failure."""

import os

import fixtures
import testtools

from nova_pmem_filters.planner import report
from tests.unit.planner.report import base


class WriteTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        _, self.artifacts = base.builtin()

    def snapshot(self, path):
        return {name: open(os.path.join(path, name), 'rb').read()
                for name in sorted(os.listdir(path))}

    def test_writes_valid_pngs_and_html(self):
        written = report.write(self.artifacts, self.dir)
        self.assertEqual(
            sorted(base.CHART_FILES + [report.HTML_NAME]),
            sorted(os.listdir(self.dir)))
        self.assertEqual(
            [(os.path.join(self.dir, a.name), a.kind, len(a.data))
             for a in self.artifacts], written)
        for name in base.CHART_FILES:
            with open(os.path.join(self.dir, name), 'rb') as f:
                base.assert_png(self, f.read())
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
        calls = self._failing('replace', after=len(base.CHART_FILES))
        self.assertRaises(OSError, report.write, self.artifacts, self.dir)
        self.assertEqual(report.HTML_NAME,
                         os.path.basename(calls[-1][1]))
        # The charts got through, the HTML did not, no temp file is left.
        self.assertEqual(
            sorted(base.CHART_FILES), sorted(os.listdir(self.dir)))
