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
"""Host memory profiles and the DRAM-cache arithmetic.

A host's profile (its memory mode and, in Memory Mode, the size of the DRAM
cache in front of the persistent memory) is read from host-aggregate
metadata. The same arithmetic decides what fits in the scheduler and in the
planner.

Units follow Nova: ``memory_mb`` is MiB, and a "GB" of aggregate metadata is
1024 of those.

This module imports nothing from Nova.
"""

import dataclasses
import math

DRAM = 'dram'
MEMORY_MODE = 'memory_mode'
APP_DIRECT = 'app_direct'
# The Optane modes. A flavor that allows all three runs anywhere.
MODES = (DRAM, MEMORY_MODE, APP_DIRECT)

# CXL memory tiers (Type-3 expanders next to DDR5):
# - hardware-managed tiering, DRAM and CXL memory one visible pool with the
#   memory controller keeping hot lines in DRAM (Xeon 6 flat memory mode);
# - software-managed tiering, CXL memory onlined as CPU-less NUMA nodes
#   (daxctl system-ram / kmem) with the kernel demoting cold pages;
# - CXL memory kept out of the system as devdax devices.
CXL_FLAT = 'cxl_flat'
CXL_KMEM = 'cxl_kmem'
CXL_DEVDAX = 'cxl_devdax'
CXL_MODES = (CXL_FLAT, CXL_KMEM, CXL_DEVDAX)

# Every host kind an aggregate may name.
ALL_MODES = MODES + CXL_MODES

# Modes whose guest RAM is plain DRAM.
DRAM_BACKED = frozenset([DRAM, APP_DIRECT, CXL_DEVDAX])

# The Optane mode a CXL kind is scheduled as: flavors keep saying which
# modes they may use (``pmem:modes``), and a tiered CXL host is a far tier
# behind near memory as a Memory-Mode host is; a devdax host gives guests
# DRAM, as a dram host does.
SCHEDULED_AS = {CXL_FLAT: MEMORY_MODE, CXL_KMEM: MEMORY_MODE,
                CXL_DEVDAX: DRAM}


def scheduled_as(mode):
    """The Optane mode (``pmem:modes`` value) a host kind passes as."""
    return SCHEDULED_AS.get(mode, mode)


# Modes whose guest RAM is a far tier behind near memory (DRAM): the hot RAM
# of their instances must stay within the near memory, ``pmem_dram_cache_gb``
# (the DRAM cache in Memory Mode, the DRAM in front of CXL memory).
TIERED = frozenset([MEMORY_MODE, CXL_FLAT, CXL_KMEM])

MODE_KEY = 'pmem_mode'
DRAM_CACHE_KEY = 'pmem_dram_cache_gb'
# The DRAM cache of each NUMA cell, "cell:GB,cell:GB" (e.g. "0:96,1:96");
# without it a host's cache is split evenly over its cells.
DRAM_CACHE_PER_CELL_KEY = 'pmem_dram_cache_gb_per_cell'
TIER_WEIGHT_MULTIPLIER_KEY = 'pmem_tier_weight_multiplier'

MB_PER_GB = 1024

# Placement resource class of near memory: the DRAM that serves as system
# memory (dram and app_direct hosts) or as the Memory-Mode cache. Flavors
# request their hot MB of it; see near_memory_mb().
NEAR_MEMORY_RC = 'CUSTOM_NEAR_MEMORY_MB'

# Tolerance when comparing sums of hot MB against the cache size: hot MB are
# products of floats, and a bound that is met exactly must admit.
_EPSILON_MB = 1e-6


@dataclasses.dataclass(frozen=True)
class HostProfile:
    """What a host is, from its aggregates' metadata.

    ``mode`` is None when the profile is unknown; ``problem`` then says why.
    ``cell_cache_gb`` is ``((cell id, GB), ...)`` when the aggregates give
    each NUMA cell's DRAM cache (``pmem_dram_cache_gb_per_cell``), else None.
    """

    mode: str = None
    dram_cache_gb: float = None
    problem: str = None
    cell_cache_gb: tuple = None

    @property
    def known(self):
        return self.mode is not None

    def cache_capacity_mb(self, overcommit_ratio=1.0):
        """Hot RAM, in MB, a tiered host may hold; None otherwise.

        The DRAM cache of a Memory-Mode host, the DRAM in front of the CXL
        memory of a ``cxl_flat`` or ``cxl_kmem`` host.
        """
        if self.mode not in TIERED:
            return None
        return self.dram_cache_gb * MB_PER_GB * overcommit_ratio

    def cell_capacities_mb(self, cell_ids, overcommit_ratio=1.0):
        """Hot RAM, in MB, each NUMA cell of a Memory-Mode host may hold.

        Each socket's DRAM caches that socket's PMem only, so a host with
        NUMA cells has one cache per cell: the sizes the aggregates give,
        or else the host's cache split evenly over ``cell_ids``.

        :returns: ``({cell id: MB}, None)``; ``(None, problem)`` when the
            per-cell sizes name other cells than the host has; ``(None,
            None)`` for a host that is not in Memory Mode.
        """
        if self.mode not in TIERED:
            return None, None
        ids = sorted(set(cell_ids))
        if not ids:
            return None, 'the host reports no NUMA cells'
        if self.cell_cache_gb is None:
            each = self.cache_capacity_mb(overcommit_ratio) / len(ids)
            return {cell: each for cell in ids}, None
        given = dict(self.cell_cache_gb)
        if sorted(given) != ids:
            return None, ('%s=%s names cells %s but the host has NUMA cells '
                          '%s' % (DRAM_CACHE_PER_CELL_KEY,
                                  format_cell_cache(given),
                                  ','.join(map(str, sorted(given))),
                                  ','.join(map(str, ids))))
        return {cell: gb * MB_PER_GB * overcommit_ratio
                for cell, gb in given.items()}, None


