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
"""Kernel tiering in real Nova: what NUMA-bound guests cost on a CXL host.

A libvirt compute on fake libvirt reports the NUMA topology of a
``cxl_kmem`` host: the DRAM of its two sockets in cells with CPUs, the CXL
memory onlined as system RAM in a CPU-less cell::

    cell 0   4 CPUs    8 GB DRAM
    cell 1   4 CPUs    8 GB DRAM
    cell 2   no CPUs  32 GB CXL

Its aggregate is what the planner emits for that host (``pmem_mode=
cxl_kmem``, ``pmem_dram_cache_gb=16``: the near memory is the DRAM, 8 GB
per cell with CPUs). A 2 GB, 1 vCPU flavor with ``pmem:hot_ratio=0.25``
is booted until NoValidHost, without and with ``hw:numa_nodes=1``: a
guest Nova does not bind charges its hot RAM (512 MB) to the near memory,
a bound one its whole RAM on its cell (the kernel neither promotes nor
demotes memory bound with ``<numatune mode="strict">``), and with
``pmem_kernel_tiering=off`` every guest charges its whole RAM.

Each count Nova admits must be the planner's (``vmsizing.density`` of the
node the planner describes the host with, and its simulator's,
``nova_pmem_filters.planner.simulate.engine``, which alone counts a mix of
flavors) and the core's (``decide.cache_check`` applied instance after
instance, on the cells Nova's spreading would choose). Memory is overcommitted
1.5 times (``ram_allocation_ratio``, the planner's ``memory_cap``) so that
Placement (36 guests) and NUMATopologyFilter (6 bound guests a cell) admit more
than the near memory does: every refusal must be PmemCacheFilter's, and
the scheduler's log says so. A ``memory_mode`` host of the same shape
(24 GB of PMem and 8 GB of DRAM cache per cell) guards the hardware-tiered
rule: there bound guests still charge their hot RAM only.

Nova 34 reports the CPU-less node as a host NUMA cell with empty
``cpuset`` and ``pcpuset`` whose memory counts in MEMORY_MB; its libvirt
driver warns that the host "appears to have multiple sockets per NUMA
node" (a cell without CPUs has no socket), which is harmless here.
"""

import re

from nova import objects

from nova_pmem_filters.core.formats import scenario_sections as sec
from nova_pmem_filters.core.rules import decide
from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import nearmem
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters.core.rules import tiering
from nova_pmem_filters.planner import model
from nova_pmem_filters.planner import scenario
from nova_pmem_filters.planner.simulate import engine
from nova_pmem_filters.planner import vmsizing
from tests.functional import numa_base

MB_PER_GB = profile.MB_PER_GB
CPU_CELLS = (0, 1)
FAR_CELL = 2
DRAM_GB_PER_CELL = 8
CXL_GB = 32
VISIBLE_GB = len(CPU_CELLS) * DRAM_GB_PER_CELL + CXL_GB
NEAR_GB = len(CPU_CELLS) * DRAM_GB_PER_CELL
CPUS = len(CPU_CELLS) * numa_base.CPUS_PER_CELL
FLAVOR_MB = 2048
HOT_RATIO = '0.25'
# nova.conf as nova-config would write it for these policies.
POLICIES = sec.resolved(sec.Policies(
    memory_cap=1.5, host_reserve_gb=0.0, cpu_overcommit=16.0,
    cache_overcommit=1.0))
FILTER_RESULTS = re.compile(
    r"Filtering removed all hosts for the request with instance ID "
    r"'(?P<uuid>[0-9a-f-]+)'\. Filter results: (?P<results>\[.*\])")
REFUSED_BY_CACHE = "'PmemCacheFilter: (start: 1, end: 0)'"
WHOLE_MB = FLAVOR_MB
HOT_MB = FLAVOR_MB * float(HOT_RATIO)
CELL_NEAR_MB = DRAM_GB_PER_CELL * MB_PER_GB


def host_refusal(used_mb, new_mb):
    """The end of PmemCacheFilter's line refusing the host as a whole."""
    return ('hot RAM %.0f MB + %.0f MB requested exceeds the DRAM-cache '
            'bound of %d MB (%d GB x cache_overcommit_ratio 1.0)'
            % (used_mb, new_mb, NEAR_GB * MB_PER_GB, NEAR_GB))


def cell_refusal(used_mb, new_mb, cell=0):
    """The end of PmemCacheFilter's line refusing the host for a cell."""
    return ('hot RAM %.0f MB + %.0f MB requested on NUMA cell %d exceeds '
            "the cell's DRAM-cache bound of %d MB (cache_overcommit_ratio "
            '1.0)' % (used_mb, new_mb, cell, CELL_NEAR_MB))


