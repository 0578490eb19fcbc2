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

import fixtures
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
            self.assertIn(state.numa_balancing,
                          range(tiering.NUMA_BALANCING_MAX + 1))
        # /proc/mounts is always there: the cpuset's hierarchy, or none.
        self.assertIn(state.cgroup, tiering.CGROUPS + (None,))
        for tier, nodes in state.tiers or ():
            self.assertTrue(nodes)
        host_wide, _nodes = sysfs.read_counters('/', [0])
        for name, count in host_wide.items():
            self.assertIn(name, tiering.COUNTERS)
            self.assertGreaterEqual(count, 0)


# /proc/mounts as the field prints it (the sources are in
# tests/unit/discover_tiering_data/bound_*/README.rst).
UNIFIED = ('cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime,'
           'nsdelegate,memory_recursiveprot 0 0\n')
HYBRID = (
    'tmpfs /sys/fs/cgroup tmpfs ro,nosuid,nodev,noexec,mode=755 0 0\n'
    'cgroup2 /sys/fs/cgroup/unified cgroup2 rw,nosuid,nodev,noexec,'
    'relatime,nsdelegate 0 0\n'
    'cgroup /sys/fs/cgroup/systemd cgroup rw,nosuid,nodev,noexec,relatime,'
    'xattr,name=systemd 0 0\n'
    'cpu,cpuacct /sys/fs/cgroup/cpu,cpuacct cgroup rw,nosuid,nodev,noexec,'
    'relatime,cpu,cpuacct 0 0\n'
    'cpuset /sys/fs/cgroup/cpuset cgroup rw,nosuid,nodev,noexec,relatime,'
    'cpuset 0 0\n')


class MountsTestCase(testtools.TestCase):
    """Which hierarchy holds the cpuset controller, from /proc/mounts."""

    def parse(self, text):
        return sysfs.parse_cgroup(text.splitlines(), 'M')

    def test_the_layouts(self):
        self.assertEqual('v2', self.parse(UNIFIED))
        # The device is whatever mount was given ("none"): the type is
        # the third field.
        self.assertEqual('v2', self.parse(
            'none /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime '
            '0 0\n'))
        # Hybrid: cgroup2 is mounted, but the cpuset controller is v1's.
        self.assertEqual('v1', self.parse(HYBRID))
        # Legacy v1 without cgroup2 at all.
        self.assertEqual('v1', self.parse(HYBRID.split('\n', 2)[2]))
        # v1 hierarchies without cpuset, and cgroup2: the cpuset is v2's.
        self.assertEqual('v2', self.parse(
            UNIFIED + 'cgroup /sys/fs/cgroup/net_cls cgroup rw,net_cls 0 0'))
        # No cgroup file system: no cpuset to keep memory in.
        self.assertIsNone(self.parse(
            'proc /proc proc rw,relatime 0 0\n\n'))
        # A device named cpuset does not make a cpuset mount.
        self.assertIsNone(self.parse('cpuset /mnt ext4 rw 0 0\n'))

    def test_not_a_mounts_file(self):
        exc = self.assertRaises(sysfs.TieringError, self.parse,
                                UNIFIED + 'cgroup2 on /sys/fs/cgroup\n')
        self.assertIn('M: line 2 is not', str(exc))

    def test_read(self):
        self.assertIsNone(sysfs.read_cgroup(tree({})))
        root = tree({tiering.MOUNTS_FILE: HYBRID})
        self.assertEqual('v1', sysfs.read_cgroup(root))
        self.assertEqual('v1', sysfs.read_state(root).cgroup)
        # An overlay's lowerdir list longer than any line read.
        long_line = ('overlay /var/lib/x overlay rw,lowerdir=%s 0 0\n'
                     % ':'.join(['/l/%d' % i for i in range(20000)]))
        root = tree({tiering.MOUNTS_FILE: long_line + UNIFIED})
        self.assertEqual('v2', sysfs.read_cgroup(root))

    def test_an_endless_file_is_refused_with_memory_bounded(self):
        self.useFixture(fixtures.MockPatchObject(
            sysfs, '_MAX_MOUNTS_BYTES', 1024 * 1024))
        root = tree({tiering.MOUNTS_FILE: 'proc /proc proc rw 0 0\n'
                     * 50000})
        exc = self.assertRaises(sysfs.TieringError, sysfs.read_cgroup,
                                root)
        self.assertIn('larger than 1048576 bytes', str(exc))
        self.assertIn(tiering.MOUNTS_FILE, str(exc))
        # One line without an end is refused the same way.
        root = tree({tiering.MOUNTS_FILE: 'x' * (2 * 1024 * 1024)})
        self.assertRaises(sysfs.TieringError, sysfs.read_cgroup, root)


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


