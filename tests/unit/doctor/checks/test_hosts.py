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
"""The checks of each host, its hot RAM host-wide and per NUMA cell."""

import dataclasses


from nova_pmem_filters.core.formats import discoveredhost


from nova_pmem_filters.core.formats import hostfile
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import placement
from nova_pmem_filters.doctor import checks
from tests.unit.doctor import cases


class HostTestCase(cases.DoctorTestCase):

    def test_discovered_mode_differs(self):
        fleet = tuple(cases.discovered(h, mode=kinds.DRAM) if h == 'mm2'
                      else cases.discovered(h) for h in sorted(cases.HOSTS))
        # The host's provider config came from the same discovery: its
        # trait says dram, its near memory is its 192 GB of DRAM.
        snap = cases.with_provider(
            cases.replace(cases.clean(), fleet=fleet), 'mm2',
            traits=cases.provider('mm2', fleet[3]).traits)
        found = self.assertFindings(
            snap, (checks.ERROR, 'profile-mismatch', 'host mm2'))
        self.assertIn('aggregates say memory_mode but discovery',
                      found[('profile-mismatch', 'host mm2')].problem)

    def test_discovered_cache_differs(self):
        for cache, severity in ((128, checks.ERROR), (256, checks.WARNING)):
            fleet = tuple(cases.discovered(h, cache_gb=cache) if h == 'mm1'
                          else cases.discovered(
                              h) for h in sorted(cases.HOSTS))
            snap = cases.replace(cases.clean(), fleet=fleet)
            # Placement offers what discovery found: it disagrees with the
            # label, not with the hardware.
            snap = cases.with_provider(snap, 'mm1', inventories=cases.provider(
                'mm1', cases.discovered('mm1', cache_gb=cache)).inventories)
            self.assertFindings(snap, (severity, 'profile-mismatch',
                                       'host mm1'))

    def test_mode_traits(self):
        snap = cases.with_provider(cases.clean(), 'mm1', traits=frozenset(
            ['COMPUTE_NODE', 'CUSTOM_PMEM_MODE_DRAM']))
        found = self.assertFindings(
            snap, (checks.WARNING, 'mode-trait-mismatch', 'host mm1'))
        self.assertIn('expected CUSTOM_PMEM_MODE_MEMORY_MODE (from '
                      'discovery)',
                      found[('mode-trait-mismatch', 'host mm1')].problem)
        # Without discovery, the aggregate label is what traits must say.
        found = self.assertFindings(
            cases.replace(snap, fleet=None),
            (checks.WARNING, 'mode-trait-mismatch', 'host mm1'))
        self.assertIn('from its aggregates',
                      found[('mode-trait-mismatch', 'host mm1')].problem)

    def test_mixed_host_traits(self):
        mixed = dataclasses.replace(cases.discovered('mm1'),
                                    hardware_mode=hostfile.MIXED)
        fleet = tuple(mixed if h == 'mm1' else cases.discovered(h)
                      for h in sorted(cases.HOSTS))
        snap = cases.with_provider(
            cases.replace(cases.clean(), fleet=fleet), 'mm1',
            traits=cases.provider('mm1', mixed).traits)
        self.assertFindings(snap)
        self.assertFindings(cases.replace(snap, fleet=None))

    def test_near_memory_inventory_missing(self):
        inventories = {'VCPU': {'total': 80}}
        snap = cases.with_provider(
            cases.clean(), 'ad1', inventories=inventories)
        found = self.assertFindings(
            snap, (checks.ERROR, 'near-memory-inventory-missing', 'host ad1'))
        self.assertIn('capacity, small', found[(
            'near-memory-inventory-missing', 'host ad1')].problem)
        # No flavor requests it: not needed.
        plain = cases.replace(snap, flavors=(cases.flavor('small', 2),),
                              config=cases.config(scheduler_workers=1))
        self.assertFindings(plain)

    def test_near_memory_inventory_amount(self):
        inv = dict(cases.clean().providers['mm1'].inventories)
        inv[placement.NEAR_MEMORY_RC] = dict(inv[placement.NEAR_MEMORY_RC],
                                             total=256 * cases.GB)
        found = self.assertFindings(
            cases.with_provider(cases.clean(), 'mm1', inventories=inv),
            (checks.ERROR, 'near-memory-inventory-mismatch', 'host mm1'))
        self.assertIn('admits more', found[(
            'near-memory-inventory-mismatch', 'host mm1')].problem)
        inv[placement.NEAR_MEMORY_RC] = dict(inv[placement.NEAR_MEMORY_RC],
                                             total=192 * cases.GB,
                                             allocation_ratio=0.5)
        self.assertFindings(
            cases.with_provider(cases.clean(), 'mm1', inventories=inv),
            (checks.WARNING, 'near-memory-inventory-mismatch', 'host mm1'))
        # With an overcommitted cache, the inventory is too.
        snap = cases.replace(
            cases.clean(), config=cases.config(cache_overcommit_ratio=1.5))
        self.assertFindings(
            snap, (checks.WARNING, 'near-memory-inventory-mismatch',
                   'host mm1'),
            (checks.WARNING, 'near-memory-inventory-mismatch', 'host mm2'))
        inv[placement.NEAR_MEMORY_RC] = dict(inv[placement.NEAR_MEMORY_RC],
                                             allocation_ratio=1.5)
        self.assertFindings(
            cases.with_provider(snap, 'mm1', inventories=inv),
            (checks.WARNING, 'near-memory-inventory-mismatch', 'host mm2'))
        # The DRAM of a dram host, known from discovery only.
        inv = dict(cases.clean().providers['dram1'].inventories)
        inv[placement.NEAR_MEMORY_RC] = dict(inv[placement.NEAR_MEMORY_RC],
                                             total=128 * cases.GB)
        snap = cases.with_provider(cases.clean(), 'dram1', inventories=inv)
        self.assertFindings(snap, (checks.WARNING,
                                   'near-memory-inventory-mismatch',
                                   'host dram1'))
        self.assertFindings(cases.replace(snap, fleet=None))

    def test_cache_overcommitted(self):
        # 192 GB of cache: 24 instances of 32 GB at 0.25 fit, 25 do not.
        fits = tuple(cases.server('c%02d' % i, 'mm1', 32, **{
            'pmem:hot_ratio': '0.25'}) for i in range(24))
        self.assertFindings(cases.replace(cases.clean(), servers=fits))
        over = fits + (cases.server('c24', 'mm1', 32, **{
            'pmem:hot_ratio': '0.25'}),)
        found = self.assertFindings(
            cases.replace(cases.clean(), servers=over),
            (checks.ERROR, 'cache-overcommitted', 'host mm1'))
        problem = found[('cache-overcommitted', 'host mm1')].problem
        self.assertIn('204800 MB', problem)
        self.assertIn('196608 MB', problem)
        self.assertIn('c00 (id-c00, 8192 MB hot)', problem)
        self.assertIn('and 15 more', problem)

    def test_invalid_specs_of_placed_instances_count_all_ram(self):
        # As PmemCacheFilter counts them: 200 GB of RAM, all hot.
        snap = cases.replace(cases.clean(), servers=(
            cases.server('old', 'mm2', 200, **{'pmem:hot_ratio': 'lots'}),))
        self.assertFindings(snap, (checks.ERROR, 'cache-overcommitted',
                                   'host mm2'))

    def test_lowered_cache_overcommits_placed_instances(self):
        servers = tuple(cases.server('c%d' % i, 'mm1', 32, **{
            'pmem:hot_ratio': '0.25'}) for i in range(20))
        snap = cases.replace(cases.clean(), servers=servers, fleet=None)
        self.assertFindings(snap)
        smaller = cases.with_aggregate(
            snap, 'pmem-mm', pmem_dram_cache_gb='128')
        found = self.assertFindings(
            smaller, (checks.ERROR, 'cache-overcommitted', 'host mm1'),
            (checks.ERROR, 'near-memory-inventory-mismatch', 'host mm1'),
            (checks.ERROR, 'near-memory-inventory-mismatch', 'host mm2'))
        finding = found[('cache-overcommitted', 'host mm1')]
        self.assertIn('c0 (id-c0', finding.problem)
        # The clean cloud's flavors request near memory from Placement, and
        # mm1 still offers 192 GB of it: new boots of those flavors are not
        # held to 128 GB until the inventory is lowered too.
        self.assertNotIn('new boots already respect it', finding.fix)
        self.assertIn('Placement still admits flavors requesting '
                      'CUSTOM_NEAR_MEMORY_MB (capacity, small)', finding.fix)
        self.assertIn('total: 131072', finding.fix)
        self.assertIn('restart nova-compute', finding.fix)

    def test_lowered_cache_without_placement_accounting(self):
        # Filter-only accounting: PmemCacheFilter reads the new size at
        # once, so new boots do respect it.
        servers = tuple(cases.server('c%d' % i, 'mm1', 32, **{
            'pmem:hot_ratio': '0.25'}) for i in range(20))
        snap = cases.replace(cases.clean(), servers=servers, fleet=None)
        snap = cases.replace(snap, flavors=tuple(
            cases.flavor(f.name, f.ram_mb // cases.GB, **{
                k: v for k, v in f.extra_specs.items() if k != cases.NEAR})
            for f in snap.flavors))
        smaller = cases.with_aggregate(
            snap, 'pmem-mm', pmem_dram_cache_gb='128')
        fixes = [f.fix for f in self.findings(smaller)
                 if f.code == 'cache-overcommitted']
        self.assertEqual(1, len(fixes))
        self.assertIn('new boots already respect it', fixes[0])

    def test_fleet_host_not_in_the_cloud(self):
        extra = discoveredhost.DiscoveredHost(
            source='fleet/mm9.json', hostname='mm9', hardware_mode='dram',
            mode='dram', visible_memory_gb=384.0, dram_cache_gb=0.0,
            dram_gb=384.0)
        snap = cases.replace(
            cases.clean(), fleet=cases.clean().fleet + (extra,))
        self.assertFindings(snap, (checks.INFO, 'fleet-host-unknown',
                                   'host mm9'))


