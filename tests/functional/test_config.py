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
"""The functional tests run the scheduler configuration README.rst gives."""

import collections
import os

from nova_pmem_filters import filters
from nova_pmem_filters import weighers
from tests.functional import base

README = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir,
                      'README.rst')


def readme_options(group):
    """``{option: [values]}`` of one nova.conf group in README.rst.

    Reads the indented literal blocks; a repeated option (a MultiStrOpt such
    as ``available_filters``) gives several values.
    """
    options = collections.defaultdict(list)
    section = None
    with open(README) as readme:
        for line in readme:
            if not line.startswith('    '):
                continue
            line = line.strip()
            if line.startswith('[') and line.endswith(']'):
                section = line[1:-1]
            elif section == group and '=' in line and line[0] != '#':
                name, value = line.split('=', 1)
                options[name.strip()].append(value.strip())
    return options


class ReadmeConfigTest(base.PmemTestBase):
    """The configuration of PmemTestBase is the one operators are given."""

    HOSTS = ()
    AGGREGATES = ()

    def test_base_uses_readme_filter_scheduler_settings(self):
        options = readme_options('filter_scheduler')
        self.assertEqual(base.AVAILABLE_FILTERS, options['available_filters'])
        self.assertEqual([','.join(base.ENABLED_FILTERS)],
                         options['enabled_filters'])
        self.assertEqual([','.join(base.WEIGHT_CLASSES)],
                         options['weight_classes'])

    def test_scheduler_loaded_pmem_filters_and_all_weighers(self):
        host_manager = self.scheduler_service.manager.host_manager
        self.assertEqual(
            base.ENABLED_FILTERS,
            [f.__class__.__name__ for f in host_manager.enabled_filters])
        weigher_classes = [w.__class__ for w in host_manager.weighers]
        for cls in weighers.all_weighers():
            self.assertIn(cls, weigher_classes)
        # ...next to Nova's own, which the tests of priority steering play
        # against.
        self.assertIn('RAMWeigher',
                      [cls.__name__ for cls in weigher_classes])
        self.assertIsInstance(host_manager.enabled_filters[-2],
                              filters.PmemModeFilter)
