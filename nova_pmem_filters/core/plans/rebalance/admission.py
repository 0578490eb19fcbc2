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
"""What each instance and host is to the plan; whether a host admits a move.

Every rule of the core a destination must pass (the scheduler's filters,
the room in Placement, each cell's memory, the working set it may take),
and what a host is charged.
"""

import itertools

from nova_pmem_filters.core.plans.rebalance import records
from nova_pmem_filters.core.rules import charging
from nova_pmem_filters.core.rules import decide
from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import nearmem

# The rejections that are a NUMA-bound guest's cells.
CELL_REJECTS = frozenset((decide.REJECT_NUMA_FIT, decide.REJECT_CELLS,
                          records.REJECT_CELL_MEMORY))


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
            charging.binds_memory(specs) is not None)
        self.layout = _layout(self, specs)
        # The hosts that admit it as the cloud is (set for the instances
        # of over hosts): no other ever will in the plan.
        self.candidates = ()

    def placed_here(self):
        """Its cells on its own host (a bound one without: HOST_CELL)."""
        if self.cells:
            return self.cells
        return ((records.HOST_CELL, self.memory_mb),) if self.bound else None


def _layout(inst, specs):
    """The memory MB of each guest cell of a NUMA-bound instance."""
    if not inst.bound:
        return ()
    if inst.cells:
        return tuple(mb for _cell, mb in sorted(inst.cells))
    raw = str(specs.get(extra_specs.NUMA_NODES_KEY, '1')).strip()
    count = int(raw) if raw.isdigit() and int(raw) > 0 else 1
    return (inst.memory_mb / count,) * count


def add_load(used, mb, inst, cells):
    """Count ``mb`` of ``inst`` (placed on ``cells``) in a HotRam."""
    used.add(mb, nearmem.bound_cells(cells, mb, inst.memory_mb),
             inst.memory_mb,
             nearmem.bound_cells(cells, inst.memory_mb, inst.memory_mb))


def loads_of(placed, working_sets):
    """The HotRam of ``[(inst, cells)]``: working sets, or declared hot."""
    used = nearmem.HotRam(0.0)
    for inst, cells in placed:
        add_load(used, inst.ws if working_sets else inst.hot_mb, inst, cells)
    return used


class HostState(object):
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
        self.problem = host_problem(self)
        self.judged = self.tiered and self.problem is None
        self.hot = self.ws = None
        if self.known and self.problem is None:
            self.hot = loads_of(self.placed, False)
            if self.tiered:
                self.ws = loads_of(self.placed, True)
        # Taken by the plan's moves to it.
        self.ram = self.vcpus = 0.0
        self.cell_mb = {}
        self.undo = []

    def over(self, placed, threshold):
        """Where ``placed`` is beyond ``threshold`` x near memory."""
        return decide.overcommitted(self.prof, threshold,
                                    loads_of(placed, True), self.cell_ids)[1]

    def charge(self, inst):
        """What ``inst`` is charged here, MB (host-wide)."""
        if charging.whole_ram(self.prof, inst.bound):
            return inst.memory_mb
        return inst.ws


def host_problem(host):
    """(reason, detail) of a host that cannot be planned on, or None."""
    if not host.known:
        return records.PROFILE_UNKNOWN, (
            'its host profile is unknown: %s' % host.prof.problem
            if host.prof is not None else 'no host profile was given')
    if not host.tiered:
        return None
    unmeasured = [i.label for i in host.insts if i.ws is None]
    if unmeasured:
        return records.UNMEASURED, (
            'the working set of %d of its %d instances was not measured '
            '(%s): it is not planned on' % (
                len(unmeasured), len(host.insts),
                ', '.join(sorted(unmeasured))))
    if host.cell_ids is not None:
        caps, problem = host.prof.cell_capacities_mb(host.cell_ids)
        if caps is None:
            return records.CELLS_UNKNOWN, problem
        lost = sorted(i.label for i in host.insts if i.bound and not i.cells)
        if lost:
            return records.CELLS_UNKNOWN, (
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
        return [((records.HOST_CELL, inst.memory_mb),)]
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
                free + nearmem.EPSILON_MB:
            return False
    return True


def admits(dest, inst, aim_below, ratio):
    """The cells on which ``dest`` admits ``inst`` now, or why it does not.

    :returns: ``(options, None)`` with ``options`` a non-empty list of
        cell placements (see :func:`_cell_options`), or ``([], reason)``.
    """
    if not dest.known or dest.problem is not None:
        return [], records.REJECT_HOST
    if inst.request is None:
        return [], records.REJECT_FLAVOR
    passes, reason = decide.mode_passes(inst.request, dest.prof)
    if not passes:
        return [], reason
    if dest.ram + inst.memory_mb > dest.spec.free_ram_mb + nearmem.EPSILON_MB:
        return [], records.REJECT_RAM
    if dest.vcpus + inst.vcpus > dest.spec.free_vcpus + nearmem.EPSILON_MB:
        return [], records.REJECT_VCPUS
    options = _cell_options(dest, inst)
    if not options:
        return [], decide.REJECT_NUMA_FIT
    options = [o for o in options if _cells_fit(dest, o)]
    if not options:
        return [], records.REJECT_CELL_MEMORY
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
        add_load(used, inst.ws, inst, option)
        if decide.overcommitted(dest.prof, aim_below, used,
                                dest.cell_ids)[1]:
            return records.REJECT_WORKING_SET
    return None


def signature(inst):
    """What the rules see of an instance: equal ones are interchangeable."""
    return (inst.memory_mb, inst.ws, inst.vcpus, inst.hot_mb, inst.bound,
            inst.layout, inst.cells,
            repr(sorted((inst.spec.extra_specs or {}).items())))
