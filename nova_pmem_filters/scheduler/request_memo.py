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
Within it, hosts are known by the identity of their HostState: HostManager
builds them for the request, the memo keeps those it has seen alive (so that
no other object takes their id), and their aggregates do not change during
the request.

Nova schedules the instances of a multi-create one by one and consumes each
chosen host's ``free_ram_mb`` (and, for a NUMA-bound flavor, its cells'
``memory_usage``) in memory, but does not add them to
``host_state.instances``: the drop since the request's first pass is what
the request has already put on the host (``HostEntry.base_free``). A
request for one instance (``num_instances`` 1) has one pass, and keeps no
such entry.
"""

import itertools
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


class Kept(object):
    """What a filter's pass read: its instance, groups and inputs.

    Unpacks as ``(instance, reads, inputs)``, ``inputs`` being ``{id(host
    state): inputs}`` of the filter's hosts. That dict is made only when a
    weigher asks for other hosts than the filter's, or than those it
    passed (``hosts``, ``result``; ``passing``, ``passing_result``): Nova
    weighs the hosts the last filter returned, in its order.
    """

    __slots__ = ('instance', 'reads', 'hosts', 'result', 'passing',
                 'passing_result', '_inputs')

    def __init__(self, instance, reads, inputs=None, hosts=(), result=()):
        self.instance = instance
        self.reads = reads
        self._inputs = inputs
        self.hosts = hosts
        self.result = result
        self.passing = None
        self.passing_result = None

    @property
    def inputs(self):
        if self._inputs is None:
            self._inputs = dict(zip(map(id, self.hosts), self.result))
        return self._inputs

    def __iter__(self):
        return iter((self.instance, self.reads, self.inputs))

    def of(self, host_states):
        """The inputs kept for ``host_states``, in order."""
        # List equality compares identical elements without calling
        # their __eq__: in C, without a look at each host.
        if host_states == self.passing:
            return list(self.passing_result)
        if host_states == self.hosts:
            return list(self.result)
        return list(map(self.inputs.get, map(id, host_states)))


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


def positions(groups_, reads):
    """Indexes of the hosts whose group is in ``reads``, found in C.

    Most hosts of a cloud are not tiered: the loops of a request run over
    the others only.

    :param groups_: the hosts' groups (:func:`host_groups`).
    """
    return list(itertools.compress(itertools.count(),
                                   map(reads.__contains__, groups_)))


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


def _cells(host_state, usage, bound):
    """The ids of the host's NUMA cells, if the rules may use them.

    Elsewhere (:func:`decide.cells_needed`) the host-wide bound decides
    the same and the host's topology is not read: None.
    """
    if decide.cells_needed(usage, bound):
        return numa.cell_ids(host_state)
    return None


def pending_cell_mb(entry, topology):
    """RAM, in MB, this request already placed on each NUMA cell."""
    base = entry.base_cells
    pending = {}
    for cell, usage in _cell_memory_usage(topology).items():
        drop = usage - base.get(cell, usage)
        if drop > 0:
            pending[cell] = float(drop)
    return pending


def _sort(host_states, read_at, entries, result):
    """The hosts to read of a request that has entries, by what they need.

    Fills ``result`` for the hosts whose entry holds.

    :returns: (indexes of the hosts without an entry, ``(index, host
        state, entry)`` of those the request placed something on since
        they were read, ``(host state, entry)`` of the latter whose ledger
        usage this instance has not read yet).
    """
    new = []
    stale = []
    unread = []
    get_entry = entries.get
    for index in read_at:
        host_state = host_states[index]
        entry = get_entry(id(host_state))
        if entry is None:
            new.append(index)
        elif entry.free == host_state.free_ram_mb:
            result[index] = entry.inputs
        else:
            if entry.ledger is _UNREAD:
                unread.append((host_state, entry))
            stale.append((index, host_state, entry))
    return new, stale, unread


def _read(host_states, new, unread, spec_obj, exclude, entries, result):
    """The ledger's usage of the hosts ``new`` and ``unread``, in one batch.

    Fills ``result`` for the new hosts and, unless the request has one
    pass, gives them an entry.
    """
    new_hosts = list(map(host_states.__getitem__, new))
    usages = ledger.LEDGER.usage_of(
        new_hosts + [host_state for host_state, _entry in unread],
        exclude_uuid=exclude)
    # Nova passes over the hosts once per instance of a request (and once
    # more for the alternates of a multi-create): a request for one
    # instance places nothing that another pass counts, so its hosts need
    # no entry. An unset count keeps them.
    one_pass = ovo.loaded(spec_obj, 'num_instances') == 1
    bound = numa.requested_topology(spec_obj) is not None
    for index, host_state, usage in zip(new, new_hosts, usages):
        # First read: nothing of this request is on the host yet.
        if one_pass:
            result[index] = (usage, _cells(host_state, usage, bound))
            continue
        topology = getattr(host_state, 'numa_topology', None)
        free = host_state.free_ram_mb
        if topology is None:
            entry = HostEntry(free, _NO_CELLS, None)
        else:
            entry = HostEntry(free, _cell_memory_usage(topology),
                              numa.cell_ids(host_state))
        entry.ledger = usage
        entry.inputs = result[index] = (usage, entry.cells)
        entries[id(host_state)] = entry
    for (_host_state, entry), usage in zip(unread, usages[len(new):]):
        entry.ledger = usage


def hot_ram(host_states, groups_, spec_obj, request_, memo, reads=None,
            keep=False, reuse=False, read_at=None):
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
    :param read_at: ``positions(groups_, reads)``, if the caller has it.
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
        return kept.of(host_states)
    result = [None] * len(host_states)
    if read_at is None:
        read_at = positions(groups_, reads)
    if entries:
        new, stale, unread = _sort(host_states, read_at, entries, result)
    else:
        # The request's first read, or a one-pass request: no host has an
        # entry.
        new, stale, unread = read_at, [], []
    if new or unread:
        _read(host_states, new, unread, spec_obj, exclude, entries, result)
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
        memo.kept = Kept(exclude, frozenset(reads), hosts=host_states,
                         result=result)
    return result
