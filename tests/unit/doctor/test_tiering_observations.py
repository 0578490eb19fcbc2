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
"""The doctor on the kernel's tiering the observer recorded.

Tiering off on a host with far nodes, tiering that does not keep up,
instances whose hot pages sit on the far node, and instances whose bound
memory left its nodes. Each fix is run as printed
against stand-ins for ``ssh`` and ``openstack`` that record what reaches
them: the lines the host's root shell gets must be the core's.
"""

import dataclasses

from nova_pmem_filters.core.rules import tiering
from nova_pmem_filters.doctor import checks
from tests.unit.doctor import cases
from tests.unit import obsdocs

GB = cases.GB
NODES = [{'id': 0, 'cpus': True}, {'id': 2, 'cpus': False}]


def observed(*docs):
    return cases.replace(cases.clean(), observations=tuple(docs))


def window(instances=(), started='2026-11-25T12:00:00Z', **tiering_args):
    return obsdocs.document('cxl1', list(instances), started=started,
                            nodes=NODES,
                            tiering=obsdocs.tiering(**tiering_args))


def hot_instance(uuid, hot_on_far_mb, near_mb=1024.0, far_mb=3072.0,
                 flavor='m1.gone'):
    """An instance of a flavor the cloud no longer has, on no cell."""
    inst = obsdocs.instance(uuid, flavor, 4 * GB, 0.75, cell=None,
                            numa_mb={'0': near_mb, '2': far_mb})
    inst.update(near_resident_mb=near_mb, far_resident_mb=far_mb,
                hot_on_far_mb=hot_on_far_mb)
    return inst


class _Runs(object):
    """Run a fix as printed, with ``ssh`` and ``openstack`` recorded."""

    def run_fix(self, fix, command):
        args, stdin = cases.run_recorded(self, fix)[-1]
        self.assertEqual(command, args[:len(command)])
        return args, stdin


class TieringOffTestCase(cases.DoctorTestCase, _Runs):

    def test_demotion_off(self):
        found = self.assertFindings(
            observed(window(demotion_enabled=False)),
            (checks.WARNING, 'observed-tiering-off', 'host cxl1'))
        finding = found[('observed-tiering-off', 'host cxl1')]
        self.assertIn('observed 2026-11-25T12:00:00Z: the kernel (Linux '
                      '6.9.0-1-amd64) promotes but does not demote for CXL '
                      'node 2: demotion_enabled is false', finding.problem)
        self.assertIn('pmem_kernel_tiering=off', finding.problem)
        # Run as printed: the host's root shell gets the core's lines.
        args, stdin = self.run_fix(finding.fix, ['cxl1'])
        self.assertEqual(['cxl1', 'sudo', 'sh', '-e'], args)
        problem, = tiering.judge(tiering.State(
            numa_balancing=2, demotion_enabled=False,
            tiers=((4, (0,)), (22, (2,)))), [0], [2]).problems
        self.assertEqual(list(problem.fix + problem.persist), stdin)
        self.assertEqual(['echo true > /sys/kernel/mm/numa/demotion_enabled',
                          "echo 'w /sys/kernel/mm/numa/demotion_enabled - - "
                          "- - true' > /etc/tmpfiles.d/memory-tiering.conf"],
                         stdin)

    def test_numa_balancing_without_tiering(self):
        found = self.assertFindings(
            observed(window(numa_balancing=1)),
            (checks.WARNING, 'observed-tiering-off', 'host cxl1'))
        _args, stdin = self.run_fix(
            found[('observed-tiering-off', 'host cxl1')].fix, ['cxl1'])
        self.assertEqual('sysctl -w kernel.numa_balancing=3', stdin[0])

    def test_cxl_in_the_dram_tier_has_no_command(self):
        found = self.assertFindings(
            observed(window(tiers=((4, (0, 2)),))),
            (checks.WARNING, 'observed-tiering-off', 'host cxl1'))
        finding = found[('observed-tiering-off', 'host cxl1')]
        self.assertIn('node 2 in memory_tier4, the tier of the DRAM',
                      finding.problem)
        # Nothing to run: every line is a comment.
        self.assertTrue(all(line.startswith('#')
                            for line in finding.fix.splitlines()),
                        finding.fix)
        self.assertIn('# no setting turns it on: node 2 in memory_tier4',
                      finding.fix)

    def test_the_latest_window_counts(self):
        # Off at noon, on since: nothing to do.
        self.assertFindings(observed(
            window(demotion_enabled=False),
            window(started='2026-11-25T13:00:00Z')))
        # On at noon, off since.
        self.assertFindings(
            observed(window(started='2026-11-25T13:00:00Z',
                            demotion_enabled=False), window()),
            (checks.WARNING, 'observed-tiering-off', 'host cxl1'))

    def test_a_host_without_far_nodes(self):
        # A DRAM host's kernel does not tier either: nothing to tier.
        doc = obsdocs.document('dram9', [], tiering=obsdocs.tiering(
            numa_balancing=0, demotion_enabled=False, far_nodes=(),
            tiers=((4, (0,)),)))
        self.assertEqual('off', doc.tiering.state)
        self.assertFindings(observed(doc))

    def test_older_documents_say_nothing_of_tiering(self):
        doc = obsdocs.document('cxl1', [hot_instance('a', None)],
                               nodes=NODES)
        self.assertIsNone(doc.tiering)
        self.assertFindings(observed(doc))


