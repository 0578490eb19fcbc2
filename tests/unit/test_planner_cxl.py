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
"""Planning CXL nodes: catalog sources, population rules, model, scenario."""

import json
import math
import re

import testtools
import yaml


from nova_pmem_filters.core import kinds

from planner import errors
from planner import model
from planner import population
from planner import scenario
from tests.unit import clitools

NAME = 'cxl-cost-matched'
FIGURES = ('price', 'watts', 'bandwidth', 'latency', 'lanes', 'cxl_lanes',
           'flat_memory_mode', 'base_cost', 'base_watts', 'rack_units')


def _raw():
    return yaml.safe_load(scenario.read_text(NAME)[0])


def _cited(text):
    return bool(re.search(r'https?://', text or '')) or (
        (text or '').startswith('assumption') or
        (text or '').startswith('field notes'))


class CatalogSourceTestCase(testtools.TestCase):

    def test_every_figure_has_a_source_or_is_an_assumption(self):
        catalog = _raw()['catalog']
        for kind, entries in catalog.items():
            for name, entry in entries.items():
                for key in entry:
                    base = key[:-len('_gbps')] if key.endswith('_gbps') \
                        else key[:-len('_ns')] if key.endswith('_ns') \
                        else key
                    if base in FIGURES:
                        self.assertTrue(
                            _cited(entry.get(base + '_source')),
                            '%s %s: %s has no source' % (kind, name, key))
                self.assertTrue(_cited(entry.get('source')),
                                '%s %s: no source' % (kind, name))

    def test_assumptions_give_a_reason(self):
        for entries in _raw()['catalog'].values():
            for entry in entries.values():
                for key, value in entry.items():
                    if key.endswith('source') and value.startswith(
                            'assumption'):
                        self.assertGreater(len(value), len('assumption: '))


class RuleTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.scen = scenario.load(NAME)
        self.cat = self.scen.catalog

    def config(self, mode, platform='granite-rapids-ap-2s', cpu='xeon-6980p',
               **per):
        dimms = {self.cat.dimms[n.replace('_', '-')]: c
                 for n, c in per.items()}
        plat = self.cat.platforms[platform]
        return scenario.NodeConfig(
            name='cfg', platform=plat, cpu=self.cat.cpus[cpu], mode=mode,
            sockets=tuple(dict(dimms) for _ in range(plat.sockets)))

    def codes(self, config, severity):
        return {f.code for f in population.check(config)
                if f.severity == severity}

    def test_scenario_configs_are_clean(self):
        for config in self.scen.configs.values():
            self.assertEqual([], population.check(config), config.name)

    def test_flat_ratio_error(self):
        config = self.config(kinds.CXL_FLAT, ddr5_64=12,
                             samsung_cmmd_256=4)
        self.assertIn('flat-ratio', self.codes(config, population.ERROR))
        finding = [f for f in population.check(config)
                   if f.code == 'flat-ratio'][0]
        self.assertIn('1:1.33', finding.message)
        self.assertIn('intel.com', finding.source)

    def test_flat_needs_a_xeon_6(self):
        config = self.config(kinds.CXL_FLAT, platform='turin-2s',
                             cpu='epyc-9755', ddr5_64=12,
                             micron_cz120_256=3)
        self.assertIn('flat-unsupported-cpu',
                      self.codes(config, population.ERROR))

    def test_lane_oversubscription_error(self):
        # 9 x8 devices = 72 lanes, the platform wires 64 per socket.
        config = self.config(kinds.CXL_KMEM, ddr5_64=12,
                             micron_cz120_128=9)
        self.assertIn('cxl-lanes', self.codes(config, population.ERROR))

    def test_kmem_ratio_warning(self):
        config = self.config(kinds.CXL_KMEM, ddr5_32=12,
                             micron_cz120_256=8)
        self.assertEqual(set(), self.codes(config, population.ERROR))
        self.assertIn('kmem-ratio', self.codes(config, population.WARNING))
        inside = self.config(kinds.CXL_KMEM, ddr5_64=12,
                             micron_cz120_256=3)
        self.assertNotIn('kmem-ratio',
                         self.codes(inside, population.WARNING))

    def test_ddr5_on_a_ddr4_platform(self):
        config = self.config(kinds.DRAM, platform='ice-lake-2s',
                             cpu='xeon-gold-6330', ddr5_64=8)
        self.assertIn('dimm-type-unsupported',
                      self.codes(config, population.ERROR))

    def test_cxl_on_a_cpu_without_lanes(self):
        config = self.config(kinds.CXL_KMEM, cpu='xeon-gold-6330',
                             ddr5_64=12, micron_cz120_256=3)
        self.assertIn('cxl-unsupported-cpu',
                      self.codes(config, population.ERROR))

    def test_invalid_config_is_refused_naming_it(self):
        raw = _raw()
        raw['configs']['flat-1536-1536']['per_socket'][
            'samsung-cmmd-256'] = 2
        exc = self.assertRaises(errors.ScenarioError, scenario.parse,
                                yaml.safe_dump(raw), 'x.yaml')
        self.assertIn('configs.flat-1536-1536', str(exc))
        self.assertIn('flat-ratio', str(exc))


class ModelTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.scen = scenario.load(NAME)
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
            vms, _binding = model.density(node, w, self.pol)
            self.assertEqual(min(by_memory, by_near, by_vcpu), vms, name)

    def test_near_memory_binds(self):
        cfg = self.scen.configs['kmem-1536-1536']
        node = model.node(cfg, self.pol)
        w = self.scen.workloads['analytics']
        hot = dataclass_replace(w, hot_ratio=1.0)
        vms, binding = model.density(node, hot, self.pol)
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
        self.assertAlmostEqual(expected, model.per_vm_throughput(
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
        vms, _ = model.density(node, w, self.pol)
        h = min(1.0, node.dram_cache_gb * 1024 / (vms * w.ram_mb
                                                  * w.hot_ratio))
        sustained = min(near / h, far / (1 - h)) if h < 1 else near
        self.assertAlmostEqual(
            min(1.0, sustained / (vms * w.bandwidth_gbps)),
            model.per_vm_throughput(node, w, vms, self.pol,
                                    self.scen.performance))

    def test_aggregate_metadata(self):
        cfg = self.scen.configs['kmem-1536-1536']
        self.assertEqual({'pmem_mode': 'cxl_kmem',
                          'pmem_dram_cache_gb': '%d' % cfg.dram_gb},
                         model.aggregate_metadata(cfg))


def dataclass_replace(workload, hot_ratio):
    import dataclasses
    request = dataclasses.replace(workload.request, hot_ratio=hot_ratio)
    return dataclasses.replace(workload, request=request)


class CliTestCase(testtools.TestCase):

    def run_ok(self, *argv):
        status, out, err = clitools.run_cli(self, argv)
        self.assertEqual(0, status, err)
        return out

    def rows(self, *argv):
        return json.loads(self.run_ok(*argv, '-f', 'json',
                                      '--scenario', NAME))

    def test_scenario_is_listed(self):
        self.assertIn(NAME, scenario.builtin_names())
        self.assertEqual('telco-cost-matched', scenario.BUILTIN_SCENARIO)

    def test_compare(self):
        rows = self.rows('compare')
        scen = scenario.load(NAME)
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

    def test_optimize(self):
        rows = self.rows('optimize')
        self.assertTrue(rows)

    def test_nova_config(self):
        rows = self.rows('nova-config')
        pairs = {(r['key'], r['value']) for r in rows}
        self.assertIn(('pmem_mode', 'cxl_kmem'), pairs)
        self.assertIn(('pmem_dram_cache_gb', '1536'), pairs)
        # Tiered CXL hosts pass as memory_mode.
        self.assertIn(('pmem:modes', 'dram,memory_mode'), pairs)

    def test_report(self):
        out_dir = self.useFixture(__import__('fixtures').TempDir()).path
        self.run_ok('report', '--scenario', NAME, '--output-dir', out_dir,
                    '--no-png')
        import os
        self.assertIn('report.html', os.listdir(out_dir))
