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
"""The scheduling simulator: what Nova really packs, event by event.

A trace of VM boots and deletes is replayed on a fleet. Each boot is placed
as Nova places it, with ``host_subset_size = 1``:

1. Placement's allocation candidates: every host whose inventories hold the
   flavor (``VCPU``, ``MEMORY_MB`` and, when the flavor requests it,
   ``CUSTOM_NEAR_MEMORY_MB``): ``used + amount <= (total - reserved) x
   allocation_ratio`` and ``amount <= max_unit``;
2. the filters PmemModeFilter and PmemCacheFilter, through the rules of
   :mod:`nova_pmem_filters.core.decide` (the functions the filters
   themselves call), with the flavor defaults of ``[pmem]``
   (:class:`nova_pmem_filters.core.extra_specs.Defaults`);
3. the weighers in Nova's order and arithmetic: RAMWeigher (free RAM),
   CPUWeigher (free vCPUs), PmemTierWeigher and PmemCacheHeadroomWeigher,
   each normalised as ``nova.weights.normalize`` does and multiplied by its
   multiplier; the first host of the highest weight wins.

The state of the fleet is a set of arrays, one entry per host, so a
placement costs a few vector operations whatever the fleet's size.

Hosts have no NUMA cells here: :func:`run` refuses workloads with
``numa_nodes`` (``hw:numa_nodes`` flavors) rather than replay them
host-wide.

This module imports nothing from Nova.
"""

import csv
import dataclasses
import math

import numpy as np
import pandas as pd

from nova_pmem_filters.core import cache
from nova_pmem_filters.core import decide
from nova_pmem_filters.core import extra_specs
from nova_pmem_filters.core import kinds
from nova_pmem_filters.core import placement
from nova_pmem_filters.core import profile

from planner import errors

BOOT = 'boot'
DELETE = 'delete'
EVENTS = (BOOT, DELETE)

# Why a boot found no host: the stage that removed the last candidates.
NO_RESOURCES = 'placement'
REASONS = (NO_RESOURCES, decide.REJECT_CONFLICT, decide.REJECT_MODE,
           decide.REJECT_UNKNOWN, decide.REJECT_CACHE)

SECONDS_PER_DAY = 86400.0
# The weighers, in the order of their sum.
WEIGHERS = ('ram', 'cpu', 'tier', 'headroom')


@dataclasses.dataclass(frozen=True)
class Scheduler:
    """The scheduler and Placement settings the simulator decides with.

    Defaults are those of Nova and of ``[pmem]``.
    """

    cache_overcommit_ratio: float = 1.0
    default_flavor_modes: tuple = tuple(extra_specs.DEFAULTS.modes)
    default_hot_ratio: float = extra_specs.DEFAULTS.hot_ratio
    ram_weight_multiplier: float = 1.0
    cpu_weight_multiplier: float = 1.0
    tier_weight_multiplier: float = 10.0
    cache_headroom_weight_multiplier: float = 1.0
    # Flavors request their hot RAM as CUSTOM_NEAR_MEMORY_MB.
    near_memory: bool = False

    @property
    def defaults(self):
        """What flavors get for the pmem: keys they leave out."""
        return extra_specs.Defaults(modes=self.default_flavor_modes,
                                    hot_ratio=self.default_hot_ratio)

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
    reserved_host_memory_mb: int = 512
    ram_allocation_ratio: float = 1.0
    cpu_allocation_ratio: float = 4.0
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

    def near_memory_mb(self):
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
        self.near_mb = flavor.near_memory_mb() or 0
        if scheduler.near_memory and not self.near_mb and self.request:
            self.near_mb = placement.near_memory_mb(flavor.memory_mb,
                                                    self.request.hot_ratio)
        self.accounted = bool(self.near_mb)
        self.hot_mb = (self.request.hot_mb(flavor.memory_mb)
                       if self.request else 0.0)
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
        self.vcpu_cap = self.vcpus * self.cpu_ratio
        self.mem_cap = (self.memory_mb - self.reserved_mb) * self.ram_ratio
        self.near_cap = self.near_total * self.near_ratio
        n = len(self.kind)
        self.vcpu_used = np.zeros(n)
        self.mem_used = np.zeros(n)
        self.near_used = np.zeros(n)
        self.hot_used = np.zeros(n)
        self.instances = np.zeros(n, dtype=int)
        self._requests = {}

    def __len__(self):
        return len(self.kind)

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
                cache.HotRam(self.hot_used[idx]), req.request,
                req.flavor.memory_mb, accounted=req.accounted)
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
                            cache.HotRam(self.hot_used[idx[sel]]),
                            req.request, req.flavor.memory_mb)
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


