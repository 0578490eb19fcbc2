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
"""The branch-and-bound search over which instances move and where.

The over hosts (:class:`Source`) with the bounds of fixing each, one
assignment of the moved instances to destinations kept current
(:class:`Packing`) and the exact search with its greedy start
(:class:`Search`).
"""

import math

from nova_pmem_filters.core.plans.rebalance import admission
from nova_pmem_filters.core.plans.rebalance import records
from nova_pmem_filters.core.rules import charging
from nova_pmem_filters.core.rules import nearmem


class Source(object):
    """An over host: its movable instances and the bounds of fixing it."""

    def __init__(self, host, aim_below, movable):
        self.host = host
        # Best working set per MB first: they fix it for the least memory;
        # equal instances next to each other (see Search.instance).
        self.movable = sorted(movable, key=lambda i: (
            -_per_mb(host.charge(i), i.memory_mb), -host.charge(i),
            admission.signature(i), i.label, i.uuid))
        self.loads = [host.charge(i) for i in self.movable]
        self.same = [j > 0 and admission.signature(self.movable[j - 1]) ==
                     admission.signature(inst)
                     for j, inst in enumerate(self.movable)]
        total = charging.charged(host.prof, host.ws).total
        near = host.prof.cache_capacity_mb(aim_below)
        if host.cell_ids is not None:
            caps, _problem = host.prof.cell_capacities_mb(host.cell_ids,
                                                          aim_below)
            near = max(near, math.fsum(caps.values()))
        # What must leave, host-wide at least, for it to be fixed.
        self.deficit = total - near - records.SLACK_MB
        self.fixable = math.fsum(self.loads) >= self.deficit
        self.lb_mb, self.lb_count = self.bounds(0, 0.0)

    def bounds(self, start, moved):
        """Lower bounds (MB, count) on fixing it from ``movable[start:]``.

        ``moved``: the load already moved off. A fractional knapsack of the
        loads (MB) and, for the count, the largest loads first.
        """
        need = self.deficit - moved
        if need <= 0:
            return 0.0, 0
        mb, left = 0.0, need
        rest = sorted(range(start, len(self.movable)), key=lambda k: (
            -_per_mb(self.loads[k], self.movable[k].memory_mb)))
        for k in rest:
            load, memory = self.loads[k], self.movable[k].memory_mb
            if load >= left:
                mb += memory * left / load if load else 0.0
                left = 0.0
                break
            mb += memory
            left -= load
        count, left = 0, need
        for load in sorted((self.loads[k] for k in rest), reverse=True):
            if left <= 0:
                break
            count += 1
            left -= load
        return max(mb - records.SLACK_MB, 0.0), count


def _per_mb(load, memory_mb):
    return load / memory_mb if memory_mb else float('inf')


class _Packing(object):
    """Where the moved instances go: one valid assignment, kept current.

    Which instances move decides the objective; where they go only
    whether they can. So a set of moved instances needs one assignment
    to destinations, not all: an instance added goes where the rules admit
    it next to the others, and only when none does are all of them packed
    again, with backtracking.
    """

    def __init__(self, aim_below, ratio, search):
        self.aim = aim_below
        self.ratio = ratio
        self.search = search
        self.moves = []

    def apply(self, inst, dest, option):
        self.moves.append((inst, dest, option))
        dest.undo.append((dest.hot, dest.ws, dict(dest.cell_mb)))
        dest.hot = dest.hot.copy()
        admission.add_load(dest.hot, inst.hot_mb, inst, option)
        if dest.tiered:
            dest.ws = dest.ws.copy()
            admission.add_load(dest.ws, inst.ws, inst, option)
        dest.ram += inst.memory_mb
        dest.vcpus += inst.vcpus
        for cell, mb in option or ():
            dest.cell_mb[cell] = dest.cell_mb.get(cell, 0.0) + mb

    def undo(self):
        inst, dest, _option = self.moves.pop()
        dest.hot, dest.ws, dest.cell_mb = dest.undo.pop()
        dest.ram -= inst.memory_mb
        dest.vcpus -= inst.vcpus

    def reset(self, moves):
        """Go back to ``moves`` (valid in that order).

        The moves both share are kept; the rest undone, then applied.
        """
        keep = 0
        while keep < min(len(moves), len(self.moves)) and \
                self.moves[keep] == moves[keep]:
            keep += 1
        while len(self.moves) > keep:
            self.undo()
        for move in moves[keep:]:
            self.apply(*move)

    def destinations(self, inst):
        """``(dest, option)`` that admit ``inst`` now, by name.

        Among the hosts that admit it alone (``inst.candidates``): the
        rules only tighten as moves land.
        """
        for dest in inst.candidates:
            options, _reason = admission.admits(dest, inst, self.aim,
                                                self.ratio)
            for option in options:
                yield dest, option

    def add(self, inst, repack=True):
        """Place ``inst`` next to the others, repacking if need be.

        :param repack: when nowhere admits it next to the others as they
            are, pack them all again (else give up).
        :returns: the moves to go back to with :meth:`reset`, or None when
            no assignment holds them all (nothing is changed then).
        """
        before = list(self.moves)
        for dest, option in self.destinations(inst):
            self.apply(inst, dest, option)
            return before
        insts = sorted([m[0] for m in before] + [inst], key=lambda i: (
            -i.memory_mb, -(i.ws or 0.0), admission.signature(i), i.label,
            i.uuid))
        if not repack or not _room(insts):
            return None
        self.reset([])
        if self.pack(insts, 0, None):
            return before
        self.reset(before)
        return None

    def pack(self, insts, n, after):
        """Place ``insts[n:]`` by backtracking; False if they cannot go.

        ``after``: where ``insts[n - 1]`` went, as (host's position among
        its candidates, cells). An instance equal to the one before goes
        no earlier: the other way round is the same packing.
        """
        if n == len(insts):
            return True
        if not self.search.tick():
            return False
        inst = insts[n]
        same = n > 0 and (admission.signature(insts[n - 1])
                          == admission.signature(inst))
        for dest, option in self.destinations(inst):
            here = (inst.candidates.index(dest), option or ())
            if same and here < after:
                continue
            self.apply(inst, dest, option)
            if self.pack(insts, n + 1, here):
                return True
            self.undo()
            if self.search.stopped:
                return False
        return False


