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
"""What one request computes once for all our filters and weighers.

Nova hands the same RequestSpec, and the same HostState objects, to every
filter and weigher of a request (and, in a multi-create, to every pass). Its
flavor's ``pmem:`` request, the hosts' profiles, their hot RAM from the
ledger and the NUMA fits are worked out by the first class that needs them
and reused by the others, in a memo that lives as long as the RequestSpec.
Within it, hosts are known by the identity of their HostState: the objects
outlive the request (HostManager keeps them), and their aggregates do not
change during it.

Nova schedules the instances of a multi-create one by one and consumes each
chosen host's ``free_ram_mb`` (and, for a NUMA-bound flavor, its cells'
``memory_usage``) in memory, but does not add them to
``host_state.instances``: the drop since the request's first pass is what
the request has already put on the host (``HostEntry.base_free``).
"""

import typing
import weakref

from nova_pmem_filters.core.rules import decide
from nova_pmem_filters.scheduler import flavors
from nova_pmem_filters.scheduler import host_profiles
from nova_pmem_filters.scheduler import ledger
from nova_pmem_filters.scheduler import numa
from nova_pmem_filters.scheduler import ovo


class ProfileGroup(object):
    """The hosts of one profile in a request, and the rules for them.

    ``tiered``: the cache rules read the hosts' usage
    (:func:`decide.reads_usage`). ``mode``, ``check`` and ``score`` are the
    core's PmemModeFilter rule's verdict, :func:`decide.cache_rule` and
    :func:`decide.headroom_rule` for the profile and the request, set by the
    class that uses them.
    """

    __slots__ = ('prof', 'tiered', 'mode', 'check', 'score', 'fixed')

    def __init__(self, prof):
        self.prof = prof
        self.tiered = decide.reads_usage(prof)
        self.mode = None
        self.check = None
        self.score = None
        # The score of hosts whose usage is not read: score(None).
        self.fixed = None


class Memo(object):
    """The memo of one RequestSpec (see the module docstring)."""

    __slots__ = ('flavor', 'defaults', 'parsed', 'default_mode',
                 'by_aggregates', 'agg_values', 'seen', 'host_groups',
                 'groups', 'entries', 'exclude', 'fits', 'kept',
                 '__weakref__')

    def __init__(self, flavor):
        self.flavor = flavor
        # (PmemRequest or None, error) once parsed with these defaults.
        self.defaults = None
        self.parsed = None
        # host_profiles.profiles_of's memos, for this default host mode.
        self.default_mode = None
        self.by_aggregates = {}
        self.agg_values = {}
        # The memo knows hosts by id(): holding the HostStates it has seen
        # keeps their ids their own while it lives.
        self.seen = []
        # {id(host state): ProfileGroup}, {id(profile): ProfileGroup}
        self.host_groups = {}
        self.groups = {}
        # The instance the ledger does not count (a move, or the instance of
        # a multi-create's pass), and {id(host state): HostEntry} of the
        # hosts whose usage was read.
        self.exclude = None
        self.entries = {}
        # {(host, node): (host topology, {cell: memory MB} or None)}
        self.fits = {}
        # What PmemCacheFilter's pass read, for the weigher of the same
        # pass (Kept).
        self.kept = None


class Kept(typing.NamedTuple):
    """What a filter's pass read: its instance, groups and inputs."""

    instance: str
    reads: frozenset
    # {id(host state): inputs}
    inputs: dict


# RequestSpec -> Memo.
_MEMOS = weakref.WeakKeyDictionary()


def of(spec_obj):
    """The memo of ``spec_obj``; a throwaway one if it cannot be kept."""
    flavor = ovo.loaded(spec_obj, 'flavor')
    try:
        memo = _MEMOS.get(spec_obj)
        if memo is None or memo.flavor is not flavor:
            # A new request, or one whose flavor was replaced (a resize
            # reusing the RequestSpec object).
            memo = _MEMOS[spec_obj] = Memo(flavor)
    except TypeError:
        memo = Memo(flavor)
    return memo


def request(spec_obj, memo=None):
    """The request's PmemRequest: (request, error), parsed once."""
    memo = memo or of(spec_obj)
    defaults = flavors.defaults()
    if memo.parsed is None or memo.defaults is not defaults:
        memo.parsed = flavors.spec_request(spec_obj, defaults)
        memo.defaults = defaults
    return memo.parsed


def host_groups(spec_obj, host_states, memo=None):
    """The hosts' :class:`ProfileGroup`, in order; profiles read once."""
    memo = memo or of(spec_obj)
    default_mode = host_profiles.CONF.pmem.default_host_mode
    if memo.default_mode != default_mode:
        memo.default_mode = default_mode
        memo.by_aggregates = {}
        memo.host_groups = {}
        memo.groups = {}
    known = memo.host_groups
    try:
        # In C, not a Python loop: this runs for every class of a request.
        return list(map(known.__getitem__, map(id, host_states)))
    except KeyError:
        pass
    todo = [hs for hs in host_states if id(hs) not in known]
    memo.seen.extend(todo)
    groups_ = memo.groups
    for hs, prof in zip(todo, host_profiles.profiles_of(
            todo, memo.by_aggregates, memo.agg_values, default_mode)):
        group = groups_.get(id(prof))
        if group is None:
            # The group keeps the profile alive: its id stays its.
            group = groups_[id(prof)] = ProfileGroup(prof)
        known[id(hs)] = group
    return [known[id(hs)] for hs in host_states]


def groups(memo):
    """The :class:`ProfileGroup` of the hosts the request has seen.

    A few: one per distinct profile.
    """
    return list(memo.groups.values())


