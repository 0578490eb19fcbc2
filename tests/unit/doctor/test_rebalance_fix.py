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
"""The fix of working-set-over-near-memory: the rebalancing plan, printed.

The snapshot and the observations translated into the plan's input
(``cloud.rebalance_hosts``: Placement's room, the latest window's working
sets, the cells), the plan's moves as ``openstack server migrate`` lines
run as printed by a shell against a stand-in ``openstack`` that records
its arguments, the plan's reasons as comments, and the thresholds as the
doctor's options. The plans expected here are worked out by hand; the
plan itself is proven in tests/unit/core/plans/test_rebalance.py, and the lines
are run against a real Nova in tests/functional/test_doctor_fixes.py.
"""

import dataclasses
import json
import os
import shlex

from nova_pmem_filters.core.plans import rebalance
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters.doctor import checks
from nova_pmem_filters.doctor import cloud
from nova_pmem_filters.doctor import snapshot as snap_mod
from tests.unit.doctor import cases
from tests.unit.doctor import test_cli
from tests.unit import obsdocs

GB = cases.GB
CODE = 'working-set-over-near-memory'
# 192 GB of DRAM cache (cases.clean()'s Memory-Mode hosts), at 0.9.
NEAR_MB = 192 * GB
CAPACITY = {'pmem:modes': kinds.MEMORY_MODE, 'pmem:hot_ratio': '0.25'}
MIGRATE = ('openstack --os-compute-api-version 2.30 server migrate '
           '--live-migration --host')
# A stand-in that appends its arguments (one a line) and an end mark.


def memory(total_gb, used_mb=0, reserved_mb=512, ratio=1.0):
    """Inventories and usages of a provider's RAM and vCPUs."""
    return dict(
        inventories={'MEMORY_MB': {'total': total_gb * GB,
                                   'reserved': reserved_mb,
                                   'allocation_ratio': ratio},
                     'VCPU': {'total': 80, 'allocation_ratio': 4.0}},
        usages={'MEMORY_MB': used_mb, 'VCPU': 0})


def with_room(snap, **hosts):
    """``snap`` whose providers have RAM: host=(total GB, used MB)."""
    for host, (total_gb, used_mb) in hosts.items():
        prov = snap.providers[host]
        room = memory(total_gb, used_mb)
        snap = cases.with_provider(
            snap, host, inventories=dict(prov.inventories,
                                         **room['inventories']),
            usages=room['usages'])
    return snap


def capacity(n, host='mm1'):
    return cases.server('c%d' % n, host, 32, **CAPACITY)


def measured(servers, ratio, host='mm1', **doc_args):
    """The window of ``host`` measuring ``servers`` at a hot ratio."""
    return obsdocs.document(host, [
        obsdocs.instance(s.id, 'capacity', s.ram_mb, ratio, name=s.name)
        for s in servers], near_memory_mb=float(NEAR_MB), **doc_args)


def over_mm1(extra=(), ratio=0.95, **thresholds):
    """Seven 32 GB servers on mm1 measured at 0.95: 217907 MB > 196608.

    mm1 and mm2 have 512 GB of RAM, dram1 384 GB, none of it used.
    """
    servers = tuple(capacity(n) for n in range(1, 8))
    snap = cases.replace(
        with_room(cases.clean(), mm1=(512, 7 * 32 * GB), mm2=(512, 0),
                  dram1=(384, 0), ad1=(192, 0)),
        servers=servers + tuple(extra),
        observations=(measured(servers, ratio),),
        thresholds=snap_mod.Thresholds(**thresholds))
    return snap


def working_set_findings(snap):
    return {f.object: f for f in checks.run(snap) if f.code == CODE}


