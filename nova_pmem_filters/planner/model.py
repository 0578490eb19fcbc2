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
"""The node model: how many VMs of a workload one node holds, and why.

VMs per node is the minimum over every constraint, and the constraint that
gives the minimum is named (the "binding" resource):

``mode``
    the flavor's ``pmem:`` extra specs exclude the node's memory mode (read
    by the scheduler's own parser): 0 VMs.
``vcpu``
    ``floor(sockets x threads x cpu_overcommit / flavor vCPUs)``; left out
    for a discovered node that does not report its vCPUs.
``memory``
    ``floor((visible GB - host_reserve_gb) x memory_cap / used GB)``: the
    share of visible memory VMs may consume (``memory_cap``, e.g. 90%),
    divided by what a VM really uses. Visible memory is the DRAM on
    ``dram``, ``app_direct`` and ``cxl_devdax`` nodes, the PMem on
    ``memory_mode`` nodes and DRAM + CXL memory on ``cxl_flat`` and
    ``cxl_kmem`` nodes.
``dram_cache``
    tiered modes (``kinds.TIERED``: ``memory_mode``, ``cxl_flat``,
    ``cxl_kmem``): the number of instances PmemCacheFilter admits, computed
    by the same function from the aggregate metadata the planner emits for
    the node (``pmem_dram_cache_gb``: the DRAM cache in Memory Mode, the
    DRAM, i.e. the near memory, on CXL nodes) and what each instance
    charges there (:func:`charge_mb`, the core's
    :func:`~nova_pmem_filters.core.rules.charging.instance_mb`): its hot RAM
    (RAM x hot ratio), but on a ``cxl_kmem`` node its whole RAM when Nova
    binds the flavor's memory (``hw:numa_nodes``, ``hw:pmem``: all of it
    is allocated in the DRAM cells, and never promoted) and, on a
    configuration whose
    ``kernel_tiering`` is ``off``, for every flavor.
    The name stays ``dram_cache`` for CXL nodes too: it is the public
    binding value, and the bound is the same filter's.
``pmem_namespaces``
    flavors with vPMEM (``hw:pmem``): whole namespaces of the flavor's size
    that fit in each socket's App-Direct region after namespace overhead.

Workloads with ``numa_nodes: N`` (the flavor's ``hw:numa_nodes=N``) keep
every constraint above (Placement and PmemCacheFilter still count the whole
host) and add per-socket ones, one NUMA cell per socket (see
:func:`socket_limits`):

``numa_nodes``
    N is larger than the node's sockets (or a discovered node does not say
    how many it has): Nova finds no N distinct cells, 0 VMs.
``socket_vcpu``, ``socket_memory``, ``socket_dram_cache``
    ``floor(S x k / N)`` VMs, where ``k`` is how many slices of ``vcpus /
    N`` vCPUs, ``RAM / N`` MB and ``RAM / N x hot ratio`` hot MB (the
    whole ``RAM / N`` on a ``cxl_kmem`` node) one socket holds by that
    resource, as NUMATopologyFilter and PmemCacheFilter count a cell.

Performance model (per-VM throughput relative to the same VM on DRAM):

* ``dram`` and ``app_direct``: ``throughput[mode]`` of the workload, 1.0 if
  not given.
* ``memory_mode``: ``t = t_hit x (h + (1 - h) x dram_latency / pmem_latency)``
  where ``h = min(1, cache bound / hot RAM of all VMs on the node)`` is the
  share of the hot working set the DRAM cache holds, and ``t_hit`` the
  per-VM throughput while it holds all of it. Misses run at PMem latency
  (pessimistic: all of a miss is memory-bound). ``t_hit`` is the workload's
  ``throughput.memory_mode`` or, with a ``calibration``, solved from a
  node-throughput gain the scenario gives, published or assumed (see
  :func:`calibrate`).
* ``cxl_flat`` and ``cxl_kmem``: the same formula with the CXL device's
  idle latency (from the catalog) as the far latency:
  ``t = t_hit x (h + (1 - h) x dram_latency / cxl_latency)``; ``t_hit`` is
  ``throughput.<mode>``, 1.0 if not given. ``cxl_devdax`` is like
  ``app_direct``: guest RAM is the DRAM, and Nova offers no CXL devdax
  device to guests (no vPMEM-like backend exists for it), so its CXL memory
  adds cost and power but no VM capacity.
* bandwidth-bound workloads (``bound: bandwidth``) on any node: a roofline
  instead of the latency mix. A share ``h`` of the node's memory traffic
  goes to the near tier and ``1 - h`` to the far tier, so the node sustains
  ``T = min(B_near / h, B_far / (1 - h))`` GB/s (``B_near`` on a node
  without a far tier), where ``B_near`` is the DRAM bandwidth (populated
  channels x the DIMM's channel bandwidth, every socket) and ``B_far`` the
  CXL devices' bandwidth; ``t = t_hit x min(1, T / (VMs x bandwidth one
  VM draws))``.
"""

