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

One copy of the rules: PmemModeFilter, PmemCacheFilter, PmemTierWeigher,
PmemCacheHeadroomWeigher and PmemNumaCellWeigher decide each host through
these functions, and so do the doctor and the planner's scheduling
simulator. Each filter rule returns whether the host passes and, when it
does not, one of the ``REJECT_*`` reasons.

The near-memory rule (:func:`cache_check`) chooses between the host-wide
bound and the bound of each NUMA cell in one place (:func:`uses_cells`).
What each instance charges (its hot RAM, or on a host whose tiering the
kernel does its whole RAM where it is NUMA-bound or the kernel does not
tier) is :mod:`nova_pmem_filters.core.rules.tiering`'s, applied here.

This module imports nothing from Nova.
"""

import dataclasses

from nova_pmem_filters.core.rules import charging
from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import nearmem
from nova_pmem_filters.core.rules import tiering

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


def tier_score(request, prof):
    """PmemTierWeigher's raw weight: 1 on the tier the priority prefers."""
    if request is None or request.priority == extra_specs.PRIORITY_NORMAL:
        return 0.0
    if request.priority == extra_specs.PRIORITY_HIGH:
        preferred = kinds.DRAM_BACKED
    else:
        preferred = kinds.TIERED
    return 1.0 if prof.mode in preferred else 0.0


@dataclasses.dataclass(frozen=True)
class CellView:
    """The near memory of a tiered host, cell by cell, for one request.

    ``capacities``, ``used`` and ``new`` map a cell id to MB: each cell's
    bound, the hot MB already charged to it, and what the new instance
    charges. ``capacities`` is None (and ``problem`` says why) when the
    aggregates name other cells than the host has; ``used`` None when the
    host's usage is unreadable; ``new`` None when Nova fits the NUMA-bound
    flavor on no cells. ``full`` is the first cell that cannot take it.
    """

    capacities: dict
    used: dict
    new: dict
    problem: str = None
    full: int = None


def uses_cells(prof, cells, used, bound):
    """Whether a tiered host's near memory is checked cell by cell.

    On a host with NUMA cells, when the flavor is NUMA-bound or the host
    holds NUMA-bound instances. Otherwise every instance floats, each cell
    carries the same share of hot RAM as of near memory, and the host-wide
    bound decides the same.

    :param cells: the ids of the host's cells with CPUs, None when the host
        reports no NUMA topology.
    :param used: the host's :class:`nearmem.HotRam`, None if unreadable.
    :param bound: the flavor is NUMA-bound.
    """
    return (cells is not None and prof.mode in kinds.TIERED
            and (bound or (used is not None and bool(used.bound))))


def cells_needed(used, bound):
    """Whether :func:`uses_cells` may need a host's cells, before charging.

    A caller that reads the ledger's usage can leave a host's NUMA
    topology unread where this is False: the flavor floats, and the host
    holds no NUMA-bound instance, counted by their hot RAM (``bound``) or
    by their whole RAM (``bound_ram``, which kernel-tiered hosts charge,
    :func:`charging.charger`).

    :param used: the host's :class:`nearmem.HotRam` as the ledger counts
        it, None if unreadable.
    :param bound: the flavor is NUMA-bound.
    """
    return bool(bound or (used is not None
                          and (used.bound or used.bound_ram)))


def cell_view(prof, ratio, cells, used, request, memory_mb, fit=None):
    """The per-cell picture of a tiered host (:class:`CellView`).

    :param used: the host's HotRam as charged (:func:`charging.charged`).
    :param fit: for a NUMA-bound flavor, a callable returning ``{host cell:
        memory MB}`` Nova claims for the instance, or None when no cells
        fit; None for a flavor that floats (it charges every cell in
        proportion to its near memory).
    """
    placed = placed_cells(prof, ratio, cells, used)
    capacities, used_cells = placed.capacities, placed.used
    if capacities is None:
        return placed
    share = charging.instance_ratio(prof, request.hot_ratio, fit is not None)
    if fit is not None:
        claimed = fit()
        new = None if claimed is None else {
            cell: mb * share for cell, mb in claimed.items()}
    else:
        new = nearmem.spread_mb(memory_mb * share, capacities)
    full = None
    if used_cells is not None and new is not None:
        full = nearmem.full_cell(used_cells, new, capacities)
    return CellView(capacities, used_cells, new, full=full)


