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
"""The kernel's tiering in an observation: recorded trees, bad files, ours.

Each tree of ``data/tiering`` (its README says what each case is) goes
through a whole window of the observer; its ``tiering`` section is checked
by hand against the files, and against the host profile's
``kernel_tiering`` object of the same settings (one rule, two documents).
"""

import copy
import dataclasses
import io
import json
import os
import shutil

import fixtures
import hypothesis
from hypothesis import strategies as st
import testtools

from nova_pmem_filters.core.formats import hostfile
from nova_pmem_filters.core.formats import observation
from nova_pmem_filters.core.grammars import sysfs
from nova_pmem_filters.core.rules import tiering
from nova_pmem_filters.discover import cli as discover_cli
from nova_pmem_filters.observe import host
from tests.unit import hypo
from tests.unit import obsdocs
from tests.unit.observe import fakehost
from tests.unit import paths

TREES = os.path.join(os.path.dirname(__file__), 'data', 'tiering')
DISCOVERY = paths.of('tests', 'unit', 'discover_tiering_data')
UUID = 'c0ffee00-0000-4000-8000-000000000001'
GIB_PAGES = fakehost.GIB_PAGES


class TreeTestCase(testtools.TestCase):
    """A recorded tree copied to a temporary root, observed for 60 s."""

    def tree(self, case):
        root = os.path.join(self.useFixture(fixtures.TempDir()).path, case)
        shutil.copytree(os.path.join(TREES, case), root)
        os.makedirs(os.path.join(root, 'run', 'libvirt', 'qemu'))
        return root

    def observe(self, root, **kwargs):
        after = os.path.join(root, 'after')

        def end_of_window():
            if os.path.isdir(after):
                shutil.copytree(after, root, dirs_exist_ok=True)

        clock = fakehost.Clock(end_of_window)
        paths = host.default_paths(
            proc=os.path.join(root, 'proc'), sysfs=os.path.join(root, 'sys'),
            libvirt=os.path.join(root, 'run', 'libvirt', 'qemu'))
        kwargs.setdefault('method', host.REFERENCE_BITS)
        doc = host.observe(60.0, paths=paths, hostname='cxl-01',
                           clock=lambda: 1795608000.0,
                           monotonic=clock.monotonic, sleep=clock.sleep,
                           **kwargs)
        # What the observer writes, every reader reads back the same.
        self.assertEqual(doc, observation.parse(
            json.loads(observation.dumps(doc)), 'cxl-01.json'))
        return doc


