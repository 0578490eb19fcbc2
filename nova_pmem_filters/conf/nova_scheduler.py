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
"""Nova's own options that our tools read and write, without Nova.

The doctor reads nova.conf (``doctor.novaconf``), and the planner
(``nova-config``) and the devstack plugin write it (``inifile``), on
machines that may have no Nova: they know the few Nova options involved by
this model of them, with Nova's groups, names, types and defaults (a unit
test keeps them equal to Nova's), and the filters Nova's
``available_filters`` loads by default.
"""

from oslo_config import cfg

from nova_pmem_filters.core.rules import placement

FILTER_SCHEDULER = 'filter_scheduler'
SCHEDULER = 'scheduler'
DEFAULT = 'DEFAULT'

# Nova's own options, as nova/conf/scheduler.py defines them.
NOVA_OPTS = {
    FILTER_SCHEDULER: [
        cfg.MultiStrOpt('available_filters',
                        default=['nova.scheduler.filters.all_filters']),
        cfg.ListOpt('enabled_filters', default=[
            'ComputeFilter',
            'ComputeCapabilitiesFilter',
            'ImagePropertiesFilter',
            'ServerGroupAntiAffinityFilter',
            'ServerGroupAffinityFilter',
        ]),
        cfg.ListOpt('weight_classes',
                    default=['nova.scheduler.weights.all_weighers']),
        # The weighers' multipliers the simulator applies.
        cfg.FloatOpt('ram_weight_multiplier', default=1.0),
        cfg.FloatOpt('cpu_weight_multiplier', default=1.0),
    ],
    SCHEDULER: [
        # None: one worker per CPU of the scheduler host.
        cfg.IntOpt('workers', min=0),
    ],
    # nova/conf/compute.py: what a compute gives MEMORY_MB and VCPU in
    # Placement (a new compute's ratios are the initial_* ones).
    DEFAULT: [
        cfg.IntOpt('reserved_host_memory_mb', default=512, min=0),
        cfg.FloatOpt('ram_allocation_ratio', min=0.0),
        cfg.FloatOpt('initial_ram_allocation_ratio',
                     default=placement.INITIAL_RAM_ALLOCATION_RATIO, min=0.0),
        cfg.FloatOpt('cpu_allocation_ratio', min=0.0),
        cfg.FloatOpt('initial_cpu_allocation_ratio', default=4.0, min=0.0),
    ],
}


# The filters nova.scheduler.filters.all_filters loads (nova 34; a unit
# test keeps this equal to Nova's): the names enabled_filters may use with
# Nova's available_filters.
NOVA_ALL_FILTERS = 'nova.scheduler.filters.all_filters'
NOVA_FILTERS = frozenset([
    'AggregateImagePropertiesIsolation', 'AggregateInstanceExtraSpecsFilter',
    'AggregateIoOpsFilter', 'AggregateMultiTenancyIsolation',
    'AggregateNumInstancesFilter', 'AggregateTypeAffinityFilter',
    'AllHostsFilter', 'ComputeCapabilitiesFilter', 'ComputeFilter',
    'DifferentHostFilter', 'ImagePropertiesFilter', 'IoOpsFilter',
    'IsolatedHostsFilter', 'JsonFilter', 'MetricsFilter',
    'NUMATopologyFilter', 'NumInstancesFilter', 'PciPassthroughFilter',
    'SameHostFilter', 'ServerGroupAffinityFilter',
    'ServerGroupAntiAffinityFilter', 'SimpleCIDRAffinityFilter',
])


def default(group, name):
    """The default of one of Nova's options above, as Nova has it."""
    for opt in NOVA_OPTS[group]:
        if opt.dest == name:
            return opt.default
    raise KeyError(name)


def register(conf):
    """Register :data:`NOVA_OPTS` on an oslo.config ``ConfigOpts``."""
    for group, opts in NOVA_OPTS.items():
        conf.register_opts(opts, group=None if group == DEFAULT else group)
