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
"""What Nova admits when configured as ``nova-config`` prints it.

The memory settings of each compute role (``reserved_host_memory_mb``, one
``ram_allocation_ratio`` for every workload its hosts run) and, with
Placement accounting, the ``CUSTOM_NEAR_MEMORY_MB`` inventory and the
flavors' whole-MB requests; and the number of VMs of each workload one
host then admits (:func:`admitted`), which ``compare`` and every listing
built on it print as ``vms_per_node``. Imports neither Nova nor
oslo.config: the planner's listings run where Nova is not installed.
"""

import math

from nova_pmem_filters.core.rules import placement
from nova_pmem_filters.core.rules import profile

from nova_pmem_filters.planner import vmsizing

from nova_pmem_filters.planner import model


# Precision of the printed allocation ratios.
RATIO_DIGITS = 4


def placement_admits(total_mb, reserved_mb, ratio, flavor_mb):
    """How many instances Placement admits on one MEMORY_MB inventory."""
    capacity = placement.capacity(total_mb, reserved_mb, ratio)
    return max(int(math.floor(capacity / flavor_mb + 1e-9)), 0)


def cell_admits(cell_mb, ratio, instance_cell_mb):
    """How many instance cells NUMATopologyFilter admits on one host cell.

    By memory only, as Nova's ``_numa_fit_instance_cell`` compares it
    (shared CPUs, no huge pages): ``usage + instance cell <= cell memory x
    ram_allocation_ratio``, and an instance cell no larger than the cell.
    """
    if instance_cell_mb > cell_mb:
        return 0
    limit = cell_mb * ratio
    count = max(int(math.floor(limit / instance_cell_mb)), 0)
    # Settle float rounding with Nova's own comparison.
    while (count + 1) * instance_cell_mb <= limit:
        count += 1
    while count and count * instance_cell_mb > limit:
        count -= 1
    return count


def numa_memory_target(node_, workload, policies):
    """(cell MB, instance cell MB, slices) when a cell bound applies."""
    if not workload.numa_nodes:
        return None
    sizing = vmsizing.cells(node_)
    if sizing is None or workload.numa_nodes > sizing.cells:
        return None
    instance_mb = workload.ram_mb // workload.numa_nodes
    if instance_mb > sizing.memory_mb:
        return None
    slices = vmsizing.cell_slices(node_, workload, policies)['socket_memory']
    return sizing.memory_mb, instance_mb, slices


def _ratio_between(low, high, admits):
    """The shortest decimal ratio in [low, high) that ``admits``."""
    for digits in range(RATIO_DIGITS, RATIO_DIGITS + 6):
        scale = 10 ** digits
        for ratio in (round((low + high) / 2.0, digits),
                      math.ceil(low * scale) / scale):
            if low <= ratio < high and admits(ratio):
                return ratio
    return None


def host_reserve_mb(node_, policies, cells=False):
    """``reserved_host_memory_mb``: the memory the plan leaves the host.

    The plan counts ``(visible - host_reserve_gb) x memory_cap`` as what
    VMs may use (a memory cap below 1 is the share of memory the operator
    lets VMs consume; the field's 90% rule), so the host keeps the rest:
    the reserve, and ``1 - memory_cap`` of what is left. On a configuration
    that runs NUMA-bound workloads only ``host_reserve_gb`` is reserved
    (``cells``): NUMATopologyFilter compares each cell's memory times
    ``ram_allocation_ratio`` and never subtracts the reserve, so the cap
    must be in the ratio for the cells to hold the planner's count.
    """
    total_mb = node_.visible_memory_gb * profile.MB_PER_GB
    reserved_mb = policies.host_reserve_gb * profile.MB_PER_GB
    if not cells and policies.memory_cap < 1:
        reserved_mb += (1 - policies.memory_cap) * max(total_mb
                                                       - reserved_mb, 0)
    return int(round(reserved_mb))


