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
"""The rebalancing plan: which instances to move where, and why not more.

A tiered host whose measured working set has grown past its near memory
serves hot pages from the slow tier. :func:`plan` works out, from the
hosts, the instances on each with their flavors and measured working sets,
and the core's rules, which instances to move to which hosts so that the
hosts over their near memory are back under it. The doctor
(``working-set-over-near-memory``) and the Watcher strategy both call it;
it imports nothing from Nova or Watcher and changes nothing.

Input
    :class:`Host` per compute host: its name, its :class:`~nova_pmem_filters.
    core.profile.HostProfile` (None when it could not be read), its free
    RAM MB and vCPUs as Placement counts them (capacity x allocation ratio,
    less reserved, less allocations), its NUMA cells with CPUs
    (:class:`Cell`, with each cell's free memory for NUMA-bound guests as
    Nova's NUMA fit counts it; None: no topology known) and its
    :class:`Instance` list: uuid, name, flavor RAM MB, vCPUs and extra
    specs, measured working set MB (None: not measured) and, for a
    NUMA-bound instance, the host cells it sits on
    (``((cell, MB), ...)``).

Options
    ``act_above``: a host (or one of its cells) is *over* when the working
    set it is charged exceeds ``act_above`` x its near memory (default 1.0,
    what the doctor calls over). ``aim_below``: after the plan every host
    it fixes and every destination is at or below ``aim_below`` x its near
    memory (default 0.9), so that the next audit finds nothing to do: the
    plan does not oscillate. ``max_moves``: at most this many migrations.
    ``cache_overcommit_ratio`` and ``defaults``: the scheduler's
    ``[pmem]`` settings, for the rules a destination must pass.

Rules
    * What a host is charged is the core's: the instances' measured working
      sets where the core charges hot RAM, their whole RAM where
      :func:`~nova_pmem_filters.core.tiering.whole_ram` says so (NUMA-bound
      guests on ``cxl_kmem``, every guest where its kernel does not tier);
      floating instances spread over the cells in proportion to their near
      memory, bound ones on their cells; over or not, host-wide or cell by
      cell, is :func:`~nova_pmem_filters.core.decide.overcommitted` with the
      threshold as its ratio.
    * A destination admits an instance by every rule of the core:
      PmemModeFilter's (:func:`~nova_pmem_filters.core.decide.mode_passes`),
      PmemCacheFilter's (:func:`~nova_pmem_filters.core.decide.cache_check`
      on the declared hot RAM already there plus the plan's earlier moves
      to it, on the cells the plan gives a NUMA-bound guest), the RAM and
      vCPU room, each cell's free memory for a bound guest; and on a tiered
      destination the measured working sets stay at or below
      ``aim_below`` x its near memory.
    * A NUMA-bound guest keeps its cells' sizes and lands on as many
      distinct cells with CPUs; the plan names the cells it counted with
      (:attr:`Move.cells`), but Nova fits the cells itself when it
      migrates, and PmemCacheFilter checks those.
    * Working sets are never guessed: a tiered host with an instance whose
      working set was not measured is reported (:data:`UNMEASURED`) and
      neither a source nor a destination. A host whose profile is unknown
      is reported (:data:`PROFILE_UNKNOWN`) and left alone. A host that is
      not tiered has no near memory: its instances' working sets do not
      matter there, so it is a destination even with some unmeasured.
    * A host is a source or a destination, never both: every order of the
      moves is then valid (a destination only gains, a source only loses),
      and Watcher's applier may run them in any order. Only instances of
      hosts over ``act_above`` move, and a host either is fixed (at or
      below ``aim_below`` after) or moves nothing: a move that fixes
      nothing only costs.

Objective
    Lexicographic: fewest hosts left over; then the least memory moved (MB
    of the moved instances' RAM); then the fewest instances moved. Ties
    go to the first plan in the search's order (hosts, instances and
    destinations by name), so the same input gives the same plan.

Search
    Branch and bound, exact: over hosts one by one (fix it, or leave it),
    and within a host each instance (move it, or let it stay; of equal
    instances the first ones move). Which instances move decides the
    objective and where they go only whether they can, so the moved set
    keeps one assignment to destinations, packed again with backtracking
    only when a new instance fits nowhere next to the others. Lower
    bounds: a fractional knapsack of the working sets still movable (MB),
    the largest first (moves), and how many of the hosts left can still
    be fixed within the cap. A greedy plan starts it. Instances no host
    admits in the cloud as it is are never tried: the rules only tighten
    as moves land. It stops after ``max_nodes`` nodes (and does not start
    on more than :data:`MAX_DEPTH` instances of over hosts) and returns
    the best plan found; :attr:`Plan.optimal` says whether it is proven
    optimal.

Output
    :class:`Plan`: the moves (:class:`Move`), every host before and after
    (:class:`HostUsage`, host-wide and per cell), and for each host over
    the threshold that the plan leaves over or could not judge an
    :class:`Unfixed` with its reason (one of :data:`REASONS`).

This module imports nothing from Nova.
"""

