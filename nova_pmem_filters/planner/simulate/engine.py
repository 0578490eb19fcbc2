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
host, so a placement costs a few vector operations whatever the fleet's
size.

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


BOOT = 'boot'
DELETE = 'delete'
EVENTS = (BOOT, DELETE)

# Why a boot found no host: the stage that removed the last candidates.
NO_RESOURCES = 'placement'
REASONS = (NO_RESOURCES, decide.REJECT_CONFLICT, decide.REJECT_MODE,
           decide.REJECT_UNKNOWN, decide.REJECT_CACHE)

SECONDS_PER_DAY = 86400.0
# The most samples of the fleet's state a replay takes (274 years of daily
# samples): a trace that would take more is refused, not sampled without
# end.
MAX_SAMPLES = 100000
# The weighers, in the order of their sum.
WEIGHERS = ('ram', 'cpu', 'tier', 'headroom')
# The one NUMA cell a simulated host's bound instances are counted on.
HOST_CELL = 0


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


class _Request(object):
    """What the simulator needs of one flavor, worked out once."""

    def __init__(self, flavor, scheduler, host_kinds):
        self.flavor = flavor
        self.request, self.error = flavor.request(scheduler)
        self.near_mb = flavor.requested_near_memory_mb() or 0
        if scheduler.near_memory and not self.near_mb and self.request:
            self.near_mb = placement.instance_near_memory_mb(
                flavor.memory_mb, self.request.hot_ratio)
        self.accounted = bool(self.near_mb)
        self.hot_mb = (self.request.hot_mb(flavor.memory_mb)
                       if self.request else 0.0)
        self.ram_mb = float(flavor.memory_mb) if self.request else 0.0
        # Nova binds its memory to the cells it fits it on: on a host of
        # one cell, all of it on that cell.
        self.binds = charging.binds_memory(flavor.extra_specs) is not None
        self.fit = ((lambda: {HOST_CELL: flavor.memory_mb})
                    if self.binds else None)
        # Per kind: the mode rule and the tier weigher's raw weight, from
        # the shared rules; the cache rule depends on each host's usage and
        # is decided per placement (Fleet.filtered).
        self.mode_ok, self.mode_reason = [], []
        self.tier = []
        for kind in host_kinds:
            prof = kind.profile
            if self.request is None:
                self.mode_ok.append(False)
                self.mode_reason.append(decide.REJECT_CONFLICT)
                self.tier.append(0.0)
                continue
            ok, reason = decide.mode_passes(self.request, prof)
            self.mode_ok.append(ok)
            self.mode_reason.append(reason)
            self.tier.append(decide.tier_score(self.request, prof))
        self.mode_ok = np.array(self.mode_ok, dtype=bool)
        self.tier = np.array(self.tier, dtype=float)


