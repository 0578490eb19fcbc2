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
"""The simulator decides as Nova does: same passing hosts, same order.

Random host states and flavors go through Nova's own filter and weigher
handlers, with PmemModeFilter, PmemCacheFilter, Nova's RAMWeigher and
CPUWeigher, PmemTierWeigher and PmemCacheHeadroomWeigher at random
multipliers; and through the simulator's ``Fleet`` with the same hosts.
Both must pass the same hosts and weigh them to the same floats, so the
order is the same.

Flavors have whole GB of RAM and hot ratios that are sums of powers of two,
so hot MB add up exactly in any order (the ledger and the simulator sum
the instances of a host in different orders).
"""

import uuid

import hypothesis
from hypothesis import strategies as st
import numpy as np

from nova import objects
from nova.scheduler import filters as nova_filters
from nova.scheduler import weights as nova_weights
from nova.scheduler.weights import cpu as cpu_weigher
from nova.scheduler.weights import ram as ram_weigher
from nova.tests.unit.scheduler import fakes as nova_fakes
from nova.virt import hardware

from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters import filters
from nova_pmem_filters.planner import simulate
from nova_pmem_filters.scheduler import ledger
from nova_pmem_filters import weighers
from tests.unit import fakes
from tests.unit import test_numa_cells

SETTINGS = hypothesis.settings(derandomize=True, deadline=None,
                               max_examples=150)

RATIOS = ['1', '0.5', '0.25', '0.75', '0.125']

host_metadata = st.one_of(
    st.just({profile.MODE_KEY: kinds.DRAM}),
    st.just({profile.MODE_KEY: kinds.APP_DIRECT}),
    st.integers(min_value=1, max_value=64).map(
        lambda gb: {profile.MODE_KEY: kinds.MEMORY_MODE,
                    profile.DRAM_CACHE_KEY: str(gb)}),
    # Unknown profiles: no aggregate, a bad mode, a bad cache size.
    st.just(None),
    st.just({profile.MODE_KEY: 'optane'}),
    st.just({profile.MODE_KEY: kinds.MEMORY_MODE,
             profile.DRAM_CACHE_KEY: 'lots'}),
)

flavor_specs = st.fixed_dictionaries({}, optional={
    extra_specs.MODES_KEY: st.sampled_from(
        ['dram', 'memory_mode', 'app_direct', 'dram,app_direct',
         'dram,memory_mode,app_direct']),
    extra_specs.PRIORITY_KEY: st.sampled_from(extra_specs.PRIORITIES),
    extra_specs.HOT_RATIO_KEY: st.sampled_from(RATIOS),
    extra_specs.VPMEM_KEY: st.sampled_from(['SMALL']),
})

flavors = st.tuples(st.integers(min_value=1, max_value=16),   # vcpus
                    st.integers(min_value=1, max_value=64),   # RAM GB
                    flavor_specs)

hosts = st.lists(
    st.tuples(host_metadata,
              st.integers(min_value=4, max_value=128),        # vcpus
              st.integers(min_value=16, max_value=512),       # RAM GB
              st.sampled_from([1.0, 2.0, 4.0, 16.0]),         # cpu ratio
              st.lists(flavors, max_size=6)),                 # instances
    min_size=1, max_size=8)

multipliers = st.sampled_from([0.0, 1.0, -1.0, 2.5, 10.0])


