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
"""nova-pmem-discover --cxl on recorded cxl / daxctl / sysfs outputs.

Each cxl_* case under discover_cxl_data/ records one host (see its README.rst).
The expected profile is worked out here from the host's hardware: sockets,
DRAM and CXL expander size per socket, and what firmware and kernel keep.
"""

import io
import json
import os
import shutil
import subprocess
import sys

import fixtures
import testtools
import yaml

from nova_pmem_filters.discover import cli
from nova_pmem_filters.discover import runner
from tests.unit import paths

DATA = os.path.join(paths.of('tests', 'unit'), 'discover_cxl_data')
# The cxl_kmem host as other cxl list / daxctl list options print it.
FORMS = os.path.join(paths.of('tests', 'unit'), 'cxl_forms')
# The Optane cases.
PMEM_DATA = os.path.join(paths.of('tests', 'unit'), 'discover_data')
# The cxl_kmem host with its kernel's tiering files recorded.
TIERING_ON = os.path.join(paths.of('tests', 'unit'),
                          'discover_tiering_data', 'tiering_on')
GIB = 2 ** 30
# The fake tools run with PATH holding only themselves.
CAT = shutil.which('cat')
KIB_PER_GIB = 2 ** 20

# case -> hardware. dram / cxl: GiB per socket. reserved_kb: what firmware
# and kernel keep of each socket's DRAM node. kind: what the CXL memory is.
CASES = {
    'cxl_none': dict(sockets=2, dram=192, cxl=0, kind=None,
                     reserved_kb=[2359296, 524288]),
    'cxl_kmem': dict(sockets=2, dram=256, cxl=256, kind='cxl_kmem',
                     reserved_kb=[2359296, 524288]),
    'cxl_flat': dict(sockets=2, dram=256, cxl=256, kind='cxl_flat',
                     reserved_kb=[2359296, 524288]),
    'cxl_devdax': dict(sockets=1, dram=512, cxl=128, kind='cxl_devdax',
                       reserved_kb=[2 * KIB_PER_GIB]),
}


def expected(hw):
    """(near GB per socket node, far GB, visible GB, tier nodes)."""
    near = {s: hw['dram'] - hw['reserved_kb'][s] / KIB_PER_GIB
            for s in range(hw['sockets'])}
    tier = {}
    far = 0.0
    if hw['kind'] == 'cxl_kmem':
        # One CPU-less node per expander after the socket nodes; the struct
        # pages of the onlined memory (1/64) live in it and are not counted.
        tier = {hw['sockets'] + s: hw['cxl'] * 63 / 64.0
                for s in range(hw['sockets'])}
        far = sum(tier.values())
        visible = sum(near.values()) + far
    elif hw['kind'] == 'cxl_flat':
        far = hw['sockets'] * hw['cxl']
        visible = sum(near.values()) + far
    else:
        far = hw['sockets'] * hw['cxl']
        visible = sum(near.values())
    return near, far, visible, tier