class TranslationTestCase(cases.DoctorTestCase):
    """What the plan is given: the snapshot and the latest windows."""

    def hosts(self, snap):
        return {h.name: h for h in cloud.rebalance_hosts(
            snap, cloud.view(snap))}

    def test_room_as_placement_counts_it(self):
        snap = cases.with_provider(cases.clean(), 'mm1', **memory(
            512, used_mb=100000, ratio=1.5))
        snap = cases.with_provider(snap, 'mm1', usages={
            'MEMORY_MB': 100000, 'VCPU': 10})
        hosts = self.hosts(snap)
        # (total - reserved) x ratio - used.
        self.assertEqual((512 * GB - 512) * 1.5 - 100000,
                         hosts['mm1'].free_ram_mb)
        self.assertEqual(80 * 4.0 - 10, hosts['mm1'].free_vcpus)
        # No RAM inventory (cases' providers have none): no room.
        self.assertEqual(0.0, hosts['mm2'].free_ram_mb)
        self.assertEqual(80, hosts['mm2'].free_vcpus)

    def test_a_host_of_several_nodes_by_its_roomiest(self):
        snap = cases.replace(cases.clean(), computes=tuple(
            snap_mod.Compute(c.host, ('mm1-a', 'mm1-b', 'mm1-gone'))
            if c.host == 'mm1' else c for c in cases.clean().computes))
        providers = dict(snap.providers)
        providers['mm1-a'] = snap_mod.Provider(
            'uuid-a', 'mm1-a', frozenset(), **memory(64, used_mb=1000))
        providers['mm1-b'] = snap_mod.Provider(
            'uuid-b', 'mm1-b', frozenset(), **memory(128, used_mb=1000))
        hosts = self.hosts(cases.replace(snap, providers=providers))
        self.assertEqual(128 * GB - 512 - 1000, hosts['mm1'].free_ram_mb)

    def test_instances_with_the_latest_window(self):
        a, b, c = capacity(1), capacity(2), capacity(3)
        bound = dataclasses.replace(
            cases.server('n', 'mm1', 10, **{'hw:numa_nodes': '3'}),
            numa_cells=((0, 4 * GB), (1, 2 * GB), (0, 4 * GB)),
            numa_nodes=(0, 1, 0))
        none = dataclasses.replace(capacity(4), numa_cells=(),
                                   numa_nodes=())
        older = measured([a, b, c], 0.9, started='2026-11-25T12:00:00Z')
        gap = obsdocs.instance(c.id, 'capacity', c.ram_mb, 0.5)
        gap.update(working_set_mb=None, hot_ratio=None, method=None,
                   gap='no DAMON')
        newer = obsdocs.document('mm1', [
            obsdocs.instance(a.id, 'capacity', a.ram_mb, 0.5),
            obsdocs.instance(bound.id, 'f', bound.ram_mb, 0.1), gap],
            started='2026-11-25T12:01:00Z', near_memory_mb=float(NEAR_MB))
        snap = cases.replace(cases.clean(), servers=(a, b, c, bound, none),
                             observations=(newer, older))
        insts = {i.uuid: i for i in self.hosts(snap)['mm1'].instances}
        # The newer window, whatever the order of the files.
        self.assertEqual(16 * GB, insts[a.id].working_set_mb)
        # Measured before only, or not at all: none, never the older one.
        self.assertIsNone(insts[b.id].working_set_mb)
        self.assertIsNone(insts[c.id].working_set_mb)
        self.assertIsNone(insts[none.id].working_set_mb)
        self.assertEqual(rebalance.Instance(
            uuid=a.id, name='c1', memory_mb=32 * GB, vcpus=4,
            extra_specs=CAPACITY, working_set_mb=16 * GB, cells=None),
            insts[a.id])
        # Two guest cells on host cell 0 are one.
        self.assertEqual(((0, 8 * GB), (1, 2 * GB)), insts[bound.id].cells)
        self.assertIsNone(insts[none.id].cells)

    def test_cells(self):
        doc = obsdocs.document('mm1', [], near_memory_mb=float(NEAR_MB),
                               nodes=[{'id': 0, 'cpus': True},
                                      {'id': 1, 'cpus': True},
                                      {'id': 2, 'cpus': False}])
        snap = cases.replace(cases.clean(), observations=(doc,))
        hosts = self.hosts(snap)
        # The observed nodes with CPUs; mm2 and dram1: not known.
        self.assertEqual((rebalance.Cell(0), rebalance.Cell(1)),
                         hosts['mm1'].cells)
        self.assertIsNone(hosts['mm2'].cells)
        # The aggregate's per-cell sizes come first, as the host checks
        # read them.
        snap = cases.with_aggregate(
            snap, 'pmem-mm', **{profile.DRAM_CACHE_PER_CELL_KEY: '3:96,4:96'})
        hosts = self.hosts(snap)
        self.assertEqual((3, 4), tuple(c.id for c in hosts['mm1'].cells))
        self.assertEqual((3, 4), tuple(c.id for c in hosts['mm2'].cells))

    def test_a_window_named_by_its_node(self):
        snap = cases.replace(cases.clean(), computes=tuple(
            snap_mod.Compute(c.host, ('mm1.example.org',))
            if c.host == 'mm1' else c for c in cases.clean().computes))
        doc = measured([capacity(1)], 0.5, host='mm1.example.org')
        snap = cases.replace(snap, servers=(capacity(1),),
                             observations=(doc,))
        (inst,) = self.hosts(snap)['mm1'].instances
        self.assertEqual(16 * GB, inst.working_set_mb)