class EquivalenceTestCase(fakes.PmemTestCase):

    def _nova_hosts(self, host_specs, reserved):
        states = []
        n = 0
        for i, (md, vcpus, ram_gb, cpu_ratio, instances) in enumerate(
                host_specs):
            bare = []
            used_mb = used_vcpus = 0
            for inst_vcpus, inst_gb, specs in instances:
                n += 1
                bare.append(self.instance(str(uuid.UUID(int=n)),
                                          inst_gb * profile.MB_PER_GB,
                                          specs))
                used_mb += inst_gb * profile.MB_PER_GB
                used_vcpus += inst_vcpus
            aggregates = ([] if md is None else
                          [objects.Aggregate(id=i, name='agg%d' % i,
                                             metadata=md)])
            states.append(nova_fakes.FakeHostState(
                'host%d' % i, 'node%d' % i, {
                    'aggregates': aggregates,
                    'vcpus_total': vcpus, 'vcpus_used': used_vcpus,
                    'cpu_allocation_ratio': cpu_ratio,
                    'free_ram_mb': ram_gb * profile.MB_PER_GB - reserved
                    - used_mb,
                    'total_usable_ram_mb': ram_gb * profile.MB_PER_GB,
                    'ram_allocation_ratio': 1.0},
                instances=bare))
        return states

    def _fleet(self, host_specs, reserved, scheduler):
        kinds = []
        for i, (md, vcpus, ram_gb, cpu_ratio, _inst) in enumerate(
                host_specs):
            prof = profile.from_metadata([] if md is None else [md])
            kinds.append(simulate.HostKind(
                name='host%d' % i, profile=prof, vcpus=vcpus,
                memory_mb=ram_gb * profile.MB_PER_GB, dram_gb=ram_gb,
                reserved_host_memory_mb=reserved,
                cpu_allocation_ratio=cpu_ratio))
        fleet = simulate.Fleet(kinds, scheduler)
        for i, (_md, _v, _r, _c, instances) in enumerate(host_specs):
            for inst_vcpus, inst_gb, specs in instances:
                fleet.claim(i, simulate.Flavor(
                    'f', inst_vcpus, inst_gb * profile.MB_PER_GB, specs))
        return fleet

    @SETTINGS
    @hypothesis.given(host_specs=hosts, flavor=flavors,
                      ram=multipliers, cpu=multipliers, tier=multipliers,
                      headroom=multipliers,
                      reserved=st.sampled_from([0, 512, 4096]))
    def test_same_hosts_same_order(self, host_specs, flavor, ram, cpu,
                                   tier, headroom, reserved):
        self.db.clear()
        ledger.LEDGER = ledger.HotRamLedger(clock=lambda: self.now)
        self.flags(ram_weight_multiplier=ram, cpu_weight_multiplier=cpu,
                   group='filter_scheduler')
        self.flags(tier_weight_multiplier=tier,
                   cache_headroom_weight_multiplier=headroom, group='pmem')
        scheduler = simulate.Scheduler(
            ram_weight_multiplier=ram, cpu_weight_multiplier=cpu,
            tier_weight_multiplier=tier,
            cache_headroom_weight_multiplier=headroom)
        vcpus, ram_gb, specs = flavor
        memory_mb = ram_gb * profile.MB_PER_GB

        # Nova's handlers with our classes.
        states = self._nova_hosts(host_specs, reserved)
        spec_obj = fakes.request_spec(specs, memory_mb=memory_mb)
        spec_obj.flavor.vcpus = vcpus
        passing = list(nova_filters.HostFilterHandler().get_filtered_objects(
            [filters.PmemModeFilter(), filters.PmemCacheFilter()],
            states, spec_obj) or [])
        weighed = nova_weights.HostWeightHandler().get_weighed_objects(
            [ram_weigher.RAMWeigher(), cpu_weigher.CPUWeigher(),
             weighers.PmemTierWeigher(), weighers.PmemCacheHeadroomWeigher()],
            passing, spec_obj)
        nova_order = [states.index(w.obj) for w in weighed]
        nova_weights_ = [w.weight for w in weighed]

        # The simulator, from the same hosts.
        fleet = self._fleet(host_specs, reserved, scheduler)
        req = fleet.prepare(simulate.Flavor('new', vcpus, memory_mb, specs))
        mask, _reason = fleet.filtered(req, np.ones(len(fleet), dtype=bool))
        idx = np.flatnonzero(mask)
        scores = fleet.weights(req, idx)
        order = np.argsort(-scores, kind='stable')
        sim_order = [int(idx[i]) for i in order]

        self.assertEqual(sorted(nova_order), [int(i) for i in idx])
        self.assertEqual(nova_order, sim_order)
        if len(idx) > 1:
            self.assertEqual(nova_weights_, [float(scores[i]) for i in order])
        if sim_order:
            host, _none = fleet.choose(simulate.Flavor('new', vcpus,
                                                       memory_mb, specs))
            # choose() also asks Placement; the filtered best is its pick
            # whenever Placement offers that host.
            if fleet.candidates(req)[sim_order[0]]:
                self.assertEqual(sim_order[0], host)


