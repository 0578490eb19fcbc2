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
"""``nova-pmem-planner fleet``: the current fleet from discovered profiles."""

import copy
import json
import os

import fixtures
import testtools
import yaml

from nova_pmem_filters.core.formats import hostfile
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.planner import errors
from nova_pmem_filters.planner import fleet
from nova_pmem_filters.planner import model
from nova_pmem_filters.planner import scenario
from nova_pmem_filters.planner import vmsizing
from tests.unit import clitools
from tests.unit.crosscut import test_agreement
from tests.unit import paths

EXAMPLES = paths.of('etc', 'examples', 'fleet')

MM = {
    'schema': 'nova-pmem-host-profile/1', 'hostname': 'mm-1',
    'mode': 'memory_mode', 'scheduler_mode': 'memory_mode',
    'memory_mode_percent': 100, 'dram_gb': 192.0, 'pmem_gb': 512.0,
    'visible_memory_gb': 512.0, 'dram_cache_gb': 192.0,
    'app_direct_gb': 0.0, 'sockets': [], 'dimms': [], 'regions': [],
    'namespaces': [], 'notes': [],
}
DRAM = dict(MM, hostname='dram-1', mode='dram', scheduler_mode='dram',
            memory_mode_percent=0, pmem_gb=0.0, visible_memory_gb=384.0,
            dram_cache_gb=0.0)