class FixTestCase(cases.DoctorTestCase):
    """The plan as lines that run as printed, and its reasons."""

    def run_fix(self, fix):
        """Run ``fix`` with ``sh -e``; the argument lists of openstack."""
        return [args for args, _stdin
                in cases.run_recorded(self, fix, ('openstack',))]

    def test_moves_as_live_migrations(self):
        # 7 x 31129.6 = 217907 MB over 196608; at most 0.9 x 196608 =
        # 176947 MB: two must go (one leaves 186778). Only mm2 takes a
        # memory_mode-only flavor; of equal servers the first by name
        # move.
        snap = over_mm1()
        found = working_set_findings(snap)
        self.assertEqual(['host mm1'], sorted(found))
        fix = found['host mm1'].fix
        self.assertEqual(
            '# the rebalancing plan moves 2 instances (65536 MB of RAM) off '
            'host mm1: its working set goes from 217907 to 155648 MB, at '
            'most 0.9 x its 196608 MB of near memory\n'
            '%s mm2 id-c1\n%s mm2 id-c2' % (MIGRATE, MIGRATE), fix)
        self.assertEqual(
            [['--os-compute-api-version', '2.30', 'server', 'migrate',
              '--live-migration', '--host', 'mm2', 'id-c%d' % n]
             for n in (1, 2)], self.run_fix(fix))
        self.assertIn('217907 MB exceeds its 196608 MB',
                      found['host mm1'].problem)

    def test_names_and_hosts_are_quoted(self):
        move = rebalance.Move('a b;c', 'x', 'mm1', "mm'2", 1.0, 1.0)
        line = checks.observations.migrate_line(move)
        self.assertEqual(shlex.split(line)[-3:], ['--host', "mm'2", 'a b;c'])
        self.assertEqual(
            [['--os-compute-api-version', '2.30', 'server', 'migrate',
              '--live-migration', '--host', "mm'2", 'a b;c']],
            self.run_fix(line))

    def test_a_cell_finding_points_to_the_host_finding(self):
        servers = tuple(capacity(n) for n in range(1, 8))
        cells = [{'id': 0, 'working_set_mb': 217907.2,
                  'near_memory_mb': 98304.0},
                 {'id': 1, 'working_set_mb': 0.0,
                  'near_memory_mb': 98304.0}]
        snap = cases.replace(over_mm1(), observations=(
            measured(servers, 0.95, cells=cells),))
        found = working_set_findings(snap)
        self.assertEqual(['host mm1', 'host mm1 cell 0'], sorted(found))
        self.assertIn(MIGRATE, found['host mm1'].fix)
        self.assertEqual("# the rebalancing plan of host mm1 is the fix of "
                         "host mm1", found['host mm1 cell 0'].fix)
        self.assertEqual([], self.run_fix(found['host mm1 cell 0'].fix))

    def test_an_unmeasured_instance_is_not_guessed(self):
        snap = over_mm1(extra=(cases.server('x', 'mm1', 2),))
        fix = working_set_findings(snap)['host mm1'].fix
        self.assertEqual(
            '# nothing moves off host mm1 (unmeasured): the working set of '
            '1 of its 8 instances was not measured (x): it is not planned '
            'on', fix)
        self.assertEqual([], self.run_fix(fix))

    def test_no_destination(self):
        # mm2's RAM is taken; dram1 and ad1 refuse the flavor's mode.
        snap = with_room(over_mm1(), mm2=(512, 512 * GB - 512))
        fix = working_set_findings(snap)['host mm1'].fix
        self.assertEqual(
            '# nothing moves off host mm1 (no-destination): no other host '
            'admits any of its 7 instances (mode: 14, ram: 7)', fix)

    def test_the_cap(self):
        fix = working_set_findings(over_mm1(max_moves=0))['host mm1'].fix
        self.assertEqual(
            '# nothing moves off host mm1 (cap-reached): fixing it takes at '
            'least 2 move(s) and the plan holds 0 of the 0 allowed; a later '
            'audit can go on', fix)

    def test_act_above_is_the_trigger(self):
        # 217907 MB is 1.108 x 196608.
        self.assertEqual({}, working_set_findings(over_mm1(act_above=1.2)))
        found = working_set_findings(over_mm1(act_above=1.1))
        self.assertIn('217907 MB exceeds 1.1 x its 196608 MB',
                      found['host mm1'].problem)
        self.assertEqual(2, found['host mm1'].fix.count(MIGRATE))
        # Aimed at 0.75 x 196608 = 147456 MB: three must go.
        found = working_set_findings(over_mm1(aim_below=0.75))
        self.assertEqual(3, found['host mm1'].fix.count(MIGRATE))
        self.assertIn('from 217907 to 124518 MB, at most 0.75 x',
                      found['host mm1'].fix)

    def test_the_plan_reads_the_aggregates_near_memory(self):
        # The observer's profile says 150000 MB; the aggregates, which the
        # scheduler reads, 192 GB: the plan finds nothing over.
        servers = tuple(capacity(n) for n in range(1, 6))
        doc = obsdocs.document('mm1', [
            obsdocs.instance(s.id, 'capacity', s.ram_mb, 0.95)
            for s in servers], near_memory_mb=150000.0)
        snap = cases.replace(over_mm1(), servers=servers,
                             observations=(doc,))
        self.assertEqual(
            '# the rebalancing plan does not find host mm1 over: 155648 MB '
            'measured in its latest window, 1 x its 196608 MB of near '
            'memory is 196608 MB: nothing to move',
            working_set_findings(snap)['host mm1'].fix)

    def test_hosts_the_plan_does_not_hold(self):
        ghost = obsdocs.document('ghost', [], near_memory_mb=1.0)
        ghost = dataclasses.replace(ghost, host=dataclasses.replace(
            ghost.host, working_set_mb=2.0))
        dram = dataclasses.replace(ghost, hostname='dram1')
        snap = cases.replace(over_mm1(), observations=(
            over_mm1().observations + (ghost, dram)))
        found = working_set_findings(snap)
        self.assertEqual('# host ghost is not a compute host of the cloud: '
                         'no plan moves anything off it',
                         found['host ghost'].fix)
        self.assertEqual('# host dram1 is not tiered by its aggregates '
                         '(pmem_mode=dram): the plan moves nothing off it',
                         found['host dram1'].fix)
        self.assertIn(MIGRATE, found['host mm1'].fix)