def placed_cells(prof, ratio, cells, used):
    """The cells' bounds and the hot MB already charged to each.

    A :class:`CellView` without ``new``: what :func:`cell_view` starts from
    and what :func:`overcommitted` judges.
    """
    capacities, problem = prof.cell_capacities_mb(cells, ratio)
    if capacities is None:
        return CellView(None, None, None, problem=problem)
    used_cells = None
    if used is not None:
        used_cells = nearmem.cell_usage_mb(used.floating, used.bound,
                                           capacities)
    return CellView(capacities, used_cells, None)


def reads_usage(prof, accounted=False, bound=False):
    """Whether the cache rules read the host's hot RAM, cells and fit.

    Only on tiered hosts, and there not for a floating flavor whose hot RAM
    Placement accounts, but on hosts whose tiering the kernel does, where
    instances may charge more than the hot MB Placement holds. Elsewhere
    the rules decide from the profile alone, so callers gather nothing for
    such hosts.

    :param bound: the flavor is NUMA-bound (``cache_check``'s ``fit``).
    """
    return prof.mode in kinds.TIERED and (
        bound or not accounted or tiering.kernel_tiered(prof))


def cache_rule(prof, ratio, request, memory_mb, accounted=False,
               bound=False):
    """PmemCacheFilter's rule on hosts of profile ``prof``, for a request.

    What depends on the profile and the request only is worked out once;
    the function returned decides one host from what it holds:
    ``check(used, cells=None, fit=None)`` returns (passes, reason, cell
    view or None). See :func:`cache_check` for the rule and the arguments;
    ``bound`` says whether a ``fit`` will be given.
    """
    if not reads_usage(prof, accounted, bound):
        verdict = ((False, REJECT_UNKNOWN, None) if prof.mode is None
                   else (True, None, None))
        return lambda used, cells=None, fit=None: verdict
    capacity = prof.cache_capacity_mb(ratio)
    new_hot_mb = charging.instance_mb(prof, request, memory_mb, bound)
    fits = nearmem.fits_cache
    charge = charging.charger(prof)

    def check(used, cells=None, fit=None):
        if charge is not None and used is not None:
            used = charge(used)
        if cells is not None and uses_cells(prof, cells, used,
                                            fit is not None):
            view = cell_view(prof, ratio, cells, used, request, memory_mb,
                             fit)
            if view.capacities is None:
                return False, REJECT_CELLS, view
            if view.used is None:
                return False, REJECT_UNREADABLE, view
            if view.new is None:
                return False, REJECT_NUMA_FIT, view
            if view.full is None:
                return True, None, view
            return False, REJECT_CACHE, view
        if used is None:
            return False, REJECT_UNREADABLE, None
        passes = fits(used.total, new_hot_mb, capacity)
        return passes, (None if passes is True else REJECT_CACHE), None
    return check


def cache_check(prof, ratio, used, request, memory_mb, cells=None, fit=None,
                accounted=False):
    """PmemCacheFilter's rule: (passes, reason, cell view or None).

    On a tiered host the hot RAM already there (``used``) plus the new
    instance's stays within the near memory x ``ratio``
    (``cache_overcommit_ratio``): host-wide, or on each NUMA cell when
    :func:`uses_cells` says so (the view is then returned). Other kinds
    pass; unknown profiles do not.

    :param used: the host's :class:`nearmem.HotRam` (its ``total`` may be an
        array of hosts of the same profile, the passes then too); None when
        its instances' flavors could not be read.
    :param cells: ids of the host's NUMA cells with CPUs, or None.
    :param fit: see :func:`cell_view`; given for NUMA-bound flavors only.
    :param accounted: Placement accounts the flavor's hot RAM
        (``resources:CUSTOM_NEAR_MEMORY_MB``), so the host-wide bound is not
        checked twice; Placement has no cells, so a NUMA-bound flavor's
        cells still are.
    """
    return cache_rule(prof, ratio, request, memory_mb, accounted,
                      fit is not None)(used, cells, fit)


