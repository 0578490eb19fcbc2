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
"""Host memory profiles, both ways: aggregate metadata in and out.

A host's profile (its kind and, on tiered kinds, the near memory that
bounds hot RAM, per NUMA cell too) is read from host-aggregate metadata by
:func:`from_metadata`, and written as metadata by :func:`to_metadata`. The
scheduler reads profiles, discovery and the planner write them, and the
planner reads back what it wrote, so all see the same host.

Units follow Nova: ``memory_mb`` is MiB, and a "GB" of aggregate metadata is
1024 of those.

This module imports nothing from Nova.
"""

import dataclasses
import math

from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import tiering

MODE_KEY = 'pmem_mode'
DRAM_CACHE_KEY = 'pmem_dram_cache_gb'
# The near memory of each NUMA cell, "cell:GB,cell:GB" (e.g. "0:96,1:96");
# without it a host's near memory is split evenly over its cells.
DRAM_CACHE_PER_CELL_KEY = 'pmem_dram_cache_gb_per_cell'
# Per-aggregate overrides of the weighers' [pmem] multipliers ("pmem_" and
# the option's name), read as Nova's get_weight_multiplier reads its own.
TIER_WEIGHT_MULTIPLIER_KEY = 'pmem_tier_weight_multiplier'
HEADROOM_WEIGHT_MULTIPLIER_KEY = 'pmem_cache_headroom_weight_multiplier'
NUMA_CELL_WEIGHT_MULTIPLIER_KEY = 'pmem_numa_cell_weight_multiplier'
WEIGHT_MULTIPLIER_KEYS = (TIER_WEIGHT_MULTIPLIER_KEY,
                          HEADROOM_WEIGHT_MULTIPLIER_KEY,
                          NUMA_CELL_WEIGHT_MULTIPLIER_KEY)
# On a kind the kernel tiers (cxl_kmem): "on" when it promotes hot pages to
# DRAM and demotes cold ones, "off" otherwise (every guest's whole RAM then
# counts against near memory); absent means "on". See core.tiering.
KERNEL_TIERING_KEY = 'pmem_kernel_tiering'

# The keys a profile is read from, in the order they are written.
PROFILE_KEYS = (MODE_KEY, DRAM_CACHE_KEY, DRAM_CACHE_PER_CELL_KEY,
                KERNEL_TIERING_KEY)
# Every aggregate key of ours.
AGGREGATE_KEYS = (MODE_KEY, DRAM_CACHE_KEY, TIER_WEIGHT_MULTIPLIER_KEY,
                  DRAM_CACHE_PER_CELL_KEY, KERNEL_TIERING_KEY,
                  HEADROOM_WEIGHT_MULTIPLIER_KEY,
                  NUMA_CELL_WEIGHT_MULTIPLIER_KEY)
# The keys that size near memory.
CACHE_KEYS = (DRAM_CACHE_KEY, DRAM_CACHE_PER_CELL_KEY)

MB_PER_GB = 1024

# Why a profile is unknown (HostProfile.problem_code).
DISAGREE = 'disagree'
INVALID = 'invalid'
MISSING = 'missing'
UNREADABLE = 'unreadable'


@dataclasses.dataclass(frozen=True)
class HostProfile:
    """What a host is, from its aggregates' metadata.

    ``mode`` is None when the profile is unknown; ``problem`` then says why,
    ``problem_code`` (one of DISAGREE, INVALID, MISSING, UNREADABLE) and
    ``problem_key`` what kind of problem and with which key.
    ``dram_cache_gb`` is the near memory of a tiered kind, None on the
    others. ``cell_cache_gb`` is ``((cell id, GB), ...)`` when the
    aggregates give each NUMA cell's near memory
    (``pmem_dram_cache_gb_per_cell``), else None. ``kernel_tiering`` is
    ``pmem_kernel_tiering`` (``on`` or ``off``) on a kind the kernel tiers
    when the aggregates give it, else None (``on`` is assumed).
    """

    mode: str = None
    dram_cache_gb: float = None
    problem: str = None
    cell_cache_gb: tuple = None
    problem_code: str = None
    problem_key: str = None
    kernel_tiering: str = None

    @property
    def known(self):
        return self.mode is not None

    @property
    def kind(self):
        """The :class:`kinds.Kind` of the host, None if unknown."""
        return kinds.get(self.mode)

    @property
    def tiered(self):
        return self.mode in kinds.TIERED

    def cache_capacity_mb(self, overcommit_ratio=1.0):
        """Hot RAM, in MB, a tiered host may hold; None otherwise.

        The DRAM cache of a Memory-Mode host, the DRAM in front of the CXL
        memory of a ``cxl_flat`` or ``cxl_kmem`` host.
        """
        if self.mode not in kinds.TIERED:
            return None
        return self.dram_cache_gb * MB_PER_GB * overcommit_ratio

    def cell_capacities_mb(self, cell_ids, overcommit_ratio=1.0):
        """Hot RAM, in MB, each NUMA cell of a tiered host may hold.

        Each socket's near memory serves that socket's far memory only, so
        a host with NUMA cells has one bound per cell: the sizes the
        aggregates give, or else the host's split evenly over ``cell_ids``
        (the cells with CPUs: instance cells never land on the others).

        :returns: ``({cell id: MB}, None)``; ``(None, problem)`` when the
            per-cell sizes name other cells than the host has, or it has
            none; ``(None, None)`` for a host that is not tiered.
        """
        if self.mode not in kinds.TIERED:
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


