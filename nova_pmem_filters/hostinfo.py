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
"""Adapters from Nova's HostState and RequestSpec to the shared core.

Everything here runs inside nova-scheduler, once per request or once per
host, and never raises: a host or flavor that cannot be understood is
reported as such and the caller rejects it with a log line.
"""

import os
import time
import weakref

from oslo_log import log as logging
from oslo_versionedobjects import base as ovo_base

import nova.conf
from nova import context as nova_context
from nova import objects
from nova.virt import hardware

from nova_pmem_filters import conf as pmem_conf
from nova_pmem_filters import extra_specs
from nova_pmem_filters import profile

LOG = logging.getLogger(__name__)

CONF = nova.conf.CONF
pmem_conf.register_opts(CONF)

# (host, problem) pairs already warned about, so that a mislabelled host
# gives one warning per scheduler process rather than one per request.
_WARNED = set()
_WARNED_MAX = 10000


def warn_once(key, msg, args):
    if key in _WARNED:
        LOG.debug(msg, args)
        return
    if len(_WARNED) >= _WARNED_MAX:
        _WARNED.clear()
    _WARNED.add(key)
    LOG.warning(msg, args)


# Profiles by what from_metadata() reads of a host's aggregates. Hosts share
# a few aggregates, and from_metadata() and reading the option cost more per
# host than the filters' own work. Keyed by content, so a metadata change is
# seen at once.
_PROFILES = {}
_PROFILES_MAX = 1000


def _profile_key(host_state):
    """The pmem values of the host's aggregates, or None if not cacheable."""
    try:
        key = []
        has_mode = False
        for agg in host_state.aggregates or ():
            metadata = agg.metadata
            if not metadata:
                continue
            mode = cache = cells = None
            if profile.MODE_KEY in metadata:
                mode = metadata[profile.MODE_KEY]
                if type(mode) is not str:
                    return None
                has_mode = True
            if profile.DRAM_CACHE_KEY in metadata:
                cache = metadata[profile.DRAM_CACHE_KEY]
                if type(cache) is not str:
                    return None
            if profile.DRAM_CACHE_PER_CELL_KEY in metadata:
                cells = metadata[profile.DRAM_CACHE_PER_CELL_KEY]
                if type(cells) is not str:
                    return None
            if mode is not None or cache is not None or cells is not None:
                key.append((mode, cache, cells))
        if not has_mode:
            # from_metadata() uses the default only when no aggregate sets
            # a mode.
            key.append(CONF.pmem.default_host_mode)
        return tuple(key)
    except Exception:
        # Let from_metadata() meet the same problem and report it.
        return None


def host_profile(host_state):
    """The HostProfile of a host, from its aggregates; never raises."""
    key = _profile_key(host_state)
    result = _PROFILES.get(key) if key is not None else None
    try:
        if result is None:
            result = profile.from_metadata(
                (agg.metadata for agg in host_state.aggregates or ()),
                default_mode=CONF.pmem.default_host_mode)
            if key is not None:
                if len(_PROFILES) >= _PROFILES_MAX:
                    _PROFILES.clear()
                _PROFILES[key] = result
    except Exception as exc:
        # Aggregates that are not Nova objects at all; keep serving.
        result = profile.HostProfile(problem='unreadable aggregates: %s'
                                     % exc)
    if not result.known:
        warn_once((host_state.host, host_state.nodename, result.problem),
                  "Host %(host)s (node %(node)s) has an unknown pmem "
                  "profile: %(problem)s. Filters that need its memory mode "
                  "reject it until its aggregate metadata is fixed.",
                  {'host': host_state.host, 'node': host_state.nodename,
                   'problem': result.problem})
    return result


# The process whose aggregate view has been checked (see
# check_aggregate_view): a worker forked or re-forked after the check is a
# new process and checks again.
_VIEW_CHECKED_PID = None
# After a repair, until Nova's fanout has reached this worker's HostManager:
# (monotonic deadline, {host: [database aggregates]}).
_VIEW_REPAIR = None
VIEW_REPAIR_WINDOW_S = 10