def _room(insts):
    """Whether the hosts that may take ``insts`` have the RAM and vCPUs.

    A necessary condition, checked before packing them again: when it
    fails, no packing exists and none is searched for.
    """
    hosts = {id(d): d for i in insts for d in i.candidates}.values()
    return (math.fsum(i.memory_mb for i in insts) <= math.fsum(
        d.spec.free_ram_mb for d in hosts) + nearmem.EPSILON_MB
        and math.fsum(i.vcpus for i in insts) <= math.fsum(
            d.spec.free_vcpus for d in hosts) + nearmem.EPSILON_MB)


class Search(object):
    """Branch and bound over the over hosts, then their instances."""

    def __init__(self, sources, options):
        self.sources = sources
        self.cap = options['max_moves']
        self.max_nodes = options['max_nodes']
        self.packing = _Packing(options['aim_below'], options['ratio'],
                                self)
        self.aim = options['aim_below']
        self.nodes = 0
        self.stopped = False
        self.count = 0
        self.left = 0
        self.mb = 0.0
        self.best = (len(sources), 0.0, 0)
        self.best_moves = []
        # For the sources from k on: how many cannot be fixed, and the
        # bounds (moves, MB) of fixing each of the others, both sorted.
        self.suffix = []
        for k in range(len(sources) + 1):
            rest = [s for s in sources[k:] if s.fixable]
            self.suffix.append((len(sources) - k - len(rest),
                                sorted(s.lb_count for s in rest),
                                sorted(s.lb_mb for s in rest)))

    def fixed(self, src):
        """Whether ``src`` is at or below aim_below without its moves."""
        gone = {id(inst) for inst, _dest, _opt in self.packing.moves
                if inst.source == src.host.name}
        placed = [(i, c) for i, c in src.host.placed if id(i) not in gone]
        return not src.host.over(placed, self.aim)

    def rest(self, k, budget):
        """Lower bounds on (left over, MB, moves) of the sources from k on.

        With ``budget`` moves left at most as many of them can be fixed as
        the fewest moves each needs allow; those fixed cost at least the
        least MB of as many.
        """
        bad, counts, mbs = self.suffix[k]
        fixed, used = 0, 0
        for count in counts:
            if used + count > budget:
                break
            used += count
            fixed += 1
        return (bad + len(counts) - fixed, math.fsum(mbs[:fixed]), used)

    def tick(self):
        self.nodes += 1
        if self.nodes > self.max_nodes:
            self.stopped = True
        return not self.stopped

    def host(self, k):
        """Decide source ``k`` and those after it."""
        if not self.tick():
            return
        if k == len(self.sources):
            found = (self.left, self.mb, self.count)
            if found < self.best:
                self.best = found
                self.best_moves = list(self.packing.moves)
            return
        left, mb, count = self.rest(k, self.cap - self.count)
        if (self.left + left, self.mb + mb, self.count + count) >= self.best:
            return
        if self.sources[k].fixable:
            self.instance(k, 0, 0.0, False)
        self.left += 1
        self.host(k + 1)
        self.left -= 1

    def instance(self, k, j, moved, kept):
        """Fix source ``k``: its ``j``-th movable instance on.

        ``kept``: instance ``j - 1`` stays. An instance equal to one that
        stays stays too: moving it instead gives the same plan.
        """
        if not self.tick():
            return
        src = self.sources[k]
        if j == len(src.movable):
            if self.fixed(src):
                self.host(k + 1)
            return
        if moved + math.fsum(src.loads[j:]) < src.deficit:
            return
        lb_mb, lb_count = src.bounds(j, moved)
        if self.count + lb_count > self.cap:
            return
        left, mb, count = self.rest(k + 1, self.cap - self.count - lb_count)
        if (self.left + left, self.mb + lb_mb + mb,
                self.count + lb_count + count) >= self.best:
            return
        inst = src.movable[j]
        if self.count < self.cap and not (kept and src.same[j]):
            before = self.packing.add(inst)
            if before is not None:
                self.count += 1
                self.mb += inst.memory_mb
                self.instance(k, j + 1, moved + src.loads[j], False)
                self.count -= 1
                self.mb -= inst.memory_mb
                self.packing.reset(before)
                if self.stopped:
                    return
        self.instance(k, j + 1, moved, True)

    def greedy(self):
        """A first plan, for the bound to start from.

        Each source in turn, its instances where they fit until it is
        fixed; undone if it is not.
        """
        for src in self.sources:
            mark, moved = list(self.packing.moves), 0.0
            count, mb = self.count, self.mb
            for j, inst in enumerate(src.movable):
                if self.count >= self.cap or moved >= src.deficit:
                    break
                if self.packing.add(inst, repack=False) is not None:
                    self.count += 1
                    self.mb += inst.memory_mb
                    moved += src.loads[j]
            if self.count > count and self.fixed(src):
                continue
            self.packing.reset(mark)
            self.count, self.mb = count, mb
            self.left += 1
        self.best = (self.left, self.mb, self.count)
        self.best_moves = list(self.packing.moves)
        self.packing.reset([])
        self.left, self.count, self.mb = 0, 0, 0.0
