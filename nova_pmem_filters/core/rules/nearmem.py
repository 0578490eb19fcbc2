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
"""The near-memory arithmetic: hot RAM against the cache that must hold it.

On a tiered host the hot RAM of the instances (RAM x hot ratio) must stay
within the near memory (the DRAM cache in Memory Mode, the DRAM in front of
CXL memory), host-wide and on each NUMA cell. The scheduler, the doctor,
the simulator and the planner count with these functions.

This module imports nothing from Nova.
"""

import math

# Tolerance when comparing sums of hot MB against the cache size: hot MB are
# products of floats, and a bound that is met exactly must admit.
EPSILON_MB = 1e-6


def _not_below_zero(mb):
    """``max(mb, 0)``, elementwise on arrays too."""
    return mb * (mb > 0) + 0.0


class HotRam(object):
    """Hot MB on one host: ``total`` and the NUMA-bound part per cell.

    ``bound`` maps a host cell id to the hot MB of the NUMA-bound instances
    on it; the rest of ``total`` floats. ``total`` may be an array of hosts
    (with nothing bound) for the simulator.

    ``ram`` and ``bound_ram`` are the same sums of the instances' whole
    RAM, which a host whose tiering the kernel does charges for NUMA-bound
    instances, or for all
    (:func:`nova_pmem_filters.core.rules.charging.charged`). Left out, they are
    taken to be the hot figures (all RAM hot).
    """

    __slots__ = ('total', 'bound', 'ram', 'bound_ram')

    def __init__(self, total, bound=None, ram=None, bound_ram=None):
        self.total = total
        self.bound = dict(bound or {})
        self.ram = total if ram is None else ram
        self.bound_ram = dict(self.bound if bound_ram is None
                              else bound_ram)

    @property
    def floating(self):
        return _not_below_zero(self.total - sum(self.bound.values()))

    @property
    def floating_ram(self):
        return _not_below_zero(self.ram - sum(self.bound_ram.values()))

    def copy(self):
        return HotRam(self.total, self.bound, self.ram, self.bound_ram)

    def add(self, hot_mb, cells=None, ram_mb=None, ram_cells=None):
        """Count one instance: its hot MB, on ``cells`` if NUMA-bound.

        :param cells: ``((host cell, hot MB), ...)`` (:func:`bound_cells`),
            or None for an instance that floats.
        :param ram_mb: its whole RAM (default ``hot_mb``); ``ram_cells``
            the same per cell (default ``cells``).
        """
        self.total += hot_mb
        for cell, mb in cells or ():
            self.bound[cell] = self.bound.get(cell, 0.0) + mb
        self.ram += hot_mb if ram_mb is None else ram_mb
        for cell, mb in (cells if ram_cells is None else ram_cells) or ():
            self.bound_ram[cell] = self.bound_ram.get(cell, 0.0) + mb

    def as_ram(self):
        """Every instance charging its whole RAM."""
        return HotRam(self.ram, self.bound_ram, self.ram, self.bound_ram)

    def bound_as_ram(self):
        """The NUMA-bound instances charging their whole RAM, per cell."""
        total = self.floating + sum(self.bound_ram.values())
        return HotRam(total, self.bound_ram, self.ram, self.bound_ram)

    def __eq__(self, other):
        return (isinstance(other, HotRam) and self.total == other.total
                and self.bound == other.bound and self.ram == other.ram
                and self.bound_ram == other.bound_ram)

    def __repr__(self):
        try:
            short = self.bound_ram == self.bound and bool(
                self.ram == self.total)
        except ValueError:
            # Arrays of hosts: show all four.
            short = False
        if short:
            return 'HotRam(%r, %r)' % (self.total, self.bound)
        return 'HotRam(%r, %r, %r, %r)' % (self.total, self.bound, self.ram,
                                           self.bound_ram)


def hot_mb(memory_mb, hot_ratio):
    """Hot RAM, in MB, of an instance with ``memory_mb`` of RAM."""
    return memory_mb * hot_ratio