# --- traces ---------------------------------------------------------------

def synthetic(mix, days=365.0, lifetime_days=30.0, seed=0, burst=None):
    """A seeded trace of boots and deletes.

    :param mix: {flavor name: VMs wanted in steady state}; each flavor's
        boots arrive as a Poisson process at ``VMs / lifetime`` per day
        (Little's law) and each VM lives an exponential time of mean
        ``lifetime_days``.
    :returns: events ordered by time (seconds), deletes before boots at the
        same time.
    """
    if days <= 0 or lifetime_days <= 0:
        raise errors.PlannerError('a synthetic trace needs days and '
                                  'lifetime above 0')
    rng = np.random.default_rng(seed)
    events = []
    serial = 0
    for name in sorted(mix):
        wanted = mix[name]
        if wanted <= 0:
            continue
        rate = wanted / lifetime_days
        count = rng.poisson(rate * days)
        starts = np.sort(rng.uniform(0.0, days, count))
        lives = rng.exponential(lifetime_days, count)
        for start, life in zip(starts, lives):
            serial += 1
            uuid = 'vm-%06d' % serial
            events.append(Event(start * SECONDS_PER_DAY, BOOT, uuid, name))
            if start + life < days:
                events.append(Event((start + life) * SECONDS_PER_DAY,
                                    DELETE, uuid, name))
    events.sort(key=lambda e: (e.time, e.kind != DELETE, e.instance))
    return events


CSV_FIELDS = ('time', 'event', 'instance', 'flavor')


def read_csv(path, flavors):
    """Events from a CSV file with the columns of ``CSV_FIELDS``.

    ``time`` is in seconds; ``event`` boot or delete. A line that cannot be
    read is named with its number.
    """
    events = []
    try:
        handle = open(path, newline='')
    except OSError as exc:
        raise errors.TraceError('%s: cannot read the trace: %s'
                                % (path, exc.strerror or exc))
    with handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None or [h.strip() for h in header] != list(CSV_FIELDS):
            raise errors.TraceError('%s: line 1: expected the header %s'
                                    % (path, ','.join(CSV_FIELDS)))
        last = -math.inf
        for row in reader:
            line = reader.line_num
            if not row or not ''.join(row).strip():
                continue
            if len(row) != len(CSV_FIELDS):
                raise errors.TraceError(
                    '%s: line %d: expected %d fields (%s), '
                    'got %d' % (path, line, len(CSV_FIELDS),
                                ','.join(CSV_FIELDS), len(row)))
            text, kind, uuid, flavor = (v.strip() for v in row)
            try:
                when = float(text)
            except ValueError:
                when = math.nan
            if not math.isfinite(when) or when < 0:
                raise errors.TraceError(
                    '%s: line %d: time %r is not a number of '
                    'seconds, 0 or more' % (path, line, text))
            if when < last:
                raise errors.TraceError(
                    '%s: line %d: time %s is before the line '
                    'above' % (path, line, text))
            if kind not in EVENTS:
                raise errors.TraceError(
                    '%s: line %d: event %r is not one of %s'
                    % (path, line, kind, ', '.join(EVENTS)))
            if not uuid:
                raise errors.TraceError(
                    '%s: line %d: no instance' % (path, line))
            if flavor not in flavors:
                raise errors.TraceError(
                    '%s: line %d: unknown flavor %r (known: '
                    '%s)' % (path, line, flavor,
                             ', '.join(sorted(flavors))))
            last = when
            events.append(Event(when, kind, uuid, flavor))
    return events


def write_csv(events, handle):
    writer = csv.writer(handle, lineterminator='\n')
    writer.writerow(CSV_FIELDS)
    for e in events:
        writer.writerow(('%.3f' % e.time, e.kind, e.instance, e.flavor))


# --- replay ---------------------------------------------------------------

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
    placed = {}
    decisions = []
    rejected = {r: {} for r in REASONS}
    samples = []
    step = sample_days * SECONDS_PER_DAY
    next_sample = 0.0
    boots = deletes = 0
    for count, event in enumerate(events, 1):
        while event.time >= next_sample:
            samples.append(_sample(fleet, flavors, next_sample))
            next_sample += step
        flavor = flavors[event.flavor]
        if event.kind == BOOT:
            boots += 1
            if event.instance in placed:
                raise errors.TraceError(
                    'instance %s boots twice' % event.instance)
            host, reason = fleet.choose(flavor)
            if host is None:
                rejected[reason][flavor.name] = (
                    rejected[reason].get(flavor.name, 0) + 1)
                decisions.append((event.instance, flavor.name, None, reason))
            else:
                fleet.claim(host, flavor)
                placed[event.instance] = (host, flavor)
                decisions.append((event.instance, flavor.name,
                                  fleet.names[host], None))
        else:
            deletes += 1
            entry = placed.pop(event.instance, None)
            if entry is not None:
                fleet.release(*entry)
        if progress is not None:
            progress(count)
    end = events[-1].time if events else 0.0
    samples.append(_sample(fleet, flavors, max(end, next_sample - step)))
    return Result(fleet=fleet, decisions=decisions,
                  timeline=pd.DataFrame(samples), rejected=rejected,
                  boots=boots, deletes=deletes)


