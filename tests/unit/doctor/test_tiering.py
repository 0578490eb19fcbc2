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
"""The kernel's tiering on cxl_kmem hosts, as the doctor judges it.

The clean cloud of :mod:`tests.unit.doctor.cases` gains a ``cxl_kmem``
host, ``kmem1`` (aggregate ``cxl``, 256 GB of DRAM on nodes 0 and 1, CXL
memory on the CPU-less nodes 2 and 3), whose discovered profile is a
host-profile document read with ``discoveredhost.parse``, its
``kernel_tiering`` object written as discovery writes it for each recorded
situation.
"""

import dataclasses
import io
import json
import os
import shlex
import subprocess

import fixtures

from nova_pmem_filters.core.formats import discoveredhost

from nova_pmem_filters.core.formats import hostfile
from nova_pmem_filters.core.plans import flavorfix
from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import placement
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters.core.rules import tiering
from nova_pmem_filters.discover import cli as discover_cli
from nova_pmem_filters.doctor import checks
from nova_pmem_filters.doctor.checks import kernel_tiering
from nova_pmem_filters.doctor import cloud as doctor_cloud
from tests.unit.doctor import cases
from tests.unit import paths

GB = cases.GB
HOST = 'kmem1'
OBJ = 'host kmem1'
SOURCE = 'fleet/kmem1.json'
AGG = 'aggregate cxl'
TIERS = ((4, (0, 1)), (22, (2, 3)))

# The lines an operator runs on the host, as the kernel documents them:
# written here, not taken from the core.
# From numa_balancing 1: 3 keeps classic NUMA balancing on.
BALANCING_NOW = 'sysctl -w kernel.numa_balancing=3'
BALANCING_BOOT = ("echo 'kernel.numa_balancing = 3' > "
                  "/etc/sysctl.d/60-memory-tiering.conf")
# From 0: memory tiering only.
TIERING_NOW = 'sysctl -w kernel.numa_balancing=2'
TIERING_BOOT = ("echo 'kernel.numa_balancing = 2' > "
                "/etc/sysctl.d/60-memory-tiering.conf")
DEMOTION_NOW = 'echo true > /sys/kernel/mm/numa/demotion_enabled'
DEMOTION_BOOT = ("echo 'w /sys/kernel/mm/numa/demotion_enabled - - - - "
                 "true' > /etc/tmpfiles.d/memory-tiering.conf")
SHOW_TIERS = ('grep -H . '
              '/sys/devices/virtual/memory_tiering/memory_tier*/nodelist')

# name -> (kernel, numa_balancing, demotion_enabled, memory tiers,
#          promotes, demotes, problems[, cpuset hierarchy]), as discovery
# records each host (the hierarchy v2 unless given); None: a profile from
# before the kernel_tiering object. 7.0 on cgroup v2 keeps bound memory in
# its cpuset (kernel-tiering.rst): the situations about other settings run
# it, so that only those about bound memory find kernel-demotes-bound-memory.
RECORDED = {
    'fully on': ('7.0.0', 2, True, TIERS, True, True, ()),
    'numa_balancing 1 only': ('7.0.0', 1, True, TIERS, False, True,
                              ('numa-balancing-not-tiering',)),
    'demotion off': ('6.8.0', 2, False, TIERS, True, False,
                     ('demotion-disabled',)),
    'both off': ('6.8.0', 0, False, TIERS, False, False,
                 ('numa-balancing-not-tiering', 'demotion-disabled')),
    'CXL in the DRAM tier': ('6.8.0', 3, True, ((4, (0, 1, 2, 3)),),
                             False, False, ('far-node-in-dram-tier',)),
    'CXL in the DRAM tier, balancing 0': (
        '6.8.0', 0, True, ((4, (0, 1, 2, 3)),), False, False,
        ('numa-balancing-not-tiering', 'far-node-in-dram-tier')),
    'no memory tiers (5.19)': ('5.19.0', 2, True, None, True, True, ()),
    'no tiering files (5.10)': ('5.10.0', None, None, None, False, False,
                                ('numa-balancing-missing',
                                 'demotion-missing')),
    # Reclaim may demote the memory of guests Nova binds.
    'fully on, 6.8': ('6.8.0', 2, True, TIERS, True, True, ()),
    'fully on, 6.17': ('6.17.0', 2, True, TIERS, True, True, ()),
    'fully on, 7.0 on cgroup v1': ('7.0.0', 2, True, TIERS, True, True, (),
                                   'v1'),
    'absent': None,
}
# The situations whose kernel may demote bound memory, by hand: it demotes
# (promotes or not), and runs a release before 7.0 or a v1 cpuset.
DEMOTES_BOUND = ('no memory tiers (5.19)', 'fully on, 6.8', 'fully on, 6.17',
                 'fully on, 7.0 on cgroup v1')

