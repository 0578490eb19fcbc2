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
"""The planner on hosts whose tiering the kernel does (cxl_kmem).

A NUMA-bound workload charges its whole RAM to the near memory of each cell
it is bound to, and with the kernel's tiering off every workload does; the
configurations say whether the kernel tiers (``kernel_tiering``), the
aggregates carry it. Densities are checked against an independent count:
instances added one by one through the core's cache check until refused.
"""

import testtools
import yaml

from nova_pmem_filters.core.formats import scenario as document
from nova_pmem_filters.core.rules import decide
from nova_pmem_filters.core.rules import nearmem
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters.planner import errors
from nova_pmem_filters.planner import memperf
from nova_pmem_filters.planner import model
from nova_pmem_filters.planner import patterns
from nova_pmem_filters.planner import realise
from nova_pmem_filters.planner import scenario
from nova_pmem_filters.planner import vmsizing
from tests.unit.planner import cxl_cases
from tests.unit.planner import kernel_tiering_cases as cases


def admitted(node, workload, policies, limit=100000):
    """Instances PmemCacheFilter admits one after the other on ``node``.

    Nova spreads the cells of a NUMA-bound instance over the least-loaded
    host cells; a floating instance is checked host-wide.
    """
    prof, ratio = node.profile, policies.cache_overcommit
    request, ram_mb = workload.request, workload.ram_mb
    used = nearmem.HotRam(0.0)
    n = workload.numa_nodes
    cells = list(range(node.sockets)) if n else None
    cell_mb = ram_mb // n if n else None
    for count in range(limit):
        fit = chosen = None
        if n:
            chosen = sorted(cells, key=lambda c: (
                used.bound_ram.get(c, 0.0), c))[:n]
            fit = dict.fromkeys(chosen, cell_mb).copy
        passes, _reason, _view = decide.cache_check(
            prof, ratio, used, request, ram_mb, cells=cells, fit=fit)
        if not passes:
            return count
        if n:
            hot = request.hot_mb(cell_mb)
            used.add(hot * n, tuple((c, hot) for c in chosen), ram_mb,
                     tuple((c, cell_mb) for c in chosen))
        else:
            used.add(request.hot_mb(ram_mb), None, ram_mb)
    raise AssertionError('more than %d instances' % limit)


class ScenarioKeyTestCase(testtools.TestCase):

    def test_read_as_on_and_off(self):
        scen = cases.load()
        self.assertIsNone(scen.configs[cases.KMEM].kernel_tiering)
        self.assertEqual('off', scen.configs[cases.KMEM_OFF].kernel_tiering)
        # YAML's false (an unquoted off) is off.
        self.assertEqual('off',
                         scen.configs[cases.KMEM_1S_OFF].kernel_tiering)
        data = cases.raw()
        data['configs'][cases.KMEM]['kernel_tiering'] = True
        self.assertEqual('on', cases.load(data).configs[
            cases.KMEM].kernel_tiering)

    def test_unquoted_on_and_off_in_a_file(self):
        text = yaml.safe_dump(cases.raw()).replace(
            "kernel_tiering: 'off'", 'kernel_tiering: off')
        self.assertIn('kernel_tiering: off', text)
        scen = scenario.parse(text, 'k.yaml')
        self.assertEqual('off', scen.configs[cases.KMEM_OFF].kernel_tiering)

    def test_refused_where_the_kernel_does_not_tier(self):
        data = cases.raw()
        data['configs']['flat-1536-1536']['kernel_tiering'] = 'off'
        err = self.assertRaises(errors.ScenarioError, cases.load, data)
        self.assertEqual(
            "kernel-tiering.yaml: configs.flat-1536-1536.kernel_tiering: "
            "applies only to a mode whose tiering the kernel does "
            "(cxl_kmem), not to mode cxl_flat; leave it out (allowed "
            "values on cxl_kmem: on, off)", str(err))

    def test_bad_value(self):
        data = cases.raw()
        data['configs'][cases.KMEM]['kernel_tiering'] = 'maybe'
        err = self.assertRaises(errors.ScenarioError, cases.load, data)
        self.assertEqual(
            "kernel-tiering.yaml: configs.kmem-1536-1536.kernel_tiering: "
            "must be one of on, off, got 'maybe'", str(err))

    def test_written_back(self):
        text = yaml.safe_dump(cases.raw())
        doc = document.parse(text, 'k.yaml')
        again = document.parse(document.dumps(doc), 'again.yaml')
        self.assertEqual(doc, again)
        self.assertEqual('off', again.configs[cases.KMEM_OFF].kernel_tiering)


class DensityTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.scen = cases.load()
        self.pol = self.scen.policies

    def node(self, name):
        return model.node(self.scen.configs[name], self.pol)

    def test_unbound_workloads_unchanged_on_the_built_in_scenario(self):
        scen = scenario.load(cxl_cases.NAME)
        node = model.node(scen.configs[cases.KMEM], scen.policies)
        found = {name: vmsizing.density(node, w, scen.policies)
                 for name, w in scen.workloads.items()}
        self.assertEqual({'redis': (115, 'memory'),
                          'mysql': (120, 'memory'),
                          'analytics': (46, 'memory')}, found)
        capacity = node.profile.cache_capacity_mb(
            scen.policies.cache_overcommit)
        for name, w in scen.workloads.items():
            # Their hot RAM, as before the rule.
            self.assertEqual(nearmem.instances_in_cache(
                capacity, w.ram_mb * w.hot_ratio),
                vmsizing.limits(node, w, scen.policies)['dram_cache'], name)

    def test_bound_workloads_charge_whole_ram_per_cell(self):
        for config in (cases.KMEM, cases.KMEM_OFF, cases.KMEM_1S):
            node = self.node(config)
            for name in (cases.BOUND, cases.BOUND2):
                w = self.scen.workloads[name]
                if w.numa_nodes > node.sockets:
                    continue
                with self.subTest(config=config, workload=name):
                    limits = vmsizing.limits(node, w, self.pol)
                    near = min(limits['dram_cache'],
                               limits['socket_dram_cache'])
                    self.assertEqual(admitted(node, w, self.pol), near)
                    # 1536 GB of DRAM (768 per socket) hold 48 VMs of
                    # 32 GB, 24 on one socket: not 192 by hot RAM.
                    self.assertEqual(node.dram_cache_gb // 32, near)
                    self.assertEqual((near, 'dram_cache+socket_dram_cache'),
                                     vmsizing.density(node, w, self.pol))
                    self.assertEqual(1.0, memperf.hit_fraction(
                        node, w, near, self.pol))

    def test_tiering_off_charges_every_workload_whole_ram(self):
        for on, off in ((cases.KMEM, cases.KMEM_OFF),
                        (cases.KMEM_1S, cases.KMEM_1S_OFF)):
            for name in ('redis', 'mysql', 'analytics'):
                w = self.scen.workloads[name]
                with self.subTest(config=off, workload=name):
                    node_on, node_off = self.node(on), self.node(off)
                    self.assertEqual(
                        admitted(node_on, w, self.pol),
                        vmsizing.limits(node_on, w, self.pol)['dram_cache'])
                    found = admitted(node_off, w, self.pol)
                    self.assertEqual(
                        found,
                        vmsizing.limits(node_off, w, self.pol)['dram_cache'])
                    self.assertEqual(node_off.dram_cache_gb * 1024
                                     // w.ram_mb, found)

    def test_hardware_tiered_kinds_keep_hot_ram(self):
        node = self.node('flat-1536-1536')
        w = self.scen.workloads[cases.BOUND]
        limits = vmsizing.limits(node, w, self.pol)
        # Two cells of 768 GB, each holding 8 hot GB a VM.
        self.assertEqual(2 * nearmem.instances_in_cache(
            768 * 1024, w.ram_mb * w.hot_ratio), limits['socket_dram_cache'])
        self.assertEqual(admitted(node, w, self.pol),
                         min(limits['dram_cache'],
                             limits['socket_dram_cache']))

    def test_a_kmem_cell_holds_its_dram(self):
        # The CXL memory is a NUMA node without CPUs: NUMATopologyFilter
        # fits instance cells in the DRAM of the cells with CPUs.
        sizing = vmsizing.cells(self.node(cases.KMEM))
        self.assertEqual(768 * 1024, sizing.memory_mb)
        sizing = vmsizing.cells(self.node('flat-1536-1536'))
        self.assertEqual(1536 * 1024, sizing.memory_mb)

    def test_profile_and_metadata(self):
        for config, state in ((cases.KMEM, 'on'), (cases.KMEM_OFF, 'off'),
                              ('flat-1536-1536', None),
                              ('dram-2304', None)):
            cfg = self.scen.configs[config]
            metadata = model.aggregate_metadata(cfg)
            self.assertEqual(state, metadata.get(
                profile.KERNEL_TIERING_KEY), config)
            node = model.node(cfg, self.pol)
            self.assertEqual(state, node.profile.kernel_tiering)
            self.assertEqual(node.profile, profile.from_metadata([metadata]))

    def test_discovered_node(self):
        for state in ('on', 'off', None):
            node = model.discovered_node('h', 'cxl_kmem', 3072, 1536,
                                         vcpus=512, sockets=2,
                                         kernel_tiering=state)
            self.assertEqual(state, node.profile.kernel_tiering)
            w = self.scen.workloads['redis']
            self.assertEqual(48 if state == 'off' else 192,
                             vmsizing.limits(node, w, self.pol)['dram_cache'])


class PatternsTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.scen = cases.load()
        self.pol = self.scen.policies

    def test_single_limit_is_the_density(self):
        for config in self.scen.configs:
            node = model.node(self.scen.configs[config], self.pol)
            cap = patterns.Capacity.of(node, self.pol)
            for w in self.scen.workloads.values():
                if w.numa_nodes:
                    continue
                with self.subTest(config=config, workload=w.name):
                    demand = patterns.Demand.of(w)
                    self.assertEqual(vmsizing.density(node, w, self.pol)[0],
                                     patterns.single_limit(cap, demand))
                    self.assertEqual(vmsizing.charge_mb(node, w, w.ram_mb),
                                     cap.near_mb(demand))

    def test_mix_on_a_kmem_node(self):
        node = model.node(self.scen.configs[cases.KMEM_1S], self.pol)
        cap = patterns.Capacity.of(node, self.pol)
        demands = [patterns.Demand.of(self.scen.workloads[name])
                   for name in (cases.FLOATING, cases.BOUND)]
        self.assertEqual([False, True], [d.binds for d in demands])
        # 768 GB of DRAM: 8 GB hot each floating, 32 GB each bound.
        self.assertTrue(patterns.fits(cap, demands, (20, 19)))
        self.assertFalse(patterns.fits(cap, demands, (21, 19)))
        self.assertFalse(patterns.fits(cap, demands, (20, 20)))
        off = model.node(self.scen.configs[cases.KMEM_1S_OFF], self.pol)
        cap = patterns.Capacity.of(off, self.pol)
        self.assertTrue(patterns.fits(cap, demands, (12, 12)))
        self.assertFalse(patterns.fits(cap, demands, (13, 12)))

    def test_optimize_buys_more_nodes_without_tiering(self):
        from nova_pmem_filters.planner import optimize
        data = cases.raw()
        data['workloads'] = {'redis': data['workloads']['redis']}
        data['demand'] = {'redis': 480}
        scen = cases.load(data)
        nodes = {}
        for config in (cases.KMEM, cases.KMEM_OFF):
            problem = optimize.build(scen, configs=[config])
            plan = optimize.solve(problem, scen=scen, time_limit=30)
            nodes[config] = sum(plan.nodes.values())
        # 115 a node by memory with tiering on, 48 by DRAM without.
        self.assertEqual({cases.KMEM: 5, cases.KMEM_OFF: 10}, nodes)


class NovaConfigTestCase(testtools.TestCase):

    def test_aggregate_says_what_the_plan_assumed(self):
        scen = cases.load()
        rows = realise.rows(scen, placement_accounting=True)
        found = {(r['target'], r['value']) for r in rows
                 if r['key'] == profile.KERNEL_TIERING_KEY}
        self.assertEqual({('pmem-' + cases.KMEM, 'on'),
                          ('pmem-' + cases.KMEM_OFF, 'off'),
                          ('pmem-' + cases.KMEM_1S, 'on'),
                          ('pmem-' + cases.KMEM_1S_OFF, 'off')}, found)
        text = realise.script(rows)
        self.assertIn('pmem_kernel_tiering=off', text)
        # Placement is told of the same near memory either way.
        provider = {r['target'].split(' ')[-1]: r['value'] for r in rows
                    if r['scope'] == 'provider'}
        self.assertEqual(provider['pmem-' + cases.KMEM],
                         provider['pmem-' + cases.KMEM_OFF])

    def test_the_scheduler_reads_the_rows_back(self):
        scen = cases.load()
        rows = realise.rows(scen)
        for config in scen.configs:
            metadata = {r['key']: r['value'] for r in rows
                        if r['scope'] == 'aggregate'
                        and r['target'] == 'pmem-' + config
                        and r['key'] != 'create'}
            node = model.node(scen.configs[config], scen.policies)
            self.assertEqual(node.profile,
                             profile.from_metadata([metadata]), config)