import dataclasses
import itertools
import math

from nova_pmem_filters.core import cache
from nova_pmem_filters.core import decide
from nova_pmem_filters.core import extra_specs
from nova_pmem_filters.core import tiering

ACT_ABOVE = 1.0
AIM_BELOW = 0.9
MAX_MOVES = 10
# Search nodes after which the best plan found is returned unproven.
MAX_NODES = 200000
# Instances of over hosts beyond which the exact search is not tried (its
# depth): the greedy plan is returned, unproven.
MAX_DEPTH = 250
# The cell a NUMA-bound guest is counted on where the host's cells are not
# known: the rules then decide host-wide (as the simulator counts).
HOST_CELL = 0
# Slack of the lower bounds, MB: they must never exceed the truth.
_SLACK_MB = 1e-3

# Why a host over the threshold is left over, or was not judged.
UNMEASURED = 'unmeasured'
PROFILE_UNKNOWN = 'profile-unknown'
CELLS_UNKNOWN = 'cells-unknown'
NO_DESTINATION = 'no-destination'
NUMA_BOUND = 'numa-bound'
NO_ROOM = 'no-room'
CAP_REACHED = 'cap-reached'
SEARCH_LIMIT = 'search-limit'
REASONS = (UNMEASURED, PROFILE_UNKNOWN, CELLS_UNKNOWN, NO_DESTINATION,
           NUMA_BOUND, NO_ROOM, CAP_REACHED, SEARCH_LIMIT)

# Why a destination does not admit an instance, besides decide's REJECT_*.
REJECT_FLAVOR = 'flavor_invalid'
REJECT_HOST = 'not_a_destination'
REJECT_RAM = 'ram'
REJECT_VCPUS = 'vcpus'
REJECT_CELL_MEMORY = 'cell_memory'
REJECT_WORKING_SET = 'working_set'
REJECT_NOT_MOVABLE = 'not_movable'
# The rejections that are a NUMA-bound guest's cells.
_CELL_REJECTS = frozenset((decide.REJECT_NUMA_FIT, decide.REJECT_CELLS,
                           REJECT_CELL_MEMORY))


class RebalanceError(ValueError):
    """An input :func:`plan` cannot work with, naming it."""


# --- input ---------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Instance:
    """One instance on a host.

    ``cells`` is ``((host cell, MB), ...)`` for an instance Nova placed
    with a NUMA topology, None for one that floats. An instance is
    NUMA-bound when it has cells or its flavor binds memory
    (:func:`~nova_pmem_filters.core.tiering.binds_memory`).
    """

    uuid: str
    name: str = None
    memory_mb: float = 0.0
    vcpus: float = 0
    extra_specs: dict = dataclasses.field(default_factory=dict, hash=False)
    working_set_mb: float = None
    cells: tuple = None
    # False: the caller may not move it (not running, outside an audit's
    # scope); it stays and still counts where it is.
    movable: bool = True


@dataclasses.dataclass(frozen=True)
class Cell:
    """A NUMA cell of a host, with CPUs.

    ``free_memory_mb``: memory a NUMA-bound guest may still claim on it
    (its size x the RAM allocation ratio, less the memory of the NUMA-bound
    instances on it, as Nova's NUMA fit counts); None: not checked here.
    """

    id: int
    free_memory_mb: float = None


@dataclasses.dataclass(frozen=True)
class Host:
    """One compute host and what runs on it.

    ``free_ram_mb`` and ``free_vcpus``: what Placement still offers
    (capacity x allocation ratio, less reserved, less allocations).
    ``cells``: its :class:`Cell` list, None when its NUMA topology is not
    known (the rules then decide host-wide).
    """

    name: str
    profile: object = None
    free_ram_mb: float = 0.0
    free_vcpus: float = 0
    cells: tuple = None
    instances: tuple = ()


