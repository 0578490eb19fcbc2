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
"""DAMON over a fake sysfs tree, and recorded ``damo`` outputs.

Nothing here writes to the real /sys/kernel/mm/damon: :class:`FakeKernel`
replaces ``damon._write`` and plays the kernel in the test's own thread
(directories appear when an ``nr_*`` file is written, tried regions when
``update_schemes_tried_regions`` is), so runs are deterministic.
"""

import errno
import os
import shutil

import fixtures
import testtools

from nova_pmem_filters.observe import damon

DATA = os.path.join(os.path.dirname(__file__), 'data')
MIB = 2 ** 20


class FakeKernel(fixtures.Fixture):
    """A DAMON sysfs tree in a temporary directory and its kernel."""

    def __init__(self, regions, nr_kdamonds=0):
        super().__init__()
        # {pid: [(start, end, nr_accesses)]}; a pid not here has exited.
        self.regions = regions
        self.nr_kdamonds = nr_kdamonds
        self.writes = []

    def _setUp(self):
        root = self.useFixture(fixtures.TempDir()).path
        self.admin = os.path.join(root, 'admin')
        os.makedirs(os.path.join(self.admin, 'kdamonds'))
        self._store(os.path.join(self.admin, 'kdamonds', 'nr_kdamonds'),
                    self.nr_kdamonds)
        self.useFixture(fixtures.MonkeyPatch(
            'nova_pmem_filters.observe.damon._write', self.write))

    def _store(self, path, value):
        with open(path, 'w') as f:
            f.write('%s\n' % value)

    def _read(self, path):
        with open(path) as f:
            return f.read().strip()

    def write(self, path, value):
        value = str(value)
        assert path.startswith(self.admin), path
        self.writes.append((os.path.relpath(path, self.admin), value))
        name = os.path.basename(path)
        parent = os.path.dirname(path)
        if not os.path.isdir(parent):
            raise FileNotFoundError(errno.ENOENT, 'No such file', path)
        if name.startswith('nr_'):
            self._resize(parent, name, int(value))
        elif name == 'state':
            self._state(parent, value)
            return
        self._store(path, value)

    def _resize(self, parent, name, count):
        running = [d for d in os.listdir(parent) if d.isdigit() and
                   os.path.exists(os.path.join(parent, d, 'state')) and
                   self._read(os.path.join(parent, d, 'state')) == 'on']
        if running:
            raise OSError(errno.EBUSY, 'Device or resource busy')
        for d in os.listdir(parent):
            if d.isdigit():
                shutil.rmtree(os.path.join(parent, d))
        for i in range(count):
            child = os.path.join(parent, str(i))
            os.mkdir(child)
            if name == 'nr_kdamonds':
                self._store(os.path.join(child, 'state'), 'off')
                os.makedirs(os.path.join(child, 'contexts'))
            elif name == 'nr_contexts':
                os.makedirs(os.path.join(child, 'monitoring_attrs',
                                         'intervals'))
                os.makedirs(os.path.join(child, 'targets'))
                os.makedirs(os.path.join(child, 'schemes'))
            elif name == 'nr_schemes':
                for kind in ('sz', 'nr_accesses', 'age'):
                    os.makedirs(os.path.join(child, 'access_pattern', kind))
                os.makedirs(os.path.join(child, 'tried_regions'))

    def _pid(self, kdamond):
        return int(self._read(os.path.join(
            kdamond, 'contexts', '0', 'targets', '0', 'pid_target')))

    def _state(self, kdamond, value):
        state = os.path.join(kdamond, 'state')
        if value == 'on':
            if self._pid(kdamond) not in self.regions:
                raise ProcessLookupError(errno.ESRCH, 'No such process')
            self._store(state, 'on')
        elif value == 'off':
            if self._read(state) != 'on':
                raise OSError(errno.EINVAL, 'Invalid argument')
            self._store(state, 'off')
        elif value == 'update_schemes_tried_regions':
            tried = os.path.join(kdamond, 'contexts', '0', 'schemes', '0',
                                 'tried_regions')
            for i, (start, end, accesses) in enumerate(
                    self.regions[self._pid(kdamond)]):
                region = os.path.join(tried, str(i))
                os.mkdir(region)
                for key, number in (('start', start), ('end', end),
                                    ('nr_accesses', accesses), ('age', 3)):
                    self._store(os.path.join(region, key), number)
        else:
            raise OSError(errno.EINVAL, 'Invalid argument')

    def exit(self, pid):
        """The target exits: its kdamond stops."""
        for d in os.listdir(os.path.join(self.admin, 'kdamonds')):
            kdamond = os.path.join(self.admin, 'kdamonds', d)
            if d.isdigit() and self._pid(kdamond) == pid:
                self._store(os.path.join(kdamond, 'state'), 'off')
        del self.regions[pid]

    def nr_kdamonds_now(self):
        return self._read(os.path.join(self.admin, 'kdamonds',
                                       'nr_kdamonds'))

    def kdamond_dirs(self):
        return [d for d in os.listdir(os.path.join(self.admin, 'kdamonds'))
                if d.isdigit()]


REGIONS = {
    100: [(0x1000000, 0x1000000 + 64 * MIB, 12),
          (0x1000000 + 64 * MIB, 0x1000000 + 1024 * MIB, 0)],
    200: [(0x7f0000000000, 0x7f0000000000 + 256 * MIB, 3),
          (0x7f0010000000, 0x7f0010000000 + 512 * MIB, 0),
          (0x7f0030000000, 0x7f0030000000 + 2 * MIB, 1)],
}


