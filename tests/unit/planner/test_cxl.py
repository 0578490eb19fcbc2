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
"""Planning CXL nodes: catalog sources, model, scenario and commands."""

import json
import math

import testtools

from nova_pmem_filters.planner import vmsizing

from nova_pmem_filters.planner import memperf

from nova_pmem_filters.planner import model
from nova_pmem_filters.planner import ranking
from nova_pmem_filters.planner import scenario
from nova_pmem_filters.planner import search
from tests.unit import clitools
from tests.unit.planner import cxl_cases


class CatalogSourceTestCase(testtools.TestCase):

    def test_every_figure_has_a_source_or_is_an_assumption(self):
        catalog = cxl_cases.raw_scenario()['catalog']
        for kind, entries in catalog.items():
            for name, entry in entries.items():
                for key in entry:
                    base = key[:-len('_gbps')] if key.endswith('_gbps') \
                        else key[:-len('_ns')] if key.endswith('_ns') \
                        else key
                    if base in cxl_cases.FIGURES:
                        self.assertTrue(
                            cxl_cases.cited(entry.get(base + '_source')),
                            '%s %s: %s has no source' % (kind, name, key))
                self.assertTrue(cxl_cases.cited(entry.get('source')),
                                '%s %s: no source' % (kind, name))

    def test_assumptions_give_a_reason(self):
        for entries in cxl_cases.raw_scenario()['catalog'].values():
            for entry in entries.values():
                for key, value in entry.items():
                    if key.endswith('source') and value.startswith(
                            'assumption'):
                        self.assertGreater(len(value), len('assumption: '))


class ModelTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.scen = scenario.load(cxl_cases.NAME)
        self.pol = self.scen.policies

    def test_density_from_the_catalog(self):
        cfg = self.scen.configs['flat-1536-1536']
        per = cfg.per_socket
        dram = sum(d.capacity_gb * n for d, n in per.items() if d.is_dram)
        cxl = sum(d.capacity_gb * n for d, n in per.items() if d.is_cxl)
        sockets = cfg.platform.sockets
        visible = sockets * (dram + cxl)
        node = model.node(cfg, self.pol)
        self.assertEqual(visible, node.visible_memory_gb)
        self.assertEqual(sockets * dram, node.dram_cache_gb)
        for name, w in self.scen.workloads.items():
            by_memory = math.floor(visible * self.pol.memory_cap / w.used_gb
                                   + 1e-9)
            by_near = math.floor(sockets * dram * 1024
                                 * self.pol.cache_overcommit
                                 / (w.ram_mb * w.hot_ratio) + 1e-9)
            by_vcpu = sockets * cfg.cpu.threads // w.vcpus
            vms, _binding = vmsizing.density(node, w, self.pol)
            self.assertEqual(min(by_memory, by_near, by_vcpu), vms, name)

    def test_near_memory_binds(self):
        cfg = self.scen.configs['kmem-1536-1536']
        node = model.node(cfg, self.pol)
        w = self.scen.workloads['analytics']
        hot = cxl_cases.dataclass_replace(w, hot_ratio=1.0)
        vms, binding = vmsizing.density(node, hot, self.pol)
        self.assertEqual('dram_cache', binding)
        # Near memory is the node's DRAM: 24 x 64 GB.
        self.assertEqual(1536, node.dram_cache_gb)
        self.assertEqual(math.floor(node.dram_cache_gb * 1024
                                    * self.pol.cache_overcommit
                                    / hot.ram_mb + 1e-9), vms)

    def test_latency_miss_penalty(self):
        cfg = self.scen.configs['flat-1536-1536']
        node = model.node(cfg, self.pol)
        cxl = [d for d in cfg.per_socket if d.is_cxl][0]
        self.assertEqual(cxl.latency_ns, node.far_latency_ns)
        w = self.scen.workloads['redis']
        vms = 300  # more hot RAM than the DRAM holds
        h = min(1.0, node.dram_cache_gb * 1024 / (vms * w.ram_mb * 0.25))
        expected = h + (1 - h) * (self.scen.performance.dram_latency_ns
                                  / cxl.latency_ns)
        self.assertAlmostEqual(expected, memperf.per_vm_throughput(
            node, w, vms, self.pol, self.scen.performance))
        self.assertLess(expected, 1.0)

    def test_bandwidth_roofline(self):
        cfg = self.scen.configs['kmem-1536-1536']
        node = model.node(cfg, self.pol)
        per = cfg.per_socket
        near = 2 * sum(min(n, cfg.platform.channels_per_socket)
                       * d.bandwidth_gbps for d, n in per.items()
                       if d.is_dram)
        far = 2 * sum(d.bandwidth_gbps * n for d, n in per.items()
                      if d.is_cxl)
        w = self.scen.workloads['analytics']
        vms, _ = vmsizing.density(node, w, self.pol)
        h = min(1.0, node.dram_cache_gb * 1024 / (vms * w.ram_mb
                                                  * w.hot_ratio))
        sustained = min(near / h, far / (1 - h)) if h < 1 else near
        self.assertAlmostEqual(
            min(1.0, sustained / (vms * w.bandwidth_gbps)),
            memperf.per_vm_throughput(node, w, vms, self.pol,
                                      self.scen.performance))

    def test_aggregate_metadata(self):
        cfg = self.scen.configs['kmem-1536-1536']
        # The kernel's tiering is written out: what the plan assumed.
        self.assertEqual({'pmem_mode': 'cxl_kmem',
                          'pmem_dram_cache_gb': '%d' % cfg.dram_gb,
                          'pmem_kernel_tiering': 'on'},
                         model.aggregate_metadata(cfg))


