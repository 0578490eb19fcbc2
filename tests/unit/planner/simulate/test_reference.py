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
"""The engine places every boot where weighing every host would.

The engine decides a boot on groups of alike hosts and keeps each group's
first host as hosts come and go. The oracle here is the straightforward
algorithm the engine replaced, written again host by host in plain Python:
Placement's inequalities, the filters' rules, each weigher normalised over
the passing hosts, summed in Nova's order, and the first host of the
highest weight. Seeded traces on small fleets of several alike hosts per
kind (so that ties are the rule, not the exception) must get the same
host, or the same reason for none, boot by boot, and the same timeline.
"""

import hypothesis
from hypothesis import strategies as st
import numpy as np
import pandas as pd
import testtools

from nova_pmem_filters.core.rules import charging
from nova_pmem_filters.core.rules import decide
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import nearmem
from nova_pmem_filters.core.rules import placement
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters.planner import simulate
from nova_pmem_filters.planner.simulate import engine
from tests.unit.planner.simulate import base

GB = profile.MB_PER_GB

# (name, metadata or None for an unknown profile, vcpus, RAM GB, reserved
# MB, RAM ratio, CPU ratio). 1.3333 makes Placement's memory capacity a
# fraction, so that the timeline's sums of free memory are not whole.
KINDS = (
    ('dram', {profile.MODE_KEY: kinds.DRAM}, 16, 96, 4096, 1.0, 4.0),
    ('mm', {profile.MODE_KEY: kinds.MEMORY_MODE,
            profile.DRAM_CACHE_KEY: '24'}, 16, 128, 5000, 1.3333, 4.0),
    ('ad', {profile.MODE_KEY: kinds.APP_DIRECT}, 8, 64, 2048, 1.0, 2.0),
    ('kmem-on', profile.metadata(kinds.CXL_KMEM, 32, kernel_tiering='on'),
     16, 160, 4096, 1.0, 4.0),
    ('kmem-off', profile.metadata(kinds.CXL_KMEM, 32,
                                  kernel_tiering='off'),
     16, 160, 4096, 1.0, 4.0),
    ('odd', None, 16, 96, 4096, 1.0, 4.0),
)

FLAVORS = {
    'small': (2, 8, {}),
    # A hot ratio that is no sum of powers of two: hot MB not whole.
    'hot': (4, 16, {'pmem:hot_ratio': '0.3', 'pmem:priority': 'low'}),
    'latency': (4, 12, {'pmem:modes': 'dram,app_direct',
                        'pmem:priority': 'high'}),
    # Bound memory (huge pages): whole RAM charged on kmem hosts.
    'pinned': (2, 8, {'hw:mem_page_size': 'large',
                      'pmem:hot_ratio': '0.5'}),
    'tiered': (2, 10, {'pmem:modes': 'memory_mode,cxl_kmem',
                       'pmem:hot_ratio': '0.75'}),
    # vPMEM outside App Direct: no host passes.
    'conflict': (1, 4, {'pmem:modes': 'dram', 'hw:pmem': 'SMALL'}),
}


def host_kinds(counts):
    found = []
    for (name, md, vcpus, ram_gb, reserved, ram_ratio, cpu_ratio), count \
            in zip(KINDS, counts):
        prof = (profile.HostProfile(problem='no mode') if md is None
                else profile.from_metadata([md]))
        found.append(simulate.HostKind(
            name=name, profile=prof, vcpus=vcpus, memory_mb=ram_gb * GB,
            dram_gb=ram_gb, reserved_host_memory_mb=reserved,
            ram_allocation_ratio=ram_ratio, cpu_allocation_ratio=cpu_ratio,
            count=count))
    return found


class Host(object):
    """One host, as plain numbers."""

    def __init__(self, kind, scheduler):
        self.kind = kind
        self.prof = kind.profile
        ratio = scheduler.cache_overcommit_ratio
        near = placement.near_memory_inventory(
            self.prof.mode, profile.near_memory_gb(
                self.prof.mode, kind.dram_gb, self.prof.dram_cache_gb),
            cache_overcommit_ratio=ratio,
            ram_allocation_ratio=kind.ram_allocation_ratio)
        self.vcpu_cap = float(kind.vcpus) * kind.cpu_allocation_ratio
        self.mem_cap = ((float(kind.memory_mb)
                         - kind.reserved_host_memory_mb)
                        * kind.ram_allocation_ratio)
        self.near_cap = float(near['total']) * near['allocation_ratio']
        self.near_max_unit = near['max_unit']
        self.cache_mb = float(self.prof.cache_capacity_mb(ratio) or 0.0)
        self.vcpu_used = self.mem_used = self.near_used = 0.0
        self.hot = self.ram = self.bound_hot = self.bound_ram = 0.0
        self.instances = 0

    def hot_ram(self):
        return nearmem.HotRam(self.hot, {engine.HOST_CELL: self.bound_hot},
                              self.ram, {engine.HOST_CELL: self.bound_ram})