def _positive_gb(raw):
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return None
    # Finite in MB too: an infinite capacity makes headroom shares NaN.
    if not math.isfinite(value * MB_PER_GB) or value <= 0:
        return None
    return value


def parse_cell_cache(raw):
    """Parse a ``pmem_dram_cache_gb_per_cell`` value.

    :returns: ({cell id: GB}, None) or (None, problem).
    """
    text = str(raw).strip()
    cells = {}
    for item in text.split(','):
        cell, sep, gb = item.partition(':')
        cell = cell.strip()
        value = _positive_gb(gb.strip()) if sep else None
        if not (cell.isascii() and cell.isdigit()) or value is None:
            return None, ('%s=%r is not a list of cell:GB pairs with '
                          'positive GB, such as "0:96,1:96"'
                          % (DRAM_CACHE_PER_CELL_KEY, raw))
        if int(cell) in cells:
            return None, ('%s=%r names cell %s twice'
                          % (DRAM_CACHE_PER_CELL_KEY, raw, int(cell)))
        cells[int(cell)] = value
    return cells, None


def format_cell_cache(cells):
    """The ``pmem_dram_cache_gb_per_cell`` value of ``{cell id: GB}``."""
    return ','.join('%d:%s' % (cell, gb_text(gb))
                    for cell, gb in sorted(cells.items()))


def gb_text(value):
    """A GB figure as aggregate metadata carries it, without rounding.

    repr, not %g: %g keeps 6 digits, so 1234.5678 GB would be written as
    1234.57 and the scheduler would count a larger cache than installed.
    """
    return ('%d' % value) if float(value).is_integer() else repr(float(value))


def _one_value(values, key):
    """The single value of ``key`` across aggregates, or an error string."""
    distinct = sorted({str(v).strip() for v in values})
    if len(distinct) > 1:
        return None, ('aggregates disagree on %s: %s'
                      % (key, ', '.join(repr(v) for v in distinct)))
    return (distinct[0] if distinct else None), None


def from_metadata(metadata_list, default_mode=DRAM):
    """Build a :class:`HostProfile` from the metadata of a host's aggregates.

    :param metadata_list: iterable of metadata mappings, one per aggregate.
    :param default_mode: mode of a host whose aggregates set no ``pmem_mode``.
    :returns: a HostProfile; unknown (``mode`` None, ``problem`` set) when the
        aggregates disagree or carry a value that does not parse. Never raises
        on bad metadata.
    """
    modes = []
    caches = []
    cell_caches = []
    for metadata in metadata_list:
        if not metadata:
            continue
        if MODE_KEY in metadata:
            modes.append(metadata[MODE_KEY])
        if DRAM_CACHE_KEY in metadata:
            caches.append(metadata[DRAM_CACHE_KEY])
        if DRAM_CACHE_PER_CELL_KEY in metadata:
            cell_caches.append(metadata[DRAM_CACHE_PER_CELL_KEY])

    mode, problem = _one_value(modes, MODE_KEY)
    if problem:
        return HostProfile(problem=problem)
    if mode is None:
        mode = default_mode
    elif mode not in ALL_MODES:
        return HostProfile(problem='%s=%r is not one of %s. CXL hosts: %s'
                           % (MODE_KEY, mode, ', '.join(MODES),
                              ', '.join(CXL_MODES)))

    raw_cache, problem = _one_value(caches, DRAM_CACHE_KEY)
    if problem:
        return HostProfile(problem=problem)
    cache_gb = None
    if raw_cache is not None:
        cache_gb = _positive_gb(raw_cache)
        if cache_gb is None:
            return HostProfile(problem='%s=%r is not a positive number of GB'
                               % (DRAM_CACHE_KEY, raw_cache))
    raw_cells, problem = _one_value(cell_caches, DRAM_CACHE_PER_CELL_KEY)
    if problem:
        return HostProfile(problem=problem)
    cells = None
    if raw_cells is not None:
        cells, problem = parse_cell_cache(raw_cells)
        if problem:
            return HostProfile(problem=problem)
        total_gb = math.fsum(cells.values())
        if cache_gb is None:
            cache_gb = total_gb
        elif abs(total_gb - cache_gb) * MB_PER_GB > 1:
            return HostProfile(problem='%s=%r adds up to %s GB, but %s=%r'
                               % (DRAM_CACHE_PER_CELL_KEY, raw_cells,
                                  gb_text(total_gb), DRAM_CACHE_KEY,
                                  raw_cache))
        cells = tuple(sorted(cells.items()))
    if mode in TIERED and cache_gb is None:
        return HostProfile(problem='%s=%s needs %s to bound the %s'
                           % (MODE_KEY, mode, DRAM_CACHE_KEY,
                              'DRAM cache' if mode == MEMORY_MODE
                              else 'near memory (DRAM)'))
    if mode not in TIERED:
        # Only tiered hosts have near memory; the keys mean nothing
        # elsewhere.
        cache_gb = cells = None
    return HostProfile(mode=mode, dram_cache_gb=cache_gb, cell_cache_gb=cells)