class LaggingTestCase(cases.DoctorTestCase, _Runs):

    def test_promotion_held_back_by_the_rate_limit(self):
        # 1000 of 10000 candidates a second promoted, the limit at 1 MB/s.
        lag = {'pgpromote_success': 1000.0, 'pgpromote_candidate': 10000.0}
        fine = {'pgpromote_success': 100.0, 'pgpromote_candidate': 120.0}
        found = self.assertFindings(
            observed(window(rate_limit=1, rates=lag),
                     window(rate_limit=1, rates=fine,
                            started='2026-11-25T12:01:00Z'),
                     window(rate_limit=1, rates=dict(
                         lag, pgpromote_candidate=4000.0),
                         started='2026-11-25T12:02:00Z')),
            (checks.WARNING, 'tiering-promotion-lags', 'host cxl1'))
        finding = found[('tiering-promotion-lags', 'host cxl1')]
        self.assertIn('in 2 of 3 windows (worst: 2026-11-25T12:00:00Z): '
                      '1000 pages/s promoted of 10000 candidates/s',
                      finding.problem)
        # 10000 pages/s of 4 KiB = 39.1 MB/s: 40.
        self.assertIn('# 40 MB/s: ', finding.fix)
        self.assertIn('10000 pages/s of 4 KiB = 39.1 MB/s', finding.fix)
        args, stdin = self.run_fix(finding.fix, ['cxl1'])
        self.assertEqual(
            ['sysctl -w kernel.numa_balancing_promote_rate_limit_MBps=40',
             "echo 'kernel.numa_balancing_promote_rate_limit_MBps = 40' > "
             "/etc/sysctl.d/61-numa-promote-rate-limit.conf"], stdin)

    def test_the_limit_holds_each_dram_node(self):
        # Per node where the kernel counts per node: the busiest DRAM
        # node's candidates, 6000 pages/s = 23.4 MB/s: 24.
        lag = {'pgpromote_success': 1000.0, 'pgpromote_candidate': 10000.0}
        found = self.assertFindings(
            observed(window(rate_limit=1, rates=lag, node_rates={
                0: {'pgpromote_candidate': 6000.0},
                2: {'pgpromote_candidate': 0.0}})),
            (checks.WARNING, 'tiering-promotion-lags', 'host cxl1'))
        _args, stdin = self.run_fix(
            found[('tiering-promotion-lags', 'host cxl1')].fix, ['cxl1'])
        self.assertEqual(
            'sysctl -w kernel.numa_balancing_promote_rate_limit_MBps=24',
            stdin[0])

    def test_not_the_rate_limit(self):
        # The limit is far above the candidates: no free DRAM.
        found = self.assertFindings(
            observed(window(rates={'pgpromote_success': 100.0,
                                   'pgpromote_candidate': 1000.0})),
            (checks.WARNING, 'tiering-promotion-lags', 'host cxl1'))
        fix = found[('tiering-promotion-lags', 'host cxl1')].fix
        self.assertIn('the promotion rate limit (65536 MB/s) does not hold '
                      'them back', fix)
        self.assertNotIn('sysctl', fix)

    def test_direct_demotion(self):
        found = self.assertFindings(
            observed(window(rates={'pgdemote_direct': 50.0,
                                   'pgdemote_kswapd': 900.0})),
            (checks.WARNING, 'tiering-direct-demotion', 'host cxl1'))
        finding = found[('tiering-direct-demotion', 'host cxl1')]
        self.assertIn('50 pages/s demoted by allocations themselves',
                      finding.problem)
        self.assertIn('openstack server migrate --live-migration SERVER',
                      finding.fix)

    def test_keeping_up(self):
        self.assertFindings(observed(window(rates={
            'pgpromote_success': 900.0, 'pgpromote_candidate': 1000.0,
            'pgdemote_direct': 0.0, 'pgdemote_kswapd': 900.0})))