# --- output --------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Move:
    """One live migration of the plan.

    ``cells``: ``((cell, MB), ...)`` the plan counted a NUMA-bound guest on
    at the destination; None for a floating one, or where the
    destination's cells are not known.
    """

    instance: str
    name: str
    source: str
    destination: str
    memory_mb: float
    working_set_mb: float
    vcpus: float = 0
    cells: tuple = None


@dataclasses.dataclass(frozen=True)
class CellUsage:
    """A cell's charged working set against its near memory, MB."""

    id: int
    working_set_mb: float
    near_memory_mb: float


@dataclasses.dataclass(frozen=True)
class HostUsage:
    """A host's charged working set against its near memory, MB.

    ``working_set_mb`` is None when an instance's was not measured;
    ``near_memory_mb`` None on a host that is not tiered. ``over``: beyond
    ``act_above`` host-wide or on a cell; None when not known.
    """

    host: str
    mode: str
    working_set_mb: float
    near_memory_mb: float
    cells: tuple = ()
    over: bool = False


@dataclasses.dataclass(frozen=True)
class Unfixed:
    """A host over the threshold the plan leaves over, or could not judge.

    ``over`` is None when it is not known whether it is over (a profile or
    measurements missing).
    """

    host: str
    reason: str
    detail: str
    over: bool = True


@dataclasses.dataclass(frozen=True)
class Plan:
    """What :func:`plan` returns.

    ``over_before``: the hosts judged over ``act_above``; ``over_after``:
    those of them the moves do not bring to ``aim_below`` (hosts not
    judged are in ``unfixed`` and in neither). ``optimal``: the plan is
    proven best for the objective; ``nodes``: search nodes visited.
    """

    moves: tuple
    before: tuple
    after: tuple
    unfixed: tuple
    over_before: int
    over_after: int
    optimal: bool
    nodes: int
    act_above: float
    aim_below: float
    max_moves: int

    @property
    def memory_moved_mb(self):
        return math.fsum(m.memory_mb for m in self.moves)

    @property
    def objective(self):
        """(hosts left over, memory moved MB, instances moved)."""
        return (self.over_after, self.memory_moved_mb, len(self.moves))


# --- what each instance and host is ---------------------------------------

class _Inst(object):
    """An instance with what the rules need of it, worked out once."""

    def __init__(self, spec, source, defaults):
        self.spec = spec
        self.uuid = spec.uuid
        self.label = spec.name or spec.uuid
        self.source = source
        self.memory_mb = float(spec.memory_mb)
        self.vcpus = spec.vcpus
        self.ws = (None if spec.working_set_mb is None
                   else float(spec.working_set_mb))
        specs = spec.extra_specs or {}
        self.request, self.error = extra_specs.request_of(specs, defaults)
        # As PmemCacheFilter's ledger counts it (all RAM if invalid).
        self.hot_mb = extra_specs.counted_hot_mb(self.memory_mb,
                                                 self.request)
        self.cells = (None if spec.cells is None else tuple(
            (int(c), float(mb)) for c, mb in spec.cells))
        self.bound = bool(self.cells) or (
            tiering.binds_memory(specs) is not None)
        self.layout = _layout(self, specs)
        # The hosts that admit it as the cloud is (set for the instances
        # of over hosts): no other ever will in the plan.
        self.candidates = ()

    def placed_here(self):
        """Its cells on its own host (a bound one without: HOST_CELL)."""
        if self.cells:
            return self.cells
        return ((HOST_CELL, self.memory_mb),) if self.bound else None


def _layout(inst, specs):
    """The memory MB of each guest cell of a NUMA-bound instance."""
    if not inst.bound:
        return ()
    if inst.cells:
        return tuple(mb for _cell, mb in sorted(inst.cells))
    raw = str(specs.get(extra_specs.NUMA_NODES_KEY, '1')).strip()
    count = int(raw) if raw.isdigit() and int(raw) > 0 else 1
    return (inst.memory_mb / count,) * count


def _add(used, mb, inst, cells):
    """Count ``mb`` of ``inst`` (placed on ``cells``) in a HotRam."""
    used.add(mb, cache.bound_cells(cells, mb, inst.memory_mb),
             inst.memory_mb,
             cache.bound_cells(cells, inst.memory_mb, inst.memory_mb))


