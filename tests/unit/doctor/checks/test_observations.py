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
"""The checks of what nova-pmem-observe measured (--observations DIR)."""

import dataclasses
import json
import os

from nova_pmem_filters.doctor import checks
from tests.unit.doctor import cases
from tests.unit.doctor import test_cli
from tests.unit import obsdocs

GB = cases.GB


def observed(snap, *docs):
    return cases.replace(snap, observations=tuple(docs))


class HotRatioTestCase(cases.DoctorTestCase):

    def test_no_observations_no_finding(self):
        self.assertFindings(observed(cases.clean()))
        self.assertFindings(cases.clean())

    def test_under_declared_flavor(self):
        # capacity: 32 GB, pmem:hot_ratio=0.25, 8192 MB of near memory.
        # Observed 0.3, 0.35 and 0.4: p95 at position 0.95 x 2 = 1.9, so
        # 0.35 + 0.9 x 0.05 = 0.395, rounded up to 0.4 > 0.25.
        doc = obsdocs.document('mm1', [
            obsdocs.instance('a', 'capacity', 32 * GB, 0.3),
            obsdocs.instance('b', 'capacity', 32 * GB, 0.35),
            obsdocs.instance('c', 'capacity', 32 * GB, 0.4),
            # small takes the default 0.5 and is observed below it.
            obsdocs.instance('d', 'small', 2 * GB, 0.2),
            # latency cannot land on a tiered host: no DRAM cache to fill.
            obsdocs.instance('e', 'latency', 8 * GB, 0.9),
            # A flavor the cloud no longer has.
            obsdocs.instance('f', 'ghost', 8 * GB, 0.9)])
        found = self.assertFindings(
            observed(cases.clean(), doc),
            (checks.WARNING, 'hot-ratio-under-declared', 'flavor capacity'))
        finding = found[('hot-ratio-under-declared', 'flavor capacity')]
        self.assertIn('declares pmem:hot_ratio=0.25', finding.problem)
        self.assertIn('p95 0.395, max 0.4 of 3 instances in 1 windows',
                      finding.problem)
        # 32768 MB x 0.4 = 13107.2, rounded up to 13108 MB.
        self.assertEqual(
            'openstack flavor set --property pmem:hot_ratio=0.4 --property '
            'resources:CUSTOM_NEAR_MEMORY_MB=13108 capacity', finding.fix)

    def test_default_hot_ratio_under_declared(self):
        # small takes [pmem] default_hot_ratio 0.5; observed 0.7 twice.
        doc = obsdocs.document('mm1', [
            obsdocs.instance('a', 'small', 2 * GB, 0.7),
            obsdocs.instance('b', 'small', 2 * GB, 0.7)])
        found = self.assertFindings(
            observed(cases.clean(), doc),
            (checks.WARNING, 'hot-ratio-under-declared', 'flavor small'))
        finding = found[('hot-ratio-under-declared', 'flavor small')]
        self.assertIn('takes the default hot ratio 0.5', finding.problem)
        # 2048 MB x 0.7 = 1433.6, rounded up to 1434 MB.
        self.assertEqual('openstack flavor set --property pmem:hot_ratio=0.7 '
                         '--property resources:CUSTOM_NEAR_MEMORY_MB=1434 '
                         'small', finding.fix)

    def test_fix_keeps_the_near_memory_group(self):
        # An unnumbered key beside resources1:... would be a second
        # request, summed with the first; a second group is dropped.
        doc = obsdocs.document('mm1', [
            obsdocs.instance('a', 'm1 grouped', 2 * GB, 0.7),
            obsdocs.instance('b', 'split', 2 * GB, 0.7)])
        snap = cases.with_flavor(cases.clean(), cases.flavor(
            'm1 grouped', 2, **{'pmem:hot_ratio': '0.5',
                                'resources1:CUSTOM_NEAR_MEMORY_MB': '1024'}))
        snap = cases.with_flavor(snap, cases.flavor('split', 2, **{
            'pmem:hot_ratio': '0.5',
            'resources1:CUSTOM_NEAR_MEMORY_MB': '512',
            'resources2:CUSTOM_NEAR_MEMORY_MB': '512'}))
        fixes = {f.object: f.fix for f in checks.run(observed(snap, doc))
                 if f.code == 'hot-ratio-under-declared'}
        self.assertEqual(
            "openstack flavor set --property pmem:hot_ratio=0.7 --property "
            "resources1:CUSTOM_NEAR_MEMORY_MB=1434 'm1 grouped'",
            fixes['flavor m1 grouped'])
        self.assertEqual(
            'openstack flavor unset --property '
            'resources2:CUSTOM_NEAR_MEMORY_MB split && openstack flavor set '
            '--property pmem:hot_ratio=0.7 --property '
            'resources1:CUSTOM_NEAR_MEMORY_MB=1434 split',
            fixes['flavor split'])


