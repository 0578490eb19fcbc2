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

project = 'nova-pmem-filters'
copyright = 'nova-pmem-filters developers'
extensions = [
    # Renders the [pmem] options from nova_pmem_filters.conf.opts.list_opts, so
    # the reference cannot go stale.
    'oslo_config.sphinxext',
    # The CLI reference, from the commands' own parsers.
    'cliff.sphinxext',
]
autoprogram_cliff_app_dist_name = 'nova-pmem-filters'

source_suffix = '.rst'
master_doc = 'index'
exclude_patterns = []
pygments_style = 'sphinx'
html_theme = 'alabaster'
