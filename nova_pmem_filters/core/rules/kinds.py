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
"""The table of host kinds: what each ``pmem_mode`` value means.

One row per kind an aggregate may name. Every rule that depends on what a
host is (which ``pmem:modes`` value it passes as, whether its guest RAM is
a far tier behind near memory, what that near memory is, its Placement
trait) reads this table; nothing else lists kinds.

Discovery also knows ``mixed``, a hardware mode (part of the PMem in
Memory Mode, the rest App Direct) that is scheduled as ``memory_mode``.

This module imports nothing from Nova.
"""

import dataclasses

DRAM = 'dram'
MEMORY_MODE = 'memory_mode'
APP_DIRECT = 'app_direct'
CXL_FLAT = 'cxl_flat'
CXL_KMEM = 'cxl_kmem'
CXL_DEVDAX = 'cxl_devdax'
# A hardware mode only: partial Memory Mode.
MIXED = 'mixed'

# What the near memory of a tiered kind is, for messages.
NEAR_DRAM_CACHE = 'DRAM cache'
NEAR_DRAM = 'near memory (DRAM)'

# Who tiers a tiered kind (Kind.tiered_by).
HARDWARE = 'hardware'
KERNEL = 'kernel'

# Placement trait of a kind (os-traits has none for PMem or CXL).
TRAIT_PREFIX = 'CUSTOM_PMEM_MODE_'

# The memory media a node of a kind holds (Kind.media): DIMMs of DRAM, of
# Optane PMem, and CXL memory devices. A node configuration's capacity of
# each is its ``<medium>_gb``.
DRAM_MEDIUM = 'dram'
PMEM_MEDIUM = 'pmem'
CXL_MEDIUM = 'cxl'


@dataclasses.dataclass(frozen=True)
class Kind:
    """One kind of host."""

    # The pmem_mode aggregate value.
    name: str
    # The ``pmem:modes`` value (an Optane mode) the kind passes as: a flavor
    # saying dram, memory_mode or app_direct admits the CXL kinds that
    # behave as it; a flavor naming a CXL kind admits only that kind.
    scheduled_as: str
    # Guest RAM is a far tier behind near memory: the hot RAM of the
    # instances must stay within the near memory (pmem_dram_cache_gb).
    tiered: bool
    # What the near memory of a tiered kind is (None on the others, whose
    # guest RAM is DRAM).
    near_memory: str
    # The Optane generation, CXL, or plain DRAM.
    family: str
    # One line for operators (option choices, docs).
    label: str
    # Who moves pages between the tiers of a tiered kind: 'hardware' (the
    # memory controller) or 'kernel' (NUMA balancing and demotion, see
    # nova_pmem_filters.core.rules.tiering); None on the others.
    tiered_by: str = None
    # A few words for charts and tables ("Memory Mode nodes").
    words: str = None
    # The planner's prefix of a node configuration's name (``mm-192-512``).
    prefix: str = None
    # The media a node holds (DRAM_MEDIUM, ...), and those whose capacity
    # is the guests' RAM (in Memory Mode the DRAM is a cache, not RAM).
    media: frozenset = frozenset([DRAM_MEDIUM])
    guest_memory: tuple = (DRAM_MEDIUM,)
    # The medium behind near memory of a tiered kind (None on the others).
    far_memory: str = None
    # Offers persistent-memory namespaces to guests (vPMEM, ``hw:pmem``).
    namespaces: bool = False

    @property
    def dram_backed(self):
        """Guest RAM is DRAM: the tier ``pmem:priority=high`` prefers."""
        return not self.tiered

    @property
    def trait(self):
        return trait(self.name)

    @property
    def far_in_cpu_nodes(self):
        """Its far memory is in the NUMA nodes of the CPUs.

        A kind tiered by the memory controller: one pool (CXL flat). The
        kernel shows a kernel-tiered kind's far memory as CPU-less nodes.
        """
        return self.far_memory is not None and self.tiered_by == HARDWARE


_PMEM_NODE = frozenset([DRAM_MEDIUM, PMEM_MEDIUM])
_CXL_NODE = frozenset([DRAM_MEDIUM, CXL_MEDIUM])