def _aggregate_view(aggregates):
    """What a host's aggregates say, comparable between two copies."""
    return frozenset(
        (agg.id, key, value)
        for agg in aggregates or ()
        for key, value in (agg.metadata or {}).items())


def _describe_aggregates(aggregates):
    return '[%s]' % ', '.join(
        '%s %s' % (agg.id, dict(agg.metadata or {}))
        for agg in sorted(aggregates or (), key=lambda agg: agg.id))


def _use_database_view(by_host, host_states):
    """Give hosts whose aggregates differ the database's; describe them."""
    stale = []
    for host_state in host_states:
        aggs = by_host.get(host_state.host, [])
        if _aggregate_view(host_state.aggregates) != _aggregate_view(aggs):
            stale.append('%s held %s, database %s' % (
                host_state.host, _describe_aggregates(host_state.aggregates),
                _describe_aggregates(aggs)))
            host_state.aggregates = list(aggs)
    return stale


def _compare_with_database(context, host_states, pid):
    """Read the aggregates; repair and announce.

    :returns: (the repair for later requests or None, the stale hosts).
    """
    from nova.scheduler.client import query

    fresh = objects.AggregateList.get_all(context.elevated())
    by_host = {}
    for agg in fresh:
        for host in agg.hosts or ():
            by_host.setdefault(host, []).append(agg)
    held = {agg.id: agg for host_state in host_states
            for agg in host_state.aggregates or ()}
    stale = _use_database_view(by_host, host_states)
    if not stale:
        return None, []
    LOG.error("This nova-scheduler worker (pid %(pid)d) held aggregates "
              "that differ from the database (a worker started after a "
              "crash gets the parent process's start-up copy): %(hosts)s. "
              "Using the database's aggregates, and asking all scheduler "
              "workers to update theirs.",
              {'pid': pid, 'hosts': '; '.join(sorted(stale))})
    client = query.SchedulerQueryClient()
    client.update_aggregates(context, fresh)
    fresh_ids = {agg.id for agg in fresh}
    for agg_id, agg in held.items():
        if agg_id not in fresh_ids:
            client.delete_aggregate(context, agg)
    return ((time.monotonic() + VIEW_REPAIR_WINDOW_S, by_host),
            [line.split(' ', 1)[0] for line in stale])


def check_aggregate_view(spec_obj, host_states):
    """Repair aggregates the scheduler holds stale; once per process.

    Nova's HostManager reads the aggregates in the parent nova-scheduler
    process and hears of changes by fanout; a worker re-forked after a crash
    starts from the parent's start-up copy. Here, at the first request a
    process filters, the aggregates are read from the database and compared
    with what each host of the request carries. Where they differ, the hosts
    get the database's aggregates, and Nova's own ``update_aggregates`` /
    ``delete_aggregate`` fanout brings every worker's HostManager up to
    date. A request that starts during the read does its own; requests in
    the ``VIEW_REPAIR_WINDOW_S`` seconds after a repair, while the fanout is
    on its way, get the database's aggregates too. Never raises.

    :returns: the names of the hosts whose aggregates were replaced.
    """
    global _VIEW_CHECKED_PID, _VIEW_REPAIR
    if not CONF.pmem.check_aggregate_view:
        return []
    pid = os.getpid()
    try:
        if _VIEW_CHECKED_PID != pid:
            context = getattr(spec_obj, '_context', None)
            if context is None:
                return []
            # No lock: a request that starts while another one reads does
            # its own read and repairs its own hosts. The process is marked
            # checked only once the repair is in place for later requests.
            repair = None
            try:
                repair, stale = _compare_with_database(
                    context, host_states, pid)
                return stale
            finally:
                if _VIEW_CHECKED_PID != pid:
                    _VIEW_REPAIR = repair
                    _VIEW_CHECKED_PID = pid
        repair = _VIEW_REPAIR
        if repair is None:
            return []
        deadline, by_host = repair
        if time.monotonic() > deadline:
            _VIEW_REPAIR = None
            return []
        stale = _use_database_view(by_host, host_states)
        if stale:
            LOG.debug("Aggregates from the database until Nova's fanout "
                      "arrives: %s", '; '.join(stale))
        return [line.split(' ', 1)[0] for line in stale]
    except Exception as exc:
        LOG.warning("Could not compare the scheduler's aggregates with the "
                    "database (pid %(pid)d): %(error)r; keeping them.",
                    {'pid': pid, 'error': exc})
        return []