# What the doctor finds on the host in each situation, its aggregate
# saying what discovery found; the clean cloud has no flavor Nova binds, so
# bound memory is information.
BOUND_INFO = (checks.INFO, 'kernel-demotes-bound-memory')
EXPECTED = {
    'fully on': (),
    'numa_balancing 1 only': ((checks.WARNING, 'kernel-tiering-half-on'),),
    'demotion off': ((checks.WARNING, 'kernel-tiering-half-on'),),
    'both off': ((checks.WARNING, 'kernel-tiering-off'),),
    'CXL in the DRAM tier': ((checks.WARNING, 'far-node-in-dram-tier'),),
    'CXL in the DRAM tier, balancing 0': (
        (checks.WARNING, 'far-node-in-dram-tier'),
        (checks.WARNING, 'kernel-tiering-off')),
    'no memory tiers (5.19)': (BOUND_INFO,),
    'no tiering files (5.10)': ((checks.WARNING, 'kernel-tiering-off'),),
    'fully on, 6.8': (BOUND_INFO,),
    'fully on, 6.17': (BOUND_INFO,),
    'fully on, 7.0 on cgroup v1': (BOUND_INFO,),
    'absent': ((checks.INFO, 'kernel-tiering-unknown'),),
}
OFF_CODES = ('kernel-tiering-off', 'kernel-tiering-half-on',
             'far-node-in-dram-tier')


def tiering_object(kernel, balancing, demotion, tiers, promotes, demotes,
                   problems, cgroup='v2', bound=False):
    return {
        'version': 1, 'kernel': kernel, 'numa_balancing': balancing,
        'demotion_enabled': demotion,
        'promotion_rate_limit_mbps': None if tiers is None else 65536,
        'memory_tiers': None if tiers is None else [
            {'tier': tier, 'nodes': list(nodes)} for tier, nodes in tiers],
        'far_nodes': [2, 3], 'promotes': promotes, 'demotes': demotes,
        'state': 'on' if promotes and demotes else 'off',
        'problems': list(problems), 'cgroup': cgroup,
        'demotes_bound_memory': bound}


def document(situation, hostname=HOST, numa=False):
    """The host-profile document of kmem1 (decoded JSON)."""
    nodes = [{'numa_node': node, 'cpus': cpus, 'memory_gb': gb,
              'near_memory_gb': gb if cpus else 0.0, 'tier': not cpus}
             for node, cpus, gb in ((0, '0-31', 128.0), (1, '32-63', 128.0),
                                    (2, '', 256.0), (3, '', 256.0))]
    data = {
        'schema': hostfile.SCHEMA, 'hostname': hostname,
        'mode': kinds.CXL_KMEM, 'scheduler_mode': kinds.CXL_KMEM,
        'dram_gb': 256.0, 'visible_memory_gb': 768.0,
        'dram_cache_gb': 256.0, 'notes': [],
        'cxl': {'kind': kinds.CXL_KMEM, 'near_memory_gb': 256.0,
                'far_memory_gb': 512.0, 'numa_nodes': nodes}}
    if numa:
        data['dram_cache_gb_per_cell'] = '0:128,1:128'
    if RECORDED[situation] is not None:
        data['kernel_tiering'] = tiering_object(
            *RECORDED[situation], bound=situation in DEMOTES_BOUND)
    return data


def discovered(situation, **kwargs):
    return discoveredhost.parse(document(situation, **kwargs), SOURCE)


def cloud(situation, tiering_key='discovered', flavors=(), servers=(),
          host=None, **meta):
    """The clean cloud with kmem1 in aggregate ``cxl``.

    :param tiering_key: the aggregate's pmem_kernel_tiering: what discovery
        found ('discovered'), None (not set), or a value.
    :param host: kmem1's DiscoveredHost, else that of ``situation``.
    """
    snap = cases.clean()
    host = host or (discovered(situation) if situation else None)
    if tiering_key == 'discovered':
        tiering_key = host.kernel_tiering if host else None
    metadata = {profile.MODE_KEY: kinds.CXL_KMEM,
                profile.DRAM_CACHE_KEY: profile.gb_text(
                    host.dram_cache_gb) if host else '256'}
    if tiering_key is not None:
        metadata[profile.KERNEL_TIERING_KEY] = tiering_key
    metadata.update(meta)
    snap = cases.with_aggregate(snap, 'cxl', hosts=(HOST,), **metadata)
    compute = cases.snap_mod.Compute(HOST, (HOST,))
    return cases.replace(
        snap, computes=snap.computes + (compute,),
        fleet=(snap.fleet + (host,)) if host else snap.fleet,
        flavors=snap.flavors + tuple(flavors),
        servers=snap.servers + tuple(servers))


