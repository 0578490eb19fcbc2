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
"""The simulator's engine: a fleet's state and Nova's placement of each boot.

A boot is placed as Nova places it with ``host_subset_size = 1``:
Placement's allocation candidates, then the filters PmemModeFilter and
PmemCacheFilter through the core's rules, then the weighers in Nova's order
and arithmetic. The state of the fleet is a set of arrays, one entry per
host; a placement is decided on the groups of alike hosts (same kind, same
usage), which pass the same filters and weigh the same floats, so that it
costs a few vector operations over the groups: a fleet of a million hosts,
most of them empty, is a handful of groups.

Each host's near memory is charged as the scheduler's ledger charges it:
the hot RAM and the whole RAM of its instances, and the same of those
whose memory Nova binds (:func:`~nova_pmem_filters.core.rules.tiering.
binds_memory` of the flavor's extra specs), so that the core's rules
(:func:`~nova_pmem_filters.core.rules.charging.charged`) count whole RAM on a
``cxl_kmem`` host for bound instances, and for all where its kernel does
not tier. The hosts have no NUMA cells: bound instances are counted on one
cell (:data:`HOST_CELL`) and the rules, given no cells, decide host-wide,
which is what the scheduler decides on a host of one cell.
"""

import dataclasses

import numpy as np
import pandas as pd

from nova_pmem_filters.conf import nova_scheduler
from nova_pmem_filters.core.rules import charging
from nova_pmem_filters.core.rules import decide
from nova_pmem_filters.core.rules import defaults as pmem_defaults
from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import nearmem
from nova_pmem_filters.core.rules import placement
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters.planner import errors
from nova_pmem_filters.planner.simulate import boots
from nova_pmem_filters.planner.simulate import groups as alike


BOOT = 'boot'
DELETE = 'delete'
EVENTS = (BOOT, DELETE)

# Why a boot found no host: the stage that removed the last candidates.
NO_RESOURCES = boots.NO_RESOURCES
REASONS = (NO_RESOURCES, decide.REJECT_CONFLICT, decide.REJECT_MODE,
           decide.REJECT_UNKNOWN, decide.REJECT_CACHE)

SECONDS_PER_DAY = 86400.0
# The most samples of the fleet's state a replay takes (274 years of daily
# samples): a trace that would take more is refused, not sampled without
# end.
MAX_SAMPLES = 100000
# The weighers, in the order of their sum.
WEIGHERS = boots.WEIGHERS
# The one NUMA cell a simulated host's bound instances are counted on.
HOST_CELL = boots.HOST_CELL


@dataclasses.dataclass(frozen=True)
class Scheduler:
    """The scheduler and Placement settings the simulator decides with.

    Defaults are those of Nova and of ``[pmem]``.
    """

    cache_overcommit_ratio: float = pmem_defaults.CACHE_OVERCOMMIT_RATIO
    default_flavor_modes: tuple = tuple(extra_specs.DEFAULTS.modes)
    default_hot_ratio: float = extra_specs.DEFAULTS.hot_ratio
    ram_weight_multiplier: float = nova_scheduler.default(
        nova_scheduler.FILTER_SCHEDULER, 'ram_weight_multiplier')
    cpu_weight_multiplier: float = nova_scheduler.default(
        nova_scheduler.FILTER_SCHEDULER, 'cpu_weight_multiplier')
    tier_weight_multiplier: float = pmem_defaults.TIER_WEIGHT_MULTIPLIER
    cache_headroom_weight_multiplier: float = (
        pmem_defaults.CACHE_HEADROOM_WEIGHT_MULTIPLIER)
    # Flavors request their hot RAM as CUSTOM_NEAR_MEMORY_MB.
    near_memory: bool = False

    @property
    def defaults(self):
        """What flavors get for the pmem: keys they leave out."""
        return extra_specs.Defaults.from_options(self)

    def multiplier(self, weigher):
        return {'ram': self.ram_weight_multiplier,
                'cpu': self.cpu_weight_multiplier,
                'tier': self.tier_weight_multiplier,
                'headroom': self.cache_headroom_weight_multiplier}[weigher]


