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
"""/proc/vmstat and ipmctl performance counters: real and recorded."""

import os
import shutil

import fixtures
import testtools

from nova_pmem_filters.observe import counters

DATA = os.path.join(os.path.dirname(__file__), 'data')


def _data(name):
    return os.path.join(DATA, name)


def _text(name):
    with open(_data(name)) as f:
        return f.read()


class TestVmstat(testtools.TestCase):

    def test_real(self):
        found = counters.vmstat()
        self.assertIn('nr_free_pages', found)
        self.assertTrue(all(isinstance(v, int) for v in found.values()))

    def test_tiering_rates(self):
        before = counters.vmstat(_data('vmstat-tiering-before.txt'))
        after = counters.vmstat(_data('vmstat-tiering-after.txt'))
        self.assertEqual({'promote_pages_per_s': 100.0,
                          'demote_pages_per_s': 3800 / 60.0},
                         counters.tiering_rates(before, after, 60.0))

    def test_no_tiering(self):
        stat = counters.vmstat(_data('vmstat-no-tiering.txt'))
        self.assertEqual({'promote_pages_per_s': None,
                          'demote_pages_per_s': None},
                         counters.tiering_rates(stat, stat, 60.0))

    def test_backwards_is_none(self):
        before = counters.vmstat(_data('vmstat-tiering-after.txt'))
        after = counters.vmstat(_data('vmstat-tiering-before.txt'))
        self.assertEqual({'promote_pages_per_s': None,
                          'demote_pages_per_s': None},
                         counters.tiering_rates(before, after, 60.0))

    def test_truncated(self):
        exc = self.assertRaises(counters.ReadError, counters.vmstat,
                                _data('vmstat-truncated.txt'))
        self.assertIn(_data('vmstat-truncated.txt') + ' line 63', str(exc))
        self.assertIn('truncated', str(exc))

    def test_garbled_line(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path, 'vm')
        with open(path, 'w') as f:
            f.write('nr_free_pages 12\nnr_zone_inactive_anon 1x2\n')
        exc = self.assertRaises(counters.ReadError, counters.vmstat, path)
        self.assertIn(path + ' line 2', str(exc))

    def test_missing(self):
        self.assertRaises(counters.ReadError, counters.vmstat,
                          _data('no-such-file'))


class TestIpmctl(testtools.TestCase):

    def test_text_and_xml_agree(self):
        text = counters.ipmctl_performance(_text('ipmctl-performance.txt'))
        xml = counters.ipmctl_performance(_text('ipmctl-performance.xml'))
        decimal = counters.ipmctl_performance(
            _text('ipmctl-performance-decimal.txt'))
        self.assertEqual(text, xml)
        self.assertEqual(text, decimal)
        self.assertEqual(['0x0001', '0x0011'], sorted(text))
        self.assertEqual(0xcc3bb004, text['0x0001']['media_reads'])
        self.assertEqual(0x49437ab4, text['0x0001']['media_writes'])
        self.assertEqual(0x3fff2, text['0x0001']['write_requests'])
        self.assertEqual(8, len(text['0x0011']))

    def test_media_rates(self):
        before = counters.ipmctl_performance(_text('ipmctl-performance.xml'))
        after = counters.ipmctl_performance(
            _text('ipmctl-performance-after.txt'))
        # +0x1000000 reads and +0x100000 writes of 64 bytes: 1 GiB and
        # 64 MiB in 10 s.
        self.assertEqual({'media_read_mb_per_s': 102.4,
                          'media_write_mb_per_s': 6.4},
                         counters.media_rates(before, after, 10.0))
        self.assertRaises(ValueError, counters.media_rates, after, before,
                          10.0)

    def test_truncated(self):
        for name in ('ipmctl-performance-truncated.txt',
                     'ipmctl-performance-truncated.xml'):
            exc = self.assertRaises(counters.ReadError,
                                    counters.ipmctl_performance,
                                    _text(name), source=name)
            self.assertIn(name, str(exc))

    def test_error_result(self):
        exc = self.assertRaises(
            counters.ReadError, counters.ipmctl_performance,
            _text('ipmctl-performance-nomodules.xml'))
        self.assertIn('No PMem modules', str(exc))

    def test_bad_counter(self):
        text = _text('ipmctl-performance.txt').replace('=0x0000000000000000'
                                                       '00000000cc3bb004',
                                                       '=12ab', 1)
        exc = self.assertRaises(counters.ReadError,
                                counters.ipmctl_performance, text)
        self.assertIn('DIMM 0x0001: MediaReads', str(exc))

    def test_run_permission_denied(self):
        def runner(argv):
            self.assertEqual(counters.IPMCTL_ARGV, argv)
            return 1, '', 'ipmctl command requires root privileges\n'
        exc = self.assertRaises(counters.ReadError,
                                counters.run_ipmctl_performance, runner)
        self.assertEqual('ipmctl: permission denied', str(exc))

    def test_run_ok(self):
        xml = _text('ipmctl-performance.xml')
        self.assertEqual(xml, counters.run_ipmctl_performance(
            lambda argv: (0, xml, '')))

    def test_run_real(self):
        # ipmctl is installed here, PMem modules are not.
        if not shutil.which('ipmctl'):
            self.skipTest('ipmctl is not installed')
        exc = self.assertRaises(counters.ReadError,
                                counters.run_ipmctl_performance)
        self.assertIn('ipmctl: ', str(exc))

    def test_run_missing_tool(self):
        self.useFixture(fixtures.EnvironmentVariable('PATH', '/nonexistent'))
        exc = self.assertRaises(counters.ReadError,
                                counters.run_ipmctl_performance)
        self.assertIn('ipmctl: command not found', str(exc))
