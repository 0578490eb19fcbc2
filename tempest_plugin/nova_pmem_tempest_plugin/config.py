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
"""The plugin's options: ``[service_available] pmem_filters`` and
``[pmem_filters]``.

Tempest cannot read nova.conf: the options that change what the scheduler
decides (``[pmem]`` in nova-scheduler's nova.conf) are repeated here with
the names, defaults and limits doc/source/configuration.rst documents (the
plugin imports nothing of nova-pmem-filters), so that the tests expect
what the scheduler does.
"""

from oslo_config import cfg

from nova_pmem_tempest_plugin import contract

# nova-scheduler's [pmem] options that change what it decides.
SCHEDULER_OPTIONS = ('default_host_mode', 'default_hot_ratio',
                     'cache_overcommit_ratio')

_scheduler_opts = [
    cfg.StrOpt(
        'default_host_mode',
        default=contract.DRAM,
        choices=contract.KINDS,
        help='As [pmem] default_host_mode of nova-scheduler: the memory '
             'mode of a host that is in no aggregate with pmem_mode '
             'metadata.'),
    cfg.FloatOpt(
        'default_hot_ratio',
        default=contract.DEFAULT_HOT_RATIO,
        min=0.0001,
        max=1.0,
        help='As [pmem] default_hot_ratio of nova-scheduler: the share of '
             'a flavor\'s RAM counted as hot when it has no '
             'pmem:hot_ratio.'),
    cfg.FloatOpt(
        'cache_overcommit_ratio',
        default=1.0,
        min=0.0,
        max=100.0,
        help='As [pmem] cache_overcommit_ratio of nova-scheduler: how much '
             'hot RAM a memory_mode host may hold, as a multiple of its '
             'DRAM cache (pmem_dram_cache_gb aggregate metadata).'),
]


service_option = cfg.BoolOpt(
    'pmem_filters',
    default=True,
    help='Whether the cloud runs nova-pmem-filters: PmemModeFilter and '
         'PmemCacheFilter enabled in nova-scheduler. Every test of the '
         'nova-pmem-filters plugin skips when False.')

pmem_filters_group = cfg.OptGroup(
    name='pmem_filters',
    title='nova-pmem-filters options',
    help='What the nova-pmem-filters tests need to know about the cloud '
         'that its APIs do not say.')

PmemFiltersGroup = [
    cfg.BoolOpt(
        'api_validators',
        default=True,
        help='nova-api loads the pmem: extra-spec validators '
             '(nova-pmem-filters is installed where nova-api runs). The '
             'API tests, which expect HTTP 400 for bad pmem: extra specs, '
             'skip when False.'),
    cfg.IntOpt(
        'flavor_ram_mb',
        default=512,
        min=64,
        help='RAM of the small flavors the placement tests boot. The '
             'image ([compute] image_ref) must boot with it.'),
    cfg.IntOpt(
        'flavor_disk_gb',
        default=1,
        min=0,
        help='Root disk of the flavors the tests create, GB.'),
    cfg.IntOpt(
        'hosts_per_kind',
        default=2,
        min=1,
        help='How many hosts of each kind a placement test asks for by '
             'name (server create\'s host field, microversion 2.74) to see '
             'the flavor refused there.'),
    cfg.IntOpt(
        'servers_per_flavor',
        default=2,
        min=1,
        help='How many servers a placement test boots without naming a '
             'host, to see where the scheduler puts them.'),
    cfg.StrOpt(
        'memory_mode_host',
        default=None,
        help='The Memory-Mode host (nova-compute service host) on which '
             'the DRAM-cache test boots. Unset: the Memory-Mode host with '
             'the most free DRAM cache.'),
    cfg.StrOpt(
        'vpmem_label',
        default=None,
        help='A vPMEM namespace label the App Direct hosts offer (a label '
             'of [libvirt] pmem_namespaces on their nova-compute, used as '
             'the flavor extra spec hw:pmem). Unset: the vPMEM tests '
             'skip.'),
    cfg.StrOpt(
        'server_networks',
        default='none',
        help='The networks field of the servers the tests create: "none" '
             '(no port: the tests only need the scheduler\'s decision) or '
             '"auto" (microversion 2.37 and later).'),
] + _scheduler_opts
