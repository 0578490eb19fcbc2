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
"""vPMEM labels: discovery names namespaces, the doctor matches them."""

import os_resource_classes as orc
import testtools

from nova_pmem_filters.core.rules import vpmem


class VpmemTestCase(testtools.TestCase):

    def test_label_rule(self):
        self.assertEqual('128GB', vpmem.label_for(124.03))
        self.assertEqual('32GB', vpmem.label_for(31.5))
        self.assertEqual('4GB', vpmem.label_for(3.94))
        self.assertEqual('256GB', vpmem.label_for(248.06))

    def test_resource_class_is_novas(self):
        # Nova names a label's class with os_resource_classes (libvirt
        # driver: orc.normalize_name('PMEM_NAMESPACE_' + label)).
        for label in ('128GB', 'small-1', 'a.b_c'):
            self.assertEqual(
                orc.normalize_name('PMEM_NAMESPACE_' + label),
                vpmem.resource_class(label))
        self.assertEqual('CUSTOM_PMEM_NAMESPACE_SMALL_1',
                         vpmem.resource_class('small-1'))
