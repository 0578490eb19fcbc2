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
"""Reference bits and numa_maps on real child processes and recorded files.

The child maps 1 GiB of anonymous memory, touches all of it once (so it is
resident), says so, then touches a hot part on command. Parent and child
step through a pipe (clear, touch N passes, done, read): no sleeps, no
timing.
"""

import ctypes
import mmap
import os
import select
import signal
import subprocess
import sys
import textwrap

import fixtures
import testtools

from nova_pmem_filters.observe import procfs

DATA = os.path.join(os.path.dirname(__file__), 'data')
MAPPED_MB = 1024
# An idle process references nothing; the bound is the error the hot
# cases allow on the smallest hot part (10% of 64 MiB): a process that
# is below it is told apart from the smallest hot one.
IDLE_BOUND_MB = 0.1 * 64
# A child that does not answer in this long is broken: the test fails
# rather than hangs (no assertion is about how fast it answers).
ANSWER_S = 300

CHILD = textwrap.dedent('''
    import mmap
    import sys

    size = int(sys.argv[1]) << 20
    mm = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)

    def touch(mb, passes):
        for _ in range(passes):
            for off in range(0, mb << 20, mmap.PAGESIZE):
                mm[off] = 1

    touch(size >> 20, 1)
    sys.stdout.write('resident\\n')
    sys.stdout.flush()
    for line in sys.stdin:
        words = line.split()
        if words[0] != 'touch':
            break
        touch(int(words[1]), int(words[2]))
        sys.stdout.write('done\\n')
        sys.stdout.flush()
''')


