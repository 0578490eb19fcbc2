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
"""CPU cost of the observer's working-set methods per GB scanned.

A child process maps and touches ``--gb`` GiB of anonymous memory; the
observer's CPU time (``time.process_time``: user and system, so the
kernel's page-table walks of clear_refs and smaps count) is measured for
each method, per GiB of the child's RSS, and printed as a ratio against a
baseline measured in the same run: reading /proc/PID/smaps_rollup once.

DAMON runs over a fake sysfs tree (the fake kernel of the unit tests)
unless this host's DAMON is unused; its kernel-side cost (kdamond's
sampling) is then not measured, and the output says so.

    PYTHONPATH=. python benchmarks/observe_cost.py [--gb 1] [--repeat 20]

(from the root of the source tree: it borrows the unit tests' child and
fake kernel).
"""

import argparse
import subprocess
import sys
import time

from nova_pmem_filters.observe import damon
from nova_pmem_filters.observe import procfs
from tests.unit.observe import test_damon
from tests.unit.observe import test_procfs


def _cpu(fn, repeat):
    started = time.process_time()
    for _ in range(repeat):
        fn()
    return (time.process_time() - started) / repeat


def _rss_gib(pid):
    with open('/proc/%d/smaps_rollup' % pid) as f:
        for line in f:
            if line.startswith('Rss:'):
                return int(line.split()[1]) / 2.0 ** 20
    raise RuntimeError('pid %d: no Rss' % pid)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--gb', type=int, default=1)
    parser.add_argument('--repeat', type=int, default=20)
    args = parser.parse_args(argv)
    child = subprocess.Popen(
        [sys.executable, '-c', test_procfs.CHILD, str(args.gb * 1024)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        if child.stdout.readline().strip() != 'resident':
            raise RuntimeError('the child did not start')
        pid = child.pid
        gib = _rss_gib(pid)
        rows = []

        def rollup():
            with open('/proc/%d/smaps_rollup' % pid) as f:
                f.read()

        def smaps():
            with open('/proc/%d/smaps' % pid) as f:
                f.read()

        base = _cpu(rollup, args.repeat)
        rows.append(('smaps_rollup read (baseline)', base))
        rows.append(('reference_bits (clear_refs + smaps_rollup)',
                     _cpu(lambda: procfs.reference_bits(
                         [pid], 0, sleep=lambda s: None), args.repeat)))
        rows.append(('clear_refs alone',
                     _cpu(lambda: procfs.clear(pid), args.repeat)))
        rows.append(('smaps read (pre-4.14 fallback)',
                     _cpu(smaps, args.repeat)))
        rows.append(('numa_maps', _cpu(lambda: procfs.numa_maps(pid),
                                       args.repeat)))
        ok, reason = damon.usable()
        regions = {pid: [(0x10000000, 0x10000000 + int(gib * 2 ** 30), 1)]}

        def fake_damon():
            with test_damon.FakeKernel(dict(regions)) as kernel:
                damon.measure([pid], 0.1, admin=kernel.admin,
                              sleep=lambda s: None)

        rows.append(('damon.measure over a fake sysfs tree',
                     _cpu(fake_damon, args.repeat)))
        print('child: %.2f GiB resident; %d repeats; CPU of this process'
              % (gib, args.repeat))
        print('%-45s %14s %10s' % ('method', 'CPU ms / GiB', 'x baseline'))
        for name, cpu in rows:
            print('%-45s %14.3f %10.1f' % (name, cpu * 1e3 / gib,
                                           cpu / base if base else 0))
        print('DAMON: real interface not used (%s); the fake tree measures '
              'only the observer\'s sysfs work, not kdamond\'s sampling.'
              % reason if not ok else 'DAMON: real interface unused but '
              'not exercised by this benchmark (fake tree).')
    finally:
        child.kill()
        child.wait()
    return 0


if __name__ == '__main__':
    sys.exit(main())