class FakeTools(fixtures.Fixture):
    """``ssh`` and ``openstack`` that say what they were asked to run.

    Each writes its arguments, one a line, and for ssh what its standard
    input holds, to ``log``; ``ssh HOST ... nova-pmem-discover`` prints a
    profile.
    """

    def _setUp(self):
        self.dir = self.useFixture(fixtures.TempDir()).path
        bin_dir = os.path.join(self.dir, 'bin')
        os.mkdir(bin_dir)
        self.log = os.path.join(self.dir, 'log')
        for tool in ('ssh', 'openstack'):
            path = os.path.join(bin_dir, tool)
            with open(path, 'w') as f:
                f.write('#!/bin/sh\n'
                        'printf "%%s\\n" "== %s" "$@" >> "%s"\n'
                        'case "$*" in *nova-pmem-discover*) '
                        'echo "{}"; exit 0;; esac\n'
                        '[ %s = ssh ] && [ ! -t 0 ] && '
                        'cat >> "%s"\n'
                        'exit 0\n' % (tool, self.log, tool, self.log))
            os.chmod(path, 0o755)
        os.mkdir(os.path.join(self.dir, 'fleet'))
        self.env = dict(os.environ, PATH=bin_dir + os.pathsep
                        + os.environ['PATH'])

    def run(self, fix):
        """Run ``fix`` as printed with sh; what the tools were asked."""
        open(self.log, 'w').close()
        subprocess.run(['sh', '-e', '-c', fix], cwd=self.dir, env=self.env,
                       check=True, stdin=subprocess.DEVNULL, timeout=30)
        with open(self.log) as f:
            return f.read()


class TieringTestCase(cases.DoctorTestCase):

    def assert_shell(self, fix):
        """``fix`` is valid shell (sh -n)."""
        result = subprocess.run(['sh', '-n'], input=fix, text=True,
                                capture_output=True, timeout=30)
        self.assertEqual(0, result.returncode, '%s\n%s' % (fix,
                                                           result.stderr))


