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
"""The plan: the input checked, the search run, the result told.

:func:`plan` is the entry point; :mod:`nova_pmem_filters.core.plans.rebalance`
says what it decides and how.
"""

import math

from nova_pmem_filters.core.plans.rebalance import admission
from nova_pmem_filters.core.plans.rebalance import branch_and_bound
from nova_pmem_filters.core.plans.rebalance import records
from nova_pmem_filters.core.rules import charging
from nova_pmem_filters.core.rules import decide
from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import nearmem

Error = records.RebalanceError


def _check(hosts, act_above, aim_below, max_moves, ratio):
    """Refuse what the plan cannot work with, naming the input."""
    def number(value, what, least=0.0, strict=False):
        ok = (isinstance(value, (int, float)) and not isinstance(value, bool)
              and math.isfinite(value)
              and (value > least if strict else value >= least))
        if not ok:
            raise Error('%s: expected a number %s %g, got %r'
                        % (what, 'above' if strict else 'of at '
                           'least', least, value))
    number(act_above, 'act_above', strict=True)
    number(aim_below, 'aim_below', strict=True)
    if aim_below > act_above:
        raise Error('aim_below %g is above act_above %g: the plan '
                    'must aim below the threshold it acts above'
                    % (aim_below, act_above))
    number(ratio, 'cache_overcommit_ratio')
    if not isinstance(max_moves, int) or isinstance(max_moves, bool) \
            or max_moves < 0:
        raise Error('max_moves: expected a whole number 0 or '
                    'more, got %r' % (max_moves,))
    names, uuids = set(), set()
    for h, host in enumerate(hosts):
        where = 'hosts[%d] (%s)' % (h, host.name)
        if not host.name or host.name in names:
            raise Error('%s: a host name must be given once' % where)
        names.add(host.name)
        number(host.free_ram_mb, where + '.free_ram_mb', least=-math.inf)
        number(host.free_vcpus, where + '.free_vcpus', least=-math.inf)
        for n, inst in enumerate(host.instances):
            at = '%s.instances[%d] (%s)' % (where, n, inst.uuid)
            if not inst.uuid or inst.uuid in uuids:
                raise Error('%s: an instance uuid must be given '
                            'once' % at)
            uuids.add(inst.uuid)
            number(inst.memory_mb, at + '.memory_mb')
            number(inst.vcpus, at + '.vcpus')
            if inst.working_set_mb is not None:
                number(inst.working_set_mb, at + '.working_set_mb')
            cells = [c for c, _mb in inst.cells or ()]
            if len(set(cells)) != len(cells):
                raise Error('%s.cells: a host cell is named twice: '
                            '%r' % (at, inst.cells))


def _usage(host, placed, act_above):
    """A :class:`HostUsage` of ``host`` holding ``placed``."""
    if not host.known:
        return records.HostUsage(host.name, None, None, None, (), None)
    prof = host.prof
    if any(i.ws is None for i, _cells in placed):
        return records.HostUsage(host.name, prof.mode, None,
                                 prof.cache_capacity_mb(1.0), (),
                                 None if host.tiered else False)
    used = admission.loads_of(placed, True)
    if not host.tiered:
        return records.HostUsage(host.name, prof.mode, used.total, None,
                                 (), False)
    charged = charging.charged(prof, used)
    cells = ()
    if host.cell_ids is not None:
        view = decide.placed_cells(prof, 1.0, host.cell_ids, charged)
        if view.capacities is not None:
            cells = tuple(
                records.CellUsage(c, view.used[c], view.capacities[c])
                for c in sorted(view.capacities))
    over = None if host.problem else bool(host.over(placed, act_above))
    return records.HostUsage(host.name, prof.mode, charged.total,
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
                admission.CELL_REJECTS & set(rejections[i.uuid])
                for i in bound):
            return records.NUMA_BOUND, detail
        return records.NO_DESTINATION, detail
    if not src.fixable:
        return records.NO_ROOM, (
            'moving every instance another host admits (%s) leaves it over '
            '%g x its near memory' % (', '.join(sorted(
                i.label for i in src.movable)), search.aim))
    if len(search.best_moves) + src.lb_count > search.cap:
        return records.CAP_REACHED, (
            'fixing it takes at least %d move(s) and the plan holds %d of '
            'the %d allowed; a later audit can go on'
            % (src.lb_count, len(search.best_moves), search.cap))
    if not optimal:
        return records.SEARCH_LIMIT, (
            'the search stopped after %d nodes before it found a plan that '
            'fixes it' % search.nodes)
    return records.NO_ROOM, (
        'the hosts that admit its instances cannot take enough of them, '
        'next to the plan\'s other moves, to bring it to %g x its near '
        'memory' % search.aim)


