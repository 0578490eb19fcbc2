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
"""A real Nova whose computes run the libvirt driver on fake libvirt.

The fake-driver computes of ``base.PmemTestBase`` have no NUMA topology;
these have one, as real hosts do: Nova's libvirt functional fixtures start
the libvirt driver on a fake libvirt connection, which reports the NUMA
cells, CPUs and memory of a ``fakelibvirt.HostInfo``. The scheduler runs
NUMATopologyFilter next to the pmem filters, as a NUMA-aware cloud does.
"""

import os
import sys

import fixtures
from nova import context as nova_context
from nova import objects
from nova.tests.fixtures import libvirt as fakelibvirt
from nova.tests.functional.libvirt import base as libvirt_base
from nova.virt.libvirt import config as vconfig

from nova_pmem_filters.core.rules import nearmem
from nova_pmem_filters.core.rules import profile
from tests.functional import base

LibvirtMigrationMixin = libvirt_base.LibvirtMigrationMixin

MB_PER_CELL = 8 * profile.MB_PER_GB
CPUS_PER_CELL = 4


def two_cell_host(mb_per_cell=MB_PER_CELL, cpus_per_cell=CPUS_PER_CELL):
    """A host of two NUMA cells (one socket each) of the given size."""
    return fakelibvirt.HostInfo(
        cpu_nodes=2, cpu_sockets=1, cpu_cores=cpus_per_cell, cpu_threads=1,
        kB_mem=2 * mb_per_cell * 1024)