class Wanted(object):
    """What a flavor asks for, worked out from the core's rules."""

    def __init__(self, flavor, scheduler):
        self.flavor = flavor
        self.request, _error = flavor.request(scheduler)
        self.near_mb = flavor.requested_near_memory_mb() or 0
        if scheduler.near_memory and not self.near_mb and self.request:
            self.near_mb = placement.instance_near_memory_mb(
                flavor.memory_mb, self.request.hot_ratio)
        self.hot_mb = (self.request.hot_mb(flavor.memory_mb)
                       if self.request else 0.0)
        self.ram_mb = float(flavor.memory_mb) if self.request else 0.0
        self.binds = charging.binds_memory(flavor.extra_specs) is not None
        self.fit = ((lambda: {engine.HOST_CELL: flavor.memory_mb})
                    if self.binds else None)


class Reference(object):
    """The fleet host by host: each boot weighs every host."""

    def __init__(self, kinds_, scheduler):
        self.scheduler = scheduler
        self.kinds = kinds_
        self.hosts = [Host(kind, scheduler) for kind in kinds_
                      for _n in range(kind.count)]

    def passing(self, wanted):
        """(indices of the hosts that pass, reason when none)."""
        f = wanted.flavor
        candidates = [
            i for i, h in enumerate(self.hosts)
            if h.vcpu_used + f.vcpus <= h.vcpu_cap
            and f.vcpus <= h.kind.vcpus
            and h.mem_used + f.memory_mb <= h.mem_cap
            and f.memory_mb <= h.kind.memory_mb
            and (not wanted.near_mb
                 or (h.near_used + wanted.near_mb <= h.near_cap
                     and wanted.near_mb <= h.near_max_unit))]
        if not candidates:
            return [], engine.NO_RESOURCES
        request = wanted.request
        if request is None or decide.flavor_conflict(request):
            return [], decide.REJECT_CONFLICT
        moded, reasons = [], set()
        for i in candidates:
            ok, reason = decide.mode_passes(request, self.hosts[i].prof)
            if ok:
                moded.append(i)
            else:
                reasons.add(reason)
        if not moded:
            return [], (decide.REJECT_MODE if decide.REJECT_MODE in reasons
                        else decide.REJECT_UNKNOWN)
        passing, reasons = [], set()
        for i in moded:
            h = self.hosts[i]
            ok, reason, _view = decide.cache_check(
                h.prof, self.scheduler.cache_overcommit_ratio, h.hot_ram(),
                request, f.memory_mb, fit=wanted.fit,
                accounted=bool(wanted.near_mb))
            if ok:
                passing.append(i)
            else:
                reasons.add(reason)
        if not passing:
            return [], (decide.REJECT_CACHE if decide.REJECT_CACHE in reasons
                        else decide.REJECT_UNKNOWN)
        return passing, None

    def choose(self, wanted):
        passing, reason = self.passing(wanted)
        if len(passing) <= 1:
            return (passing[0] if passing else None), reason
        sched = self.scheduler
        hosts = [self.hosts[i] for i in passing]
        free_ram = [max(h.kind.memory_mb - h.kind.reserved_host_memory_mb
                        - h.mem_used, 0.0) for h in hosts]
        free_cpu = [max(h.kind.vcpus * h.kind.cpu_allocation_ratio
                        - h.vcpu_used, 0.0) for h in hosts]
        best = best_weight = None
        for n, h in enumerate(hosts):
            weight = 0.0
            for multiplier, values, value in (
                    (sched.ram_weight_multiplier, free_ram, free_ram[n]),
                    (sched.cpu_weight_multiplier, free_cpu, free_cpu[n])):
                # nova.weights.normalize with minval 0.
                high = max(values)
                weight += multiplier * (0.0 if high == 0.0
                                        else (value - 0.0) / (high - 0.0))
            weight += sched.tier_weight_multiplier * decide.tier_score(
                wanted.request, h.prof)
            headroom = 0.0
            if h.prof.tiered:
                headroom = decide.headroom_score(
                    h.prof, sched.cache_overcommit_ratio, h.hot_ram(),
                    wanted.request, wanted.flavor.memory_mb, fit=wanted.fit)
            weight += sched.cache_headroom_weight_multiplier * headroom
            if best is None or weight > best_weight:
                best, best_weight = passing[n], weight
        return best, None

    def charge(self, i, wanted, sign):
        h = self.hosts[i]
        h.vcpu_used += sign * wanted.flavor.vcpus
        h.mem_used += sign * wanted.flavor.memory_mb
        h.near_used += sign * wanted.near_mb
        h.hot += sign * wanted.hot_mb
        h.ram += sign * wanted.ram_mb
        if wanted.binds:
            h.bound_hot += sign * wanted.hot_mb
            h.bound_ram += sign * wanted.ram_mb
        h.instances += sign

    def column(self, name):
        return np.array([getattr(h, name) for h in self.hosts])

    def sample(self, wanted, when, refused):
        """The timeline's row, as numpy sums over every host's row."""
        kind_of = np.array([self.kinds.index(h.kind) for h in self.hosts])
        instances = self.column('instances')
        row = {'day': when / engine.SECONDS_PER_DAY,
               'vms': int(instances.sum())}
        for i, kind in enumerate(self.kinds):
            row['vms:%s' % kind.name] = int(instances[kind_of == i].sum())
        mode_of = np.array([h.prof.mode for h in self.hosts], dtype=object)
        for mode in kinds.ALL_MODES:
            sel = mode_of == mode
            if not sel.any():
                continue
            row['memory_util:%s' % mode] = share(
                self.column('mem_used')[sel].sum(),
                self.column('mem_cap')[sel].sum())
            row['vcpu_util:%s' % mode] = share(
                self.column('vcpu_used')[sel].sum(),
                self.column('vcpu_cap')[sel].sum())
        tiered = np.array([h.prof.tiered for h in self.hosts])
        if tiered.any():
            charged = np.array([charging.charged(h.prof, h.hot_ram()).total
                                for h in self.hosts], dtype=float)
            pressure = charged[tiered] / self.column('cache_mb')[tiered]
            row['cache_pressure_mean'] = float(pressure.mean())
            row['cache_pressure_max'] = float(pressure.max())
        free = np.maximum(self.column('mem_cap') - self.column('mem_used'),
                          0.0)
        usable = np.zeros(len(self.hosts), dtype=bool)
        for w in wanted.values():
            usable[self.passing(w)[0]] = True
        total = free.sum()
        row['fragmentation'] = (float(free[~usable].sum() / total)
                                if total else 0.0)
        row['rejected'] = refused
        return row

    def replay(self, flavors, events, sample_days):
        wanted = {name: Wanted(f, self.scheduler)
                  for name, f in flavors.items()}
        step = sample_days * engine.SECONDS_PER_DAY
        decisions, samples, placed = [], [], {}
        next_sample, refused = 0.0, 0
        for event in events:
            while event.time >= next_sample:
                samples.append(self.sample(wanted, next_sample, refused))
                next_sample += step
            w = wanted[event.flavor]
            if event.kind == simulate.BOOT:
                host, reason = self.choose(w)
                if host is None:
                    refused += 1
                else:
                    self.charge(host, w, 1)
                    placed[event.instance] = host
                decisions.append((event.instance, event.flavor, host,
                                  reason))
            elif event.instance in placed:
                self.charge(placed.pop(event.instance), w, -1)
        end = events[-1].time if events else 0.0
        samples.append(self.sample(wanted, max(end, next_sample - step),
                                   refused))
        return decisions, pd.DataFrame(samples)


