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

Tiering off on a host with far nodes, tiering that does not keep up, and
instances whose hot pages sit on the far node. Each fix is run as printed
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
