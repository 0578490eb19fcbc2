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
"""CXL host kinds in real Nova: routing, the near-memory bound, bad labels.

Three fake computes labelled as the CXL kinds, next to the Optane hosts of
the base class::

    flat1    80 vCPU  512 GB visible (256 DRAM + 256 CXL)   cxl_flat
    kmem1    80 vCPU  512 GB visible (256 DRAM + 256 CXL)   cxl_kmem
    devdax1  80 vCPU  256 GB DRAM (CXL kept as devdax)      cxl_devdax

Flavors saying ``pmem:modes`` with the Optane values: a tiered CXL host
(flat, kmem) passes as ``memory_mode`` and its near memory (its DRAM,
``pmem_dram_cache_gb``) bounds hot RAM as a Memory-Mode host's DRAM cache
does; a devdax host passes as ``dram``. A flavor naming a CXL kind in
``pmem:modes`` lands on hosts of exactly that kind.
"""

from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import nearmem
from nova_pmem_filters.core.rules import profile
from tests.functional import base

NEAR_GB = 256

FLAT = base.Host('flat1', vcpus=80, memory_gb=512, local_gb=2000)
KMEM = base.Host('kmem1', vcpus=80, memory_gb=512, local_gb=2000)
DEVDAX = base.Host('devdax1', vcpus=80, memory_gb=256, local_gb=2000)


def _tiered(name, kind, hosts):
    return base.Aggregate(name, hosts, {profile.MODE_KEY: kind,
                                        profile.DRAM_CACHE_KEY: str(NEAR_GB)})


class CxlRoutingTest(base.PmemTestBase):

    HOSTS = (base.DRAM, FLAT, KMEM, DEVDAX)
    AGGREGATES = (base.DRAM_AGGREGATE,
                  _tiered('cxl-flat', kinds.CXL_FLAT, [FLAT.name]),
                  _tiered('cxl-kmem', kinds.CXL_KMEM, [KMEM.name]),
                  base.Aggregate('cxl-devdax', [DEVDAX.name],
                                 {profile.MODE_KEY: kinds.CXL_DEVDAX}))

    def test_tiered_kinds_pass_as_memory_mode(self):
        flavor = self._create_pmem_flavor(
            'capacity', memory_gb=16, extra_specs={
                'pmem:modes': 'memory_mode', 'pmem:hot_ratio': '0.5'})
        hosts = {self._host_of(self._boot(flavor)) for _ in range(4)}
        # RAMWeigher spreads over the two tiered hosts, never elsewhere.
        self.assertEqual({FLAT.name, KMEM.name}, hosts)

    def test_devdax_passes_as_dram(self):
        # A latency-sensitive flavor: DRAM only. The devdax host gives
        # guests DRAM; the tiered hosts would demote its pages to CXL.
        flavor = self._create_pmem_flavor(
            'latency', memory_gb=16, extra_specs={'pmem:modes': 'dram'})
        hosts = {self._host_of(self._boot(flavor)) for _ in range(4)}
        self.assertEqual({base.DRAM_HOST, DEVDAX.name}, hosts)

    def test_cxl_value_selects_exactly_its_kind(self):
        kmem = self._create_pmem_flavor(
            'kmem-only', memory_gb=16, extra_specs={
                'pmem:modes': kinds.CXL_KMEM, 'pmem:hot_ratio': '0.5'})
        capacity = self._create_pmem_flavor(
            'capacity', memory_gb=16, extra_specs={
                'pmem:modes': 'memory_mode', 'pmem:hot_ratio': '0.5'})
        # RAMWeigher would spread over both tiered hosts; the kmem value
        # keeps every instance on the kmem host.
        self.assertEqual({KMEM.name},
                         {self._host_of(self._boot(kmem)) for _ in range(3)})
        # memory_mode still admits both tiered kinds, as before: with the
        # kmem host fuller, the next instances go to the flat host.
        self.assertEqual({FLAT.name}, {self._host_of(self._boot(capacity))
                                       for _ in range(2)})
        for kind, host in ((kinds.CXL_FLAT, FLAT), (kinds.CXL_DEVDAX, DEVDAX)):
            flavor = self._create_pmem_flavor(
                kind + '-only', memory_gb=16,
                extra_specs={'pmem:modes': kind})
            self.assertEqual(host.name, self._host_of(self._boot(flavor)))

    def test_high_priority_prefers_dram_backed_kinds(self):
        flavor = self._create_pmem_flavor(
            'important', memory_gb=16, extra_specs={'pmem:priority': 'high'})
        for _ in range(3):
            self.assertIn(self._host_of(self._boot(flavor)),
                          (base.DRAM_HOST, DEVDAX.name))

    def test_low_priority_prefers_tiered_kinds(self):
        flavor = self._create_pmem_flavor(
            'batch', memory_gb=16, extra_specs={'pmem:priority': 'low',
                                                'pmem:hot_ratio': '0.25'})
        for _ in range(3):
            self.assertIn(self._host_of(self._boot(flavor)),
                          (FLAT.name, KMEM.name))