def memory_settings(node_, workload, policies, reserved_mb=None):
    """(reserved_host_memory_mb, ram_allocation_ratio) for one workload.

    The reserve is :func:`host_reserve_mb` unless ``reserved_mb`` is given
    (for a NUMA-bound workload, the cells' reserve). The ratio is the one
    that makes Placement's ``(total - reserved) x ratio`` what the plan
    lets VMs use, in flavor RAM (``flavor RAM / RAM really used``, times
    the memory cap where the reserve does not hold it). It is printed with
    a few decimals; it is checked against Placement's own arithmetic and,
    where rounding would move the count, replaced by the ratio that puts
    the bound half-way between two instances. For a NUMA-bound workload
    (``hw:numa_nodes``) it must also give NUMATopologyFilter's per-cell
    memory bound the planner's count (:func:`cell_admits`); both bounds
    hold at the exact ratio, and the shortest decimal where they still do
    is taken (more decimals only when 4 do not reach).
    """
    total_mb = _total_mb(node_)
    cell = numa_memory_target(node_, workload, policies)
    if reserved_mb is None:
        reserved_mb = host_reserve_mb(node_, policies,
                                      cells=cell is not None)
    flavor_mb = workload.ram_mb
    target = vmsizing.limits(node_, workload, policies)['memory']

    def admits(ratio):
        return _admits_planned(node_, workload, policies, reserved_mb, ratio)

    usable = total_mb - reserved_mb
    planned_mb = vmsizing.vm_memory_gb(node_, policies) * profile.MB_PER_GB
    exact = (planned_mb / usable * workload.ram_gb / workload.used_gb
             if usable > 0 else policies.memory_cap)
    ratio = round(exact, RATIO_DIGITS)
    if admits(ratio) or usable <= 0:
        return reserved_mb, ratio
    low, high = target * flavor_mb / usable, (target + 1) * flavor_mb / usable
    if cell is not None:
        cell_mb, instance_mb, slices = cell
        low = max(low, slices * instance_mb / cell_mb)
        high = min(high, (slices + 1) * instance_mb / cell_mb)
    found = _ratio_between(low, high, admits) if low < high else None
    if found is None:
        found = round((target + 0.5) * flavor_mb / usable, RATIO_DIGITS)
    return reserved_mb, found


def _total_mb(node_):
    """The MEMORY_MB total of a node's hosts: its visible memory, whole MB."""
    return int(round(node_.visible_memory_gb * profile.MB_PER_GB))


def _admits_planned(node_, workload, policies, reserved_mb, ratio):
    """Whether Nova's memory bounds hold the planner's memory counts.

    Placement's MEMORY_MB bound gives exactly the planner's ``memory``
    count and, for a NUMA-bound workload, NUMATopologyFilter's per-cell
    bound exactly its ``socket_memory`` slices.
    """
    target = vmsizing.limits(node_, workload, policies)['memory']
    if placement_admits(_total_mb(node_), reserved_mb, ratio,
                        workload.ram_mb) != target:
        return False
    cell = numa_memory_target(node_, workload, policies)
    return cell is None or cell_admits(cell[0], ratio, cell[1]) == cell[2]