def share(used, total):
    total = float(total)
    return float(used) / total if total else None


multipliers = st.sampled_from([0.0, 1.0, -1.0, 2.5])


class ReferenceTestCase(testtools.TestCase):

    def assert_same(self, counts, mix, scheduler, seed, days=30,
                    lifetime=4, sample_days=2.0):
        kinds_ = host_kinds(counts)
        flavors = {name: simulate.Flavor(name, vcpus, gb * GB, specs)
                   for name, (vcpus, gb, specs) in FLAVORS.items()}
        events = simulate.synthetic(mix, days=days, lifetime_days=lifetime,
                                    seed=seed)
        fleet = simulate.Fleet(kinds_, scheduler)
        result = simulate.replay(fleet, flavors, events,
                                 sample_days=sample_days)
        expected, timeline = Reference(kinds_, scheduler).replay(
            flavors, events, sample_days)
        names = list(fleet.names)
        self.assertEqual(
            [(uuid, flavor, None if host is None else names[host], reason)
             for uuid, flavor, host, reason in expected],
            result.decisions)
        pd.testing.assert_frame_equal(timeline, result.timeline,
                                      check_exact=True)
        return result

    @base.PROPERTY
    @hypothesis.given(
        counts=st.lists(st.integers(0, 3), min_size=len(KINDS),
                        max_size=len(KINDS)).filter(any),
        ram=multipliers, cpu=multipliers, tier=multipliers,
        headroom=multipliers, near=st.booleans(),
        seed=st.integers(0, 2 ** 16))
    def test_same_hosts_as_weighing_every_host(self, counts, ram, cpu, tier,
                                               headroom, near, seed):
        scheduler = simulate.Scheduler(
            ram_weight_multiplier=ram, cpu_weight_multiplier=cpu,
            tier_weight_multiplier=tier,
            cache_headroom_weight_multiplier=headroom, near_memory=near)
        mix = {name: 6 for name in FLAVORS}
        self.assert_same(counts, mix, scheduler, seed)

    def test_a_full_fleet_and_freed_hosts(self):
        # Packed past its capacity: boots refused, hosts where no flavor
        # fits (fragmentation), and hosts freed in the middle of a kind
        # that the next boots must find first.
        result = self.assert_same(
            (4, 5, 2, 2, 2, 1), {'small': 120, 'hot': 60, 'pinned': 40,
                                 'latency': 20}, simulate.Scheduler(),
            seed=3, days=40, lifetime=10, sample_days=1.0)
        self.assertGreater(sum(sum(r.values())
                               for r in result.rejected.values()), 0)
        self.assertGreater(result.timeline['fragmentation'].max(), 0)

    def test_ties_go_to_the_first_host(self):
        # No weigher counts: every boot goes to the first passing host.
        zero = simulate.Scheduler(ram_weight_multiplier=0.0,
                                  cpu_weight_multiplier=0.0,
                                  tier_weight_multiplier=0.0,
                                  cache_headroom_weight_multiplier=0.0)
        self.assert_same((3, 3, 3, 0, 0, 0), {'small': 40, 'hot': 20}, zero,
                         seed=11, lifetime=3)

    def test_a_fleet_all_tiered(self):
        # Every host tiered: the cache pressure each host keeps as it
        # changes, bound instances charging whole RAM on kmem hosts.
        self.assert_same((0, 3, 0, 3, 3, 0), {'small': 40, 'hot': 30,
                                              'pinned': 30, 'tiered': 20},
                         simulate.Scheduler(), seed=7, lifetime=6)

    def test_stacking(self):
        # A negative RAM multiplier fills the fullest host first.
        self.assert_same((3, 4, 0, 0, 0, 0), {'small': 40, 'hot': 30},
                         simulate.Scheduler(ram_weight_multiplier=-1.0),
                         seed=5, lifetime=6)


