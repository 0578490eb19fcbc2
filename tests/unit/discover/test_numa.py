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
"""nova-pmem-discover --numa: the per-NUMA-node view of recorded hosts.

The expected listing is worked out from each case's hardware (test_discover
CASES): one NUMA node per socket, numbered as the socket; each socket's
DRAM, its Memory-Mode cache and the namespaces created on it.
"""

import dataclasses
import json
import os

import testtools

from nova_pmem_filters.core.formats import discoveredhost

from nova_pmem_filters.core.formats import hostfile
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters.discover import derive
from nova_pmem_filters.discover import outputs
from tests.unit.discover import test_pmem as base

NEW_KEYS = ('numa_nodes', 'dram_cache_gb_per_cell')


def expected_nodes(case, hw):
    want = base.expected_profile(case, hw)
    nodes = []
    for sock in range(hw['sockets']):
        mine = [ns['dev'] for ns in want['namespaces']
                if ns['region'] == 'region%d' % sock]
        nodes.append({
            'numa_node': sock, 'sockets': [sock], 'dram_gb': hw['dram'],
            'dram_cache_gb': hw['dram'] if hw['mm_percent'] else 0.0,
            'memory_mode_gb': want['sockets'][sock]['memory_mode_gb'],
            'app_direct_gb': want['sockets'][sock]['app_direct_gb'],
            'regions': ['region%d' % sock] if want['regions'] else [],
            'namespaces': mine})
    return nodes


class NumaCase(base.DiscoverCase):

    def numa_profile(self, case):
        return json.loads(self.discover(case, '--numa'))


class TestNumaListing(NumaCase):

    def test_nodes_of_every_case(self):
        for case, hw in sorted(base.CASES.items()):
            got = self.numa_profile(case)
            self.assertEqual(expected_nodes(case, hw), got['numa_nodes'],
                             case)

    def test_namespaces_by_node_of_the_two_socket_app_direct_host(self):
        got = self.numa_profile('ad_2s_pmem100_512')
        # CASES: the fsdax namespace on socket 0, four devdax on socket 1.
        by_node = {n['numa_node']: n['namespaces']
                   for n in got['numa_nodes']}
        self.assertEqual({0: ['namespace0.0'],
                          1: ['namespace1.0', 'namespace1.1',
                              'namespace1.2', 'namespace1.3']}, by_node)
        hw = base.CASES['ad_2s_pmem100_512']
        self.assertEqual(
            [(name, sock) for name, _m, sock, _s in hw['namespaces']],
            [(ns['name'], ns['socket']) for ns in got['namespaces']])
        self.assertEqual([ns['numa_node'] for ns in got['namespaces']],
                         [ns['socket'] for ns in got['namespaces']])

    def test_numa_is_additive(self):
        for case in sorted(base.CASES) + [base.DRAM_CASE]:
            plain = self.profile(case)
            numa = self.numa_profile(case)
            self.assertEqual(list(plain) + list(NEW_KEYS), list(numa), case)
            for key in plain:
                if key == 'namespaces':
                    self.assertEqual(
                        plain[key], [{k: v for k, v in ns.items()
                                      if k != 'socket'}
                                     for ns in numa[key]], case)
                elif key == 'notes':
                    self.assertEqual(plain[key],
                                     numa[key][:len(plain[key])], case)
                else:
                    self.assertEqual(plain[key], numa[key], case)

    def test_even_split_is_said(self):
        notes = self.numa_profile('mm_2s_pmem200_512')['notes']
        self.assertEqual([derive.EVEN_SPLIT_NOTE], notes)
        self.assertEqual([], self.numa_profile('mm_1s_pmem100_128')['notes'])

    def test_table(self):
        out = self.discover('ad_2s_pmem100_512', '--table', '--numa')
        self.assertIn('numa nodes', out)
        row = [line for line in out.splitlines()
               if line.startswith('| 1 ') and 'region1' in line][-1]
        for name in ('ns0', 'ns1', 'ns2', 'ns3'):
            self.assertIn(name, row)
        self.assertNotIn('numa nodes', self.discover('ad_2s_pmem100_512',
                                                     '--table'))

    def test_not_with_libvirt(self):
        status, out, err = base.run(['--from', os.path.join(
            base.DATA, 'ad_2s_pmem100_512'), '--libvirt', '--numa'])
        self.assertEqual(2, status)
        self.assertEqual('', out)
        self.assertIn('--numa needs', err)