def _share(used, total):
    total = float(total)
    return float(used) / total if total else None


def _sample(fleet, flavors, when):
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
        pressure = fleet.hot_used[mm] / fleet.cache_mb[mm]
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
    return row


# --- from a scenario -------------------------------------------------------

def flavors_of(scen):
    """A flavor per workload of the scenario, with its extra specs."""
    return {w.name: Flavor(name=w.name, vcpus=int(w.vcpus),
                           memory_mb=w.ram_mb, extra_specs=dict(w.extra_specs))
            for w in scen.workloads.values()}


def kinds_of_configs(scen, nodes):
    """Host kinds of ``nodes`` ({configuration: count}) of the scenario.

    Each kind gets the Nova settings ``nova-config`` prints for its
    configuration: ``reserved_host_memory_mb``, ``ram_allocation_ratio``
    and ``cpu_allocation_ratio``.
    """
    # Imported here: nova-config's module reads the whole model.
    from planner import model
    from planner import novaconfig
    found = []
    for name, count in nodes.items():
        if name not in scen.configs:
            raise errors.PlannerError('unknown configuration %r (known: %s)'
                                      % (name, ', '.join(scen.configs)))
        if count <= 0:
            continue
        config = scen.configs[name]
        node = model.node(config, scen.policies)
        reserved, ratio = novaconfig.compute_memory(scen, name)
        found.append(HostKind(
            name=name, profile=node.profile, vcpus=int(node.vcpus),
            memory_mb=int(round(node.visible_memory_gb * profile.MB_PER_GB)),
            dram_gb=float(config.dram_gb), reserved_host_memory_mb=reserved,
            ram_allocation_ratio=ratio,
            cpu_allocation_ratio=float(scen.policies.cpu_overcommit),
            count=int(count)))
    return found


def kinds_of_profiles(scen, directory, vcpus=None):
    """Host kinds of the discovered host profiles in ``directory``.

    Hosts get the scenario's policies as Nova settings (reserved memory,
    memory cap as ``ram_allocation_ratio``, CPU overcommit), and the
    profile the scheduler reads from their metadata (the core's).

    :param vcpus: vCPUs of the hosts whose profile does not say.
    """
    from planner import fleet as fleet_mod
    found = []
    for kind in fleet_mod.load(directory):
        if kind.vcpus is None and vcpus is None:
            raise errors.PlannerError(
                '%s: host %s reports no vcpus: Placement\'s VCPU '
                'inventory cannot be simulated without them (give '
                '--host-vcpus N)' % (directory, kind.hosts[0]))
        # A profile without dram_gb: guest RAM is the DRAM where it is not
        # tiered, and tiered hosts' near memory is their cache.
        dram = (kind.dram_gb if kind.dram_gb is not None
                else kind.visible_memory_gb)
        found.append(HostKind(
            name=kind.name, profile=kind.node().profile,
            vcpus=int(vcpus if kind.vcpus is None else kind.vcpus),
            memory_mb=int(round(kind.visible_memory_gb * profile.MB_PER_GB)),
            dram_gb=float(dram),
            reserved_host_memory_mb=int(round(
                scen.policies.host_reserve_gb * profile.MB_PER_GB)),
            ram_allocation_ratio=float(scen.policies.memory_cap),
            cpu_allocation_ratio=float(scen.policies.cpu_overcommit),
            count=len(kind.hosts)))
    return found


def model_density(scen, config_name, mix):
    """VMs per node of a configuration by the per-node model, for a mix.

    Each workload's single-flavor density d_w (``compare``'s figure) taken
    as a share of a node: n VMs of the mix's shares p_w fit while
    sum(p_w n / d_w) <= 1. Workloads the configuration cannot run are left
    out of its mix.
    """
    from planner import model
    config = scen.configs.get(config_name)
    if config is None:
        return None
    node = model.node(config, scen.policies)
    weights = {}
    for name, wanted in mix.items():
        workload = scen.workloads[name]
        if wanted <= 0 or not workload.request.allows(config.mode):
            continue
        vms, _binding = model.density(node, workload, scen.policies)
        if vms:
            weights[name] = (wanted, vms)
    total = sum(w for w, _d in weights.values())
    if not total:
        return None
    return 1.0 / sum((w / total) / d for w, d in weights.values())


