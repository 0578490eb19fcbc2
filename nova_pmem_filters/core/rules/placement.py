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
"""Near memory in Placement: the inventory hosts report, the amount flavors
request.

With several scheduler workers the near-memory bound is only atomic in
Placement: every host reports its near memory as ``CUSTOM_NEAR_MEMORY_MB``
through Nova's provider config, and each flavor requests its hot MB of it
(``resources:CUSTOM_NEAR_MEMORY_MB``). Discovery, nova-config, the doctor
and the simulator write and check both sides with these functions.

This module imports nothing from Nova.
"""

import math
import re

from nova_pmem_filters.core.rules import defaults
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import nearmem
from nova_pmem_filters.core.rules import profile

# The fields of one Placement inventory, in the order Nova's provider
# config and Placement's API give them.
TOTAL = 'total'
RESERVED = 'reserved'
MIN_UNIT = 'min_unit'
MAX_UNIT = 'max_unit'
STEP_SIZE = 'step_size'
ALLOCATION_RATIO = 'allocation_ratio'
INVENTORY_KEYS = (TOTAL, RESERVED, MIN_UNIT, MAX_UNIT, STEP_SIZE,
                  ALLOCATION_RATIO)

# Nova's [DEFAULT] initial_ram_allocation_ratio: the MEMORY_MB ratio of a
# compute whose ram_allocation_ratio is unset (conf.nova_scheduler declares
# the option with it; a test keeps it equal to Nova's own declaration).
INITIAL_RAM_ALLOCATION_RATIO = 1.0

# Placement resource class of near memory: the DRAM that serves as system
# memory (dram and app_direct hosts) or in front of the far tier (the
# Memory-Mode cache, the DRAM of a tiered CXL host). Hosts report it
# (host_near_memory_mb()); flavors request their hot MB of it
# (instance_near_memory_mb()).
NEAR_MEMORY_RC = 'CUSTOM_NEAR_MEMORY_MB'

# The Placement request of a flavor's hot RAM (see instance_near_memory_mb).
NEAR_MEMORY_KEY = 'resources:%s' % NEAR_MEMORY_RC
# The same resource in any request group: resources, resources1,
# resources_GROUP.
_NEAR_MEMORY_KEY_RE = re.compile(
    r'resources(?:[1-9][0-9]*|_[a-zA-Z0-9_-]+)?:%s' % NEAR_MEMORY_RC)


def host_near_memory_mb(near_gb):
    """Whole MB of a host's near memory of ``near_gb`` GB (1024 MB).

    What the host reports as ``CUSTOM_NEAR_MEMORY_MB`` (its inventory's
    ``total``) and what its discovered profile records as
    ``near_memory_mb``: rounded down, as Placement counts in integers; a
    size within the filter's tolerance of a whole MB is that MB. Give the
    unrounded size where it is known (discovery does): the profile's GB
    figures are rounded to 0.01 GB, up to 5 MB off.
    """
    return int(math.floor(profile.gb_to_mb(near_gb) + nearmem.EPSILON_MB))


def instance_near_memory_mb(memory_mb, hot_ratio):
    """``CUSTOM_NEAR_MEMORY_MB`` an instance requests from Placement.

    The filter's hot MB (:func:`nearmem.hot_mb`) rounded up to a whole MB, as
    Placement counts in integers. A product within the filter's tolerance of
    an integer is that integer (1000 MB x 0.7 is 700, not 701), and an
    instance requests at least 1 MB.
    """
    return max(int(math.ceil(nearmem.hot_mb(memory_mb, hot_ratio)
                             - nearmem.EPSILON_MB)), 1)


def near_memory_spec(memory_mb, hot_ratio):
    """The flavor extra spec that asks Placement for its hot RAM.

    :returns: ``{'resources:CUSTOM_NEAR_MEMORY_MB': '<hot MB>'}``.
    """
    return {NEAR_MEMORY_KEY: str(instance_near_memory_mb(memory_mb,
                                                         hot_ratio))}


def near_memory_keys(extra_specs):
    """The extra-spec keys that request ``CUSTOM_NEAR_MEMORY_MB``, sorted.

    One per request group that names it (``resources``, ``resources1``,
    ``resources_GROUP``), whatever its value.
    """
    return sorted(key for key in (extra_specs or {})
                  if isinstance(key, str)
                  and _NEAR_MEMORY_KEY_RE.fullmatch(key))


def requested_near_memory(extra_specs):
    """MB of ``CUSTOM_NEAR_MEMORY_MB`` a flavor requests, or None.

    Summed over the request groups that name it; values that are not a
    positive integer (Nova drops a zero amount) count as no request.
    """
    total = 0
    for key, value in (extra_specs or {}).items():
        if not (isinstance(key, str) and _NEAR_MEMORY_KEY_RE.fullmatch(key)):
            continue
        try:
            amount = int(str(value).strip())
        except ValueError:
            continue
        if amount > 0:
            total += amount
    return total or None


def near_memory_inventory(
        mode, near_gb=None,
        cache_overcommit_ratio=defaults.CACHE_OVERCOMMIT_RATIO,
        ram_allocation_ratio=INITIAL_RAM_ALLOCATION_RATIO, *, total_mb=None):
    """The ``CUSTOM_NEAR_MEMORY_MB`` inventory of one host, for Placement.

    Every host reports its near memory (:func:`profile.near_memory_gb`), so
    that a flavor requesting near memory can land on any kind:

    * tiered kinds (``memory_mode``, ``cxl_flat``, ``cxl_kmem``): the DRAM
      in front of the far tier, with allocation ratio
      ``cache_overcommit_ratio``: Placement then admits what
      PmemCacheFilter admits (up to the rounding of
      :func:`instance_near_memory_mb`).
    * the others: the DRAM, with the host's ``ram_allocation_ratio``. An
      instance requests at most its RAM of near memory, so this inventory
      never binds before MEMORY_MB.

    :param near_gb: the host's near memory, GB (1024 MB); its whole MB
        (:func:`host_near_memory_mb`) are the total.
    :param total_mb: the total, in whole MB, instead of ``near_gb`` (a
        discovered profile's exact ``near_memory_mb``).
    :returns: a dict of Nova's provider-config inventory fields
        (:data:`INVENTORY_KEYS`).
    """
    if total_mb is None:
        total_mb = host_near_memory_mb(near_gb)
    if mode in kinds.TIERED:
        ratio = cache_overcommit_ratio
    else:
        ratio = ram_allocation_ratio
    return inventory(total_mb, allocation_ratio=ratio)


def capacity(total, reserved, ratio):
    """What Placement admits of an inventory: (total - reserved) x ratio.

    Unrounded: callers compare requests against it (numbers or numpy
    arrays alike).
    """
    return (total - reserved) * ratio


def capacity_mb(inventory):
    """:func:`capacity` of an inventory dict (a provider config's)."""
    return capacity(inventory.get(TOTAL, 0), inventory.get(RESERVED, 0),
                    float(inventory.get(ALLOCATION_RATIO, 1.0)))


def inventory(total, allocation_ratio=1.0, reserved=0, min_unit=1,
              max_unit=None, step_size=1):
    """One inventory: a dict of its fields, in :data:`INVENTORY_KEYS` order.

    :param max_unit: default ``total`` (at least 1).
    """
    return {TOTAL: int(total), RESERVED: int(reserved),
            MIN_UNIT: int(min_unit),
            MAX_UNIT: int(max(total, 1) if max_unit is None else max_unit),
            STEP_SIZE: int(step_size),
            ALLOCATION_RATIO: float(allocation_ratio)}