class FleetTestCase(testtools.TestCase):

    def setUp(self):
        super(FleetTestCase, self).setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.scen = scenario.load()

    def write(self, name, data):
        path = os.path.join(self.dir, name)
        with open(path, 'w') as f:
            f.write(data if isinstance(data, str) else json.dumps(data))
        return path

    def test_examples(self):
        kinds = fleet.load(EXAMPLES)
        self.assertEqual(
            [('dram-384G', ('compute-dram-01',), 'dram', 384.0, 0.0),
             ('memory_mode-512G-192G-cache', ('compute-mm-01',),
              'memory_mode', 512.0, 192.0)],
            [(k.name, k.hosts, k.mode, k.visible_memory_gb, k.dram_cache_gb)
             for k in kinds])

    def test_identical_hosts_group(self):
        for i in range(3):
            self.write('mm%d.json' % i, dict(MM, hostname='mm-%d' % i))
        self.write('d.json', DRAM)
        # Other vCPUs, other kind; mixed hardware schedules as memory_mode.
        self.write('mixed.json', dict(MM, hostname='mixed-1', mode='mixed',
                                      vcpus=64))
        self.write('notes.txt', 'not a profile')
        kinds = fleet.load(self.dir)
        self.assertEqual(
            [('dram-384G', 1), ('memory_mode-512G-192G-cache', 3),
             ('memory_mode-512G-192G-cache-64c', 1)],
            [(k.name, k.count) for k in kinds])
        self.assertEqual(('mm-0', 'mm-1', 'mm-2'), kinds[1].hosts)

    def test_table_uses_the_model(self):
        for i in range(3):
            self.write('mm%d.json' % i, dict(MM, hostname='mm-%d' % i))
        self.write('d.json', DRAM)
        self.write('small.json', dict(MM, hostname='small', vcpus=8))
        kinds = fleet.load(self.dir)
        rows = fleet.table(kinds, self.scen).to_dict('records')
        self.assertEqual(['dram-384G', 'memory_mode-512G-192G-cache',
                          'memory_mode-512G-192G-cache-8c', 'total'],
                         [r['kind'] for r in rows])
        policies = self.scen.policies
        for kind, row in zip(kinds, rows):
            for name, workload in self.scen.workloads.items():
                vms, binding = vmsizing.density(kind.node(), workload,
                                                policies)
                self.assertEqual(vms, row[name])
                self.assertEqual(binding, row[name + '_binding'])
                self.assertEqual(vms * kind.count, row[name + '_fleet'])
        # 8 vCPUs hold two 4-vCPU VMs.
        self.assertEqual((2, 'vcpu'), (rows[2]['redis'],
                                       rows[2]['redis_binding']))
        total = rows[-1]
        self.assertEqual(5, total['count'])
        for name in self.scen.workloads:
            self.assertEqual(sum(r[name + '_fleet'] for r in rows[:-1]),
                             total[name + '_fleet'])
            self.assertIsNone(total[name])

    def test_discovered_node_matches_the_scenario_node(self):
        # A discovered host with a scenario config's figures holds what the
        # model gives that config.
        policies = self.scen.policies
        for config in self.scen.configs.values():
            planned = model.node(config, policies)
            if planned.config.mode == 'app_direct':
                continue
            found = model.discovered_node(
                'x', config.mode, planned.visible_memory_gb,
                planned.dram_cache_gb, vcpus=planned.vcpus)
            for workload in self.scen.workloads.values():
                self.assertEqual(vmsizing.density(planned, workload, policies),
                                 vmsizing.density(found, workload, policies))

    def test_bad_files(self):
        no_cache = dict(MM, dram_cache_gb=0)
        no_host = dict(MM)
        del no_host['hostname']
        cases = [
            ('{"schema": ', 'not valid JSON'),
            ('[1, 2]', '(top level): expected a JSON object'),
            (dict(MM, schema='other/2'),
             'schema: expected "nova-pmem-host-profile/1", got "other/2"'),
            (no_host, 'hostname: missing'),
            (dict(MM, mode='turbo'), 'mode: "turbo" is not one of dram, '
             'memory_mode, app_direct, mixed'),
            (dict(MM, scheduler_mode='mixed'), 'scheduler_mode: "mixed" is '
             'not one of dram, memory_mode, app_direct'),
            (dict(MM, visible_memory_gb='512'), 'visible_memory_gb: '
             'expected a positive number of GB, got "512"'),
            (dict(MM, visible_memory_gb=0), 'visible_memory_gb'),
            (dict(MM, dram_cache_gb=-1), 'dram_cache_gb: expected a '
             'non-negative number of GB, got -1'),
            (no_cache, 'dram_cache_gb: a memory_mode host needs a positive '
             'DRAM cache, got 0'),
            (dict(MM, vcpus=True), 'vcpus: expected a positive integer, '
             'got true'),
            (dict(DRAM, scheduler_mode='app_direct', regions=[{}]),
             'regions.0: size_gb: missing'),
        ]
        for data, message in cases:
            path = self.write('bad.json', data)
            err = self.assertRaises(errors.ScenarioError, fleet.load,
                                    self.dir)
            self.assertIn(message, str(err))
            self.assertTrue(str(err).startswith(path + ': '), str(err))
            self.assertNotIn('\n', str(err))

    def test_duplicate_hostname(self):
        self.write('a.json', MM)
        path = self.write('b.json', MM)
        err = self.assertRaises(errors.ScenarioError, fleet.load,
                                self.dir)
        self.assertEqual('%s: hostname: "mm-1" is also described by %s'
                         % (path, os.path.join(self.dir, 'a.json')),
                         str(err))

    def test_empty_directory(self):
        err = self.assertRaises(errors.ScenarioError, fleet.load,
                                self.dir)
        self.assertIn('no *.json host profile', str(err))

    def test_cli(self):
        status, out, err = clitools.run_cli(
            self, ['fleet', '--fleet', EXAMPLES, '-f', 'json'])
        self.assertEqual(0, status, err)
        rows = json.loads(out)
        self.assertEqual(
            [('dram-384G', 1, 14, 15), ('memory_mode-512G-192G-cache', 1,
                                        19, 20)],
            [(r['kind'], r['count'], r['redis'], r['mysql'])
             for r in rows[:-1]])
        self.assertEqual(('total', 2, 33, 35),
                         (rows[-1]['kind'], rows[-1]['count'],
                          rows[-1]['redis_fleet'], rows[-1]['mysql_fleet']))

    def test_compare_with_fleet(self):
        status, out, err = clitools.run_cli(
            self, ['compare', '--fleet', EXAMPLES, '-f', 'json'])
        self.assertEqual(0, status, err)
        rows = json.loads(out)
        planned = {(r['mode'], r['workload']): r for r in rows
                   if not r['config'].startswith('fleet:')}
        current = [r for r in rows if r['config'].startswith('fleet:')]
        self.assertEqual(4, len(current))
        for row in current:
            # The example hosts are the scenario's nodes: the same density
            # and throughput, but no price or power.
            twin = planned[(row['mode'], row['workload'])]
            if twin['binding'] == 'shared_ratio':
                # The plan's hosts share a ram_allocation_ratio with the
                # other workload; the fleet's are configured by the
                # operator: the model's count, as on hosts of its own.
                twin = {(r['mode'], r['workload']): r for r in json.loads(
                    clitools.run_cli(self, [
                        'compare', '--workload', row['workload'],
                        '-f', 'json'])[1])}[(row['mode'], row['workload'])]
            self.assertEqual(twin['vms_per_node'], row['vms_per_node'])
            self.assertEqual(twin['relative_throughput'],
                             row['relative_throughput'])
            self.assertIsNone(row['cost_per_vm'])
            self.assertIsNone(row['vms_per_kw'])

    def test_compare_with_bad_fleet_exits_2(self):
        status, out, err = clitools.run_cli(
            self, ['compare', '--fleet', os.path.join(self.dir, 'none')])
        self.assertEqual(2, status)
        self.assertEqual('', out)

    def test_cli_bad_file_exits_2(self):
        bad = copy.deepcopy(MM)
        bad['dram_cache_gb'] = 'lots'
        path = self.write('bad.json', bad)
        status, out, err = clitools.run_cli(self, ['fleet', '--fleet',
                                                   self.dir])
        self.assertEqual(2, status)
        self.assertIn('%s: dram_cache_gb: expected a non-negative number '
                      'of GB, got "lots"' % path, err)