SUMMARY_COLUMNS = (
    'kind', 'mode', 'nodes', 'vms_mean', 'vms_peak', 'density_mean',
    'model_density', 'planned_vms', 'memory_util', 'vcpu_util',
    'cache_pressure_mean', 'cache_pressure_max', 'fragmentation', 'boots',
    'rejected', 'rejected_by')
SHORT_COLUMNS = ('kind', 'nodes', 'vms_mean', 'density_mean',
                 'model_density', 'planned_vms', 'memory_util',
                 'cache_pressure_max', 'rejected')


def _mean(frame, column):
    if column not in frame or frame[column].isna().all():
        return None
    return round(float(frame[column].mean()), 4)


def summary(result, scen=None, mix=None, planned=None, settle=0.5):
    """Rows of the report: per host kind and the total.

    Means are over the samples after the first ``settle`` share of the
    trace (the fleet fills up before it).
    """
    timeline = result.timeline
    late = timeline[timeline['day'] >= settle * timeline['day'].max()]
    fleet = result.fleet
    rows = []
    for i, kind in enumerate(fleet.kinds):
        column = 'vms:%s' % kind.name
        mode = kind.profile.mode
        vms_mean = float(late[column].mean())
        row = {'kind': kind.name, 'mode': mode, 'nodes': kind.count,
               'vms_mean': round(vms_mean, 1),
               'vms_peak': int(timeline[column].max()),
               'density_mean': round(vms_mean / kind.count, 3),
               'model_density': None, 'planned_vms': None}
        if scen is not None and mix:
            density = model_density(scen, kind.name, mix)
            row['model_density'] = (None if density is None
                                    else round(density, 3))
        if planned is not None:
            row['planned_vms'] = planned.get(kind.name)
        sel = fleet.kind == i
        row['memory_util'] = round(float(
            (fleet.mem_used[sel].sum()) / fleet.mem_cap[sel].sum()), 4)
        row['vcpu_util'] = round(float(
            fleet.vcpu_used[sel].sum() / fleet.vcpu_cap[sel].sum()), 4)
        if kind.profile.tiered:
            pressure = fleet.hot_used[sel] / fleet.cache_mb[sel]
            row['cache_pressure_mean'] = round(float(pressure.mean()), 4)
            row['cache_pressure_max'] = round(float(pressure.max()), 4)
        rows.append(row)
    rejected = {reason: sum(by.values())
                for reason, by in result.rejected.items() if by}
    total = {
        'kind': 'total', 'nodes': len(fleet),
        'vms_mean': round(float(late['vms'].mean()), 1),
        'vms_peak': int(timeline['vms'].max()),
        'density_mean': round(float(late['vms'].mean()) / len(fleet), 3),
        'planned_vms': (sum(v for v in planned.values() if v)
                        if planned else None),
        'memory_util': round(float(fleet.mem_used.sum()
                                   / fleet.mem_cap.sum()), 4),
        'vcpu_util': round(float(fleet.vcpu_used.sum()
                                 / fleet.vcpu_cap.sum()), 4),
        'cache_pressure_mean': _mean(late, 'cache_pressure_mean'),
        'cache_pressure_max': (None if 'cache_pressure_max' not in timeline
                               else round(float(
                                   timeline['cache_pressure_max'].max()),
                                   4)),
        'fragmentation': _mean(late, 'fragmentation'),
        'boots': result.boots,
        'rejected': sum(rejected.values()),
        'rejected_by': ', '.join('%s=%d' % item
                                 for item in sorted(rejected.items())),
    }
    if scen is not None and mix:
        # Over the whole fleet only when every kind has a model figure.
        if all(r['model_density'] is not None for r in rows):
            total['model_density'] = round(sum(
                r['model_density'] * r['nodes'] for r in rows)
                / len(fleet), 3)
    rows.append(total)
    return [{c: r.get(c) for c in SUMMARY_COLUMNS} for r in rows]


def plot_png(draw, *args, **kwargs):
    """PNG bytes of a matplotlib figure ``draw(fig, axes)`` fills in.

    :param args, kwargs: for ``pyplot.subplots``.
    """
    import io

    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot

    fig, axes = pyplot.subplots(*args, dpi=100, **kwargs)
    try:
        draw(fig, axes)
        fig.tight_layout()
        out = io.BytesIO()
        fig.savefig(out, format='png', metadata={'Software': None})
        return out.getvalue()
    finally:
        pyplot.close(fig)