import dataclasses
import math

from nova_pmem_filters.core.formats import scenario_sections as sec
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters.core.rules import tiering
from nova_pmem_filters.planner import memperf
from nova_pmem_filters.planner import population
from nova_pmem_filters.planner.population import common
from nova_pmem_filters.planner import vmsizing


def kernel_tiering(config):
    """``pmem_kernel_tiering`` of ``config``'s hosts, None where none applies.

    On a kind the kernel tiers (``cxl_kmem``): the configuration's
    ``kernel_tiering``, ``on`` when it does not say, written out so that
    the aggregate says what the plan assumed.
    """
    if config.mode not in kinds.KERNEL_TIERED:
        return None
    return getattr(config, 'kernel_tiering', None) or tiering.DEFAULT_STATE


def aggregate_metadata(config):
    """The host-aggregate metadata that describes ``config`` to Nova.

    Tiered modes carry their near memory, the DRAM, as
    ``pmem_dram_cache_gb``, and ``cxl_kmem`` whether its kernel tiers as
    ``pmem_kernel_tiering`` (the core's :func:`profile.metadata`).
    """
    return profile.metadata(config.mode, config.dram_gb,
                            kernel_tiering=kernel_tiering(config))


def host_profile(config):
    """The profile the scheduler will read from ``config``'s metadata."""
    return profile.build(config.mode, config.dram_gb,
                         kernel_tiering=kernel_tiering(config))


@dataclasses.dataclass(frozen=True)
class Node:
    """What one node of a configuration offers."""

    config: object
    profile: profile.HostProfile
    visible_memory_gb: float
    dram_cache_gb: float
    # Usable App-Direct capacity per socket, after namespace overhead.
    region_gb: tuple
    vcpus: int
    cost: float
    watts: float
    findings: tuple
    # Sockets, one host NUMA cell each; None: not known (a discovered host
    # whose profile lists none).
    sockets: int = None
    # CXL tiers: idle latency of the far tier (None: the scenario's
    # pmem_latency_ns, Memory Mode) and the node's near (DRAM) and far
    # (CXL) bandwidth, GB/s; None where the catalog gives none.
    far_latency_ns: float = None
    near_bandwidth_gbps: float = None
    far_bandwidth_gbps: float = None

    @property
    def namespace_gb(self):
        return sum(self.region_gb)

    @property
    def valid(self):
        return not common.errors(self.findings)


def node(config, policies):
    """Build the :class:`Node` of a configuration."""
    prof = host_profile(config)
    mode = config.mode
    kind = kinds.get(mode)
    visible = kinds.guest_memory_gb(mode, {
        kinds.DRAM_MEDIUM: config.dram_gb, kinds.PMEM_MEDIUM: config.pmem_gb,
        kinds.CXL_MEDIUM: config.cxl_gb})
    cache_gb = prof.dram_cache_gb or 0.0
    if kind.namespaces:
        keep = 1.0 - policies.namespace_overhead
        regions = tuple(sum(d.capacity_gb * n for d, n in sock.items()
                            if d.is_pmem) * keep
                        for sock in config.sockets)
    else:
        regions = tuple(0.0 for _ in config.sockets)
    plat, cpu = config.platform, config.cpu
    dimms = [(d, n) for sock in config.sockets for d, n in sock.items()]
    cost = (plat.base_cost + cpu.price * plat.sockets
            + sum(d.price * n for d, n in dimms))
    watts = (plat.base_watts + cpu.watts * plat.sockets
             + sum(d.watts * n for d, n in dimms))
    near_bw, far_bw, far_latency = _tiers(config)
    return Node(config=config, profile=prof, visible_memory_gb=visible,
                dram_cache_gb=cache_gb, region_gb=regions,
                vcpus=plat.sockets * cpu.threads, cost=cost, watts=watts,
                findings=tuple(population.check(config)),
                sockets=len(config.sockets),
                far_latency_ns=(far_latency
                                if kind.far_memory == kinds.CXL_MEDIUM
                                else None),
                near_bandwidth_gbps=near_bw, far_bandwidth_gbps=far_bw)