def cpu_less_host(far_mb, mb_per_cell=MB_PER_CELL,
                  cpus_per_cell=CPUS_PER_CELL):
    """A two-cell host with a third, CPU-less, NUMA cell of ``far_mb``.

    As a ``cxl_kmem`` host reports itself: the CXL memory onlined as
    system RAM is a NUMA node of its own, with memory and no CPUs (cell
    2), after the DRAM of the two sockets (cells 0 and 1). Its memory
    counts in the host's total.
    """
    host_info = two_cell_host(mb_per_cell, cpus_per_cell)
    cells = host_info.numa_topology.cells
    far = vconfig.LibvirtConfigCapsNUMACell()
    far.id = len(cells)
    far.memory = far_mb * 1024
    far.mempages = fakelibvirt.create_mempages([(4, far.memory // 4)])
    cells.append(far)
    host_info.kB_mem += far.memory
    return host_info


def report_memory_in_mb(test):
    """Give Nova the host's memory in MB, as real libvirt does.

    Fake libvirt's ``getInfo()`` gives it in KiB, so that Placement's
    MEMORY_MB inventory is 1024 times the host's memory unless this is
    used: with it, Placement bounds the host's RAM as on a real host.
    """
    test.useFixture(fixtures.MonkeyPatch(
        'nova.virt.libvirt.host.Host.get_memory_mb_total',
        lambda host: host._get_hardware_info()[1] // 1024))


class NumaTestBase(libvirt_base.ServersTestBase):
    """Nova with libvirt computes, NUMATopologyFilter and the pmem classes.

    Hosts are started by each test with :meth:`start_numa_compute`. The
    allocation ratios are 1.0 for memory and 16.0 for CPUs, with no host
    memory reserved, so that each cell's limits are its size.
    """

    ADMIN_API = True
    microversion = 'latest'
    ADDITIONAL_FILTERS = ['NUMATopologyFilter', 'PmemModeFilter',
                          'PmemCacheFilter']

    def setUp(self):
        self.flags(available_filters=base.AVAILABLE_FILTERS,
                   weight_classes=base.WEIGHT_CLASSES,
                   track_instance_changes=True, group='filter_scheduler')
        self.flags(api_paste_config=os.path.join(
            sys.prefix, 'etc', 'nova', 'api-paste.ini'), group='wsgi')
        self.flags(ram_allocation_ratio=1.0, cpu_allocation_ratio=16.0,
                   reserved_host_memory_mb=0,
                   service_down_time=base.SERVICE_DOWN_TIME)
        base.fresh_process_state(self)
        super(NumaTestBase, self).setUp()
        base.capture_pmem_logs(self)
        self.flags(instances=-1, cores=-1, ram=-1, group='quota')
        self.ctxt = nova_context.get_admin_context()
        self._builds = 0
        self._deletes = 0

    def _assert_pmem_code_never_failed(self):
        self.assertNotIn('unexpected error', self.pmem_log.output)
        self.assertNotIn('differ from the database', self.pmem_log.output)
        self.assertNotRegex(self.stdlog.logger.output,
                            r'File "[^"]*nova_pmem_filters[/\\]')

    # -- hosts and aggregates ------------------------------------------------

    def start_numa_compute(self, hostname, metadata, host_info=None):
        """Start a two-cell libvirt compute in an aggregate of its own."""
        self.start_compute(hostname=hostname,
                           host_info=host_info or two_cell_host())
        return self.start_numa_compute_aggregate(hostname, metadata)

    def start_numa_compute_aggregate(self, hostname, metadata):
        """Put a started compute in an aggregate of its own.

        First one update of the compute's resources: a new compute node
        gets Nova's ``initial_*_allocation_ratio``, and the configured
        ratios only with the next update (the periodic task).

        With a context of its own: the resource tracker keeps the compute
        node record with the context it was read with and writes it back
        with that context on every claim, while the test reads the
        database with ``self.ctxt``. oslo.db keeps a context's transaction
        per thread; under eventlet, a context shared with the test could
        find the test's read transaction open when a build claims
        ("Can't upgrade a READER transaction to a WRITER").
        """
        self.computes[hostname].manager.update_available_resource(
            nova_context.get_admin_context())
        agg = self.admin_api.post_aggregate(
            {'aggregate': {'name': 'agg-%s' % hostname}})
        self.admin_api.post_aggregate_action(
            agg['id'], {'set_metadata': {'metadata': dict(metadata)}})
        self.admin_api.add_host_to_aggregate(agg['id'], hostname)
        return hostname

    # -- flavors and servers -------------------------------------------------

    def create_flavor(self, memory_mb, vcpus=1, numa_nodes=None,
                      hot_ratio='0.5', extra=None):
        specs = {'pmem:modes': 'memory_mode', 'pmem:hot_ratio': hot_ratio}
        if extra and 'pmem:modes' in extra:
            # Not a memory_mode flavor: no hot ratio.
            specs = {}
        if numa_nodes:
            specs['hw:numa_nodes'] = str(numa_nodes)
        specs.update(extra or {})
        return self._create_flavor(memory_mb=memory_mb, vcpu=vcpus, disk=1,
                                   ephemeral=0,
                                   extra_spec=specs)

    def boot(self, flavor_id, host=None):
        """Boot a server; return it ACTIVE or ERROR (NoValidHost)."""
        body = self._build_server(flavor_id=flavor_id, networks='none',
                                  image_uuid=base.IMAGE)
        if host:
            body['host'] = host
        server = self.api.post_server({'server': body})
        return base.scheduler_told_of_boot(
            self, self.wait_for(server, ('ACTIVE', 'ERROR')))

    def delete(self, server):
        base.delete_told_to_scheduler(self, server)

    def wait_for(self, server, states, max_retries=1000):
        return base.wait_for_status(self, server, states, max_retries)

    def fill(self, flavor_id, limit=64):
        """Boot until NoValidHost; the servers that became ACTIVE."""
        servers = []
        for _ in range(limit):
            server = self.boot(flavor_id)
            if server['status'] != 'ACTIVE':
                self.assertIn('No valid host', server['fault']['message'])
                return servers
            servers.append(server)
        self.fail('no NoValidHost after %d boots' % limit)

    # -- what Nova recorded --------------------------------------------------

    def host_of(self, server):
        return self.api.get_server(server['id'])['OS-EXT-SRV-ATTR:host']

    def cells_of(self, server):
        """{host cell: memory MB} Nova claimed for a server (None: floats)."""
        topology = objects.InstanceNUMATopology.get_by_instance_uuid(
            self.ctxt, server['id'])
        if topology is None:
            return None
        cells = {}
        for cell in topology.cells:
            cells[cell.id] = cells.get(cell.id, 0) + cell.memory
        return cells

    def hot_per_cell(self, servers, capacities, hot_ratio):
        """Hot MB charged to each cell by ``servers`` (the cache model)."""
        floating = 0.0
        bound = {}
        for server in servers:
            cells = self.cells_of(server)
            if cells is None:
                flavor = self.api.get_server(server['id'])['flavor']
                floating += flavor['ram'] * hot_ratio
                continue
            for cell, mb in cells.items():
                bound[cell] = bound.get(cell, 0.0) + mb * hot_ratio
        return nearmem.cell_usage_mb(floating, bound, capacities)

    def assert_within_cells(self, servers, capacities, hot_ratio):
        used = self.hot_per_cell(servers, capacities, hot_ratio)
        for cell, mb in used.items():
            self.assertTrue(nearmem.fits_cache(mb, 0, capacities[cell]),
                            'cell %d holds %s MB of hot RAM, more than its '
                            'cache of %s MB' % (cell, mb, capacities[cell]))
        return used
