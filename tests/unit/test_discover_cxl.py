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

DATA = os.path.join(os.path.dirname(__file__), 'discover_cxl_data')
# The Optane cases.
PMEM_DATA = os.path.join(os.path.dirname(__file__), 'discover_data')
GIB = 2 ** 30
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
        self.assertEqual(1, status, err)
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
        for case in CASES:
            status, out, err = run(['--from', os.path.join(DATA, case)])
            self.assertEqual(0, status, err)
            got = json.loads(out)
            self.assertNotIn('cxl', got)
            self.assertEqual('dram', got['mode'])

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
        err = self.error(tmp)
        self.assertIn('chardev dax0.0: mode is system-ram but no NUMA node',
                      err)

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
                      'list --devices)', err)
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
        self.assertEqual(1, status, err)
        self.assertEqual('nova-pmem-discover: error: daxctl: command not '
                         'found (install the daxctl package)\n', err)

    def test_real_daxctl_binary(self):
        if not shutil.which('daxctl'):
            self.skipTest('daxctl (daxctl package) is not installed')
        from nova_pmem_filters.discover import cxl
        output = runner.LiveRunner(timeout=60).run('daxctl')
        self.assertEqual(0, output.returncode, output.text)
        # Without dax devices daxctl prints nothing: no devices, no error.
        for device in cxl.parse_daxctl(output):
            self.assertTrue(device['chardev'].startswith('dax'), device)

    def test_real_cxl_binary(self):
        if not shutil.which('cxl'):
            self.skipTest('cxl (ndctl package) is not installed')
        output = runner.LiveRunner(timeout=60).run('cxl')
        self.assertEqual(0, output.returncode, output.text)
        from nova_pmem_filters.discover import cxl
        listing = cxl.parse_cxl(output)
        for memdev in listing['memdevs']:
            self.assertTrue(memdev['memdev'].startswith('mem'), memdev)
        nodes = cxl.parse_nodes(runner.LiveRunner().numa_nodes())
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
            self.assertEqual(1, proc.returncode, proc.stderr)
            self.assertEqual(1, len(proc.stderr.splitlines()), proc.stderr)
