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
"""The hot RAM of the instances already on each host.

The scheduler usually knows the instances of a host only by UUID; the
ledger reads their flavors (and NUMA cells) in one batched query per cell
and keeps them, so that PmemCacheFilter and the weighers count each host's
hot RAM without a query per instance. An instance whose flavor's ``pmem:``
specs do not parse counts all its RAM (the core's rule,
:func:`nova_pmem_filters.core.rules.extra_specs.counted_hot_mb`).
"""

import dataclasses
import time
import typing

from oslo_log import log as logging

from nova import context as nova_context
from nova import objects

from nova_pmem_filters import conf
from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import nearmem
from nova_pmem_filters.scheduler import flavors
from nova_pmem_filters.scheduler import logonce
from nova_pmem_filters.scheduler import ovo

LOG = logging.getLogger(__name__)
CONF = conf.CONF


class Entry(typing.NamedTuple):
    """What the ledger knows of one instance (a tuple: made by thousands).

    ``cells``: the hot MB on each host NUMA cell of a NUMA-bound instance,
    ``((cell, MB), ...)``, else None; ``ram_cells`` the same of its whole
    RAM, which hosts whose tiering the kernel does charge.
    """

    host: str
    hot_mb: float
    time: float
    cells: tuple
    ram_mb: float
    ram_cells: tuple


@dataclasses.dataclass(slots=True, eq=False)
class HostRecord:
    """The total of a host whose instances have not changed since summed.

    ``uuids``: the frozenset of its instance UUIDs; ``total``: their
    HotRam; ``oldest``: time of the oldest entry summed; ``idents``:
    identities of the instance objects if nova-compute pushed them, else
    None; ``instances`` and ``objects``: the dict of instances and its
    objects when last seen (see _renewed). Never changed once made: a
    renewed record is a new one.
    """

    uuids: frozenset
    total: object
    oldest: float
    idents: frozenset
    instances: dict
    objects: list


def _newly_pushed(instances, idents):
    """Whether nova-compute pushed an instance object since ``idents``.

    Pushed objects carry their flavor; nova-compute replaces an object when
    it pushes it again, so an object with a flavor that is not among the
    identities recorded may carry a new flavor (a resize on the same host).
    """
    for inst in instances.values():
        if ovo.pushed(inst) and (idents is None or id(inst) not in idents):
            return True
    return False


def _renewed(instances, record):
    """A host's record if it holds what it held when summed, else None.

    With ``track_instance_changes`` the scheduler keeps one dict of a
    host's instances and changes it in place: it is unchanged while it
    holds the very objects it held (nova-compute replaces the objects it
    pushes). Otherwise each request brings a new dict of bare objects: it
    is unchanged when it has the same UUIDs and no object nova-compute
    pushed since; the record returned is then a new one, for that dict.
    Records are never changed in place: another request may be reading
    this one (native threads).
    """
    if instances is record.instances:
        # List equality compares identical elements without calling their
        # __eq__, and Instance objects compare by identity otherwise.
        return record if list(instances.values()) == record.objects else None
    if (instances.keys() != record.uuids
            or _newly_pushed(instances, record.idents)):
        return None
    return HostRecord(record.uuids, record.total, record.oldest,
                      record.idents, instances, list(instances.values()))


_FLOATS = (None, None)


def _cells_of(numa_topology, hot_mb, memory_mb):
    """The cells of a NUMA-bound instance: (hot MB, RAM MB) per host cell.

    ``(((host cell, hot MB), ...), ((host cell, RAM MB), ...))``; ``(None,
    None)`` for an instance that floats. Each cell of the instance's
    topology is charged its memory times the flavor's hot ratio, i.e. its
    share of the instance's hot MB, and its memory.
    """
    cells = getattr(numa_topology, 'cells', None) if numa_topology else None
    if not cells:
        return _FLOATS
    try:
        placed = [(cell.id, cell.memory) for cell in cells]
    except Exception:
        # Cells without a host cell id (not placed yet): float.
        return _FLOATS
    hot = nearmem.bound_cells(placed, hot_mb, memory_mb)
    if hot is None:
        return _FLOATS
    return hot, nearmem.bound_cells(placed, memory_mb, memory_mb)


