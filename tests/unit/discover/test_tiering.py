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
"""nova-pmem-discover --cxl and the kernel's tiering, recorded and live.

Each case under discover_tiering_data/ is the cxl_kmem host of
etc/examples/discover/cxl-kmem with its kernel's tiering files recorded
under proc/ and sys/ (see its README.rst). What the kernel does with each
is worked out here from the kernel's rules (numa_balancing bit 2 promotes,
demotion_enabled demotes, both only between tiers; demotion keeps a bound
guest's memory in its cpuset on cgroup v2 from Linux 7.0 only), not by the
core.
"""

import io
import json
import os
import shutil
import subprocess

import fixtures
import testtools

from nova_pmem_filters.core.formats import discoveredhost

from nova_pmem_filters.core.formats import hostfile
from nova_pmem_filters.core.grammars import cxltools
from nova_pmem_filters.core.grammars import sysfs
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters.core.rules import tiering
from nova_pmem_filters.discover import cli
from nova_pmem_filters.discover import cxl
from nova_pmem_filters.discover import outputs
from nova_pmem_filters.discover import runner
from tests.unit import paths

DATA = paths.of('tests', 'unit', 'discover_tiering_data')
# Recorded before discovery read the tiering files.
OLD_DATA = paths.of('tests', 'unit', 'discover_cxl_data')
PAGE = paths.of('doc', 'source', 'discovery.rst')
NEW = '6.12.9-200.fc41.x86_64'
DRAM, FAR = [0, 1], [2, 3]
TIERS = [{'tier': 4, 'nodes': DRAM}, {'tier': 22, 'nodes': FAR}]
SET_BALANCING = 'sysctl -w kernel.numa_balancing=3'
SET_DEMOTION = 'echo true > /sys/kernel/mm/numa/demotion_enabled'
SEVEN = '7.0.0-14-generic'

# case -> (settings recorded, promotes, demotes, problems, the lines the
# note says to set).
CASES = {
    'tiering_on': (dict(kernel=NEW, numa_balancing=2, demotion_enabled=True,
                        promotion_rate_limit_mbps=65536, memory_tiers=TIERS,
                        cgroup=None),
                   True, True, [], []),
    'mode1_only': (dict(kernel=NEW, numa_balancing=1, demotion_enabled=True,
                        promotion_rate_limit_mbps=65536, memory_tiers=TIERS,
                        cgroup=None),
                   False, True, ['numa-balancing-not-tiering'],
                   [SET_BALANCING]),
    'demotion_off': (dict(kernel=NEW, numa_balancing=2,
                          demotion_enabled=False,
                          promotion_rate_limit_mbps=65536,
                          memory_tiers=TIERS, cgroup=None),
                     True, False, ['demotion-disabled'], [SET_DEMOTION]),
    # The CXL nodes in the DRAM's tier: the fix is in the firmware.
    'same_tier': (dict(kernel=NEW, numa_balancing=2, demotion_enabled=True,
                       promotion_rate_limit_mbps=65536,
                       memory_tiers=[{'tier': 4, 'nodes': DRAM + FAR}],
                       cgroup=None),
                  False, False, ['far-node-in-dram-tier'], []),
    # 5.15: no tiers (the CPU-less nodes are the lower tier), no rate limit.
    'no_memory_tiering': (dict(kernel='5.15.0-125-generic', numa_balancing=1,
                               demotion_enabled=True,
                               promotion_rate_limit_mbps=None,
                               memory_tiers=None, cgroup=None),
                          # Bit 2 does not exist before 5.18: nothing to
                          # set, a kernel to upgrade.
                          False, True, ['numa-balancing-not-tiering'], []),
    'node_vmstat': (dict(kernel='6.10.14-200.fc40.x86_64', numa_balancing=3,
                         demotion_enabled=True,
                         promotion_rate_limit_mbps=30720,
                         memory_tiers=TIERS, cgroup=None),
                    True, True, [], []),
    'node_vmstat_old': (dict(kernel='6.6.58-1.el9.x86_64', numa_balancing=2,
                             demotion_enabled=True,
                             promotion_rate_limit_mbps=65536,
                             memory_tiers=TIERS, cgroup=None),
                        True, True, [], []),
    # proc/mounts recorded: the cpuset controller's hierarchy.
    'bound_kept': (dict(kernel=SEVEN, numa_balancing=2,
                        demotion_enabled=True,
                        promotion_rate_limit_mbps=65536,
                        memory_tiers=TIERS, cgroup='v2'),
                   True, True, [], []),
    'bound_next_node': (dict(kernel='6.17.0-8-generic', numa_balancing=2,
                             demotion_enabled=True,
                             promotion_rate_limit_mbps=65536,
                             memory_tiers=TIERS, cgroup='v2'),
                        True, True, [], []),
    'bound_cgroup1': (dict(kernel=SEVEN, numa_balancing=2,
                           demotion_enabled=True,
                           promotion_rate_limit_mbps=65536,
                           memory_tiers=TIERS, cgroup='v1'),
                      True, True, [], []),
}

