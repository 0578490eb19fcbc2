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
"""nova-pmem-observe end to end on fake trees, in-process."""

import io
import json
import os
import threading

import fixtures
import testtools

from nova_pmem_filters.core.formats import hostfile
from nova_pmem_filters.core.formats import observation
from nova_pmem_filters.observe import cli
from tests.unit.observe import fakehost


class CliTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path
        self.libvirt, self.proc, self.sysfs = fakehost.one_guest_host(
            self.root)
        self.slept = []

    def main(self, *argv, **kwargs):
        out = io.StringIO()
        err = io.StringIO()
        kwargs.setdefault('sleep', self.slept.append)
        status = cli.main(['--libvirt-dir', self.libvirt, '--proc',
                           self.proc, '--sysfs', self.sysfs,
                           '--hostname', 'compute-01'] + list(argv),
                          stdout=out, stderr=err, **kwargs)
        return status, out.getvalue(), err.getvalue()

    def test_one_shot_json_output_and_textfile(self):
        out_dir = os.path.join(self.root, 'observations')
        os.mkdir(out_dir)
        prom = os.path.join(self.root, 'nova_pmem.prom')
        status, out, err = self.main(
            '--window', '5', '-f', 'json', '--output', out_dir,
            '--textfile', prom, clock=lambda: 1795608000.0)
        self.assertEqual(0, status, err)
        self.assertEqual([5.0], self.slept)
        doc = json.loads(out)
        self.assertEqual(512.0, doc['instances'][0]['working_set_mb'])
        self.assertEqual(0.25, doc['instances'][0]['hot_ratio'])
        self.assertEqual('reference_bits', doc['instances'][0]['method'])
        # The directory holds one file per window, read back as the
        # planner and the doctor read it.
        self.assertEqual(['compute-01-20261125T120000Z.json'],
                         os.listdir(out_dir))
        self.assertEqual([observation.parse(doc, 'stdout')],
                         observation.load(out_dir))
        with open(prom) as f:
            self.assertIn('nova_pmem_instance_hot_ratio{', f.read())

    def test_one_shot_table(self):
        status, out, err = self.main('--window', '1')
        self.assertEqual(0, status, err)
        lines = out.splitlines()
        self.assertEqual(['uuid', 'name', 'flavor', 'method', 'ws_mb', 'hot',
                          'cell'], lines[0].split())
        self.assertEqual([fakehost.UUID_A, 'instance-1', 'm1.small',
                          'reference_bits', '512.0', '0.250', '0'],
                         lines[1].split())
        # No --profile: the near memory is not known, and the line says
        # why instead of printing a dash for the number.
        self.assertEqual('host compute-01: working set 512.0 MB (near '
                         'memory unknown: no --profile), window 1s',
                         lines[2])
        self.assertEqual('cell 0: working set 512.0 MB (near memory '
                         'unknown: no --profile)', lines[3])
        self.assertNotIn(' - MB', out)
        # The fake kernel has no DAMON: nothing to act on, so nothing on
        # stderr but with --debug.
        self.assertEqual('', err)
        status, out, err = self.main('--window', '1', '--debug')
        self.assertIn('DEBUG DAMON not usable', err)
        # The fake host's kernel has none of the tiering files, and no
        # far node.
        self.assertIn('kernel tiering: off (far nodes: none, nothing to '
                      'tier; '
                      'numa-balancing-missing, demotion-missing)', lines)

    def test_table_of_a_tiered_host(self):
        fakehost.add_nodes(self.sysfs, {1: ''})
        fakehost.write(os.path.join(self.root, 'proc', 'sys', 'kernel',
                                    'numa_balancing'), '2\n')
        fakehost.write(os.path.join(self.sysfs, 'kernel', 'mm', 'numa',
                                    'demotion_enabled'), 'true\n')
        # 512 MB touched, 256 MB near: 256 MB at least on node 1.
        fakehost.add_process(self.proc, 7, referenced_kb=524288,
                             numa_pages={0: 65536, 1: 196608})
        status, out, err = self.main('--window', '1')
        self.assertEqual(0, status, err)
        lines = out.splitlines()
        self.assertIn('kernel tiering: on (far nodes: 1)', lines)
        self.assertIn('instance %s: at least 256.0 MB of its working set '
                      'on far nodes' % fakehost.UUID_A, lines)

    def dram_profile(self):
        """A 64 GB DRAM host's profile, with no per-cell sizes."""
        profile = os.path.join(self.root, 'profile.json')
        hostfile.write(profile, {
            'schema': hostfile.SCHEMA, 'hostname': 'compute-01',
            'mode': 'dram', 'scheduler_mode': 'dram',
            'visible_memory_gb': 64.0, 'dram_gb': 64.0,
            'dram_cache_gb': 0.0})
        return profile

    def test_output_file_with_profile(self):
        profile = self.dram_profile()
        target = os.path.join(self.root, 'last.json')
        status, out, err = self.main('--profile', profile, '--output',
                                     target)
        self.assertEqual(0, status, err)
        doc = observation.read(target)
        self.assertEqual(65536.0, doc.host.near_memory_mb)

    def test_table_with_a_profile(self):
        profile = self.dram_profile()
        status, out, err = self.main('--profile', profile, '--window', '1')
        self.assertEqual(0, status, err)
        lines = out.splitlines()
        self.assertEqual('host compute-01: working set 512.0 MB of near '
                         'memory 65536.0 MB, window 1s', lines[2])
        # The profile gives no cell sizes: the cell's near memory is not
        # known.
        self.assertEqual('cell 0: working set 512.0 MB (near memory '
                         'unknown: the profile gives no size per cell)',
                         lines[3])

    def assertOneLineError(self, status, err, expected_status, *parts):
        self.assertEqual(expected_status, status)
        self.assertEqual(1, len(err.splitlines()), err)
        self.assertTrue(err.startswith('nova-pmem-observe: error: '), err)
        for part in parts:
            self.assertIn(part, err)

    def test_bad_profile_is_one_line(self):
        profile = os.path.join(self.root, 'profile.json')
        fakehost.write(profile, '{"schema": "nova-pmem-host-profile/1"')
        status, out, err = self.main('--profile', profile)
        self.assertOneLineError(status, err, 2, profile, 'not valid JSON')
        self.assertEqual('', out)

    def test_bad_window_is_one_line(self):
        status, out, err = self.main('--window', 'soon')
        self.assertOneLineError(status, err, 2, '--window', "'soon'")

    def test_interval_shorter_than_window(self):
        status, out, err = self.main('--window', '10', '--interval', '5')
        self.assertOneLineError(status, err, 2, '--interval')

    def test_missing_libvirt_dir(self):
        missing = os.path.join(self.root, 'nope')
        status, out, err = self.main('--libvirt-dir', missing)
        self.assertOneLineError(status, err, 2, missing)

    def test_missing_output_directory(self):
        target = os.path.join(self.root, 'nope', 'x.json')
        status, out, err = self.main('--output', target)
        self.assertOneLineError(status, err, 2, target)

    def test_bad_listen(self):
        status, out, err = self.main('--listen', 'localhost')
        self.assertOneLineError(status, err, 2, '--listen', 'ADDR:PORT')

    def test_service_survives_a_bad_window(self):
        stop = threading.Event()
        calls = []

        def clock():
            calls.append(1)
            if len(calls) == 2:
                raise RuntimeError('the clock broke')
            if len(calls) == 3:
                stop.set()
            return 1795608000.0 + len(calls)

        target = os.path.join(self.root, 'last.json')
        status, out, err = self.main(
            '--window', '0.01', '--interval', '0.01', '--output', target,
            stop=stop, clock=clock)
        self.assertEqual(0, status, err)
        self.assertEqual('', out)
        self.assertEqual(3, len(calls))
        self.assertIn('window failed: RuntimeError: the clock broke', err)
        # The first window was written; the third was cut short by stop.
        self.assertEqual('2026-11-25T12:00:01Z',
                         observation.read(target).started)
