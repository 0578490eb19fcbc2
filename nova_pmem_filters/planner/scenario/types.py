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
"""What a scenario holds once read: configurations, workloads, the whole.

The planner's model on top of the values of the file. The catalog entries,
policies, performance, economics and periods of demand are the file's own
classes (:mod:`nova_pmem_filters.core.formats.scenario_sections`), resolved:
every key the file leaves out at the value the format assumes for it.
"""

import dataclasses

from nova_pmem_filters.core.formats import scenario_sections as sec
from nova_pmem_filters.core.rules import charging
from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import profile


@dataclasses.dataclass(frozen=True)
class NodeConfig:
    """One hardware configuration: platform, CPU, DIMMs per socket, mode."""

    name: str
    platform: sec.Platform
    cpu: sec.Cpu
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
class Scenario:
    name: str
    source: str
    catalog: sec.Catalog
    configs: dict
    baseline: str
    workloads: dict
    policies: sec.Policies
    performance: sec.Performance
    description: str = ''
    economics: sec.Economics = sec.resolved(sec.Economics())
    # Periods of demand, in order; empty when the scenario gives none.
    demand: tuple = ()