class TestUsable(testtools.TestCase):

    def test_free(self):
        kernel = self.useFixture(FakeKernel({}))
        self.assertEqual((True, 'DAMON sysfs interface unused'),
                         damon.usable(admin=kernel.admin))

    def test_someone_else_uses_it(self):
        kernel = self.useFixture(FakeKernel({}, nr_kdamonds=1))
        ok, reason = damon.usable(admin=kernel.admin)
        self.assertFalse(ok)
        self.assertIn('1 kdamond(s) exist', reason)

    def test_absent(self):
        admin = os.path.join(self.useFixture(fixtures.TempDir()).path, 'x')
        ok, reason = damon.usable(admin=admin)
        self.assertFalse(ok)
        self.assertIn('absent', reason)

    def test_garbled(self):
        kernel = self.useFixture(FakeKernel({}, nr_kdamonds='x'))
        self.assertFalse(damon.usable(admin=kernel.admin)[0])

    def test_real_machine_read_only(self):
        # Reads only. Says no whenever a kdamond exists.
        path = os.path.join(damon.ADMIN, 'kdamonds', 'nr_kdamonds')
        ok, reason = damon.usable()
        if not os.path.exists(path):
            self.assertFalse(ok)
            return
        with open(path) as f:
            if int(f.read()) != 0:
                self.assertFalse(ok)
                self.assertIn('kdamond(s) exist', reason)


class TestMeasure(testtools.TestCase):

    def _kernel(self, **kwargs):
        return self.useFixture(FakeKernel(
            {pid: list(r) for pid, r in REGIONS.items()}, **kwargs))

    def test_measure(self):
        kernel = self._kernel()
        windows = []
        found = damon.measure([100, 200], 30.0, admin=kernel.admin,
                              sleep=windows.append)
        self.assertEqual([30.0], windows)
        self.assertEqual({100: damon.procfs.Measurement(64.0, None),
                          200: damon.procfs.Measurement(258.0, None)},
                         found)
        self.assertEqual('0', kernel.nr_kdamonds_now())
        self.assertEqual([], kernel.kdamond_dirs())
        writes = dict(kernel.writes)
        self.assertEqual('30000000', writes[
            'kdamonds/0/contexts/0/monitoring_attrs/intervals/aggr_us'])
        self.assertEqual('stat',
                         writes['kdamonds/1/contexts/0/schemes/0/action'])
        self.assertEqual(('kdamonds/nr_kdamonds', '0'), kernel.writes[-1])
        self.assertEqual(2, kernel.writes.count(
            ('kdamonds/1/state', 'off')) + kernel.writes.count(
            ('kdamonds/0/state', 'off')))

    def test_refuses_when_in_use(self):
        kernel = self._kernel(nr_kdamonds=2)
        self.assertRaises(damon.DamonError, damon.measure, [100], 1.0,
                          admin=kernel.admin, sleep=lambda s: None)
        self.assertEqual([], kernel.writes)
        self.assertEqual('2', kernel.nr_kdamonds_now())

    def test_pid_gone_before(self):
        kernel = self._kernel()
        found = damon.measure([100, 300], 1.0, admin=kernel.admin,
                              sleep=lambda s: None)
        self.assertEqual(64.0, found[100].working_set_mb)
        self.assertEqual(damon.procfs.Measurement(
            None, 'pid 300: DAMON cannot monitor it: exited'), found[300])
        self.assertEqual('0', kernel.nr_kdamonds_now())

    def test_pid_exits_during_window(self):
        kernel = self._kernel()
        found = damon.measure([100, 200], 1.0, admin=kernel.admin,
                              sleep=lambda s: kernel.exit(200))
        self.assertEqual(damon.procfs.Measurement(
            None, 'pid 200: exited during the window'), found[200])
        self.assertEqual(64.0, found[100].working_set_mb)
        self.assertEqual([], kernel.kdamond_dirs())

    def test_removed_on_error(self):
        kernel = self._kernel()

        def sleep(seconds):
            raise KeyboardInterrupt()

        self.assertRaises(KeyboardInterrupt, damon.measure, [100, 200], 1.0,
                          admin=kernel.admin, sleep=sleep)
        self.assertIn(('kdamonds/0/state', 'off'), kernel.writes)
        self.assertIn(('kdamonds/1/state', 'off'), kernel.writes)
        self.assertEqual('0', kernel.nr_kdamonds_now())
        self.assertEqual([], kernel.kdamond_dirs())


class TestParseDamo(testtools.TestCase):

    def _parse(self, name):
        with open(os.path.join(DATA, name)) as f:
            return damon.parse_damo(f.read(), source=name)

    def test_report_wss(self):
        self.assertEqual({'0': 107.767, '1': 1536.0},
                         self._parse('damo-report-wss.txt'))

    def test_report_wss_raw(self):
        found = self._parse('damo-report-wss-raw.txt')
        self.assertAlmostEqual(113001889 / MIB, found['0'])

    def test_show(self):
        self.assertEqual({'0': 768.0}, self._parse('damo-show.txt'))

    def test_show_records(self):
        self.assertEqual({'0': 64.0, '1': 256.0},
                         self._parse('damo-show-records.txt'))

    def test_show_truncated(self):
        exc = self.assertRaises(damon.DamonError, self._parse,
                                'damo-show-truncated.txt')
        self.assertIn('damo-show-truncated.txt line 3', str(exc))

    def test_garbage(self):
        self.assertRaises(damon.DamonError, damon.parse_damo, 'hello\n')
        self.assertRaises(damon.DamonError, damon.parse_damo, '')