# Whether reclaim may demote a bound guest's memory, from the kernel's
# history (doc/source/kernel-tiering.rst): only a kernel that demotes;
# before 6.16 it ignores the cpuset, 6.16 to 6.19 check the next node only,
# 7.0 keeps the cpuset of cgroup v2 and never that of v1. Cases not listed
# here do not demote.
BOUND = {
    'tiering_on': True,          # 6.12
    'mode1_only': True,          # 6.12: demotes without promoting
    'no_memory_tiering': True,   # 5.15
    'node_vmstat': True,         # 6.10
    'node_vmstat_old': True,     # 6.6
    'bound_next_node': True,     # 6.17, cgroup v2
    'bound_cgroup1': True,       # 7.0, cgroup v1
    'bound_kept': False,         # 7.0, cgroup v2
}


def run(argv):
    out = io.StringIO()
    err = io.StringIO()
    status = cli.main(list(argv), stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def tiering_notes(prof):
    return [n for n in prof['notes'] if n.startswith('kernel tiering')]


def bound_notes(prof):
    return [n for n in prof['notes'] if n.startswith('reclaim may demote')]


class TieringCase(testtools.TestCase):

    def discover(self, directory, *extra):
        status, out, err = run(['--from', directory, '--cxl'] + list(extra))
        self.assertEqual(0, status, err)
        self.assertEqual('', err)
        return out

    def profile(self, directory, *extra):
        return json.loads(self.discover(directory, '--json', *extra))

    def copy(self, case, base=DATA):
        tmp = os.path.join(self.useFixture(fixtures.TempDir()).path, case)
        shutil.copytree(os.path.join(base, case), tmp)
        return tmp

    def write(self, directory, relative, text):
        path = os.path.join(directory, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as f:
            f.write(text)

    def error(self, directory, status=3):
        code, out, err = run(['--from', directory, '--cxl'])
        self.assertEqual(status, code, err)
        self.assertEqual('', out)
        self.assertEqual(1, len(err.splitlines()), err)
        self.assertNotIn('Traceback', err)
        self.assertNotIn('unexpected', err)
        return err


class TestRecordedKernels(TieringCase):

    def test_every_recorded_kernel(self):
        for case, (settings, promotes, demotes, problems, _fix) in sorted(
                CASES.items()):
            state = 'on' if promotes and demotes else 'off'
            got = self.profile(os.path.join(DATA, case))
            self.assertEqual('cxl_kmem', got['mode'], case)
            bound = BOUND.get(case, False)
            self.assertEqual(dict(
                version=1, far_nodes=FAR, promotes=promotes,
                demotes=demotes, state=state, problems=problems,
                demotes_bound_memory=bound, **settings),
                got['kernel_tiering'], case)
            # One note where the kernel does not tier, none where it does.
            self.assertEqual(0 if state == 'on' else 1,
                             len(tiering_notes(got)), case)
            # One where bound memory may be demoted, naming the kernel.
            notes = bound_notes(got)
            self.assertEqual(int(bound), len(notes), case)
            for note in notes:
                self.assertIn('Linux %s ' % settings['kernel'], note, case)
                self.assertIn('far_resident_mb', note, case)

    def test_note_says_what_to_set(self):
        for case, (_s, promotes, demotes, _p, fix) in sorted(CASES.items()):
            notes = tiering_notes(self.profile(os.path.join(DATA, case)))
            if promotes and demotes:
                self.assertEqual([], notes, case)
                continue
            note, = notes
            self.assertIn('pmem_kernel_tiering=off', note, case)
            self.assertIn("every guest's whole RAM counts against the DRAM",
                          note, case)
            if fix:
                self.assertTrue(note.endswith('; set: ' + '; '.join(fix)),
                                (case, note))
            else:
                self.assertNotIn('; set:', note, case)

    def test_what_the_note_sets_turns_tiering_on(self):
        # The lines run as printed, here against the recorded tree.
        for case in ('mode1_only', 'demotion_off'):
            tmp = self.copy(case)
            for line in CASES[case][4]:
                self.apply(tmp, line)
            got = self.profile(tmp)
            self.assertEqual('on', got['kernel_tiering']['state'], case)
            self.assertEqual([], tiering_notes(got), case)

    def apply(self, root, line):
        words = line.split()
        if words[:2] == ['sysctl', '-w']:
            key, value = words[2].split('=')
            self.write(root, os.path.join('proc', 'sys', *key.split('.')),
                       value + '\n')
        elif words[0] == 'echo' and words[2] == '>':
            self.write(root, words[3].lstrip('/'), words[1] + '\n')
        else:
            self.fail('not a line this test can apply: %s' % line)

    def test_aggregate(self):
        for case, (_s, promotes, demotes, _p, _f) in sorted(CASES.items()):
            state = 'on' if promotes and demotes else 'off'
            lines = self.discover(os.path.join(DATA, case), '--aggregate',
                                  '--numa').splitlines()
            self.assertEqual('pmem_kernel_tiering=%s' % state, lines[3],
                             case)
            name = lines[-2].split()[-1]
            self.assertEqual(state == 'off',
                             name.endswith(outputs.TIERING_OFF_SUFFIX), case)
            self.assertIn('--property pmem_kernel_tiering=%s %s'
                          % (state, name), lines[-2], case)

    def test_readers_see_what_discovery_said(self):
        # The profile file, the host the planner and the doctor read, and
        # the aggregate metadata the scheduler reads agree.
        tmp = self.useFixture(fixtures.TempDir()).path
        for case, (_s, promotes, demotes, _p, _f) in sorted(CASES.items()):
            state = 'on' if promotes and demotes else 'off'
            path = os.path.join(tmp, case + '.json')
            with open(path, 'w') as f:
                f.write(self.discover(os.path.join(DATA, case)))
            host = discoveredhost.read(path)
            self.assertEqual(state, host.kernel_tiering, case)
            self.assertEqual(sysfs.read_state(os.path.join(DATA, case)),
                             host.tiering_entry.settings(), case)
            seen = profile.from_metadata([host.metadata()])
            self.assertEqual(state, seen.kernel_tiering, case)
            self.assertEqual(state == 'on', tiering.promotes(seen), case)

    def test_table(self):
        out = self.discover(os.path.join(DATA, 'same_tier'), '--table')
        self.assertIn('kernel tiering', out)
        for row in ('| state                     | off ',
                    '| memory_tiers              | 4:0-3 ',
                    '| far_nodes                 | 2-3 ',
                    '| problems                  | far-node-in-dram-tier'):
            self.assertIn(row, out)
        out = self.discover(os.path.join(DATA, 'no_memory_tiering'),
                            '--table')
        self.assertIn('| memory_tiers              | - ', out)
        self.assertIn('| promotion_rate_limit_mbps | - ', out)

    def test_counters_recorded_per_node_or_not(self):
        # What the observer reads of the same trees.
        per_node = {'node_vmstat': True, 'node_vmstat_old': False,
                    'no_memory_tiering': False, 'tiering_on': True}
        for case, expected in per_node.items():
            host_wide, nodes = sysfs.read_counters(
                os.path.join(DATA, case), DRAM + FAR)
            self.assertEqual(expected, bool(nodes), case)
            self.assertEqual(case != 'no_memory_tiering',
                             tiering.PROMOTE_SUCCESS in host_wide, case)
            self.assertIn(tiering.HINT_FAULTS, host_wide, case)
            for name in nodes.get(0, ()):
                self.assertEqual(host_wide[name], sum(
                    counts[name] for counts in nodes.values()), case)


class TestNotRecorded(TieringCase):
    """Recordings without the files, and kernels without them."""

    def test_older_recording_of_a_kmem_host(self):
        # It cannot tell what the kernel does: no object, the default, and
        # a note saying so and how to record them.
        directory = os.path.join(OLD_DATA, 'cxl_kmem')
        got = self.profile(directory)
        self.assertNotIn('kernel_tiering', got)
        note, = tiering_notes(got)
        self.assertIn('kernel tiering not recorded', note)
        self.assertIn('cannot be told', note)
        self.assertIn('pmem_kernel_tiering takes its default, on', note)
        self.assertTrue(note.endswith(runner.RECORD_TIERING), note)
        lines = self.discover(directory, '--aggregate').splitlines()
        self.assertNotIn('pmem_kernel_tiering', '\n'.join(lines))
        self.assertFalse(lines[-2].split()[-1].endswith(
            outputs.TIERING_OFF_SUFFIX))
        host = discoveredhost.parse(got, 'cxl_kmem')
        self.assertIsNone(host.kernel_tiering)
        self.assertTrue(tiering.promotes(host.profile()))

    def test_older_recordings_of_other_hosts(self):
        for case in ('cxl_none', 'cxl_flat', 'cxl_devdax'):
            got = self.profile(os.path.join(OLD_DATA, case))
            self.assertNotIn('kernel_tiering', got, case)
            self.assertEqual([], tiering_notes(got), case)

    def test_hosts_without_far_nodes_record_it_too(self):
        settings = CASES['tiering_on'][0]
        for case in ('cxl_none', 'cxl_flat', 'cxl_devdax'):
            tmp = self.copy(case, OLD_DATA)
            for top in ('proc', 'sys'):
                shutil.copytree(os.path.join(DATA, 'tiering_on', top),
                                os.path.join(tmp, top))
            got = self.profile(tmp)
            # Nothing to tier: informative, no note, no aggregate key.
            self.assertEqual(dict(
                version=1, far_nodes=[], promotes=False, demotes=False,
                state='off', problems=[], demotes_bound_memory=False,
                **settings), got['kernel_tiering'], case)
            self.assertEqual([], tiering_notes(got), case)
            self.assertEqual([], bound_notes(got), case)
            self.assertNotIn('pmem_kernel_tiering',
                             self.discover(tmp, '--aggregate'), case)

    def test_kernel_without_the_files(self):
        tmp = self.copy('tiering_on')
        for name in (tiering.NUMA_BALANCING_FILE, tiering.RATE_LIMIT_FILE,
                     tiering.DEMOTION_FILE):
            os.unlink(os.path.join(tmp, name))
        shutil.rmtree(os.path.join(tmp, tiering.MEMORY_TIERING_DIR))
        got = self.profile(tmp)
        self.assertEqual(dict(
            version=1, kernel=NEW, numa_balancing=None,
            demotion_enabled=None, promotion_rate_limit_mbps=None,
            memory_tiers=None, far_nodes=FAR, promotes=False,
            demotes=False, state='off',
            problems=['numa-balancing-missing', 'demotion-missing'],
            cgroup=None, demotes_bound_memory=False),
            got['kernel_tiering'])
        note, = tiering_notes(got)
        self.assertIn('no /proc/sys/kernel/numa_balancing (kernel %s' % NEW,
                      note)
        self.assertIn('no /sys/kernel/mm/numa/demotion_enabled', note)

    def test_part_of_a_recording(self):
        # Every kernel has osrelease: without it DIR is no recording.
        tmp = self.copy('tiering_on')
        os.unlink(os.path.join(tmp, tiering.OSRELEASE_FILE))
        err = self.error(tmp, status=2)
        self.assertIn('missing %s' % os.path.join(
            tmp, tiering.OSRELEASE_FILE), err)
        self.assertIn(runner.RECORD_TIERING, err)


class TestBadFiles(TieringCase):

    def check(self, relative, text, message):
        tmp = self.copy('tiering_on')
        self.write(tmp, relative, text)
        err = self.error(tmp)
        self.assertIn('%s: %s' % (os.path.join(tmp, relative), message),
                      err)

    def test_truncated(self):
        for relative in (tiering.NUMA_BALANCING_FILE, tiering.DEMOTION_FILE,
                         tiering.RATE_LIMIT_FILE, tiering.OSRELEASE_FILE,
                         tiering.MEMORY_TIERING_DIR
                         + '/memory_tier22/nodelist'):
            self.check(relative, '', 'empty (a truncated read?)')

    def test_unknown_numa_balancing(self):
        # The sysctl takes 0 to 4 (extra2 SYSCTL_FOUR, Linux 5.18 on).
        for value in ('5', '7', 'abc', '-1', '2 3'):
            self.check(tiering.NUMA_BALANCING_FILE, value + '\n',
                       'unknown value %r: the kernel holds 0 to 4' % value)

    def test_numa_balancing_four_tiers_nothing(self):
        # 4 is accepted by the sysctl and read back, and sets no bit the
        # kernel defines: no promotion, and the fix is 2, not 4 | 2.
        tmp = self.copy('tiering_on')
        self.write(tmp, tiering.NUMA_BALANCING_FILE, '4\n')
        doc = self.profile(tmp)
        self.assertEqual(('off', 4), (doc['kernel_tiering']['state'],
                                      doc['kernel_tiering']['numa_balancing']))
        notes = ' '.join(doc['notes'])
        self.assertIn('numa_balancing is 4, which sets no bit the kernel '
                      'defines', notes)
        self.assertIn('sysctl -w kernel.numa_balancing=2', notes)

    def test_demotion_enabled_as_written_is_not_what_the_kernel_prints(self):
        # Writing 1, y or on enables demotion (kstrtobool since 5.19), but
        # the file then reads "true": those values are not a recording.
        for value in ('1', '0', 'Y', 'on'):
            self.check(tiering.DEMOTION_FILE, value + '\n',
                       'not true or false: %r' % value)

    def test_bad_values(self):
        self.check(tiering.DEMOTION_FILE, 'maybe\n', "not true or false: "
                   "'maybe'")
        self.check(tiering.RATE_LIMIT_FILE, '64k\n', 'not a whole number')
        self.check(tiering.MEMORY_TIERING_DIR + '/memory_tier22/nodelist',
                   '2-x\n', "not a node list: '2-x'")
        self.check(tiering.NUMA_BALANCING_FILE, '2\n3\n',
                   'more than one line')

    def test_unreadable(self):
        tmp = self.copy('tiering_on')
        path = os.path.join(tmp, tiering.DEMOTION_FILE)
        os.unlink(path)
        os.mkdir(path)
        self.assertIn('%s: cannot read: Is a directory' % path,
                      self.error(tmp))

    def test_tier_without_nodelist(self):
        tmp = self.copy('tiering_on')
        path = os.path.join(tmp, tiering.MEMORY_TIERING_DIR, 'memory_tier22',
                            'nodelist')
        os.unlink(path)
        self.assertIn('%s: missing: a memory tier without its nodelist'
                      % path, self.error(tmp))

    def test_far_node_in_no_tier(self):
        tmp = self.copy('tiering_on')
        shutil.rmtree(os.path.join(tmp, tiering.MEMORY_TIERING_DIR,
                                   'memory_tier22'))
        self.assertIn('%s: NUMA node 2 holds memory but no memory_tierN/'
                      'nodelist lists it' % os.path.join(
                          tmp, tiering.MEMORY_TIERING_DIR), self.error(tmp))


class TestThisMachine(TieringCase):
    """This machine's own files, read for real."""

    def state(self):
        state = sysfs.read_state('/')
        if state.kernel is None:
            self.skipTest('no /proc/sys/kernel/osrelease here')
        return state

    def test_read_state(self):
        state = self.state()
        self.assertIsInstance(state.kernel, str)
        with open('/proc/sys/kernel/osrelease') as f:
            self.assertEqual(f.read().strip(), state.kernel)
        if state.numa_balancing is None:
            self.skipTest('no /proc/sys/kernel/numa_balancing here')
        self.assertIn(state.numa_balancing, range(4))
        if state.demotion_enabled is None:
            self.skipTest('no /sys/kernel/mm/numa/demotion_enabled here')
        self.assertIsInstance(state.demotion_enabled, bool)
        if state.tiers is None:
            self.skipTest('no /sys/devices/virtual/memory_tiering here')
        self.assertIn(0, [n for _tier, nodes in state.tiers for n in nodes])
        self.assertIsNotNone(state.tier_of(0))

    def test_discovery_reads_them(self):
        live = runner.LiveRunner()
        nodes = cxltools.parse_nodes(live.numa_nodes())
        entry, verdict = cxl.read_kernel_tiering(live, nodes)
        far = [n['numa_node'] for n in nodes
               if not n['cpus'] and n['memory_kb'] > 0]
        self.assertEqual(far, list(entry.far_nodes))
        self.assertEqual(self.state(), entry.settings())
        # The verdict follows from the values read.
        balancing = entry.numa_balancing or 0
        if entry.promotes:
            self.assertTrue(far and balancing & 2, entry)
        if entry.demotes:
            self.assertTrue(far and entry.demotion_enabled, entry)
        if far and not balancing & 2:
            self.assertFalse(entry.promotes)
        if far and not entry.demotion_enabled:
            self.assertFalse(entry.demotes)
        self.assertEqual('on' if entry.promotes and entry.demotes else 'off',
                         entry.state)
        self.assertEqual(verdict.state, entry.state)

    def test_the_documented_recording(self):
        # The cp line of discovery.rst, run here: --from DIR then reads
        # what discovery reads live.
        with open(PAGE) as f:
            self.assertIn('    ' + runner.RECORD_TIERING + '\n', f.read())
        state = self.state()
        tmp = self.copy('cxl_none', OLD_DATA)
        proc = subprocess.run(
            ['sh', '-c', runner.RECORD_TIERING.replace('DIR/', tmp + '/')],
            capture_output=True, text=True, timeout=60)
        # cp exits 1 naming each file an older kernel does not have.
        self.assertIn(proc.returncode, (0, 1), proc.stderr)
        self.assertEqual(state, sysfs.read_state(tmp))
        entry, _verdict = hostfile.kernel_tiering_entry(state, [0, 1], [])
        self.assertEqual(hostfile.to_dict(entry),
                         self.profile(tmp)['kernel_tiering'])

    def test_whole_command_live(self):
        # Fake cxl, daxctl and ndctl on PATH; the NUMA nodes and the
        # tiering files are this machine's.
        tools = self.useFixture(fixtures.TempDir()).path
        for tool, text in (('ndctl', 'true'), ('cxl', 'echo "[]"'),
                           ('daxctl', 'true')):
            path = os.path.join(tools, tool)
            with open(path, 'w') as f:
                f.write('#!/bin/sh\n%s\n' % text)
            os.chmod(path, 0o755)
        self.useFixture(fixtures.EnvironmentVariable('PATH', tools))
        status, out, err = run(['--cxl', '--hostname', 'here'])
        self.assertEqual(0, status, err)
        got = json.loads(out)
        live = runner.LiveRunner()
        entry, _verdict = cxl.read_kernel_tiering(
            live, cxltools.parse_nodes(live.numa_nodes()))
        self.assertEqual(hostfile.to_dict(entry), got['kernel_tiering'])
        if got['mode'] != 'cxl_kmem':
            self.assertEqual([], tiering_notes(got))
