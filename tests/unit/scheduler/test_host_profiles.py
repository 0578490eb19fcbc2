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
"""A host's profile from its aggregates, memoised, one warning per problem."""

import types

from nova_pmem_filters.core.rules import profile
from nova_pmem_filters.scheduler import host_profiles
from tests.unit import fakes


class HostProfileTestCase(fakes.PmemTestCase):

    def test_host_profile(self):
        prof = host_profiles.host_profile(
            fakes.host('host1', [fakes.memory_mode(64)]))
        self.assertEqual(profile.HostProfile(mode='memory_mode',
                                             dram_cache_gb=64.0), prof)
        self.assertEqual([], self.log_lines('WARNING'))

    def test_host_profile_warns_once(self):
        bad = fakes.host('host1', [fakes.DRAM, fakes.APP_DIRECT])
        for _ in range(3):
            self.assertFalse(host_profiles.host_profile(bad).known)
        self.assertEqual(1, len(self.log_lines('WARNING')))
        # Another host with the same problem gets its own warning.
        other = fakes.host('host2', [fakes.DRAM, fakes.APP_DIRECT])
        host_profiles.host_profile(other)
        self.assertEqual(2, len(self.log_lines('WARNING')))

    def test_unreadable_aggregates(self):
        host1 = fakes.host('host1')
        host1.aggregates = [object()]
        prof = host_profiles.host_profile(host1)
        self.assertFalse(prof.known)
        self.assertIn('unreadable aggregates', prof.problem)

    def test_a_key_present_with_no_string_is_not_an_absent_key(self):
        # {'pmem_mode': None} is a value that does not parse, not a host
        # without a mode: the memo must not take it for the default.
        host1 = fakes.host('host1')
        # Not an Aggregate object, which would refuse the value.
        host1.aggregates = [types.SimpleNamespace(
            metadata={'pmem_mode': None})]
        plain = fakes.host('host2')
        for _ in range(2):
            self.assertEqual('dram', host_profiles.host_profile(plain).mode)
            prof = host_profiles.host_profile(host1)
            self.assertFalse(prof.known)
            self.assertIn("pmem_mode='None'", prof.problem)
        for value in ('dram', 'memory_mode'):
            prof = host_profiles.host_profile(fakes.host(
                'host1', [{'pmem_mode': value, 'pmem_dram_cache_gb': '1'}]))
            self.assertEqual(value, prof.mode)