def _pushed_cells(inst, hot_mb, memory_mb, entry, host):
    """The cells of an instance nova-compute pushed with its flavor.

    nova-compute pushes the objects it holds, whose ``numa_topology`` is
    loaded after a build, resize or migration. If it is not, the cells
    recorded before for the instance on this host stand, else the instance
    is counted as floating.
    """
    if ovo.NUMA_ATTR in inst.__dict__:
        return _cells_of(getattr(inst, ovo.NUMA_ATTR), hot_mb, memory_mb)
    if entry is not None and entry.host == host and entry.cells is not None:
        return (nearmem.bound_cells(entry.cells, hot_mb) or entry.cells,
                entry.ram_cells)
    return _FLOATS


class _Parsed(typing.NamedTuple):
    """One pass's flavor defaults and ``{(MB, specs): (request, error)}``."""

    defaults: object
    requests: dict


class HotRamLedger(object):
    """Hot RAM, in MB, of the instances already on each host.

    The scheduler usually knows the instances of a host only by UUID
    (``HostManager._get_instances_by_host``), and reading ``instance.flavor``
    from such an object costs a database query per instance. The ledger keeps
    a per-process record ``uuid -> Entry`` and fills what is missing with
    one batched query per cell per request.
    Instances that nova-compute pushed with their flavor loaded
    (``track_instance_changes``) are read directly and refresh the record.

    An entry is reloaded when its instance appears on another host than the
    one it was recorded on (a move or resize) or when it is older than
    ``[pmem] instance_cache_ttl``.
    """

    def __init__(self, clock=time.monotonic):
        self._clock = clock
        # uuid -> Entry, host -> HostRecord. Shared by the requests that
        # run at once in one scheduler (native threads since Nova 33, or
        # greenthreads): each is only read, given a new item, or replaced
        # whole by _prune, never iterated while others write to it.
        self._entries = {}
        self._hosts = {}
        self._last_prune = clock()
        # Counts, for the benchmark and for operators reading debug logs.
        self.queries = 0

    @staticmethod
    def _hot_mb_of_flavor(uuid, flavor, parsed):
        """The hot MB an instance of ``flavor`` counts.

        :param parsed: the pass's :class:`_Parsed`: most instances share a
            few flavors, each parsed once per pass (so that option changes
            take effect at the next).
        """
        memory_mb = ovo.loaded(flavor, 'memory_mb') or 0
        try:
            key = (memory_mb, frozenset(
                (ovo.loaded(flavor, 'extra_specs') or {}).items()))
            request, error = parsed.requests[key]
        except KeyError:
            request, error = parsed.requests[key] = flavors.flavor_request(
                flavor, parsed.defaults)
        except TypeError:
            request, error = flavors.flavor_request(flavor, parsed.defaults)
        if request is None:
            logonce.warn_once(
                LOG, ('instance', uuid, error),
                "Instance %(uuid)s has a flavor with invalid pmem extra "
                "specs (%(error)s); counting all its RAM as hot.",
                {'uuid': uuid, 'error': error})
        return extra_specs.counted_hot_mb(memory_mb, request)

    def _prune(self, now, ttl):
        # Walking every entry is not free on large clouds: do it rarely.
        if now - self._last_prune < max(ttl, 60):
            return
        self._last_prune = now
        horizon = now - 2 * max(ttl, 60)
        # dict() copies in one step that no other thread interleaves with;
        # iterating the shared dict itself would fail ("dictionary changed
        # size during iteration") when another request adds an entry. An
        # entry added to the old dict meanwhile is lost: read again later.
        entries, hosts = dict(self._entries), dict(self._hosts)
        self._entries = {uuid: entry for uuid, entry in entries.items()
                         if entry.time >= horizon}
        self._hosts = {host: record for host, record in hosts.items()
                       if record.oldest >= horizon}

    def usage_by_host(self, host_states, exclude_uuid=None):
        """Hot MB in use per host, loading unknown flavors in one batch.

        :param host_states: the HostStates to account.
        :param exclude_uuid: an instance not to count (the one being moved).
        :returns: ``{(host, nodename): nearmem.HotRam or None}``; None means
            an instance's flavor could not be read and the host's usage is
            unknown.
        """
        return {ovo.node_key(host_state): usage for host_state, usage in zip(
            host_states, self.usage_of(host_states, exclude_uuid))}

    def usage_of(self, host_states, exclude_uuid=None):
        """:meth:`usage_by_host` as a list in the order of ``host_states``."""
        now = self._clock()
        ttl = CONF.pmem.instance_cache_ttl
        self._prune(now, ttl)
        parsed = _Parsed(flavors.defaults(), {})
        entries = self._entries
        records = self._hosts
        used = [None] * len(host_states)
        walked = []
        pushed = set()
        missing = {}
        record_of = records.get
        for index, host_state in enumerate(host_states):
            host = host_state.host
            instances = host_state.instances or {}
            record = record_of(host)
            # The host holds the instances it held when its total was
            # summed, none of them has expired, and none is being moved:
            # the total stands, without a look at each instance.
            if (record is not None and now - record.oldest < ttl
                    and (exclude_uuid is None
                         or exclude_uuid not in instances)):
                # _renewed's test of a tracked dict, inlined: this runs
                # for every tiered host on every request.
                if instances is record.instances:
                    if list(instances.values()) == record.objects:
                        used[index] = record.total
                        continue
                else:
                    renewed = _renewed(instances, record)
                    if renewed is not None:
                        records[host] = renewed
                        used[index] = renewed.total
                        continue
            walked.append((index, host_state))
            for uuid, inst in instances.items():
                if uuid == exclude_uuid:
                    continue
                flavor = ovo.loaded_flavor(inst)
                if flavor is not None:
                    hot = self._hot_mb_of_flavor(uuid, flavor, parsed)
                    ram = ovo.loaded(flavor, 'memory_mb') or 0
                    cells, ram_cells = _pushed_cells(
                        inst, hot, ram, entries.get(uuid), host)
                    entries[uuid] = Entry(host, hot, now, cells, ram,
                                          ram_cells)
                    pushed.add(host)
                    continue
                entry = entries.get(uuid)
                if (entry is not None and entry.host == host
                        and now - entry.time < ttl):
                    continue
                ctxt = getattr(inst, '_context', None)
                if ctxt is None:
                    # A stub the scheduler itself adds for an instance it
                    # has just placed in this request; it is not in any
                    # database yet and is counted by request_memo's
                    # pending RAM.
                    continue
                cell = getattr(ctxt, 'cell_uuid', None)
                _ctxt, cell_hosts = missing.setdefault(cell, (ctxt, {}))
                cell_hosts[uuid] = host
        for ctxt, hosts_by_uuid in missing.values():
            self._load(ctxt, hosts_by_uuid, now, parsed, entries)

        for index, host_state in walked:
            instances = host_state.instances or {}
            total = nearmem.HotRam(0.0)
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
                total.add(entry.hot_mb, entry.cells, entry.ram_mb,
                          entry.ram_cells)
                if entry.time < oldest:
                    oldest = entry.time
            used[index] = total
            if total is not None and whole:
                # nova-compute replaces the Instance objects it pushes, so
                # the identities of a host's pushed objects tell whether a
                # flavor may have changed (a resize on the same host).
                idents = (frozenset(map(id, instances.values()))
                          if host_state.host in pushed else None)
                records[host_state.host] = HostRecord(
                    frozenset(instances), total, oldest, idents, instances,
                    list(instances.values()))
            else:
                records.pop(host_state.host, None)
        return used

    def _load(self, ctxt, hosts_by_uuid, now, parsed, entries):
        # Into the pass's ``entries``: the dict it reads them back from,
        # even if a prune has replaced the ledger's meanwhile.
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
                        "(%(error)s); tiered hosts with those instances "
                        "are rejected by PmemCacheFilter for this request.",
                        {'count': len(uuids), 'error': exc})
            return
        seen = set()
        for inst in found:
            if inst.deleted:
                continue
            seen.add(inst.uuid)
            hot = self._hot_mb_of_flavor(inst.uuid, inst.flavor, parsed)
            ram = ovo.loaded(inst.flavor, 'memory_mb') or 0
            cells, ram_cells = _cells_of(ovo.loaded(inst, 'numa_topology'),
                                         hot, ram)
            entries[inst.uuid] = Entry(
                hosts_by_uuid.get(inst.uuid), hot, now, cells, ram,
                ram_cells)
        for uuid in uuids:
            if uuid not in seen:
                # Deleted since the host state was built: it holds no RAM.
                entries[uuid] = Entry(hosts_by_uuid[uuid], 0.0, now, None,
                                      0.0, None)


# One ledger per scheduler process, shared by PmemCacheFilter and the
# weighers so that a request reads each flavor at most once.
LEDGER = HotRamLedger()
