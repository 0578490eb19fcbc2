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
"""How many VMs of a workload a node holds, host-wide and per cell."""

import dataclasses
import math

from nova_pmem_filters.core.rules import charging
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import nearmem
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters.core.rules import tiering


# Order in which tied constraints are named. The names are the public
# ``binding`` values: append, never rename.
CONSTRAINTS = ('mode', 'vcpu', 'memory', 'dram_cache', 'pmem_namespaces',
               'numa_nodes', 'socket_vcpu', 'socket_memory',
               'socket_dram_cache', 'shared_ratio', 'near_memory_rounding')


# Floors of quotients that are integers on paper must not drop by one
# through float rounding (0.9 x 240 / 24 is 8.999...).
EPS = 1e-9


def _floor(x):
    return int(math.floor(x + EPS))


@dataclasses.dataclass(frozen=True)
class Cells:
    """What one host NUMA cell (one socket) of a node offers."""

    cells: int
    # The cell's memory as the host reports it: the visible memory of one
    # socket, whole MB (NUMATopologyFilter's ``cell.memory``, not less
    # reserved_host_memory_mb). On a kind the kernel tiers (cxl_kmem) the
    # CXL memory is a NUMA node of its own without CPUs, where no
    # instance cell lands: a cell with CPUs holds its socket's DRAM only.
    memory_mb: int
    # Logical CPUs of the cell; None: the node does not report its vCPUs.
    vcpus: int
    # Tiered modes: the near memory of the smallest cell, GB (the sizes
    # the profile gives per cell, else the host's split evenly, as the
    # scheduler splits it); 0 on other modes.
    cache_gb: float


def cell_capacities_mb(node_, overcommit_ratio=1.0):
    """``{cell: MB}`` of hot RAM each cell of a tiered node may hold.

    The scheduler's per-cell bound (the core's
    :meth:`profile.HostProfile.cell_capacities_mb`) on the cells the
    profile names or, without per-cell sizes, on one cell per socket.
    None on other modes or when the sockets are unknown.
    """
    prof = node_.profile
    if not node_.sockets or not prof.tiered:
        return None
    if prof.cell_cache_gb:
        ids = [cell for cell, _gb in prof.cell_cache_gb]
    else:
        ids = range(node_.sockets)
    capacities, _problem = prof.cell_capacities_mb(ids, overcommit_ratio)
    return capacities


def cells(node_):
    """The per-cell sizing of a :class:`Node`; None if sockets unknown."""
    count = node_.sockets
    if not count:
        return None
    vcpus = None if node_.vcpus is None else node_.vcpus // count
    capacities = cell_capacities_mb(node_)
    cache_gb = (min(capacities.values()) / profile.MB_PER_GB
                if capacities else 0.0)
    memory_gb = node_.visible_memory_gb / count
    if tiering.kernel_tiered(node_.profile):
        # The DRAM of the cell: its near memory.
        memory_gb = cache_gb
    return Cells(cells=count,
                 memory_mb=int(round(memory_gb * profile.MB_PER_GB)),
                 vcpus=vcpus, cache_gb=cache_gb)


def vm_memory_gb(node_, policies):
    """The memory VMs of a node may use, GB (the ``memory`` bound's).

    ``(visible GB - host_reserve_gb) x memory_cap``, as the packer and
    nova-config (the reserve and ratio it prints) count it too.
    """
    usable = max(node_.visible_memory_gb - policies.host_reserve_gb, 0.0)
    return usable * policies.memory_cap


def binds_memory(workload):
    """Whether Nova binds the guest memory of ``workload``'s flavor.

    The core's :func:`~nova_pmem_filters.core.rules.charging.binds_memory` of
    the flavor's extra specs, as the scheduler reads them.
    """
    return charging.binds_memory(workload.extra_specs) is not None


def charge_mb(node_, workload, memory_mb):
    """Near-memory MB ``memory_mb`` of a workload's VM charges on a node.

    For one VM (``workload.ram_mb``) or one of its NUMA cells (``RAM /
    N``): the core's :func:`~nova_pmem_filters.core.rules.charging.instance_mb`
    with the node's profile, as PmemCacheFilter charges it.
    """
    return charging.instance_mb(node_.profile, workload.request, memory_mb,
                                binds_memory(workload))