class CliTestCase(cases.DoctorTestCase):
    """The thresholds as the doctor's options."""

    def setUp(self):
        super().setUp()
        snap = over_mm1()
        self.cloud = self.useFixture(test_cli.StubCloud(
            cases.replace(snap, observations=None)))
        self.obs = obsdocs.write(os.path.join(self.cloud.dir, 'obs'),
                                 snap.observations)

    def fixes(self, *argv):
        status, out, err = self.cloud.doctor(
            '--observations', self.obs, '-f', 'json', *argv)
        self.assertEqual(1, status, err)
        return {r['object']: r['fix'] for r in json.loads(out)
                if r['code'] == CODE}

    def test_the_thresholds_reach_the_plan(self):
        # The stub serves no usages: mm1's RAM is all free to Placement,
        # which changes nothing here.
        self.assertEqual(2, self.fixes()['host mm1'].count(MIGRATE))
        self.assertEqual(3, self.fixes('--aim-below', '0.75')[
            'host mm1'].count(MIGRATE))
        self.assertIn('(cap-reached)',
                      self.fixes('--max-moves', '0')['host mm1'])
        self.assertEqual({}, self.fixes('--act-above', '1.2'))

    def test_bad_thresholds_are_one_line_and_exit_3(self):
        for argv, words in (
                (('--act-above', 'x'),
                 "argument --act-above: invalid float value: 'x'"),
                (('--act-above', 'nan'),
                 '--act-above: expected a number above 0, got nan'),
                (('--aim-below', '0'),
                 '--aim-below: expected a number above 0, got 0.0'),
                (('--aim-below', '1.5'),
                 '--aim-below 1.5 is above --act-above 1: the plan must '
                 'aim below the threshold it acts above'),
                (('--max-moves', '1.5'),
                 "argument --max-moves: invalid int value: '1.5'"),
                (('--max-moves', '-1'),
                 '--max-moves: expected a whole number 0 or more, got -1')):
            status, out, err = self.cloud.doctor(
                '--observations', self.obs, *argv)
            self.assertEqual((3, ''), (status, out), err)
            self.assertEqual(1, len(err.splitlines()), err)
            self.assertIn(words, err)
            self.assertIn("(see 'nova-pmem-doctor help check')", err)