def flavor_request(flavor):
    """Parse a flavor's ``pmem:`` extra specs with the configured defaults.

    :returns: (PmemRequest, None) or (None, error message).
    """
    try:
        return extra_specs.parse(
            loaded(flavor, 'extra_specs') or {},
            default_modes=CONF.pmem.default_flavor_modes,
            default_hot_ratio=CONF.pmem.default_hot_ratio), None
    except extra_specs.InvalidExtraSpec as exc:
        return None, str(exc)
    except Exception as exc:
        return None, 'unreadable flavor: %s' % exc


# VersionedObject.obj_attr_is_set builds the list of all field names on
# every call (some 4 us for an Instance); the ledger asks it of every
# instance of every memory_mode host on every request.
_OVO_ATTR_IS_SET = ovo_base.VersionedObject.obj_attr_is_set
_FLAVOR_ATTR = ovo_base._get_attrname('flavor')
_NUMA_ATTR = ovo_base._get_attrname('numa_topology')


def loaded(obj, name):
    """``obj.name`` if it is set, without a lazy-load (a database query)."""
    is_set = getattr(obj, 'obj_attr_is_set', None)
    if (getattr(is_set, '__func__', None) is _OVO_ATTR_IS_SET
            and name in obj.fields):
        # The same test as that obj_attr_is_set, without the list.
        if not hasattr(obj, ovo_base._get_attrname(name)):
            return None
    elif is_set is not None and not is_set(name):
        return None
    return getattr(obj, name, None)


def spec_request(spec_obj):
    """The PmemRequest of a RequestSpec's flavor: (request, error)."""
    try:
        flavor = spec_obj.flavor
    except Exception as exc:
        return None, 'request has no flavor: %s' % exc
    return flavor_request(flavor)


def node_key(host_state):
    return (host_state.host, host_state.nodename)


def _newly_pushed(instances, idents):
    """Whether nova-compute pushed an instance object since ``idents``.

    Pushed objects carry their flavor; nova-compute replaces an object when
    it pushes it again, so an object with a flavor that is not among the
    identities recorded may carry a new flavor (a resize on the same host).
    """
    for inst in instances.values():
        try:
            pushed = _FLAVOR_ATTR in inst.__dict__
        except AttributeError:
            pushed = False
        if pushed and (idents is None or id(inst) not in idents):
            return True
    return False


def _cells_of(numa_topology, hot_mb, memory_mb):
    """``((host cell, hot MB), ...)`` of a NUMA-bound instance, else None.

    Each cell of the instance's topology is charged its memory times the
    flavor's hot ratio, i.e. its share of the instance's hot MB.
    """
    cells = getattr(numa_topology, 'cells', None) if numa_topology else None
    if not cells:
        return None
    try:
        placed = [(cell.id, cell.memory) for cell in cells]
    except Exception:
        # Cells without a host cell id (not placed yet): float.
        return None
    total = sum(memory for _cell, memory in placed) or memory_mb
    if not total:
        return None
    merged = {}
    for cell, memory in placed:
        merged[cell] = merged.get(cell, 0.0) + hot_mb * memory / total
    return tuple(sorted(merged.items()))