def _tiers(config):
    """(near GB/s, far GB/s, far latency ns) of a configuration.

    Near: per socket, the populated channels (DIMMs up to the channel
    count) x the DIMMs' channel bandwidth; far: the CXL devices' bandwidth,
    and their capacity-weighted idle latency. None where a figure is
    missing from the catalog.
    """
    near = far = 0.0
    latency_weight = latency_gb = 0.0
    for sock in config.sockets:
        dimms = [(d, n) for d, n in sock.items() if d.is_dram]
        count = sum(n for _d, n in dimms)
        if any(d.bandwidth_gbps is None for d, _n in dimms):
            near = None
        elif count and near is not None:
            channel = sum(d.bandwidth_gbps * n for d, n in dimms) / count
            near += min(count, config.platform.channels_per_socket) * channel
        for d, n in sock.items():
            if d.is_cxl:
                far += d.bandwidth_gbps * n
                latency_weight += d.latency_ns * d.capacity_gb * n
                latency_gb += d.capacity_gb * n
    latency = latency_weight / latency_gb if latency_gb else None
    return near, far, latency


@dataclasses.dataclass(frozen=True)
class DiscoveredConfig:
    """Stands for the configuration of a node known only by what it reports.

    :func:`limits` and :func:`fit` read a node's ``config.name`` and
    ``config.mode`` only.
    """

    name: str
    mode: str


def discovered_node(name, mode, visible_memory_gb, dram_cache_gb,
                    vcpus=None, region_gb=(), sockets=None,
                    cell_cache_gb=None, kernel_tiering=None):
    """Build a :class:`Node` from a discovered host's figures.

    For hosts that exist (``nova-pmem-planner fleet``): no DIMM population,
    price or power, only what the host reports. The near memory (per NUMA
    cell too, ``cell_cache_gb``) and the kernel's tiering
    (``kernel_tiering``, ``on`` or ``off``, None when the profile does not
    record it) are read back through the aggregate metadata the scheduler
    would see (the core's :func:`profile.build`, as
    :meth:`~nova_pmem_filters.core.formats.discoveredhost.DiscoveredHost.profile`),
    as in
    :func:`host_profile`. ``vcpus`` None (not reported) leaves out the
    vcpu constraint; ``sockets`` None (not reported) gives NUMA-bound
    workloads 0 VMs (binding ``numa_nodes``), never a host-wide count.
    """
    prof = profile.build(mode, dram_cache_gb, cell_cache_gb, kernel_tiering)
    return Node(config=DiscoveredConfig(name=name, mode=mode), profile=prof,
                visible_memory_gb=float(visible_memory_gb),
                dram_cache_gb=prof.dram_cache_gb or 0.0,
                region_gb=tuple(region_gb), vcpus=vcpus, cost=0.0,
                watts=0.0, findings=(), sockets=sockets)


def cell_sizing(config, policies=None):
    """Per-cell sizing of a configuration, e.g. to build a test host.

    :returns: a :class:`Cells`: number of cells (the platform's sockets),
        memory MB, vCPUs and DRAM-cache GB of each cell.
    """
    if policies is None:
        # Only the namespace overhead is read, and not for the cells.
        policies = sec.resolved(sec.Policies())
    return vmsizing.cells(node(config, policies))


@dataclasses.dataclass(frozen=True)
class Fit:
    """One workload on one configuration: the row of a comparison."""

    config: str
    workload: str
    mode: str
    visible_memory_gb: float
    dram_cache_gb: float
    vms_per_node: int
    binding: str
    node_cost: float
    cost_per_vm: float
    node_watts: float
    vms_per_kw: float
    per_vm_throughput: float
    node_throughput: float
    hit_fraction: float
    warnings: tuple