class KernelTieringTestCase(TieringTestCase):

    def test_recorded_documents_read_as_discovery_wrote_them(self):
        for situation, recorded in RECORDED.items():
            host = discovered(situation)
            if recorded is None:
                self.assertIsNone(host.kernel_tiering)
                self.assertIsNone(host.tiering_entry)
                continue
            # The verdict written by hand is the core's verdict.
            verdict = tiering.judge(host.tiering_entry.settings(),
                                    host.cell_ids, (2, 3))
            self.assertEqual((recorded[4], recorded[5], recorded[6],
                              situation in DEMOTES_BOUND),
                             (verdict.promotes, verdict.demotes,
                              tuple(p.code for p in verdict.problems),
                              verdict.demotes_bound_memory), situation)
            self.assertEqual((0, 1), host.cell_ids)

    def test_each_situation(self):
        for situation, expected in EXPECTED.items():
            found = self.assertFindings(
                cloud(situation),
                *[(severity, code, OBJ) for severity, code in expected])
            for finding in found.values():
                self.assert_shell(finding.fix)
                self.assertIn(SOURCE, finding.fix, situation)

    def test_agreement_with_the_profile(self):
        # The doctor says a host's tiering is off exactly when its profile
        # does, whatever its aggregate says.
        for situation in RECORDED:
            host = discovered(situation)
            for key in (None, 'on', 'off', 'discovered'):
                codes = {f.code for f in self.findings(cloud(situation, key))
                         if f.object == OBJ}
                self.assertEqual(host.kernel_tiering == tiering.OFF,
                                 bool(codes & set(OFF_CODES)),
                                 '%s, aggregate %s: %s' % (situation, key,
                                                           codes))

    def test_half_on_fixes_are_the_settings_run_on_the_host(self):
        tools = self.useFixture(FakeTools())
        for situation, lines in (
                ('numa_balancing 1 only', (BALANCING_NOW, BALANCING_BOOT)),
                ('demotion off', (DEMOTION_NOW, DEMOTION_BOOT)),
                ('both off', (TIERING_NOW, TIERING_BOOT, DEMOTION_NOW,
                              DEMOTION_BOOT))):
            found = self.findings(cloud(situation))
            (finding,) = [f for f in found if f.object == OBJ]
            self.assertIn('pmem_kernel_tiering=off', finding.problem)
            for line in lines:
                self.assertIn('\n%s\n' % line, finding.fix)
            ran = tools.run(finding.fix)
            # The host's shell gets the lines as written, as root; then
            # the profile is written again.
            self.assertEqual(
                ['== ssh', HOST, 'sudo', 'sh', '-e'] + list(lines)
                + ['== ssh', HOST, 'sudo', 'nova-pmem-discover', '--cxl'],
                ran.splitlines(), situation)
            with open(os.path.join(tools.dir, SOURCE)) as f:
                self.assertEqual('{}\n', f.read())
        self.assertIn('the kernel (Linux 7.0.0) demotes but does not '
                      'promote for CXL nodes 2, 3: numa_balancing is 1',
                      [f for f in self.findings(cloud('numa_balancing 1 '
                                                      'only'))
                       if f.object == OBJ][0].problem)

    def test_a_kernel_without_the_files_says_so(self):
        (finding,) = [f for f in self.findings(
            cloud('no tiering files (5.10)')) if f.object == OBJ]
        self.assertIn('Linux 5.10.0', finding.problem)
        self.assertIn('Linux 5.18 or later', finding.fix)
        self.assertIn('Linux 5.15 or later', finding.fix)
        self.assertNotIn('sudo sh', finding.fix)
        self.assertIn(kernel_tiering._remote(
            HOST, 'grep -H . /proc/sys/kernel/numa_balancing '
            '/sys/kernel/mm/numa/demotion_enabled'), finding.fix)

    def test_cxl_in_the_dram_tier_is_the_firmware(self):
        tools = self.useFixture(FakeTools())
        found = self.assertFindings(
            cloud('CXL in the DRAM tier'),
            (checks.WARNING, 'far-node-in-dram-tier', OBJ))
        finding = found[('far-node-in-dram-tier', OBJ)]
        self.assertEqual('far-node-in-dram-tier', tiering.SAME_TIER)
        self.assertIn('node 2 in memory_tier4, node 3 in memory_tier4',
                      finding.problem)
        self.assertIn('no command fixes it: enable HMAT in the firmware',
                      finding.fix)
        self.assertNotIn('sysctl', finding.fix)
        self.assertIn('ssh kmem1 %s' % shlex.quote(SHOW_TIERS), finding.fix)
        ran = tools.run(finding.fix)
        self.assertIn('== ssh\nkmem1\n%s\n' % SHOW_TIERS, ran)
        # With NUMA balancing off too: the sysctl is the other finding's.
        found = self.assertFindings(
            cloud('CXL in the DRAM tier, balancing 0'),
            (checks.WARNING, 'far-node-in-dram-tier', OBJ),
            (checks.WARNING, 'kernel-tiering-off', OBJ))
        off = found[('kernel-tiering-off', OBJ)].fix
        self.assertIn('\n%s\n%s\n' % (TIERING_NOW, TIERING_BOOT), off)
        self.assertIn('see far-node-in-dram-tier', off)
        self.assertNotIn('sysctl',
                         found[('far-node-in-dram-tier', OBJ)].fix)

    def test_profile_without_tiering_asks_for_discovery_again(self):
        found = self.assertFindings(
            cloud('absent'), (checks.INFO, 'kernel-tiering-unknown', OBJ))
        fix = found[('kernel-tiering-unknown', OBJ)].fix
        self.assertIn('ssh kmem1 sudo nova-pmem-discover --cxl > '
                      'fleet/kmem1.json.new && mv fleet/kmem1.json.new '
                      'fleet/kmem1.json', fix)
        self.assertEqual(0, checks.exit_status(self.findings(
            cloud('absent'))))
        # A profile made with --numa is made again with it.
        numa = discoveredhost.parse(document('absent', numa=True), SOURCE)
        self.assertIn('nova-pmem-discover --cxl --numa',
                      kernel_tiering._rediscover(numa))
        # Other kinds are not the kernel's to tier.
        flat = dataclasses.replace(discovered('both off'),
                                   mode=kinds.CXL_FLAT)
        snap = cases.replace(cloud(None), fleet=cases.clean().fleet + (flat,))
        self.assertEqual([], kernel_tiering.check(snap, doctor_cloud.view(
            snap)))

    def test_here_document_keeps_quotes(self):
        fix = kernel_tiering.on_host('my host', ["echo 'a b' > /x"])
        self.assertEqual("ssh 'my host' sudo sh -e <<'EOF'\n"
                         "echo 'a b' > /x\nEOF", fix)
        self.assertRaises(ValueError, kernel_tiering.on_host, 'h',
                          ['EOF'])


