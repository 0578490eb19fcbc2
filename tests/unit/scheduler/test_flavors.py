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
"""A flavor's pmem: request with the configured defaults."""

from nova import objects

from nova_pmem_filters.scheduler import flavors
from tests.unit import fakes


class FlavorRequestTestCase(fakes.PmemTestCase):

    def test_flavor_request_reads_no_unset_field(self):
        flavor = objects.Flavor(name='bare', memory_mb=1024)
        request, error = flavors.flavor_request(flavor)
        self.assertIsNone(error)
        self.assertFalse(request.constrains_modes)

    def test_spec_request_without_flavor(self):
        request, error = flavors.spec_request(objects.RequestSpec())
        self.assertIsNone(request)
        self.assertIn('request has no flavor', error)
