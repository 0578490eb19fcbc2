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
"""nova.conf as Nova's own scheduler reads it, for the tests.

With Nova's declarations of its scheduler options (not ours of them) and
our ``[pmem]`` options: what a deployment tool wrote is judged by the
reader that will read it.
"""

from nova.conf import scheduler as nova_scheduler_conf
from oslo_config import cfg

from nova_pmem_filters.conf import pmem as pmem_conf


def nova_view(path):
    """nova.conf as nova-scheduler reads it: Nova's options and ours."""
    conf = cfg.ConfigOpts()
    nova_scheduler_conf.register_opts(conf)
    pmem_conf.register_opts(conf)
    conf(['--config-file', path], project='nova', default_config_files=[])
    return conf