class GroupsTestCase(testtools.TestCase):
    """The groups of alike hosts stay those of the hosts' rows."""

    def test_groups_follow_the_hosts(self):
        # More hosts than one block of the initial range's scan.
        counts = (2500, 1700, 0, 0, 0, 0)
        fleet = simulate.Fleet(host_kinds(counts))
        flavors = [simulate.Flavor(name, vcpus, gb * GB, specs)
                   for name, (vcpus, gb, specs) in FLAVORS.items()
                   if name in ('small', 'hot', 'pinned')]
        rng = np.random.default_rng(4)
        placed = []
        for step in range(3000):
            if placed and rng.random() < 0.45:
                host, flavor = placed.pop(int(rng.integers(len(placed))))
                fleet.release(host, flavor)
            else:
                flavor = flavors[int(rng.integers(len(flavors)))]
                # Anywhere, not only where choose() would put it.
                host = int(rng.integers(len(fleet)))
                if fleet.candidates(fleet.prepare(flavor))[host]:
                    fleet.claim(host, flavor)
                    placed.append((host, flavor))
            if step % 500 == 0 or step == 2999:
                self.check(fleet)

    def check(self, fleet):
        groups = fleet._groups
        table = groups.table()
        counts = groups.counts()
        of = groups.of
        usage = np.stack([getattr(fleet, name) for name in fleet.USAGE])
        for g in range(len(counts)):
            members = np.flatnonzero(of == g)
            self.assertEqual(len(members), counts[g])
            self.assertEqual(bool(len(members)), bool(table.live[g]))
            if not len(members):
                continue
            self.assertEqual(members[0], table.first[g])
            self.assertTrue(np.all(fleet.kind[members] == table.kind[g]))
            rows = np.stack([getattr(table, name)[g]
                             for name in fleet.USAGE])
            self.assertTrue(np.all(usage[:, members] == rows[:, None]))
        # Alike hosts share one group.
        keys = {tuple(usage[:, h]) + (fleet.kind[h],): of[h]
                for h in range(len(fleet))}
        self.assertEqual(len(keys), int(table.live.sum()))