class Fleet(object):
    """The hosts' inventories and usage, as arrays."""

    def __init__(self, host_kinds, scheduler=None):
        if not host_kinds or not sum(k.count for k in host_kinds):
            raise errors.PlannerError('the fleet to simulate has no hosts')
        self.kinds = tuple(host_kinds)
        self.scheduler = scheduler or Scheduler()
        kind_of = []
        for i, kind in enumerate(self.kinds):
            kind_of.extend([i] * kind.count)
        self.kind = np.array(kind_of, dtype=int)
        self.names = []
        for kind in self.kinds:
            width = len(str(kind.count))
            self.names.extend('%s-%0*d' % (kind.name, width, n + 1)
                              for n in range(kind.count))

        def per_host(values, dtype=float):
            return np.array(values, dtype=dtype)[self.kind]

        ks = self.kinds
        self.vcpus = per_host([k.vcpus for k in ks])
        self.cpu_ratio = per_host([k.cpu_allocation_ratio for k in ks])
        self.memory_mb = per_host([k.memory_mb for k in ks])
        self.reserved_mb = per_host([k.reserved_host_memory_mb for k in ks])
        self.ram_ratio = per_host([k.ram_allocation_ratio for k in ks])
        near = [placement.near_memory_inventory(
            k.profile.mode, profile.near_memory_gb(
                k.profile.mode, k.dram_gb, k.profile.dram_cache_gb),
            cache_overcommit_ratio=self.scheduler.cache_overcommit_ratio,
            ram_allocation_ratio=k.ram_allocation_ratio) for k in ks]
        self.near_total = per_host([n['total'] for n in near])
        self.near_ratio = per_host([n['allocation_ratio'] for n in near])
        self.near_max_unit = per_host([n['max_unit'] for n in near])
        caps = [k.profile.cache_capacity_mb(
            self.scheduler.cache_overcommit_ratio) or 0.0 for k in ks]
        self.cache_mb = per_host(caps)
        self.memory_mode = per_host([k.profile.tiered for k in ks], bool)
        # Placement's capacities.
        self.vcpu_cap = placement.capacity(self.vcpus, 0, self.cpu_ratio)
        self.mem_cap = placement.capacity(self.memory_mb, self.reserved_mb,
                                          self.ram_ratio)
        self.near_cap = placement.capacity(self.near_total, 0,
                                           self.near_ratio)
        n = len(self.kind)
        self.vcpu_used = np.zeros(n)
        self.mem_used = np.zeros(n)
        self.near_used = np.zeros(n)
        self.hot_used = np.zeros(n)
        # Whole RAM, and the hot and whole RAM of the bound instances.
        self.ram_used = np.zeros(n)
        self.bound_hot_used = np.zeros(n)
        self.bound_ram_used = np.zeros(n)
        self.instances = np.zeros(n, dtype=int)
        self._requests = {}

    def __len__(self):
        return len(self.kind)

    def hot_ram(self, idx):
        """The :class:`nearmem.HotRam` of the hosts ``idx`` (an array).

        As the scheduler's ledger records it, the bound instances on
        :data:`HOST_CELL`.
        """
        return nearmem.HotRam(self.hot_used[idx],
                              {HOST_CELL: self.bound_hot_used[idx]},
                              self.ram_used[idx],
                              {HOST_CELL: self.bound_ram_used[idx]})

    def charged_mb(self):
        """Near-memory MB each host's instances charge, as the rules do.

        Hot RAM, but on a ``cxl_kmem`` host whole RAM where the core says
        (:func:`~nova_pmem_filters.core.rules.charging.charged`).
        """
        charged = self.hot_used.copy()
        for k, kind in enumerate(self.kinds):
            idx = np.flatnonzero(self.kind == k)
            charged[idx] = charging.charged(kind.profile,
                                            self.hot_ram(idx)).total
        return charged

    def prepare(self, flavor):
        req = self._requests.get(flavor.name)
        if req is None or req.flavor != flavor:
            req = _Request(flavor, self.scheduler, self.kinds)
            self._requests[flavor.name] = req
        return req

    # -- the three stages --------------------------------------------------

    def candidates(self, req):
        """Placement: hosts whose inventories hold the flavor."""
        f = req.flavor
        ok = ((self.vcpu_used + f.vcpus <= self.vcpu_cap)
              & (f.vcpus <= self.vcpus)
              & (self.mem_used + f.memory_mb <= self.mem_cap)
              & (f.memory_mb <= self.memory_mb))
        if req.near_mb:
            ok &= ((self.near_used + req.near_mb <= self.near_cap)
                   & (req.near_mb <= self.near_max_unit))
        return ok

    def filtered(self, req, ok):
        """The filters on the candidates: (passing, reason if none)."""
        if not ok.any():
            return ok, NO_RESOURCES
        if req.request is None or decide.flavor_conflict(req.request):
            return ok & False, decide.REJECT_CONFLICT
        after_mode = ok & req.mode_ok[self.kind]
        if not after_mode.any():
            reasons = {req.mode_reason[k] for k in set(self.kind[ok])}
            return after_mode, (decide.REJECT_MODE
                                if decide.REJECT_MODE in reasons
                                else decide.REJECT_UNKNOWN)
        # PmemCacheFilter, kind by kind on the hosts' hot RAM.
        passing = after_mode.copy()
        reasons = set()
        for k in set(self.kind[after_mode]):
            idx = np.flatnonzero(after_mode & (self.kind == k))
            passes, reason, _view = decide.cache_check(
                self.kinds[k].profile, self.scheduler.cache_overcommit_ratio,
                self.hot_ram(idx), req.request, req.flavor.memory_mb,
                fit=req.fit, accounted=req.accounted)
            passes = np.broadcast_to(passes, idx.shape)
            passing[idx[~passes]] = False
            if not passes.all():
                reasons.add(reason)
        if not passing.any():
            return passing, (decide.REJECT_CACHE
                             if decide.REJECT_CACHE in reasons
                             else decide.REJECT_UNKNOWN)
        return passing, None

    def weights(self, req, idx):
        """Nova's weighed sum over the passing hosts ``idx``."""
        sched = self.scheduler
        total = np.zeros(len(idx))
        if len(idx) <= 1:
            return total
        for weigher in WEIGHERS:
            if weigher == 'ram':
                raw = (self.memory_mb[idx] - self.reserved_mb[idx]
                       - self.mem_used[idx])
                norm = _normalize(raw, low=0.0)
            elif weigher == 'cpu':
                raw = (self.vcpus[idx] * self.cpu_ratio[idx]
                       - self.vcpu_used[idx])
                norm = _normalize(raw, low=0.0)
            elif weigher == 'tier':
                norm = req.tier[self.kind[idx]]
            else:
                norm = np.zeros(len(idx))
                if req.request is not None:
                    mm = self.memory_mode[idx]
                    for k in set(self.kind[idx[mm]]):
                        sel = mm & (self.kind[idx] == k)
                        norm[sel] = decide.headroom_score(
                            self.kinds[k].profile,
                            sched.cache_overcommit_ratio,
                            self.hot_ram(idx[sel]), req.request,
                            req.flavor.memory_mb, fit=req.fit)
            total = total + sched.multiplier(weigher) * norm
        return total

    def choose(self, flavor):
        """(host index or None, reason when None)."""
        req = self.prepare(flavor)
        passing, reason = self.filtered(req, self.candidates(req))
        idx = np.flatnonzero(passing)
        if not len(idx):
            return None, reason
        return int(idx[int(np.argmax(self.weights(req, idx)))]), None

    def claim(self, host, flavor):
        req = self.prepare(flavor)
        self._charge(host, req, 1)

    def release(self, host, flavor):
        self._charge(host, self.prepare(flavor), -1)

    def _charge(self, host, req, sign):
        self.vcpu_used[host] += sign * req.flavor.vcpus
        self.mem_used[host] += sign * req.flavor.memory_mb
        self.near_used[host] += sign * req.near_mb
        self.hot_used[host] += sign * req.hot_mb
        self.ram_used[host] += sign * req.ram_mb
        if req.binds:
            self.bound_hot_used[host] += sign * req.hot_mb
            self.bound_ram_used[host] += sign * req.ram_mb
        self.instances[host] += sign

    def usable(self, flavor):
        """Hosts where one more VM of the flavor would be placed."""
        req = self.prepare(flavor)
        return self.filtered(req, self.candidates(req))[0]