def _pushed_cells(inst, hot_mb, memory_mb, entry, host):
    """The cells of an instance nova-compute pushed with its flavor.

    nova-compute pushes the objects it holds, whose ``numa_topology`` is
    loaded after a build, resize or migration. If it is not, the cells
    recorded before for the instance on this host stand, else the instance
    is counted as floating.
    """
    if _NUMA_ATTR in inst.__dict__:
        return _cells_of(getattr(inst, _NUMA_ATTR), hot_mb, memory_mb)
    if entry is not None and entry[0] == host and entry[3] is not None:
        return _cells_of_entry(entry[3], hot_mb)
    return None


def _cells_of_entry(cells, hot_mb):
    total = sum(mb for _cell, mb in cells)
    if not total:
        return cells
    return tuple((cell, hot_mb * mb / total) for cell, mb in cells)


class HostHotRam(object):
    """Hot MB on one host: ``total`` and the NUMA-bound part per cell.

    ``bound`` maps a host cell id to the hot MB of the NUMA-bound instances
    on it; the rest of ``total`` floats.
    """

    __slots__ = ('total', 'bound')

    def __init__(self, total, bound=None):
        self.total = total
        self.bound = dict(bound or {})

    @property
    def floating(self):
        return max(self.total - sum(self.bound.values()), 0.0)

    def copy(self):
        return HostHotRam(self.total, self.bound)


