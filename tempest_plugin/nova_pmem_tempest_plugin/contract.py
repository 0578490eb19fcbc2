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
"""What nova-pmem-filters promises, as its documentation states it.

The tests judge the cloud by the documented contract, with this module's
own small arithmetic, and import nothing of nova-pmem-filters: a Tempest
plugin runs against a deployed cloud, often from another environment, and
a rule the package got wrong must fail here rather than be judged by
itself. Each rule cites the page of ``doc/source`` it is written from.

Numbers are exact (:class:`fractions.Fraction`): the docs state the rules
in decimal arithmetic ("stays within"), and a bound met exactly admits.
"""

import dataclasses
import fractions
import math

# doc/source/scheduling.rst, "Flavor extra specs".
NAMESPACE = 'pmem:'
MODES_KEY = 'pmem:modes'
PRIORITY_KEY = 'pmem:priority'
HOT_RATIO_KEY = 'pmem:hot_ratio'
# Nova's vPMEM spec: such a flavor needs an app_direct host.
VPMEM_KEY = 'hw:pmem'
PRIORITY_HIGH = 'high'
PRIORITY_NORMAL = 'normal'
PRIORITY_LOW = 'low'
PRIORITIES = (PRIORITY_HIGH, PRIORITY_NORMAL, PRIORITY_LOW)

# The host kinds (pmem_mode values), in the docs' order.
DRAM = 'dram'
MEMORY_MODE = 'memory_mode'
APP_DIRECT = 'app_direct'
CXL_FLAT = 'cxl_flat'
CXL_KMEM = 'cxl_kmem'
CXL_DEVDAX = 'cxl_devdax'
KINDS = (DRAM, MEMORY_MODE, APP_DIRECT, CXL_FLAT, CXL_KMEM, CXL_DEVDAX)
# scheduling.rst, "The hosts each pmem:modes value admits".
ADMITS = {
    DRAM: frozenset((DRAM, CXL_DEVDAX)),
    MEMORY_MODE: frozenset((MEMORY_MODE, CXL_FLAT, CXL_KMEM)),
    APP_DIRECT: frozenset((APP_DIRECT,)),
    CXL_FLAT: frozenset((CXL_FLAT,)),
    CXL_KMEM: frozenset((CXL_KMEM,)),
    CXL_DEVDAX: frozenset((CXL_DEVDAX,)),
}
# [pmem] default_flavor_modes: every host.
DEFAULT_MODES = frozenset((DRAM, MEMORY_MODE, APP_DIRECT))
# [pmem] default_hot_ratio (scheduling.rst, configuration.rst).
DEFAULT_HOT_RATIO = 0.5

# Aggregate metadata (numa.rst "The model", kernel-tiering.rst).
MODE_KEY = 'pmem_mode'
CACHE_KEY = 'pmem_dram_cache_gb'
CELL_CACHE_KEY = 'pmem_dram_cache_gb_per_cell'
KERNEL_TIERING_KEY = 'pmem_kernel_tiering'
KERNEL_TIERING = ('on', 'off')
TIERED = frozenset((MEMORY_MODE, CXL_FLAT, CXL_KMEM))
MB_PER_GB = 1024


def exact(value):
    """The number as written: ``0.1`` is 1/10, not the nearest double."""
    if isinstance(value, (int, fractions.Fraction)):
        return fractions.Fraction(value)
    return fractions.Fraction(repr(float(value)))


def kind_order(mode):
    return KINDS.index(mode) if mode in KINDS else len(KINDS)


# --- flavor extra specs: scheduling.rst, "Flavor extra specs" ---

def _hot_ratio(text):
    """A ``pmem:hot_ratio``: plain decimal, 0 < r <= 1; else None."""
    if (not isinstance(text, str) or text.count('.') > 1
            or not text.replace('.', '', 1).isdigit()
            or not text.isascii()):
        return None
    value = fractions.Fraction(text + '0' if text.endswith('.') else text)
    return value if 0 < value <= 1 else None


def _modes(text):
    """A ``pmem:modes`` comma list of known values; else None."""
    if not isinstance(text, str):
        return None
    names = [name.strip() for name in text.split(',')]
    if not all(name in ADMITS for name in names):
        return None
    return frozenset(names)