@dataclasses.dataclass(frozen=True)
class HostKind:
    """Hosts of one configuration, as Nova and Placement see them."""

    name: str
    profile: profile.HostProfile
    vcpus: int
    memory_mb: int
    # Installed DRAM, for the CUSTOM_NEAR_MEMORY_MB inventory.
    dram_gb: float
    # Nova's defaults; a new compute's ratios are the initial_* ones.
    reserved_host_memory_mb: int = nova_scheduler.default(
        nova_scheduler.DEFAULT, 'reserved_host_memory_mb')
    ram_allocation_ratio: float = nova_scheduler.default(
        nova_scheduler.DEFAULT, 'initial_ram_allocation_ratio')
    cpu_allocation_ratio: float = nova_scheduler.default(
        nova_scheduler.DEFAULT, 'initial_cpu_allocation_ratio')
    count: int = 1


@dataclasses.dataclass(frozen=True)
class Flavor:
    name: str
    vcpus: int
    memory_mb: int
    extra_specs: dict

    def request(self, scheduler):
        """(PmemRequest or None, error) as the filters parse it."""
        return extra_specs.request_of(self.extra_specs, scheduler.defaults)

    def requested_near_memory_mb(self):
        """MB of near memory its extra specs request; None if none."""
        return placement.requested_near_memory(self.extra_specs)


@dataclasses.dataclass(frozen=True)
class Event:
    time: float
    kind: str
    instance: str
    flavor: str


