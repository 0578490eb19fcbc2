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
"""The ``[pmem]`` options of nova.conf.

Their defaults come from the core (the kinds table and the flavor defaults),
so that what the planner and the simulator assume is what an unset option
gives.
"""

from oslo_config import cfg
from oslo_config import types

from nova_pmem_filters.core.rules import defaults
from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import kinds

pmem_group = cfg.OptGroup(
    name='pmem',
    title='Persistent-memory scheduling options',
    help="""
Options of the nova-pmem-filters scheduler filters and weighers
(PmemModeFilter, PmemCacheFilter, PmemTierWeigher, PmemCacheHeadroomWeigher,
PmemNumaCellWeigher). Set them where nova-scheduler runs.
""")

pmem_opts = [
    cfg.StrOpt(
        'default_host_mode',
        default=kinds.DRAM,
        choices=[(kind.name, kind.label) for kind in kinds.KINDS.values()],
        help="""
Memory mode of a host that is in no aggregate with ``pmem_mode`` metadata.

A ``memory_mode`` default only makes sense where every such host is also in
an aggregate with ``pmem_dram_cache_gb``; without it the host's profile is
unknown and the filters reject it.

Related options:

* ``default_flavor_modes``
"""),
    cfg.ListOpt(
        'default_flavor_modes',
        default=list(kinds.MODES),
        item_type=types.String(choices=kinds.FLAVOR_MODES),
        help="""
Host memory modes a flavor may use when it has no ``pmem:modes`` extra spec.

Possible values:

* A comma-separated list of the ``pmem:modes`` values ``dram``,
  ``memory_mode``, ``app_direct``, ``cxl_flat``, ``cxl_kmem`` and
  ``cxl_devdax``. The default, the first three, lets unlabelled flavors run
  anywhere. Restrict it, for example to ``dram``, to keep every flavor off
  PMem and CXL hosts unless it opts in (``cxl_flat`` and ``cxl_kmem`` hosts
  pass as ``memory_mode``, ``cxl_devdax`` hosts as ``dram``; a CXL kind
  listed here admits exactly the hosts of that kind).

Related options:

* ``default_host_mode``
"""),
    cfg.FloatOpt(
        'default_hot_ratio',
        default=extra_specs.DEFAULT_HOT_RATIO,
        min=0.0001,
        max=1.0,
        help="""
Share of a flavor's RAM counted as hot when it has no ``pmem:hot_ratio``.

PmemCacheFilter keeps the hot RAM of all instances on a ``memory_mode`` host
within its DRAM cache. The default, 0.5, follows published measurements that
about half of cloud VMs never touch half of the memory they rent; set the
extra spec per flavor when the workload is known.

Possible values:

* A number greater than 0 and at most 1. 1 counts all RAM as hot, which caps
  a Memory-Mode host at its DRAM cache size.

Related options:

* ``cache_overcommit_ratio``
"""),
    cfg.FloatOpt(
        'cache_overcommit_ratio',
        default=defaults.CACHE_OVERCOMMIT_RATIO,
        min=0.0,
        max=100.0,
        help="""
How much hot RAM a ``memory_mode`` host may hold, as a multiple of its DRAM
cache (``pmem_dram_cache_gb`` aggregate metadata).

Possible values:

* A number from 0 to 100. 1.0 keeps hot RAM within the cache; above 1.0
  accepts some cache misses; 0 admits nothing on ``memory_mode`` hosts.

Related options:

* ``default_hot_ratio``
"""),
    cfg.FloatOpt(
        'tier_weight_multiplier',
        default=defaults.TIER_WEIGHT_MULTIPLIER,
        help="""
Multiplier of PmemTierWeigher, which steers ``pmem:priority=high`` flavors
to DRAM-backed hosts and ``low`` flavors to ``memory_mode`` hosts.

The default, 10.0, outweighs the sum of Nova's default weighers (RAM, CPU,
disk, I/O, PCI, hypervisor version, affinity: each at most 1.0 after
normalisation), so priority decides between tiers, while staying far below
the build-failure and cross-cell weighers. Aggregate metadata
``pmem_tier_weight_multiplier`` overrides it per host; the smallest value
wins when several aggregates set it.

Possible values:

* A positive number makes priority steer; 0 disables the weigher; a negative
  number inverts the preference (not useful in practice).

Related options:

* ``[filter_scheduler] weight_classes``
"""),
    cfg.FloatOpt(
        'cache_headroom_weight_multiplier',
        default=defaults.CACHE_HEADROOM_WEIGHT_MULTIPLIER,
        help="""
Multiplier of PmemCacheHeadroomWeigher, which prefers the ``memory_mode``
host with the most free DRAM cache (spreading hot RAM across caches).

Hosts of other modes score 0 on this weigher, so a positive multiplier also
nudges flavors of ``normal`` priority toward ``memory_mode`` hosts that have
cache to spare, keeping DRAM hosts free for ``high`` priority.

Aggregate metadata ``pmem_cache_headroom_weight_multiplier`` overrides it
per host; the smallest value wins when several aggregates set it.

Possible values:

* A positive number spreads hot RAM; a negative number packs it onto the
  fullest cache first; 0 disables the weigher.

Related options:

* ``tier_weight_multiplier``
"""),
    cfg.FloatOpt(
        'numa_cell_weight_multiplier',
        default=defaults.NUMA_CELL_WEIGHT_MULTIPLIER,
        help="""
Multiplier of PmemNumaCellWeigher, which gives flavors with
``pmem:priority=high`` the host whose NUMA cells are least loaded: the
cells Nova would give a NUMA-bound flavor, every cell for a flavor without
a NUMA topology. A cell's load is its memory in use (NUMA-bound instances on
the cell plus the host's other use, spread over the cells in proportion to
their size) with the new instance, over its size.

Flavors of other priorities, and hosts without a NUMA topology (drivers
other than libvirt), score 0.

Aggregate metadata ``pmem_numa_cell_weight_multiplier`` overrides it per
host; the smallest value wins when several aggregates set it.

Possible values:

* A positive number prefers lightly loaded cells; a negative number the
  most loaded ones; 0 disables the weigher.

Related options:

* ``tier_weight_multiplier``
"""),
    cfg.IntOpt(
        'instance_cache_ttl',
        default=600,
        min=0,
        help="""
Seconds PmemCacheFilter trusts its per-process record of an instance's hot
RAM.

The scheduler usually knows instances only by UUID; their flavors are read
in one batched database query per request for the instances not yet
recorded, and then kept. An entry is dropped when the instance shows up on
another host (move, resize) or after this many seconds, which bounds how
long a same-host resize can go unnoticed. Full instance records pushed by
nova-compute (``[filter_scheduler] track_instance_changes``) refresh entries
at no cost.

Possible values:

* 0 reads every instance's flavor on each request (one batched query); a
  positive number of seconds.
"""),
    cfg.BoolOpt(
        'check_aggregate_view',
        default=True,
        help="""
Compare, once per nova-scheduler worker process, the host aggregates the
scheduler holds in memory with the database, and repair them if they differ.

Nova reads the aggregates once, in the parent nova-scheduler process, and
then hears of changes by fanout RPC. A worker that the parent starts again
after a crash inherits the parent's start-up copy and misses every aggregate
change made since: Memory-Mode hosts may then look like DRAM hosts to it.
With this option the first pmem filter call in each worker reads the
aggregates (one query per worker lifetime); if the scheduler's copy differs,
it logs an error, uses the database's aggregates for that request and for
those of the next 10 seconds (until the fanout has arrived), and asks every
scheduler worker to update its copy with Nova's own ``update_aggregates``
fanout.

Possible values:

* True (default): check and repair once per worker process.
* False: trust the scheduler's copy, as Nova does.
"""),
]


def register_opts(conf):
    conf.register_group(pmem_group)
    conf.register_opts(pmem_opts, group=pmem_group)


def list_opts():
    return [(pmem_group, pmem_opts)]
