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
"""The Tempest plugin (entry point ``tempest.test_plugins``)."""

import os

from tempest import config
from tempest.test_discover import plugins

from nova_pmem_tempest_plugin import config as pmem_config


class PmemFiltersTempestPlugin(plugins.TempestPlugin):
    """Tests that a cloud places ``pmem:`` flavors as the filters say."""

    def load_tests(self):
        base_path = os.path.split(os.path.dirname(
            os.path.abspath(__file__)))[0]
        test_dir = os.path.join('nova_pmem_tempest_plugin', 'tests')
        return os.path.join(base_path, test_dir), base_path

    def register_opts(self, conf):
        conf.register_opt(pmem_config.service_option,
                          group='service_available')
        config.register_opt_group(conf, pmem_config.pmem_filters_group,
                                  pmem_config.PmemFiltersGroup)

    def get_opt_lists(self):
        return [
            (pmem_config.pmem_filters_group.name,
             pmem_config.PmemFiltersGroup),
            ('service_available', [pmem_config.service_option]),
        ]