class HotRamLedger(object):
    """Hot RAM, in MB, of the instances already on each host.

    The scheduler usually knows the instances of a host only by UUID
    (``HostManager._get_instances_by_host``), and reading ``instance.flavor``
    from such an object costs a database query per instance. The ledger keeps
    a per-process record ``uuid -> (host, hot MB, time, cells)`` (``cells``:
    the hot MB on each host NUMA cell of a NUMA-bound instance, else None)
    and fills what is missing with one batched query per cell per request.
    Instances that nova-compute pushed with their flavor loaded
    (``track_instance_changes``) are read directly and refresh the record.

    An entry is reloaded when its instance appears on another host than the
    one it was recorded on (a move or resize) or when it is older than
    ``[pmem] instance_cache_ttl``.
    """

    def __init__(self, clock=time.monotonic):
        self._clock = clock
        self._entries = {}
        # host -> (frozenset of its instance UUIDs, their HostHotRam, time
        # of the oldest entry summed, identities of the instance objects if
        # nova-compute pushed them): the total of a host whose instances
        # have not changed since it was summed.
        self._hosts = {}
        self._parsed = {}
        self._last_prune = clock()
        # Counts, for the benchmark and for operators reading debug logs.
        self.queries = 0

    def _hot_mb_of_flavor(self, uuid, flavor):
        memory_mb = loaded(flavor, 'memory_mb') or 0
        try:
            # Most instances share a few flavors: parse each once per pass.
            key = (memory_mb, frozenset(
                (loaded(flavor, 'extra_specs') or {}).items()))
            request, error = self._parsed[key]
        except KeyError:
            request, error = self._parsed[key] = flavor_request(flavor)
        except TypeError:
            request, error = flavor_request(flavor)
        if request is None:
            # Count the whole flavor as hot: the cache bound must hold even
            # when an old flavor carries specs the API would now refuse.
            warn_once(('instance', uuid, error),
                      "Instance %(uuid)s has a flavor with invalid pmem extra "
                      "specs (%(error)s); counting all its RAM as hot.",
                      {'uuid': uuid, 'error': error})
            return float(memory_mb)
        return request.hot_mb(memory_mb)

    def _prune(self, now, ttl):
        # Walking every entry is not free on large clouds: do it rarely.
        if now - self._last_prune < max(ttl, 60):
            return
        self._last_prune = now
        horizon = now - 2 * max(ttl, 60)
        self._entries = {uuid: entry for uuid, entry in self._entries.items()
                         if entry[2] >= horizon}
        self._hosts = {host: record for host, record in self._hosts.items()
                       if record[2] >= horizon}

    def used_by_host(self, host_states, exclude_uuid=None):
        """Hot MB in use per host, loading unknown flavors in one batch.

        :param host_states: the HostStates to account.
        :param exclude_uuid: an instance not to count (the one being moved).
        :returns: ``{(host, nodename): hot MB or None}``; None means an
            instance's flavor could not be read and the host's usage is
            unknown.
        """
        return {key: (None if usage is None else usage.total)
                for key, usage in self.usage_by_host(
                    host_states, exclude_uuid).items()}

    def usage_by_host(self, host_states, exclude_uuid=None):
        """Like :meth:`used_by_host`, with the NUMA-bound part per cell.

        :returns: ``{(host, nodename): HostHotRam or None}``.
        """
        now = self._clock()
        ttl = CONF.pmem.instance_cache_ttl
        self._prune(now, ttl)
        # Parsed flavors live for one pass, so option changes take effect.
        self._parsed = {}
        entries = self._entries
        records = self._hosts
        used = {}
        walked = []
        pushed = set()
        missing = {}
        for host_state in host_states:
            host = host_state.host
            instances = host_state.instances or {}
            record = records.get(host)
            # The host holds the instances it held when its total was
            # summed, none of them has expired, and none is being moved:
            # the total stands, without a look at each instance.
            if (record is not None and now - record[2] < ttl
                    and (exclude_uuid is None
                         or exclude_uuid not in instances)
                    and instances.keys() == record[0]
                    and not _newly_pushed(instances, record[3])):
                used[node_key(host_state)] = record[1]
                continue
            walked.append(host_state)
            for uuid, inst in instances.items():
                if uuid == exclude_uuid:
                    continue
                # loaded(inst, 'flavor'), inlined for the common case: this
                # loop runs for every instance of every memory_mode host.
                is_set = getattr(inst, 'obj_attr_is_set', None)
                if (getattr(is_set, '__func__', None) is _OVO_ATTR_IS_SET
                        and 'flavor' in inst.fields):
                    flavor = (getattr(inst, 'flavor', None)
                              if hasattr(inst, _FLAVOR_ATTR) else None)
                else:
                    flavor = loaded(inst, 'flavor')
                if flavor is not None:
                    hot = self._hot_mb_of_flavor(uuid, flavor)
                    entries[uuid] = (host, hot, now, _pushed_cells(
                        inst, hot, loaded(flavor, 'memory_mb') or 0,
                        entries.get(uuid), host))
                    pushed.add(host)
                    continue
                entry = entries.get(uuid)
                if (entry is not None and entry[0] == host
                        and now - entry[2] < ttl):
                    continue
                ctxt = getattr(inst, '_context', None)
                if ctxt is None:
                    # A stub the scheduler itself adds for an instance it
                    # has just placed in this request; it is not in any
                    # database yet and is counted by pending_ram_mb().
                    continue
                cell = getattr(ctxt, 'cell_uuid', None)
                batch = missing.setdefault(cell, (ctxt, {}))
                batch[1][uuid] = host
        for ctxt, hosts_by_uuid in missing.values():
            self._load(ctxt, hosts_by_uuid, now)

        for host_state in walked:
            instances = host_state.instances or {}
            total = 0.0
            bound = {}
            oldest = now
            whole = True
            for uuid, inst in instances.items():
                if uuid == exclude_uuid:
                    whole = False
                    continue
                entry = entries.get(uuid)
                if entry is None:
                    if getattr(inst, '_context', None) is None:
                        whole = False
                        continue
                    total = None
                    break
                total += entry[1]
                if entry[3] is not None:
                    for cell, mb in entry[3]:
                        bound[cell] = bound.get(cell, 0.0) + mb
                if entry[2] < oldest:
                    oldest = entry[2]
            if total is not None:
                total = HostHotRam(total, bound)
            used[node_key(host_state)] = total
            if total is not None and whole:
                # nova-compute replaces the Instance objects it pushes, so
                # the identities of a host's pushed objects tell whether a
                # flavor may have changed (a resize on the same host).
                idents = (frozenset(map(id, instances.values()))
                          if host_state.host in pushed else None)
                records[host_state.host] = (frozenset(instances), total,
                                            oldest, idents)
            else:
                records.pop(host_state.host, None)
        return used

    def _load(self, ctxt, hosts_by_uuid, now):
        if ctxt is None:
            ctxt = nova_context.get_admin_context()
        uuids = sorted(hosts_by_uuid)
        self.queries += 1
        try:
            found = objects.InstanceList.get_by_filters(
                ctxt, {'uuid': uuids},
                expected_attrs=['flavor', 'numa_topology'])
        except Exception as exc:
            LOG.warning("Could not read the flavors of %(count)d instances "
                        "(%(error)s); memory_mode hosts with those instances "
                        "are rejected by PmemCacheFilter for this request.",
                        {'count': len(uuids), 'error': exc})
            return
        seen = set()
        for inst in found:
            if inst.deleted:
                continue
            seen.add(inst.uuid)
            hot = self._hot_mb_of_flavor(inst.uuid, inst.flavor)
            self._entries[inst.uuid] = (
                hosts_by_uuid.get(inst.uuid), hot, now,
                _cells_of(loaded(inst, 'numa_topology'), hot,
                          loaded(inst.flavor, 'memory_mb') or 0))
        for uuid in uuids:
            if uuid not in seen:
                # Deleted since the host state was built: it holds no RAM.
                self._entries[uuid] = (hosts_by_uuid[uuid], 0.0, now, None)