def _sources(hosts, act_above, aim_below, ratio):
    """The over hosts (:class:`~.branch_and_bound.Source`); rejections.

    ``rejections``: each instance's, by uuid.

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
                rejections[inst.uuid] = [records.REJECT_NOT_MOVABLE]
                continue
            for dest in hosts:
                if dest is host:
                    continue
                options, reason = admission.admits(dest, inst, aim_below,
                                                   ratio)
                if options:
                    inst.candidates.append(dest)
                else:
                    reasons.append(reason)
            rejections[inst.uuid] = reasons
            if inst.candidates:
                movable.append(inst)
        sources.append(branch_and_bound.Source(host, aim_below, movable))
    return sources, rejections


def plan(hosts, act_above=records.ACT_ABOVE, aim_below=records.AIM_BELOW,
         max_moves=records.MAX_MOVES, cache_overcommit_ratio=1.0,
         defaults=extra_specs.DEFAULTS, max_nodes=records.MAX_NODES):
    """The rebalancing plan of ``hosts`` (see the module's docstring).

    :param hosts: :class:`Host` records.
    :returns: a :class:`Plan`.
    :raises RebalanceError: naming the input that is not usable.
    """
    hosts = list(hosts)
    _check(hosts, act_above, aim_below, max_moves, cache_overcommit_ratio)
    if not isinstance(max_nodes, int) or max_nodes < 1:
        raise Error('max_nodes: expected a whole number 1 or more, '
                    'got %r' % (max_nodes,))
    state = sorted((admission.HostState(h, defaults) for h in hosts),
                   key=lambda h: h.name)
    sources, rejections = _sources(state, act_above, aim_below,
                                   cache_overcommit_ratio)
    search = branch_and_bound.Search(sources, dict(
        aim_below=aim_below, ratio=cache_overcommit_ratio,
        max_moves=max_moves, max_nodes=max_nodes))
    search.greedy()
    depth = sum(len(s.movable) + 1 for s in sources)
    if depth <= records.MAX_DEPTH:
        search.host(0)
    optimal = depth <= records.MAX_DEPTH and not search.stopped
    chosen = sorted(search.best_moves, key=lambda m: (
        m[0].source, m[0].label, m[0].uuid))
    return _result(state, sources, search, rejections, chosen, optimal,
                   (act_above, aim_below, max_moves))


def _measured_over(host, act_above):
    """True when the measured part alone is over (host-wide), else None.

    Working sets are never negative, so that much is known; below it,
    nothing is.
    """
    used = admission.loads_of(
        [(i, c) for i, c in host.placed if i.ws is not None], True)
    total = charging.charged(host.prof, used).total
    if nearmem.fits_cache(total, 0.0, host.prof.cache_capacity_mb(act_above)):
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
    moves = tuple(records.Move(
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
                unfixed.append(records.Unfixed(host.name, reason, detail))
        elif host.problem is not None and (host.tiered or not host.known):
            over = None
            if host.problem[0] == records.UNMEASURED:
                over = _measured_over(host, act_above)
            unfixed.append(records.Unfixed(host.name, host.problem[0],
                                           host.problem[1], over))
    return records.Plan(
        moves=moves,
        before=tuple(_usage(h, h.placed, act_above) for h in state),
        after=tuple(_usage(h, placed_after[h.name], act_above)
                    for h in state),
        unfixed=tuple(unfixed), over_before=len(sources), over_after=left,
        optimal=optimal, nodes=search.nodes, act_above=act_above,
        aim_below=aim_below, max_moves=max_moves)