def _specs(bound):
    specs = {'pmem:modes': kinds.MEMORY_MODE, 'pmem:hot_ratio': HOT_RATIO}
    if bound:
        specs['hw:numa_nodes'] = '1'
    return specs


def workload(bound):
    """The planner's workload of the flavor, bound or not."""
    specs = _specs(bound)
    return scenario.Workload(
        name='bound' if bound else 'unbound', vcpus=1,
        ram_gb=FLAVOR_MB / float(MB_PER_GB),
        used_gb=FLAVOR_MB / float(MB_PER_GB), extra_specs=specs,
        request=extra_specs.parse(specs), numa_nodes=1 if bound else None)


def planner_node(mode=kinds.CXL_KMEM, kernel_tiering=None):
    """The planner's node for the host of this module.

    A ``memory_mode`` host of the same shape has the same near memory (its
    DRAM cache) and visible memory (its PMem, in the cells with CPUs).
    """
    return model.discovered_node(
        'host1', mode, visible_memory_gb=VISIBLE_GB, dram_cache_gb=NEAR_GB,
        vcpus=CPUS, sockets=len(CPU_CELLS), kernel_tiering=kernel_tiering)


class CoreCount(object):
    """Instances the core's cache rule admits, one after the other.

    Independently of Nova: a bound instance goes to the cell with CPUs
    that holds the fewest bound instances (the lowest id on a tie), as
    Nova's spreading places identical one-cell guests; PmemCacheFilter's
    rule (:func:`decide.cache_check`) decides each.
    """

    def __init__(self, prof):
        self.prof = prof
        self.used = nearmem.HotRam(0.0)
        self.cells = {cell: 0 for cell in CPU_CELLS}

    def add(self, bound):
        request = extra_specs.parse(_specs(bound))
        cell = min(self.cells, key=lambda c: (self.cells[c], c))
        fit = (lambda: {cell: FLAVOR_MB}) if bound else None
        passes, _reason, _view = decide.cache_check(
            self.prof, 1.0, self.used, request, FLAVOR_MB,
            cells=list(CPU_CELLS), fit=fit)
        if not passes:
            return False
        hot = request.hot_mb(FLAVOR_MB)
        if bound:
            self.cells[cell] += 1
            self.used.add(hot, ((cell, hot),), FLAVOR_MB,
                          ((cell, float(FLAVOR_MB)),))
        else:
            self.used.add(hot, None, FLAVOR_MB)
        return True

    def fill(self, bound, limit=100):
        """How many more instances the rule admits, booted until refused."""
        for count in range(limit):
            if not self.add(bound):
                return count
        raise AssertionError('the core admitted %d and more' % limit)


def simulated(prof, sequence, bound_last):
    """Boots the planner's simulator admits: ``sequence`` then more.

    :param sequence: ``[bound, ...]`` booted first (each must be placed).
    :param bound_last: whether the flavor then booted until refused binds.
    :returns: how many of the last flavor it placed.
    """
    host = engine.HostKind(
        name='host', profile=prof, vcpus=CPUS,
        memory_mb=VISIBLE_GB * MB_PER_GB, dram_gb=NEAR_GB,
        reserved_host_memory_mb=0,
        ram_allocation_ratio=POLICIES.memory_cap,
        cpu_allocation_ratio=POLICIES.cpu_overcommit)
    fleet = engine.Fleet([host])
    flavors = {bound: engine.Flavor('bound' if bound else 'unbound', 1,
                                    FLAVOR_MB, _specs(bound))
               for bound in (False, True)}
    for bound in sequence:
        index, reason = fleet.choose(flavors[bound])
        if index is None:
            raise AssertionError('the simulator refused a first boot: %s'
                                 % reason)
        fleet.claim(index, flavors[bound])
    for count in range(100):
        index, _reason = fleet.choose(flavors[bound_last])
        if index is None:
            return count
        fleet.claim(index, flavors[bound_last])
    raise AssertionError('the simulator never refused')