class NumaFleetTestCase(testtools.TestCase):
    """A discovered host's sockets are read for NUMA-bound workloads."""

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        text, _source = scenario.read_text()
        raw = yaml.safe_load(text)
        raw['workloads']['split'] = {'vcpus': 4, 'ram_gb': 32,
                                     'used_gb': 24, 'numa_nodes': 2}
        self.scen = scenario.parse(yaml.safe_dump(raw), 'numa scenario')

    def write(self, name, data):
        with open(os.path.join(self.dir, name), 'w') as f:
            json.dump(data, f)

    def test_sockets_from_the_profile(self):
        socket = {'socket': 0, 'numa_node': 0, 'dram_gb': 192.0,
                  'pmem_gb': 0.0, 'memory_mode_gb': 0.0,
                  'app_direct_gb': 0.0, 'dram_cache_gb': 0.0}
        self.write('a.json', dict(DRAM, hostname='a', vcpus=80,
                                  sockets=[socket, dict(socket, socket=1,
                                                        numa_node=1)]))
        self.write('b.json', dict(DRAM, hostname='b', vcpus=80))
        kinds = fleet.load(self.dir)
        # Unknown sockets sort first.
        self.assertEqual([('dram-384G-80c', None), ('dram-384G-80c-2', 2)],
                         [(k.name, k.sockets) for k in kinds])
        rows = fleet.table(kinds, self.scen).set_index('kind')
        # Two sockets: the split flavor's 14 VMs; unknown sockets: none.
        self.assertEqual(14, rows.loc['dram-384G-80c-2', 'split'])
        self.assertEqual('memory+socket_memory',
                         rows.loc['dram-384G-80c-2', 'split_binding'])
        self.assertEqual(0, rows.loc['dram-384G-80c', 'split'])
        self.assertEqual('numa_nodes',
                         rows.loc['dram-384G-80c', 'split_binding'])
        # Workloads without numa_nodes do not care.
        self.assertEqual([14, 14], list(rows.loc[['dram-384G-80c',
                                                  'dram-384G-80c-2'],
                                                 'redis']))

    def test_load_reads_the_sockets(self):
        self.write('x.json', dict(DRAM, hostname='x', sockets=[{}, {}, {}]))
        self.write('y.json', dict(DRAM, hostname='y'))
        self.assertEqual([None, 3], [k.sockets for k in fleet.load(self.dir)])


class DiscoveredKindsFleetTestCase(testtools.TestCase):
    """Profiles that nova-pmem-discover wrote, of every kind, in a fleet.

    CXL kinds once crashed ``fleet`` (``tuple.index``) and a discovered
    ``cxl_flat`` host became a node with an unknown profile.
    """

    def setUp(self):
        super(DiscoveredKindsFleetTestCase, self).setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        for hardware_mode in test_agreement.RECORDED:
            data = test_agreement.discover(hardware_mode, numa=True)
            data['hostname'] = 'host-%s' % hardware_mode
            hostfile.write(os.path.join(self.dir, hardware_mode + '.json'),
                           data)

    def test_fleet(self):
        status, out, err = clitools.run_cli(
            self, ['fleet', '--fleet', self.dir, '-f', 'json'])
        self.assertEqual(0, status, err)
        rows = {r['kind']: r for r in json.loads(out)}
        modes = [r['mode'] for r in json.loads(out) if r['kind'] != 'total']
        # In the kinds table's order (mixed hosts are memory_mode).
        self.assertEqual(sorted(modes, key=kinds.order), modes)
        self.assertEqual(set(kinds.ALL_MODES), set(modes))
        for row in rows.values():
            if row['kind'] == 'total':
                continue
            # Every kind is known to the model: no binding is 'mode' for a
            # flavor that allows every mode, and tiered kinds carry their
            # near memory.
            self.assertNotEqual('mode', row['redis_binding'], row)
            self.assertNotEqual('mode', row['mysql_binding'], row)
        for kind in fleet.load(self.dir):
            self.assertTrue(kind.node().profile.known, kind.name)
            self.assertEqual(kind.mode in kinds.TIERED,
                             kind.node().profile.dram_cache_gb is not None)

    def test_compare_and_simulate(self):
        status, out, err = clitools.run_cli(
            self, ['compare', '--fleet', self.dir, '-f', 'json'])
        self.assertEqual(0, status, err)
        self.assertTrue(json.loads(out))
        status, out, err = clitools.run_cli(
            self, ['simulate', '--fleet', self.dir, '--host-vcpus', '64',
                   '--days', '10', '-f', 'json'])
        self.assertEqual(0, status, err)
        kinds_seen = {r['mode'] for r in json.loads(out)
                      if r['kind'] != 'total'}
        self.assertEqual(set(kinds.ALL_MODES), kinds_seen)