# Hosts the kernel tiers, with tiering on and off, beside one the hardware
# tiers: one NUMA cell with CPUs (and the DRAM), one without (the CXL
# memory), as a one-socket cxl_kmem host shows them to Nova.
tiered_metadata = st.tuples(
    st.sampled_from([kinds.CXL_KMEM, kinds.MEMORY_MODE]),
    st.sampled_from([None, 'on', 'off']),
    st.integers(min_value=1, max_value=64)).map(
        lambda t: profile.metadata(t[0], t[2], kernel_tiering=t[1]))

# (vcpus, RAM GB, hot ratio or None, NUMA-bound)
tiered_flavors = st.tuples(st.integers(min_value=1, max_value=16),
                           st.integers(min_value=1, max_value=32),
                           st.sampled_from([None] + RATIOS),
                           st.booleans())

tiered_hosts = st.lists(
    st.tuples(tiered_metadata,
              st.integers(min_value=16, max_value=128),       # vcpus
              st.integers(min_value=64, max_value=512),       # RAM GB
              st.lists(tiered_flavors, max_size=6)),          # instances
    min_size=1, max_size=6)

# Cell memory large enough that Nova's NUMA fit never refuses on memory:
# the cache rule decides.
_CELL_MB = 1024 * 1024


def _specs(ratio, bound):
    specs = {extra_specs.MODES_KEY: 'memory_mode,cxl_kmem'}
    if ratio is not None:
        specs[extra_specs.HOT_RATIO_KEY] = ratio
    if bound:
        specs['hw:numa_nodes'] = '1'
    return specs


def _host_topology(vcpus, bound_mb):
    cpus = set(range(vcpus))
    cells = [objects.NUMACell(
        id=0, cpuset=cpus, pcpuset=set(), memory=_CELL_MB, cpu_usage=0,
        memory_usage=bound_mb, socket=0, pinned_cpus=set(),
        mempages=[objects.NUMAPagesTopology(size_kb=4, total=_CELL_MB * 256,
                                            used=bound_mb * 256)],
        siblings=[set([cpu]) for cpu in sorted(cpus)])]
    # The CXL node: memory, no CPUs; no instance cell lands there.
    cells.append(objects.NUMACell(
        id=1, cpuset=set(), pcpuset=set(), memory=_CELL_MB, cpu_usage=0,
        memory_usage=0, socket=None, pinned_cpus=set(),
        mempages=[objects.NUMAPagesTopology(size_kb=4, total=_CELL_MB * 256,
                                            used=0)],
        siblings=[]))
    return objects.NUMATopology(cells=cells)