class KernelTieringTest(numa_base.NumaTestBase):

    def setUp(self):
        super(KernelTieringTest, self).setUp()
        # Read by the compute's first update (start_numa_compute).
        self.flags(ram_allocation_ratio=POLICIES.memory_cap,
                   cpu_allocation_ratio=POLICIES.cpu_overcommit)
        numa_base.report_memory_in_mb(self)
        self.flavors = {}

    def _start(self, mode=kinds.CXL_KMEM, kernel_tiering=None):
        """The host, labelled as the planner describes it; its node."""
        node = planner_node(mode, kernel_tiering)
        if mode == kinds.CXL_KMEM:
            host_info = numa_base.cpu_less_host(CXL_GB * MB_PER_GB)
        else:
            # The PMem is the memory of the cells with CPUs.
            host_info = numa_base.two_cell_host(
                VISIBLE_GB * MB_PER_GB // len(CPU_CELLS))
        self.start_numa_compute('host1', profile.to_metadata(node.profile),
                                host_info=host_info)
        return node

    def _flavor(self, bound):
        if bound not in self.flavors:
            self.flavors[bound] = self._create_flavor(
                memory_mb=FLAVOR_MB, vcpu=1, disk=1, ephemeral=0,
                extra_spec=_specs(bound))
        return self.flavors[bound]

    def _fill(self, bound, refusal, limit=64):
        """Boot until refused; the servers admitted.

        The refusal must be PmemCacheFilter's: Placement gave the host as
        a candidate and every filter before it, NUMATopologyFilter among
        them, kept it. Its reason, with the MB charged, must end with
        ``refusal``.
        """
        servers = []
        for _ in range(limit):
            server = self.boot(self._flavor(bound))
            if server['status'] == 'ACTIVE':
                servers.append(server)
                continue
            self.assertIn('No valid host', server['fault']['message'])
            self.assertEqual(REFUSED_BY_CACHE,
                             self._filter_results(server['id'])[-1])
            reasons = [line for line in self.pmem_log.output.splitlines()
                       if 'fails pmem cache check' in line]
            self.assertTrue(reasons, 'PmemCacheFilter logged no refusal')
            self.assertTrue(reasons[-1].endswith(refusal),
                            '%r does not end with %r'
                            % (reasons[-1], refusal))
            return servers
        self.fail('no NoValidHost after %d boots' % limit)

    def _filter_results(self, uuid):
        for match in FILTER_RESULTS.finditer(self.stdlog.logger.output):
            if match.group('uuid') == uuid:
                return re.findall(r"'[^']*'", match.group('results'))
        self.fail('no filter results for %s in the scheduler log' % uuid)

    def _cells(self, servers):
        """{host cell: bound servers} of the servers Nova bound."""
        cells = {}
        for server in servers:
            for cell in self.cells_of(server) or ():
                cells[cell] = cells.get(cell, 0) + 1
        return cells

    def _counts(self, node, bound):
        """(planner's count, its binding, core's count, simulator's).

        The planner's other limits (Placement's vCPUs and memory,
        NUMATopologyFilter's per cell) must admit more: the near memory
        binds.
        """
        work = workload(bound)
        planned, binding = vmsizing.density(node, work, POLICIES)
        others = {name: vms for name, vms in
                  vmsizing.limits(node, work, POLICIES).items()
                  if 'dram_cache' not in name}
        self.assertEqual({}, {name: vms for name, vms in others.items()
                              if vms <= planned})
        core = CoreCount(node.profile).fill(bound)
        sim = simulated(node.profile, (), bound)
        return planned, binding, core, sim

    def _assert_counts(self, admitted, planned, core, sim):
        self.assertEqual(
            (planned, planned, planned), (admitted, core, sim),
            'Nova admitted %d, the planner counted %d, the core %d, the '
            'simulator %d' % (admitted, planned, core, sim))

    def test_host_reports_a_cpu_less_cell(self):
        self._start()
        node = objects.ComputeNode.get_by_nodename(self.ctxt, 'host1')
        topology = objects.NUMATopology.obj_from_db_obj(node.numa_topology)
        cells = {cell.id: cell for cell in topology.cells}
        self.assertEqual([0, 1, FAR_CELL], sorted(cells))
        far = cells[FAR_CELL]
        self.assertEqual((set(), set()), (far.cpuset, far.pcpuset))
        self.assertEqual(CXL_GB * MB_PER_GB, far.memory)
        for cell in CPU_CELLS:
            self.assertEqual(DRAM_GB_PER_CELL * MB_PER_GB,
                             cells[cell].memory)
            self.assertEqual(numa_base.CPUS_PER_CELL,
                             len(cells[cell].cpuset))
        inventory = self._get_provider_inventory(
            self.compute_rp_uuids['host1'])
        self.assertEqual(VISIBLE_GB * MB_PER_GB,
                         inventory['MEMORY_MB']['total'])
        self.assertEqual(POLICIES.memory_cap,
                         inventory['MEMORY_MB']['allocation_ratio'])
        # The planner sizes the node's cells as Nova reports them: the
        # DRAM of a socket, not a share of the CXL memory.
        sizing = vmsizing.cells(planner_node())
        self.assertEqual((len(CPU_CELLS), DRAM_GB_PER_CELL * MB_PER_GB,
                          numa_base.CPUS_PER_CELL),
                         (sizing.cells, sizing.memory_mb, sizing.vcpus))

    def test_unbound_guests_charge_their_hot_ram(self):
        node = self._start()
        planned, binding, core, sim = self._counts(node, bound=False)
        # 16 GB of DRAM hold 32 hot 512 MB; Placement would take 36.
        self.assertEqual('dram_cache', binding)
        servers = self._fill(False, host_refusal(NEAR_GB * MB_PER_GB,
                                                 HOT_MB))
        self._assert_counts(len(servers), planned, core, sim)
        self.assertEqual({}, self._cells(servers))

    def test_bound_guests_charge_their_whole_ram(self):
        # pmem_kernel_tiering=on said, as absent elsewhere: the same.
        node = self._start(kernel_tiering=tiering.ON)
        planned, binding, core, sim = self._counts(node, bound=True)
        unbound, _binding = vmsizing.density(node, workload(False), POLICIES)
        # 8 GB of DRAM per cell hold 4 whole 2 GB guests, where
        # NUMATopologyFilter would take 6 (8 GB x 1.5).
        self.assertIn('dram_cache', binding)
        self.assertLess(planned, unbound)
        # Each charges its whole RAM to its cell.
        servers = self._fill(True, cell_refusal(CELL_NEAR_MB, WHOLE_MB))
        self._assert_counts(len(servers), planned, core, sim)
        # Spread over the cells with CPUs, never on the CPU-less one.
        half = planned // len(CPU_CELLS)
        self.assertEqual({0: half, 1: half}, self._cells(servers))
        self.assertIn('on NUMA cell', self.pmem_log.output)

    def test_bound_then_unbound(self):
        node = self._start()
        # One bound guest on each cell: 2 GB of each cell's 8 GB; the
        # unbound then charge 256 hot MB to each cell.
        bound = [self.boot(self._flavor(True)) for _ in CPU_CELLS]
        self.assertEqual(['ACTIVE'] * len(CPU_CELLS),
                         [server['status'] for server in bound])
        self.assertEqual({0: 1, 1: 1}, self._cells(bound))
        counted = CoreCount(node.profile)
        for _ in CPU_CELLS:
            self.assertTrue(counted.add(True))
        core = counted.fill(False)
        sim = simulated(node.profile, (True,) * len(CPU_CELLS), False)
        servers = self._fill(False, cell_refusal(CELL_NEAR_MB, HOT_MB / 2))
        # (16 GB - 2 x 2 GB) / 512 MB; 30 if the bound charged hot RAM.
        self.assertEqual((24, 24), (core, sim))
        self._assert_counts(len(servers), core, core, sim)
        # The cells are full: a bound guest is refused too.
        self.assertEqual([], self._fill(True, cell_refusal(CELL_NEAR_MB,
                                                           WHOLE_MB)))

    def test_tiering_off_charges_every_guest_whole(self):
        node = self._start(kernel_tiering=tiering.OFF)
        self.assertEqual(
            tiering.OFF, profile.to_metadata(node.profile)[
                profile.KERNEL_TIERING_KEY])
        planned, binding, core, sim = self._counts(node, bound=False)
        bound_planned = vmsizing.density(node, workload(True), POLICIES)[0]
        # The 16 GB of DRAM hold 8 whole guests, bound or not.
        self.assertEqual('dram_cache', binding)
        self.assertEqual(planned, bound_planned)
        servers = self._fill(False, host_refusal(NEAR_GB * MB_PER_GB,
                                                 WHOLE_MB))
        self._assert_counts(len(servers), planned, core, sim)
        self.assertEqual([], self._fill(True, cell_refusal(CELL_NEAR_MB,
                                                           WHOLE_MB)))

    def test_memory_mode_bound_guests_charge_hot_ram(self):
        # Hardware tiering: the DRAM cache holds hot lines whatever Nova
        # binds, so bound guests charge their hot RAM, cell by cell.
        node = self._start(mode=kinds.MEMORY_MODE)
        planned, binding, core, sim = self._counts(node, bound=True)
        self.assertIn('socket_dram_cache', binding)
        servers = self._fill(True, cell_refusal(CELL_NEAR_MB, HOT_MB))
        self._assert_counts(len(servers), planned, core, sim)
        half = planned // len(CPU_CELLS)
        self.assertEqual({0: half, 1: half}, self._cells(servers))
