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
"""What a scenario holds once read: catalog entries, configurations, workloads.

The planner's model, built from the values of the file
(:mod:`nova_pmem_filters.core.formats.scenario`) with the planner's defaults.
"""

import dataclasses

from nova_pmem_filters.core.formats import scenario as document
from nova_pmem_filters.core.formats import scenario_sections as sec
from nova_pmem_filters.core.rules import charging
from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import profile


# Nova's flavor extra spec for a guest NUMA topology of N cells.
NUMA_NODES_KEY = document.NUMA_NODES_KEY


@dataclasses.dataclass(frozen=True)
class Cpu:
    name: str
    cores: int
    threads: int
    price: float
    watts: float
    memory_limit_gb: float
    pmem_generations: tuple = sec.assumed(sec.Cpu, 'pmem_generations')
    pmem_max_module_gb: float = sec.assumed(sec.Cpu, 'pmem_max_module_gb')
    cxl_lanes: int = sec.assumed(sec.Cpu, 'cxl_lanes')
    flat_memory_mode: bool = sec.assumed(sec.Cpu, 'flat_memory_mode')
    generation: str = sec.assumed(sec.Cpu, 'generation')
    description: str = sec.assumed(sec.Cpu, 'description')
    price_source: str = sec.assumed(sec.Cpu, 'price_source')
    watts_source: str = sec.assumed(sec.Cpu, 'watts_source')
    # Where the entry's facts (PMem support, limits) come from.
    source: str = sec.assumed(sec.Cpu, 'source')


@dataclasses.dataclass(frozen=True)
class Dimm:
    name: str
    type: str
    capacity_gb: float
    price: float
    watts: float
    generation: str = None
    price_source: str = sec.assumed(sec.Dimm, 'price_source')
    watts_source: str = sec.assumed(sec.Dimm, 'watts_source')
    bandwidth_gbps: float = None
    latency_ns: float = None
    lanes: int = sec.assumed(sec.Dimm, 'lanes')
    source: str = sec.assumed(sec.Dimm, 'source')

    @property
    def is_pmem(self):
        return self.type == 'pmem'

    @property
    def is_cxl(self):
        return self.type == 'cxl'

    @property
    def is_dram(self):
        """A DRAM DIMM in a memory channel (not PMem, not CXL)."""
        return self.type in ('ddr4', 'ddr5')


@dataclasses.dataclass(frozen=True)
class Platform:
    name: str
    sockets: int
    controllers_per_socket: int
    channels_per_socket: int
    slots_per_channel: int
    base_cost: float
    base_watts: float
    pmem_generations: tuple = sec.assumed(sec.Platform, 'pmem_generations')
    description: str = sec.assumed(sec.Platform, 'description')
    base_cost_source: str = sec.assumed(sec.Platform, 'base_cost_source')
    base_watts_source: str = sec.assumed(sec.Platform, 'base_watts_source')
    source: str = sec.assumed(sec.Platform, 'source')
    rack_units: int = sec.assumed(sec.Platform, 'rack_units')
    memory_type: str = sec.assumed(sec.Platform, 'memory_type')
    cxl_lanes: int = sec.assumed(sec.Platform, 'cxl_lanes')
    # CPU generations the board takes; () : judged by the memory interface.
    cpu_generations: tuple = sec.assumed(sec.Platform, 'cpu_generations')

    @property
    def slots_per_socket(self):
        return self.channels_per_socket * self.slots_per_channel


@dataclasses.dataclass(frozen=True)
class Catalog:
    cpus: dict
    dimms: dict
    platforms: dict


@dataclasses.dataclass(frozen=True)
class NodeConfig:
    """One hardware configuration: platform, CPU, DIMMs per socket, mode."""

    name: str
    platform: Platform
    cpu: Cpu
    mode: str
    # One {Dimm: count} per socket.
    sockets: tuple
    description: str = ''
    # cxl_kmem: 'on' or 'off', whether the hosts' kernel promotes and
    # demotes (pmem_kernel_tiering); None: not said, which is 'on'.
    kernel_tiering: str = None

    @property
    def per_socket(self):
        return self.sockets[0]

    def total_gb(self, pmem):
        return sum(d.capacity_gb * n for sock in self.sockets
                   for d, n in sock.items() if d.is_pmem == pmem)

    @property
    def dram_gb(self):
        return sum(d.capacity_gb * n for sock in self.sockets
                   for d, n in sock.items() if d.is_dram)

    @property
    def cxl_gb(self):
        return sum(d.capacity_gb * n for sock in self.sockets
                   for d, n in sock.items() if d.is_cxl)

    @property
    def pmem_gb(self):
        return self.total_gb(pmem=True)

    def population_label(self):
        return ' + '.join('%d x %s' % (n * len(self.sockets), d.name)
                          for d, n in sorted(self.per_socket.items(),
                                             key=lambda kv: kv[0].name)
                          if n)