def hot_mb(memory_mb, hot_ratio):
    """Hot RAM, in MB, of an instance with ``memory_mb`` of RAM."""
    return memory_mb * hot_ratio


def fits_cache(used_hot_mb, new_hot_mb, capacity_mb):
    """Whether ``new_hot_mb`` more hot RAM fits next to ``used_hot_mb``."""
    return used_hot_mb + new_hot_mb <= capacity_mb + _EPSILON_MB


def instances_in_cache(capacity_mb, hot_mb_each):
    """How many instances of ``hot_mb_each`` hot MB fit in ``capacity_mb``.

    The largest n for which PmemCacheFilter admits the n-th instance, i.e.
    ``fits_cache((n - 1) * hot_mb_each, hot_mb_each, capacity_mb)``; the
    planner counts Memory-Mode density with it.
    """
    if hot_mb_each <= 0:
        raise ValueError('hot_mb_each must be positive, got %r'
                         % (hot_mb_each,))
    if capacity_mb < 0:
        return 0
    count = int(math.floor((capacity_mb + _EPSILON_MB) / hot_mb_each))
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
    """DRAM cache, in MB, not yet taken by hot RAM (never negative).

    Elementwise on arrays too, for the planner's simulator.
    """
    free = capacity_mb - used_hot_mb
    return free * (free > 0) + 0.0


def spread_mb(hot_mb, capacities):
    """A floating instance's hot MB on each NUMA cell.

    An instance without a NUMA topology may run and allocate on any cell,
    so it charges every cell in proportion to the cell's cache.

    :param capacities: ``{cell id: cache MB}`` (see
        :meth:`HostProfile.cell_capacities_mb`).
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


def near_memory_mb(memory_mb, hot_ratio):
    """``CUSTOM_NEAR_MEMORY_MB`` an instance requests from Placement.

    The filter's hot MB (:func:`hot_mb`) rounded up to a whole MB, as
    Placement counts in integers. A product within the filter's tolerance of
    an integer is that integer (1000 MB x 0.7 is 700, not 701), and an
    instance requests at least 1 MB.
    """
    return max(int(math.ceil(hot_mb(memory_mb, hot_ratio) - _EPSILON_MB)), 1)


def near_memory_inventory(mode, dram_gb, cache_overcommit_ratio=1.0,
                          ram_allocation_ratio=1.0):
    """The ``CUSTOM_NEAR_MEMORY_MB`` inventory of one host, for Placement.

    Every host reports its DRAM, so that a flavor requesting near memory can
    land on any mode:

    * ``memory_mode``: the DRAM cache, with allocation ratio
      ``cache_overcommit_ratio``: Placement then admits what
      PmemCacheFilter admits (up to the rounding of :func:`near_memory_mb`).
    * ``dram`` and ``app_direct``: the DRAM, with the host's
      ``ram_allocation_ratio``. An instance requests at most its RAM of
      near memory, so this inventory never binds before MEMORY_MB.

    :param dram_gb: installed DRAM, GB (1024 MB); rounded down to a whole
        MB.
    :returns: a dict of Nova's provider-config inventory fields (``total``,
        ``reserved``, ``min_unit``, ``max_unit``, ``step_size``,
        ``allocation_ratio``).
    """
    total = int(math.floor(float(dram_gb) * MB_PER_GB + _EPSILON_MB))
    if mode in TIERED:
        ratio = cache_overcommit_ratio
    else:
        ratio = ram_allocation_ratio
    return {'total': total, 'reserved': 0, 'min_unit': 1,
            'max_unit': max(total, 1), 'step_size': 1,
            'allocation_ratio': float(ratio)}


def near_memory_provider_config(inventory, name=None):
    """A Nova provider config (``[compute] provider_config_location``).

    :param inventory: from :func:`near_memory_inventory`.
    :param name: the compute node's name; None identifies every compute node
        of the nova-compute that reads the file (``$COMPUTE_NODE``).
    :returns: a dict to write as YAML.
    """
    ident = {'name': name} if name else {'uuid': '$COMPUTE_NODE'}
    return {
        'meta': {'schema_version': '1.0'},
        'providers': [{
            'identification': ident,
            'inventories': {'additional': [{NEAR_MEMORY_RC: dict(inventory)}]},
        }],
    }