class WorkingSetTestCase(cases.DoctorTestCase):

    def test_host_and_cell_over_near_memory(self):
        # Flavors the cloud does not have: no hot-ratio finding.
        insts = [obsdocs.instance('a', 'big', 32 * GB, 0.5, cell=0),
                 obsdocs.instance('b', 'tiny', 2 * GB, 0.5, cell=1,
                                  numa_mb={'1': 2048.0})]
        # 16384 + 1024 = 17408 MB measured against 16000 MB; cell 0 holds
        # 16384 MB against 8000 MB, cell 1 1024 MB against 8000 MB.
        cells = [{'id': 0, 'working_set_mb': 16384.0,
                  'near_memory_mb': 8000.0},
                 {'id': 1, 'working_set_mb': 1024.0,
                  'near_memory_mb': 8000.0}]
        over = obsdocs.document('mm1', insts, near_memory_mb=16000.0,
                                cells=cells)
        fine = obsdocs.document('mm1', insts[1:], near_memory_mb=16000.0,
                                started='2026-11-25T12:01:00Z')
        unknown = obsdocs.document('mm2', insts)
        found = self.assertFindings(
            observed(cases.clean(), over, fine, unknown),
            (checks.WARNING, 'working-set-over-near-memory', 'host mm1'),
            (checks.WARNING, 'working-set-over-near-memory',
             'host mm1 cell 0'))
        host = found[('working-set-over-near-memory', 'host mm1')]
        self.assertIn('17408 MB exceeds its 16000 MB', host.problem)
        self.assertIn('in 1 of 2 windows', host.problem)
        self.assertIn('instance-a (big, 16384 MB), instance-b (tiny, '
                      '1024 MB)', host.problem)
        cell = found[('working-set-over-near-memory', 'host mm1 cell 0')]
        self.assertIn('16384 MB exceeds its 8000 MB', cell.problem)
        self.assertNotIn('instance-b', cell.problem)


class NumaTestCase(cases.DoctorTestCase):

    def test_remote_and_slow_tier(self):
        nodes = [{'id': 0, 'cpus': True}, {'id': 1, 'cpus': True},
                 {'id': 2, 'cpus': False}]
        pinned = dataclasses.replace(
            cases.server('p1', 'mm2', 8, **{'hw:numa_nodes': '1'}),
            numa_nodes=(0,), numa_cells=((0, 8 * GB),))
        snap = cases.replace(cases.clean(),
                             servers=cases.clean().servers + (pinned,))
        doc = obsdocs.document('mm2', [
            # Bound by Nova to node 0; 7000 of 8000 MB (88%) on node 1.
            obsdocs.instance('id-p1', 'f', 8 * GB,
                             0.1, numa_mb={'0': 1000.0, '1': 7000.0},
                             name='p1'),
            # Unknown to the snapshot, but the observer saw it bound to
            # cell 1; 6000 of 8000 MB (75%) on the CPU-less node 2.
            obsdocs.instance('x', 'small', 8 * GB, 0.1, cell=1,
                             numa_mb={'1': 2000.0, '2': 6000.0}),
            # Not bound (no hw:numa_nodes, no cell): the kernel may demote
            # its cold pages where it likes.
            obsdocs.instance('y', 'small', 8 * GB, 0.1, cell=None,
                             numa_mb={'2': 8000.0}),
            # Bound and local.
            obsdocs.instance('z', 'small', 8 * GB, 0.1, cell=0,
                             numa_mb={'0': 8000.0})], nodes=nodes)
        found = self.assertFindings(
            observed(snap, doc),
            # Not from the observations: the doctor knows no cells of mm2.
            (checks.INFO, 'cache-cells-unchecked', 'host mm2'),
            (checks.WARNING, 'numa-memory-remote', 'host mm2'),
            (checks.WARNING, 'numa-memory-slow-tier', 'host mm2'))
        self.assertIn('p1 (88% off node 0)',
                      found[('numa-memory-remote', 'host mm2')].problem)
        slow = found[('numa-memory-slow-tier', 'host mm2')].problem
        self.assertIn('instance-x (75% on CPU-less node 2)', slow)
        self.assertNotIn('instance-y', slow)


class CliTestCase(cases.DoctorTestCase):

    def test_bad_observations_are_one_line_and_exit_3(self):
        cloud = self.useFixture(test_cli.StubCloud(cases.clean()))
        bad = os.path.join(cloud.dir, 'obs')
        os.mkdir(bad)
        doc = obsdocs.document('mm1', [])
        with open(os.path.join(bad, 'mm1.json'), 'w') as f:
            json.dump(dict(doc.to_dict(),
                           instances=[{'uuid': 'u', 'hot_ratio': -1}]),
                      f)
        for directory, words in (
                (bad, ('mm1.json["instances"][0]["hot_ratio"]',
                       'expected a number')),
                (bad + '.nope', ('obs.nope', 'not a directory'))):
            status, out, err = cloud.doctor('--observations', directory)
            # Could not run: "unknown".
            self.assertEqual(3, status)
            self.assertEqual('', out)
            self.assertEqual(1, len(err.splitlines()), err)
            for word in words:
                self.assertIn(word, err)
