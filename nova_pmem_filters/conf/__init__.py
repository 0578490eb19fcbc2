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
"""The options of nova-pmem-filters, registered as Nova registers its own.

Like ``nova.conf``: importing this package registers every group on the
global ``CONF`` (which is ``nova.conf.CONF``), and the modules that read
options use ``nova_pmem_filters.conf.CONF``. ``opts.list_opts`` is the
``oslo.config.opts`` entry point.
"""

from oslo_config import cfg

from nova_pmem_filters.conf import pmem

CONF = cfg.CONF

pmem.register_opts(CONF)