def memory_admits(node_, workload, policies, reserved_mb, ratio):
    """VMs of ``workload`` Nova's memory bounds admit on one node.

    Placement's ``(total - reserved) x ratio / flavor RAM`` and, for a
    NUMA-bound workload, NUMATopologyFilter's cells (``sockets x k // N``
    instances of ``N`` cells, ``k`` instance cells per host cell, as
    :func:`nova_pmem_filters.planner.vmsizing.socket_limits` deals them).
    """
    count = placement_admits(_total_mb(node_), reserved_mb, ratio,
                             workload.ram_mb)
    cell = numa_memory_target(node_, workload, policies)
    if cell is not None:
        count = min(count, node_.sockets * cell_admits(cell[0], ratio,
                                                       cell[1])
                    // workload.numa_nodes)
    return count


def fmt(value):
    if isinstance(value, float):
        return ('%.*f' % (RATIO_DIGITS, value)).rstrip('0').rstrip('.')
    return str(value)


def ratio_text(ratio):
    # memory_settings may need more than RATIO_DIGITS decimals.
    for digits in range(RATIO_DIGITS, 17):
        text = '%.*f' % (digits, ratio)
        if float(text) == ratio:
            break
    return text.rstrip('0').rstrip('.')


def near_memory_inventory(config, policies, ram_allocation_ratio):
    """The CUSTOM_NEAR_MEMORY_MB inventory of the hosts of ``config``.

    Their near memory (:func:`profile.near_memory_gb`) as the scheduler
    reads their aggregate's metadata: a configuration's DRAM, whatever the
    kind (the near memory of a tiered one).
    """
    prof = model.host_profile(config)
    return placement.near_memory_inventory(
        config.mode, profile.near_memory_gb(config.mode, config.dram_gb,
                                            prof.dram_cache_gb),
        cache_overcommit_ratio=float(policies.cache_overcommit),
        ram_allocation_ratio=ram_allocation_ratio)


def compute_memory(scen, config_name, workloads=None):
    """(reserved_host_memory_mb, ram_allocation_ratio) of a configuration.

    The reserve is what the plan leaves the host (:func:`host_reserve_mb`;
    only ``host_reserve_gb`` where a NUMA-bound workload may run). The
    ratio is the smallest any of ``workloads`` (default all) that may run
    on it needs, so that none is over-admitted.
    """
    policies = scen.policies
    config = scen.configs[config_name]
    chosen = (list(scen.workloads.values()) if workloads is None
              else workloads)
    node_ = model.node(config, policies)
    fitting = [w for w in chosen if w.request.allows(config.mode)]
    cells = any(numa_memory_target(node_, w, policies) is not None
                for w in fitting)
    reserved = host_reserve_mb(node_, policies, cells=cells)
    if fitting:
        return reserved, shared_ratio(node_, fitting, policies, reserved)
    total_mb = node_.visible_memory_gb * profile.MB_PER_GB
    usable = total_mb - reserved
    planned_mb = vmsizing.vm_memory_gb(node_, policies) * profile.MB_PER_GB
    return reserved, (round(planned_mb / usable, RATIO_DIGITS)
                      if usable > 0 else policies.memory_cap)


def shared_ratio(node_, fitting, policies, reserved_mb):
    """One ``ram_allocation_ratio`` for the workloads sharing a role.

    The smallest of the ratios the workloads need (:func:`memory_settings`)
    that gives every one of them its planned memory count; where none
    does (their flavors use different shares of their RAM), the smallest:
    no workload is over-admitted, and those that lose VMs per node are the
    ones :func:`admitted` names.
    """
    ratios = sorted({memory_settings(node_, w, policies,
                                     reserved_mb=reserved_mb)[1]
                     for w in fitting})
    for ratio in ratios:
        if all(_admits_planned(node_, w, policies, reserved_mb, ratio)
               for w in fitting):
            return ratio
    return ratios[0]


# Reasons a count Nova admits is below the plan's (public binding values,
# appended to the model's: nova_pmem_filters.planner.vmsizing.CONSTRAINTS).
SHARED_RATIO = 'shared_ratio'
NEAR_MEMORY_ROUNDING = 'near_memory_rounding'


def admitted(scen, config_name, workload, workloads=None,
             placement_accounting=False):
    """(VMs per node Nova admits as configured, reason or None).

    Configured as :func:`rows` prints it for ``workloads`` (default all)
    on one host of ``config_name``: the role's reserve and shared
    ``ram_allocation_ratio`` (:func:`compute_memory`), and with
    ``placement_accounting`` the provider config's ``CUSTOM_NEAR_MEMORY_MB``
    inventory and the flavor's whole-MB request. Never more than the
    planner's count; the reason names what takes VMs off it:
    :data:`SHARED_RATIO` (a ratio shared with workloads that need another)
    or :data:`NEAR_MEMORY_ROUNDING` (a request rounded up to a whole MB
    that no longer divides the inventory as the hot MB do).
    """
    policies = scen.policies
    config = scen.configs[config_name]
    node_ = model.node(config, policies)
    planned, _binding = vmsizing.density(node_, workload, policies)
    if planned <= 0:
        return planned, None
    reserved, ratio = compute_memory(scen, config_name, workloads)
    count, reason = planned, None
    by_memory = memory_admits(node_, workload, policies, reserved, ratio)
    if by_memory < count:
        count, reason = by_memory, SHARED_RATIO
    if placement_accounting:
        inventory = near_memory_inventory(config, policies, ratio)
        request = placement.instance_near_memory_mb(workload.ram_mb,
                                                    workload.hot_ratio)
        by_near = max(int(math.floor(placement.capacity_mb(inventory)
                                     / request + 1e-9)), 0)
        if by_near < count:
            count, reason = by_near, NEAR_MEMORY_ROUNDING
    return count, reason


def admitted_counts(scen, workloads=None, placement_accounting=False):
    """{(config, workload): (admitted, reason)} of every pair of ``scen``."""
    chosen = [scen.workloads[name] for name in (workloads or scen.workloads)]
    return {(name, w.name): admitted(scen, name, w, chosen,
                                     placement_accounting)
            for name in scen.configs for w in chosen}