# One ledger per scheduler process, shared by PmemCacheFilter and
# PmemCacheHeadroomWeigher so that a request reads each flavor at most once.
LEDGER = HotRamLedger()

# RequestSpec -> {(host, node): (free_ram_mb, {cell: memory_usage}) when the
# request first saw the host}. Nova schedules the instances of a
# multi-create request one by one and consumes each chosen host's
# free_ram_mb (and, for a NUMA-bound flavor, its cells' memory_usage) in
# memory, but it does not add them to host_state.instances; the drop since
# the request's first pass is what this request has already put on the
# host.
_REQUEST_BASELINES = weakref.WeakKeyDictionary()


def _cell_memory_usage(host_state):
    topology = getattr(host_state, 'numa_topology', None)
    cells = getattr(topology, 'cells', None) or ()
    return {cell.id: cell.memory_usage for cell in cells}


def _baseline(host_state, spec_obj):
    try:
        baselines = _REQUEST_BASELINES.setdefault(spec_obj, {})
    except TypeError:
        return None
    key = node_key(host_state)
    if key not in baselines:
        baselines[key] = (host_state.free_ram_mb,
                          _cell_memory_usage(host_state))
    return baselines[key]


def pending_ram_mb(host_state, spec_obj):
    """RAM, in MB, this request already placed on the host."""
    baseline = _baseline(host_state, spec_obj)
    if baseline is None:
        return 0.0
    return max(baseline[0] - host_state.free_ram_mb, 0.0)


def pending_cell_mb(host_state, spec_obj):
    """RAM, in MB, this request already placed on each NUMA cell."""
    baseline = _baseline(host_state, spec_obj)
    if baseline is None:
        return {}
    pending = {}
    for cell, usage in _cell_memory_usage(host_state).items():
        drop = usage - baseline[1].get(cell, usage)
        if drop > 0:
            pending[cell] = float(drop)
    return pending


# RequestSpec -> (excluded uuid, {(host, node): HostHotRam from the ledger}).
# PmemCacheFilter and PmemCacheHeadroomWeigher see the same hosts in one
# request; the weigher reuses what the filter summed.
_REQUEST_USAGE = weakref.WeakKeyDictionary()