class Fleet(object):
    """The hosts' inventories and usage, as arrays.

    A row per host, and the same hosts grouped by kind and usage
    (:class:`~nova_pmem_filters.planner.simulate.groups.Groups`): a boot
    is decided on the groups, whose rows hold the same numbers as their
    hosts' rows.
    """

    # What a host holds: the columns a claim or a release changes.
    USAGE = ('vcpu_used', 'mem_used', 'near_used', 'hot_used', 'ram_used',
             'bound_hot_used', 'bound_ram_used')
    # What a host is: the same for the hosts of a kind.
    FIXED = ('vcpus', 'cpu_ratio', 'memory_mb', 'reserved_mb', 'ram_ratio',
             'near_total', 'near_ratio', 'near_max_unit', 'cache_mb',
             'memory_mode', 'vcpu_cap', 'mem_cap', 'near_cap')

    def __init__(self, host_kinds, scheduler=None):
        if not host_kinds or not sum(k.count for k in host_kinds):
            raise errors.PlannerError('the fleet to simulate has no hosts')
        self.kinds = tuple(host_kinds)
        self.scheduler = scheduler or Scheduler()
        counts = np.array([k.count for k in self.kinds], dtype=int)
        self.kind = np.repeat(np.arange(len(self.kinds)), counts)
        # The hosts of kind k are the rows starts[k]:starts[k + 1].
        self._starts = np.concatenate(([0], np.cumsum(counts)))
        self.names = boots.HostNames(self.kinds)
        # Each column per kind, then per host: the same numbers, since the
        # capacities are the same arithmetic on either.
        ks = self.kinds
        per_kind = {
            'vcpus': np.array([k.vcpus for k in ks], dtype=float),
            'cpu_ratio': np.array([k.cpu_allocation_ratio for k in ks],
                                  dtype=float),
            'memory_mb': np.array([k.memory_mb for k in ks], dtype=float),
            'reserved_mb': np.array([k.reserved_host_memory_mb for k in ks],
                                    dtype=float),
            'ram_ratio': np.array([k.ram_allocation_ratio for k in ks],
                                  dtype=float)}
        near = [placement.near_memory_inventory(
            k.profile.mode, profile.near_memory_gb(
                k.profile.mode, k.dram_gb, k.profile.dram_cache_gb),
            cache_overcommit_ratio=self.scheduler.cache_overcommit_ratio,
            ram_allocation_ratio=k.ram_allocation_ratio) for k in ks]
        per_kind['near_total'] = np.array([n['total'] for n in near],
                                          dtype=float)
        per_kind['near_ratio'] = np.array([n['allocation_ratio']
                                           for n in near], dtype=float)
        per_kind['near_max_unit'] = np.array([n['max_unit'] for n in near],
                                             dtype=float)
        per_kind['cache_mb'] = np.array([k.profile.cache_capacity_mb(
            self.scheduler.cache_overcommit_ratio) or 0.0 for k in ks],
            dtype=float)
        per_kind['memory_mode'] = np.array([k.profile.tiered for k in ks],
                                           dtype=bool)
        # Placement's capacities.
        per_kind['vcpu_cap'] = placement.capacity(
            per_kind['vcpus'], 0, per_kind['cpu_ratio'])
        per_kind['mem_cap'] = placement.capacity(
            per_kind['memory_mb'], per_kind['reserved_mb'],
            per_kind['ram_ratio'])
        per_kind['near_cap'] = placement.capacity(
            per_kind['near_total'], 0, per_kind['near_ratio'])
        self._per_kind = per_kind
        for name in self.FIXED:
            setattr(self, name, per_kind[name][self.kind])
        n = len(self.kind)
        for name in self.USAGE:
            setattr(self, name, np.zeros(n))
        self._usage = tuple(getattr(self, name) for name in self.USAGE)
        self.instances = np.zeros(n, dtype=int)
        # Instances per kind; what the samples reuse.
        self._kind_instances = [0] * len(self.kinds)
        self._memo = {}
        self._requests = {}
        self._groups = alike.Groups(self)
        # Each host's charged near memory over its cache, kept up to date
        # where every host is tiered with a cache (pressure()).
        self._chargers = [charging.charger(k.profile) for k in ks]
        self._cache_of = [float(c) for c in per_kind['cache_mb']]
        self._pressure = None
        if all(k.profile.tiered and c > 0
               for k, c in zip(ks, self._cache_of) if k.count):
            self._pressure = np.zeros(n)

    def __len__(self):
        return len(self.kind)

    def hosts_of(self, k):
        """The rows of the hosts of kind ``k``, as a slice."""
        return slice(int(self._starts[k]), int(self._starts[k + 1]))

    def hot_ram(self, idx):
        """The :class:`nearmem.HotRam` of the hosts ``idx`` (an array).

        As the scheduler's ledger records it, the bound instances on
        :data:`HOST_CELL`.
        """
        return boots.hot_ram(self, idx)

    def charged_mb(self):
        """Near-memory MB each host's instances charge, as the rules do.

        Hot RAM, but on a ``cxl_kmem`` host whole RAM where the core says
        (:func:`~nova_pmem_filters.core.rules.charging.charged`).
        """
        charged = self.hot_used.copy()
        for k, kind in enumerate(self.kinds):
            if charging.charger(kind.profile) is not None:
                rows = self.hosts_of(k)
                charged[rows] = charging.charged(kind.profile,
                                                 self.hot_ram(rows)).total
        return charged

    def prepare(self, flavor):
        req = self._requests.get(flavor.name)
        if req is None or (req.flavor is not flavor and req.flavor != flavor):
            req = boots.Request(flavor, self.scheduler, self.kinds)
            self._requests[flavor.name] = req
        return req

    # -- the three stages, host by host -------------------------------------

    def candidates(self, req):
        """Placement: hosts whose inventories hold the flavor."""
        return boots.candidates(self, req)

    def filtered(self, req, ok):
        """The filters on the candidates: (passing, reason if none)."""
        return boots.filtered(self, req, ok)

    def weights(self, req, idx):
        """Nova's weighed sum over the passing hosts ``idx``."""
        if len(idx) <= 1:
            return np.zeros(len(idx))
        return boots.weights(self, self, req, idx)

    # -- a boot, on the groups of alike hosts -------------------------------

    def choose(self, flavor):
        """(host index or None, reason when None).

        The host Nova's weight handler puts first: the first host of the
        highest weight. Alike hosts weigh the same, so the stages run on the
        groups of alike hosts; the first host of the highest weight is then
        the first host of the groups of the highest weight.
        """
        req = self.prepare(flavor)
        groups = self._groups.table()
        passing, reason = boots.filtered(
            groups, req, boots.candidates(groups, req) & groups.live)
        idx = np.flatnonzero(passing)
        if not len(idx):
            return None, reason
        if len(idx) == 1:
            # One host, or alike hosts of equal weights.
            return int(groups.first[idx[0]]), None
        weights = boots.weights(self, groups, req, idx)
        # np.argmax's choice among hosts: the first NaN, if any, else the
        # first of the largest.
        nan = np.isnan(weights)
        best = nan if nan.any() else weights == weights.max()
        return int(groups.first[idx[best]].min()), None

    def claim(self, host, flavor):
        req = self.prepare(flavor)
        self._charge(host, req, 1)

    def release(self, host, flavor):
        self._charge(host, self.prepare(flavor), -1)

    def _charge(self, host, req, sign):
        # The host's usage is its group's key: the same floats as its rows,
        # and the same sums as the columns' (Python's and numpy's float64
        # additions are IEEE's).
        old = self._groups.key_of(host)
        usage = tuple(used if amount is None else used + sign * amount
                      for used, amount in zip(old[1:], req.amounts))
        for column, used in zip(self._usage, usage):
            column[host] = used
        self.instances[host] += sign
        self._kind_instances[old[0]] += sign
        if self._pressure is not None:
            self._pressure[host] = self._pressure_of(old[0], usage)
        self._groups.move(host, old[:1] + usage)

    def usable(self, flavor):
        """Hosts where one more VM of the flavor would be placed."""
        return self._usable_groups([flavor])[self._groups.of]

    def _usable_groups(self, flavors):
        """Per group: whether one more VM of any of ``flavors`` is placed."""
        groups = self._groups.table()
        live = groups.live
        usable = np.zeros(len(live), dtype=bool)
        for flavor in flavors:
            req = self.prepare(flavor)
            usable |= boots.filtered(
                groups, req, boots.candidates(groups, req) & live)[0]
        return usable

    # -- what a sample reads --------------------------------------------------

    def kind_instances(self, k):
        """Instances on the hosts of kind ``k``."""
        return self._kind_instances[k]

    def share(self, used, capacity, kind_ids):
        """``used`` over ``capacity`` summed over the hosts of ``kind_ids``.

        The sums numpy takes over those hosts' rows, to the last bit: the
        capacity's once, the usage from the groups where it is whole
        numbers
        (:func:`~nova_pmem_filters.planner.simulate.groups.exact_sum`),
        else from the rows.
        """
        key = (capacity, tuple(kind_ids))
        if key not in self._memo:
            self._memo[key] = getattr(self, capacity)[
                self._rows_of(kind_ids)].sum()
        groups = self._groups.table()
        sel = groups.live & self._kinds_in(kind_ids)[groups.kind]
        total = alike.exact_sum(getattr(groups, used)[sel],
                                self._groups.counts()[sel])
        if total is None:
            total = getattr(self, used)[self._rows_of(kind_ids)].sum()
        return _share(total, self._memo[key])

    def _kinds_in(self, kind_ids):
        """Per kind, whether it is one of ``kind_ids``."""
        key = ('kinds', tuple(kind_ids))
        if key not in self._memo:
            chosen = np.zeros(len(self.kinds), dtype=bool)
            chosen[list(kind_ids)] = True
            self._memo[key] = chosen
        return self._memo[key]

    def _rows_of(self, kind_ids):
        key = ('rows', tuple(kind_ids))
        if key not in self._memo:
            self._memo[key] = self._kinds_in(kind_ids)[self.kind]
        return self._memo[key]

    def pressure(self):
        """(mean, max) of charged near memory over the cache, tiered hosts.

        numpy's mean, over the hosts' rows in order, of
        ``charged_mb()[memory_mode] / cache_mb[memory_mode]``, and its max.
        On a fleet all tiered, with a cache on every host, each host's share
        is kept as its usage changes (:meth:`_charge`): a sample adds them
        up, and takes the max over the groups, which hold the same values.
        """
        if self._pressure is None:
            rows = self.memory_mode
            values = self.charged_mb()[rows] / self.cache_mb[rows]
            return float(values.mean()), float(values.max())
        groups = self._groups.table()
        rows = np.flatnonzero(groups.live)
        charged = groups.hot_used[rows]
        for k in set(groups.kind[rows]):
            if self._chargers[k] is not None:
                sel = groups.kind[rows] == k
                charged[sel] = charging.charged(
                    self.kinds[k].profile,
                    boots.hot_ram(groups, rows[sel])).total
        return (float(self._pressure.mean()),
                float((charged / groups.cache_mb[rows]).max()))

    def _pressure_of(self, k, usage):
        """A host's charged near memory over its cache, from its usage.

        The arithmetic of :meth:`charged_mb` and of the division, on one
        host's floats.
        """
        hot = usage[3]
        if self._chargers[k] is not None:
            hot = self._chargers[k](nearmem.HotRam(
                hot, {HOST_CELL: usage[5]}, usage[4],
                {HOST_CELL: usage[6]})).total
        return hot / self._cache_of[k]

    def fragmentation(self, flavors):
        """Free memory on hosts where no flavor of ``flavors`` is placed.

        As a share of all free memory; numpy's sums over the hosts' rows, to
        the last bit (:meth:`share`).
        """
        usable = self._usable_groups(flavors)
        groups = self._groups.table()
        stuck = groups.live & ~usable
        if not stuck.any():
            # 0 over the free memory, or 0 when there is none.
            return 0.0
        free = np.maximum(groups.mem_cap - groups.mem_used, 0.0)
        counts = self._groups.counts()
        total = alike.exact_sum(free[groups.live], counts[groups.live])
        part = alike.exact_sum(free[stuck], counts[stuck])
        if total is None or part is None:
            free = np.maximum(self.mem_cap - self.mem_used, 0.0)
            total = free.sum()
            part = free[~usable[self._groups.of]].sum()
        return float(part / total) if total else 0.0


