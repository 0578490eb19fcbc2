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
"""PmemCacheFilter on hosts whose tiering the kernel does (cxl_kmem).

The same host, the same instances: as ``memory_mode`` (the hardware tiers)
each instance charges its hot RAM; as ``cxl_kmem`` a NUMA-bound instance
charges its whole RAM on its cell, and with ``pmem_kernel_tiering=off``
every instance does.
"""

from oslo_utils.fixture import uuidsentinel as uuids

from nova import objects

from nova_pmem_filters.core.rules import profile
from tests.unit import fakes
from tests.unit import test_numa_cells as numa_cells

QUARTER = {'pmem:hot_ratio': '0.25'}
# 4 GB of near memory, 2 GB on each of two cells.
CELLS = {profile.DRAM_CACHE_KEY: '4',
         profile.DRAM_CACHE_PER_CELL_KEY: '0:2,1:2'}
MM = dict(CELLS, pmem_mode='memory_mode')
KMEM = dict(CELLS, pmem_mode='cxl_kmem')
KMEM_OFF = dict(KMEM, **{profile.KERNEL_TIERING_KEY: 'off'})


class KernelTieredFilterTestCase(numa_cells._NumaHostTestCase):

    def floating_instance(self, uuid, memory_mb):
        full = objects.Instance(self.ctxt, uuid=uuid, deleted=False,
                                flavor=fakes.flavor(memory_mb, QUARTER),
                                numa_topology=None)
        self.db[uuid] = full
        return objects.Instance(self.ctxt, uuid=uuid)

    def bound_host(self, name, metadata):
        """A 2048 MB NUMA-bound instance, a quarter hot, on cell 0."""
        inst = self.bound_instance(getattr(uuids, name), {0: 2048}, QUARTER)
        return numa_cells.numa_host(name, [metadata], [inst],
                                    usage=(2048, 0))

    def test_a_bound_instance_charges_its_whole_ram(self):
        # A floating request charges each cell 128 MB: on memory_mode cell
        # 0 holds 512 hot MB, on cxl_kmem the bound instance's 2048 MB.
        hosts = [self.bound_host('mm', MM), self.bound_host('kmem', KMEM)]
        self.assertEqual(['mm'], self._passing(
            hosts, fakes.request_spec(QUARTER, memory_mb=1024)))
        self.assertIn('on NUMA cell 0 exceeds', self.log_lines('DEBUG')[0])

    def test_a_bound_request_charges_its_whole_ram(self):
        # 2048 MB bound, a quarter hot: Nova fits it on the empty cell 1,
        # whose 2048 MB it fills exactly on cxl_kmem; 2049 MB does not fit.
        hosts = [numa_cells.numa_host('mm', [MM]),
                 numa_cells.numa_host('kmem', [KMEM])]
        self.assertEqual(['mm', 'kmem'], self._passing(
            hosts, numa_cells.numa_spec(QUARTER, memory_mb=2048)))
        hosts = [numa_cells.numa_host('mm', [MM]),
                 numa_cells.numa_host('kmem', [KMEM])]
        self.assertEqual(['mm'], self._passing(
            hosts, numa_cells.numa_spec(QUARTER, memory_mb=2049)))

    def test_tiering_off_charges_every_instance_its_whole_ram(self):
        def hosts():
            return [
                numa_cells.numa_host(name, [meta], [self.floating_instance(
                    getattr(uuids, name), 3072)], usage=(1536, 1536))
                for name, meta in (('on', KMEM), ('off', KMEM_OFF))]
        # On: 768 hot MB there; off: 3072 MB of the 4096.
        self.assertEqual(['on', 'off'], self._passing(
            hosts(), fakes.request_spec(QUARTER, memory_mb=1024)))
        self.assertEqual(['on'], self._passing(
            hosts(), fakes.request_spec(QUARTER, memory_mb=1025)))
        self.assertIn('hot RAM 3072 MB + 1025 MB requested exceeds the '
                      'DRAM-cache bound of 4096 MB',
                      self.log_lines('DEBUG')[-1])

    def test_placement_accounting_does_not_hide_it(self):
        # The flavor asks Placement for its hot MB; on cxl_kmem hosts the
        # filter still counts, since bound instances charge more.
        specs = dict(QUARTER, **{'resources:CUSTOM_NEAR_MEMORY_MB': '256'})
        hosts = [self.bound_host('mm', MM), self.bound_host('kmem', KMEM)]
        self.assertEqual(['mm'], self._passing(
            hosts, fakes.request_spec(specs, memory_mb=1024)))

    def test_the_ledger_records_whole_ram(self):
        host = self.bound_host('kmem', KMEM)
        usage = self.ledger.usage_by_host([host])[('kmem', 'kmem-node')]
        self.assertEqual((512.0, {0: 512.0}, 2048.0, {0: 2048.0}),
                         (usage.total, usage.bound, usage.ram,
                          usage.bound_ram))
