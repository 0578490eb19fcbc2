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
"""PmemCacheFilter on two-cell hosts: each socket's DRAM caches its own PMem.

Every host here has two NUMA cells of 8 GB and 4 CPUs (libvirt on fake
libvirt) and a DRAM cache of 4 GB, 2 GB per cell unless the aggregate says
otherwise. A 1 GB flavor with ``pmem:hot_ratio=0.5`` charges 512 MB of hot
RAM, so a cell's cache holds 4 such instances while its memory holds 8: the
cache binds, and the filter must stop each cell at its own cache.
"""

from unittest import mock

from nova.tests.functional.api import client

from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import nearmem
from nova_pmem_filters.core.rules import profile
from tests.functional import numa_base

CACHE_GB = 4
MM = {profile.MODE_KEY: kinds.MEMORY_MODE,
      profile.DRAM_CACHE_KEY: str(CACHE_GB)}
HOT = 0.5
EVEN = {0: CACHE_GB * profile.MB_PER_GB / 2.0,
        1: CACHE_GB * profile.MB_PER_GB / 2.0}


class NumaCacheTest(numa_base.NumaTestBase):

    def _fill_bound(self, metadata, capacities, pack):
        self.flags(packing_host_numa_cells_allocation_strategy=pack,
                   group='compute')
        self.start_numa_compute('mm1', metadata)
        flavor = self.create_flavor(1024, numa_nodes=1)
        servers = self.fill(flavor)
        used = self.assert_within_cells(servers, capacities, HOT)
        return servers, used

    def test_spread_fills_each_cell_cache(self):
        # Nova's default spreads: each boot goes to the cell with the fewer
        # CPUs in use, so both cells fill, each to its own cache.
        servers, used = self._fill_bound(MM, EVEN, pack=False)
        per_cell = nearmem.instances_in_cache(EVEN[0], 1024 * HOT)
        self.assertEqual(4, per_cell)
        self.assertEqual(2 * per_cell, len(servers))
        self.assertEqual({0: EVEN[0], 1: EVEN[1]}, used)
        self.assertIn('on NUMA cell', self.pmem_log.output)

    def test_pack_stops_at_the_first_cells_cache(self):
        # Packing, Nova claims the fuller cell as long as its memory and
        # CPUs allow (8 instances here); the filter must refuse the host
        # once that cell's cache is full, although the other cell's cache
        # is empty: the instance would land on the full one.
        servers, used = self._fill_bound(MM, EVEN, pack=True)
        per_cell = nearmem.instances_in_cache(EVEN[0], 1024 * HOT)
        self.assertEqual(per_cell, len(servers))
        self.assertEqual({0}, {cell for s in servers
                               for cell in self.cells_of(s)})
        self.assertEqual({0: EVEN[0], 1: 0.0}, used)

    def test_per_cell_sizes_from_the_aggregate(self):
        # 1 GB on cell 0 and 3 GB on cell 1. Spreading, Nova alternates
        # cells; once cell 0's cache is full, the next instance would be
        # claimed there again (fewer CPUs in use), so the host is refused.
        metadata = dict(MM)
        metadata[profile.DRAM_CACHE_PER_CELL_KEY] = '0:1,1:3'
        capacities = {0: 1024.0, 1: 3072.0}
        servers, used = self._fill_bound(metadata, capacities, pack=False)
        self.assertEqual(
            2 * nearmem.instances_in_cache(capacities[0], 1024 * HOT),
            len(servers))
        self.assertEqual({0: 1024.0, 1: 1024.0}, used)

    def test_per_cell_sizes_naming_other_cells(self):
        metadata = dict(MM)
        metadata[profile.DRAM_CACHE_PER_CELL_KEY] = '0:2,2:2'
        self.start_numa_compute('mm1', metadata)
        flavor = self.create_flavor(1024, numa_nodes=1)
        server = self.boot(flavor)
        self.assertEqual('ERROR', server['status'])
        self.assertIn("names cells 0,2 but the host has NUMA cells 0,1",
                      self.pmem_log.output)

    def test_floating_and_bound_share_the_caches(self):
        # Two floating 2 GB instances charge 512 MB to each cell; NUMA-bound
        # 1 GB instances then fit 3 per cell; a floating instance needs room
        # on both cells.
        self.start_numa_compute('mm1', MM)
        floating = self.create_flavor(2048)
        bound = self.create_flavor(1024, numa_nodes=1)
        servers = [self.boot(floating), self.boot(floating)]
        self.assertEqual([None, None], [self.cells_of(s) for s in servers])
        used = self.assert_within_cells(servers, EVEN, HOT)
        self.assertEqual({0: 1024.0, 1: 1024.0}, used)
        expected = sum(nearmem.instances_in_cache(EVEN[cell] - used[cell],
                                                  1024 * HOT)
                       for cell in EVEN)
        self.assertEqual(2, expected // 2)
        servers += self.fill(bound)
        self.assertEqual(2 + expected, len(servers))
        used = self.assert_within_cells(servers, EVEN, HOT)
        self.assertEqual(EVEN, used)
        # The caches are full: a small floating instance is refused too.
        small = self.create_flavor(512)
        self.assertEqual('ERROR', self.boot(small)['status'])

    def test_floating_only_matches_the_host_wide_bound(self):
        # Without NUMA-bound instances the per-cell model admits what the
        # host-wide bound admits.
        self.start_numa_compute('mm1', MM)
        floating = self.create_flavor(1024)
        servers = self.fill(floating)
        self.assertEqual(nearmem.instances_in_cache(
            CACHE_GB * profile.MB_PER_GB, 1024 * HOT), len(servers))
        self.assertEqual(EVEN, self.assert_within_cells(servers, EVEN, HOT))


class NumaMoveTest(numa_base.LibvirtMigrationMixin, numa_base.NumaTestBase):
    """Resize and live migration keep each cell within its cache."""

    def setUp(self):
        super(NumaMoveTest, self).setUp()
        self.start_numa_compute('mm1', MM)
        self.start_numa_compute('mm2', MM)
        self.small = self.create_flavor(1024, numa_nodes=1)
        self.server = self.boot(self.small, host='mm1')
        self.assertEqual('mm1', self.host_of(self.server))
        # mm2's caches full: 4 instances of 512 hot MB per cell.
        self.on_mm2 = [self.boot(self.small, host='mm2') for _ in range(8)]
        self.assertEqual(['ACTIVE'] * 8,
                         [s['status'] for s in self.on_mm2])
        self.assertEqual(EVEN, self.assert_within_cells(self.on_mm2, EVEN,
                                                        HOT))
        self.assertEqual('ERROR', self.boot(self.small, host='mm2')['status'])

    def _free_on_mm2(self, cell, count):
        doomed = [s for s in self.on_mm2 if cell in self.cells_of(s)][:count]
        for server in doomed:
            self.delete(server)
            self.on_mm2.remove(server)

    def _assert_mm2_full(self, moved):
        servers = self.on_mm2 + [moved]
        used = self.assert_within_cells(servers, EVEN, HOT)
        self.assertEqual(EVEN, used)
        self.assertEqual('ERROR', self.boot(self.small, host='mm2')['status'])

    def test_resize_keeps_the_bound(self):
        big = self.create_flavor(2048, numa_nodes=1)
        # RPC casts are calls here, so NoValidHost reaches the API.
        error = self.assertRaises(
            client.OpenStackApiException, self.api.post_server_action,
            self.server['id'], {'resize': {'flavorRef': big}})
        self.assertIn('NoValidHost', str(error))
        server = self.wait_for(self.server, ('ACTIVE',))
        self.assertEqual('mm1', self.host_of(server))
        self.assertEqual(1024, server['flavor']['ram'])
        self.assertIn('on NUMA cell', self.pmem_log.output)

        # Room for 1024 hot MB on cell 1: the resized instance fits there,
        # and Nova claims cell 1 (fewer CPUs in use).
        self._free_on_mm2(1, 2)
        # Fake libvirt has no disks to move.
        with mock.patch('nova.virt.libvirt.driver.LibvirtDriver.'
                        'migrate_disk_and_power_off', return_value='{}'):
            self.api.post_server_action(self.server['id'],
                                        {'resize': {'flavorRef': big}})
        server = self.wait_for(self.server, ('VERIFY_RESIZE',))
        self.assertEqual('mm2', self.host_of(server))
        self.assertEqual({1: 2048}, self.cells_of(server))
        server = self._confirm_resize(server)
        self._assert_mm2_full(server)

    def test_live_migration_keeps_the_bound(self):
        self.src = self.computes['mm1']
        self.dest = self.computes['mm2']
        error = self.assertRaises(
            client.OpenStackApiException, self.api.post_server_action,
            self.server['id'],
            {'os-migrateLive': {'host': None, 'block_migration': 'auto'}})
        self.assertIn('NoValidHost', str(error))
        self.assertEqual('ACTIVE', self.wait_for(self.server,
                                                 ('ACTIVE',))['status'])
        self.assertEqual('mm1', self.host_of(self.server))
        self.assertFalse(self.migrate_stub_ran)

        self._free_on_mm2(1, 1)
        server = self._live_migrate(self.server)
        self.assertTrue(self.migrate_stub_ran)
        self.assertEqual('mm2', self.host_of(server))
        self.assertEqual({1: 1024}, self.cells_of(server))
        self._assert_mm2_full(server)


class NumaWeigherTest(numa_base.NumaTestBase):
    """The weighers look at the cells a NUMA-bound instance would use.

    Nova's RAMWeigher is left on and set against the expected choice (the
    preferred host always has less free RAM), so the pmem weigher must
    outweigh it. Nova's other weighers are off: the I/O-ops weigher, for
    one, sees a build in flight until the compute's next update.
    """

    def setUp(self):
        self.flags(disk_weight_multiplier=0.0, cpu_weight_multiplier=0.0,
                   io_ops_weight_multiplier=0.0,
                   hypervisor_version_weight_multiplier=0.0,
                   group='filter_scheduler')
        super(NumaWeigherTest, self).setUp()

    def test_headroom_of_the_claimed_cell(self):
        self.flags(cache_headroom_weight_multiplier=8.0, group='pmem')
        self.start_numa_compute('mm1', MM)
        self.start_numa_compute('mm2', MM)
        # mm1: 1536 hot MB on cell 0 only; mm2: 512 on each cell.
        big = self.create_flavor(3072, vcpus=2, numa_nodes=1)
        small = self.create_flavor(1024)
        self.assertEqual('mm1', self.host_of(self.boot(big, host='mm1')))
        for _ in range(2):
            self.assertEqual('mm2',
                             self.host_of(self.boot(small, host='mm2')))
        # A NUMA-bound instance goes to mm1's empty cell 1 (headroom 0.75
        # after it) rather than a cell of mm2 (0.5), although the host-wide
        # headroom (0.5 against 0.625) and free RAM favour mm2.
        bound = self.create_flavor(1024, numa_nodes=1)
        server = self.boot(bound)
        self.assertEqual('mm1', self.host_of(server))
        self.assertEqual({1: 1024}, self.cells_of(server))
        self.delete(server)
        # A floating instance charges both cells: mm1's cell 0 would keep
        # 0.125 of its cache, mm2's cells 0.625 each.
        self.assertEqual('mm2', self.host_of(self.boot(small)))

    def test_high_priority_gets_the_least_loaded_cells(self):
        self.flags(numa_cell_weight_multiplier=4.0, group='pmem')
        dram = {profile.MODE_KEY: kinds.DRAM}
        self.start_numa_compute('dram1', dram)
        self.start_numa_compute('dram2', dram)
        specs = {'pmem:modes': 'dram'}
        # dram1: 7 GB on cell 0 and none on cell 1; dram2: 3 GB on each
        # cell, so 1 GB more free RAM than dram1.
        seven = self.create_flavor(7168, vcpus=2, numa_nodes=1, extra=specs)
        three = self.create_flavor(3072, numa_nodes=1, extra=specs)
        self.boot(seven, host='dram1')
        self.boot(three, host='dram2')
        self.boot(three, host='dram2')
        high = dict(specs, **{'pmem:priority': 'high'})
        normal = self.create_flavor(1024, numa_nodes=1, extra=specs)
        important = self.create_flavor(1024, numa_nodes=1, extra=high)
        # Normal priority: RAMWeigher alone decides, for dram2.
        server = self.boot(normal)
        self.assertEqual('dram2', self.host_of(server))
        self.delete(server)
        # High priority: dram1's cell 1 would be 1/8 loaded, dram2's cells
        # 4/8; 4 x (0.875 - 0.5) outweighs RAMWeigher's 1.0.
        server = self.boot(important)
        self.assertEqual('dram1', self.host_of(server))
        self.assertEqual({1: 1024}, self.cells_of(server))
