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
"""Flavors with Nova's vPMEM spec ``hw:pmem`` and the pmem filters.

``hw:pmem=LABEL`` makes Nova ask Placement for a ``CUSTOM_PMEM_NAMESPACE_
LABEL`` resource, which only hosts with vPMEM namespaces report (libvirt's
``[libvirt] pmem_namespaces``). The fake driver reports none, so this module
defines a fake driver that does, and loads it as Nova loads every driver:
by name, from ``nova.virt``.

Here both ad1 and dram1 report namespaces: Placement offers both, and
Nova's RAMWeigher prefers dram1 (384 GB against 192 GB).
"""

import sys

import os_resource_classes as orc

from nova.virt import fake

from tests.functional import base

DRIVER_MODULE = 'pmem_functional_fake'
LABEL = 'SMALL'


class VPMEMFakeDriver(fake.MediumFakeDriver):
    """A fake driver that reports vPMEM namespaces, as libvirt does."""

    # {label: number of namespaces}; set per compute after start, like the
    # sizes of the fake driver.
    vpmem_namespaces = {}

    def update_provider_tree(self, provider_tree, nodename, allocations=None):
        super(VPMEMFakeDriver, self).update_provider_tree(
            provider_tree, nodename, allocations=allocations)
        inventory = provider_tree.data(nodename).inventory
        for label, count in self.vpmem_namespaces.items():
            inventory[orc.normalize_name('PMEM_NAMESPACE_' + label)] = {
                'total': count, 'reserved': 0, 'min_unit': 1,
                'max_unit': count, 'step_size': 1, 'allocation_ratio': 1.0,
            }
        provider_tree.update_inventory(nodename, inventory)


class VPMEMTest(base.PmemTestBase):

    compute_driver = DRIVER_MODULE + '.VPMEMFakeDriver'

    HOSTS = (base.DRAM, base.APP_DIRECT)
    AGGREGATES = (base.DRAM_AGGREGATE, base.APP_DIRECT_AGGREGATE)

    def setUp(self):
        # nova.virt.driver.load_compute_driver imports
        # 'nova.virt.' + [DEFAULT] compute_driver.
        name = 'nova.virt.' + DRIVER_MODULE
        sys.modules[name] = sys.modules[__name__]
        self.addCleanup(sys.modules.pop, name, None)
        super(VPMEMTest, self).setUp()

    def _start_sized_compute(self, host):
        compute = super(VPMEMTest, self)._start_sized_compute(host)
        compute.manager.driver.vpmem_namespaces = {LABEL: 2}
        return compute

    def _vpmem_flavor(self, modes):
        return self._create_pmem_flavor(
            'vpmem-' + modes.replace(',', '-'), memory_gb=16,
            extra_specs={'hw:pmem': LABEL, 'pmem:modes': modes})

    def test_vpmem_flavor_goes_to_app_direct(self):
        for host in (base.DRAM_HOST, base.AD_HOST):
            inventory = self._get_provider_inventory(
                self._get_provider_uuid_by_host(host))
            self.assertEqual(
                2, inventory['CUSTOM_PMEM_NAMESPACE_' + LABEL]['total'])
        # pmem:modes allows dram too, but hw:pmem needs App Direct.
        server = self._boot(self._vpmem_flavor('dram,app_direct'))
        self.assertEqual(base.AD_HOST, self._host_of(server))
        self.assertEqual(
            1, self._get_allocations_by_server_uuid(server['id'])[
                self._get_provider_uuid_by_host(base.AD_HOST)][
                'resources']['CUSTOM_PMEM_NAMESPACE_' + LABEL])

    def test_vpmem_flavor_restricted_to_dram_is_contradictory(self):
        flavor = self._vpmem_flavor('dram')
        server = self._boot(flavor, 'ERROR')
        self._assert_no_valid_host(server)
        # Placement had candidates (both hosts have namespaces); the filter
        # refused them all, with one line that says why.
        self.assertIn('Filter PmemModeFilter returned 0 hosts',
                      self.stdlog.logger.output)
        self.assertIn(
            'WARNING [nova_pmem_filters.filters] PmemModeFilter rejects '
            'every host for instance %s: flavor vpmem-dram is contradictory: '
            'hw:pmem=%s needs an app_direct host but pmem:modes allows only '
            'dram' % (server['id'], LABEL),
            self.pmem_log.output.splitlines())