def _used(placed, working_sets):
    """The HotRam of ``[(inst, cells)]``: working sets, or declared hot."""
    used = cache.HotRam(0.0)
    for inst, cells in placed:
        _add(used, inst.ws if working_sets else inst.hot_mb, inst, cells)
    return used


class _Host(object):
    """A host, its state in the search, and whether it may be planned on."""

    def __init__(self, spec, defaults):
        self.spec = spec
        self.name = spec.name
        self.prof = spec.profile
        self.known = self.prof is not None and self.prof.known
        self.tiered = self.known and self.prof.tiered
        self.cell_ids = (None if spec.cells is None
                         else sorted(c.id for c in spec.cells))
        self.cell_free = {c.id: c.free_memory_mb for c in spec.cells or ()}
        self.insts = [_Inst(i, self.name, defaults) for i in spec.instances]
        self.placed = [(i, i.placed_here()) for i in self.insts]
        # (reason, detail) when it is neither a source nor a destination.
        self.problem = _problem(self)
        self.judged = self.tiered and self.problem is None
        self.hot = self.ws = None
        if self.known and self.problem is None:
            self.hot = _used(self.placed, False)
            if self.tiered:
                self.ws = _used(self.placed, True)
        # Taken by the plan's moves to it.
        self.ram = self.vcpus = 0.0
        self.cell_mb = {}
        self.undo = []

    def over(self, placed, threshold):
        """Where ``placed`` is beyond ``threshold`` x near memory."""
        return decide.overcommitted(self.prof, threshold,
                                    _used(placed, True), self.cell_ids)[1]

    def charge(self, inst):
        """What ``inst`` is charged here, MB (host-wide)."""
        if tiering.whole_ram(self.prof, inst.bound):
            return inst.memory_mb
        return inst.ws


def _problem(host):
    """(reason, detail) of a host that cannot be planned on, or None."""
    if not host.known:
        return PROFILE_UNKNOWN, (
            'its host profile is unknown: %s' % host.prof.problem
            if host.prof is not None else 'no host profile was given')
    if not host.tiered:
        return None
    unmeasured = [i.label for i in host.insts if i.ws is None]
    if unmeasured:
        return UNMEASURED, (
            'the working set of %d of its %d instances was not measured '
            '(%s): it is not planned on' % (
                len(unmeasured), len(host.insts),
                ', '.join(sorted(unmeasured))))
    if host.cell_ids is not None:
        caps, problem = host.prof.cell_capacities_mb(host.cell_ids)
        if caps is None:
            return CELLS_UNKNOWN, problem
        lost = sorted(i.label for i in host.insts if i.bound and not i.cells)
        if lost:
            return CELLS_UNKNOWN, (
                'the host cells of its NUMA-bound instances %s are not '
                'known' % ', '.join(lost))
    return None


# --- admission -----------------------------------------------------------

def _cell_options(dest, inst):
    """The cells a NUMA-bound guest could take on ``dest``.

    :returns: a sorted list of ``((cell, MB), ...)``; ``[None]`` for a
        floating instance.
    """
    if not inst.bound:
        return [None]
    if dest.cell_ids is None:
        return [((HOST_CELL, inst.memory_mb),)]
    found = set()
    for cells in itertools.permutations(dest.cell_ids, len(inst.layout)):
        merged = {}
        for cell, mb in zip(cells, inst.layout):
            merged[cell] = merged.get(cell, 0.0) + mb
        found.add(tuple(sorted(merged.items())))
    return sorted(found)


def _cells_fit(dest, option):
    """Whether each cell of ``option`` has the free memory it needs."""
    for cell, mb in option or ():
        free = dest.cell_free.get(cell)
        if free is not None and dest.cell_mb.get(cell, 0.0) + mb > \
                free + cache.EPSILON_MB:
            return False
    return True