def _request_usage(spec_obj, host_states, exclude):
    try:
        cached_exclude, usage = _REQUEST_USAGE.get(spec_obj, (None, None))
    except TypeError:
        return LEDGER.usage_by_host(host_states, exclude_uuid=exclude)
    if usage is None or cached_exclude != exclude:
        usage = {}
        _REQUEST_USAGE[spec_obj] = (exclude, usage)
    todo = [hs for hs in host_states if node_key(hs) not in usage]
    if todo:
        usage.update(LEDGER.usage_by_host(todo, exclude_uuid=exclude))
    return {node_key(hs): usage[node_key(hs)] for hs in host_states}


def memory_mode_hot_ram(host_states, profiles, spec_obj, request):
    """HostHotRam of each known memory_mode host of ``host_states``.

    Counts the instances already on the host (through the ledger) plus the
    instances of this same request placed on it before this pass, at the
    request's own hot ratio: on the cells Nova consumed for them if the
    flavor is NUMA-bound.

    :returns: ``{(host, node): HostHotRam or None}`` (None: unreadable).
    """
    mm_hosts = [hs for hs, prof in zip(host_states, profiles)
                if prof.mode in profile.TIERED]
    if not mm_hosts:
        return {}
    # A RequestSpec raises, not AttributeError, for an unset field.
    exclude = loaded(spec_obj, 'instance_uuid')
    used = _request_usage(spec_obj, mm_hosts, exclude)
    result = {}
    for host_state in mm_hosts:
        key = node_key(host_state)
        usage = used[key]
        pending = pending_ram_mb(host_state, spec_obj)
        if usage is None or not pending:
            result[key] = usage
            continue
        usage = usage.copy()
        usage.total += request.hot_mb(pending)
        for cell, mb in pending_cell_mb(host_state, spec_obj).items():
            usage.bound[cell] = usage.bound.get(cell, 0.0) + request.hot_mb(
                mb)
        result[key] = usage
    return result


def memory_mode_usage(host_states, profiles, spec_obj, request):
    """Hot MB used on each known memory_mode host of ``host_states``.

    The totals of :func:`memory_mode_hot_ram`.
    """
    return {key: (None if usage is None else usage.total)
            for key, usage in memory_mode_hot_ram(
                host_states, profiles, spec_obj, request).items()}


def host_cells(host_state):
    """The NUMA cells Nova knows of the host, or None (no topology)."""
    topology = getattr(host_state, 'numa_topology', None)
    cells = getattr(topology, 'cells', None)
    return list(cells) if cells else None


def requested_topology(spec_obj):
    """The request's InstanceNUMATopology, or None if the flavor floats."""
    topology = loaded(spec_obj, 'numa_topology')
    return topology if topology and topology.cells else None


# RequestSpec -> {(host, node): (host topology, fitted cells)}: the filter
# and the weighers of one request fit the same host once.
_REQUEST_FITS = weakref.WeakKeyDictionary()


def _fit(host_state, spec_obj):
    limits = objects.NUMATopologyLimits(
        cpu_allocation_ratio=host_state.cpu_allocation_ratio,
        ram_allocation_ratio=host_state.ram_allocation_ratio)
    if 'network_metadata' in spec_obj and spec_obj.network_metadata:
        limits.network_metadata = spec_obj.network_metadata
    pci_requests = loaded(spec_obj, 'pci_requests')
    if pci_requests:
        pci_requests = pci_requests.requests
    # The scheduler claims the host's first allocation candidate that fits;
    # without candidates, the mapping consume_from_request() uses.
    mappings = [candidate['mappings'] for candidate in
                getattr(host_state, 'allocation_candidates', None) or ()]
    if not mappings:
        mappings = [spec_obj.get_request_group_mapping()]
    for mapping in mappings:
        # numa_fit_instance_to_host() writes the host cell ids and CPU
        # pinning into the topology it is given: give it a copy.
        fitted = hardware.numa_fit_instance_to_host(
            host_state.numa_topology, spec_obj.numa_topology.obj_clone(),
            limits=limits, pci_requests=pci_requests,
            pci_stats=host_state.pci_stats, provider_mapping=mapping)
        if fitted is not None:
            return fitted
    return None