@dataclasses.dataclass(frozen=True)
class Workload:
    """A flavor and how its VMs really use memory."""

    name: str
    vcpus: int
    ram_gb: float
    used_gb: float
    # The flavor's extra specs, as nova-config would set them.
    extra_specs: dict
    # What the shared parser made of them.
    request: extra_specs.PmemRequest
    vpmem_gb: float = 0.0
    throughput: dict = dataclasses.field(default_factory=dict)
    calibration: dict = None
    description: str = ''
    # hw:numa_nodes of the flavor; None: no NUMA topology is asked for.
    numa_nodes: int = None
    # 'latency' or 'bandwidth': what limits the VM's speed (see
    # memperf.per_vm_throughput); bandwidth_gbps: what one VM draws.
    bound: str = 'latency'
    bandwidth_gbps: float = None
    # The Nova flavor's name when it differs from the workload's.
    flavor: str = None
    # Where the hot ratio comes from, in words ('observed: ...' when it
    # was measured).
    hot_ratio_source: str = ''

    @property
    def flavor_name(self):
        return self.flavor or self.name

    @property
    def memory_binding(self):
        """Why Nova binds the flavor's guest memory (``key=value``), or None.

        The core's :func:`~nova_pmem_filters.core.rules.charging.binds_memory`
        of the flavor's extra specs (``hw:numa_nodes``, ``hw:pmem``): such a
        guest charges its whole RAM to a kernel-tiered host's near memory.
        """
        return charging.binds_memory(self.extra_specs)

    @property
    def ram_mb(self):
        return int(round(self.ram_gb * profile.MB_PER_GB))

    @property
    def hot_ratio(self):
        return self.request.hot_ratio

    @property
    def priority(self):
        return self.request.priority


@dataclasses.dataclass(frozen=True)
class Policies:
    memory_cap: float = sec.assumed(sec.Policies, 'memory_cap')
    host_reserve_gb: float = sec.assumed(sec.Policies, 'host_reserve_gb')
    cpu_overcommit: float = sec.assumed(sec.Policies, 'cpu_overcommit')
    cache_overcommit: float = sec.assumed(sec.Policies, 'cache_overcommit')
    # Share of an App-Direct region lost to namespace metadata and alignment
    # (devdax/fsdax with struct-page metadata on the device: 64 bytes per
    # 4 KiB page is 1/64).
    namespace_overhead: float = sec.assumed(sec.Policies, 'namespace_overhead')


@dataclasses.dataclass(frozen=True)
class Performance:
    # Intel's platform guide (nova_pmem_filters.planner.population.sources,
    # 'intel-pmem-platforms'): Optane about 350 ns idle read latency against
    # under 100 ns for DRAM.
    dram_latency_ns: float = sec.assumed(sec.Performance, 'dram_latency_ns')
    pmem_latency_ns: float = sec.assumed(sec.Performance, 'pmem_latency_ns')


@dataclasses.dataclass(frozen=True)
class Economics:
    """What a node costs over its service life, and the fleet's caps."""

    # Assumptions to replace with the site's own figures.
    power_price_per_kwh: float = sec.assumed(sec.Economics,
                                             'power_price_per_kwh')
    pue: float = sec.assumed(sec.Economics, 'pue')
    years: float = sec.assumed(sec.Economics, 'years')
    budget: float = None
    power_kw: float = None
    rack_units: float = None


@dataclasses.dataclass(frozen=True)
class Period:
    """VMs to carry for some years: one step of a demand forecast."""

    name: str
    years: float
    vms: dict


@dataclasses.dataclass(frozen=True)
class Scenario:
    name: str
    source: str
    catalog: Catalog
    configs: dict
    baseline: str
    workloads: dict
    policies: Policies
    performance: Performance
    description: str = ''
    economics: Economics = Economics()
    # Periods of demand, in order; empty when the scenario gives none.
    demand: tuple = ()