class DiscoveredTreesTestCase(TieringTestCase):
    """The recorded sysfs and procfs trees, through discovery and the doctor.

    ``nova-pmem-discover --from DIR --cxl`` of each tree of
    ``tests/unit/discover_tiering_data`` (and of a tree recorded before
    discovery read the tiering files), read back as the doctor reads
    ``--fleet``.
    """

    DATA = paths.of('tests', 'unit', 'discover_tiering_data')
    OLD = paths.of('tests', 'unit', 'discover_cxl_data', 'cxl_kmem')

    def discovered(self, directory):
        out, err = io.StringIO(), io.StringIO()
        self.assertEqual(0, discover_cli.main(
            ['--from', directory, '--cxl'], stdout=out, stderr=err),
            err.getvalue())
        data = json.loads(out.getvalue())
        data['hostname'] = HOST
        return discoveredhost.parse(data, SOURCE)

    def test_doctor_agrees_with_discovery(self):
        trees = sorted(d for d in os.listdir(self.DATA)
                       if os.path.isdir(os.path.join(self.DATA, d)))
        self.assertGreaterEqual(len(trees), 6)
        seen = set()
        for name in trees + [None]:
            host = self.discovered(os.path.join(self.DATA, name)
                                   if name else self.OLD)
            for key in ('discovered', None):
                found = self.findings(cloud(None, key, host=host))
                codes = {f.code for f in found if f.object == OBJ}
                seen |= codes
                self.assertEqual(host.kernel_tiering == tiering.OFF,
                                 bool(codes & set(OFF_CODES)), name)
                self.assertEqual(
                    host.kernel_tiering == tiering.OFF and key is None,
                    'kernel-tiering-mismatch' in codes, name)
                self.assertEqual(name is None,
                                 'kernel-tiering-unknown' in codes, name)
                # The doctor names the host exactly where discovery said
                # its reclaim may demote bound memory.
                said = host.tiering_entry is not None and hostfile.given(
                    host.tiering_entry.demotes_bound_memory)
                self.assertEqual(bool(said),
                                 'kernel-demotes-bound-memory' in codes,
                                 name)
                self.assertEqual(set(), {f.code for f in found} - codes,
                                 name)
                for finding in found:
                    self.assert_shell(finding.fix)
        self.assertLessEqual({'kernel-tiering-half-on',
                              'far-node-in-dram-tier',
                              'kernel-tiering-mismatch',
                              'kernel-demotes-bound-memory'}, seen)
        # And one tree where it keeps bound memory in place.
        self.assertIn('bound_kept', trees)


class BoundMemoryTestCase(TieringTestCase):
    """kernel-demotes-bound-memory: the host's release and cgroups."""

    def mysql(self):
        return bound_flavor('mysql', 16, **{'hw:numa_nodes': '2'})

    def finding(self, snap):
        (finding,) = [f for f in self.findings(snap)
                      if f.code == 'kernel-demotes-bound-memory']
        self.assertEqual(OBJ, finding.object)
        self.assert_shell(finding.fix)
        return finding

    def test_a_bound_flavor_makes_it_a_warning(self):
        finding = self.finding(cloud('fully on, 6.8', flavors=(self.mysql(),)))
        self.assertEqual(checks.WARNING, finding.severity)
        self.assertEqual(
            'reclaim on kmem1 may demote the cold pages of guests Nova binds '
            'to CXL nodes 2, 3: Linux 6.8.0 demotes regardless of cpuset and '
            'memory policy (until 6.16); flavors Nova binds may land there '
            '(mysql): their whole RAM is charged against the DRAM, but part '
            'of it may be served from CXL memory', finding.problem)
        self.assertIn('# boot Linux 7.0 or later (or a 6.19.y that carries '
                      '1aceed565ff1)\n', finding.fix)
        self.assertIn('bound-flavor-whole-ram prints the command',
                      finding.fix)
        # Information only where no flavor Nova binds lands there.
        kept_off = cases.flavor('mysql', 16, **{
            'hw:numa_nodes': '2', 'pmem:modes': 'dram'})
        finding = self.finding(cloud('fully on, 6.8', flavors=(kept_off,)))
        self.assertEqual(checks.INFO, finding.severity)
        self.assertIn('no flavor Nova binds lands there today',
                      finding.problem)

    def test_the_fix_runs_as_printed(self):
        tools = self.useFixture(FakeTools())
        finding = self.finding(cloud('fully on, 6.17'))
        self.assertIn('for the next demotion node only', finding.problem)
        # Nothing runs on the host but discovery again.
        self.assertEqual(['== ssh', HOST, 'sudo', 'nova-pmem-discover',
                          '--cxl'], tools.run(finding.fix).splitlines())

    def test_cgroup_v1(self):
        finding = self.finding(cloud('fully on, 7.0 on cgroup v1'))
        self.assertIn('on cgroup v1 here', finding.problem)
        self.assertIn('systemd.unified_cgroup_hierarchy=1', finding.fix)
        self.assertNotIn('boot Linux 7.0', finding.fix)

    def test_a_profile_from_before_the_cgroup_key(self):
        data = document('fully on')
        del data['kernel_tiering']['cgroup']
        del data['kernel_tiering']['demotes_bound_memory']
        host = discoveredhost.parse(data, SOURCE)
        finding = self.finding(cloud(None, host=host))
        self.assertIn('no cgroup v2 cpuset controller was found',
                      finding.problem)
        self.assertIn('does not record /proc/mounts', finding.fix)

    def test_kept_in_place(self):
        # 7.0 on cgroup v2, or a kernel that does not demote.
        for situation in ('fully on', 'demotion off'):
            self.assertEqual([], [
                f for f in self.findings(cloud(situation,
                                               flavors=(self.mysql(),)))
                if f.code == 'kernel-demotes-bound-memory'], situation)