@dataclasses.dataclass
class Result:
    """What a replay reached."""

    fleet: Fleet
    # Per boot: (instance, flavor, host name or None, reason or None).
    decisions: list
    # Sampled state over time, one row per sample.
    timeline: pd.DataFrame
    # {reason: {flavor: boots refused}}
    rejected: dict
    boots: int = 0
    deletes: int = 0


def replay(fleet, flavors, events, sample_days=1.0, progress=None):
    """Replay ``events`` on ``fleet``; returns a :class:`Result`.

    :param flavors: {name: :class:`Flavor`}.
    :param progress: called with the number of events done.
    """
    step = sample_days * SECONDS_PER_DAY
    _check_span(events, step, sample_days)
    placed = {}
    # Instances booted and not deleted, whether Nova placed them or not.
    running = set()
    decisions = []
    rejected = {r: {} for r in REASONS}
    samples = []
    next_sample = 0.0
    boots = deletes = refused = 0
    for count, event in enumerate(events, 1):
        while event.time >= next_sample:
            samples.append(_sample(fleet, flavors, next_sample, refused))
            next_sample += step
        flavor = flavors[event.flavor]
        if event.kind == BOOT:
            boots += 1
            if event.instance in running:
                raise errors.TraceError(
                    'event %d: instance %s boots again without a delete'
                    % (count, event.instance))
            running.add(event.instance)
            host, reason = fleet.choose(flavor)
            if host is None:
                refused += 1
                rejected[reason][flavor.name] = (
                    rejected[reason].get(flavor.name, 0) + 1)
                decisions.append((event.instance, flavor.name, None, reason))
            else:
                fleet.claim(host, flavor)
                placed[event.instance] = (host, flavor)
                decisions.append((event.instance, flavor.name,
                                  fleet.names[host], None))
        else:
            if event.instance not in running:
                raise errors.TraceError(
                    'event %d: instance %s is deleted but is not running'
                    % (count, event.instance))
            running.discard(event.instance)
            deletes += 1
            entry = placed.pop(event.instance, None)
            if entry is not None:
                fleet.release(*entry)
        if progress is not None:
            progress(count)
    end = events[-1].time if events else 0.0
    samples.append(_sample(fleet, flavors, max(end, next_sample - step),
                           refused))
    return Result(fleet=fleet, decisions=decisions,
                  timeline=pd.DataFrame(samples), rejected=rejected,
                  boots=boots, deletes=deletes)


