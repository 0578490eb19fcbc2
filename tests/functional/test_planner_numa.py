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
"""The planner's per-socket densities against what real Nova admits.

As test_planner_loop, for NUMA-bound workloads (``numa_nodes``) and hosts
with one NUMA cell per socket: a libvirt compute on fake libvirt is sized
as the scenario's node, cell by cell (``model.cell_sizing``), nova-config's
output is applied (allocation ratios, reserved memory, aggregate metadata,
the flavor with ``hw:numa_nodes``), and the flavor is booted until
NoValidHost. NUMATopologyFilter and PmemCacheFilter decide per cell; Nova
must admit exactly the planner's ``vms_per_node``.
"""

import dataclasses

import fixtures

from nova.tests.fixtures import libvirt as fakelibvirt

from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.planner import model
from nova_pmem_filters.planner import realise
from nova_pmem_filters.planner import scenario
from nova_pmem_filters.planner import vmsizing
from tests.functional import numa_base
from tests.functional import test_planner_loop


class PlannerNumaTest(numa_base.NumaTestBase):

    def setUp(self):
        super(PlannerNumaTest, self).setUp()
        self.scenario = scenario.load()

    def _numa_workload(self, name, numa_nodes, **specs):
        raw = self.scenario.workloads[name]
        merged = dict(raw.extra_specs, **specs)
        merged['hw:numa_nodes'] = str(numa_nodes)
        workload = dataclasses.replace(
            raw, numa_nodes=numa_nodes, extra_specs=merged,
            request=extra_specs.parse(merged))
        self.scenario = dataclasses.replace(
            self.scenario,
            workloads=dict(self.scenario.workloads, **{name: workload}))
        return workload

    def _start_cells(self, hostname, cells):
        """A libvirt compute with the node's cells (one per socket)."""
        total_cpus = cells.cells * cells.vcpus
        # Nova's libvirt fixtures assume at most 16 CPUs; a node of the
        # scenario has more.
        self.useFixture(fixtures.MonkeyPatch(
            'nova.virt.libvirt.host.Host.get_online_cpus',
            lambda host: set(range(total_cpus))))
        # Fake libvirt's getInfo() gives the memory in KiB where libvirt
        # gives MiB: report the host's memory as real libvirt would.
        self.useFixture(fixtures.MonkeyPatch(
            'nova.virt.libvirt.host.Host.get_memory_mb_total',
            lambda host: cells.cells * cells.memory_mb))
        host_info = fakelibvirt.HostInfo(
            cpu_nodes=cells.cells, cpu_sockets=1, cpu_cores=cells.vcpus,
            cpu_threads=1, kB_mem=cells.cells * cells.memory_mb * 1024)
        connection = fakelibvirt.Connection(
            'qemu:///system', version=fakelibvirt.FAKE_LIBVIRT_VERSION,
            hv_version=fakelibvirt.FAKE_QEMU_VERSION, host_info=host_info,
            hostname=hostname)
        self.start_compute(hostname=hostname, connection=connection)

    def _check(self, config_name, workload_name):
        workload = self.scenario.workloads[workload_name]
        frame = realise.settings(self.scenario, workloads=[workload_name])
        agg = realise.aggregate_name(config_name)
        test_planner_loop.apply_options(
            self, frame, 'compute', 'nova.conf of the hosts in %s' % agg,
            test_planner_loop.COMPUTE_OPTIONS)
        test_planner_loop.apply_options(
            self, frame, 'scheduler', 'nova.conf of the schedulers',
            test_planner_loop.SCHEDULER_OPTIONS)
        config = self.scenario.configs[config_name]
        cells = model.cell_sizing(config, self.scenario.policies)
        self.assertEqual(2, cells.cells)
        self._start_cells('node1', cells)
        self.start_numa_compute_aggregate(
            'node1', test_planner_loop.planned_aggregate(frame, agg))

        vcpus, ram_mb, specs, _disk = test_planner_loop.planned_flavor(
            frame, workload_name)
        self.assertEqual(str(workload.numa_nodes), specs['hw:numa_nodes'])
        flavor = self._create_flavor(
            name=workload_name, disk=1, ephemeral=0, extra_spec=specs,
            vcpu=vcpus, memory_mb=ram_mb)

        node = model.node(config, self.scenario.policies)
        planned, binding = vmsizing.density(node, workload,
                                            self.scenario.policies)
        self.assertGreater(planned, 0)
        admitted = self.fill(flavor, limit=planned + 2)
        self.assertEqual(
            planned, len(admitted),
            '%s (numa_nodes=%d) on %s: the planner counted %d (%s binds), '
            'Nova admitted %d' % (workload_name, workload.numa_nodes,
                                  config_name, planned, binding,
                                  len(admitted)))
        return planned, binding, admitted

    def test_memory_mode_one_cell(self):
        self._numa_workload('redis', 1)
        planned, binding, servers = self._check('mm-192-512', 'redis')
        self.assertIn('socket', binding)
        # Spread over both cells, as the per-socket count assumes.
        self.assertEqual({0, 1}, {cell for s in servers
                                  for cell in self.cells_of(s)})

    def test_memory_mode_one_cell_cache_binds(self):
        # A hotter Redis: each socket's DRAM cache binds.
        self._numa_workload('redis', 1, **{'pmem:hot_ratio': '0.45'})
        planned, binding, servers = self._check('mm-192-512', 'redis')
        self.assertIn('socket_dram_cache', binding)
        self.assertIn('on NUMA cell', self.pmem_log.output)

    def test_dram_two_cells(self):
        self._numa_workload('mysql', 2)
        planned, binding, servers = self._check('dram-384', 'mysql')
        for server in servers:
            self.assertEqual({0, 1}, set(self.cells_of(server)))
