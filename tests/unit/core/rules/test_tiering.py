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
"""The kernel's tiering: its files, the verdict, and what instances charge.

The charge is checked against an independent recount (every instance's
charge summed by hand from the rule as the docs state it), host-wide and
per cell; which flavors Nova binds is checked against Nova's own
``numa_get_constraints``.
"""

import os
import tempfile

import hypothesis
from hypothesis import strategies as st
import testtools

from nova_pmem_filters.core.grammars import sysfs
from nova_pmem_filters.core.rules import charging
from nova_pmem_filters.core.rules import decide
from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import nearmem
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters.core.rules import tiering
from tests.unit import hypo

QUARTER = extra_specs.parse({'pmem:hot_ratio': '0.25'})


def tree(files):
    """A recorded root holding ``{relative path: text}``."""
    root = tempfile.mkdtemp()
    for relative, text in files.items():
        path = os.path.join(root, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as f:
            f.write(text)
    return root


ON_FILES = {
    tiering.OSRELEASE_FILE: '6.8.0-49-generic\n',
    tiering.NUMA_BALANCING_FILE: '2\n',
    tiering.DEMOTION_FILE: 'true\n',
    tiering.RATE_LIMIT_FILE: '65536\n',
    tiering.MEMORY_TIERING_DIR + '/memory_tier4/nodelist': '0-1\n',
    tiering.MEMORY_TIERING_DIR + '/memory_tier22/nodelist': '2\n',
}


class FilesTestCase(testtools.TestCase):

    def test_numa_balancing(self):
        # What the sysctl accepts, and holds: 0 to 4 (kernel/sched/core.c,
        # extra1 SYSCTL_ZERO, extra2 SYSCTL_FOUR, since Linux 5.18).
        for text, value in (('0\n', 0), ('1', 1), ('2\n', 2), ('3', 3),
                            ('4\n', 4), (None, None)):
            self.assertEqual(value, sysfs.parse_numa_balancing(text))
        for text in ('5', '7', 'abc', '', '\n', '2\n3\n', '-1', '٢'):
            exc = self.assertRaises(sysfs.TieringError,
                                    sysfs.parse_numa_balancing, text, 'F')
            self.assertTrue(str(exc).startswith('F: '), exc)
        exc = self.assertRaises(sysfs.TieringError,
                                sysfs.parse_numa_balancing, '5')
        self.assertIn('0 to 4', str(exc))

    def test_booleans_and_numbers(self):
        self.assertTrue(sysfs.parse_bool('true\n'))
        self.assertFalse(sysfs.parse_bool('false'))
        self.assertIsNone(sysfs.parse_bool(None))
        # The kernel prints true or false, whatever was written (1, y,
        # on): mm/memory-tiers.c, and mm/mempolicy.c and mm/migrate.c
        # before, since 5.15.
        for text in ('yes', '1', '0', 'Y', 'N', 'on', 'True', 'FALSE'):
            exc = self.assertRaises(sysfs.TieringError, sysfs.parse_bool,
                                    text)
            self.assertIn('true or false', str(exc))
        self.assertEqual(65536, sysfs.parse_whole('65536\n'))
        self.assertRaises(sysfs.TieringError, sysfs.parse_whole, '1.5')

    def test_nodelist(self):
        self.assertEqual((0, 1, 2, 5), sysfs.parse_nodelist('0-2,5\n', 'F'))
        for text in ('', '2-1', '0,,1', 'a'):
            self.assertRaises(sysfs.TieringError, sysfs.parse_nodelist,
                              text, 'F')

    def test_vmstat(self):
        text = 'nr_free_pages 10\npgpromote_success 7\npgdemote_direct 3\n'
        self.assertEqual({'pgpromote_success': 7, 'pgdemote_direct': 3},
                         sysfs.parse_vmstat(text))
        self.assertEqual({}, sysfs.parse_vmstat(None))
        exc = self.assertRaises(sysfs.TieringError, sysfs.parse_vmstat,
                                'pgpromote_success\n', 'V')
        self.assertIn('V: line 1', str(exc))

    def test_read_a_recorded_tree(self):
        state = sysfs.read_state(tree(ON_FILES))
        self.assertEqual(tiering.State(
            kernel='6.8.0-49-generic', numa_balancing=2,
            demotion_enabled=True, promotion_rate_limit_mbps=65536,
            tiers=((4, (0, 1)), (22, (2,)))), state)
        self.assertEqual(22, state.tier_of(2))

    def test_a_kernel_without_the_files(self):
        self.assertEqual(tiering.State(), sysfs.read_state(tree({})))

    def test_unreadable_and_truncated_files_are_named(self):
        files = dict(ON_FILES)
        files[tiering.NUMA_BALANCING_FILE] = ''
        root = tree(files)
        exc = self.assertRaises(sysfs.TieringError, sysfs.read_state,
                                root)
        self.assertIn(os.path.join(root, tiering.NUMA_BALANCING_FILE),
                      str(exc))
        self.assertIn('empty', str(exc))
        # A directory where the file should be cannot be read.
        root = tree({})
        os.makedirs(os.path.join(root, tiering.DEMOTION_FILE))
        exc = self.assertRaises(sysfs.TieringError, sysfs.read_state,
                                root)
        self.assertIn('cannot read', str(exc))
        # A tier without its nodelist.
        root = tree({})
        os.makedirs(os.path.join(root, tiering.MEMORY_TIERING_DIR,
                                 'memory_tier4'))
        self.assertRaises(sysfs.TieringError, sysfs.read_state, root)

    def test_counters_host_wide_and_per_node(self):
        root = tree({tiering.VMSTAT_FILE: 'pgpromote_success 5\n',
                     tiering.NODE_VMSTAT_FILE % 0: 'pgpromote_success 4\n',
                     tiering.NODE_VMSTAT_FILE % 1: 'nr_free_pages 3\n'})
        self.assertEqual(({'pgpromote_success': 5},
                          {0: {'pgpromote_success': 4}}),
                         sysfs.read_counters(root, [0, 1, 2]))

    def test_this_machine(self):
        # Read for real: whatever the values, they are the kernel's.
        if not os.path.exists('/' + tiering.VMSTAT_FILE):
            self.skipTest('no /proc/vmstat')
        state = sysfs.read_state('/')
        self.assertIsNotNone(state.kernel)
        self.assertEqual(os.uname().release, state.kernel)
        if state.numa_balancing is not None:
            self.assertIn(state.numa_balancing, range(4))
        for tier, nodes in state.tiers or ():
            self.assertTrue(nodes)
        host_wide, _nodes = sysfs.read_counters('/', [0])
        for name, count in host_wide.items():
            self.assertIn(name, tiering.COUNTERS)
            self.assertGreaterEqual(count, 0)


def state(balancing=2, demotion=True, tiers=((4, (0, 1)), (22, (2,)))):
    return tiering.State(kernel='6.8', numa_balancing=balancing,
                         demotion_enabled=demotion, tiers=tiers)


class JudgeTestCase(testtools.TestCase):

    def judge(self, st_, far=(2,)):
        return tiering.judge(st_, [0, 1], far)

    def test_fully_on(self):
        verdict = self.judge(state())
        self.assertEqual((True, True, 'on', ()),
                         (verdict.promotes, verdict.demotes, verdict.state,
                          verdict.problems))
        self.assertIsNone(verdict.note())
        # A kernel before the memory tiers: nodes without CPUs are lower.
        self.assertEqual('on', self.judge(state(tiers=None)).state)
        # numa_balancing 3 keeps classic balancing and tiers too.
        self.assertEqual('on', self.judge(state(balancing=3)).state)

    def test_mode_one_only(self):
        verdict = self.judge(state(balancing=1))
        self.assertEqual((False, True, 'off'),
                         (verdict.promotes, verdict.demotes, verdict.state))
        self.assertEqual([tiering.BALANCING_OFF],
                         [p.code for p in verdict.problems])
        # Bit 2 added, bit 1 kept.
        self.assertEqual(('sysctl -w kernel.numa_balancing=3',),
                         verdict.problems[0].fix)
        self.assertIn('sysctl -w kernel.numa_balancing=3', verdict.note())

    def test_a_value_without_a_defined_bit(self):
        # 4 is accepted by the sysctl but sets neither balancing nor
        # tiering: the fix sets tiering's bit alone (6 would be refused).
        verdict = self.judge(state(balancing=4))
        self.assertEqual((False, 'off'), (verdict.promotes, verdict.state))
        self.assertEqual(('sysctl -w kernel.numa_balancing=2',),
                         verdict.problems[0].fix)
        self.assertIn('sets no bit the kernel defines', verdict.note())

    def test_demotion_off(self):
        verdict = self.judge(state(demotion=False))
        self.assertEqual((True, False, 'off'),
                         (verdict.promotes, verdict.demotes, verdict.state))
        self.assertEqual(
            ('echo true > /sys/kernel/mm/numa/demotion_enabled',),
            verdict.problems[0].fix)
        self.assertIn('/etc/tmpfiles.d/', verdict.problems[0].persist[0])

    def test_far_node_in_the_dram_tier(self):
        verdict = self.judge(state(tiers=((4, (0, 1, 2)),)))
        self.assertEqual((False, False, 'off'),
                         (verdict.promotes, verdict.demotes, verdict.state))
        self.assertEqual([tiering.SAME_TIER],
                         [p.code for p in verdict.problems])
        self.assertIn('node 2 in memory_tier4', verdict.note())

    def test_a_kernel_before_the_memory_tiering_mode(self):
        verdict = self.judge(tiering.State(
            kernel='5.15.0-91-generic', numa_balancing=1,
            demotion_enabled=True))
        self.assertEqual('off', verdict.state)
        # Bit 2 cannot be set there: no line to run, an upgrade to make.
        self.assertEqual((), verdict.problems[0].fix)
        self.assertIn('5.18', verdict.note())
        self.assertNotIn('sysctl', verdict.note())
        self.assertEqual((5, 15), tiering.release('5.15.0-91-generic'))
        self.assertIsNone(tiering.release('custom'))

    def test_a_kernel_without_the_files(self):
        verdict = self.judge(tiering.State(kernel='5.10.0'))
        self.assertEqual('off', verdict.state)
        self.assertEqual([tiering.NO_BALANCING, tiering.NO_DEMOTION],
                         [p.code for p in verdict.problems])
        self.assertIn('5.10.0', verdict.note())

    def test_no_far_node(self):
        self.assertEqual('off', self.judge(state(), far=()).state)


KMEM = profile.build(kinds.CXL_KMEM, 4)            # 4096 MB of DRAM
KMEM_OFF = profile.build(kinds.CXL_KMEM, 4, kernel_tiering='off')
MM = profile.build(kinds.MEMORY_MODE, 4)
FLAT = profile.build(kinds.CXL_FLAT, 4)


class ChargeTestCase(testtools.TestCase):

    def test_who_tiers(self):
        self.assertEqual({kinds.CXL_KMEM}, set(kinds.KERNEL_TIERED))
        self.assertEqual({kinds.MEMORY_MODE, kinds.CXL_FLAT},
                         {k.name for k in kinds.KINDS.values()
                          if k.tiered_by == kinds.HARDWARE})

    def test_the_key(self):
        self.assertIsNone(KMEM.kernel_tiering)
        self.assertTrue(tiering.promotes(KMEM))
        self.assertEqual('off', KMEM_OFF.kernel_tiering)
        self.assertEqual({profile.MODE_KEY: 'cxl_kmem',
                          profile.DRAM_CACHE_KEY: '4',
                          profile.KERNEL_TIERING_KEY: 'off'},
                         profile.to_metadata(KMEM_OFF))
        # Meaningless elsewhere, as the cache keys are on untiered kinds.
        self.assertIsNone(profile.from_metadata([{
            profile.MODE_KEY: 'memory_mode', profile.DRAM_CACHE_KEY: '4',
            profile.KERNEL_TIERING_KEY: 'off'}]).kernel_tiering)
        bad = profile.from_metadata([{
            profile.MODE_KEY: 'cxl_kmem', profile.DRAM_CACHE_KEY: '4',
            profile.KERNEL_TIERING_KEY: 'maybe'}])
        self.assertEqual((None, profile.INVALID, profile.KERNEL_TIERING_KEY),
                         (bad.mode, bad.problem_code, bad.problem_key))
        self.assertIn("'maybe' is not one of on, off", bad.problem)
        split = profile.from_metadata([
            {profile.MODE_KEY: 'cxl_kmem', profile.DRAM_CACHE_KEY: '4',
             profile.KERNEL_TIERING_KEY: 'on'},
            {profile.KERNEL_TIERING_KEY: 'off'}])
        self.assertEqual(profile.DISAGREE, split.problem_code)

    def test_ratios(self):
        for prof, floating, bound in ((KMEM, 0.25, 1.0),
                                      (KMEM_OFF, 1.0, 1.0),
                                      (MM, 0.25, 0.25), (FLAT, 0.25, 0.25)):
            self.assertEqual(
                (floating, bound),
                (charging.instance_ratio(prof, 0.25, False),
                 charging.instance_ratio(prof, 0.25, True)), prof.mode)

    def test_host_wide(self):
        # 1024 MB floating at 0.25 hot (256 hot) and 1024 MB bound to
        # cell 0 at 0.25 (256 hot).
        used = nearmem.HotRam(0.0)
        used.add(256.0, None, 1024.0, None)
        used.add(256.0, ((0, 256.0),), 1024.0, ((0, 1024.0),))
        self.assertEqual(nearmem.HotRam(512.0, {0: 256.0}, 2048.0,
                                        {0: 1024.0}), used)
        self.assertEqual(512.0, charging.charged(MM, used).total)
        self.assertEqual(1280.0, charging.charged(KMEM, used).total)
        self.assertEqual({0: 1024.0}, charging.charged(KMEM, used).bound)
        self.assertEqual(2048.0, charging.charged(KMEM_OFF, used).total)
        # 4096 MB of DRAM: on, 2816 MB more floating at 0.25 fit (704
        # hot); a 2816 MB bound one does not... but 2816 does exactly.
        self.assertTrue(decide.cache_check(KMEM, 1.0, used, QUARTER,
                                           11264)[0])
        self.assertFalse(decide.cache_check(KMEM, 1.0, used, QUARTER,
                                            11268)[0])
        self.assertTrue(decide.cache_check(KMEM_OFF, 1.0, used, QUARTER,
                                           2048)[0])
        self.assertFalse(decide.cache_check(KMEM_OFF, 1.0, used, QUARTER,
                                            2049)[0])

    def test_placement_accounting_does_not_skip_kernel_tiered_hosts(self):
        self.assertFalse(decide.reads_usage(MM, accounted=True))
        self.assertTrue(decide.reads_usage(KMEM, accounted=True))
        full = nearmem.HotRam(1024.0, {0: 1024.0}, 4096.0, {0: 4096.0})
        self.assertEqual((True, None, None), decide.cache_check(
            MM, 1.0, full, QUARTER, 1024, accounted=True))
        self.assertFalse(decide.cache_check(
            KMEM, 1.0, full, QUARTER, 1024, accounted=True)[0])

    def test_the_doctor_judges_by_the_same_charge(self):
        used = nearmem.HotRam(1024.0, {0: 1024.0}, 4100.0, {0: 4100.0})
        self.assertEqual((None, []), decide.overcommitted(MM, 1.0, used))
        self.assertEqual((None, [None]),
                         decide.overcommitted(KMEM, 1.0, used))


@hypothesis.strategies.composite
def instances(draw):
    return draw(st.lists(st.tuples(
        st.integers(1, 4096), st.sampled_from([0.1, 0.25, 0.5, 1.0]),
        st.none() | st.integers(0, 1)), max_size=8))


class OracleTestCase(testtools.TestCase):
    """The cache check on kernel-tiered hosts against a recount by hand."""

    @hypo.settings(300)
    @hypothesis.given(placed=instances(), memory_mb=st.integers(1, 4096),
                      hot=st.sampled_from([0.1, 0.25, 0.5, 1.0]),
                      target=st.none() | st.integers(0, 1),
                      tiering_on=st.booleans(), cells=st.booleans(),
                      mode=st.sampled_from([kinds.CXL_KMEM,
                                            kinds.MEMORY_MODE]))
    def test_admits_exactly_what_fits(self, placed, memory_mb, hot, target,
                                      tiering_on, cells, mode):
        prof = profile.build(mode, 8, kernel_tiering='on' if tiering_on
                             else 'off')
        used = nearmem.HotRam(0.0)
        for ram, ratio, cell in placed:
            on = None if cell is None else ((cell, ram * ratio),)
            used.add(ram * ratio, on, ram,
                     None if cell is None else ((cell, ram),))
        request = extra_specs.parse({
            'pmem:hot_ratio': extra_specs.format_hot_ratio(hot)})
        claim = None if target is None else (lambda: {target: memory_mb})
        passes = decide.cache_check(prof, 1.0, used, request, memory_mb,
                                    cells=[0, 1] if cells else None,
                                    fit=claim)[0]

        # By hand: the docs' rule.
        def charge(ram, ratio, bound):
            whole = mode == kinds.CXL_KMEM and (bound or not tiering_on)
            return ram * (1.0 if whole else ratio)
        per_cell = {0: 0.0, 1: 0.0}
        total = 0.0
        for ram, ratio, cell in placed:
            mb = charge(ram, ratio, cell is not None)
            total += mb
            if cell is None:
                per_cell[0] += mb / 2
                per_cell[1] += mb / 2
            else:
                per_cell[cell] += mb
        new = charge(memory_mb, hot, target is not None)
        if cells and (target is not None
                      or any(c is not None for _r, _h, c in placed)):
            add = ({target: new} if target is not None
                   else {0: new / 2, 1: new / 2})
            expected = all(per_cell[c] + mb <= 4096 + 1e-6
                           for c, mb in add.items())
        else:
            expected = total + new <= 8192 + 1e-6
        self.assertEqual(expected, passes)


class BindsMemoryTestCase(testtools.TestCase):
    """Which flavors Nova binds: as Nova's numa_get_constraints says."""

    CASES = (
        {},
        {'pmem:hot_ratio': '0.25'},
        {'hw:numa_nodes': '1'},
        {'hw:numa_nodes': '2'},
        {'hw:mem_page_size': 'large'},
        {'hw:mem_page_size': 'small'},
        {'hw:cpu_policy': 'dedicated'},
        {'hw:cpu_policy': 'shared'},
        {'hw:cpu_policy': 'mixed', 'hw:cpu_dedicated_mask': '^0'},
        {'resources:PCPU': '4'},
        {'resources:VCPU': '4'},
        {'hw:cpu_thread_policy': 'prefer', 'hw:cpu_policy': 'dedicated'},
    )

    def test_as_nova_decides(self):
        try:
            from nova import objects
            from nova.virt import hardware
        except ImportError:
            self.skipTest('Nova is not installed')
        objects.register_all()
        for specs in self.CASES:
            flavor = objects.Flavor(vcpus=4, memory_mb=4096, extra_specs=specs)
            image = objects.ImageMeta.from_dict({'properties': {}})
            nova_binds = hardware.numa_get_constraints(flavor, image)
            self.assertEqual(nova_binds is not None,
                             charging.binds_memory(specs) is not None, specs)

    def test_says_why(self):
        self.assertEqual('hw:numa_nodes=2',
                         charging.binds_memory({'hw:numa_nodes': '2'}))
        self.assertEqual('resources:PCPU=4',
                         charging.binds_memory({'resources:PCPU': '4'}))
        self.assertIsNone(charging.binds_memory(None))


class KeepingUpTestCase(testtools.TestCase):

    def test_rates(self):
        self.assertEqual({'pgpromote_success': 2.0},
                         tiering.rates({'pgpromote_success': 10},
                                       {'pgpromote_success': 30}, 10))
        # A counter that went down (a reboot) and a zero interval.
        self.assertEqual({}, tiering.rates({'pgpromote_success': 10},
                                           {'pgpromote_success': 3}, 10))
        self.assertEqual({}, tiering.rates({}, {}, 0))

    def test_lagging(self):
        self.assertEqual([], tiering.lagging({}))
        self.assertEqual([], tiering.lagging({
            'pgpromote_candidate': 1000.0, 'pgpromote_success': 900.0}))
        # Few candidates: nothing to say.
        self.assertEqual([], tiering.lagging({
            'pgpromote_candidate': 10.0, 'pgpromote_success': 0.0}))
        codes = [code for code, _line in tiering.lagging({
            'pgpromote_candidate': 1000.0, 'pgpromote_success': 100.0,
            'pgdemote_direct': 5.0})]
        self.assertEqual(['promotion-lags', 'direct-demotion'], codes)

    def test_hot_on_far(self):
        self.assertEqual(512.0, charging.hot_on_far_mb(2048, 1536))
        self.assertEqual(0.0, charging.hot_on_far_mb(1024, 1536))
        self.assertIsNone(charging.hot_on_far_mb(None, 1536))