class CliTestCase(testtools.TestCase):

    def run_ok(self, *argv):
        status, out, err = clitools.run_cli(self, argv)
        self.assertEqual(0, status, err)
        return out

    def rows(self, *argv):
        return json.loads(self.run_ok(*argv, '-f', 'json',
                                      '--scenario', cxl_cases.NAME))

    def test_scenario_is_listed(self):
        self.assertIn(cxl_cases.NAME, scenario.builtin_names())
        self.assertEqual('telco-cost-matched', scenario.BUILTIN_SCENARIO)

    def test_compare(self):
        rows = self.rows('compare')
        scen = scenario.load(cxl_cases.NAME)
        self.assertEqual(len(scen.configs) * len(scen.workloads), len(rows))
        modes = {r['mode'] for r in rows}
        self.assertEqual({'dram', 'cxl_flat', 'cxl_kmem'}, modes)
        base = {r['workload']: r for r in rows if r['mode'] == 'dram'}
        for row in rows:
            if row['mode'] != 'dram':
                # Cost-matched: the same node price.
                self.assertAlmostEqual(base[row['workload']]['node_cost'],
                                       row['node_cost'])

    def test_search(self):
        rows = self.rows('search', '--platform', 'granite-rapids-ap-2s',
                         '--cpu', 'xeon-6980p', '--modes', 'cxl_flat',
                         '--dimm', 'ddr5-64', '--dimm', 'ddr5-96',
                         '--dimm', 'samsung-cmmd-256', '--limit', '3')
        self.assertTrue(rows)
        for row in rows:
            self.assertEqual('cxl_flat', row['mode'])

    def test_search_folds_equivalent_modules(self):
        # Samsung's and Micron's 256 GB modules have the same figures:
        # populations that only mix them are one row.
        rows = self.rows('search', '--platform', 'granite-rapids-ap-2s',
                         '--cpu', 'xeon-6980p', '--modes', 'cxl_flat',
                         '--dimm', 'ddr5-64', '--dimm', 'samsung-cmmd-256',
                         '--dimm', 'micron-cz120-256', '--dimm',
                         'skhynix-cmm-128', '--limit', '0')
        # 12 x 64 GB DDR5 and 768 GB of CXL per socket (flat mode: 1:1),
        # as 3 x 256 GB in 4 vendor mixes, named by one vendor's, or as
        # 6 x 128 GB: a different population, of the same measures.
        self.assertEqual(
            [(1, 'flat-12x64+3xmicron-cz120-256', 115, 3),
             (2, 'flat-12x64+6x128', 115, 0)],
            [(r['rank'], r['config'], r['vms_per_node'], r['equivalents'])
             for r in rows[:2]])
        # Every valid population is a row or folded into one.
        result = search.run(
            scenario.load(cxl_cases.NAME), 'granite-rapids-ap-2s',
            'xeon-6980p', modes=['cxl_flat'], limit=0,
            dimms=['ddr5-64', 'samsung-cmmd-256', 'micron-cz120-256',
                   'skhynix-cmm-128'])
        self.assertEqual(len(result.nodes),
                         len(rows) + sum(r['equivalents'] for r in rows))
        self.assertEqual(
            len(rows), len({ranking.equivalence_key(n.config)
                            for n in result.nodes.values()}))
        # Without the equivalent vendor, nothing is folded.
        rows = self.rows('search', '--platform', 'granite-rapids-ap-2s',
                         '--cpu', 'xeon-6980p', '--modes', 'cxl_flat',
                         '--dimm', 'ddr5-64', '--dimm', 'samsung-cmmd-256',
                         '--limit', '0')
        self.assertEqual({0}, {r['equivalents'] for r in rows})

    def test_optimize(self):
        rows = self.rows('optimize')
        self.assertTrue(rows)

    def test_nova_config(self):
        rows = self.rows('nova-config')
        pairs = {(r['key'], r['value']) for r in rows}
        self.assertIn(('pmem_mode', 'cxl_kmem'), pairs)
        self.assertIn(('pmem_dram_cache_gb', '1536'), pairs)
        self.assertIn(('pmem_kernel_tiering', 'on'), pairs)
        # Tiered CXL hosts pass as memory_mode.
        self.assertIn(('pmem:modes', 'dram,memory_mode'), pairs)

    def test_report(self):
        out_dir = self.useFixture(__import__('fixtures').TempDir()).path
        self.run_ok(
            'report', '--scenario', cxl_cases.NAME, '--output-dir', out_dir,
            '--no-png')
        import os
        self.assertIn('report.html', os.listdir(out_dir))