class KernelTieredEquivalenceTestCase(fakes.PmemTestCase):
    """The same, on hosts of one NUMA cell with bound and unbound guests.

    On a cxl_kmem host a NUMA-bound instance charges its whole RAM and,
    with ``pmem_kernel_tiering=off``, every instance does: the real
    PmemCacheFilter and PmemCacheHeadroomWeigher, fitting bound requests
    with Nova's own NUMA fit, and the simulator's host-wide charge pass the
    same hosts with the same weights.
    """

    def _nova(self, host_specs):
        states = []
        n = 0
        for i, (md, vcpus, ram_gb, instances) in enumerate(host_specs):
            bare = []
            used_mb = bound_mb = 0
            for _vcpus, inst_gb, ratio, bound in instances:
                n += 1
                uuid_ = str(uuid.UUID(int=n))
                memory_mb = inst_gb * profile.MB_PER_GB
                full = objects.Instance(
                    self.ctxt, uuid=uuid_, deleted=False,
                    flavor=fakes.flavor(memory_mb, _specs(ratio, bound)),
                    numa_topology=(test_numa_cells.bound_topology(
                        {0: memory_mb}) if bound else None))
                self.db[uuid_] = full
                bare.append(objects.Instance(self.ctxt, uuid=uuid_))
                used_mb += memory_mb
                bound_mb += memory_mb if bound else 0
            states.append(fakes.host(
                'host%d' % i, [md], bare,
                numa_topology=_host_topology(vcpus, bound_mb),
                vcpus_total=vcpus, vcpus_used=0, cpu_allocation_ratio=16.0,
                ram_allocation_ratio=1.0,
                total_usable_ram_mb=ram_gb * profile.MB_PER_GB,
                free_ram_mb=ram_gb * profile.MB_PER_GB - used_mb))
        return states

    def _fleet(self, host_specs):
        host_kinds = [simulate.HostKind(
            name='host%d' % i, profile=profile.from_metadata([md]),
            vcpus=vcpus, memory_mb=ram_gb * profile.MB_PER_GB,
            dram_gb=ram_gb, reserved_host_memory_mb=0,
            cpu_allocation_ratio=16.0)
            for i, (md, vcpus, ram_gb, _inst) in enumerate(host_specs)]
        fleet = simulate.Fleet(host_kinds, simulate.Scheduler(
            ram_weight_multiplier=0.0, cpu_weight_multiplier=0.0,
            tier_weight_multiplier=0.0))
        for i, (_md, _v, _r, instances) in enumerate(host_specs):
            for inst_vcpus, inst_gb, ratio, bound in instances:
                fleet.claim(i, simulate.Flavor(
                    'f', inst_vcpus, inst_gb * profile.MB_PER_GB,
                    _specs(ratio, bound)))
        return fleet

    @SETTINGS
    @hypothesis.given(host_specs=tiered_hosts, flavor=tiered_flavors)
    def test_same_hosts_same_weights(self, host_specs, flavor):
        self.db.clear()
        ledger.LEDGER = ledger.HotRamLedger(clock=lambda: self.now)
        self.flags(instance_cache_ttl=600, group='pmem')
        vcpus, ram_gb, ratio, bound = flavor
        memory_mb = ram_gb * profile.MB_PER_GB
        specs = _specs(ratio, bound)

        states = self._nova(host_specs)
        spec_obj = fakes.request_spec(specs, memory_mb=memory_mb)
        spec_obj.flavor.vcpus = vcpus
        if bound:
            spec_obj.numa_topology = hardware.numa_get_constraints(
                spec_obj.flavor, objects.ImageMeta.from_dict({}))
            spec_obj.pci_requests = None
        passing = list(nova_filters.HostFilterHandler().get_filtered_objects(
            [filters.PmemCacheFilter()], states, spec_obj) or [])
        weighed = nova_weights.HostWeightHandler().get_weighed_objects(
            [weighers.PmemCacheHeadroomWeigher()], passing, spec_obj)
        nova_weighed = sorted((states.index(w.obj), w.weight)
                              for w in weighed)

        fleet = self._fleet(host_specs)
        req = fleet.prepare(simulate.Flavor('new', vcpus, memory_mb, specs))
        mask, _reason = fleet.filtered(req, np.ones(len(fleet), dtype=bool))
        idx = np.flatnonzero(mask)
        scores = fleet.weights(req, idx)
        self.assertEqual([i for i, _w in nova_weighed], [int(i) for i in idx])
        if len(idx) > 1:
            self.assertEqual([w for _i, w in nova_weighed],
                             [float(s) for s in scores])