class AggregateTieringTestCase(TieringTestCase):

    def test_aggregate_on_host_off_is_an_error(self):
        tools = self.useFixture(FakeTools())
        for key in (None, 'on'):
            found = self.assertFindings(
                cloud('demotion off', key),
                (checks.ERROR, 'kernel-tiering-mismatch', OBJ),
                (checks.WARNING, 'kernel-tiering-half-on', OBJ))
            finding = found[('kernel-tiering-mismatch', OBJ)]
            self.assertIn('which means on' if key is None else
                          'pmem_kernel_tiering=on', finding.problem)
            self.assertIn('charges only hot RAM while the kernel leaves '
                          'pages where first touch put them',
                          finding.problem)
            self.assert_shell(finding.fix)
            lines = finding.fix.splitlines()
            # The aggregate first, then turning tiering on.
            self.assertEqual('openstack aggregate set --property '
                             'pmem_kernel_tiering=off cxl', lines[1])
            self.assertLess(lines.index(DEMOTION_NOW), len(lines))
            ran = tools.run(finding.fix)
            self.assertTrue(ran.startswith(
                '== openstack\naggregate\nset\n--property\n'
                'pmem_kernel_tiering=off\ncxl\n== ssh\nkmem1\nsudo\nsh\n-e\n'
                '%s\n%s\n' % (DEMOTION_NOW, DEMOTION_BOOT)), ran)
        self.assertEqual(2, checks.exit_status(self.findings(
            cloud('demotion off', None))))

    def test_the_key_off_cxl_kmem_is_ignored(self):
        for mode in (kinds.MEMORY_MODE, kinds.CXL_FLAT):
            found = self.assertFindings(
                cloud(None, 'off', pmem_mode=mode),
                (checks.WARNING, 'kernel-tiering-ignored', 'aggregate cxl'))
            finding = found[('kernel-tiering-ignored', 'aggregate cxl')]
            self.assertIn('kmem1 %s' % mode, finding.problem)
            self.assertEqual('openstack aggregate unset --property '
                             'pmem_kernel_tiering cxl', finding.fix)
        # On cxl_kmem it is read: no warning.
        self.assertFindings(cloud(None, 'off'))

    def test_the_aggregate_line_clears_the_error(self):
        snap = cloud('both off', None)
        self.assertFindings(
            cases.with_aggregate(snap, 'cxl', pmem_kernel_tiering='off'),
            (checks.WARNING, 'kernel-tiering-off', OBJ))

    def test_aggregate_off_host_on_is_a_warning(self):
        found = self.assertFindings(
            cloud('fully on', 'off'),
            (checks.WARNING, 'kernel-tiering-mismatch', OBJ))
        finding = found[('kernel-tiering-mismatch', OBJ)]
        self.assertEqual('openstack aggregate set --property '
                         'pmem_kernel_tiering=on cxl', finding.fix)
        self.assertIn('buys no VM', finding.problem)
        # With another host in the aggregate whose tiering is not known
        # to be on, the aggregate is left alone.
        snap = cases.with_aggregate(cloud('fully on', 'off'), 'cxl',
                                    hosts=(HOST, 'kmem2'))
        snap = cases.replace(snap, computes=snap.computes + (
            cases.snap_mod.Compute('kmem2', ('kmem2',)),))
        finding = {(f.code, f.object): f for f in self.findings(snap)}[
            ('kernel-tiering-mismatch', OBJ)]
        self.assertNotIn('openstack aggregate set', finding.fix)
        self.assertIn('also holds kmem2', finding.fix)
        self.assert_shell(finding.fix)

    def test_agreeing_aggregate_is_clean(self):
        self.assertFindings(cloud('fully on', 'on'))
        self.assertFindings(cloud('fully on', None))
        self.assertFindings(cloud('both off', 'off'),
                            (checks.WARNING, 'kernel-tiering-off', OBJ))

    def test_invalid_value(self):
        for value, fixed in (('true', 'off'), ('of', 'off'), ('maybe', 'off')):
            found = self.assertFindings(
                cloud('both off', value),
                (checks.ERROR, 'invalid-kernel-tiering', AGG),
                (checks.WARNING, 'kernel-tiering-off', OBJ))
            finding = found[('invalid-kernel-tiering', AGG)]
            self.assertIn("pmem_kernel_tiering=%r is not one of on, off"
                          % value, finding.problem)
            self.assertIn('PmemCacheFilter rejects hosts kmem1',
                          finding.problem)
            # Discovery knows the value.
            self.assertEqual('openstack aggregate set --property '
                             'pmem_kernel_tiering=%s cxl' % fixed,
                             finding.fix)
        # Without discovery: the value it looks like, or a placeholder.
        for value, fixed in (('Of', 'off'), ('onn', 'on'),
                             ('maybe', "'pmem_kernel_tiering=<on or off>'")):
            snap = cases.replace(cloud('both off', value),
                                 fleet=cases.clean().fleet)
            found = self.assertFindings(
                snap, (checks.ERROR, 'invalid-kernel-tiering', AGG))
            self.assertTrue(found[('invalid-kernel-tiering', AGG)].fix
                            .endswith('%s cxl' % (
                                fixed if fixed.startswith("'")
                                else 'pmem_kernel_tiering=' + fixed)))
        # The scheduler reads the host as unknown, as the finding says.
        self.assertIsNone(profile.from_metadata([{
            profile.MODE_KEY: kinds.CXL_KMEM, profile.DRAM_CACHE_KEY: '256',
            profile.KERNEL_TIERING_KEY: 'maybe'}]).mode)

    def test_misspelt_key_moves_a_readable_value(self):
        snap = cloud('fully on', None, pmem_kernel_tierng='yes')
        found = self.assertFindings(
            snap, (checks.WARNING, 'misspelt-key', AGG))
        self.assertIn("'pmem_kernel_tiering=<on or off>' cxl",
                      found[('misspelt-key', AGG)].fix)