class HotOnFarTestCase(cases.DoctorTestCase, _Runs):

    def test_hot_pages_on_the_far_node(self):
        found = self.assertFindings(
            observed(window([hot_instance('a', 2048.0),
                             hot_instance('b', 0.0)])),
            (checks.WARNING, 'hot-pages-on-far-node', 'instance a'))
        finding = found[('hot-pages-on-far-node', 'instance a')]
        # 0.75 x 4096 MB touched, 1024 MB near.
        self.assertIn('instance-a (m1.gone, host cxl1, observed '
                      '2026-11-25T12:00:00Z) touched 3072 MB in the window '
                      'but holds 1024 MB on the DRAM nodes: at least 2048 MB '
                      'of its hot pages sit on the far node (3072 MB '
                      'resident there)', finding.problem)
        args, _stdin = self.run_fix(finding.fix, ['server'])
        self.assertEqual(['server', 'migrate', '--live-migration', 'a'],
                         args)

    def test_tiering_off_fixes_it(self):
        found = self.assertFindings(
            observed(window([hot_instance('a', 2048.0)],
                            demotion_enabled=False, numa_balancing=0)),
            (checks.WARNING, 'observed-tiering-off', 'host cxl1'),
            (checks.WARNING, 'hot-pages-on-far-node', 'instance a'))
        finding = found[('hot-pages-on-far-node', 'instance a')]
        self.assertIn('the kernel does not tier (observed-tiering-off)',
                      finding.problem)
        self.assertEqual(found[('observed-tiering-off', 'host cxl1')].fix,
                         finding.fix)

    def test_promotion_lagging_fixes_it(self):
        found = self.assertFindings(
            observed(window([hot_instance('a', 2048.0)], rate_limit=1,
                            rates={'pgpromote_success': 1000.0,
                                   'pgpromote_candidate': 10000.0})),
            (checks.WARNING, 'tiering-promotion-lags', 'host cxl1'),
            (checks.WARNING, 'hot-pages-on-far-node', 'instance a'))
        self.assertIn('kernel.numa_balancing_promote_rate_limit_MBps=40',
                      found[('hot-pages-on-far-node', 'instance a')].fix)

    def test_memory_nova_binds(self):
        # The kernel moves none of a bound guest's pages: move the guest.
        bound = dataclasses.replace(
            cases.server('p1', 'cxl1', 4, **{'hw:numa_nodes': '1'}),
            id='a')
        snap = cases.replace(observed(window([hot_instance('a', 512.0)])),
                             servers=cases.clean().servers + (bound,))
        found = {(f.code, f.object): f for f in self.findings(snap)}
        finding = found[('hot-pages-on-far-node', 'instance a')]
        self.assertIn('Nova binds its memory (hw:numa_nodes=1)',
                      finding.problem)
        args, _stdin = self.run_fix(finding.fix, ['server'])
        self.assertEqual(['server', 'migrate', '--live-migration', 'a'],
                         args)