class Child(fixtures.Fixture):
    """A python child holding MAPPED_MB of resident anonymous memory."""

    def _setUp(self):
        self.proc = subprocess.Popen(
            [sys.executable, '-c', CHILD, str(MAPPED_MB)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.addCleanup(self._stop)
        self._expect('resident')
        self.pid = self.proc.pid

    def touch(self, mb, passes=2):
        self.proc.stdin.write('touch %d %d\n' % (mb, passes))
        self.proc.stdin.flush()
        self._expect('done')

    def _expect(self, word):
        ready, _w, _x = select.select([self.proc.stdout], [], [], ANSWER_S)
        line = self.proc.stdout.readline().strip() if ready else None
        if line != word:
            raise AssertionError('the child said %r, not %r (exit status '
                                 '%s)' % (line, word, self.proc.poll()))

    def _stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc.stdin.close()
        self.proc.stdout.close()


def _rss_mb(pid):
    with open('/proc/%d/smaps_rollup' % pid) as f:
        for line in f:
            if line.startswith('Rss:'):
                return int(line.split()[1]) / 1024.0


class TestReferenceBitsReal(testtools.TestCase):

    def setUp(self):
        super().setUp()
        if not os.access('/proc/self/clear_refs', os.W_OK):
            self.skipTest('/proc/PID/clear_refs is not writable here')
        self.child = self.useFixture(Child())

    def _hot(self, hot_mb):
        self.assertIsNone(procfs.clear(self.child.pid))
        self.child.touch(hot_mb)
        measured = procfs.referenced(self.child.pid)
        self.assertIsNone(measured.gap)
        # Printed for the record of the run (stestr keeps it).
        print('hot %d MiB: measured %.2f MiB' % (hot_mb,
                                                 measured.working_set_mb))
        self.assertLess(abs(measured.working_set_mb - hot_mb), 0.1 * hot_mb)

    def test_hot_64(self):
        self._hot(64)

    def test_hot_256(self):
        self._hot(256)

    def test_idle(self):
        self.assertIsNone(procfs.clear(self.child.pid))
        measured = procfs.referenced(self.child.pid)
        self.assertIsNone(measured.gap)
        print('idle: measured %.2f MiB' % measured.working_set_mb)
        self.assertLess(measured.working_set_mb, IDLE_BOUND_MB)

    def test_reference_bits_window(self):
        # The window's sleep is where the child works.
        windows = []

        def sleep(seconds):
            windows.append(seconds)
            self.child.touch(64)

        found = procfs.reference_bits([self.child.pid], 60.0, sleep=sleep)
        self.assertEqual([60.0], windows)
        measured = found[self.child.pid]
        self.assertIsNone(measured.gap)
        self.assertLess(abs(measured.working_set_mb - 64), 6.4)

    def test_exits_during_window(self):
        def sleep(seconds):
            self.child.proc.kill()
            self.child.proc.wait()

        found = procfs.reference_bits([self.child.pid], 1.0, sleep=sleep)
        measured = found[self.child.pid]
        self.assertIsNone(measured.working_set_mb)
        self.assertIn('exited', measured.gap)

    def test_zombie_during_window(self):
        # Killed but not reaped: its /proc/PID stays, its smaps is empty.
        def sleep(seconds):
            os.kill(self.child.pid, signal.SIGKILL)
            os.waitid(os.P_PID, self.child.pid, os.WEXITED | os.WNOWAIT)

        found = procfs.reference_bits([self.child.pid], 1.0, sleep=sleep)
        measured = found[self.child.pid]
        self.assertIsNone(measured.working_set_mb)
        self.assertIn('exited', measured.gap)

    def test_permission_denied(self):
        # Another user may not clear a root process's bits.
        if os.geteuid() != 0:
            self.skipTest('needs root to become another user')
        os.seteuid(65534)
        try:
            found = procfs.reference_bits([self.child.pid], 0.0,
                                          sleep=lambda s: None)
        finally:
            os.seteuid(0)
        measured = found[self.child.pid]
        self.assertIsNone(measured.working_set_mb)
        self.assertIn('permission denied', measured.gap)
        self.assertIn('clear_refs', measured.gap)

    def test_not_running(self):
        found = procfs.reference_bits([2 ** 22 + 1], 0.0,
                                      sleep=lambda s: None)
        self.assertEqual(procfs.Measurement(None, 'pid 4194305: not '
                                            'running'), found[2 ** 22 + 1])

    def test_numa_maps_child(self):
        nodes = procfs.numa_maps(self.child.pid)
        self.assertTrue(all(isinstance(n, int) for n in nodes))
        total = sum(nodes.values())
        self.assertGreater(total, MAPPED_MB)
        self.assertLess(abs(total - _rss_mb(self.child.pid)),
                        0.02 * _rss_mb(self.child.pid))


class TestNumaMaps(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.proc = self.useFixture(fixtures.TempDir()).path
        os.mkdir(os.path.join(self.proc, '42'))

    def _put(self, text):
        with open(os.path.join(self.proc, '42', 'numa_maps'), 'w') as f:
            f.write(text)

    def _recorded(self, name):
        with open(os.path.join(DATA, name)) as f:
            self._put(f.read())

    def test_self(self):
        nodes = procfs.numa_maps(os.getpid())
        rss = _rss_mb(os.getpid())
        self.assertLess(abs(sum(nodes.values()) - rss), 0.05 * rss)

    def test_hugepages(self):
        self._recorded('numa_maps-hugepages.txt')
        self.assertEqual({0: 12560.81640625, 1: 4096.0, 2: 2308.0},
                         procfs.numa_maps(42, proc=self.proc))

    def test_bound_memory_off_its_nodes(self):
        # The guest RAM libvirt bound to node 0 (bind:0, hugetlbfs) holds
        # 2048 huge pages on node 1; the default-policy lines count in
        # ``nodes`` only.
        self._recorded('numa_maps-hugepages.txt')
        found = procfs.numa_placement(42, proc=self.proc)
        self.assertEqual({1: 4096.0}, found.bound_off_node)
        self.assertEqual(procfs.numa_maps(42, proc=self.proc), found.nodes)

    def test_bound_memory_moved_as_posted(self):
        # numa_maps as posted to linux-mm (Michal Hocko, "[RFC PATCH] mm:
        # unclutter THP migration", 2017-12-07): a 100 MB mapping bound to
        # node 0 by numactl -m 0, after part of it was migrated to node 1.
        self._recorded('numa_maps-bind-migrated.txt')
        found = procfs.numa_placement(42, proc=self.proc)
        self.assertEqual({1: 6998 * 4 / 1024.0}, found.bound_off_node)
        self.assertEqual({0: 18602 * 4 / 1024.0, 1: 6998 * 4 / 1024.0},
                         found.nodes)

    def test_policies(self):
        # As mpol_to_str() prints them (mm/mempolicy.c): flags after "=",
        # nodes after ":"; the modes with a space in their name split the
        # field, and bind nothing.
        self._put('1000 bind=static:0-1 anon=3 N0=1 N1=1 N2=1 '
                  'kernelpagesize_kB=1024\n'
                  '2000 bind=static|balancing:1 anon=2 N0=2 '
                  'kernelpagesize_kB=1024\n'
                  '3000 interleave:0-2 anon=1 N2=1 kernelpagesize_kB=1024\n'
                  '4000 weighted interleave:0-2 anon=1 N2=1 '
                  'kernelpagesize_kB=1024\n'
                  '5000 prefer (many):0 anon=1 N1=1 kernelpagesize_kB=1024\n'
                  '6000 default anon=1 N3=1 kernelpagesize_kB=1024\n')
        found = procfs.numa_placement(42, proc=self.proc)
        self.assertEqual({2: 1.0, 0: 2.0}, found.bound_off_node)
        # Nothing bound at all: no figure, not 0.
        self._put('6000 default anon=1 N3=1 kernelpagesize_kB=1024\n')
        self.assertIsNone(procfs.numa_placement(
            42, proc=self.proc).bound_off_node)
        # Bound and in place: 0 on no node.
        self._put('6000 bind:3 anon=1 N3=1 kernelpagesize_kB=1024\n')
        self.assertEqual({}, procfs.numa_placement(
            42, proc=self.proc).bound_off_node)

    def test_a_real_binding(self):
        # mbind(MPOL_BIND) of a mapping of this process to node 0, as QEMU
        # binds guest RAM: the kernel's own numa_maps says bind:0, and no
        # page of it is elsewhere.
        if os.uname().machine != 'x86_64':
            self.skipTest('the mbind syscall number is x86-64\'s')
        libc = ctypes.CDLL(None, use_errno=True)
        size = 4 * 1024 * 1024
        area = mmap.mmap(-1, size)
        self.addCleanup(area.close)
        start = ctypes.c_char.from_buffer(area)
        address = ctypes.addressof(start)
        del start
        mask = ctypes.c_ulong(1)
        if libc.syscall(237, ctypes.c_void_p(address), ctypes.c_ulong(size),
                        2, ctypes.byref(mask), ctypes.c_ulong(64), 0):
            self.skipTest('mbind: %s' % os.strerror(ctypes.get_errno()))
        area.write(b'x' * size)
        found = procfs.numa_placement(os.getpid())
        self.assertEqual({}, found.bound_off_node)
        with open('/proc/self/numa_maps') as f:
            self.assertIn(' bind:0 ', f.read())

    def test_truncated(self):
        self._recorded('numa_maps-truncated.txt')
        exc = self.assertRaises(procfs.ReadError, procfs.numa_maps, 42,
                                proc=self.proc)
        self.assertIn(os.path.join(self.proc, '42', 'numa_maps'), str(exc))
        self.assertIn('truncated', str(exc))

    def test_line_without_page_size(self):
        self._put('7f00 default anon=2 N0=2 kernelpagesize_kB=4\n'
                  '7f01 default anon=2 N0=2\n')
        exc = self.assertRaises(procfs.ReadError, procfs.numa_maps, 42,
                                proc=self.proc)
        self.assertIn('line 2', str(exc))

    def test_missing(self):
        exc = self.assertRaises(procfs.ReadError, procfs.numa_maps, 43,
                                proc=self.proc)
        self.assertIn('cannot read', str(exc))


class TestFakeProc(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.proc = self.useFixture(fixtures.TempDir()).path
        self.dir = os.path.join(self.proc, '42')
        os.mkdir(self.dir)
        self._put('stat', '42 (qemu (kvm)) S ' + ' '.join(['1'] * 18) +
                  ' 777 0\n')
        self._put('clear_refs', '')

    def _put(self, name, text):
        with open(os.path.join(self.dir, name), 'w') as f:
            f.write(text)

    def test_start_time_with_parentheses(self):
        self.assertEqual('777', procfs.start_time(42, proc=self.proc))

    def test_smaps_fallback(self):
        self._put('smaps', 'Rss: 8 kB\nReferenced:         2048 kB\n'
                  'Referenced:         1024 kB\n')
        found = procfs.reference_bits([42], 0, sleep=lambda s: None,
                                      proc=self.proc)
        self.assertEqual(procfs.Measurement(3.0, None), found[42])
        with open(os.path.join(self.dir, 'clear_refs')) as f:
            self.assertEqual('1', f.read())

    def test_truncated_rollup(self):
        self._put('smaps_rollup', 'Rss:  8 kB\nReferenced:   20')
        found = procfs.reference_bits([42], 0, sleep=lambda s: None,
                                      proc=self.proc)
        self.assertIsNone(found[42].working_set_mb)
        self.assertIn('smaps_rollup line 2', found[42].gap)

    def test_replaced_during_window(self):
        self._put('smaps_rollup', 'Referenced:   2048 kB\n')

        def sleep(seconds):
            # Another process got the pid.
            self._put('stat', '42 (bash) S ' + ' '.join(['1'] * 18) +
                      ' 999 0\n')

        found = procfs.reference_bits([42], 1, sleep=sleep, proc=self.proc)
        self.assertEqual(procfs.Measurement(
            None, 'pid 42: exited during the window'), found[42])


class TestNodeCpus(testtools.TestCase):

    def test_real(self):
        nodes = procfs.node_cpus()
        self.assertIn(0, nodes)
        self.assertTrue(nodes[0])

    def test_cpuless_node(self):
        sysfs = self.useFixture(fixtures.TempDir()).path
        for node, cpus in ((0, '0-15\n'), (1, '16-31\n'), (2, '\n')):
            path = os.path.join(sysfs, 'devices', 'system', 'node',
                                'node%d' % node)
            os.makedirs(path)
            with open(os.path.join(path, 'cpulist'), 'w') as f:
                f.write(cpus)
        self.assertEqual({0: True, 1: True, 2: False},
                         procfs.node_cpus(sysfs=sysfs))

    def test_no_node(self):
        sysfs = self.useFixture(fixtures.TempDir()).path
        self.assertRaises(procfs.ReadError, procfs.node_cpus, sysfs=sysfs)
