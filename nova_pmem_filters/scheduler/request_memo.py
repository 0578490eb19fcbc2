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

import weakref

from nova_pmem_filters.core import decide
from nova_pmem_filters.scheduler import flavors
from nova_pmem_filters.scheduler import host_profiles
from nova_pmem_filters.scheduler import ledger
from nova_pmem_filters.scheduler import numa
from nova_pmem_filters.scheduler import ovo


class ProfileGroup(object):
    """The hosts of one profile in a request, and the rules for them.

    ``tiered``: the cache rules read the hosts' usage
    (:func:`decide.reads_usage`). ``check`` and ``score`` are the core's
    :func:`decide.cache_rule` and :func:`decide.headroom_rule` for the
    profile and the request, set by the class that uses them.
    """

    __slots__ = ('prof', 'tiered', 'check', 'score')

    def __init__(self, prof):
        self.prof = prof
        self.tiered = decide.reads_usage(prof)
        self.check = None
        self.score = None


class HostEntry(object):
    """What the request knows of one host.

    ``group``: its :class:`ProfileGroup`. On a tiered host, ``usage``
    (HotRam or None when unreadable) and ``cells`` (ids of the NUMA cells
    with CPUs, or None) are those of when the host had ``free`` MB of free
    RAM (None: not read yet). ``base_free`` and ``base_cells`` are what
    the host had when the request first read it (see
    :func:`pending_cell_mb`).
    """

    __slots__ = ('host', 'group', 'free', 'usage', 'cells', 'base_free',
                 'base_cells')

    def __init__(self, host, group):
        # The memo knows hosts by id(): holding the HostState keeps its id
        # its own while the memo lives.
        self.host = host
        self.group = group
        self.free = None
        self.usage = None
        self.cells = None
        # Free RAM and {cell: memory_usage} when the request first read the
        # host: what it has placed there since is the difference.
        self.base_free = None
        self.base_cells = None


class Memo(object):
    """The memo of one RequestSpec (see the module docstring)."""

    __slots__ = ('flavor', 'defaults', 'parsed', 'default_mode',
                 'by_aggregates', 'agg_values', 'hosts', 'groups',
                 'exclude', 'usage', 'fits', '__weakref__')

    def __init__(self, flavor):
        self.flavor = flavor
        # (PmemRequest or None, error) once parsed with these defaults.
        self.defaults = None
        self.parsed = None
        # host_profiles.profiles_of's memos, for this default host mode, and
        # {id(host state): HostEntry}.
        self.default_mode = None
        self.by_aggregates = {}
        self.agg_values = {}
        self.hosts = {}
        # {id(profile): ProfileGroup}
        self.groups = {}
        # The instance not counted (a move) and {id(host state): HotRam or
        # None} from the ledger.
        self.exclude = None
        self.usage = None
        # {(host, node): (host topology, {cell: memory MB} or None)}
        self.fits = {}


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


def entries(spec_obj, host_states, memo=None):
    """The hosts' :class:`HostEntry`, in order; profiles read once."""
    memo = memo or of(spec_obj)
    default_mode = host_profiles.CONF.pmem.default_host_mode
    if memo.default_mode != default_mode:
        memo.default_mode = default_mode
        memo.by_aggregates = {}
        memo.hosts = {}
        memo.groups = {}
    known = memo.hosts
    try:
        return [known[id(hs)] for hs in host_states]
    except KeyError:
        pass
    todo = [hs for hs in host_states if id(hs) not in known]
    groups = memo.groups
    for hs, prof in zip(todo, host_profiles.profiles_of(
            todo, memo.by_aggregates, memo.agg_values, default_mode)):
        group = groups.get(id(prof))
        if group is None:
            # The group keeps the profile alive: its id stays its.
            group = groups[id(prof)] = ProfileGroup(prof)
        known[id(hs)] = HostEntry(hs, group)
    return [known[id(hs)] for hs in host_states]


def groups(memo):
    """The :class:`ProfileGroup` of the hosts the request has seen.

    A few: one per distinct profile.
    """
    return list(memo.groups.values())


def profiles(spec_obj, host_states, memo=None):
    """The hosts' profiles, in order; read once per host and request."""
    return [entry.group.prof
            for entry in entries(spec_obj, host_states, memo)]


def _cell_memory_usage(topology):
    cells = getattr(topology, 'cells', None) or ()
    return {cell.id: cell.memory_usage for cell in cells}


def pending_cell_mb(entry, topology):
    """RAM, in MB, this request already placed on each NUMA cell."""
    pending = {}
    for cell, usage in _cell_memory_usage(topology).items():
        drop = usage - entry.base_cells.get(cell, usage)
        if drop > 0:
            pending[cell] = float(drop)
    return pending


def hot_ram(host_states, host_entries, spec_obj, request_, memo,
            reads=None):
    """Bring the usage of the tiered hosts' entries up to date.

    Counts the instances already on the host (through the ledger) plus the
    instances of this same request placed on it before this pass, at the
    request's own hot ratio: on the cells Nova consumed for them if the
    flavor is NUMA-bound. An entry stays valid while its host's free RAM
    does not change (Nova consumes it when it places an instance of the
    request).

    :param reads: the groups whose hosts' usage is read; by default every
        tiered group.
    """
    # A RequestSpec raises, not AttributeError, for an unset field.
    exclude = ovo.loaded(spec_obj, 'instance_uuid')
    if memo.usage is None or memo.exclude != exclude:
        # {id(host state): HotRam or None} of the ledger, for this request.
        memo.exclude = exclude
        memo.usage = {}
        for entry in memo.hosts.values():
            entry.free = None
    if reads is None:
        reads = {group for group in memo.groups.values() if group.tiered}
    todo = [(hs, entry) for hs, entry in zip(host_states, host_entries)
            if entry.group in reads and entry.free != hs.free_ram_mb]
    if not todo:
        return
    ledger_usage = memo.usage
    unread = [hs for hs, _entry in todo if id(hs) not in ledger_usage]
    if unread:
        ledger_usage.update(zip(map(id, unread), ledger.LEDGER.usage_of(
            unread, exclude_uuid=exclude)))
    for host_state, entry in todo:
        usage = ledger_usage[id(host_state)]
        free = host_state.free_ram_mb
        topology = getattr(host_state, 'numa_topology', None)
        if entry.base_free is None:
            entry.base_free = free
            entry.base_cells = (_cell_memory_usage(topology) if topology
                                else {})
        pending = entry.base_free - free
        if usage is not None and pending > 0:
            usage = usage.copy()
            usage.total += request_.hot_mb(pending)
            for cell, mb in pending_cell_mb(entry, topology).items():
                usage.bound[cell] = (usage.bound.get(cell, 0.0)
                                     + request_.hot_mb(mb))
        entry.free = free
        entry.usage = usage
        entry.cells = numa.cell_ids(host_state) if topology else None