class RecordedTreesTestCase(TreeTestCase):

    def kernel(self, case):
        doc = self.observe(self.tree(case))
        self.assertEqual((), doc.gaps)
        self.assertIsNotNone(doc.tiering)
        return doc, doc.tiering

    def test_fully_on(self):
        doc, kernel = self.kernel('fully-on')
        self.assertEqual(
            {'version': 1, 'kernel': '6.9.0-1-amd64', 'numa_balancing': 2,
             'demotion_enabled': True, 'promotion_rate_limit_mbps': 65536,
             'memory_tiers': [{'tier': 4, 'nodes': [0]},
                              {'tier': 22, 'nodes': [1]}],
             'far_nodes': [1], 'promotes': True, 'demotes': True,
             'state': 'on', 'problems': [],
             # No proc/mounts recorded; 6.9 demotes bound memory anyway.
             'cgroup': None, 'demotes_bound_memory': True,
             # (7000 - 1000) / 60 promoted, (11000 - 2000) / 60
             # candidates, (3500 - 500) / 60 demoted by kswapd.
             'rates': {'numa_hint_faults': 1000.0, 'pgdemote_direct': 0.0,
                       'pgdemote_khugepaged': 0.0, 'pgdemote_kswapd': 50.0,
                       'pgpromote_candidate': 150.0,
                       'pgpromote_success': 100.0},
             # The nodes' own counters (no numa_hint_faults: a host-wide
             # event).
             'node_rates': {
                 '0': {'pgdemote_direct': 0.0, 'pgdemote_khugepaged': 0.0,
                       'pgdemote_kswapd': 50.0, 'pgpromote_candidate': 150.0,
                       'pgpromote_success': 100.0},
                 '1': {'pgdemote_direct': 0.0, 'pgdemote_khugepaged': 0.0,
                       'pgdemote_kswapd': 0.0, 'pgpromote_candidate': 0.0,
                       'pgpromote_success': 0.0}}},
            kernel.to_dict())
        self.assertEqual([], kernel.lagging())
        # The existing far-memory totals agree with the counters.
        self.assertEqual((100.0, 50.0),
                         (doc.far_memory.promote_pages_per_s,
                          doc.far_memory.demote_pages_per_s))

    def test_lagging(self):
        _doc, kernel = self.kernel('lagging')
        self.assertEqual(('on', 1), (kernel.state,
                                     kernel.promotion_rate_limit_mbps))
        self.assertEqual({'pgpromote_success': 1000.0,
                          'pgpromote_candidate': 10000.0,
                          'pgdemote_direct': 100.0},
                         {k: kernel.rates[k] for k in (
                             'pgpromote_success', 'pgpromote_candidate',
                             'pgdemote_direct')})
        self.assertEqual(['promotion-lags', 'direct-demotion'],
                         [code for code, _line in kernel.lagging()])
        # Node 1's vmstat has no tiering counter: left out, as the
        # kernel gives none for it.
        self.assertEqual([0], sorted(kernel.node_rates))

    def assertOff(self, case, promotes, demotes, problems):
        _doc, kernel = self.kernel(case)
        self.assertEqual(('off', promotes, demotes, problems, (1,)),
                         (kernel.state, kernel.promotes, kernel.demotes,
                          kernel.problems, kernel.far_nodes))
        # No traffic in the window: every rate 0, none missing.
        self.assertTrue(kernel.rates)
        self.assertEqual({0.0}, set(kernel.rates.values()))
        return kernel

    def test_mode_1_only(self):
        kernel = self.assertOff('mode-1-only', False, True,
                                (tiering.BALANCING_OFF,))
        self.assertEqual(1, kernel.numa_balancing)
        # A kernel without per-node vmstat: no node rates.
        self.assertEqual({}, kernel.node_rates)

    def test_demotion_off(self):
        kernel = self.assertOff('demotion-off', True, False,
                                (tiering.DEMOTION_OFF,))
        self.assertIs(False, kernel.demotion_enabled)

    def test_cxl_in_the_dram_tier(self):
        kernel = self.assertOff('cxl-in-dram-tier', False, False,
                                (tiering.SAME_TIER,))
        self.assertEqual(((4, (0, 1)),), kernel.settings().tiers)

    def test_no_memory_tiering(self):
        _doc, kernel = self.kernel('no-memory-tiering')
        # Node 2 has no CPUs and no memory: not a far node.
        self.assertEqual(((1,), 'on'), (kernel.far_nodes, kernel.state))
        self.assertIsNone(kernel.memory_tiers)
        self.assertIsNone(kernel.promotion_rate_limit_mbps)
        self.assertEqual({'numa_hint_faults': 100.0, 'pgdemote_direct': 0.0,
                          'pgdemote_kswapd': 5.0, 'pgpromote_success': 10.0},
                         kernel.rates)
        self.assertEqual({}, kernel.node_rates)
        # No candidates counted: nothing said of lagging.
        self.assertEqual([], kernel.lagging())

    def test_older(self):
        _doc, kernel = self.kernel('older')
        self.assertEqual(('off', (tiering.BALANCING_OFF,
                                  tiering.NO_DEMOTION)),
                         (kernel.state, kernel.problems))
        self.assertIsNone(kernel.demotion_enabled)
        self.assertEqual({'numa_hint_faults': 1.0}, kernel.rates)

    def test_the_host_profile_records_the_same(self):
        # nova-pmem-discover's kernel_tiering object of the same settings
        # holds the same keys and values: one rule, two documents.
        for case in sorted(os.listdir(TREES)):
            if not os.path.isdir(os.path.join(TREES, case)):
                continue
            _doc, kernel = self.kernel(case)
            cpu_nodes = [0]
            entry, verdict = hostfile.kernel_tiering_entry(
                sysfs.read_state(os.path.join(TREES, case)), cpu_nodes,
                kernel.far_nodes)
            mine = kernel.to_dict()
            del mine['rates'], mine['node_rates']
            self.assertEqual(hostfile.to_dict(entry), mine, case)
            self.assertEqual(verdict, kernel.verdict(cpu_nodes), case)