class TestCellCache(NumaCase):

    def test_memory_mode_aggregate(self):
        for case, hw in sorted(base.CASES.items()):
            if not hw['mm_percent']:
                continue
            lines = self.discover(case, '--aggregate',
                                  '--numa').splitlines()
            want = ','.join('%d:%d' % (s, hw['dram'])
                            for s in range(hw['sockets']))
            self.assertIn('pmem_dram_cache_gb_per_cell=%s' % want, lines)
            self.assertIn('--property pmem_dram_cache_gb_per_cell=%s'
                          % want, lines[4])
            metadata = dict(line.split('=', 1) for line in lines[:3])
            # What the scheduler reads back: known, cells summing to the
            # host's cache.
            read = profile.from_metadata([metadata])
            self.assertTrue(read.known, read.problem)
            self.assertEqual(
                tuple((s, float(hw['dram'])) for s in range(hw['sockets'])),
                read.cell_cache_gb)
            self.assertEqual(hw['sockets'] * hw['dram'], read.dram_cache_gb)

    def test_no_key_without_memory_mode_or_numa(self):
        for case in ('ad_2s_pmem100_512', 'ad_1s_pmem200_128',
                     base.DRAM_CASE):
            self.assertNotIn(profile.DRAM_CACHE_PER_CELL_KEY,
                             self.discover(case, '--aggregate', '--numa'))
        self.assertNotIn(profile.DRAM_CACHE_PER_CELL_KEY,
                         self.discover('mm_2s_pmem100_256', '--aggregate'))

    def test_sum_is_exact(self):
        for total, count in ((100.0, 3), (190.5, 2), (0.07, 4),
                             (1023.99, 7)):
            parts = derive.split_exact(total, dict.fromkeys(range(count), 1))
            self.assertEqual(round(total * 100),
                             sum(round(v * 100) for v in parts.values()))
            self.assertLessEqual(max(parts.values()) - min(parts.values()),
                                 0.0100001)
            raw = profile.format_cell_cache(parts)
            read = profile.from_metadata([{
                profile.MODE_KEY: kinds.MEMORY_MODE,
                profile.DRAM_CACHE_KEY: profile.gb_text(total),
                profile.DRAM_CACHE_PER_CELL_KEY: raw}])
            self.assertTrue(read.known, read.problem)

    def test_cache_only_on_sockets_in_memory_mode(self):
        prof = hostfile.parse_document(
            self.profile('mixed_2s_pmem200_256'), 'mixed.json')
        # The same host with socket 1 all App Direct: its DRAM caches
        # nothing, socket 0's takes all the cache ipmctl reports.
        sockets = list(prof.sockets)
        sockets[1] = dataclasses.replace(sockets[1], memory_mode_gb=0.0)
        prof = derive.add_numa(dataclasses.replace(
            prof, sockets=sockets, dram_cache_gb=256.0))
        self.assertEqual('0:256', prof.dram_cache_gb_per_cell)
        self.assertEqual([256.0, 0.0], [n.dram_cache_gb
                                        for n in prof.numa_nodes])
        self.assertEqual('pmem-memory-mode-256gb',
                         outputs.aggregate_name(discoveredhost.host_of(
                             prof, 'mixed.json')))
        prof = dataclasses.replace(prof,
                                   dram_cache_gb_per_cell='0:192,1:64')
        self.assertEqual('pmem-memory-mode-256gb-cells-0_192-1_64',
                         outputs.aggregate_name(discoveredhost.host_of(
                             prof, 'mixed.json')))


class TestProfilesReadNamespaces(NumaCase):

    def test_namespaces_with_their_nodes(self):
        for numa in ((), ('--numa',)):
            data = json.loads(self.discover('ad_2s_pmem100_512', *numa))
            host = discoveredhost.parse(data, 'ad.json')
            self.assertEqual(
                [(None, 'fsdax', 0), ('ns0', 'devdax', 1),
                 ('ns1', 'devdax', 1), ('ns2', 'devdax', 1),
                 ('ns3', 'devdax', 1)],
                [(n.name, n.mode, n.numa_node) for n in host.namespaces])
        mm = discoveredhost.parse(self.profile('mm_2s_pmem100_256'), 'mm.json')
        self.assertEqual((), mm.namespaces)

    def test_bad_namespace_is_named(self):
        data = self.profile('ad_2s_pmem100_512')
        data['namespaces'][2]['numa_node'] = 'one'
        exc = self.assertRaises(hostfile.ProfileError, discoveredhost.parse,
                                data, 'ad.json')
        self.assertIn('ad.json: namespaces.2: numa_node', str(exc))
        data['namespaces'] = {}
        exc = self.assertRaises(hostfile.ProfileError, discoveredhost.parse,
                                data, 'ad.json')
        self.assertIn('namespaces: expected a list', str(exc))


class TestNoSideEffect(testtools.TestCase):

    def test_plain_profile_has_no_numa_keys(self):
        status, out, err = base.run(['--from', os.path.join(
            base.DATA, 'mm_2s_pmem100_256')])
        self.assertEqual(0, status, err)
        data = json.loads(out)
        for key in NEW_KEYS:
            self.assertNotIn(key, data)
