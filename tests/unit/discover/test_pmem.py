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
"""nova-pmem-discover on recorded ipmctl / ndctl outputs.

Each case under discover_data/ is the saved output of one host (see
doc/source/discovery.rst for the file names). The expected profile is
worked out here from the host's hardware: sockets, modules per socket,
module size and series, DRAM and the Memory-Mode share.
"""

import io
import json
import math
import os
import shutil
import subprocess
import tempfile

import fixtures
import testtools
import yaml

from nova.compute import provider_config as nova_provider_config

from nova_pmem_filters.core.formats import discoveredhost
from nova_pmem_filters.core.grammars import errors
from nova_pmem_filters.discover import cli
from nova_pmem_filters.discover import outputs
from tests.unit import paths

DATA = os.path.join(paths.of('tests', 'unit'), 'discover_data')
GIB = 2 ** 30
MIB = 2 ** 20

# Capacity ipmctl reports for one module: (series, nominal GB) -> GiB.
# Memory Mode and App Direct use whole GiB of it; the rest is
# inaccessible.
REPORTED_GIB = {('100', 128): 126.422, ('100', 256): 252.454,
                ('100', 512): 502.599, ('200', 128): 126.742,
                ('200', 256): 252.727, ('200', 512): 503.778}

# case -> hardware. dram: GiB of DDR per socket. namespaces: (name, mode,
# socket, size the namespace was created with in GiB).
CASES = {
    'mm_1s_pmem100_128': dict(series='100', sockets=1, per_socket=6,
                              module=128, dram=192, mm_percent=100),
    'mm_2s_pmem100_256': dict(series='100', sockets=2, per_socket=6,
                              module=256, dram=192, mm_percent=100),
    'mm_2s_pmem200_512': dict(series='200', sockets=2, per_socket=8,
                              module=512, dram=512, mm_percent=100),
    'ad_2s_pmem100_512': dict(
        series='100', sockets=2, per_socket=6, module=512, dram=96,
        mm_percent=0,
        namespaces=[(None, 'fsdax', 0, 3012), ('ns0', 'devdax', 1, 128),
                    ('ns1', 'devdax', 1, 128), ('ns2', 'devdax', 1, 256),
                    ('ns3', 'devdax', 1, 32)]),
    'ad_1s_pmem200_128': dict(
        series='200', sockets=1, per_socket=8, module=128, dram=256,
        mm_percent=0,
        namespaces=[(None, 'fsdax', 0, 504), ('ns0', 'devdax', 0, 32),
                    ('ns1', 'devdax', 0, 32), (None, 'devdax', 0, 16)]),
    'mixed_2s_pmem200_256': dict(
        series='200', sockets=2, per_socket=8, module=256, dram=256,
        mm_percent=50,
        namespaces=[('ns0', 'devdax', 0, 64), ('ns1', 'devdax', 1, 64)]),
}
DRAM_CASE = 'dram_1s'
# MemTotal of the dram_1s case's meminfo, in kB.
DRAM_MEMTOTAL_KB = 197425152


