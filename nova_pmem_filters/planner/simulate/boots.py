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
"""One boot's decision over the simulator's table of hosts (or groups).

What a flavor asks (:class:`Request`), Placement's candidates, the filters
through the core's rules, and the weighers normalised and summed as Nova's
weight handler does, over the rows of a table: the groups of alike hosts
of :mod:`~nova_pmem_filters.planner.simulate.groups`, which weigh as
their hosts do. :mod:`~nova_pmem_filters.planner.simulate.engine` keeps
the fleet's state and calls these.
"""

import bisect
import collections.abc
import itertools
import operator

import numpy as np

from nova_pmem_filters.core.rules import charging
from nova_pmem_filters.core.rules import decide
from nova_pmem_filters.core.rules import nearmem
from nova_pmem_filters.core.rules import placement


# Why a boot found no host before the filters: Placement had none.
NO_RESOURCES = 'placement'
WEIGHERS = ('ram', 'cpu', 'tier', 'headroom')
# The hosts have no NUMA cells: bound instances count on this one.
HOST_CELL = 0


class Request(object):
    """What the simulator needs of one flavor, worked out once."""

    def __init__(self, flavor, scheduler, host_kinds):
        self.flavor = flavor
        self.request, self.error = flavor.request(scheduler)
        self.near_mb = flavor.requested_near_memory_mb() or 0
        if scheduler.near_memory and not self.near_mb and self.request:
            self.near_mb = placement.instance_near_memory_mb(
                flavor.memory_mb, self.request.hot_ratio)
        self.accounted = bool(self.near_mb)
        self.hot_mb = (self.request.hot_mb(flavor.memory_mb)
                       if self.request else 0.0)
        self.ram_mb = float(flavor.memory_mb) if self.request else 0.0
        # Nova binds its memory to the cells it fits it on: on a host of
        # one cell, all of it on that cell.
        self.binds = charging.binds_memory(flavor.extra_specs) is not None
        self.fit = ((lambda: {HOST_CELL: flavor.memory_mb})
                    if self.binds else None)
        # Per kind: the mode rule and the tier weigher's raw weight, from
        # the shared rules; the cache rule depends on each host's usage and
        # is decided per placement (Fleet.filtered).
        self.mode_ok, self.mode_reason = [], []
        self.tier = []
        for kind in host_kinds:
            prof = kind.profile
            if self.request is None:
                self.mode_ok.append(False)
                self.mode_reason.append(decide.REJECT_CONFLICT)
                self.tier.append(0.0)
                continue
            ok, reason = decide.mode_passes(self.request, prof)
            self.mode_ok.append(ok)
            self.mode_reason.append(reason)
            self.tier.append(decide.tier_score(self.request, prof))
        self.mode_ok = np.array(self.mode_ok, dtype=bool)
        self.tier = np.array(self.tier, dtype=float)
        # What an instance adds to each of Fleet.USAGE; None: nothing.
        bound = (self.hot_mb, self.ram_mb) if self.binds else (None, None)
        self.amounts = (flavor.vcpus, flavor.memory_mb, self.near_mb,
                        self.hot_mb, self.ram_mb) + bound
        self._profiles = [kind.profile for kind in host_kinds]
        self._ratio = scheduler.cache_overcommit_ratio
        self._rules = {}

    def cache_rule(self, k):
        """PmemCacheFilter's rule on hosts of kind ``k``, made once.

        :func:`decide.cache_check` is this rule applied to one host.
        """
        key = ('cache', int(k))
        if key not in self._rules:
            self._rules[key] = decide.cache_rule(
                self._profiles[key[1]], self._ratio, self.request,
                self.flavor.memory_mb, self.accounted, self.fit is not None)
        return self._rules[key]

    def headroom_rule(self, k):
        """PmemCacheHeadroomWeigher's score on hosts of kind ``k``, once.

        :func:`decide.headroom_score` is this score of one host.
        """
        key = ('headroom', int(k))
        if key not in self._rules:
            self._rules[key] = decide.headroom_rule(
                self._profiles[key[1]], self._ratio, self.request,
                self.flavor.memory_mb)
        return self._rules[key]


class HostNames(collections.abc.Sequence):
    """The hosts' names, ``<kind>-<serial>``, made when asked for.

    A fleet of a million hosts would otherwise hold a million strings that
    a replay reads only for the hosts it places VMs on.
    """

    def __init__(self, host_kinds):
        self._kinds = tuple(host_kinds)
        self._ends = list(itertools.accumulate(k.count for k in self._kinds))

    def __len__(self):
        return self._ends[-1] if self._ends else 0

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        index = operator.index(index)
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError('host index out of range')
        k = bisect.bisect_right(self._ends, index)
        kind = self._kinds[k]
        serial = index - (self._ends[k] - kind.count) + 1
        return '%s-%0*d' % (kind.name, len(str(kind.count)), serial)


