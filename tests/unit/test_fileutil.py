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
"""Tests of nova_pmem_filters.fileutil, the atomic writes."""

import os

import fixtures
import testtools

from nova_pmem_filters import fileutil


class WriteAtomicTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.path = os.path.join(self.dir, 'provider.yaml')

    def test_writes_and_replaces(self):
        fileutil.write_atomic(self.path, 'old\n')
        fileutil.write_atomic(self.path, b'new\n', mode=0o600)
        with open(self.path) as f:
            self.assertEqual('new\n', f.read())
        self.assertEqual(0o600, os.stat(self.path).st_mode & 0o777)
        self.assertEqual(['provider.yaml'], os.listdir(self.dir))

    def test_failed_rename_keeps_the_old_file(self):
        fileutil.write_atomic(self.path, 'old\n')
        self.useFixture(fixtures.MonkeyPatch(
            'os.replace', self._fail))
        self.assertRaises(OSError, fileutil.write_atomic, self.path, 'new\n')
        with open(self.path) as f:
            self.assertEqual('old\n', f.read())
        self.assertEqual(['provider.yaml'], os.listdir(self.dir))

    def test_failed_write_leaves_no_temporary_file(self):
        self.useFixture(fixtures.MonkeyPatch('os.fsync', self._fail))
        self.assertRaises(OSError, fileutil.write_atomic, self.path, 'x')
        self.assertEqual([], os.listdir(self.dir))

    def test_unwritable_directory(self):
        self.assertRaises(OSError, fileutil.write_atomic,
                          os.path.join(self.dir, 'missing', 'f.yaml'), 'x')

    @staticmethod
    def _fail(*args, **kwargs):
        raise OSError(28, 'No space left on device')