def chart_png(timeline, title):
    """A chart of the timeline: VMs, utilisation and cache pressure."""
    return plot_png(lambda fig, axes: _draw_timeline(timeline, title, *axes),
                    2, 1, figsize=(9, 6.5), sharex=True)


def _draw_timeline(timeline, title, top, bottom):
    for column in [c for c in timeline if c.startswith('vms:')]:
        top.plot(timeline['day'], timeline[column],
                 label=column.split(':', 1)[1])
    top.plot(timeline['day'], timeline['vms'], label='all', color='k')
    top.set_ylabel('VMs running')
    top.set_title(title)
    top.legend(loc='lower right', fontsize='small')
    for column in timeline:
        if column.startswith(('memory_util:', 'vcpu_util:')) or \
                column in ('cache_pressure_mean', 'cache_pressure_max',
                           'fragmentation'):
            bottom.plot(timeline['day'], timeline[column], label=column)
    bottom.set_ylabel('share')
    bottom.set_xlabel('day')
    bottom.set_ylim(0, 1.05)
    bottom.legend(loc='lower right', fontsize='x-small', ncol=2)


@dataclasses.dataclass
class Run:
    """A simulation of a scenario, with what it is compared with."""

    result: Result
    rows: list
    events: list
    nodes: dict
    planned: dict


def check_no_numa(scen, names):
    """Refuse NUMA-bound workloads: the simulator has no host cells.

    Its hosts are whole inventories, as Placement and PmemCacheFilter see
    them; NUMATopologyFilter's per-cell fit is not modelled, and a
    host-wide replay of ``hw:numa_nodes`` flavors would over-admit.
    """
    for name in dict.fromkeys(names):
        workload = scen.workloads.get(name)
        if workload is not None and workload.numa_nodes:
            raise errors.PlannerError(
                'workload %s has numa_nodes: %d: the simulator models hosts '
                'as a whole, not per NUMA cell, and cannot replay '
                'NUMA-bound VMs; leave it out of the mix and the trace'
                % (name, workload.numa_nodes))


def planned_fleet(scen, mix, time_limit=60.0):
    """The optimiser's fleet for ``mix``: ({config: nodes}, {config: VMs})."""
    from planner import optimize
    problem = optimize.build(scen, demand=mix)
    plan = optimize.solve(problem, scen=scen, time_limit=time_limit)
    nodes, vms = {}, {}
    for (config, _period), count in plan.nodes.items():
        if count:
            nodes[config] = nodes.get(config, 0) + count
            vms[config] = (vms.get(config, 0)
                           + sum(plan.vms[config, _period].values()))
    return nodes, vms


def run(scen, nodes=None, fleet_dir=None, events=None, mix=None, days=365.0,
        lifetime_days=30.0, seed=0, scheduler=None, sample_days=1.0,
        time_limit=60.0, progress=None, host_vcpus=None):
    """Simulate a scenario's fleet under a trace.

    :param nodes: {configuration: nodes}; default: the optimiser's fleet
        for the mix (whose VMs per configuration become ``planned_vms``).
    :param fleet_dir: discovered host profiles instead of ``nodes``.
    :param host_vcpus: vCPUs of profiles that do not report them.
    :param events: the trace; default a synthetic one of ``days`` for the
        mix (default: the scenario's first demand period).
    """
    if mix is None:
        if not scen.demand:
            raise errors.PlannerError(
                'scenario %s gives no demand: add a demand section or give '
                '--mix WORKLOAD=VMS' % scen.name)
        mix = dict(scen.demand[0].vms)
    for name in mix:
        if name not in scen.workloads:
            raise errors.PlannerError('unknown workload %r (known: %s)'
                                      % (name, ', '.join(scen.workloads)))
    check_no_numa(scen, [name for name, wanted in mix.items() if wanted])
    if events is not None:
        check_no_numa(scen, [e.flavor for e in events])
    planned = None
    if fleet_dir is not None:
        host_kinds = kinds_of_profiles(scen, fleet_dir, vcpus=host_vcpus)
    else:
        if nodes is None:
            nodes, planned = planned_fleet(scen, mix, time_limit)
        host_kinds = kinds_of_configs(scen, nodes)
    fleet = Fleet(host_kinds, scheduler)
    flavors = flavors_of(scen)
    if events is None:
        events = synthetic(mix, days=days, lifetime_days=lifetime_days,
                           seed=seed)
    result = replay(fleet, flavors, events, sample_days=sample_days,
                    progress=progress)
    return Run(result=result, rows=summary(result, scen, mix, planned),
               events=events, nodes=nodes, planned=planned)