def unknown(problem, code, key=None):
    """An unknown profile: ``problem`` says why."""
    return HostProfile(problem=problem, problem_code=code, problem_key=key)


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
                    for cell, gb in sorted(dict(cells).items()))


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


def from_metadata(metadata_list, default_mode=kinds.DRAM):
    """Build a :class:`HostProfile` from the metadata of a host's aggregates.

    :param metadata_list: iterable of metadata mappings, one per aggregate.
    :param default_mode: mode of a host whose aggregates set no ``pmem_mode``.
    :returns: a HostProfile; unknown (``mode`` None, ``problem`` set) when the
        aggregates disagree or carry a value that does not parse. Never raises
        on bad metadata.
    """
    found = {key: [] for key in PROFILE_KEYS}
    for meta in metadata_list:
        if not meta:
            continue
        for key in PROFILE_KEYS:
            if key in meta:
                found[key].append(meta[key])
    mode, problem = _one_value(found[MODE_KEY], MODE_KEY)
    if problem:
        return unknown(problem, DISAGREE, MODE_KEY)
    if mode is None:
        mode = default_mode
    elif mode not in kinds.KINDS:
        return unknown('%s=%r is not one of %s. CXL hosts: %s'
                       % (MODE_KEY, mode, ', '.join(kinds.MODES),
                          ', '.join(kinds.CXL_MODES)), INVALID, MODE_KEY)

    raw_cache, problem = _one_value(found[DRAM_CACHE_KEY], DRAM_CACHE_KEY)
    if problem:
        return unknown(problem, DISAGREE, DRAM_CACHE_KEY)
    cache_gb = None
    if raw_cache is not None:
        cache_gb = _positive_gb(raw_cache)
        if cache_gb is None:
            return unknown('%s=%r is not a positive number of GB'
                           % (DRAM_CACHE_KEY, raw_cache), INVALID,
                           DRAM_CACHE_KEY)
    raw_cells, problem = _one_value(found[DRAM_CACHE_PER_CELL_KEY],
                                    DRAM_CACHE_PER_CELL_KEY)
    if problem:
        return unknown(problem, DISAGREE, DRAM_CACHE_PER_CELL_KEY)
    cells = None
    if raw_cells is not None:
        cells, problem = parse_cell_cache(raw_cells)
        if problem:
            return unknown(problem, INVALID, DRAM_CACHE_PER_CELL_KEY)
        total_gb = math.fsum(cells.values())
        if cache_gb is None:
            cache_gb = total_gb
        elif abs(total_gb - cache_gb) * MB_PER_GB > 1:
            return unknown('%s=%r adds up to %s GB, but %s=%r'
                           % (DRAM_CACHE_PER_CELL_KEY, raw_cells,
                              gb_text(total_gb), DRAM_CACHE_KEY, raw_cache),
                           INVALID, DRAM_CACHE_PER_CELL_KEY)
        cells = tuple(sorted(cells.items()))
    kind = kinds.KINDS.get(mode)
    tiered = kind is not None and kind.tiered
    raw_tiering, problem = _one_value(found[KERNEL_TIERING_KEY],
                                      KERNEL_TIERING_KEY)
    if problem:
        return unknown(problem, DISAGREE, KERNEL_TIERING_KEY)
    if raw_tiering is not None and raw_tiering not in tiering.STATES:
        return unknown('%s=%r is not one of %s'
                       % (KERNEL_TIERING_KEY, raw_tiering,
                          ', '.join(tiering.STATES)), INVALID,
                       KERNEL_TIERING_KEY)
    if mode not in kinds.KERNEL_TIERED:
        # The kernel tiers no other kind: the key means nothing there.
        raw_tiering = None
    if tiered and cache_gb is None:
        return unknown('%s=%s needs %s to bound the %s'
                       % (MODE_KEY, mode, DRAM_CACHE_KEY, kind.near_memory),
                       MISSING, DRAM_CACHE_KEY)
    if not tiered:
        # Only tiered hosts have near memory; the keys mean nothing
        # elsewhere.
        cache_gb = cells = None
    return HostProfile(mode=mode, dram_cache_gb=cache_gb, cell_cache_gb=cells,
                       kernel_tiering=raw_tiering)


