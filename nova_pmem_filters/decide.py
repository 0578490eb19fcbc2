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
"""The placement rules of the filters and weighers, without Nova.

One copy of the rules: PmemModeFilter, PmemCacheFilter, PmemTierWeigher and
PmemCacheHeadroomWeigher decide each host through these functions, and so
does the planner's scheduling simulator. Each filter rule returns whether
the host passes and, when it does not, one of the ``REJECT_*`` reasons.

This module imports nothing from Nova.
"""

from nova_pmem_filters import extra_specs
from nova_pmem_filters import profile

# Why a host does not pass.
REJECT_CONFLICT = 'flavor_conflict'
REJECT_MODE = 'mode'
REJECT_UNKNOWN = 'unknown_profile'
REJECT_CACHE = 'dram_cache'
REJECT_UNREADABLE = 'usage_unreadable'
REJECT_CELLS = 'numa_cells'
REJECT_NUMA_FIT = 'numa_fit'


def flavor_conflict(request):
    """Whether the flavor's specs contradict each other (no host passes)."""
    return bool(request.conflict) or not request.modes


def mode_passes(request, prof):
    """PmemModeFilter's rule: (passes, reason)."""
    if flavor_conflict(request):
        return False, REJECT_CONFLICT
    if not request.constrains_modes:
        return True, None
    if request.allows(prof.mode):
        return True, None
    return False, (REJECT_MODE if prof.known else REJECT_UNKNOWN)


def cache_passes(prof, used_hot_mb, new_hot_mb, overcommit_ratio,
                 accounted=False):
    """PmemCacheFilter's rule: (passes, reason).

    :param used_hot_mb: hot MB of the host's instances (None: unreadable).
    :param accounted: Placement accounts the flavor's hot RAM
        (``resources:CUSTOM_NEAR_MEMORY_MB``), so the bound is not checked
        twice.
    """
    if not prof.known:
        return False, REJECT_UNKNOWN
    if prof.mode not in profile.TIERED or accounted:
        return True, None
    if used_hot_mb is None:
        return False, REJECT_UNREADABLE
    if profile.fits_cache(used_hot_mb, new_hot_mb,
                          prof.cache_capacity_mb(overcommit_ratio)):
        return True, None
    return False, REJECT_CACHE


def cell_cache_passes(capacities, used, new):
    """PmemCacheFilter's rule on a host with NUMA cells.

    :param capacities: ``{cell: hot MB bound}`` of the host's cells, or None
        when they are unknown (``REJECT_CELLS``).
    :param used: ``{cell: hot MB}`` already charged, or None (unreadable).
    :param new: ``{cell: hot MB}`` the new instance charges: its own cells
        if it is NUMA-bound, every cell in proportion if it floats; None
        when Nova's NUMA fitting places it on no cells (``REJECT_NUMA_FIT``).
    :returns: (passes, reason, the full cell or None).
    """
    if capacities is None:
        return False, REJECT_CELLS, None
    if used is None:
        return False, REJECT_UNREADABLE, None
    if new is None:
        return False, REJECT_NUMA_FIT, None
    cell = profile.full_cell(used, new, capacities)
    if cell is None:
        return True, None, None
    return False, REJECT_CACHE, cell


def tier_score(request, prof):
    """PmemTierWeigher's raw weight: 1 on the tier the priority prefers."""
    if request is None or request.priority == extra_specs.PRIORITY_NORMAL:
        return 0.0
    if request.priority == extra_specs.PRIORITY_HIGH:
        preferred = profile.DRAM_BACKED
    else:
        preferred = profile.TIERED
    return 1.0 if prof.mode in preferred else 0.0


def headroom_score(prof, used_hot_mb, new_hot_mb, overcommit_ratio):
    """PmemCacheHeadroomWeigher's raw weight: free cache share after it."""
    capacity = prof.cache_capacity_mb(overcommit_ratio)
    if used_hot_mb is None or not capacity:
        return 0.0
    free = profile.cache_headroom_mb(used_hot_mb + new_hot_mb, capacity)
    return free / capacity


def cell_headroom_score(capacities, used, new):
    """PmemCacheHeadroomWeigher's raw weight on a host with NUMA cells.

    The smallest free share, after the new instance, of the caches of the
    cells it charges.
    """
    if not capacities or used is None or not new:
        return 0.0
    shares = [profile.cache_headroom_mb(used.get(cell, 0.0) + mb,
                                        capacities[cell]) / capacities[cell]
              for cell, mb in new.items() if mb and capacities.get(cell)]
    return min(shares) if shares else 0.0


def cell_load_score(sizes, used, new):
    """PmemNumaCellWeigher's raw weight: how lightly the cells are loaded.

    One minus the largest memory load, after the new instance, of the
    cells it would use; 0 when a cell would be full or beyond.

    :param sizes: ``{cell: memory MB}``.
    :param used: ``{cell: MB in use}`` (NUMA-bound instances on the cell,
        the rest of the host's use spread in proportion to cell size).
    :param new: ``{cell: MB}`` the new instance would add.
    """
    loads = [(used.get(cell, 0.0) + mb) / sizes[cell]
             for cell, mb in new.items() if mb and sizes.get(cell)]
    if not loads:
        return 0.0
    return min(max(1.0 - max(loads), 0.0), 1.0)