def _check_span(events, step, sample_days):
    """Refuse a trace longer than :data:`MAX_SAMPLES` samples."""
    if not events or step <= 0:
        return
    limit = MAX_SAMPLES * step
    if events[-1].time < limit:
        return
    count, event = next((n, e) for n, e in enumerate(events, 1)
                        if e.time >= limit)
    raise errors.TraceError(
        'event %d (%s of instance %s at %g s) is %g days into the trace: '
        'at one sample every %g days, more than %d samples; shorten the '
        'trace or sample less often' % (
            count, event.kind, event.instance, event.time,
            event.time / SECONDS_PER_DAY, sample_days, MAX_SAMPLES))


def _share(used, total):
    total = float(total)
    return float(used) / total if total else None


def _sample(fleet, flavors, when, refused):
    counts = [fleet.kind_instances(i) for i in range(len(fleet.kinds))]
    row = {'day': when / SECONDS_PER_DAY, 'vms': sum(counts)}
    for kind, count in zip(fleet.kinds, counts):
        row['vms:%s' % kind.name] = count
    for mode in kinds.ALL_MODES:
        ids = [i for i, kind in enumerate(fleet.kinds)
               if kind.profile.mode == mode and kind.count]
        if not ids:
            continue
        row['memory_util:%s' % mode] = fleet.share('mem_used', 'mem_cap',
                                                   ids)
        row['vcpu_util:%s' % mode] = fleet.share('vcpu_used', 'vcpu_cap',
                                                 ids)
    if any(kind.profile.tiered and kind.count for kind in fleet.kinds):
        (row['cache_pressure_mean'],
         row['cache_pressure_max']) = fleet.pressure()
    # Free memory on hosts where no flavor of the mix fits any more.
    row['fragmentation'] = fleet.fragmentation(flavors.values())
    # Boots Nova refused so far (all reasons).
    row['rejected'] = refused
    return row