class BoundDemotionTestCase(testtools.TestCase):
    """Whether reclaim may move a bound guest's memory, release by release.

    The table is the kernel's history as kernel-tiering.rst tells it
    (5.15 to 6.15 ignore cpuset and mempolicy; 6.16 to 6.19 check a cgroup
    v2 cpuset for the next node only; 7.0 checks every target of a cgroup
    v2 cpuset; v1 is never checked), written out by hand.
    """

    # (osrelease, cpuset hierarchy, may demote bound memory)
    TABLE = [
        ('5.15.0-125-generic', 'v2', True),
        ('6.8.0-49-generic', 'v2', True),
        ('6.12.9-200.fc41.x86_64', 'v1', True),
        ('6.15.11', 'v2', True),
        ('6.16.0', 'v2', True),
        ('6.19.3-arch1-1', 'v2', True),
        ('7.0.0-14-generic', 'v2', False),
        ('7.0.0-14-generic', 'v1', True),
        ('7.0.0-14-generic', None, True),
        ('7.3.1', 'v2', False),
        ('10.1', 'v2', False),
        ('custom', 'v2', True),
        (None, 'v2', True),
    ]

    def test_by_release_and_hierarchy(self):
        for kernel, cgroup, expected in self.TABLE:
            found = tiering.State(kernel=kernel, numa_balancing=2,
                                  demotion_enabled=True,
                                  tiers=((4, (0, 1)), (22, (2,))),
                                  cgroup=cgroup)
            verdict = tiering.judge(found, [0, 1], [2])
            self.assertEqual('on', verdict.state, kernel)
            self.assertEqual(expected, verdict.demotes_bound_memory,
                             (kernel, cgroup))
            note = verdict.bound_note()
            if not expected:
                self.assertIsNone(note)
                continue
            self.assertEqual(tiering.BOUND_DEMOTION, verdict.bound.code)
            self.assertIn(kernel or 'release unknown', note)
            self.assertEqual(1, len(note.splitlines()))
            # The state stays on: admission already charges bound guests
            # their whole RAM; the note is about where their pages sit.
            self.assertNotIn(verdict.bound, verdict.problems)

    def test_only_a_kernel_that_demotes(self):
        old = dict(kernel='6.8.0-49-generic', cgroup='v1')
        for found, far in [
                (tiering.State(numa_balancing=2, demotion_enabled=False,
                               **old), (2,)),
                (tiering.State(numa_balancing=2, **old), (2,)),
                (tiering.State(numa_balancing=2, demotion_enabled=True,
                               tiers=((4, (0, 1, 2)),), **old), (2,)),
                (tiering.State(numa_balancing=2, demotion_enabled=True,
                               **old), ())]:
            verdict = tiering.judge(found, [0, 1], far)
            self.assertFalse(verdict.demotes)
            self.assertFalse(verdict.demotes_bound_memory)
            self.assertIsNone(verdict.bound_note())
        # Demoting without promoting still moves bound memory.
        verdict = tiering.judge(tiering.State(
            numa_balancing=1, demotion_enabled=True, **old), [0, 1], [2])
        self.assertEqual(('off', True), (verdict.state,
                                         verdict.demotes_bound_memory))

    def test_what_each_says(self):
        def what(kernel, cgroup='v2'):
            return tiering.bound_demotion(tiering.State(
                kernel=kernel, cgroup=cgroup)).what
        self.assertIn('regardless of cpuset and memory policy',
                      what('6.8.0'))
        self.assertIn('next demotion node only', what('6.17.0'))
        self.assertIn('1aceed565ff1', what('6.19.2'))
        self.assertIn('cgroup v1', what('7.0.0', 'v1'))
        self.assertIn('/proc/mounts', what('7.0.0', None))


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