def overcommitted(prof, ratio, used, cells=None):
    """Where a tiered host already holds more hot RAM than its bound.

    The doctor's check of what is placed, with PmemCacheFilter's choice of
    the host-wide bound or each NUMA cell's (:func:`uses_cells`).

    :param used: the host's :class:`nearmem.HotRam` (None: unreadable).
    :param cells: ids of the host's NUMA cells with CPUs, or None.
    :returns: (CellView or None, over): host-wide, ``over`` is ``[None]``
        when the host is beyond its bound, else ``[]``; cell by cell, the
        view and the ids of the cells beyond theirs (a view without
        capacities and ``[]`` when the aggregates name other cells).
    """
    if not reads_usage(prof) or used is None:
        return None, []
    used = charging.charged(prof, used)
    if cells is not None and uses_cells(prof, cells, used, False):
        view = placed_cells(prof, ratio, cells, used)
        if view.capacities is None:
            return view, []
        over = [cell for cell in sorted(view.capacities)
                if not nearmem.fits_cache(view.used[cell], 0.0,
                                          view.capacities[cell])]
        return view, over
    if nearmem.fits_cache(used.total, 0.0, prof.cache_capacity_mb(ratio)):
        return None, []
    return None, [None]


def headroom_rule(prof, ratio, request, memory_mb):
    """PmemCacheHeadroomWeigher's score on hosts of profile ``prof``.

    As :func:`cache_rule`: the function returned scores one host,
    ``score(used, cells=None, fit=None)``; see :func:`headroom_score`.
    """
    capacity = prof.cache_capacity_mb(ratio)
    if not reads_usage(prof) or not capacity:
        return lambda used, cells=None, fit=None: 0.0
    headroom = nearmem.cache_headroom_mb
    charge = charging.charger(prof)
    # What the new instance charges: floating, and NUMA-bound (a fit).
    new_mb = {bound: charging.instance_mb(prof, request, memory_mb, bound)
              for bound in (False, True)}

    def score(used, cells=None, fit=None):
        if charge is not None and used is not None:
            used = charge(used)
        new_hot_mb = new_mb[fit is not None]
        if cells is not None and uses_cells(prof, cells, used,
                                            fit is not None):
            return cell_headroom_score(cell_view(
                prof, ratio, cells, used, request, memory_mb, fit))
        if used is None:
            return 0.0
        return headroom(used.total + new_hot_mb, capacity) / capacity
    return score


def headroom_score(prof, ratio, used, request, memory_mb, cells=None,
                   fit=None):
    """PmemCacheHeadroomWeigher's raw weight: free near memory after it.

    The free share of the host's near memory after the new instance; cell
    by cell (as :func:`cache_check` decides), the smallest free share of the
    cells it charges. 0 on other kinds. Elementwise over an array of
    ``used.total`` host-wide.
    """
    return headroom_rule(prof, ratio, request, memory_mb)(used, cells, fit)


def cell_headroom_score(view):
    """PmemCacheHeadroomWeigher's raw weight on a :class:`CellView`.

    The smallest free share, after the new instance, of the cells it
    charges.
    """
    capacities, used, new = view.capacities, view.used, view.new
    if not capacities or used is None or not new:
        return 0.0
    shares = [nearmem.cache_headroom_mb(used.get(cell, 0.0) + mb,
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
