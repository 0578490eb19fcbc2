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
"""The simulator's hosts grouped by kind and usage: alike hosts.

Hosts of a kind that hold the same usage pass the same filters and weigh
the same floats, so a boot is decided on one row per group
(:mod:`~nova_pmem_filters.planner.simulate.boots`); sums over the hosts
are taken over the groups where any order of adding gives the same float
(:func:`exact_sum`).
"""

import heapq
import types

import numpy as np


# Whole numbers below this add up to the same float in any order.
EXACT_BELOW = 2.0 ** 52


def exact_sum(values, counts):
    """``sum(values x counts)`` when any order of adding gives it, or None.

    Whole numbers whose magnitudes sum below 2**52 add up without rounding,
    so the sum over groups is numpy's sum over their hosts, to the last bit.
    """
    if not len(values):
        return 0.0
    if (not np.all(np.isfinite(values)) or np.any(values != np.floor(values))
            or float(np.sum(np.abs(values) * counts)) >= EXACT_BELOW):
        return None
    return float(np.sum(values.astype(np.int64) * counts.astype(np.int64)))


class Groups(object):
    """The fleet's hosts grouped by kind and usage: alike hosts.

    Hosts of a kind that hold the same usage pass the same filters and
    weigh the same, so a boot needs one row per group, not one per host:
    a fleet of a million empty hosts is one group. A row holds the fleet's
    columns for its hosts (the same floats), whether it has hosts
    (``live``) and its first host (``first``), which a tie goes to.

    A claim or a release moves one host to the group of its new usage.
    Rows whose group emptied are reused. A group finds its first host again
    when it loses it: from a heap of the hosts that joined it (stale entries
    dropped as they surface) and, for a kind's initial group, from the range
    of the kind's hosts, scanned forward once.
    """

    # A heap with more stale entries than this is rebuilt.
    SLACK = 32

    def __init__(self, fleet):
        # Float columns, one array row each, so that a group is set in one
        # go: the fleet's fixed ones (but the mode) and its usage.
        self.FLOATS = tuple(name for name in fleet.FIXED
                            if name != 'memory_mode')
        self.COLUMNS = self.FLOATS + fleet.USAGE
        # Per kind, the fixed float columns.
        self._fixed = [[float(fleet._per_kind[name][k])
                        for name in self.FLOATS]
                       for k in range(len(fleet.kinds))]
        self._tiered = [kind.profile.tiered for kind in fleet.kinds]
        n = len(fleet)
        self.of = np.empty(n, dtype=np.int32 if n < 2 ** 31 else np.int64)
        self._rows = 0
        self._data = np.zeros((len(self.COLUMNS), 0))
        self._kind = np.zeros(0, dtype=int)
        self._mm = np.zeros(0, dtype=bool)
        self._live = np.zeros(0, dtype=bool)
        self._first = np.zeros(0, dtype=int)
        self._table = None
        self._index = {}
        self._keys, self._count, self._heaps = [], [], []
        # The range lo:hi of a kind's initial group.
        self._lo, self._hi = [], []
        self._free = []
        for k, kind in enumerate(fleet.kinds):
            if not kind.count:
                continue
            rows = fleet.hosts_of(k)
            g = self._new((k,) + (0.0,) * len(fleet.USAGE))
            self._lo[g], self._hi[g] = rows.start, rows.stop
            self._count[g] = kind.count
            self._live[g] = True
            self._first[g] = rows.start
            self.of[rows] = g

    def table(self):
        """The rows in use, with the fleet's column names, as views."""
        if self._table is None:
            rows = self._rows
            columns = {name: self._data[j, :rows]
                       for j, name in enumerate(self.COLUMNS)}
            self._table = types.SimpleNamespace(
                kind=self._kind[:rows], memory_mode=self._mm[:rows],
                live=self._live[:rows], first=self._first[:rows],
                **columns)
        return self._table

    def counts(self):
        """The number of hosts of each row in use."""
        return np.array(self._count, dtype=int)

    def _new(self, key):
        if self._free:
            g = self._free.pop()
        else:
            g = self._rows
            if g == self._data.shape[1]:
                self._grow(max(16, 2 * g))
            self._rows += 1
            self._table = None
            self._keys.append(None)
            self._count.append(0)
            self._heaps.append([])
            self._lo.append(0)
            self._hi.append(0)
        k = key[0]
        self._kind[g] = k
        self._mm[g] = self._tiered[k]
        self._data[:, g] = self._fixed[k] + list(key[1:])
        self._index[key] = g
        self._keys[g] = key
        return g

    def _grow(self, capacity):
        old = self._rows
        data = np.zeros((len(self.COLUMNS), capacity))
        data[:, :old] = self._data[:, :old]
        self._data = data
        for name in ('_kind', '_mm', '_live', '_first'):
            values = getattr(self, name)
            grown = np.zeros(capacity, dtype=values.dtype)
            grown[:old] = values[:old]
            setattr(self, name, grown)

    def key_of(self, host):
        """(kind, usage...) of a host: its group's."""
        return self._keys[self.of[host]]

    def move(self, host, key):
        """Host ``host`` now holds the usage of ``key``."""
        old = int(self.of[host])
        new = self._index.get(key)
        if new == old:
            return
        if new is None:
            new = self._new(key)
        count = self._count
        self.of[host] = new
        heap = self._heaps[new]
        heapq.heappush(heap, host)
        if not count[new]:
            self._live[new] = True
            self._first[new] = host
        elif host < self._first[new]:
            self._first[new] = host
        count[new] += 1
        if len(heap) > 2 * count[new] + self.SLACK:
            # Stale entries: hosts that left since.
            heap[:] = sorted({h for h in heap if self.of[h] == new})
        count[old] -= 1
        if not count[old]:
            self._drop(old)
        elif self._first[old] == host:
            self._first[old] = self._first_of(old)

    def _first_of(self, g):
        of = self.of
        lo, hi = self._lo[g], self._hi[g]
        while lo < hi and of[lo] != g:
            # Hosts of the initial range that left: skip them by the block.
            block = np.flatnonzero(of[lo:min(hi, lo + 1024)] == g)
            lo = lo + int(block[0]) if len(block) else min(hi, lo + 1024)
        self._lo[g] = lo
        heap = self._heaps[g]
        while heap and of[heap[0]] != g:
            heapq.heappop(heap)
        found = [lo] if lo < hi else []
        if heap:
            found.append(heap[0])
        return min(found)

    def _drop(self, g):
        del self._index[self._keys[g]]
        self._keys[g] = None
        self._heaps[g] = []
        self._lo[g] = self._hi[g] = 0
        self._live[g] = False
        self._free.append(g)