def spec_problem(key, value):
    """Why nova-api must refuse ``key=value`` (a ``pmem:`` key); None if OK.

    Unknown keys of the namespace are refused too (a typo such as
    ``pmem:hotratio``).
    """
    if key == HOT_RATIO_KEY:
        ok = _hot_ratio(value) is not None
    elif key == MODES_KEY:
        ok = _modes(value) is not None
    elif key == PRIORITY_KEY:
        ok = value in PRIORITIES
    else:
        return 'unknown key %s' % key
    return None if ok else '%s=%r is not a valid value' % (key, value)


@dataclasses.dataclass(frozen=True)
class Flavor:
    """What a flavor's extra specs ask: the kinds it allows, hot ratio."""

    modes: frozenset
    hot_ratio: fractions.Fraction

    def allows(self, mode):
        return any(mode in ADMITS[m] for m in self.modes)


def flavor(specs, default_hot_ratio=DEFAULT_HOT_RATIO):
    """The :class:`Flavor` of ``specs``; None when a ``pmem:`` spec is bad.

    A ``hw:pmem`` flavor needs an App Direct host: its modes narrow to
    ``app_direct``, or to none when it leaves ``app_direct`` out.
    """
    specs = specs or {}
    for key in specs:
        if key.startswith(NAMESPACE) and spec_problem(key, specs[key]):
            return None
    modes = (_modes(specs[MODES_KEY]) if MODES_KEY in specs
             else DEFAULT_MODES)
    ratio = (_hot_ratio(specs[HOT_RATIO_KEY]) if HOT_RATIO_KEY in specs
             else exact(default_hot_ratio))
    if any(label.strip() for label in str(specs.get(VPMEM_KEY, '')).split(
            ',')):
        modes = modes & {APP_DIRECT}
    return Flavor(frozenset(modes), ratio)


def hot_mb(ram_mb, specs, default_hot_ratio=DEFAULT_HOT_RATIO):
    """Hot MB an instance counts against the cache.

    RAM x hot ratio (scheduling.rst, PmemCacheFilter); all its RAM when
    its flavor's ``pmem:`` specs are invalid.
    """
    request = flavor(specs, default_hot_ratio)
    ratio = 1 if request is None else request.hot_ratio
    return exact(ram_mb) * ratio


def ratio_text(numerator, digits):
    """``numerator / 10**digits`` as ``pmem:hot_ratio`` text (``0.8``)."""
    whole, part = divmod(numerator, 10 ** digits)
    if not part:
        return '%d.0' % whole
    return ('%d.%0*d' % (whole, digits, part)).rstrip('0')


# --- hosts: numa.rst "The model", kernel-tiering.rst ---

@dataclasses.dataclass(frozen=True)
class Host:
    """A host's kind and cache, from its aggregates.

    ``mode`` is None when the metadata makes the profile unknown
    (``problem`` says why).
    """

    mode: str = None
    cache_gb: fractions.Fraction = None
    cell_gb: dict = None
    problem: str = None

    @property
    def known(self):
        return self.mode is not None


def _gb(text):
    try:
        value = float(text)
    except ValueError:
        return None
    # Finite in MB too, as a bound must be.
    if not math.isfinite(value * MB_PER_GB) or value <= 0:
        return None
    return exact(value)


def _cell_gb(text):
    """``cell:GB,...`` with positive GB, each cell once; else None."""
    cells = {}
    for item in text.split(','):
        cell, sep, gb = item.partition(':')
        cell, value = cell.strip(), _gb(gb.strip()) if sep else None
        if not (cell.isascii() and cell.isdigit()) or value is None or (
                int(cell) in cells):
            return None
        cells[int(cell)] = value
    return cells