def _normalize(raw, low=None, high=None):
    """``nova.weights.normalize`` on an array.

    RAMWeigher and CPUWeigher set ``minval = 0``: their weights are the
    free amounts, raised to 0 as ``weigh_objects`` does, over the largest.
    """
    if low is not None:
        raw = np.maximum(raw, low)
    low = float(raw.min()) if low is None else float(low)
    high = float(raw.max()) if high is None else float(high)
    if low == high:
        return np.zeros(len(raw))
    return (raw - low) / (high - low)


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
    row = {'day': when / SECONDS_PER_DAY,
           'vms': int(fleet.instances.sum())}
    for i, kind in enumerate(fleet.kinds):
        row['vms:%s' % kind.name] = int(
            fleet.instances[fleet.kind == i].sum())
    for mode in kinds.ALL_MODES:
        sel = np.array([k.profile.mode == mode for k in fleet.kinds])[
            fleet.kind]
        if not sel.any():
            continue
        row['memory_util:%s' % mode] = _share(fleet.mem_used[sel].sum(),
                                              fleet.mem_cap[sel].sum())
        row['vcpu_util:%s' % mode] = _share(fleet.vcpu_used[sel].sum(),
                                            fleet.vcpu_cap[sel].sum())
    mm = fleet.memory_mode
    if mm.any():
        pressure = fleet.charged_mb()[mm] / fleet.cache_mb[mm]
        row['cache_pressure_mean'] = float(pressure.mean())
        row['cache_pressure_max'] = float(pressure.max())
    # Free memory on hosts where no flavor of the mix fits any more.
    free = np.maximum(fleet.mem_cap - fleet.mem_used, 0.0)
    usable = np.zeros(len(fleet), dtype=bool)
    for flavor in flavors.values():
        usable |= fleet.usable(flavor)
    total_free = free.sum()
    row['fragmentation'] = (float(free[~usable].sum() / total_free)
                            if total_free else 0.0)
    # Boots Nova refused so far (all reasons).
    row['rejected'] = refused
    return row
