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
"""A flavor no host can take: NoValidHost, and logs that say why.

Nova logs which filter returned no host (INFO); each pmem filter logs why it
rejected each host (DEBUG), as Nova's own filters do.
"""

from tests.functional import base


class NoValidHostTest(base.PmemTestBase):
    """A cloud with a DRAM and a Memory-Mode host, no App-Direct host."""

    HOSTS = (base.DRAM, base.MEMORY_MODE)
    AGGREGATES = (base.DRAM_AGGREGATE, base.MEMORY_MODE_AGGREGATE)

    def test_no_host_of_the_flavor_mode(self):
        flavor = self._create_pmem_flavor(
            'vpmem-ready', memory_gb=16,
            extra_specs={'pmem:modes': 'app_direct'})
        server = self._boot(flavor, 'ERROR')
        self._assert_no_valid_host(server)

        self.assertIn('Filter PmemModeFilter returned 0 hosts',
                      self.stdlog.logger.output)
        self.assertIn(
            "Filtering removed all hosts for the request with instance ID "
            "'%s'. Filter results: ['ComputeFilter: (start: 2, end: 2)', "
            "'ComputeCapabilitiesFilter: (start: 2, end: 2)', "
            "'ImagePropertiesFilter: (start: 2, end: 2)', "
            "'ServerGroupAntiAffinityFilter: (start: 2, end: 2)', "
            "'ServerGroupAffinityFilter: (start: 2, end: 2)', "
            "'PmemModeFilter: (start: 2, end: 0)']" % server['id'],
            self.stdlog.logger.output)
        for host, mode in ((base.DRAM_HOST, 'dram'),
                           (base.MM_HOST, 'memory_mode')):
            self.assertRegex(
                self.pmem_log.output,
                r"DEBUG \[nova_pmem_filters.filters\] \(%s, %s\) .* fails "
                r"pmem mode check: host mode %s is not in the flavor's "
                r"modes app_direct" % (host, host, mode))

    def test_hot_ram_larger_than_any_cache(self):
        # 256 GB, all hot: fits mm1's 512 GB of RAM, not its 192 GB cache.
        flavor = self._create_pmem_flavor(
            'in-memory-db', memory_gb=256, vcpus=16,
            extra_specs={'pmem:modes': 'memory_mode',
                         'pmem:hot_ratio': '1.0'})
        server = self._boot(flavor, 'ERROR')
        self._assert_no_valid_host(server)

        self.assertIn('Filter PmemCacheFilter returned 0 hosts',
                      self.stdlog.logger.output)
        self.assertRegex(
            self.pmem_log.output,
            r'\(mm1, mm1\) .* fails pmem cache check: hot RAM 0 MB \+ '
            r'262144 MB requested exceeds the DRAM-cache bound of 196608 MB '
            r'\(192 GB x cache_overcommit_ratio 1.0\)')