def bound_flavor(name, ram_gb, hot_ratio='0.25', **specs):
    specs = dict(specs, **{extra_specs.HOT_RATIO_KEY: hot_ratio})
    specs[cases.NEAR] = str(placement.instance_near_memory_mb(
        ram_gb * GB, float(hot_ratio)))
    return cases.flavor(name, ram_gb, **specs)


class BoundFlavorTestCase(TieringTestCase):

    def test_numa_bound_flavor_costs_its_whole_ram(self):
        mysql = bound_flavor('mysql', 16, **{'hw:numa_nodes': '2'})
        found = self.assertFindings(
            cloud('fully on', flavors=(mysql,)),
            (checks.WARNING, 'bound-flavor-whole-ram', 'flavor mysql'))
        finding = found[('bound-flavor-whole-ram', 'flavor mysql')]
        self.assertEqual(
            'mysql (hw:numa_nodes=2, 16384 MB, pmem:hot_ratio 0.25) charges '
            '16384 MB of DRAM on cxl_kmem hosts (kmem1), not 4096 MB: Nova '
            'binds its memory strictly to the DRAM cells, where all of it is '
            'allocated and the kernel never promotes it', finding.problem)
        self.assertEqual(
            '# keep it off kernel-tiered hosts (and off memory_mode hosts: '
            'no pmem:modes value admits them without cxl_kmem):\n'
            'openstack flavor set --property '
            'pmem:modes=dram,app_direct,cxl_flat mysql\n'
            '# or accept the cost: PmemCacheFilter and the planner already '
            'charge its whole RAM there', finding.fix)
        self.assert_shell(finding.fix)

    def test_every_binding_spec(self):
        for specs in ({'hw:mem_page_size': 'large'},
                      {'hw:cpu_policy': 'dedicated'},
                      {'resources:PCPU': '4'}):
            flavor = bound_flavor('pinned', 8, **specs)
            found = self.assertFindings(
                cloud('fully on', flavors=(flavor,)),
                (checks.WARNING, 'bound-flavor-whole-ram', 'flavor pinned'))
            self.assertIn('%s=%s' % next(iter(specs.items())),
                          found[('bound-flavor-whole-ram',
                                 'flavor pinned')].problem)

    def test_not_reported(self):
        flavors = (
            # Floating: charges its hot RAM.
            bound_flavor('floating', 16),
            # Hot ratio 1: the whole RAM is what it says.
            bound_flavor('all-hot', 16, hot_ratio='1',
                         **{'hw:numa_nodes': '1'}),
            # Cannot land on cxl_kmem hosts.
            cases.flavor('dram-only', 16, **{
                'hw:numa_nodes': '1', 'pmem:modes': 'dram,app_direct'}),
            bound_flavor('flat-only', 16, **{
                'hw:numa_nodes': '1', 'pmem:modes': 'cxl_flat'}))
        self.assertFindings(cloud('fully on', flavors=flavors))
        # No cxl_kmem host: nothing to say.
        mysql = bound_flavor('mysql', 16, **{'hw:numa_nodes': '2'})
        self.assertFindings(cases.with_flavor(cases.clean(), mysql))

    def test_only_cxl_kmem_leaves_acceptance(self):
        flavor = bound_flavor('kmem-only', 16, **{
            'hw:numa_nodes': '1', 'pmem:modes': 'cxl_kmem'})
        found = self.assertFindings(
            cloud('fully on', flavors=(flavor,)),
            (checks.WARNING, 'bound-flavor-whole-ram', 'flavor kmem-only'))
        fix = found[('bound-flavor-whole-ram', 'flavor kmem-only')].fix
        self.assertEqual('# accept the cost: PmemCacheFilter and the planner '
                         'already charge its whole RAM there', fix)

    def test_modes_without_agrees_with_the_filter(self):
        # For every pmem:modes a flavor may carry: the fix admits every
        # kind the flavor was admitted to but cxl_kmem (and the lost ones),
        # and nothing else, as PmemRequest.allows decides.
        values = kinds.FLAVOR_MODES
        for mask in range(1, 2 ** len(values)):
            modes = ','.join(v for i, v in enumerate(values)
                             if mask & (1 << i))
            request = extra_specs.parse({extra_specs.MODES_KEY: modes})
            change, lost = flavorfix.modes_without('f', request,
                                                   kinds.CXL_KMEM)
            before = {k for k in kinds.ALL_MODES if request.allows(k)}
            if change is None:
                self.assertEqual(before - {kinds.CXL_KMEM}, set(lost),
                                 modes)
                continue
            after = extra_specs.parse(change.apply({
                extra_specs.MODES_KEY: modes}))
            now = {k for k in kinds.ALL_MODES if after.allows(k)}
            self.assertEqual(before - {kinds.CXL_KMEM} - set(lost), now,
                             modes)
            self.assertNotIn(kinds.CXL_KMEM, now)
            # Only Memory Mode cannot be kept apart from cxl_kmem.
            self.assertLessEqual(set(lost), {kinds.MEMORY_MODE}, modes)