def host_profiles(names, aggregates, default_mode=kinds.DRAM):
    """{host: HostProfile} of each of ``names``, as the scheduler reads it.

    A host's profile is :func:`from_metadata` over the metadata of every
    aggregate that holds it: values the aggregates share merge, values
    they disagree on make it unknown, and a host no aggregate gives a mode
    is of ``default_mode`` (the scheduler's ``[pmem] default_host_mode``).

    :param names: the hosts, in the order of the result.
    :param aggregates: ``(host names, metadata mapping)`` of each
        aggregate; None stands for none.
    """
    found = {name: [] for name in names}
    for hosts, meta in aggregates:
        for host in hosts or ():
            if host in found:
                found[host].append(meta)
    return {name: from_metadata(metas, default_mode=default_mode)
            for name, metas in found.items()}


def metadata(mode, near_memory_gb=None, cell_near_gb=None,
             kernel_tiering=None):
    """The aggregate metadata of a host of kind ``mode``.

    :param near_memory_gb: the near memory of a tiered kind (ignored on the
        others), GB.
    :param cell_near_gb: ``{cell: GB}`` or ``((cell, GB), ...)`` when the
        cells' near memory is given, else None (an even split).
    :param kernel_tiering: ``on`` or ``off`` on a kind the kernel tiers
        (ignored on the others), None to leave the key out.
    :returns: a dict in the order of :data:`PROFILE_KEYS`.
    """
    result = {MODE_KEY: mode}
    if mode in kinds.TIERED:
        if near_memory_gb is not None:
            result[DRAM_CACHE_KEY] = gb_text(near_memory_gb)
        if cell_near_gb:
            result[DRAM_CACHE_PER_CELL_KEY] = format_cell_cache(cell_near_gb)
    if mode in kinds.KERNEL_TIERED and kernel_tiering is not None:
        result[KERNEL_TIERING_KEY] = kernel_tiering
    return result


def to_metadata(prof):
    """The aggregate metadata :func:`from_metadata` reads ``prof`` from."""
    if not prof.known:
        raise ValueError('an unknown profile has no metadata: %s'
                         % prof.problem)
    return metadata(prof.mode, prof.dram_cache_gb, prof.cell_cache_gb,
                    prof.kernel_tiering)


def build(mode, near_memory_gb=None, cell_near_gb=None, kernel_tiering=None):
    """The profile the scheduler reads for a host of kind ``mode``.

    Through the metadata the host's aggregate would carry, so that what is
    planned or discovered is what the scheduler sees.
    """
    return from_metadata([metadata(mode, near_memory_gb, cell_near_gb,
                                   kernel_tiering)])


def near_memory_gb(mode, dram_gb, dram_cache_gb):
    """A host's near memory, GB: what bounds hot RAM or Placement offers.

    The DRAM cache (``memory_mode``) or the DRAM in front of CXL memory
    (``cxl_flat``, ``cxl_kmem``) on tiered kinds, the DRAM on the others.
    In MB: unrounded, :func:`gb_to_mb` (what the observer compares working
    sets with); in Placement's whole MB,
    :func:`nova_pmem_filters.core.rules.placement.host_near_memory_mb`.
    """
    return dram_cache_gb if mode in kinds.TIERED else dram_gb


def gb_to_mb(gb):
    """MB of a size in GB (1024 MB, as aggregate metadata counts), unrounded.

    None (a size a profile does not give) stays None.
    """
    return None if gb is None else float(gb) * MB_PER_GB
