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
"""Whole observation windows on fake hosts, checked by hand."""

import logging
import os
import shutil
import types

import fixtures
import testtools

from nova_pmem_filters.core.formats import discoveredhost

from nova_pmem_filters.core.formats import hostfile
from nova_pmem_filters.core.formats import observation
from nova_pmem_filters.observe import counters
from nova_pmem_filters.observe import damon
from nova_pmem_filters.observe import host
from nova_pmem_filters.observe import procfs
from tests.unit.observe import fakehost

# 1 GiB of 4 KiB pages.


def memory_mode_profile():
    return discoveredhost.parse({
        'schema': hostfile.SCHEMA, 'hostname': 'compute-mm-01',
        'mode': 'memory_mode', 'scheduler_mode': 'memory_mode',
        'visible_memory_gb': 1024.0, 'dram_gb': 192.0,
        'dram_cache_gb': 192.0, 'dram_cache_gb_per_cell': '0:96,1:96',
    }, 'compute-mm-01.json')


class FakeClock(object):
    """time.monotonic and sleep: sleeping moves the clock on."""

    def __init__(self, on_sleep=None):
        self.now = 1000.0
        self.slept = []
        self.on_sleep = on_sleep

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds
        if self.on_sleep:
            self.on_sleep()


class HostTestCase(testtools.TestCase):
    """Two instances; nodes 0 and 1 with CPUs, node 2 CPU-less."""

    def setUp(self):
        super().setUp()
        root = self.useFixture(fixtures.TempDir()).path
        self.fake = fakehost.TwoGuestHost(root, [
            {'pgpromote_success': 1000, 'pgdemote_kswapd': 500,
             'pgdemote_direct': 100},
            {'pgpromote_success': 7000, 'pgdemote_kswapd': 2900,
             'pgdemote_direct': 100}])
        self.libvirt = self.fake.libvirt
        self.proc = self.fake.proc
        self.sysfs = self.fake.sysfs
        self.paths = self.fake.paths
        self.vmstat = self.fake.vmstat
        self.write_vmstat = self.fake.write_vmstat

    def backends(self, damon_mod=damon, counters_mod=counters):
        return host.Backends(procfs=procfs, damon=damon_mod,
                             counters=counters_mod)

    def observe(self, clock, **kwargs):
        """The document of one window, as JSON: what the file holds."""
        kwargs.setdefault('backends', self.backends())
        found = host.observe(60.0, paths=self.paths, hostname='compute-01',
                             clock=lambda: 1795608000.0,
                             monotonic=clock.monotonic, sleep=clock.sleep,
                             **kwargs)
        self.assertIsInstance(found, observation.Observation)
        doc = found.to_dict()
        # What the observer writes, every reader reads back the same.
        self.assertEqual(found, observation.parse(doc, 'test'))
        return doc

    def test_kernel_tiered_window(self):
        clock = FakeClock(on_sleep=lambda: self.write_vmstat(1))
        doc = self.observe(clock)
        self.assertEqual(observation.SCHEMA, doc['schema'])
        # One window for every instance.
        self.assertEqual([60.0], clock.slept)
        self.assertEqual('2026-11-25T12:00:00Z', doc['started'])
        self.assertEqual([{'id': 0, 'cpus': True}, {'id': 1, 'cpus': True},
                          {'id': 2, 'cpus': False}], doc['nodes'])
        a, b = doc['instances']
        self.assertEqual(
            {'uuid': fakehost.UUID_A, 'name': 'instance-0000000a',
             'flavor': 'm1.small', 'flavor_ram_mb': 4096, 'flavor_vcpus': 2,
             'pid': 101, 'declared_hot_ratio': fakehost.declared(0.2),
             'method': 'reference_bits', 'working_set_mb': 1024.0,
             'hot_ratio': 0.25, 'numa_mb': {'0': 3072.0, '2': 1024.0},
             'cell': 0, 'gap': None, 'near_resident_mb': 3072.0,
             'far_resident_mb': 1024.0, 'hot_on_far_mb': 0.0}, a)
        # B's flavor declares nothing (or an older Nova does not say).
        self.assertIsNone(b['declared_hot_ratio'])
        self.assertEqual(2048.0, b['working_set_mb'])
        self.assertEqual(0.25, b['hot_ratio'])
        self.assertEqual({'0': 2.0, '1': 2048.0}, b['numa_mb'])
        self.assertEqual(1, b['cell'])
        # Bound to node 1: the 2 MiB on node 0 are off its binding; A
        # binds nothing, and has no such figure.
        self.assertEqual(2.0, b['bound_off_node_mb'])
        self.assertNotIn('bound_off_node_mb', a)
        self.assertIsNone(doc['profile'])
        self.assertEqual(
            {'working_set_mb': 3072.0, 'near_memory_mb': None,
             'cells': [{'id': 0, 'working_set_mb': 1024.0,
                        'near_memory_mb': None},
                       {'id': 1, 'working_set_mb': 2048.0,
                        'near_memory_mb': None}]}, doc['host'])
        # (7000 - 1000) / 60 promoted; (3000 - 600) / 60 demoted.
        self.assertEqual(
            {'media_read_mb_per_s': None, 'media_write_mb_per_s': None,
             'promote_pages_per_s': 100.0, 'demote_pages_per_s': 40.0},
            doc['far_memory'])
        # The fake host's kernel has none of the tiering files: off, as
        # the core judges it, with its counters per second.
        kernel = doc['tiering']
        self.assertEqual(('off', [2], ['numa-balancing-missing',
                                       'demotion-missing']),
                         (kernel['state'], kernel['far_nodes'],
                          kernel['problems']))
        self.assertEqual({'pgdemote_direct': 0.0, 'pgdemote_kswapd': 40.0,
                          'pgpromote_success': 100.0}, kernel['rates'])
        self.assertEqual([], doc['gaps'])

    def test_memory_mode_window(self):
        readings = iter(['before', 'after'])
        values = {'before': {'0x0001': {'media_reads': 1000,
                                        'media_writes': 10}},
                  'after': {'0x0001': {'media_reads': 1000 + 983040,
                                       'media_writes': 10 + 491520}}}
        fake = types.SimpleNamespace(
            run_ipmctl_performance=lambda: next(readings),
            ipmctl_performance=values.__getitem__,
            media_rates=counters.media_rates,
            vmstat=self.fail, tiering_rates=self.fail)
        clock = FakeClock()
        doc = self.observe(clock, prof=memory_mode_profile(),
                           backends=self.backends(counters_mod=fake))
        observation.parse(doc, 'test')
        self.assertEqual({'pmem_mode': 'memory_mode',
                          'near_memory_mb': 196608.0,
                          'cells': [{'id': 0, 'near_memory_mb': 98304.0},
                                    {'id': 1, 'near_memory_mb': 98304.0}]},
                         doc['profile'])
        self.assertEqual(
            {'working_set_mb': 3072.0, 'near_memory_mb': 196608.0,
             'cells': [{'id': 0, 'working_set_mb': 1024.0,
                        'near_memory_mb': 98304.0},
                       {'id': 1, 'working_set_mb': 2048.0,
                        'near_memory_mb': 98304.0}]}, doc['host'])
        # 983040 x 64 B = 60 MiB read in 60 s; half as much written.
        self.assertEqual(
            {'media_read_mb_per_s': 1.0, 'media_write_mb_per_s': 0.5,
             'promote_pages_per_s': None, 'demote_pages_per_s': None},
            doc['far_memory'])

    def test_a_process_that_exits_during_the_window_is_a_gap(self):
        clock = FakeClock(on_sleep=lambda: shutil.rmtree(
            os.path.join(self.proc, '102')))
        doc = self.observe(clock)
        observation.parse(doc, 'test')
        a, b = doc['instances']
        self.assertEqual(1024.0, a['working_set_mb'])
        self.assertIsNone(b['working_set_mb'])
        self.assertIsNone(b['hot_ratio'])
        self.assertIsNone(b['method'])
        self.assertIn('pid 102', b['gap'])
        self.assertEqual(1024.0, doc['host']['working_set_mb'])
        self.assertIn('host working set counts 1 of 2 instances',
                      doc['gaps'])

    def test_ipmctl_failure_is_a_gap(self):
        def fail():
            raise procfs.ReadError('ipmctl: not found')

        fake = types.SimpleNamespace(run_ipmctl_performance=fail,
                                     ipmctl_performance=dict)
        doc = self.observe(FakeClock(), prof=memory_mode_profile(),
                           backends=self.backends(counters_mod=fake))
        self.assertIsNone(doc['far_memory']['media_read_mb_per_s'])
        self.assertEqual(['ipmctl: ipmctl: not found'], doc['gaps'])
        self.assertEqual(3072.0, doc['host']['working_set_mb'])

    def test_damon_when_usable(self):
        calls = []

        def measure(pids, window_s, admin, sleep):
            calls.append((pids, window_s, admin))
            sleep(window_s)
            return {101: procfs.Measurement(512.0, None),
                    102: procfs.Measurement(None, 'pid 102: exited')}

        fake = types.SimpleNamespace(usable=lambda admin: (True, 'ok'),
                                     measure=measure)
        clock = FakeClock(on_sleep=lambda: self.write_vmstat(1))
        doc = self.observe(clock, backends=self.backends(damon_mod=fake))
        observation.parse(doc, 'test')
        self.assertEqual([([101, 102], 60.0, os.path.join(
            self.sysfs, 'kernel', 'mm', 'damon', 'admin'))], calls)
        a, b = doc['instances']
        self.assertEqual(('damon', 512.0, 0.125),
                         (a['method'], a['working_set_mb'], a['hot_ratio']))
        self.assertEqual('pid 102: exited', b['gap'])

    def test_fall_back_to_reference_bits_is_told_once(self):
        self.useFixture(fixtures.MockPatchObject(host, '_TOLD', set()))
        logs = self.useFixture(fixtures.FakeLogger(
            name=host.LOG.name, level=logging.DEBUG,
            format='%(levelname)s %(message)s'))
        # A kernel without DAMON: nothing to act on, a debug line.
        for _n in range(2):
            self.assertEqual((host.REFERENCE_BITS, None), host.choose_method(
                host.AUTO, self.backends(), self.paths))
        self.assertEqual(['DEBUG'] * 2,
                         [line.split()[0]
                          for line in logs.output.splitlines()])
        # A reason to act on: told once, then debug lines.
        busy = types.SimpleNamespace(
            usable=lambda admin: (False, 'nr_kdamonds: not writable (run '
                                  'as root)'))
        logs = self.useFixture(fixtures.FakeLogger(
            name=host.LOG.name, level=logging.DEBUG,
            format='%(levelname)s %(message)s'))
        for _n in range(3):
            host.choose_method(host.AUTO, self.backends(damon_mod=busy),
                               self.paths)
        self.assertEqual(
            ['INFO DAMON not usable (nr_kdamonds: not writable (run as '
             'root)): measuring with reference bits'],
            [line for line in logs.output.splitlines()
             if line.startswith('INFO')])
        self.assertEqual(3, len(logs.output.splitlines()))

    def test_damon_asked_for_but_not_usable(self):
        # The fake sysfs has no DAMON: no fall-back to reference bits.
        clock = FakeClock(on_sleep=lambda: self.write_vmstat(1))
        doc = self.observe(clock, method='damon')
        observation.parse(doc, 'test')
        gap = doc['gaps'][0]
        self.assertTrue(gap.startswith('damon: not usable: '), gap)
        for inst in doc['instances']:
            self.assertEqual(gap, inst['gap'])
            self.assertIsNone(inst['method'])
            # Where its pages sit is still known.
            self.assertIsNotNone(inst['cell'])
        self.assertEqual(100.0, doc['far_memory']['promote_pages_per_s'])

    def test_no_libvirt_directory_is_a_gap(self):
        shutil.rmtree(self.libvirt)
        doc = self.observe(FakeClock(on_sleep=lambda: self.write_vmstat(1)))
        self.assertEqual([], doc['instances'])
        self.assertIn(self.libvirt, doc['gaps'][0])

    def test_a_bad_numa_maps_is_a_gap(self):
        fakehost.write(os.path.join(self.proc, '101', 'numa_maps'), 'x')
        doc = self.observe(FakeClock(on_sleep=lambda: self.write_vmstat(1)))
        a = doc['instances'][0]
        self.assertEqual(1024.0, a['working_set_mb'])
        self.assertEqual({}, a['numa_mb'])
        self.assertIsNone(a['cell'])
        self.assertEqual(1, len(doc['gaps']))
        self.assertIn('numa_maps of process 101', doc['gaps'][0])
        self.assertIn(fakehost.UUID_A, doc['gaps'][0])