def profiles(spec_obj, host_states, memo=None):
    """The hosts' profiles, in order; read once per host and request."""
    return [group.prof for group in host_groups(spec_obj, host_states, memo)]


# The cells of a host without a NUMA topology (never changed).
_NO_CELLS = {}
# An entry's ledger usage not read for the request's current instance.
_UNREAD = object()


def _cell_memory_usage(topology):
    cells = getattr(topology, 'cells', None) or ()
    return {cell.id: cell.memory_usage for cell in cells}


class HostEntry(object):
    """What a request read of one host whose usage the cache rules read.

    ``free``: the host's free RAM when ``inputs`` were worked out; the
    core's rules take the inputs (HotRam with what the request placed there
    since, the cell ids), which hold while the host has that free RAM.
    ``ledger``: the ledger's usage for the request's current instance
    (``_UNREAD`` until read). ``base_free`` and ``base_cells`` (``{cell:
    memory_usage}``): the host when the request first read it. ``cells``:
    ids of its NUMA cells with CPUs, or None.
    """

    # Thousands are made per request: slots, no dict.
    __slots__ = ('free', 'inputs', 'ledger', 'base_free', 'base_cells',
                 'cells')

    def __init__(self, free, base_cells, cells):
        self.free = free
        self.inputs = None
        self.ledger = _UNREAD
        self.base_free = free
        self.base_cells = base_cells
        self.cells = cells


def pending_cell_mb(entry, topology):
    """RAM, in MB, this request already placed on each NUMA cell."""
    base = entry.base_cells
    pending = {}
    for cell, usage in _cell_memory_usage(topology).items():
        drop = usage - base.get(cell, usage)
        if drop > 0:
            pending[cell] = float(drop)
    return pending


def hot_ram(host_states, groups_, spec_obj, request_, memo, reads=None,
            keep=False, reuse=False):
    """The inputs of the cache rules for the hosts whose usage is read.

    Counts the instances already on the host (through the ledger) plus the
    instances of this same request placed on it before this pass, at the
    request's own hot ratio: on the cells Nova consumed for them if the
    flavor is NUMA-bound. An entry stays valid while its host's free RAM
    does not change (Nova consumes it when it places an instance of the
    request).

    :param groups_: the hosts' groups (:func:`host_groups`).
    :param reads: the groups whose hosts' usage is read; by default every
        tiered group.
    :param keep: keep the inputs for a weigher of the same pass (the
        filter's call).
    :param reuse: take the inputs a filter of the same pass kept, if it
        read the same groups (a weigher's call): Nova changes no host
        between the filters and the weighers of a pass, and each pass of a
        multi-create has its own instance.
    :returns: in the order of the hosts, ``(HotRam or None when unreadable,
        ids of the NUMA cells with CPUs or None)``, or None for the hosts
        whose usage is not read.
    """
    # A RequestSpec raises, not AttributeError, for an unset field.
    exclude = ovo.loaded(spec_obj, 'instance_uuid')
    entries = memo.entries
    if memo.exclude != exclude:
        # Nova sets the instance of each pass of a multi-create: the
        # ledger's usage is read again without it, what the request placed
        # (the base) stays.
        memo.exclude = exclude
        for entry in entries.values():
            entry.free = None
            entry.ledger = _UNREAD
    if reads is None:
        reads = {group for group in memo.groups.values() if group.tiered}
    kept = memo.kept
    if (reuse and kept is not None and kept.instance == exclude
            and kept.reads == reads):
        # In C: the weigher's hosts are some of the filter's.
        return list(map(kept.inputs.get, map(id, host_states)))
    result = [None] * len(host_states)
    # (index, host state, entry) of the hosts whose usage the ledger gives
    # now, and of those the request placed something on since it was read.
    unread = []
    stale = []
    for index, (host_state, group) in enumerate(zip(host_states, groups_)):
        if group not in reads:
            continue
        entry = entries.get(id(host_state))
        if entry is None:
            # First read: nothing of this request is on the host yet.
            free = host_state.free_ram_mb
            topology = getattr(host_state, 'numa_topology', None)
            if topology is None:
                entry = HostEntry(free, _NO_CELLS, None)
            else:
                entry = HostEntry(free, _cell_memory_usage(topology),
                                  numa.cell_ids(host_state))
            entries[id(host_state)] = entry
            unread.append((index, host_state, entry))
        elif entry.free == host_state.free_ram_mb:
            result[index] = entry.inputs
        else:
            if entry.ledger is _UNREAD:
                unread.append((index, host_state, None))
            stale.append((index, host_state, entry))
    if unread:
        usages = ledger.LEDGER.usage_of([item[1] for item in unread],
                                        exclude_uuid=exclude)
        for (index, host_state, new), usage in zip(unread, usages):
            entry = new or entries[id(host_state)]
            entry.ledger = usage
            if new is not None:
                # Up to date: the request has placed nothing there yet.
                entry.inputs = result[index] = (usage, entry.cells)
    for index, host_state, entry in stale:
        usage = entry.ledger
        free = host_state.free_ram_mb
        pending = entry.base_free - free
        if usage is not None and pending > 0:
            usage = usage.copy()
            topology = getattr(host_state, 'numa_topology', None)
            cells = tuple(pending_cell_mb(entry, topology).items())
            usage.add(request_.hot_mb(pending),
                      tuple((cell, request_.hot_mb(mb)) for cell, mb in cells),
                      pending, cells)
        entry.free = free
        entry.inputs = result[index] = (usage, entry.cells)
    if keep:
        memo.kept = Kept(exclude, frozenset(reads),
                         dict(zip(map(id, host_states), result)))
    return result