class CellCacheUseTestCase(cases.DoctorTestCase):
    """The hot RAM placed on each NUMA cell, as PmemCacheFilter bounds it.

    mm1 has 192 GB of cache: 96 GB per cell. Four servers bound to cell 0
    with 32 GB all hot hold 128 GB there, while the host-wide sum, 128 GB,
    fits: the doctor used to see nothing.
    """

    CELL0 = 'host mm1 (NUMA cell 0)'

    def crowded(self, *extra):
        return tuple(cases.bound_server('b%d' % i, 'mm1', {0: 32})
                     for i in range(4)) + extra

    def test_a_full_cell_with_known_cells(self):
        snap = cases.with_aggregate(
            cases.replace(cases.clean(), servers=self.crowded()), 'pmem-mm',
            pmem_dram_cache_gb_per_cell='0:96,1:96')
        found = self.assertFindings(
            snap, (checks.ERROR, 'cache-overcommitted', self.CELL0))
        problem = found[('cache-overcommitted', self.CELL0)].problem
        self.assertIn('the hot RAM placed on NUMA cell 0, 131072 MB, '
                      'exceeds the cell\'s DRAM-cache bound of 98304 MB',
                      problem)
        self.assertIn('b0 (id-b0, 32768 MB hot on the cell)', problem)

    def test_floating_instances_charge_every_cell(self):
        # 64 GB floating: 32 GB on each cell, with the 96 GB bound to
        # cell 0 that is 128 GB there.
        servers = (tuple(cases.bound_server('b%d' % i, 'mm1', {0: 32})
                         for i in range(3))
                   + (cases.server('f', 'mm1', 64,
                                   **{'pmem:hot_ratio': '1'}),))
        snap = cases.with_aggregate(
            cases.replace(cases.clean(), servers=servers), 'pmem-mm',
            pmem_dram_cache_gb_per_cell='0:96,1:96')
        found = self.assertFindings(
            snap, (checks.ERROR, 'cache-overcommitted', self.CELL0))
        self.assertIn('f (id-f, 32768 MB hot on the cell, floating)',
                      found[('cache-overcommitted', self.CELL0)].problem)

    def test_no_cache_at_all_charges_floating_instances_equally(self):
        # cache_overcommit_ratio 0: every cell's bound is 0 and a floating
        # instance charges each cell alike, as PmemCacheFilter charges it
        # (the doctor divided by the cells' total, 0).
        servers = self.crowded(cases.server('f', 'mm1', 64,
                                            **{'pmem:hot_ratio': '1'}))
        snap = cases.with_aggregate(
            cases.replace(cases.clean(), servers=servers,
                          config=cases.config(cache_overcommit_ratio=0.0)),
            'pmem-mm', pmem_dram_cache_gb_per_cell='0:96,1:96')
        problems = {f.object: f.problem for f in checks.run(snap)
                    if f.code == 'cache-overcommitted'}
        self.assertIn('f (id-f, 32768 MB hot on the cell, floating)',
                      problems[self.CELL0])
        self.assertIn('f (id-f, 32768 MB hot on the cell, floating)',
                      problems['host mm1 (NUMA cell 1)'])

    def test_cells_from_the_discovered_profile(self):
        fleet = tuple(dataclasses.replace(cases.discovered(h), cell_ids=(0, 1))
                      if h == 'mm1' else cases.discovered(h)
                      for h in sorted(cases.HOSTS))
        snap = cases.replace(
            cases.clean(), servers=self.crowded(), fleet=fleet)
        self.assertFindings(
            snap, (checks.ERROR, 'cache-overcommitted', self.CELL0))

    def test_unknown_cells_are_said(self):
        snap = cases.replace(cases.clean(), servers=self.crowded(), fleet=None)
        found = self.assertFindings(
            snap, (checks.INFO, 'cache-cells-unchecked', 'host mm1'))
        self.assertIn('(b0, b1, b2, b3)',
                      found[('cache-cells-unchecked', 'host mm1')].problem)

    def test_within_every_cell(self):
        servers = (cases.bound_server('b0', 'mm1', {0: 32}),
                   cases.bound_server('b1', 'mm1', {1: 64}),
                   cases.bound_server('b2', 'mm1', {0: 32, 1: 32}))
        snap = cases.with_aggregate(
            cases.replace(cases.clean(), servers=servers), 'pmem-mm',
            pmem_dram_cache_gb_per_cell='0:96,1:96')
        self.assertFindings(snap)

    def test_cells_the_host_lacks(self):
        fleet = tuple(dataclasses.replace(cases.discovered(h), cell_ids=(0, 1))
                      if h == 'mm1' else cases.discovered(h)
                      for h in sorted(cases.HOSTS))
        snap = cases.with_aggregate(
            cases.replace(cases.clean(), servers=self.crowded(), fleet=fleet),
            'pmem-mm', pmem_dram_cache_gb_per_cell='2:96,3:96')
        # The aggregate names cells 2 and 3, discovery found 0 and 1:
        # PmemCacheFilter rejects the host next to NUMA-bound instances.
        found = self.assertFindings(
            snap, (checks.ERROR, 'invalid-dram-cache-per-cell', 'host mm1'))
        self.assertIn('names cells 2,3 but the host has NUMA cells 0,1',
                      found[('invalid-dram-cache-per-cell',
                             'host mm1')].problem)