def run(argv):
    out = io.StringIO()
    err = io.StringIO()
    status = cli.main(list(argv), stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


class CxlCase(testtools.TestCase):

    def discover(self, case, *extra):
        path = case if os.path.isabs(case) else os.path.join(DATA, case)
        status, out, err = run(['--from', path, '--cxl'] + list(extra))
        self.assertEqual(0, status, err)
        self.assertEqual('', err)
        return out

    def profile(self, case, *extra):
        return json.loads(self.discover(case, '--json', *extra))

    def copy(self, case):
        tmp = os.path.join(self.useFixture(fixtures.TempDir()).path, case)
        shutil.copytree(os.path.join(DATA, case), tmp)
        return tmp

    def error(self, directory, *extra):
        status, out, err = run(['--from', directory, '--cxl'] + list(extra))
        self.assertEqual(3, status, err)
        self.assertEqual('', out)
        self.assertEqual(1, len(err.splitlines()), err)
        self.assertNotIn('unexpected', err)
        return err


class TestKinds(CxlCase):

    def test_every_recorded_kind(self):
        for case, hw in sorted(CASES.items()):
            got = self.profile(case)
            section = got['cxl']
            near, far, visible, tier = expected(hw)
            self.assertEqual(hw['kind'], section['kind'], case)
            self.assertEqual(hw['kind'] or 'dram', got['mode'], case)
            self.assertEqual(got['mode'], got['scheduler_mode'], case)
            self.assertAlmostEqual(sum(near.values()),
                                   section['near_memory_gb'], 2, case)
            self.assertAlmostEqual(far, section['far_memory_gb'], 2, case)
            self.assertAlmostEqual(visible, section['visible_memory_gb'], 2,
                                   case)
            self.assertEqual(
                sorted(tier.items()),
                [(n['numa_node'], n['memory_gb'])
                 for n in section['tier_nodes']], case)
            by_node = {n['numa_node']: n for n in section['numa_nodes']}
            for node, gb in near.items():
                self.assertAlmostEqual(gb, by_node[node]['near_memory_gb'],
                                       2, case)
            self.assertEqual(hw['sockets'] if hw['cxl'] else 0,
                             len(section['memdevs']), case)
            self.assertEqual({hw['cxl']} if hw['cxl'] else set(),
                             {m['ram_gb'] for m in section['memdevs']}, case)
            if hw['kind'] is None:
                continue
            self.assertAlmostEqual(sum(near.values()), got['dram_gb'], 2)
            self.assertAlmostEqual(visible, got['visible_memory_gb'], 2)
            cache = got['dram_cache_gb']
            if hw['kind'] == 'cxl_devdax':
                self.assertEqual(0.0, cache)
            else:
                self.assertAlmostEqual(sum(near.values()), cache, 2)

    def test_devdax_devices(self):
        hw = CASES['cxl_devdax']
        got = self.profile('cxl_devdax')['cxl']
        self.assertEqual(
            [{'chardev': 'dax0.0', 'region': 'region0', 'mode': 'devdax',
              'size_gb': float(hw['cxl']), 'numa_node': hw['sockets'],
              'movable': None}], got['dax_devices'])
        self.assertEqual([], got['tier_nodes'])

    def test_kmem_devices_name_their_tier_node(self):
        got = self.profile('cxl_kmem')['cxl']
        self.assertEqual({'system-ram'},
                         {d['mode'] for d in got['dax_devices']})
        self.assertEqual({n['numa_node'] for n in got['tier_nodes']},
                         {d['numa_node'] for d in got['dax_devices']})
        self.assertEqual([['dax0.0'], ['dax1.0']],
                         [r['dax_devices'] for r in got['regions']])

    def test_without_cxl_flag_nothing_changes(self):
        for case in ('cxl_none', 'cxl_flat', 'cxl_devdax'):
            status, out, err = run(['--from', os.path.join(DATA, case)])
            self.assertEqual(0, status, err)
            got = json.loads(out)
            self.assertNotIn('cxl', got)
            self.assertEqual('dram', got['mode'])
            # Memory devices in the saved cxl list: a note naming --cxl.
            self.assertEqual(
                case != 'cxl_none', any('run with --cxl' in n
                                        for n in got['notes']), case)

    def test_cpu_less_nodes_without_cxl_flag_are_refused(self):
        # Their memory is no DRAM: a dram profile would count it as such.
        status, out, err = run(['--from', os.path.join(DATA, 'cxl_kmem')])
        self.assertEqual(3, status, err)
        self.assertEqual('', out)
        self.assertEqual(
            'nova-pmem-discover: error: NUMA nodes 2, 3 hold 504.00 GiB of '
            'memory but no CPUs (CXL memory onlined as its own node): that '
            'is no DRAM; run with --cxl to describe it\n', err)

    def test_host_without_cxl_keeps_its_profile(self):
        status, out, _err = run(['--from', os.path.join(DATA, 'cxl_none')])
        plain = json.loads(out)
        got = self.profile('cxl_none')
        section = got.pop('cxl')
        self.assertEqual(plain, got)
        self.assertIsNone(section['kind'])
        self.assertEqual([], section['memdevs'])


class TestOutputs(CxlCase):

    def test_aggregate_of_tiered_kinds(self):
        for case in ('cxl_kmem', 'cxl_flat'):
            hw = CASES[case]
            near = sum(expected(hw)[0].values())
            lines = self.discover(case, '--aggregate').splitlines()
            self.assertEqual(['pmem_mode=%s' % hw['kind'],
                              'pmem_dram_cache_gb=%g' % near], lines[:2])
            self.assertIn('openstack aggregate add host', lines[-1])

    def test_aggregate_of_devdax(self):
        lines = self.discover('cxl_devdax', '--aggregate').splitlines()
        self.assertEqual('pmem_mode=cxl_devdax', lines[0])
        self.assertNotIn('pmem_dram_cache_gb', '\n'.join(lines))

    def test_per_cell_names_the_nodes_with_cpus(self):
        for case in ('cxl_kmem', 'cxl_flat'):
            near = expected(CASES[case])[0]
            lines = self.discover(case, '--aggregate', '--numa').splitlines()
            self.assertEqual(
                'pmem_dram_cache_gb_per_cell=%s' % ','.join(
                    '%d:%g' % (n, round(gb, 2))
                    for n, gb in sorted(near.items())), lines[2])

    def test_provider_config(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        for case in ('cxl_kmem', 'cxl_flat', 'cxl_devdax'):
            hw = CASES[case]
            path = os.path.join(tmp, case + '.yaml')
            self.discover(case, '--provider-config', path)
            with open(path) as f:
                provider = yaml.safe_load(f)['providers'][0]
            self.assertEqual(['CUSTOM_PMEM_MODE_' + hw['kind'].upper()],
                             provider['traits']['additional'])
            inventory = provider['inventories']['additional'][0]
            near_mb = int(sum(expected(hw)[0].values()) * 1024)
            self.assertEqual(near_mb,
                             inventory['CUSTOM_NEAR_MEMORY_MB']['total'])

    def test_table(self):
        out = self.discover('cxl_kmem', '--table')
        self.assertIn('| kind              | cxl_kmem', out)
        self.assertIn('dax1.0', out)
        self.assertIn('numa nodes (sysfs)', out)


class TestErrors(CxlCase):

    def edit(self, directory, name, old, new):
        path = os.path.join(directory, name)
        with open(path) as f:
            text = f.read()
        self.assertIn(old, text)
        with open(path, 'w') as f:
            f.write(text.replace(old, new, 1))

    def test_bad_size_names_file_and_field(self):
        tmp = self.copy('cxl_kmem')
        self.edit(tmp, 'cxl-list.json', '"ram_size":274877906944',
                  '"ram_size":"lots"')
        err = self.error(tmp)
        self.assertIn(os.path.join(tmp, 'cxl-list.json'), err)
        self.assertIn('memdev mem0: ram_size is not a size', err)

    def test_bad_dax_mode(self):
        tmp = self.copy('cxl_kmem')
        self.edit(tmp, 'daxctl-list.json', '"system-ram"', '"fsdax"')
        err = self.error(tmp)
        self.assertIn('daxctl-list.json: chardev dax0.0: mode is "fsdax"',
                      err)

    def test_offline_system_ram(self):
        tmp = self.copy('cxl_kmem')
        for node in (2, 3):
            os.unlink(os.path.join(tmp, 'node-%d-cpulist.txt' % node))
            os.unlink(os.path.join(tmp, 'node-%d-meminfo.txt' % node))
        self.edit(tmp, 'daxctl-list.json', '"online_memblocks":128',
                  '"online_memblocks":0')
        err = self.error(tmp)
        self.assertIn('chardev dax0.0: mode is system-ram but no NUMA node',
                      err)
        self.assertIn('online it with daxctl online-memory', err)

    def test_some_memory_blocks_offline_is_a_note(self):
        # 8 of dax0.0's 128 blocks offline (2 GiB each): the far memory is
        # what node 2 holds, and the note says how much is not there.
        tmp = self.copy('cxl_kmem')
        self.edit(tmp, 'daxctl-list.json', '"online_memblocks":128',
                  '"online_memblocks":120')
        got = self.profile(tmp)
        self.assertIn('dax0.0 (system-ram, NUMA node 2) has 8 of its 128 '
                      'memory blocks offline, 16.00 GiB: far memory counts '
                      'the online part only; online them with: daxctl '
                      'online-memory dax0.0', got['notes'])
        self.assertFalse(any('dax1.0' in note and 'offline' in note
                             for note in got['notes']), got['notes'])

    def test_bad_memory_block_counts(self):
        for old, new, said in (
                ('"online_memblocks":128', '"online_memblocks":"all"',
                 'online_memblocks is not a count of memory blocks'),
                ('"online_memblocks":128', '"online_memblocks":129',
                 'online_memblocks 129 is more than total_memblocks 128'),
                ('"total_memblocks":128', '"total_memblocks":-1',
                 'total_memblocks is not a count of memory blocks')):
            tmp = self.copy('cxl_kmem')
            self.edit(tmp, 'daxctl-list.json', old, new)
            self.assertIn(said, self.error(tmp))

    def test_system_ram_in_a_node_with_cpus(self):
        # Every block online, but in the DRAM nodes (an SRAT that gives the
        # CXL memory its socket's node): no advice to online it.
        tmp = self.copy('cxl_kmem')
        for node in (2, 3):
            os.unlink(os.path.join(tmp, 'node-%d-cpulist.txt' % node))
            os.unlink(os.path.join(tmp, 'node-%d-meminfo.txt' % node))
            self.edit(tmp, 'daxctl-list.json', '"target_node":%d' % node,
                      '"target_node":%d' % (node - 2))
        err = self.error(tmp)
        self.assertNotIn('online-memory', err)
        self.assertIn('chardev dax0.0: system-ram with all 128 memory '
                      'blocks online, in NUMA node 0, which has CPUs', err)

    def test_system_ram_in_a_node_not_recorded(self):
        tmp = self.copy('cxl_kmem')
        for node in (2, 3):
            os.unlink(os.path.join(tmp, 'node-%d-cpulist.txt' % node))
            os.unlink(os.path.join(tmp, 'node-%d-meminfo.txt' % node))
        err = self.error(tmp)
        self.assertNotIn('online-memory', err)
        self.assertIn('all 128 memory blocks online, but %s lists no NUMA '
                      'node 2 holding memory' % tmp, err)

    def test_bad_node_files(self):
        tmp = self.copy('cxl_kmem')
        self.edit(tmp, 'node-2-meminfo.txt', 'MemTotal', 'MemTotl')
        err = self.error(tmp)
        self.assertIn('node-2-meminfo.txt: no "Node 2 MemTotal', err)
        tmp = self.copy('cxl_devdax')
        self.edit(tmp, 'node-0-cpulist.txt', '0-63', '0-x')
        self.assertIn('node-0-cpulist.txt: not a CPU list',
                      self.error(tmp))

    def test_missing_recorded_files(self):
        tmp = self.copy('cxl_kmem')
        os.unlink(os.path.join(tmp, 'daxctl-list.json'))
        status, out, err = run(['--from', tmp, '--cxl'])
        self.assertEqual(2, status)
        self.assertIn('missing daxctl-list.json (saved output of: daxctl '
                      'list --regions --devices)', err)
        for name in os.listdir(tmp):
            if name.startswith('node-'):
                os.unlink(os.path.join(tmp, name))
        shutil.copy(os.path.join(DATA, 'cxl_kmem', 'daxctl-list.json'), tmp)
        status, out, err = run(['--from', tmp, '--cxl'])
        self.assertEqual(2, status)
        self.assertIn('missing node-<N>-cpulist.txt', err)

    def test_truncated_json(self):
        tmp = self.copy('cxl_kmem')
        with open(os.path.join(tmp, 'cxl-list.json'), 'w') as f:
            f.write('[{"memdevs":[{"memdev":"mem0"')
        self.assertIn('cxl-list.json: not valid JSON', self.error(tmp))

    def test_optane_and_cxl_is_an_error(self):
        tmp = self.copy('cxl_kmem')
        mm = os.path.join(PMEM_DATA, 'mm_1s_pmem100_128')
        os.unlink(os.path.join(tmp, 'ipmctl-dimm.txt'))
        os.unlink(os.path.join(tmp, 'ipmctl-dimm.txt.rc'))
        for name in os.listdir(mm):
            if name.startswith('ipmctl-') or name == 'ndctl-list.json':
                shutil.copy(os.path.join(mm, name), tmp)
        err = self.error(tmp)
        self.assertIn('Optane PMem in memory_mode', err)
        self.assertIn('cxl_kmem', err)
        # Without --cxl the PMem alone describes the host, as before.
        status, out, _err = run(['--from', tmp])
        self.assertEqual('memory_mode', json.loads(out)['mode'])

    def test_unprovisioned_devices_are_a_note(self):
        tmp = self.copy('cxl_devdax')
        listing = [{'memdevs': json.load(open(os.path.join(
            tmp, 'cxl-list.json')))[0]['memdevs']}]
        with open(os.path.join(tmp, 'cxl-list.json'), 'w') as f:
            json.dump(listing[0]['memdevs'], f)
        with open(os.path.join(tmp, 'daxctl-list.json'), 'w') as f:
            f.write('')
        got = self.profile(tmp)
        self.assertEqual('dram', got['mode'])
        self.assertIsNone(got['cxl']['kind'])
        self.assertIn('no CXL RAM in use', ' '.join(got['notes']))


class TestHmem(CxlCase):
    """CXL memory the firmware provisioned: an HMEM devdax device."""

    def test_hmem_system_ram_is_kernel_tiered_never_dram(self):
        # Soft-reserved memory onlined by kmem as a node without CPUs, on
        # a host without CXL RAM: a far node the kernel tiers.
        got = self.profile('hmem_system_ram')
        self.assertEqual(('cxl_kmem', 'cxl_kmem'),
                         (got['mode'], got['cxl']['kind']))
        node0_gib = 534773760 / 2 ** 20
        node1_gib = 8257536 / 2 ** 20
        self.assertEqual(round(node0_gib, 2), got['dram_gb'])
        self.assertEqual(round(node1_gib, 2), got['cxl']['far_memory_gb'])
        self.assertEqual([1], [n['numa_node']
                               for n in got['cxl']['tier_nodes']])
        self.assertIn('dax0.0 is soft-reserved memory (HMEM, '
                      '/platform/hmem.0) onlined as system RAM in NUMA node '
                      '1', ' '.join(got['notes']))
        aggregate = self.discover('hmem_system_ram', '--aggregate')
        self.assertIn('pmem_mode=cxl_kmem', aggregate)
        self.assertNotIn('pmem_mode=dram', aggregate)

    def test_a_cpu_less_node_nothing_explains_is_refused(self):
        tmp = self.copy('hmem_system_ram')
        with open(os.path.join(tmp, 'daxctl-list.json'), 'w') as f:
            f.write('')
        err = self.error(tmp)
        self.assertIn('NUMA node 1 holds 7.88 GiB and has no CPUs, but no '
                      'CXL RAM and no HMEM device in system-ram mode', err)
        self.assertIn('no kind describes such a host', err)

    def test_hmem_above_the_dram_is_refused(self):
        # The host of hmem_system_ram with its kernel's tiering recorded,
        # where the firmware's HMAT describes node 1 as faster than the
        # DRAM (HBM): Linux 6.7 and later compute a node's abstract
        # distance from HMAT data (mm/memory-tiers.c) and put it in a tier
        # above the DRAM's default memory_tier4. Tier 3 is worked out from
        # the kernel's rule (tier = abstract distance over its chunk; a
        # faster node has a smaller distance), not copied from a host. The
        # kernel demotes from it to the DRAM, never to it: not far memory.
        tmp = self.copy('hmem_system_ram')
        tiers = os.path.join(tmp, 'sys', 'devices', 'virtual',
                             'memory_tiering')
        for relative, text in (
                ('proc/sys/kernel/osrelease', '6.12.9-200.fc41.x86_64'),
                ('proc/sys/kernel/numa_balancing', '2'),
                ('sys/kernel/mm/numa/demotion_enabled', 'true'),
                ('sys/devices/virtual/memory_tiering/memory_tier4/nodelist',
                 '0'),
                ('sys/devices/virtual/memory_tiering/memory_tier3/nodelist',
                 '1')):
            path = os.path.join(tmp, relative)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, 'w') as f:
                f.write(text + '\n')
        err = self.error(tmp)
        self.assertIn('NUMA node 1 holds memory without CPUs in '
                      'memory_tier3, above the DRAM\'s memory_tier4', err)
        self.assertIn('no kind describes such a host', err)
        # In the DRAM's tier or below it is the far node it always was.
        os.rename(os.path.join(tiers, 'memory_tier3'),
                  os.path.join(tiers, 'memory_tier22'))
        got = self.profile(tmp)
        self.assertEqual('cxl_kmem', got['mode'])
        self.assertEqual('on', got['kernel_tiering']['state'])
        os.rename(os.path.join(tiers, 'memory_tier22'),
                  os.path.join(tiers, 'memory_tier5'))
        self.assertEqual('cxl_kmem', self.profile(tmp)['mode'])

    def test_hmem_devdax_is_not_flat(self):
        got = self.profile('cxl_hmem')
        # As cxl_devdax: the DRAM nodes keep their memory, no DRAM cache.
        devdax = self.profile('cxl_devdax')
        self.assertEqual('cxl_devdax', got['mode'])
        self.assertEqual(devdax['dram_gb'], got['dram_gb'])
        self.assertEqual(0.0, got['dram_cache_gb'])
        self.assertEqual(128.0, got['cxl']['far_memory_gb'])
        self.assertEqual(
            [{'chardev': 'dax0.0', 'region': None, 'mode': 'devdax',
              'size_gb': 128.0, 'numa_node': 1, 'movable': None}],
            got['cxl']['dax_devices'])
        self.assertIn('dax0.0 is an HMEM device (/platform/hmem.0)',
                      ' '.join(got['notes']))

    def test_devdax_without_region_path_is_refused(self):
        # daxctl list --devices (no path): flat would be a guess.
        tmp = self.copy('cxl_hmem')
        with open(os.path.join(tmp, 'daxctl-list.json')) as f:
            devices = json.load(f)[0]['devices']
        with open(os.path.join(tmp, 'daxctl-list.json'), 'w') as f:
            json.dump(devices, f)
        err = self.error(tmp)
        self.assertIn('chardev dax0.0: a devdax device of no CXL region', err)
        self.assertIn('save "daxctl list --regions --devices"', err)

    def test_cxl_region_path(self):
        tmp = self.copy('cxl_kmem')
        shutil.copy(os.path.join(FORMS, 'daxctl-list.RD.json'),
                    os.path.join(tmp, 'daxctl-list.json'))
        self.assertEqual(self.profile('cxl_kmem'), self.profile(tmp))


class TestListingForms(CxlCase):

    def test_verbose_and_targets(self):
        # -v: buses, ports, endpoints holding their memdev as an object,
        # decoders with targets; -vvv adds health, partition_info and each
        # region's daxregion; -M -R -D -T: decoders with targets.
        want = self.profile('cxl_kmem')
        for name in ('cxl-list.v.json', 'cxl-list.vvv.json',
                     'cxl-list.MRDT.json'):
            tmp = self.copy('cxl_kmem')
            shutil.copy(os.path.join(FORMS, name),
                        os.path.join(tmp, 'cxl-list.json'))
            self.assertEqual(want, self.profile(tmp), name)

    def test_unknown_object_is_still_refused(self):
        tmp = self.copy('cxl_kmem')
        with open(os.path.join(tmp, 'cxl-list.json'), 'w') as f:
            json.dump([{'chardev': 'dax0.0', 'size': 1}], f)
        self.assertIn('an entry is not a bus, port, endpoint, memdev, '
                      'decoder or region', self.error(tmp))

    def test_dax_regions_without_devices(self):
        tmp = self.copy('cxl_kmem')
        shutil.copy(os.path.join(FORMS, 'daxctl-list.R.json'),
                    os.path.join(tmp, 'daxctl-list.json'))
        err = self.error(tmp)
        self.assertIn('daxctl-list.json: dax regions (0, 1) but no dax '
                      'devices: saved "daxctl list --regions" without '
                      '--devices', err)


class TestLiveTools(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.bin = self.useFixture(fixtures.TempDir()).path

    def test_missing_daxctl(self):
        for tool, text in (('ipmctl', 'echo "No PMem modules in the '
                            'system."; exit 1'), ('ndctl', 'true'),
                           ('cxl', 'printf "[\\n]\\n"')):
            path = os.path.join(self.bin, tool)
            with open(path, 'w') as f:
                f.write('#!/bin/sh\n%s\n' % text)
            os.chmod(path, 0o755)
        self.useFixture(fixtures.EnvironmentVariable('PATH', self.bin))
        status, out, err = run(['--cxl'])
        self.assertEqual(3, status, err)
        self.assertEqual('nova-pmem-discover: error: daxctl: command not '
                         'found (install the daxctl package)\n', err)

    def tools(self, scripts):
        for tool, text in scripts:
            path = os.path.join(self.bin, tool)
            with open(path, 'w') as f:
                f.write('#!/bin/sh\n%s\n' % text)
            os.chmod(path, 0o755)
        self.useFixture(fixtures.EnvironmentVariable('PATH', self.bin))

    def test_cxl_host_needs_no_ipmctl(self):
        kmem = os.path.join(DATA, 'cxl_kmem')
        recorded = runner.DirRunner(kmem)
        self.useFixture(fixtures.MonkeyPatch(
            'nova_pmem_filters.discover.runner.LiveRunner.numa_nodes',
            lambda self: recorded.numa_nodes()))
        self.useFixture(fixtures.MonkeyPatch(
            'nova_pmem_filters.discover.runner.LiveRunner.meminfo',
            lambda self: recorded.meminfo()))
        # The kernel's tiering files of the same recorded host (this
        # machine's own are judged for its own nodes, which have no far
        # node: tests/unit/discover/test_tiering.py).
        self.useFixture(fixtures.MonkeyPatch(
            'nova_pmem_filters.discover.runner.LiveRunner.tiering_root',
            lambda self: TIERING_ON))
        self.tools([('ndctl', 'true'),
                    ('cxl', '%s %s/cxl-list.json' % (CAT, kmem)),
                    ('daxctl', '%s %s/daxctl-list.json' % (CAT, kmem))])
        status, out, err = run(['--cxl', '--hostname', 'cxl-kmem'])
        self.assertEqual(0, status, err)
        got = json.loads(out)
        self.assertEqual('cxl_kmem', got['mode'])
        self.assertIn('ipmctl is not installed: no Optane PMem', got['notes'])
        self.assertEqual('on', got['kernel_tiering']['state'])
        # Without --cxl ipmctl stays required.
        status, out, err = run([])
        self.assertEqual(3, status)
        self.assertIn('ipmctl: command not found', err)

    def test_ipmctl_missing_with_pmem_regions(self):
        ad = os.path.join(PMEM_DATA, 'ad_2s_pmem100_512')
        self.tools([('ndctl', '%s %s/ndctl-list.json' % (CAT, ad))])
        status, out, err = run(['--cxl'])
        self.assertEqual(3, status, err)
        self.assertIn('but ipmctl is not installed: install the ipmctl '
                      'package', err)

    def test_real_daxctl_binary(self):
        if not shutil.which('daxctl'):
            self.skipTest('daxctl (daxctl package) is not installed')
        from nova_pmem_filters.core.grammars import cxltools
        output = runner.LiveRunner(timeout=60).run('daxctl')
        self.assertEqual(0, output.returncode, output.text)
        # Without dax devices daxctl prints nothing: no devices, no error.
        for device in cxltools.parse_daxctl(output):
            self.assertTrue(device['chardev'].startswith('dax'), device)

    def test_real_cxl_binary(self):
        if not shutil.which('cxl'):
            self.skipTest('cxl (ndctl package) is not installed')
        output = runner.LiveRunner(timeout=60).run('cxl')
        self.assertEqual(0, output.returncode, output.text)
        from nova_pmem_filters.core.grammars import cxltools
        listing = cxltools.parse_cxl(output)
        for memdev in listing['memdevs']:
            self.assertTrue(memdev['memdev'].startswith('mem'), memdev)
        nodes = cxltools.parse_nodes(runner.LiveRunner().numa_nodes())
        self.assertTrue(any(n['cpus'] for n in nodes), nodes)
        # The whole command: daxctl may be missing, then one clear line.
        proc = subprocess.run(
            [sys.executable, '-m', 'nova_pmem_filters.discover.cli',
             '--cxl', '--timeout', '60'],
            capture_output=True, text=True, timeout=300)
        self.assertNotIn('Traceback', proc.stderr)
        if proc.returncode == 0:
            prof = json.loads(proc.stdout)
            self.assertIn('cxl', prof)
            if not listing['memdevs']:
                self.assertIsNone(prof['cxl']['kind'])
        else:
            self.assertEqual(3, proc.returncode, proc.stderr)
            self.assertEqual(1, len(proc.stderr.splitlines()), proc.stderr)