class DiscoveryAgreesTestCase(TreeTestCase):
    """The observer and ``nova-pmem-discover --cxl`` on the same hosts.

    The discovery tests' recordings (``tests/unit/discover_tiering_data``)
    hold the nodes as ``node-N-cpulist.txt`` and ``node-N-meminfo.txt``;
    laid out as sysfs does, the observer reads the same host.
    """

    def as_host(self, case):
        root = os.path.join(self.useFixture(fixtures.TempDir()).path, case)
        shutil.copytree(os.path.join(DISCOVERY, case), root)
        os.makedirs(os.path.join(root, 'run', 'libvirt', 'qemu'))
        for name in os.listdir(root):
            if name.startswith('node-') and name.endswith('.txt'):
                node, what = name[len('node-'):-len('.txt')].split('-')
                directory = os.path.join(root, 'sys', 'devices', 'system',
                                         'node', 'node%s' % node)
                os.makedirs(directory, exist_ok=True)
                shutil.copy(os.path.join(root, name),
                            os.path.join(directory, what))
        return root

    def test_same_verdict_as_discovery(self):
        if not os.path.isdir(DISCOVERY):
            self.skipTest('no discovery recordings')
        cases = sorted(c for c in os.listdir(DISCOVERY)
                       if os.path.isdir(os.path.join(DISCOVERY, c)))
        self.assertTrue(cases)
        for case in cases:
            out, err = io.StringIO(), io.StringIO()
            status = discover_cli.main(
                ['--from', os.path.join(DISCOVERY, case), '--cxl',
                 '--json'], stdout=out, stderr=err)
            self.assertEqual(0, status, err.getvalue())
            found = json.loads(out.getvalue())['kernel_tiering']
            doc = self.observe(self.as_host(case))
            self.assertEqual((), doc.gaps, case)
            mine = doc.tiering.to_dict()
            del mine['rates'], mine['node_rates']
            self.assertEqual(found, mine, case)


class GuestTestCase(TreeTestCase):
    """A guest's memory near and far, and its hot pages on the far node."""

    def guest(self, referenced_gb, numa_pages, page_kb=4, case='fully-on'):
        root = self.tree(case)
        fakehost.add_domain(os.path.join(root, 'run', 'libvirt', 'qemu'),
                            'instance-00000001', UUID, pid=301,
                            flavor='m1.cxl', memory_mb=8192)
        fakehost.add_process(os.path.join(root, 'proc'), 301,
                             referenced_kb=int(referenced_gb * 1048576),
                             numa_pages=numa_pages, page_kb=page_kb)
        doc = self.observe(root)
        self.assertEqual((), doc.gaps)
        return doc.instances[0]

    def test_hot_pages_on_the_far_node(self):
        # 3 GiB touched, 1 GiB resident near: at least 2 GiB of it far.
        inst = self.guest(3, {0: GIB_PAGES, 1: 3 * GIB_PAGES})
        self.assertEqual((1024.0, 3072.0, 2048.0),
                         (inst.near_resident_mb, inst.far_resident_mb,
                          inst.hot_on_far_mb))

    def test_hot_pages_that_fit_near(self):
        inst = self.guest(1, {0: 2 * GIB_PAGES, 1: 3 * GIB_PAGES})
        self.assertEqual((2048.0, 3072.0, 0.0),
                         (inst.near_resident_mb, inst.far_resident_mb,
                          inst.hot_on_far_mb))

    def test_at_most_what_sits_far(self):
        # A working set above what is resident (pages touched, then
        # freed): no more on the far node than sits there.
        inst = self.guest(6, {0: GIB_PAGES, 1: GIB_PAGES})
        self.assertEqual(1024.0, inst.hot_on_far_mb)

    def test_huge_pages_count_in_their_size(self):
        # 2 MiB pages: 512 of them are 1 GiB.
        inst = self.guest(2, {0: 512, 1: 1024}, page_kb=2048)
        self.assertEqual((1024.0, 2048.0, 1024.0),
                         (inst.near_resident_mb, inst.far_resident_mb,
                          inst.hot_on_far_mb))

    def test_a_node_sysfs_does_not_list_is_no_guess(self):
        inst = self.guest(1, {0: GIB_PAGES, 5: GIB_PAGES})
        self.assertEqual({0: 1024.0, 5: 1024.0}, inst.numa_mb)
        self.assertEqual((None, None, None),
                         (inst.near_resident_mb, inst.far_resident_mb,
                          inst.hot_on_far_mb))