def usable_bytes(created_gib):
    """Usable size ndctl reports for a map=dev namespace.

    The struct-page array (64 bytes per 4 KiB page) plus a 2 MiB info
    block, rounded up to the 2 MiB alignment, comes off the created size.
    """
    created = created_gib * GIB
    meta = created // 64 + 2 * MIB
    meta = -(-meta // (2 * MIB)) * (2 * MIB)
    return created - meta


def expected_profile(case, hw):
    reported = REPORTED_GIB[(hw['series'], hw['module'])]
    usable = math.floor(reported)
    mm_module = usable * hw['mm_percent'] / 100.0
    ad_module = usable - mm_module
    n_sock = hw['sockets']
    n_mod = n_sock * hw['per_socket']
    mm = n_mod * mm_module
    ad = n_mod * ad_module
    dram = n_sock * hw['dram']
    mode = {100: 'memory_mode', 0: 'app_direct'}.get(hw['mm_percent'],
                                                     'mixed')
    cache = dram if mm else 0.0
    namespaces = []
    regions = []
    ns_list = hw.get('namespaces', [])
    if ad:
        for sock in range(n_sock):
            size = hw['per_socket'] * ad_module
            created = sum(n[3] for n in ns_list if n[2] == sock)
            regions.append({'id': 'region%d' % sock, 'socket': sock,
                            'numa_node': sock, 'size_gb': size,
                            'available_gb': size - created})
    index = {}
    for name, nsmode, sock, created in ns_list:
        k = index.get(sock, 0)
        index[sock] = k + 1
        namespaces.append({
            'name': name, 'dev': 'namespace%d.%d' % (sock, k),
            'mode': nsmode, 'region': 'region%d' % sock, 'numa_node': sock,
            'size_gb': round(usable_bytes(created) / GIB, 2),
            'chardev': 'dax%d.%d' % (sock, k) if nsmode == 'devdax'
            else None,
            'blockdev': (('pmem%d' % sock if k == 0 else
                          'pmem%d.%d' % (sock, k))
                         if nsmode == 'fsdax' else None),
            'align': 2097152})
    sockets = [{'socket': s, 'numa_node': s, 'dram_gb': hw['dram'],
                'pmem_gb': round(hw['per_socket'] * reported, 2),
                'memory_mode_gb': hw['per_socket'] * mm_module,
                'app_direct_gb': hw['per_socket'] * ad_module,
                'dram_cache_gb': hw['dram'] if mm else 0.0}
               for s in range(n_sock)]
    return {
        'schema': 'nova-pmem-host-profile/1',
        'hostname': case.replace('_', '-'),
        'mode': mode,
        'scheduler_mode': 'memory_mode' if mode == 'mixed' else mode,
        'memory_mode_percent': hw['mm_percent'],
        'dram_gb': dram,
        'pmem_gb': round(n_mod * reported, 2),
        'visible_memory_gb': mm if mm else dram,
        'dram_cache_gb': cache,
        'app_direct_gb': ad,
        'sockets': sockets,
        'regions': regions,
        'namespaces': namespaces,
        # Placement's CUSTOM_NEAR_MEMORY_MB: whole MiB of the exact size.
        'near_memory_mb': int((cache if mm else dram) * 1024),
        'dimm_count': n_mod,
        'dimm_capacity_gb': round(reported, 2),
    }


def run(argv):
    out = io.StringIO()
    err = io.StringIO()
    status = cli.main(list(argv), stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


class DiscoverCase(testtools.TestCase):

    def discover(self, case, *extra):
        status, out, err = run(['--from', os.path.join(DATA, case)]
                               + list(extra))
        self.assertEqual(0, status, err)
        self.assertEqual('', err)
        return out

    def profile(self, case):
        return json.loads(self.discover(case))


class TestProfiles(DiscoverCase):

    def test_every_case_is_covered(self):
        self.assertEqual(sorted(list(CASES) + [DRAM_CASE]),
                         sorted(os.listdir(DATA)))

    def test_cases_give_expected_profiles(self):
        for case, hw in sorted(CASES.items()):
            got = self.profile(case)
            want = expected_profile(case, hw)
            dimm_count = want.pop('dimm_count')
            dimm_capacity = want.pop('dimm_capacity_gb')
            dimms = got.pop('dimms')
            notes = got.pop('notes')
            self.assertEqual(want, got, case)
            self.assertEqual(dimm_count, len(dimms), case)
            self.assertEqual({dimm_capacity}, {d['capacity_gb']
                                               for d in dimms}, case)
            self.assertEqual(
                {s: hw['per_socket'] for s in range(hw['sockets'])},
                {s: sum(1 for d in dimms if d['socket'] == s)
                 for s in range(hw['sockets'])}, case)
            self.assertEqual({'pmem'}, {d['type'] for d in dimms})
            if want['mode'] == 'mixed':
                self.assertIn('partial Memory Mode', ' '.join(notes))
            else:
                self.assertEqual([], notes, case)

    def test_exact_keys_of_the_contract(self):
        # host-profile-format.rst, version 1: no key more, no key less.
        got = self.profile('mixed_2s_pmem200_256')
        self.assertEqual(
            ['schema', 'hostname', 'mode', 'scheduler_mode',
             'memory_mode_percent', 'dram_gb', 'pmem_gb',
             'visible_memory_gb', 'dram_cache_gb', 'app_direct_gb',
             'sockets', 'dimms', 'regions', 'namespaces', 'notes',
             'near_memory_mb'],
            list(got))
        self.assertEqual(
            {'socket', 'numa_node', 'dram_gb', 'pmem_gb', 'memory_mode_gb',
             'app_direct_gb', 'dram_cache_gb'}, set(got['sockets'][0]))
        self.assertEqual({'id', 'socket', 'type', 'capacity_gb'},
                         set(got['dimms'][0]))
        self.assertEqual({'id', 'socket', 'numa_node', 'size_gb',
                          'available_gb'}, set(got['regions'][0]))
        self.assertEqual({'name', 'dev', 'mode', 'region', 'numa_node',
                          'size_gb', 'chardev', 'blockdev', 'align'},
                         set(got['namespaces'][0]))

    def test_near_memory_inventory_is_exact(self):
        # 263741440 kB is 257560 MiB, 251.52 GB rounded: the inventory is
        # the exact MiB, not 251.52 x 1024 = 257556.
        tmp = os.path.join(self.useFixture(fixtures.TempDir()).path, 'h')
        shutil.copytree(os.path.join(DATA, DRAM_CASE), tmp)
        with open(os.path.join(tmp, 'meminfo'), 'w') as f:
            f.write('MemTotal:       263741440 kB\n')
        config = os.path.join(tmp, 'provider.yaml')
        status, out, err = run(['--from', tmp, '--provider-config', config])
        self.assertEqual(0, status, err)
        got = json.loads(out)
        self.assertEqual(251.52, got['dram_gb'])
        self.assertEqual(257560, got['near_memory_mb'])
        with open(config) as f:
            inventory = yaml.safe_load(f)['providers'][0]['inventories']
        self.assertEqual(257560, inventory['additional'][0][
            'CUSTOM_NEAR_MEMORY_MB']['total'])

    def test_dram_host(self):
        got = self.profile(DRAM_CASE)
        dram = round(DRAM_MEMTOTAL_KB / 2.0 ** 20, 2)
        self.assertEqual('dram', got['mode'])
        self.assertEqual('dram', got['scheduler_mode'])
        self.assertEqual(dram, got['dram_gb'])
        self.assertEqual(dram, got['visible_memory_gb'])
        self.assertEqual(
            (0.0, 0.0, 0.0),
            (got['pmem_gb'], got['dram_cache_gb'], got['app_direct_gb']))
        self.assertEqual([], got['dimms'])
        self.assertIn('no PMem modules found', got['notes'][0])

    def test_table(self):
        out = self.discover('ad_2s_pmem100_512', '--table')
        self.assertIn('| mode                | app_direct', out)
        self.assertIn('namespace1.2', out)


class TestFormats(DiscoverCase):
    """-f json|table|yaml, as openstack and the other commands take it."""

    def test_format_option(self):
        case = 'mixed_2s_pmem200_256'
        self.assertEqual(self.discover(case),
                         self.discover(case, '-f', 'json'))
        self.assertEqual(self.discover(case, '--json'),
                         self.discover(case, '--format', 'json'))
        self.assertEqual(self.discover(case, '--table'),
                         self.discover(case, '-f', 'table'))
        self.assertEqual(json.loads(self.discover(case)),
                         yaml.safe_load(self.discover(case, '-f', 'yaml')))

    def test_bad_format(self):
        status, out, err = run(['--from', os.path.join(DATA, DRAM_CASE),
                                '-f', 'xml'])
        self.assertEqual(2, status)
        self.assertIn("argument -f/--format: invalid choice: 'xml'", err)
        status, out, err = run(['--from', os.path.join(DATA, DRAM_CASE),
                                '-f', 'table', '--json'])
        self.assertEqual(2, status)
        self.assertIn('argument --json: not allowed with argument '
                      '-f/--format', err)


class TestCpus(testtools.TestCase):
    """vcpus and cpus of the profile, from a saved lscpu -J."""

    def copy(self):
        tmp = os.path.join(self.useFixture(fixtures.TempDir()).path, 'h')
        shutil.copytree(paths.of('etc', 'examples', 'discover',
                                 'memory-mode'), tmp)
        return tmp

    def test_nested_and_flat_lscpu(self):
        tmp = self.copy()
        status, out, err = run(['--from', tmp])
        self.assertEqual(0, status, err)
        got = json.loads(out)
        want = {'sockets': 2, 'cores_per_socket': 24, 'threads_per_core': 2}
        self.assertEqual((96, want), (got['vcpus'], got['cpus']))
        # util-linux before 2.38: one flat list of fields.
        with open(os.path.join(tmp, 'lscpu.json'), 'w') as f:
            json.dump({'lscpu': [
                {'field': 'CPU(s):', 'data': '96'},
                {'field': 'Thread(s) per core:', 'data': '2'},
                {'field': 'Core(s) per socket:', 'data': '24'},
                {'field': 'Socket(s):', 'data': '2'}]}, f)
        status, out, err = run(['--from', tmp])
        self.assertEqual(0, status, err)
        self.assertEqual(want, json.loads(out)['cpus'])

    def test_without_lscpu_no_vcpus(self):
        status, out, err = run(['--from', os.path.join(DATA, DRAM_CASE)])
        self.assertNotIn('vcpus', json.loads(out))

    def test_bad_lscpu_names_the_field(self):
        tmp = self.copy()
        with open(os.path.join(tmp, 'lscpu.json'), 'w') as f:
            json.dump({'lscpu': [{'field': 'CPU(s):', 'data': '96'}]}, f)
        status, out, err = run(['--from', tmp])
        self.assertEqual(3, status)
        self.assertIn('lscpu.json: "Socket(s):" is null, expected a '
                      'positive integer', err)


class TestAggregate(DiscoverCase):

    def test_memory_mode(self):
        out = self.discover('mm_2s_pmem100_256', '--aggregate')
        lines = out.splitlines()
        self.assertEqual(['pmem_mode=memory_mode',
                          'pmem_dram_cache_gb=%d' % (2 * 192)], lines[:2])
        # Created only if missing, then set, then the host added only if
        # it is not in: every line runs as printed, and again.
        self.assertEqual(
            'openstack aggregate show pmem-memory-mode-384gb >/dev/null 2>&1'
            ' || openstack aggregate create pmem-memory-mode-384gb '
            '>/dev/null', lines[2])
        self.assertEqual(
            'openstack aggregate set --property pmem_mode=memory_mode '
            '--property pmem_dram_cache_gb=384 pmem-memory-mode-384gb',
            lines[3])
        self.assertIn('then openstack aggregate add host '
                      'pmem-memory-mode-384gb mm-2s-pmem100-256 >/dev/null; '
                      'fi', lines[4])
        self.assertEqual(0, subprocess.run(['sh', '-n', '-c', out]).returncode)

    def test_mixed_goes_to_memory_mode(self):
        out = self.discover('mixed_2s_pmem200_256', '--aggregate',
                            '--aggregate-name', 'mm-hosts')
        self.assertIn('pmem_mode=memory_mode', out.splitlines())
        self.assertIn('pmem_dram_cache_gb=512', out.splitlines())
        self.assertIn('openstack aggregate add host mm-hosts '
                      'mixed-2s-pmem200-256 >/dev/null; fi', out)

    def test_app_direct_and_dram_have_no_cache_key(self):
        for case in ('ad_1s_pmem200_128', DRAM_CASE):
            out = self.discover(case, '--aggregate')
            self.assertNotIn('pmem_dram_cache_gb', out)


class TestProviderConfig(DiscoverCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def write(self, case):
        # One directory per host, as [compute] provider_config_location.
        directory = os.path.join(self.tmp, case)
        os.mkdir(directory)
        path = os.path.join(directory, 'pmem.yaml')
        self.discover(case, '--provider-config', path)
        return path

    def test_every_case_loads_in_nova(self):
        for case in sorted(CASES) + [DRAM_CASE]:
            path = self.write(case)
            # Nova's own parser and validator, as nova-compute runs them.
            parsed = nova_provider_config._parse_provider_yaml(path)
            providers = nova_provider_config._validate_provider_config(
                parsed, path)
            self.assertEqual(1, len(providers), case)
            provider = providers[0]
            self.assertEqual({'uuid': '$COMPUTE_NODE'},
                             provider['identification'])
            mode = json.loads(self.discover(case))['mode']
            want_traits = ['CUSTOM_PMEM_MODE_' + mode.upper()]
            if mode == 'mixed':
                want_traits.append('CUSTOM_PMEM_MODE_MEMORY_MODE')
            self.assertEqual(want_traits, provider['traits']['additional'])
            hw = CASES.get(case)
            if hw:
                # Every mode reports its DRAM as near memory: the cache of
                # a Memory-Mode host, the system DRAM of the others.
                near = hw['sockets'] * hw['dram'] * 1024
                self.assertEqual(
                    [{'CUSTOM_NEAR_MEMORY_MB': {
                        'total': near, 'reserved': 0, 'min_unit': 1,
                        'max_unit': near, 'step_size': 1,
                        'allocation_ratio': 1.0}}],
                    provider['inventories']['additional'], case)
            # The directory, as nova-compute reads it at start.
            configs = nova_provider_config.get_provider_configs(
                os.path.dirname(path))
            self.assertEqual(['$COMPUTE_NODE'], list(configs), case)

    def test_invalid_config_is_not_written(self):
        path = os.path.join(self.tmp, 'pmem.yaml')
        with open(path, 'w') as f:
            f.write('old\n')
        config = outputs.provider_config(discoveredhost.parse(
            self.profile('mm_1s_pmem100_128'), 'mm.json'))
        inv = config['providers'][0]['inventories']['additional'][0]
        inv['CUSTOM_NEAR_MEMORY_MB']['max_unit'] = 10 ** 9
        self.assertRaises(errors.DiscoveryError,
                          outputs.render_provider_config, config)
        config['providers'][0]['traits']['additional'] = ['HW_CPU_X86_AVX']
        self.assertRaises(errors.DiscoveryError,
                          outputs.render_provider_config, config)
        with open(path) as f:
            self.assertEqual('old\n', f.read())

    def test_failed_write_keeps_existing_file(self):
        path = os.path.join(self.tmp, 'pmem.yaml')
        with open(path, 'w') as f:
            f.write('meta: {schema_version: "1.0"}\n')
        real_fsync = os.fsync

        def broken_fsync(fd):
            raise OSError(28, 'No space left on device')

        self.useFixture(fixtures.MonkeyPatch('os.fsync', broken_fsync))
        status, out, err = run(['--from',
                                os.path.join(DATA, 'mm_1s_pmem100_128'),
                                '--provider-config', path])
        self.useFixture(fixtures.MonkeyPatch('os.fsync', real_fsync))
        self.assertEqual(2, status)
        self.assertEqual(1, len(err.splitlines()), err)
        self.assertIn('No space left on device', err)
        with open(path) as f:
            self.assertEqual('meta: {schema_version: "1.0"}\n', f.read())
        # No temporary file left behind for Nova's *.yaml glob or anyone.
        self.assertEqual(['pmem.yaml'], os.listdir(self.tmp))

    def test_unwritable_directory(self):
        status, _out, err = run(['--from', os.path.join(DATA, DRAM_CASE),
                                 '--provider-config',
                                 os.path.join(self.tmp, 'no', 'x.yaml')])
        self.assertEqual(2, status)
        self.assertEqual(1, len(err.splitlines()))

    def test_replaces_existing_file(self):
        path = os.path.join(self.tmp, 'pmem.yaml')
        with open(path, 'w') as f:
            f.write('old\n')
        self.discover('ad_1s_pmem200_128', '--provider-config', path)
        with open(path) as f:
            data = yaml.safe_load(f)
        self.assertEqual(['CUSTOM_PMEM_MODE_APP_DIRECT'],
                         data['providers'][0]['traits']['additional'])
        self.assertEqual(0o644, os.stat(path).st_mode & 0o777)


class TestLibvirt(DiscoverCase):

    def test_named_devdax_grouped_by_size_label(self):
        out = self.discover('ad_2s_pmem100_512', '--libvirt')
        # fsdax and unnamed namespaces are left out; usable sizes 126,
        # 252 and 31.5 GiB round up to 128, 256 and 32 GB.
        self.assertEqual(
            '[libvirt]\npmem_namespaces = 32GB:ns3,128GB:ns0|ns1,'
            '256GB:ns2\n', out)

    def test_unnamed_devdax_left_out(self):
        out = self.discover('ad_1s_pmem200_128', '--libvirt')
        self.assertEqual('[libvirt]\npmem_namespaces = 32GB:ns0|ns1\n', out)

    def test_plan_spreads_over_sockets(self):
        out = self.discover('mixed_2s_pmem200_256', '--libvirt', '--plan',
                            '4x32G')
        lines = out.splitlines()
        self.assertEqual([
            'ndctl create-namespace --mode devdax --region region0 '
            '--size 32G --name ns2',
            'ndctl create-namespace --mode devdax --region region1 '
            '--size 32G --name ns3',
            'ndctl create-namespace --mode devdax --region region0 '
            '--size 32G --name ns4',
            'ndctl create-namespace --mode devdax --region region1 '
            '--size 32G --name ns5'], lines[:4])
        self.assertEqual('pmem_namespaces = 32GB:ns2|ns3|ns4|ns5,'
                         '64GB:ns0|ns1', lines[-1])

    def test_plan_skips_full_regions(self):
        out = self.discover('ad_2s_pmem100_512', '--libvirt', '--plan',
                            '2x1T')
        self.assertEqual(2, out.count('--region region1 --size 1024G'))

    def test_plan_that_does_not_fit(self):
        status, _out, err = run(['--from',
                                 os.path.join(DATA, 'ad_1s_pmem200_128'),
                                 '--libvirt', '--plan', '2x512G'])
        self.assertEqual(2, status)
        self.assertIn('no region has 512 GiB free', err)
        self.assertEqual(1, len(err.splitlines()))

    def test_memory_mode_host_has_no_vpmem(self):
        status, out, err = run(['--from',
                                os.path.join(DATA, 'mm_1s_pmem100_128'),
                                '--libvirt'])
        self.assertEqual(3, status)
        self.assertEqual('', out)
        self.assertIn('this host is memory_mode', err)

    def test_bad_plan(self):
        for argv in (['--libvirt', '--plan', '4by32'],
                     ['--plan', '4x32G'],
                     ['--libvirt', '--plan', '0x32G']):
            status, _out, err = run(['--from', os.path.join(
                DATA, 'ad_1s_pmem200_128')] + argv)
            self.assertEqual(2, status, argv)
            self.assertEqual(1, len(err.splitlines()), err)


class TestFromDir(testtools.TestCase):

    def test_missing_file(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        shutil.copy(os.path.join(DATA, 'mm_1s_pmem100_128',
                                 'ndctl-list.json'), tmp)
        status, out, err = run(['--from', tmp])
        self.assertEqual(2, status)
        self.assertEqual('', out)
        self.assertIn('missing ipmctl-dimm.xml or ipmctl-dimm.txt', err)
        self.assertEqual(1, len(err.splitlines()))

    def test_not_a_directory(self):
        status, _out, err = run(['--from', tempfile.gettempdir() + '/nope'])
        self.assertEqual(2, status)
        self.assertIn('not a directory', err)


# ipmctl show -memoryresources of an App Direct host as ipmctl
# 02.00.00.3716 and later print it (the table of DcpmPkg/cli/
# ShowMemoryResourcesCommand.c, PMemModule column from 02.00.00.3733)
# when the DDR Physical it reads is wrongly 0: DDR Inaccessible is
# Physical - Volatile - Cache in unsigned 64-bit bytes
# (DcpmPkg/driver/Protocol/Driver/NvmDimmConfig.c), 2^64 B - 128 GiB
# = 17179869056 GiB. The PMem columns are those of ad_1s_pmem200_128.
DDR_UNDERFLOW = '''\
 MemoryType   | DDR                  | PMemModule   | Total
====================================================================
 Volatile     | 128.000 GiB          | 0.000 GiB    | 128.000 GiB
 AppDirect    | -                    | 1008.000 GiB | 1008.000 GiB
 Cache        | 0.000 GiB            | -            | 0.000 GiB
 Inaccessible | 17179869056.000 GiB  | 5.936 GiB    | 17179870069.936 GiB
 Physical     | 0.000 GiB            | 1013.936 GiB | 1013.936 GiB
'''


class TestDramSize(testtools.TestCase):
    """Every profile has a DRAM size the output supports, or none at all."""

    def copy(self, case):
        tmp = os.path.join(self.useFixture(fixtures.TempDir()).path, case)
        shutil.copytree(os.path.join(DATA, case), tmp)
        return tmp

    def test_ddr_physical_zero_takes_volatile(self):
        tmp = self.copy('ad_1s_pmem200_128')
        with open(os.path.join(tmp, 'ipmctl-memoryresources.txt'), 'w') as f:
            f.write(DDR_UNDERFLOW)
        config = os.path.join(tmp, 'provider.yaml')
        status, out, err = run(['--from', tmp, '--provider-config', config])
        self.assertEqual(0, status, err)
        got = json.loads(out)
        self.assertEqual((128.0, 128.0), (got['dram_gb'],
                                          got['visible_memory_gb']))
        self.assertTrue(any('DDR Physical 0.000 GiB, less than the 128.000 '
                            'GiB of its DDR Volatile and Cache' in note
                            for note in got['notes']), got['notes'])
        self.assertFalse(any('/proc/meminfo' in note
                             for note in got['notes']), got['notes'])
        with open(config) as f:
            inventory = yaml.safe_load(f)['providers'][0]['inventories']
        self.assertEqual(128 * 1024, inventory['additional'][0][
            'CUSTOM_NEAR_MEMORY_MB']['total'])

    def refused(self, tmp, message):
        status, out, err = run(['--from', tmp])
        self.assertEqual(3, status, err)
        self.assertEqual('', out)
        self.assertEqual(1, len(err.splitlines()), err)
        self.assertIn(message, err)

    def test_no_ddr_figure_and_no_meminfo(self):
        tmp = self.copy('ad_1s_pmem200_128')
        with open(os.path.join(tmp, 'ipmctl-memoryresources.txt'), 'w') as f:
            f.write(DDR_UNDERFLOW.replace('128.000 GiB', '0.000 GiB'))
        self.refused(tmp, 'no DRAM size: ipmctl show -memoryresources '
                     'reports no DDR capacity and there is no MemTotal in '
                     '/proc/meminfo (with --from DIR: DIR/meminfo)')

    def test_dram_host_without_meminfo(self):
        # Unknown, not 0 GB: a host without DRAM is not one.
        tmp = self.copy(DRAM_CASE)
        os.unlink(os.path.join(tmp, 'meminfo'))
        self.refused(tmp, 'no DRAM size: no MemTotal in /proc/meminfo')


class TestIpmctlLayouts(testtools.TestCase):
    """What ipmctl versions in use print, and tables as people paste them.

    The wordings are ipmctl's own (its string tables, DcpmPkg/common/
    NvmStatus.uni, by release): "No AEPs in the system." (01.00.00.3072 to
    3091), "No DIMMs in the system." (to 02.00.00.3722), "Initialization
    failed. No PMem modules in the system." (02.00.00.3866 on, a virtual
    machine without ACPI NFIT: dram_1s), "Command not run" (02.00.00.3847 to
    3852 in its place, intel/ipmctl issue 164).
    """

    def copy(self, case):
        tmp = os.path.join(self.useFixture(fixtures.TempDir()).path, case)
        shutil.copytree(os.path.join(DATA, case), tmp)
        return tmp

    def with_dimm_output(self, text, rc):
        tmp = self.copy(DRAM_CASE)
        with open(os.path.join(tmp, 'ipmctl-dimm.txt'), 'w') as f:
            f.write(text + '\n')
        with open(os.path.join(tmp, 'ipmctl-dimm.txt.rc'), 'w') as f:
            f.write('%d\n' % rc)
        return run(['--from', tmp])

    def test_every_wording_of_no_modules_is_a_dram_host(self):
        for text, rc in (('No AEPs in the system.', 0),
                         ('No DIMMs in the system.', 0),
                         ('No PMem modules in the system.', 0),
                         ('Initialization failed. No PMem modules in the '
                          'system.', 1)):
            status, out, err = self.with_dimm_output(text, rc)
            self.assertEqual(0, status, '%s: %s' % (text, err))
            got = json.loads(out)
            self.assertEqual('dram', got['mode'], text)
            self.assertIn('no PMem modules found', got['notes'][0])

    def test_command_not_run_is_said_not_guessed(self):
        status, out, err = self.with_dimm_output('Command not run', 1)
        self.assertEqual(3, status, err)
        self.assertEqual('', out)
        self.assertEqual(1, len(err.splitlines()), err)
        self.assertIn('"Command not run": ipmctl 02.00.00.3847 to 3852', err)

    def memory_resources(self, text):
        tmp = self.copy('ad_1s_pmem200_128')
        with open(os.path.join(tmp, 'ipmctl-memoryresources.txt'), 'w') as f:
            f.write(text)
        return run(['--from', tmp])

    def test_a_table_without_its_separator_line(self):
        path = os.path.join(DATA, 'ad_1s_pmem200_128',
                            'ipmctl-memoryresources.txt')
        with open(path) as f:
            text = f.read()
        status, printed, err = self.memory_resources(text)
        self.assertEqual(0, status, err)
        pasted = ''.join(line for line in text.splitlines(True)
                         if set(line.strip()) != {'='})
        self.assertNotEqual(text, pasted)
        status, out, err = self.memory_resources(pasted)
        self.assertEqual(0, status, err)
        self.assertEqual(json.loads(printed), json.loads(out))

    def test_what_is_no_table_is_still_refused(self):
        for text, said in (
                (' MemoryType | DDR | PMemModule | Total\n'
                 ' Volatile | 1 GiB\n', 'table row has 2 cells'),
                ('===========\n Volatile | 1 GiB\n',
                 'table without a header line'),
                ('Volatile 128 GiB\n', 'unrecognised line')):
            status, out, err = self.memory_resources(text)
            self.assertEqual(3, status, err)
            self.assertEqual(1, len(err.splitlines()), err)
            self.assertIn(said, err)