def _admits(dest, inst, aim_below, ratio):
    """The cells on which ``dest`` admits ``inst`` now, or why it does not.

    :returns: ``(options, None)`` with ``options`` a non-empty list of
        cell placements (see :func:`_cell_options`), or ``([], reason)``.
    """
    if not dest.known or dest.problem is not None:
        return [], REJECT_HOST
    if inst.request is None:
        return [], REJECT_FLAVOR
    passes, reason = decide.mode_passes(inst.request, dest.prof)
    if not passes:
        return [], reason
    if dest.ram + inst.memory_mb > dest.spec.free_ram_mb + cache.EPSILON_MB:
        return [], REJECT_RAM
    if dest.vcpus + inst.vcpus > dest.spec.free_vcpus + cache.EPSILON_MB:
        return [], REJECT_VCPUS
    options = _cell_options(dest, inst)
    if not options:
        return [], decide.REJECT_NUMA_FIT
    options = [o for o in options if _cells_fit(dest, o)]
    if not options:
        return [], REJECT_CELL_MEMORY
    found, first = [], None
    for option in options:
        reason = _option_reject(dest, inst, option, aim_below, ratio)
        if reason is None:
            found.append(option)
        elif first is None:
            first = reason
    return found, (None if found else first)


def _option_reject(dest, inst, option, aim_below, ratio):
    """Why ``dest`` refuses ``inst`` on ``option``'s cells, or None."""
    fit = None
    if inst.bound:
        claimed = dict(option)
        fit = (lambda: claimed)
    passes, reason, _view = decide.cache_check(
        dest.prof, ratio, dest.hot, inst.request, inst.memory_mb,
        cells=dest.cell_ids, fit=fit)
    if not passes:
        return reason
    if dest.tiered:
        used = dest.ws.copy()
        _add(used, inst.ws, inst, option)
        if decide.overcommitted(dest.prof, aim_below, used,
                                dest.cell_ids)[1]:
            return REJECT_WORKING_SET
    return None


# --- the search ----------------------------------------------------------

def _signature(inst):
    """What the rules see of an instance: equal ones are interchangeable."""
    return (inst.memory_mb, inst.ws, inst.vcpus, inst.hot_mb, inst.bound,
            inst.layout, inst.cells,
            repr(sorted((inst.spec.extra_specs or {}).items())))


class _Source(object):
    """An over host: its movable instances and the bounds of fixing it."""

    def __init__(self, host, aim_below, movable):
        self.host = host
        # Best working set per MB first: they fix it for the least memory;
        # equal instances next to each other (see _Search.instance).
        self.movable = sorted(movable, key=lambda i: (
            -_per_mb(host.charge(i), i.memory_mb), -host.charge(i),
            _signature(i), i.label, i.uuid))
        self.loads = [host.charge(i) for i in self.movable]
        self.same = [j > 0 and _signature(self.movable[j - 1]) ==
                     _signature(inst) for j, inst in enumerate(self.movable)]
        total = tiering.charged(host.prof, host.ws).total
        near = host.prof.cache_capacity_mb(aim_below)
        if host.cell_ids is not None:
            caps, _problem = host.prof.cell_capacities_mb(host.cell_ids,
                                                          aim_below)
            near = max(near, math.fsum(caps.values()))
        # What must leave, host-wide at least, for it to be fixed.
        self.deficit = total - near - _SLACK_MB
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
        return max(mb - _SLACK_MB, 0.0), count


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
        _add(dest.hot, inst.hot_mb, inst, option)
        if dest.tiered:
            dest.ws = dest.ws.copy()
            _add(dest.ws, inst.ws, inst, option)
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
            options, _reason = _admits(dest, inst, self.aim, self.ratio)
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
            -i.memory_mb, -(i.ws or 0.0), _signature(i), i.label, i.uuid))
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
        same = n > 0 and _signature(insts[n - 1]) == _signature(inst)
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
        d.spec.free_ram_mb for d in hosts) + cache.EPSILON_MB
        and math.fsum(i.vcpus for i in insts) <= math.fsum(
            d.spec.free_vcpus for d in hosts) + cache.EPSILON_MB)


class _Search(object):
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


# --- the plan --------------------------------------------------------------