class BadFilesTestCase(TreeTestCase):
    """A file the kernel would not write: one gap naming it, no guess."""

    def gap(self, root, words):
        doc = self.observe(root)
        self.assertEqual(1, len(doc.gaps), doc.gaps)
        for word in words:
            self.assertIn(word, doc.gaps[0])
        return doc

    def test_unknown_numa_balancing_value(self):
        root = self.tree('fully-on')
        path = os.path.join(root, tiering.NUMA_BALANCING_FILE)
        fakehost.write(path, '7\n')
        doc = self.gap(root, ['kernel tiering: ', path, "unknown value '7'"])
        self.assertIsNone(doc.tiering)

    def test_truncated_settings_file(self):
        root = self.tree('fully-on')
        path = os.path.join(root, tiering.DEMOTION_FILE)
        fakehost.write(path, '')
        doc = self.gap(root, [path, 'empty (a truncated read?)'])
        self.assertIsNone(doc.tiering)

    def test_unreadable_settings_file(self):
        root = self.tree('fully-on')
        path = os.path.join(root, tiering.NUMA_BALANCING_FILE)
        os.remove(path)
        os.mkdir(path)
        doc = self.gap(root, [path, 'cannot read'])
        self.assertIsNone(doc.tiering)

    def test_unreadable_memory_tier(self):
        root = self.tree('fully-on')
        os.remove(os.path.join(root, tiering.MEMORY_TIERING_DIR,
                               'memory_tier22', 'nodelist'))
        doc = self.gap(root, ['memory_tier22/nodelist', 'missing'])
        self.assertIsNone(doc.tiering)

    def test_missing_meminfo_of_a_cpuless_node(self):
        root = self.tree('fully-on')
        path = os.path.join(root, 'sys', 'devices', 'system', 'node',
                            'node1', 'meminfo')
        os.remove(path)
        doc = self.gap(root, ['kernel tiering: ', path, 'cannot read'])
        self.assertIsNone(doc.tiering)

    def test_truncated_vmstat_at_the_end_of_the_window(self):
        root = self.tree('fully-on')
        after = os.path.join(root, 'after', 'proc', 'vmstat')
        with open(after) as f:
            text = f.read()
        fakehost.write(after, text[:text.index('pgpromote_success') + 9])
        doc = self.observe(root)
        self.assertTrue(any(g.startswith('kernel tiering counters: ')
                            and 'proc/vmstat' in g for g in doc.gaps),
                        doc.gaps)
        # The settings stand; the rates are not guessed.
        self.assertEqual('on', doc.tiering.state)
        self.assertIsNone(doc.tiering.rates)
        self.assertEqual({}, doc.tiering.node_rates)

    def test_counters_that_went_back_are_left_out(self):
        # A reboot between the readings: no negative rate.
        root = self.tree('fully-on')
        fakehost.write(os.path.join(root, 'after', 'proc', 'vmstat'),
                       'pgpromote_success 5\npgdemote_kswapd 9000\n')
        doc = self.observe(root)
        self.assertEqual({'pgdemote_kswapd': 141.667},
                         doc.tiering.rates)

    def test_proc_and_sysfs_of_two_roots(self):
        root = self.tree('fully-on')
        paths = host.default_paths(
            proc=os.path.join(root, 'proc'),
            sysfs=os.path.join(root, 'elsewhere', 'sys'))
        self.assertIsNone(paths.root)
        self.assertEqual(root, host.default_paths(
            proc=os.path.join(root, 'proc'),
            sysfs=os.path.join(root, 'sys')).root)
        self.assertEqual('/', host.default_paths().root)


