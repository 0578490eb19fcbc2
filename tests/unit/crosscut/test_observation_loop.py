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
"""Measure, don't guess: observations -> recommendation -> doctor -> plan.

Observation documents of two flavors, written as nova-pmem-observe writes
them, go through every reader: the planner's ``hot-ratios`` recommends a
``pmem:hot_ratio`` per flavor, the doctor (through its CLI, against a stub
cloud) reports the flavor that declares too little, and a scenario whose
workloads say ``hot_ratio: observed`` plans with the measured value, which
changes ``compare``'s density. The numbers are worked out by hand below.

The observed ratios (working set / flavor RAM) of the two 32 GB flavors::

    window            redis                     mysql
    mm1 12:00         r1 0.30, r2 0.36          m1 0.12
    mm1 12:01         r1 0.32, r2 0.38          m1 0.15
    mm2 12:00         r3 0.34, r4 0.31          m2 0.18

redis: 6 ratios of 4 instances in 3 windows, sorted 0.30 0.31 0.32 0.34
0.36 0.38. p50 at position 0.5 x 5 = 2.5: (0.32 + 0.34) / 2 = 0.33. p95 at
position 0.95 x 5 = 4.75: 0.36 + 0.75 x (0.38 - 0.36) = 0.375, rounded up
to the next 0.05: 0.4. It declares 0.25 (the built-in scenario and the
cloud's flavor): under-declared.

mysql: 3 ratios of 2 instances in 3 windows, sorted 0.12 0.15 0.18. p50
0.15; p95 at 0.95 x 2 = 1.9: 0.15 + 0.9 x 0.03 = 0.177, rounded up to 0.2,
below its declared 0.25: not under-declared.
"""

import json
import os

import fixtures
import testtools

from nova_pmem_filters.planner import scenario
from tests.unit import clitools
from tests.unit.doctor import cases
from tests.unit.doctor import test_cli as doctor_cli
from tests.unit import obsdocs

GB = 1024
RAM_MB = 32 * GB


def observations(directory):
    def inst(uuid, flavor, ratio):
        return obsdocs.instance(uuid, flavor, RAM_MB, ratio)
    near = 196608.0
    return obsdocs.write(directory, [
        obsdocs.document('mm1', [inst('r1', 'redis', 0.30),
                                 inst('r2', 'redis', 0.36),
                                 inst('m1', 'mysql', 0.12)],
                         near_memory_mb=near),
        obsdocs.document('mm1', [inst('r1', 'redis', 0.32),
                                 inst('r2', 'redis', 0.38),
                                 inst('m1', 'mysql', 0.15)],
                         started='2026-11-25T12:01:00Z',
                         near_memory_mb=near),
        obsdocs.document('mm2', [inst('r3', 'redis', 0.34),
                                 inst('r4', 'redis', 0.31),
                                 inst('m2', 'mysql', 0.18)],
                         near_memory_mb=near)])


class ObservationLoopTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.obs = observations(os.path.join(self.dir, 'obs'))

    def planner(self, *argv):
        status, out, err = clitools.run_cli(self, argv)
        self.assertEqual(0, status, err)
        return json.loads(out)

    def test_recommendation(self):
        rows = {r['flavor']: r for r in self.planner(
            'hot-ratios', '--observations', self.obs,
            '--scenario', 'telco-cost-matched', '-f', 'json')}
        self.assertEqual(
            {'flavor': 'redis', 'instances': 4, 'windows': 3, 'p50': 0.33,
             'p95': 0.375, 'max': 0.38, 'declared': 0.25,
             'workload': 'redis', 'recommended': 0.4,
             'under_declared': True,
             'command': 'openstack flavor set --property '
                        'pmem:hot_ratio=0.4 redis', 'held_back': None},
            rows['redis'])
        # Two instances of mysql: held back, by default.
        self.assertEqual(
            (2, 3, 0.15, 0.177, 0.18, 0.25, None, None, None,
             '2 instances, fewer than 3'),
            tuple(rows['mysql'][c] for c in (
                'instances', 'windows', 'p50', 'p95', 'max', 'declared',
                'recommended', 'under_declared', 'command', 'held_back')))
        rows = {r['flavor']: r for r in self.planner(
            'hot-ratios', '--observations', self.obs, '--min-instances', '2',
            '--scenario', 'telco-cost-matched', '-f', 'json')}
        self.assertEqual(
            (0.2, False, None),
            tuple(rows['mysql'][c] for c in (
                'recommended', 'under_declared', 'held_back')))

    def test_doctor_reports_the_under_declared_flavor(self):
        # The cloud's flavors as nova-config created them from the built-in
        # scenario: 32 GB, pmem:hot_ratio=0.25, near memory 32768 x 0.25 =
        # 8192 MB.
        specs = {'pmem:modes': 'dram,memory_mode', 'pmem:priority': 'low',
                 'pmem:hot_ratio': '0.25', cases.NEAR: '8192'}
        snap = cases.clean()
        snap = cases.replace(snap, flavors=snap.flavors + (
            cases.flavor('redis', 32, **specs),
            cases.flavor('mysql', 32, **specs)))
        cloud = self.useFixture(doctor_cli.StubCloud(snap))
        status, out, err = cloud.doctor('--observations', self.obs,
                                        '-f', 'json')
        # A warning and no error: exit status 1.
        self.assertEqual(1, status, err)
        self.assertEqual(
            [{'severity': 'warning', 'code': 'hot-ratio-under-declared',
              'object': 'flavor redis',
              # 32768 MB x 0.4 = 13107.2, rounded up to 13108 MB.
              'fix': 'openstack flavor set --property pmem:hot_ratio=0.4 '
                     '--property resources:CUSTOM_NEAR_MEMORY_MB=13108 '
                     'redis'}],
            # Without --config-file the doctor also says (info) that it
            # assumed the [pmem] defaults.
            [{k: f[k] for k in ('severity', 'code', 'object', 'fix')}
             for f in json.loads(out) if f['severity'] != 'info'])
        self.assertIn('p95 0.375, max 0.38 of 4 instances in 3 windows',
                      json.loads(out)[0]['problem'])

    def test_plan_with_the_observed_ratio(self):
        text, _source = scenario.read_text('telco-cost-matched')
        text = text.replace('    hot_ratio: 0.25\n',
                            '    hot_ratio: observed\n')
        self.assertEqual(2, text.count('hot_ratio: observed'))
        path = os.path.join(self.dir, 'observed.yaml')
        with open(path, 'w') as f:
            f.write(text + 'observations: obs\n')
        scen = scenario.load(path)
        redis = scen.workloads['redis']
        self.assertEqual(0.4, redis.hot_ratio)
        self.assertEqual('0.4', redis.extra_specs['pmem:hot_ratio'])
        self.assertEqual(
            'observed: p95 of 4 instances in 3 windows, %s (0.375, '
            'rounded up to 0.05: 0.4)' % self.obs, redis.hot_ratio_source)
        self.assertEqual(0.2, scen.workloads['mysql'].hot_ratio)

        def density(*argv):
            return {(r['config'], r['workload']): (r['vms_per_node'],
                                                   r['binding'])
                    for r in self.planner('compare', '-f', 'json', *argv)}
        before = density()
        after = density('--scenario', path)
        # The Memory-Mode node: 192 GB of DRAM cache is 196608 MB. Declared
        # 0.25: 32768 x 0.25 = 8192 hot MB per VM, 24 VMs in the cache, so
        # the 512 GB of memory bind first (512 x 0.9 / 24 GB used = 19.2:
        # 19 VMs). Observed 0.4: 13107.2 hot MB per VM, 196608 / 13107.2 =
        # 15 VMs: the DRAM cache binds.
        self.assertEqual((19, 'memory'), before[('mm-192-512', 'redis')])
        self.assertEqual((15, 'dram_cache'), after[('mm-192-512', 'redis')])
        # mysql at 0.2 has even more room in the cache (6553.6 hot MB, 30
        # VMs); vCPUs and memory still bind at 20.
        self.assertEqual(before[('mm-192-512', 'mysql')],
                         after[('mm-192-512', 'mysql')])
        self.assertEqual((19, 'shared_ratio'),
                         after[('mm-192-512', 'mysql')])
        self.assertEqual((20, 'vcpu+memory'), density(
            '--scenario', path, '--workload', 'mysql')[
                ('mm-192-512', 'mysql')])
        # DRAM nodes have no cache: the ratio changes nothing there.
        self.assertEqual(before[('dram-384', 'redis')],
                         after[('dram-384', 'redis')])
        # The same through --observations, on a scenario without the key.
        plain = os.path.join(self.dir, 'plain.yaml')
        with open(plain, 'w') as f:
            f.write(text)
        self.assertEqual(after, density('--scenario', plain,
                                        '--observations', self.obs))