def _check(hosts, act_above, aim_below, max_moves, ratio):
    """Refuse what the plan cannot work with, naming the input."""
    def number(value, what, least=0.0, strict=False):
        ok = (isinstance(value, (int, float)) and not isinstance(value, bool)
              and math.isfinite(value)
              and (value > least if strict else value >= least))
        if not ok:
            raise RebalanceError('%s: expected a number %s %g, got %r'
                                 % (what, 'above' if strict else 'of at '
                                    'least', least, value))
    number(act_above, 'act_above', strict=True)
    number(aim_below, 'aim_below', strict=True)
    if aim_below > act_above:
        raise RebalanceError('aim_below %g is above act_above %g: the plan '
                             'must aim below the threshold it acts above'
                             % (aim_below, act_above))
    number(ratio, 'cache_overcommit_ratio')
    if not isinstance(max_moves, int) or isinstance(max_moves, bool) \
            or max_moves < 0:
        raise RebalanceError('max_moves: expected a whole number 0 or '
                             'more, got %r' % (max_moves,))
    names, uuids = set(), set()
    for h, host in enumerate(hosts):
        where = 'hosts[%d] (%s)' % (h, host.name)
        if not host.name or host.name in names:
            raise RebalanceError('%s: a host name must be given once' % where)
        names.add(host.name)
        number(host.free_ram_mb, where + '.free_ram_mb', least=-math.inf)
        number(host.free_vcpus, where + '.free_vcpus', least=-math.inf)
        for n, inst in enumerate(host.instances):
            at = '%s.instances[%d] (%s)' % (where, n, inst.uuid)
            if not inst.uuid or inst.uuid in uuids:
                raise RebalanceError('%s: an instance uuid must be given '
                                     'once' % at)
            uuids.add(inst.uuid)
            number(inst.memory_mb, at + '.memory_mb')
            number(inst.vcpus, at + '.vcpus')
            if inst.working_set_mb is not None:
                number(inst.working_set_mb, at + '.working_set_mb')
            cells = [c for c, _mb in inst.cells or ()]
            if len(set(cells)) != len(cells):
                raise RebalanceError('%s.cells: a host cell is named twice: '
                                     '%r' % (at, inst.cells))


def _usage(host, placed, act_above):
    """A :class:`HostUsage` of ``host`` holding ``placed``."""
    if not host.known:
        return HostUsage(host.name, None, None, None, (), None)
    prof = host.prof
    if any(i.ws is None for i, _cells in placed):
        return HostUsage(host.name, prof.mode, None,
                         prof.cache_capacity_mb(1.0), (),
                         None if host.tiered else False)
    used = _used(placed, True)
    if not host.tiered:
        return HostUsage(host.name, prof.mode, used.total, None, (), False)
    charged = tiering.charged(prof, used)
    cells = ()
    if host.cell_ids is not None:
        view = decide.placed_cells(prof, 1.0, host.cell_ids, charged)
        if view.capacities is not None:
            cells = tuple(CellUsage(c, view.used[c], view.capacities[c])
                          for c in sorted(view.capacities))
    over = None if host.problem else bool(host.over(placed, act_above))
    return HostUsage(host.name, prof.mode, charged.total,
                     prof.cache_capacity_mb(1.0), cells, over)


def _why(src, search, rejections, optimal):
    """(reason, detail) of an over host the plan leaves over."""
    host = src.host
    if not src.movable:
        counts = {}
        for inst in host.insts:
            for reason in rejections[inst.uuid]:
                counts[reason] = counts.get(reason, 0) + 1
        detail = 'no other host admits any of its %d instances (%s)' % (
            len(host.insts), ', '.join('%s: %d' % item
                                       for item in sorted(counts.items())))
        bound = [i for i in host.insts if i.bound]
        if bound and len(bound) == len(host.insts) and any(
                _CELL_REJECTS & set(rejections[i.uuid]) for i in bound):
            return NUMA_BOUND, detail
        return NO_DESTINATION, detail
    if not src.fixable:
        return NO_ROOM, (
            'moving every instance another host admits (%s) leaves it over '
            '%g x its near memory' % (', '.join(sorted(
                i.label for i in src.movable)), search.aim))
    if len(search.best_moves) + src.lb_count > search.cap:
        return CAP_REACHED, (
            'fixing it takes at least %d move(s) and the plan holds %d of '
            'the %d allowed; a later audit can go on'
            % (src.lb_count, len(search.best_moves), search.cap))
    if not optimal:
        return SEARCH_LIMIT, ('the search stopped after %d nodes before it '
                              'found a plan that fixes it' % search.nodes)
    return NO_ROOM, ('the hosts that admit its instances cannot take '
                     'enough of them, next to the plan\'s other moves, to '
                     'bring it to %g x its near memory' % search.aim)