class ThisMachineTestCase(testtools.TestCase):
    """This machine's own files, read for real (read only)."""

    def setUp(self):
        super().setUp()
        if not os.path.exists('/' + tiering.NUMA_BALANCING_FILE) or \
                not os.path.exists('/sys/devices/system/node/node0'):
            self.skipTest('no numa_balancing or NUMA sysfs here')

    def test_this_machine(self):
        libvirt = self.useFixture(fixtures.TempDir()).path
        clock = fakehost.Clock()
        # Reference bits with no instance: nothing is written, and DAMON
        # is not looked at.
        doc = host.observe(1.0, method=host.REFERENCE_BITS,
                           paths=host.default_paths(libvirt=libvirt),
                           hostname='here', monotonic=clock.monotonic,
                           sleep=clock.sleep)
        kernel = doc.tiering
        self.assertIsNotNone(kernel, doc.gaps)
        with open('/' + tiering.NUMA_BALANCING_FILE) as f:
            self.assertEqual(int(f.read()), kernel.numa_balancing)
        cpuless = {n.id for n in doc.nodes if not n.cpus}
        self.assertLessEqual(set(kernel.far_nodes), cpuless)
        on = kernel.promotes and kernel.demotes and bool(kernel.far_nodes)
        self.assertEqual('on' if on else 'off', kernel.state)
        with open('/proc/vmstat') as f:
            names = {line.split()[0] for line in f if line.strip()}
        self.assertEqual(set(tiering.COUNTERS) & names, set(kernel.rates))
        node0 = '/' + tiering.NODE_VMSTAT_FILE % 0
        if os.path.exists(node0):
            with open(node0) as f:
                names = {line.split()[0] for line in f if line.strip()}
            if set(tiering.COUNTERS) & names:
                self.assertEqual(set(tiering.COUNTERS) & names,
                                 set(kernel.node_rates[0]))


_RATES = st.dictionaries(st.sampled_from(tiering.COUNTERS),
                         st.floats(0.0, 1e7, allow_nan=False), max_size=4)
_NODES = st.lists(st.integers(0, 8), max_size=3, unique=True).map(tuple)
# Any tiering object a writer may build: settings judged by the core.
TIERINGS = st.builds(
    lambda state, cpus, far, rates, node_rates: observation.Tiering.of(
        state, cpus, far, rates=rates, node_rates=node_rates)[0],
    st.builds(tiering.State,
              kernel=st.one_of(st.none(), st.text(min_size=1, max_size=8)),
              numa_balancing=st.one_of(st.none(), st.integers(0, 3)),
              demotion_enabled=st.one_of(st.none(), st.booleans()),
              promotion_rate_limit_mbps=st.one_of(
                  st.none(), st.integers(0, 2 ** 20)),
              tiers=st.one_of(st.none(), st.lists(st.tuples(
                  st.integers(0, 30), _NODES), max_size=3).map(tuple))),
    _NODES, _NODES, st.one_of(st.none(), _RATES),
    st.dictionaries(st.integers(0, 8), _RATES, max_size=3))


def _document(kernel=None, instance=None):
    """A cxl host's window: ``kernel`` its tiering object (or none)."""
    return obsdocs.document('cxl1', [dict(
        obsdocs.instance('a', 'm1', 4096, 0.5), **(instance or {}))],
        nodes=[{'id': 0, 'cpus': True}, {'id': 2, 'cpus': False}],
        tiering=kernel)