def fit(node_, workload, policies, performance, t_hit=None, admitted=None):
    """The :class:`Fit` of one workload on one node.

    :param admitted: (VMs, reason) Nova admits as nova-config configures
        it (:func:`nova_pmem_filters.planner.admission.admitted`); below the
        model's count, it is the density, and its reason (``shared_ratio``,
        ``near_memory_rounding``) the binding.
    """
    vms, binding = vmsizing.density(node_, workload, policies)
    if admitted is not None and admitted[0] < vms:
        vms, binding = admitted
    t = memperf.per_vm_throughput(node_, workload, vms, policies, performance,
                                  t_hit=t_hit)
    return Fit(
        config=node_.config.name, workload=workload.name,
        mode=node_.config.mode,
        visible_memory_gb=node_.visible_memory_gb,
        dram_cache_gb=node_.dram_cache_gb,
        vms_per_node=vms, binding=binding, node_cost=node_.cost,
        cost_per_vm=(node_.cost / vms) if vms else math.inf,
        node_watts=node_.watts,
        vms_per_kw=vms / (node_.watts / 1000.0) if node_.watts else math.inf,
        per_vm_throughput=t, node_throughput=vms * t,
        hit_fraction=memperf.hit_fraction(node_, workload, vms, policies),
        warnings=tuple(f.code for f in common.warnings(
            node_.findings)))


@dataclasses.dataclass(frozen=True)
class Calibration:
    workload: str
    config: str
    # calibration.node_gain: published, or an assumption (``source``).
    node_gain: float
    source: str
    baseline_vms: int
    config_vms: int
    hit_fraction: float
    t_hit: float
    model_gain: float


def calibrate(scenario):
    """Solve each calibrated workload's ``t_hit`` from its node gain.

    A calibration says: on the first ``memory_mode`` configuration of the
    scenario, node throughput was ``node_gain`` times the baseline's. With
    the model's own densities n_b and n_m and hit fraction h:
    ``node_gain = n_m x t_hit x (h + (1 - h) x miss) / (n_b x t_base)``.

    :returns: {workload name: Calibration}
    """
    policies, performance = scenario.policies, scenario.performance
    base = node(scenario.configs[scenario.baseline], policies)
    result = {}
    for workload in scenario.workloads.values():
        cal = workload.calibration
        if not cal:
            continue
        target = next((c for c in scenario.configs.values()
                       if c.mode == cal['mode']), None)
        if target is None:
            continue
        tnode = node(target, policies)
        n_b, _ = vmsizing.density(base, workload, policies)
        n_m, _ = vmsizing.density(tnode, workload, policies)
        t_base = memperf.per_vm_throughput(base, workload, n_b, policies,
                                           performance)
        if not n_b or not n_m:
            continue
        h = memperf.hit_fraction(tnode, workload, n_m, policies)
        shape = h + (1.0 - h) * memperf.miss_factor(performance)
        t_hit = cal['node_gain'] * n_b * t_base / (n_m * shape)
        model_gain = (n_m * memperf.per_vm_throughput(
            tnode, workload, n_m, policies, performance, t_hit=t_hit)
            / (n_b * t_base))
        result[workload.name] = Calibration(
            workload=workload.name, config=target.name,
            node_gain=cal['node_gain'], source=cal.get('source', ''),
            baseline_vms=n_b, config_vms=n_m, hit_fraction=h, t_hit=t_hit,
            model_gain=model_gain)
    return result


def compare(scenario, admitted=None):
    """Fits of every workload on the baseline and every other config.

    :param admitted: {(config, workload): (VMs, reason)} that Nova admits
        as configured
        (:func:`nova_pmem_filters.planner.admission.admitted_counts`); the
        densities are then those.

    :returns: a list of (Fit, relative_throughput, cost_vs_baseline) in
        scenario order, baseline first.
    """
    policies, performance = scenario.policies, scenario.performance
    cal = calibrate(scenario)
    names = [scenario.baseline] + [n for n in scenario.configs
                                   if n != scenario.baseline]
    nodes = {n: node(scenario.configs[n], policies) for n in names}
    base_node = nodes[scenario.baseline]
    rows = []
    for name in names:
        for workload in scenario.workloads.values():
            t_hit = cal[workload.name].t_hit if workload.name in cal else None
            this = fit(nodes[name], workload, policies, performance,
                       t_hit=t_hit,
                       admitted=(admitted or {}).get((name, workload.name)))
            base = fit(base_node, workload, policies, performance,
                       t_hit=t_hit, admitted=(admitted or {}).get(
                           (scenario.baseline, workload.name)))
            relative = (this.node_throughput / base.node_throughput
                        if base.node_throughput else math.nan)
            # A baseline priced at zero (prices left out) has no ratio.
            cost_delta = (this.node_cost / base.node_cost - 1.0
                          if base.node_cost else math.nan)
            rows.append((this, relative, cost_delta))
    return rows
