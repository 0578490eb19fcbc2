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

Nova hands the same RequestSpec to every filter and weigher of a request
(and, in a multi-create, to every pass). Its flavor's ``pmem:`` request, the
hosts' profiles, their hot RAM from the ledger and the NUMA fits are worked
out by the first class that needs them and reused by the others, in a memo
that lives as long as the RequestSpec.

Nova schedules the instances of a multi-create one by one and consumes each
chosen host's ``free_ram_mb`` (and, for a NUMA-bound flavor, its cells'
``memory_usage``) in memory, but does not add them to
``host_state.instances``: the drop since the request's first pass is what
the request has already put on the host (:func:`pending_ram_mb`).
"""

import weakref

from nova_pmem_filters.core import kinds
from nova_pmem_filters.scheduler import flavors
from nova_pmem_filters.scheduler import host_profiles
from nova_pmem_filters.scheduler import ledger
from nova_pmem_filters.scheduler import numa
from nova_pmem_filters.scheduler import ovo


class Memo(object):
    """The memo of one RequestSpec (see the module docstring)."""

    __slots__ = ('flavor', 'defaults', 'parsed', 'default_mode',
                 'by_aggregates', 'agg_values', 'exclude', 'usage',
                 'baselines', 'fits', '__weakref__')

    def __init__(self, flavor):
        self.flavor = flavor
        # (PmemRequest or None, error) once parsed with these defaults.
        self.defaults = None
        self.parsed = None
        # host_profiles.profiles_of's memos, for this default host mode.
        self.default_mode = None
        self.by_aggregates = {}
        self.agg_values = {}
        # The instance not counted (a move) and {(host, node): HotRam or
        # None} from the ledger.
        self.exclude = None
        self.usage = None
        # {(host, node): (free_ram_mb, {cell: memory_usage}) at first sight}
        self.baselines = {}
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


def profiles(spec_obj, host_states, memo=None):
    """The hosts' profiles, in order; computed once per aggregate set."""
    memo = memo or of(spec_obj)
    default_mode = host_profiles.CONF.pmem.default_host_mode
    if memo.default_mode != default_mode:
        memo.default_mode = default_mode
        memo.by_aggregates = {}
    return host_profiles.profiles_of(host_states, memo.by_aggregates,
                                     memo.agg_values, default_mode)


def _cell_memory_usage(host_state):
    topology = getattr(host_state, 'numa_topology', None)
    cells = getattr(topology, 'cells', None) or ()
    return {cell.id: cell.memory_usage for cell in cells}


def _baseline(host_state, memo):
    key = ovo.node_key(host_state)
    baseline = memo.baselines.get(key)
    if baseline is None:
        baseline = memo.baselines[key] = (host_state.free_ram_mb,
                                          _cell_memory_usage(host_state))
    return baseline


def pending_ram_mb(host_state, spec_obj, memo=None):
    """RAM, in MB, this request already placed on the host."""
    baseline = _baseline(host_state, memo or of(spec_obj))
    return max(baseline[0] - host_state.free_ram_mb, 0.0)


def pending_cell_mb(host_state, spec_obj, memo=None):
    """RAM, in MB, this request already placed on each NUMA cell."""
    baseline = _baseline(host_state, memo or of(spec_obj))
    pending = {}
    for cell, usage in _cell_memory_usage(host_state).items():
        drop = usage - baseline[1].get(cell, usage)
        if drop > 0:
            pending[cell] = float(drop)
    return pending


def _ledger_usage(memo, host_states, exclude):
    if memo.usage is None or memo.exclude != exclude:
        memo.exclude = exclude
        memo.usage = {}
    usage = memo.usage
    todo = [hs for hs in host_states if ovo.node_key(hs) not in usage]
    if todo:
        usage.update(ledger.LEDGER.usage_by_host(todo, exclude_uuid=exclude))
    return usage


def tiered_hot_ram(host_states, host_profiles_, spec_obj, request_,
                   memo=None):
    """:class:`cache.HotRam` of each known tiered host of ``host_states``.

    Counts the instances already on the host (through the ledger) plus the
    instances of this same request placed on it before this pass, at the
    request's own hot ratio: on the cells Nova consumed for them if the
    flavor is NUMA-bound.

    :returns: ``{(host, node): HotRam or None}`` (None: unreadable).
    """
    tiered = [hs for hs, prof in zip(host_states, host_profiles_)
              if prof.mode in kinds.TIERED]
    if not tiered:
        return {}
    memo = memo or of(spec_obj)
    # A RequestSpec raises, not AttributeError, for an unset field.
    exclude = ovo.loaded(spec_obj, 'instance_uuid')
    used = _ledger_usage(memo, tiered, exclude)
    result = {}
    for host_state in tiered:
        key = ovo.node_key(host_state)
        usage = used[key]
        pending = pending_ram_mb(host_state, spec_obj, memo)
        if usage is None or not pending:
            result[key] = usage
            continue
        usage = usage.copy()
        usage.total += request_.hot_mb(pending)
        for cell, mb in pending_cell_mb(host_state, spec_obj, memo).items():
            usage.bound[cell] = usage.bound.get(cell, 0.0) + request_.hot_mb(
                mb)
        result[key] = usage
    return result


def cache_inputs(host_state, prof, usage, spec_obj, bound, memo):
    """What the core's cache rules read of one host for this request.

    :param usage: :func:`tiered_hot_ram` of the request's hosts.
    :param bound: the flavor is NUMA-bound.
    :returns: (HotRam or None, ids of its NUMA cells with CPUs or None, the
        NUMA fit callable or None); all None on a host that is not tiered,
        where the rules read none of them.
    """
    if prof.mode not in kinds.TIERED:
        return None, None, None
    fit = numa.fit_of(host_state, spec_obj, memo.fits) if bound else None
    return usage.get(ovo.node_key(host_state)), numa.cell_ids(host_state), fit