class ChargedRamTestCase(cases.DoctorTestCase):
    """cache-overcommitted on a cxl_kmem host charges as the core says."""

    CELLS = '0:128,1:128'

    def snap(self, mode=kinds.CXL_KMEM, tiering_key=None, servers=()):
        snap = cloud(None, tiering_key, servers=servers,
                     pmem_dram_cache_gb_per_cell=self.CELLS)
        return cases.with_aggregate(snap, 'cxl', pmem_mode=mode)

    def test_numa_bound_server_by_its_whole_ram(self):
        # 160 GB bound to cell 0: 40 GB hot, 160 GB whole; the cell holds
        # 128 GB.
        bound = cases.bound_server('db', HOST, {0: 160}, hot_ratio='0.25')
        found = self.assertFindings(
            self.snap(servers=(bound,)),
            (checks.ERROR, 'cache-overcommitted', 'host kmem1 (NUMA cell 0)'))
        problem = found[('cache-overcommitted',
                         'host kmem1 (NUMA cell 0)')].problem
        self.assertIn('placed on NUMA cell 0, 163840 MB, exceeds', problem)
        self.assertIn('db (id-db, 163840 MB charged on the cell)', problem)
        self.assertIn('whole RAM of NUMA-bound instances', problem)
        # Memory Mode and cxl_flat: its hot RAM, which fits.
        for mode in (kinds.MEMORY_MODE, kinds.CXL_FLAT):
            self.assertFindings(self.snap(mode, servers=(bound,)))

    def test_tiering_off_charges_every_server_its_whole_ram(self):
        # Three floating 100 GB servers: 75 GB hot, 300 GB whole, 256 GB
        # of DRAM.
        servers = tuple(cases.server('s%d' % i, HOST, 100,
                                     **{'pmem:hot_ratio': '0.25'})
                        for i in range(3))
        self.assertFindings(self.snap(servers=servers))
        self.assertFindings(self.snap(tiering_key='on', servers=servers))
        found = self.assertFindings(
            self.snap(tiering_key='off', servers=servers),
            (checks.ERROR, 'cache-overcommitted', 'host kmem1'))
        problem = found[('cache-overcommitted', 'host kmem1')].problem
        self.assertIn("the RAM charged (every instance's whole RAM: "
                      "pmem_kernel_tiering=off) placed on it, 307200 MB, "
                      'exceeds its DRAM-cache bound of 262144 MB', problem)
        self.assertIn('s0 (id-s0, 102400 MB charged)', problem)
        # The key means nothing on Memory-Mode hosts: the charge is hot
        # RAM, and the doctor says the key is ignored.
        self.assertFindings(self.snap(kinds.MEMORY_MODE, 'off',
                                      servers=servers),
                            (checks.WARNING, 'kernel-tiering-ignored',
                             'aggregate cxl'))