class DocumentTestCase(testtools.TestCase):
    """The tiering object and the instances' new keys in the document."""

    @hypo.settings(150)
    @hypothesis.given(TIERINGS)
    def test_any_tiering_reads_back(self, kernel):
        doc = dataclasses.replace(_document(), tiering=kernel)
        written = observation.dumps(doc)
        back = observation.parse(json.loads(written), 'obs.json')
        self.assertEqual(doc, back)
        self.assertEqual(written, observation.dumps(back))

    def test_written_and_read_back_from_a_file(self):
        doc = _document(obsdocs.tiering(rates={'pgpromote_success': 1.5},
                                        node_rates={0: {
                                            'pgpromote_success': 1.5}}),
                        {'near_resident_mb': 2048.0,
                         'far_resident_mb': 2048.0, 'hot_on_far_mb': 0.0})
        tmp = self.useFixture(fixtures.TempDir()).path
        obsdocs.write(tmp, [doc])
        back, = observation.load(tmp)
        self.assertEqual(doc, back)
        self.assertEqual({0: {'pgpromote_success': 1.5}},
                         back.tiering.node_rates)
        self.assertEqual(0.0, back.instances[0].hot_on_far_mb)

    def test_an_older_document_reads_and_writes_as_before(self):
        data = _document().to_dict()
        self.assertNotIn('tiering', data)
        for key in ('near_resident_mb', 'far_resident_mb', 'hot_on_far_mb'):
            self.assertNotIn(key, data['instances'][0])
        doc = observation.parse(copy.deepcopy(data), 'old.json')
        self.assertIsNone(doc.tiering)
        self.assertIsNone(doc.instances[0].far_resident_mb)
        self.assertEqual(data, doc.to_dict())

    def test_a_later_version_is_read(self):
        data = _document(obsdocs.tiering()).to_dict()
        data['tiering'].update(version=2, later={'x': 1})
        doc = observation.parse(data, 'new.json')
        self.assertEqual(2, doc.tiering.version)

    def assertRefused(self, change, path, words):
        data = _document(obsdocs.tiering(rates={
            'pgpromote_success': 1.0})).to_dict()
        change(data)
        exc = self.assertRaises(observation.ObservationError,
                                observation.parse, data, 'obs.json')
        where = 'obs.json' + ''.join('[%s]' % json.dumps(k) for k in path)
        self.assertTrue(str(exc).startswith(where + ': '), str(exc))
        for word in words:
            self.assertIn(word, str(exc))

    def test_malformed(self):
        def setting(key, value):
            return lambda data: data['tiering'].__setitem__(key, value)
        self.assertRefused(setting('numa_balancing', 7),
                           ['tiering', 'numa_balancing'],
                           ['from 0 to 4', '7'])
        self.assertRefused(setting('demotion_enabled', 'yes'),
                           ['tiering', 'demotion_enabled'],
                           ['true, false or null'])
        self.assertRefused(setting('state', 'maybe'),
                           ['tiering', 'state'], ['expected one of on, off'])
        # A verdict that contradicts itself.
        self.assertRefused(setting('state', 'off'), ['tiering', 'state'],
                           ['"off" but promotes is true and demotes is '
                            'true: expected on'])
        self.assertRefused(lambda data: data['tiering'].pop('promotes'),
                           ['tiering', 'promotes'], ['missing'])
        self.assertRefused(setting('version', 0), ['tiering', 'version'],
                           ['a version'])
        self.assertRefused(setting('far_nodes', ['2']),
                           ['tiering', 'far_nodes', 0], ['whole number'])
        self.assertRefused(setting('rates', {'PGPROMOTE': 1.0}),
                           ['tiering', 'rates'], ['vmstat counter names'])
        self.assertRefused(setting('rates', {'pgpromote_success': -1.0}),
                           ['tiering', 'rates', 'pgpromote_success'],
                           ['0.0 or more'])
        self.assertRefused(setting('node_rates', {'node0': {}}),
                           ['tiering', 'node_rates'], ['NUMA node ids'])
        self.assertRefused(setting('memory_tiers', [{'nodes': [0]}]),
                           ['tiering', 'memory_tiers', 0, 'tier'], [])
        self.assertRefused(
            lambda data: data['instances'][0].__setitem__(
                'hot_on_far_mb', 'lots'),
            ['instances', 0, 'hot_on_far_mb'], ['expected a number'])
