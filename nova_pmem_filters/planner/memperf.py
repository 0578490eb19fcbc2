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
"""What a VM gets of a node's memory: hit fraction, miss cost, throughput."""

import math

from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.planner import vmsizing


def hit_fraction(node_, workload, vms, policies):
    """Share of the node's hot working set the DRAM cache holds.

    Counted in what the VMs charge the near memory (:func:`charge_mb`): on
    a ``cxl_kmem`` node, bound VMs (and every VM where the kernel does not
    tier) need their whole RAM there for their hot part to be served from
    it.
    """
    if node_.config.mode not in kinds.TIERED or vms <= 0:
        return 1.0
    # The DRAM itself, not the overcommitted bound: with cache_overcommit
    # above 1 the filter admits more hot RAM than the cache can hold, and
    # that excess is what misses.
    capacity = node_.profile.cache_capacity_mb()
    hot = vms * vmsizing.charge_mb(node_, workload, workload.ram_mb)
    return min(1.0, capacity / hot) if hot > 0 else 1.0


def miss_factor(performance, node_=None):
    """Throughput of a cache miss relative to a hit.

    The far tier's latency is the PMem's (the scenario's
    ``pmem_latency_ns``) or, on a CXL node, the CXL devices'.
    """
    far = performance.pmem_latency_ns
    if node_ is not None and node_.far_latency_ns:
        far = node_.far_latency_ns
    return performance.dram_latency_ns / far


def sustained_bandwidth(node_, h):
    """GB/s of memory traffic the node sustains with share h near."""
    near = node_.near_bandwidth_gbps
    far = node_.far_bandwidth_gbps or 0.0
    if near is None:
        return math.inf
    if node_.config.mode not in kinds.TIERED or h >= 1.0:
        return near
    if h <= 0.0:
        return far
    return min(near / h, far / (1.0 - h))


def per_vm_throughput(node_, workload, vms, policies, performance,
                      t_hit=None):
    """Per-VM throughput relative to the same VM on a DRAM node."""
    mode = node_.config.mode
    if t_hit is None or mode != kinds.MEMORY_MODE:
        # A calibrated t_hit is solved for Memory Mode only.
        t_hit = float(workload.throughput.get(mode, 1.0))
    if getattr(workload, 'bound', 'latency') == 'bandwidth':
        if vms <= 0:
            return t_hit
        h = hit_fraction(node_, workload, vms, policies)
        demand = vms * workload.bandwidth_gbps
        return t_hit * min(1.0, sustained_bandwidth(node_, h) / demand)
    if mode not in kinds.TIERED:
        return t_hit
    h = hit_fraction(node_, workload, vms, policies)
    return t_hit * (h + (1.0 - h) * miss_factor(performance, node_))
