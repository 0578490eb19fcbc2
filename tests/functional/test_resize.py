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
"""Resizing to a flavor of another mode moves the server to such a host."""

from tests.functional import base


class ResizeAcrossModesTest(base.PmemTestBase):

    def _resize_and_confirm(self, server, flavor, host):
        server = self._resize_server(server, flavor)
        self.assertEqual(host, self._host_of(server))
        server = self._confirm_resize(server)
        self.assertEqual(host, self._host_of(server))
        # Placement agrees: the new flavor on the new host, nothing left on
        # the old one.
        self.assertFlavorMatchesAllocation(
            self.admin_api.get_flavor(flavor), server['id'],
            self._get_provider_uuid_by_host(host))
        self.assertEqual(
            [self._get_provider_uuid_by_host(host)],
            list(self._get_allocations_by_server_uuid(server['id'])))
        return server

    def test_resize_between_modes(self):
        flavors = {
            mode: self._create_pmem_flavor(
                'vm-%s' % mode, memory_gb=memory_gb,
                extra_specs={'pmem:modes': mode})
            for mode, memory_gb in (('dram', 16), ('memory_mode', 32),
                                    ('app_direct', 24))
        }
        # Nova's weighers alone would pick mm1, then (the server's own host
        # excluded) mm1 again: it has the most free RAM. ad1 has the least.
        server = self._boot(flavors['dram'])
        self.assertEqual(base.DRAM_HOST, self._host_of(server))
        server = self._resize_and_confirm(
            server, flavors['app_direct'], base.AD_HOST)
        self._resize_and_confirm(
            server, flavors['memory_mode'], base.MM_HOST)