def _sources(hosts, act_above, aim_below, ratio):
    """The over hosts as :class:`_Source`, and each instance's rejections.

    An instance no other host admits in the cloud as it is never will in
    the plan (the rules only tighten as moves land): it is not tried.
    """
    sources, rejections = [], {}
    for host in hosts:
        if not host.judged or not host.over(host.placed, act_above):
            continue
        movable = []
        for inst in host.insts:
            reasons, inst.candidates = [], []
            if not inst.spec.movable:
                rejections[inst.uuid] = [REJECT_NOT_MOVABLE]
                continue
            for dest in hosts:
                if dest is host:
                    continue
                options, reason = _admits(dest, inst, aim_below, ratio)
                if options:
                    inst.candidates.append(dest)
                else:
                    reasons.append(reason)
            rejections[inst.uuid] = reasons
            if inst.candidates:
                movable.append(inst)
        sources.append(_Source(host, aim_below, movable))
    return sources, rejections


def plan(hosts, act_above=ACT_ABOVE, aim_below=AIM_BELOW,
         max_moves=MAX_MOVES, cache_overcommit_ratio=1.0,
         defaults=extra_specs.DEFAULTS, max_nodes=MAX_NODES):
    """The rebalancing plan of ``hosts`` (see the module's docstring).

    :param hosts: :class:`Host` records.
    :returns: a :class:`Plan`.
    :raises RebalanceError: naming the input that is not usable.
    """
    hosts = list(hosts)
    _check(hosts, act_above, aim_below, max_moves, cache_overcommit_ratio)
    if not isinstance(max_nodes, int) or max_nodes < 1:
        raise RebalanceError('max_nodes: expected a whole number 1 or more, '
                             'got %r' % (max_nodes,))
    state = sorted((_Host(h, defaults) for h in hosts), key=lambda h: h.name)
    sources, rejections = _sources(state, act_above, aim_below,
                                   cache_overcommit_ratio)
    search = _Search(sources, dict(
        aim_below=aim_below, ratio=cache_overcommit_ratio,
        max_moves=max_moves, max_nodes=max_nodes))
    search.greedy()
    depth = sum(len(s.movable) + 1 for s in sources)
    if depth <= MAX_DEPTH:
        search.host(0)
    optimal = depth <= MAX_DEPTH and not search.stopped
    chosen = sorted(search.best_moves, key=lambda m: (
        m[0].source, m[0].label, m[0].uuid))
    return _result(state, sources, search, rejections, chosen, optimal,
                   (act_above, aim_below, max_moves))


def _measured_over(host, act_above):
    """True when the measured part alone is over (host-wide), else None.

    Working sets are never negative, so that much is known; below it,
    nothing is.
    """
    used = _used([(i, c) for i, c in host.placed if i.ws is not None], True)
    total = tiering.charged(host.prof, used).total
    if cache.fits_cache(total, 0.0, host.prof.cache_capacity_mb(act_above)):
        return None
    return True


def _result(state, sources, search, rejections, chosen, optimal, options):
    act_above, aim_below, max_moves = options
    moved = {id(inst): (dest, option) for inst, dest, option in chosen}
    placed_after = {h.name: [] for h in state}
    for host in state:
        for inst, cells in host.placed:
            dest, option = moved.get(id(inst), (host, cells))
            placed_after[dest.name].append((inst, option))
    moves = tuple(Move(
        instance=inst.uuid, name=inst.spec.name, source=inst.source,
        destination=dest.name, memory_mb=inst.memory_mb,
        working_set_mb=inst.ws, vcpus=inst.vcpus,
        cells=option if inst.bound and dest.cell_ids is not None else None)
        for inst, dest, option in chosen)
    unfixed, left = [], 0
    by_name = {s.host.name: s for s in sources}
    for host in state:
        src = by_name.get(host.name)
        if src is not None:
            if host.over(placed_after[host.name], aim_below):
                left += 1
                reason, detail = _why(src, search, rejections, optimal)
                unfixed.append(Unfixed(host.name, reason, detail))
        elif host.problem is not None and (host.tiered or not host.known):
            over = None
            if host.problem[0] == UNMEASURED:
                over = _measured_over(host, act_above)
            unfixed.append(Unfixed(host.name, host.problem[0],
                                   host.problem[1], over))
    return Plan(
        moves=moves,
        before=tuple(_usage(h, h.placed, act_above) for h in state),
        after=tuple(_usage(h, placed_after[h.name], act_above)
                    for h in state),
        unfixed=tuple(unfixed), over_before=len(sources), over_after=left,
        optimal=optimal, nodes=search.nodes, act_above=act_above,
        aim_below=aim_below, max_moves=max_moves)