KINDS = {k.name: k for k in (
    Kind(DRAM, DRAM, False, None, 'dram', 'All guest RAM is DRAM.',
         words='DRAM', prefix='dram'),
    Kind(MEMORY_MODE, MEMORY_MODE, True, NEAR_DRAM_CACHE, 'optane',
         'PMem is the system memory and DRAM is a hardware cache in front '
         'of it.', HARDWARE, words='Memory Mode', prefix='mm',
         media=_PMEM_NODE, guest_memory=(PMEM_MEDIUM,),
         far_memory=PMEM_MEDIUM),
    Kind(APP_DIRECT, APP_DIRECT, False, None, 'optane',
         'DRAM is the system memory; PMem is offered as persistent '
         'namespaces (vPMEM).', words='App Direct', prefix='ad',
         media=_PMEM_NODE, namespaces=True),
    Kind(CXL_FLAT, MEMORY_MODE, True, NEAR_DRAM, 'cxl',
         'DRAM and CXL memory are one pool; the memory controller keeps hot '
         'lines in DRAM.', HARDWARE, words='CXL flat', prefix='flat',
         media=_CXL_NODE, guest_memory=(DRAM_MEDIUM, CXL_MEDIUM),
         far_memory=CXL_MEDIUM),
    Kind(CXL_KMEM, MEMORY_MODE, True, NEAR_DRAM, 'cxl',
         'CXL memory is onlined as CPU-less NUMA nodes; the kernel demotes '
         'cold pages to them.', KERNEL, words='CXL kmem', prefix='kmem',
         media=_CXL_NODE, guest_memory=(DRAM_MEDIUM, CXL_MEDIUM),
         far_memory=CXL_MEDIUM),
    Kind(CXL_DEVDAX, DRAM, False, None, 'cxl',
         'DRAM is the system memory; CXL memory is kept out of it as devdax '
         'devices.', words='CXL devdax', prefix='devdax', media=_CXL_NODE),
)}

# Every kind an aggregate may name, in the table's order.
ALL_MODES = tuple(KINDS)
# The kinds that are scheduled as themselves: every kind passes as one of
# them, and together they are the default of [pmem] default_flavor_modes.
MODES = tuple(k.name for k in KINDS.values() if k.scheduled_as == k.name)
CXL_MODES = tuple(k.name for k in KINDS.values() if k.family == 'cxl')
# The values of pmem:modes: the modes above, each admitting the kinds
# scheduled as it, and the CXL kinds, each admitting exactly itself.
FLAVOR_MODES = MODES + CXL_MODES
TIERED = frozenset(k.name for k in KINDS.values() if k.tiered)
DRAM_BACKED = frozenset(k.name for k in KINDS.values() if k.dram_backed)
# The kinds whose tiering the kernel does (pmem_kernel_tiering applies).
KERNEL_TIERED = frozenset(k.name for k in KINDS.values()
                          if k.tiered_by == KERNEL)
# The kinds that offer persistent-memory namespaces (vPMEM).
NAMESPACE_KINDS = frozenset(k.name for k in KINDS.values() if k.namespaces)
# The kinds whose nodes hold PMem, in the table's order.
PMEM_MODES = tuple(k.name for k in KINDS.values()
                   if PMEM_MEDIUM in k.media)

# Hardware modes a discovered host profile may carry, and the kind each is
# scheduled as.
HARDWARE_MODES = MODES + (MIXED,) + CXL_MODES
_HARDWARE_KIND = {MIXED: MEMORY_MODE}
# The hardware modes whose PMem is partly or wholly App Direct: regions
# and namespaces (vPMEM); ``mixed`` has both.
NAMESPACE_MODES = NAMESPACE_KINDS | {MIXED}
# The hardware modes whose far memory is PMem in Memory Mode: ipmctl's
# media counters measure its traffic.
PMEM_FAR_MODES = frozenset([k.name for k in KINDS.values()
                            if k.far_memory == PMEM_MEDIUM] + [MIXED])


def get(name):
    """The :class:`Kind` called ``name``, or None."""
    return KINDS.get(name)


def scheduled_as(mode):
    """The ``pmem:modes`` value a host kind passes as."""
    kind = KINDS.get(mode)
    return kind.scheduled_as if kind is not None else mode


def admitted_by(mode):
    """The ``pmem:modes`` values that admit a host of kind ``mode``.

    Its own name (a CXL kind is selected by name) and the mode it is
    scheduled as (the Optane modes keep admitting the CXL kinds that
    behave as them).
    """
    return frozenset((mode, scheduled_as(mode)))


def guest_memory_gb(mode, capacity_gb):
    """The guests' RAM of a node of kind ``mode``: GB of its media.

    :param capacity_gb: ``{medium: GB}`` the node holds.
    """
    return sum(capacity_gb.get(medium, 0.0)
               for medium in KINDS[mode].guest_memory)


def order(mode):
    """Sort key of a kind: the table's order, unknown names last."""
    return ALL_MODES.index(mode) if mode in KINDS else len(ALL_MODES)


def scheduler_kind(hardware_mode):
    """The kind (``pmem_mode`` value) of a host of ``hardware_mode``."""
    return _HARDWARE_KIND.get(hardware_mode, hardware_mode)


def trait(mode):
    """``CUSTOM_PMEM_MODE_<MODE>`` of a kind or hardware mode."""
    return TRAIT_PREFIX + mode.upper()


def traits(hardware_mode):
    """The mode traits of a host: its own and, if other, its kind's.

    A flavor that requires CUSTOM_PMEM_MODE_MEMORY_MODE then lands on mixed
    hosts too, as the pmem_mode aggregate key sends it there.
    """
    names = [trait(hardware_mode)]
    kind = scheduler_kind(hardware_mode)
    if kind != hardware_mode:
        names.append(trait(kind))
    return names