# numa_maps as posted to linux-mm (Michal Hocko, 2017-12-07): 6998 pages of
# 4 KiB of a mapping bound to node 0, on node 1 (here the CPU-less node 2).
MOVED_MB = 6998 * 4 / 1024.0
UUID = '5e1f0c2a-0000-4000-8000-00000000b0d1'


def bound_instance(off_mb=MOVED_MB, cell=0):
    """An instance bound to node 0 with ``off_mb`` of it on node 2."""
    inst = obsdocs.instance(UUID, 'm1.gone', 4 * GB, 0.25, cell=cell,
                            numa_mb={'0': 4096.0 - off_mb, '2': off_mb})
    inst.update(near_resident_mb=4096.0 - off_mb, far_resident_mb=off_mb,
                bound_off_node_mb=off_mb)
    return inst


class BoundMemoryDemotedTestCase(cases.DoctorTestCase, _Runs):

    OBJ = 'instance %s' % UUID

    def finding(self, doc):
        """The one bound-memory-demoted finding (others may be there)."""
        found = [f for f in self.findings(observed(doc))
                 if f.code == 'bound-memory-demoted']
        self.assertEqual([(checks.WARNING, self.OBJ)],
                         [(f.severity, f.object) for f in found])
        return found[0]

    def test_a_kernel_that_demotes_bound_memory(self):
        # Nothing else to find on the host.
        self.assertFindings(observed(window([bound_instance()])),
                            (checks.WARNING, 'bound-memory-demoted',
                             self.OBJ))
        finding = self.finding(window([bound_instance()]))
        self.assertIn('27 MB of the memory Nova binds to its cell (node 0) '
                      'sits on other NUMA nodes (CPU-less node 2)',
                      finding.problem)
        self.assertIn('reclaim demoted it: Linux 6.9.0-1-amd64 demotes '
                      'regardless of cpuset and memory policy',
                      finding.problem)
        # Run as printed: the host's root shell finds the guest's QEMU by
        # its UUID and moves the pages from node 2 back to node 0.
        args, stdin = self.run_fix(finding.fix, ['cxl1'])
        self.assertEqual(['cxl1', 'sudo', 'sh', '-e'], args)
        self.assertEqual(["pid=$(pgrep -f -- '-uuid %s')" % UUID,
                          'migratepages "$pid" 2 0'], stdin)

    def test_what_each_kernel_says(self):
        for tiering_args, said in [
                (dict(kernel='6.17.0'), 'for the next demotion node only'),
                (dict(kernel='7.0.1', cgroup='v1'), 'on cgroup v1 here'),
                (dict(kernel='7.0.1', cgroup='v2'),
                 'Linux 7.0.1 keeps demoted memory in a cgroup v2 cpuset'),
                (dict(demotion_enabled=False), 'the kernel does not demote '
                 'here: something else moved it')]:
            finding = self.finding(window([bound_instance()],
                                          **tiering_args))
            self.assertIn(said, finding.problem, tiering_args)
        doc = obsdocs.document('cxl1', [bound_instance()], nodes=NODES)
        self.assertIn("the kernel's tiering was not recorded",
                      self.finding(doc).problem)

    def test_not_reported(self):
        # Below 1 MB (rounding), bound and in place, binding nothing, or a
        # file written before the figure existed.
        in_place = bound_instance(off_mb=0.0)
        unbound = bound_instance()
        del unbound['bound_off_node_mb']
        for inst in (bound_instance(off_mb=0.5), in_place, unbound):
            self.assertFindings(observed(window([inst])))

    def test_without_a_cell_no_pages_are_moved(self):
        # Where its cell is unknown the pages have nowhere to go: the fix
        # says how to keep them, and runs nothing.
        finding = self.finding(window([bound_instance(cell=None)]))
        self.assertTrue(all(line.startswith('#')
                            for line in finding.fix.splitlines()),
                        finding.fix)