def hot_ram(table, idx):
    """The :class:`nearmem.HotRam` of the rows ``idx`` of a table.

    As the scheduler's ledger records it, the bound instances on
    :data:`HOST_CELL`. A table is the fleet (a row per host) or its
    :class:`_Groups` (a row per group of alike hosts).
    """
    return nearmem.HotRam(table.hot_used[idx],
                          {HOST_CELL: table.bound_hot_used[idx]},
                          table.ram_used[idx],
                          {HOST_CELL: table.bound_ram_used[idx]})


def candidates(table, req):
    """Placement on the rows of a table: those whose inventories hold it."""
    f = req.flavor
    ok = ((table.vcpu_used + f.vcpus <= table.vcpu_cap)
          & (f.vcpus <= table.vcpus)
          & (table.mem_used + f.memory_mb <= table.mem_cap)
          & (f.memory_mb <= table.memory_mb))
    if req.near_mb:
        ok &= ((table.near_used + req.near_mb <= table.near_cap)
               & (req.near_mb <= table.near_max_unit))
    return ok


def filtered(table, req, ok):
    """The filters on the candidate rows: (passing, reason if none)."""
    if not ok.any():
        return ok, NO_RESOURCES
    if req.request is None or decide.flavor_conflict(req.request):
        return ok & False, decide.REJECT_CONFLICT
    after_mode = ok & req.mode_ok[table.kind]
    if not after_mode.any():
        reasons = {req.mode_reason[k] for k in set(table.kind[ok])}
        return after_mode, (decide.REJECT_MODE
                            if decide.REJECT_MODE in reasons
                            else decide.REJECT_UNKNOWN)
    # PmemCacheFilter, kind by kind on the rows' hot RAM.
    passing = after_mode.copy()
    reasons = set()
    for k in set(table.kind[after_mode]):
        idx = np.flatnonzero(after_mode & (table.kind == k))
        passes, reason, _view = req.cache_rule(k)(
            hot_ram(table, idx), None, req.fit)
        if np.ndim(passes):
            failed = idx[~passes]
        else:
            # One verdict for the kind, whatever the rows hold.
            failed = idx[:0] if passes else idx
        if len(failed):
            passing[failed] = False
            reasons.add(reason)
    if not passing.any():
        return passing, (decide.REJECT_CACHE
                         if decide.REJECT_CACHE in reasons
                         else decide.REJECT_UNKNOWN)
    return passing, None


def weights(fleet, table, req, idx):
    """Nova's weighed sum over the rows ``idx`` of a table (two or more).

    Each row's sum is the same float whatever the other rows are, but for
    the largest free RAM and free vCPUs of the rows, by which RAMWeigher
    and CPUWeigher normalise.
    """
    sched = fleet.scheduler
    total = np.zeros(len(idx))
    for weigher in WEIGHERS:
        if weigher == 'ram':
            raw = (table.memory_mb[idx] - table.reserved_mb[idx]
                   - table.mem_used[idx])
            norm = normalize(raw, low=0.0)
        elif weigher == 'cpu':
            raw = (table.vcpus[idx] * table.cpu_ratio[idx]
                   - table.vcpu_used[idx])
            norm = normalize(raw, low=0.0)
        elif weigher == 'tier':
            norm = req.tier[table.kind[idx]]
        else:
            norm = np.zeros(len(idx))
            if req.request is not None:
                mm = table.memory_mode[idx]
                for k in set(table.kind[idx[mm]]):
                    sel = mm & (table.kind[idx] == k)
                    norm[sel] = req.headroom_rule(k)(
                        hot_ram(table, idx[sel]), None, req.fit)
        total = total + sched.multiplier(weigher) * norm
    return total


def normalize(raw, low=None, high=None):
    """``nova.weights.normalize`` on an array.

    RAMWeigher and CPUWeigher set ``minval = 0``: their weights are the
    free amounts, raised to 0 as ``weigh_objects`` does, over the largest.
    """
    if low is not None:
        raw = np.maximum(raw, low)
    low = float(raw.min()) if low is None else float(low)
    high = float(raw.max()) if high is None else float(high)
    if low == high:
        return np.zeros(len(raw))
    return (raw - low) / (high - low)
