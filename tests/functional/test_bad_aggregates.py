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
"""Hosts with contradictory or unparsable aggregate metadata.

Such a host has an unknown profile: it is rejected for flavors that
constrain modes, with one warning naming the host and the offending values,
while the other hosts keep serving. The three bad hosts are the largest, so
Nova's RAMWeigher would pick them first.
"""

from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import profile
from tests.functional import base

CONFLICT_HOST = 'conflict1'
BANANA_HOST = 'banana1'
NEGATIVE_CACHE_HOST = 'negcache1'


def big(name):
    return base.Host(name, vcpus=80, memory_gb=768, local_gb=2000)


class BadAggregateMetadataTest(base.PmemTestBase):

    HOSTS = base.PmemTestBase.HOSTS + (
        big(CONFLICT_HOST), big(BANANA_HOST), big(NEGATIVE_CACHE_HOST))
    AGGREGATES = (
        # conflict1 is in both a dram and a memory_mode aggregate.
        base.DRAM_AGGREGATE._replace(hosts=[base.DRAM_HOST, CONFLICT_HOST]),
        base.MEMORY_MODE_AGGREGATE._replace(
            hosts=[base.MM_HOST, CONFLICT_HOST]),
        base.APP_DIRECT_AGGREGATE,
        base.Aggregate('fruit', [BANANA_HOST],
                       {profile.MODE_KEY: 'banana'}),
        base.Aggregate('mm-typo', [NEGATIVE_CACHE_HOST],
                       {profile.MODE_KEY: kinds.MEMORY_MODE,
                        profile.DRAM_CACHE_KEY: '-3'}),
    )

    def _warnings_for(self, host):
        return [line for line in self.pmem_log.output.splitlines()
                if line.startswith('WARNING') and
                'Host %s (node %s)' % (host, host) in line]

    def test_bad_hosts_rejected_until_fixed(self):
        expected = [
            ('memory_mode', base.MM_HOST),
            ('dram', base.DRAM_HOST),
            ('app_direct', base.AD_HOST),
            ('dram,memory_mode', base.MM_HOST),
            ('memory_mode', base.MM_HOST),
        ]
        for i, (modes, host) in enumerate(expected):
            flavor = self._create_pmem_flavor(
                'f%d-%s' % (i, modes), memory_gb=16,
                extra_specs={'pmem:modes': modes})
            self.assertEqual(host, self._host_of(self._boot(flavor)), modes)
        # A flavor that allows every mode passes PmemModeFilter everywhere,
        # but PmemCacheFilter cannot check the cache bound of a host whose
        # profile it cannot read, and rejects it too.
        anywhere = self._create_pmem_flavor('anywhere', memory_gb=16)
        self.assertEqual(base.MM_HOST, self._host_of(self._boot(anywhere)))
        self.assertRegex(
            self.pmem_log.output,
            r'DEBUG .*\(conflict1, conflict1\) .* fails pmem cache check: '
            r'unknown host profile \(aggregates disagree on pmem_mode')

        # One warning per bad host however many requests saw it.
        problems = {
            CONFLICT_HOST: "aggregates disagree on pmem_mode: 'dram', "
                           "'memory_mode'",
            BANANA_HOST: "pmem_mode='banana' is not one of dram, "
                         "memory_mode, app_direct",
            NEGATIVE_CACHE_HOST: "pmem_dram_cache_gb='-3' is not a positive "
                                 "number of GB",
        }
        for host, problem in problems.items():
            warnings = self._warnings_for(host)
            self.assertEqual(1, len(warnings), warnings)
            self.assertIn('has an unknown pmem profile: %s.' % problem,
                          warnings[0])
        for host in (base.DRAM_HOST, base.MM_HOST, base.AD_HOST):
            self.assertEqual([], self._warnings_for(host))
        self.assertRegex(
            self.pmem_log.output,
            r'DEBUG .*\(banana1, banana1\) .* fails pmem mode check: unknown '
            r'host profile \(pmem_mode=.banana. is not one of')

        # Fixing the metadata brings the host back.
        self.admin_api.post_aggregate_action(
            self.aggregates['fruit'],
            {'set_metadata': {'metadata': {profile.MODE_KEY: 'dram'}}})
        # banana1 is a dram host now, and the one with the most free RAM.
        flavor = self._create_pmem_flavor(
            'only-dram', memory_gb=16, extra_specs={'pmem:modes': 'dram'})
        self.assertEqual(BANANA_HOST, self._host_of(self._boot(flavor)))
        # Nothing raised, here or in any other test (see the base class).
        self._assert_pmem_code_never_failed()