def host(metadatas, default_mode=DRAM):
    """The :class:`Host` the scheduler reads from a host's aggregates.

    Each key's value must be the same in every aggregate that sets it;
    a host no aggregate gives ``pmem_mode`` is of ``default_mode``; a
    tiered host needs its cache, ``pmem_dram_cache_gb`` or the per-cell
    sizes, which add up to it within 1 MB when both are set.
    """
    found = {}
    for meta in metadatas:
        for key in (MODE_KEY, CACHE_KEY, CELL_CACHE_KEY, KERNEL_TIERING_KEY):
            if key in (meta or {}):
                found.setdefault(key, set()).add(str(meta[key]).strip())
    for key, values in sorted(found.items()):
        if len(values) > 1:
            return Host(problem='aggregates disagree on %s' % key)
    value = {key: values.pop() for key, values in found.items()}
    mode = value.get(MODE_KEY, default_mode)
    cache = _gb(value[CACHE_KEY]) if CACHE_KEY in value else None
    cells = (_cell_gb(value[CELL_CACHE_KEY]) if CELL_CACHE_KEY in value
             else None)
    if (mode not in KINDS or (CACHE_KEY in value and cache is None)
            or (CELL_CACHE_KEY in value and cells is None)
            or value.get(KERNEL_TIERING_KEY, 'on') not in KERNEL_TIERING):
        return Host(problem='invalid metadata %s' % sorted(value.items()))
    if cells is not None:
        total = sum(cells.values())
        if cache is not None and abs(total - cache) * MB_PER_GB > 1:
            return Host(problem='%s does not add up to %s' % (
                CELL_CACHE_KEY, CACHE_KEY))
        cache = total
    if mode not in TIERED:
        return Host(mode=mode)
    if cache is None:
        return Host(problem='%s=%s without %s' % (MODE_KEY, mode, CACHE_KEY))
    return Host(mode=mode, cache_gb=cache, cell_gb=cells)


# --- the cache bound: scheduling.rst "PmemCacheFilter", numa.rst ---

def cache_bound_mb(prof, overcommit):
    """``pmem_dram_cache_gb x 1024 x [pmem] cache_overcommit_ratio`` MB."""
    return prof.cache_gb * MB_PER_GB * exact(overcommit)


def cell_bounds_mb(prof, cells, overcommit):
    """{cell: MB} each NUMA cell's cache holds.

    None when the per-cell key names other cells than the host has.
    ``cell GB x 1024 x cache_overcommit_ratio``; a cell's GB is the host's
    split evenly over its cells, or what ``pmem_dram_cache_gb_per_cell``
    gives.
    """
    cells = sorted(set(cells))
    sizes = prof.cell_gb
    if sizes is None:
        sizes = {cell: prof.cache_gb / len(cells) for cell in cells}
    elif sorted(sizes) != cells:
        return None
    return {cell: gb * MB_PER_GB * exact(overcommit)
            for cell, gb in sizes.items()}


def spread_mb(prof, cells, mb):
    """A floating instance's charge on each cell.

    In proportion to the cell's cache (numa.rst, "Charges").
    """
    sizes = prof.cell_gb or {cell: 1 for cell in set(cells)}
    total = sum(sizes.values())
    return {cell: mb * gb / total for cell, gb in sizes.items()}


def admits(prof, overcommit, used_mb, new_mb, cells=None, used_cells=None,
           new_cells=None):
    """Whether PmemCacheFilter passes a ``memory_mode`` host.

    The hot RAM already there plus the new instance's stays within the
    bound: host-wide, or on each NUMA cell (numa.rst, "Check") when the
    host has cells and the new instance or one already there is
    NUMA-bound. With only floating instances both checks decide the same,
    and the filter checks host-wide.

    :param used_mb: hot MB of the floating instances on the host.
    :param new_mb: hot MB of the new instance, when it floats.
    :param cells: the host's NUMA cell ids, None when it reports none.
    :param used_cells: {cell: hot MB} of the NUMA-bound instances there.
    :param new_cells: {cell: hot MB} of the new instance, when NUMA-bound
        (each cell's memory x its hot ratio).
    """
    used_mb, new_mb = exact(used_mb), exact(new_mb)
    used_cells = {c: exact(mb) for c, mb in (used_cells or {}).items()}
    new_cells = {c: exact(mb) for c, mb in (new_cells or {}).items()}
    if cells is None or not (new_cells or used_cells):
        total = used_mb + sum(used_cells.values()) + new_mb
        return total <= cache_bound_mb(prof, overcommit)
    bounds = cell_bounds_mb(prof, cells, overcommit)
    if bounds is None:
        return False
    charged = spread_mb(prof, cells, used_mb)
    for cell, mb in used_cells.items():
        charged[cell] += mb
    new = new_cells or spread_mb(prof, cells, new_mb)
    return all(charged[cell] + mb <= bounds[cell]
               for cell, mb in new.items() if mb)