class CxlNearMemoryBoundTest(base.PmemTestBase):
    """The near memory of a tiered CXL host bounds hot RAM exactly."""

    HOSTS = (KMEM,)
    AGGREGATES = (_tiered('cxl-kmem', kinds.CXL_KMEM, [KMEM.name]),)

    def test_near_memory_not_ram_bounds_the_host(self):
        # 48 GB at hot ratio 0.75: 36 GB hot each. The 256 GB of DRAM hold
        # 7 of them; the 512 GB of visible memory would hold 10.
        flavor = self._create_pmem_flavor(
            'capacity', memory_gb=48, extra_specs={
                'pmem:modes': 'memory_mode', 'pmem:hot_ratio': '0.75'})
        expected = nearmem.instances_in_cache(NEAR_GB * base.GB,
                                              0.75 * 48 * base.GB)
        by_ram = self._capacity(KMEM.name, 'MEMORY_MB', 48 * base.GB)
        self.assertLess(expected, by_ram)
        admitted = 0
        while admitted <= by_ram:
            server = self._boot(flavor, expected_state=None)
            if server['status'] == 'ERROR':
                self._assert_no_valid_host(server)
                break
            admitted += 1
        self.assertEqual(expected, admitted)
        self.assertIn('fails pmem cache check', self.pmem_log.output)


class CxlBadLabelTest(base.PmemTestBase):
    """A tiered CXL kind without its near memory is rejected, and said so."""

    HOSTS = (base.DRAM, KMEM)
    AGGREGATES = (base.DRAM_AGGREGATE,
                  base.Aggregate('cxl-kmem', [KMEM.name],
                                 {profile.MODE_KEY: kinds.CXL_KMEM}))

    def test_missing_near_memory(self):
        flavor = self._create_pmem_flavor(
            'capacity', memory_gb=16, extra_specs={
                'pmem:modes': 'memory_mode'})
        server = self._boot(flavor, expected_state='ERROR')
        self._assert_no_valid_host(server)
        warnings = [line for line in self.pmem_log.output.splitlines()
                    if line.startswith('WARNING') and KMEM.name in line]
        self.assertEqual(1, len(warnings), warnings)
        self.assertIn('pmem_mode=cxl_kmem needs pmem_dram_cache_gb to bound '
                      'the near memory (DRAM)', warnings[0])
        # A flavor that runs anywhere still lands on the DRAM host.
        anywhere = self._create_pmem_flavor('anywhere', memory_gb=16)
        self.assertEqual(base.DRAM_HOST, self._host_of(self._boot(anywhere)))

    def test_unknown_kind(self):
        self.admin_api.post_aggregate_action(
            self.aggregates['cxl-kmem'],
            {'set_metadata': {'metadata': {profile.MODE_KEY: 'cxl_tiered',
                                           profile.DRAM_CACHE_KEY: '256'}}})
        flavor = self._create_pmem_flavor(
            'capacity', memory_gb=16, extra_specs={
                'pmem:modes': 'memory_mode'})
        self._assert_no_valid_host(self._boot(flavor, expected_state='ERROR'))
        self.assertIn("pmem_mode='cxl_tiered' is not one of dram, "
                      "memory_mode, app_direct. CXL hosts: cxl_flat, "
                      "cxl_kmem, cxl_devdax", self.pmem_log.output)
