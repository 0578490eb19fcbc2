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
"""pmem:modes sends each flavor to a host of a mode it allows."""

from tests.functional import base


class ModeRoutingTest(base.PmemTestBase):
    """One host per mode; flavors restricted to one mode each."""

    def test_each_mode_lands_on_its_host(self):
        # Without PmemModeFilter every boot would go to mm1, the host with
        # the most free RAM: Nova's RAMWeigher spreads.
        expected = {
            'dram': base.DRAM_HOST,
            'memory_mode': base.MM_HOST,
            'app_direct': base.AD_HOST,
        }
        for mode, host in expected.items():
            flavor = self._create_pmem_flavor(
                'only-%s' % mode, memory_gb=16,
                extra_specs={'pmem:modes': mode})
            server = self._boot(flavor)
            self.assertEqual(host, self._host_of(server), mode)
            self.assertFlavorMatchesAllocation(
                self.admin_api.get_flavor(flavor), server['id'],
                self._get_provider_uuid_by_host(host))