def fits_cache(used_hot_mb, new_hot_mb, capacity_mb):
    """Whether ``new_hot_mb`` more hot RAM fits next to ``used_hot_mb``.

    Elementwise on arrays too, for the simulator.
    """
    return used_hot_mb + new_hot_mb <= capacity_mb + EPSILON_MB


def instances_in_cache(capacity_mb, hot_mb_each):
    """How many instances of ``hot_mb_each`` hot MB fit in ``capacity_mb``.

    The largest n for which PmemCacheFilter admits the n-th instance, i.e.
    ``fits_cache((n - 1) * hot_mb_each, hot_mb_each, capacity_mb)``; the
    planner counts tiered density with it.
    """
    if hot_mb_each <= 0:
        raise ValueError('hot_mb_each must be positive, got %r'
                         % (hot_mb_each,))
    if capacity_mb < 0:
        return 0
    count = int(math.floor((capacity_mb + EPSILON_MB) / hot_mb_each))
    # Settle rounding at the boundary with the filter's own comparison;
    # the quotient is at most an ulp or two away from it.
    for _ in range(4):
        if count > 0 and not fits_cache((count - 1) * hot_mb_each,
                                        hot_mb_each, capacity_mb):
            count -= 1
        elif fits_cache(count * hot_mb_each, hot_mb_each, capacity_mb):
            count += 1
        else:
            break
    return count


def cache_headroom_mb(used_hot_mb, capacity_mb):
    """Near memory, in MB, not yet taken by hot RAM (never negative).

    Elementwise on arrays too, for the simulator.
    """
    free = capacity_mb - used_hot_mb
    return free * (free > 0) + 0.0


def spread_mb(hot_mb, capacities):
    """A floating instance's hot MB on each NUMA cell.

    An instance without a NUMA topology may run and allocate on any cell,
    so it charges every cell in proportion to the cell's cache.

    :param capacities: ``{cell id: cache MB}`` (see
        :meth:`nova_pmem_filters.core.rules.profile.HostProfile.
        cell_capacities_mb`).
    """
    total = math.fsum(capacities.values())
    if total <= 0:
        # No cache anywhere (cache_overcommit_ratio 0): equal shares, which
        # no cell can hold.
        return {cell: hot_mb / len(capacities) for cell in capacities}
    return {cell: hot_mb * capacity / total
            for cell, capacity in capacities.items()}


def cell_usage_mb(floating_mb, bound_mb, capacities):
    """Hot MB charged to each NUMA cell.

    :param floating_mb: hot MB of the instances without a NUMA topology.
    :param bound_mb: ``{cell id: hot MB}`` of the NUMA-bound instances (each
        charges its cells its per-cell memory times its hot ratio). MB on a
        cell the host does not have are spread like floating MB.
    """
    stray = math.fsum(mb for cell, mb in bound_mb.items()
                      if cell not in capacities)
    used = spread_mb(floating_mb + stray, capacities)
    for cell, mb in bound_mb.items():
        if cell in capacities:
            used[cell] += mb
    return used


def full_cell(used, new, capacities):
    """The first cell whose cache cannot take ``new``; None if all can.

    :param used: ``{cell id: hot MB}`` already charged
        (:func:`cell_usage_mb`).
    :param new: ``{cell id: hot MB}`` the new instance charges.
    """
    for cell in sorted(new):
        if new[cell] and not fits_cache(used.get(cell, 0.0), new[cell],
                                        capacities[cell]):
            return cell
    return None


def bound_cells(cells, hot_mb, memory_mb=None):
    """``((host cell, hot MB), ...)`` of a NUMA-bound instance.

    :param cells: ``(host cell, memory MB)`` pairs of the instance's NUMA
        cells; each is charged its share of the instance's hot MB (its
        memory times the hot ratio).
    :param memory_mb: the instance's RAM, when the cells give no memory.
    :returns: None for an instance without cells (it floats).
    """
    cells = list(cells or ())
    if not cells:
        return None
    total = sum(memory for _cell, memory in cells) or memory_mb
    if not total:
        return None
    merged = {}
    for cell, memory in cells:
        merged[cell] = merged.get(cell, 0.0) + hot_mb * memory / total
    return tuple(sorted(merged.items()))