def limits(node_, workload, policies):
    """VMs per node allowed by each constraint that applies."""
    mode = node_.config.mode
    request = workload.request
    result = {}
    if not request.allows(mode):
        result['mode'] = 0
    if node_.vcpus is not None:
        result['vcpu'] = _floor(node_.vcpus * policies.cpu_overcommit
                                / workload.vcpus)
    result['memory'] = _floor(vm_memory_gb(node_, policies)
                              / workload.used_gb)
    if mode in kinds.TIERED:
        capacity = node_.profile.cache_capacity_mb(policies.cache_overcommit)
        result['dram_cache'] = nearmem.instances_in_cache(
            capacity, charge_mb(node_, workload, workload.ram_mb))
    if workload.vpmem_gb:
        result['pmem_namespaces'] = sum(_floor(region / workload.vpmem_gb)
                                        for region in node_.region_gb)
    if workload.numa_nodes:
        result.update(socket_limits(node_, workload, policies))
    return result


def cell_slices(node_, workload, policies):
    """Instance cells one host cell holds, by resource.

    An instance cell is ``vcpus / N`` vCPUs and ``RAM / N`` MB (Nova's
    ``_get_numa_topology_auto``). Per resource, as Nova 34's
    ``_numa_fit_instance_cell`` (shared CPUs, no pinning, no huge pages)
    with NUMATopologyFilter's limits and PmemCacheFilter count a cell:

    * ``socket_vcpu``: ``floor(cell CPUs x cpu_overcommit / (vcpus / N))``,
      0 when ``vcpus / N`` exceeds the cell's CPUs (Nova does not let an
      instance cell overcommit against itself);
    * ``socket_memory``: ``floor(cell GB x memory_cap / (used GB / N))``,
      Nova's ``cell.memory x ram_allocation_ratio`` with the ratio
      nova-config emits; 0 when ``RAM / N`` exceeds the cell's memory (on
      ``cxl_kmem`` the socket's DRAM: :class:`Cells`);
    * ``socket_dram_cache`` (tiered modes): instances of ``RAM / N x hot
      ratio`` hot MB (``RAM / N`` whole on ``cxl_kmem``,
      :func:`charge_mb`) that ``nearmem.instances_in_cache`` admits in the
      cell's near memory x ``cache_overcommit``.

    :returns: {constraint: slices}, or None when the node's sockets are
        unknown.
    """
    sizing = cells(node_)
    if sizing is None:
        return None
    n = workload.numa_nodes
    cell_vcpus = workload.vcpus // n
    cell_mb = workload.ram_mb // n
    result = {}
    if sizing.vcpus is not None:
        result['socket_vcpu'] = (
            0 if cell_vcpus > sizing.vcpus
            else _floor(sizing.vcpus * policies.cpu_overcommit / cell_vcpus))
    cell_gb = sizing.memory_mb / profile.MB_PER_GB
    result['socket_memory'] = (
        0 if cell_mb > sizing.memory_mb
        else _floor(cell_gb * policies.memory_cap * n / workload.used_gb))
    capacities = cell_capacities_mb(node_, policies.cache_overcommit)
    if capacities:
        # The scheduler's bound per cell; the smallest cell decides.
        result['socket_dram_cache'] = nearmem.instances_in_cache(
            min(capacities.values()), charge_mb(node_, workload, cell_mb))
    return result


def socket_limits(node_, workload, policies):
    """VMs per node allowed by the per-socket constraints.

    Each VM needs N distinct cells. With S equal sockets that each hold k
    instance cells (by one resource), at most ``floor(S x k / N)`` VMs fit
    (S x k slices, N per VM) and that many do: deal VM after VM to the N
    least-loaded cells. Nova boots them that way: with N < S,
    ``numa_fit_instance_to_host`` tries the host cells sorted by most free
    memory, then least CPU usage (``[compute]
    packing_host_numa_cells_allocation_strategy = False``, the default,
    which nova-config leaves alone), so cell loads never differ by more
    than one slice and Nova admits exactly ``floor(S x k / N)``; with N = S
    every VM takes every cell, k VMs. With the packing strategy set to True
    Nova fills the most-used cells first and can strand slices (S=3, k=2,
    N=2: 2 VMs, not 3); the planner does not count that.

    :returns: {constraint: VMs}: ``numa_nodes`` 0 when N exceeds the
        sockets (or they are unknown), else ``socket_vcpu``,
        ``socket_memory`` and, on tiered modes, ``socket_dram_cache``.
    """
    n = workload.numa_nodes
    slices = cell_slices(node_, workload, policies)
    if slices is None or n > node_.sockets:
        return {'numa_nodes': 0}
    return {name: node_.sockets * k // n for name, k in slices.items()}


def density(node_, workload, policies):
    """(VMs per node, binding constraints joined by '+')."""
    allowed = limits(node_, workload, policies)
    vms = max(min(allowed.values()), 0)
    binding = '+'.join(name for name in CONSTRAINTS
                       if name in allowed and allowed[name] == vms)
    return vms, binding