def fitted_cells(host_state, spec_obj):
    """``{host cell: memory MB}`` Nova would claim for the request's cells.

    Nova's own fitting (``nova.virt.hardware.numa_fit_instance_to_host``)
    with the inputs NUMATopologyFilter and the compute claim use, so that
    ``[compute] packing_host_numa_cells_allocation_strategy`` chooses the
    cells here as it does there. None when no cells fit.
    """
    key = node_key(host_state)
    topology = host_state.numa_topology
    try:
        fits = _REQUEST_FITS.setdefault(spec_obj, {})
    except TypeError:
        fits = {}
    cached = fits.get(key)
    # Nova replaces the host's topology object when it consumes a request.
    if cached is not None and cached[0] is topology:
        return cached[1]
    fitted = _fit(host_state, spec_obj)
    cells = None
    if fitted is not None:
        cells = {}
        for cell in fitted.cells:
            cells[cell.id] = cells.get(cell.id, 0) + cell.memory
    fits[key] = (topology, cells)
    return cells


def uses_cells(prof, cells, usage, requested):
    """Whether a memory_mode host's cache is checked cell by cell.

    On a host with NUMA cells, when the flavor is NUMA-bound or the host
    holds NUMA-bound instances. Otherwise every instance floats, each cell
    carries the same share of hot RAM as of cache, and the host-wide check
    decides the same.
    """
    return (prof.mode in profile.TIERED and cells is not None
            and (requested is not None
                 or (usage is not None and bool(usage.bound))))


def cell_view(host_state, prof, cells, usage, spec_obj, request, ratio):
    """The per-cell picture of a memory_mode host for one request.

    :returns: (capacities, used, new, problem): ``{cell: MB}`` each, as
        :func:`nova_pmem_filters.decide.cell_cache_passes` takes them;
        capacities None with ``problem`` when the aggregates' cells are not
        the host's, new None when Nova fits the flavor on no cells.
    """
    # CPU-less cells (CXL memory onlined as NUMA nodes) hold no near
    # memory of their own, and no instance cell lands on them.
    capacities, problem = prof.cell_capacities_mb(
        [cell.id for cell in cells if cell.cpuset or cell.pcpuset], ratio)
    if capacities is None:
        return None, None, None, problem
    used = None
    if usage is not None:
        used = profile.cell_usage_mb(usage.floating, usage.bound, capacities)
    if requested_topology(spec_obj) is not None:
        claimed = fitted_cells(host_state, spec_obj)
        new = None if claimed is None else {
            cell: request.hot_mb(mb) for cell, mb in claimed.items()}
    else:
        new = profile.spread_mb(
            request.hot_mb(spec_obj.flavor.memory_mb), capacities)
    return capacities, used, new, None


def cell_memory_view(host_state, cells, spec_obj):
    """Memory in use and the new instance's memory on each NUMA cell.

    NUMA-bound instances are counted on their cells (the cells'
    ``memory_usage``); the rest of the host's memory use, on the cells in
    proportion to their size.

    :returns: (sizes, used, new) as ``{cell: MB}``; new None when Nova fits
        the flavor on no cells.
    """
    sizes = {cell.id: float(cell.memory) for cell in cells}
    bound = {cell.id: float(cell.memory_usage) for cell in cells}
    host_used = host_state.total_usable_ram_mb - host_state.free_ram_mb
    used = profile.cell_usage_mb(
        max(host_used - sum(bound.values()), 0.0), bound, sizes)
    if requested_topology(spec_obj) is not None:
        claimed = fitted_cells(host_state, spec_obj)
        new = None if claimed is None else {
            cell: float(mb) for cell, mb in claimed.items()}
    else:
        new = profile.spread_mb(float(spec_obj.flavor.memory_mb), sizes)
    return sizes, used, new
