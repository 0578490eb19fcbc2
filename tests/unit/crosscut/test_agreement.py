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
"""The parts agree on what a host is: discovery, planner, scheduler.

For every host kind, a host discovered from recorded tool outputs is read
back as the planner reads a fleet, becomes a planner node, whose aggregate
metadata the scheduler reads: each step must keep the kind, the near memory
and the per-cell sizes, and discovery's own ``--aggregate`` and
``--provider-config`` must say the same. The planner's own configurations
go through the scheduler the same way.
"""

import io
import json
import os

import fixtures
from nova import objects
from nova.tests.unit.scheduler import fakes as nova_fakes
from oslo_utils.fixture import uuidsentinel as uuids
import testtools
import yaml

from nova_pmem_filters.conf import pmem
from nova_pmem_filters.conf import schedulerconf
from nova_pmem_filters.core.formats import discoveredhost
from nova_pmem_filters.core.formats import hostfile
from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import placement
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters.discover import cli as discover_cli
from nova_pmem_filters.discover import outputs
from nova_pmem_filters.doctor import checks
from nova_pmem_filters.doctor import cloud
from nova_pmem_filters.doctor import snapshot
from nova_pmem_filters.planner import fleet
from nova_pmem_filters.planner import model
from nova_pmem_filters.planner import patterns
from nova_pmem_filters.planner import scenario
from nova_pmem_filters.planner import simulate
from nova_pmem_filters.planner import vmsizing
from nova_pmem_filters.scheduler import host_profiles
from tests.unit import fakes
from tests.unit import paths
from tests.unit.planner import kernel_tiering_cases
from tests.unit import test_numa_cells

_HERE = paths.of('tests', 'unit')

# kind -> (recorded outputs, discovery flags)
RECORDED = {
    kinds.DRAM: ('discover_data/dram_1s', ()),
    kinds.MEMORY_MODE: ('discover_data/mm_2s_pmem200_512', ()),
    kinds.APP_DIRECT: ('discover_data/ad_2s_pmem100_512', ()),
    kinds.MIXED: ('discover_data/mixed_2s_pmem200_256', ()),
    kinds.CXL_FLAT: ('discover_cxl_data/cxl_flat', ('--cxl',)),
    kinds.CXL_KMEM: ('discover_cxl_data/cxl_kmem', ('--cxl',)),
    kinds.CXL_DEVDAX: ('discover_cxl_data/cxl_devdax', ('--cxl',)),
}


def discover(hardware_mode, numa):
    directory, flags = RECORDED[hardware_mode]
    argv = (['--from', os.path.join(_HERE, directory), '--json']
            + list(flags) + (['--numa'] if numa else []))
    out, err = io.StringIO(), io.StringIO()
    status = discover_cli.main(argv, stdout=out, stderr=err)
    if status:
        raise AssertionError('discovery failed: %s' % err.getvalue())
    return json.loads(out.getvalue())


def scheduler_profile(metadata):
    """What nova-scheduler reads of a host in one aggregate with it."""
    aggregate = objects.Aggregate(id=1, name='agg', metadata=dict(metadata))
    host = nova_fakes.FakeHostState('host1', 'node1',
                                    {'aggregates': [aggregate]})
    return host_profiles.host_profile(host)


class DiscoveredHostTestCase(fakes.PmemTestCase):

    def test_every_kind_round_trips(self):
        self.assertEqual(set(kinds.HARDWARE_MODES), set(RECORDED))
        for hardware_mode in RECORDED:
            for numa in (False, True):
                with self.subTest(hardware_mode=hardware_mode, numa=numa):
                    self._round_trip(hardware_mode, numa)

    def _round_trip(self, hardware_mode, numa):
        data = discover(hardware_mode, numa)
        kind = kinds.scheduler_kind(hardware_mode)
        self.assertEqual((hardware_mode, kind),
                         (data['mode'], data['scheduler_mode']))
        tiered = kind in kinds.TIERED
        near_gb = data['dram_cache_gb'] if tiered else data['dram_gb']
        self.assertGreater(near_gb, 0)
        cells = None
        if tiered and data.get('dram_cache_gb_per_cell'):
            cells, _problem = profile.parse_cell_cache(
                data['dram_cache_gb_per_cell'])
            cells = tuple(sorted(cells.items()))
        self.assertEqual(numa and tiered, cells is not None)

        # The planner reads the file and builds a node of its kind.
        directory = self.useFixture(fixtures.TempDir()).path
        with open(os.path.join(directory, 'host.json'), 'w') as f:
            json.dump(data, f)
        (node_kind,) = fleet.load(directory)
        node = node_kind.node()
        self.assertEqual(kind, node.config.mode)
        self.assertTrue(node.profile.known, node.profile.problem)
        metadata = profile.to_metadata(node.profile)

        # Discovery's --aggregate says the same.
        host = discoveredhost.parse(data, 'host.json')
        self.assertEqual(metadata, dict(outputs.aggregate_metadata(host)))

        # The scheduler reads that metadata back to the same host.
        sched = scheduler_profile(metadata)
        self.assertEqual(node.profile, sched)
        self.assertEqual(kind, sched.mode)
        self.assertEqual(near_gb if tiered else None, sched.dram_cache_gb)
        self.assertEqual(cells, sched.cell_cache_gb)
        self.assertEqual(near_gb, host.near_memory_gb)
        if cells:
            ids = [cell for cell, _gb in cells]
            self.assertEqual(sched.cell_capacities_mb(ids, 1.5)[0],
                             vmsizing.cell_capacities_mb(node, 1.5))

        # Placement is told of the same near memory.
        config = outputs.provider_config(host)
        inventory = config['providers'][0]['inventories']['additional'][0][
            placement.NEAR_MEMORY_RC]
        self.assertEqual(
            int(near_gb * profile.MB_PER_GB), inventory['total'])
        self.assertEqual(kinds.traits(hardware_mode),
                         config['providers'][0]['traits']['additional'])

    def test_simulator_hosts_are_the_planner_nodes(self):
        directory = self.useFixture(fixtures.TempDir()).path
        for hardware_mode in RECORDED:
            data = discover(hardware_mode, True)
            data['hostname'] = hardware_mode
            hostfile.write(os.path.join(directory, hardware_mode + '.json'),
                           data)
        scen = scenario.load()
        host_kinds = simulate.kinds_of_profiles(scen, directory, vcpus=64)
        by_name = {k.name: k for k in fleet.load(directory)}
        self.assertEqual(len(RECORDED), len(host_kinds))
        for sim in host_kinds:
            node = by_name[sim.name].node()
            self.assertEqual(node.profile, sim.profile)
            self.assertEqual(scheduler_profile(
                profile.to_metadata(node.profile)), sim.profile)


class PlannedNodeTestCase(fakes.PmemTestCase):

    def test_every_configuration_of_the_built_in_scenarios(self):
        seen = set()
        for name in ('telco-cost-matched', 'cxl-cost-matched'):
            scen = scenario.load(name)
            for config in scen.configs.values():
                node = model.node(config, scen.policies)
                metadata = model.aggregate_metadata(config)
                self.assertEqual(profile.to_metadata(node.profile), metadata)
                self.assertEqual(node.profile, scheduler_profile(metadata))
                if config.mode in kinds.TIERED:
                    self.assertEqual(config.dram_gb,
                                     node.profile.dram_cache_gb)
                seen.add(config.mode)
        self.assertTrue({kinds.DRAM, kinds.MEMORY_MODE, kinds.CXL_KMEM,
                         kinds.CXL_FLAT} <= seen, seen)


def hot_ratio_scenario(hot_ratio=None):
    """The built-in example with a 64 GB cache VM, of which 16 GB are used.

    Its near memory binds on the Memory-Mode node: 192 GB of DRAM cache
    hold 192 / (64 x hot ratio) of them. Without ``hot_ratio`` the planner
    takes the core's default, which is also ``[pmem] default_hot_ratio``'s.
    """
    text = pkg_scenario_text('telco-cost-matched')
    data = yaml.safe_load(text)
    workload = {'vcpus': 2, 'ram_gb': 64, 'used_gb': 16, 'priority': 'low'}
    if hot_ratio is not None:
        workload['hot_ratio'] = hot_ratio
    data['workloads'] = {'cache64': workload}
    data.pop('demand', None)
    return scenario.parse(yaml.safe_dump(data), 'cache64.yaml')


def pkg_scenario_text(name):
    text, _source = scenario.read_text(name)
    return text


def simulated_density(scen, config, workload):
    """VMs of ``workload`` the simulator packs on one node of ``config``."""
    fleet_ = simulate.Fleet(simulate.kinds_of_configs(scen, {config: 1}))
    flavors = simulate.flavors_of(scen)
    events = [simulate.Event(float(n), simulate.BOOT, 'vm-%d' % n, workload)
              for n in range(500)]
    result = simulate.replay(fleet_, flavors, events)
    return sum(1 for _inst, _flavor, host, _reason in result.decisions
               if host is not None)


class HotRatioAgreementTestCase(testtools.TestCase):
    """The planner's density for one node is what the simulator packs.

    A workload without ``hot_ratio`` was once planned with all its RAM hot
    (3 per Memory-Mode node) while the simulator and Nova, reading no
    ``pmem:hot_ratio``, used ``[pmem] default_hot_ratio`` (6 per node).
    """

    def test_with_and_without_hot_ratio(self):
        for hot_ratio, expected in ((None, 6), (0.25, 12), (1, 3)):
            scen = hot_ratio_scenario(hot_ratio)
            workload = scen.workloads['cache64']
            node = model.node(scen.configs['mm-192-512'], scen.policies)
            vms, binding = vmsizing.density(node, workload, scen.policies)
            self.assertEqual((expected, 'dram_cache'), (vms, binding),
                             hot_ratio)
            self.assertEqual(vms, simulated_density(scen, 'mm-192-512',
                                                    'cache64'), hot_ratio)
            # nova-config writes the ratio the plan relied on.
            self.assertEqual(
                repr(float(hot_ratio or extra_specs.DEFAULT_HOT_RATIO)),
                repr(float(workload.extra_specs[
                    extra_specs.HOT_RATIO_KEY])))

    def test_planner_default_is_the_scheduler_default(self):
        self.assertEqual(extra_specs.DEFAULT_HOT_RATIO,
                         cfg_default('default_hot_ratio'))
        self.assertEqual(extra_specs.DEFAULTS.modes,
                         frozenset(cfg_default('default_flavor_modes')))
        self.assertEqual(extra_specs.DEFAULTS,
                         simulate.Scheduler().defaults)


def cfg_default(name):
    return {opt.name: opt.default for opt in pmem.pmem_opts}[name]


class DoctorAgreesWithTheFilterTestCase(test_numa_cells._NumaHostTestCase):
    """The doctor counts a host's hot RAM, cell by cell, as the filter does.

    The same instances (bound to cells or floating) on a two-cell
    Memory-Mode host with 2 GB of cache per cell: the scheduler's ledger and
    the doctor sum the same HotRam, and the doctor finds a cell beyond its
    bound exactly where PmemCacheFilter refuses even a 1 MB floating
    instance because of that cell.
    """

    CASES = (
        # (bound {cell: MB} per instance, floating MB per instance)
        ([{0: 1024}, {1: 1024}], [1024]),       # within
        ([{0: 2560}], []),                      # cell 0 beyond, host fits
        ([{0: 1024}, {0: 1024}], [1024]),       # cell 0 beyond
        ([{0: 512, 1: 512}], [3000]),           # both within
        ([{1: 1500}], [1500]),                  # cell 1 beyond
    )

    def test_cases(self):
        for number, (bound, floating) in enumerate(self.CASES):
            with self.subTest(case=number):
                self._agree(number, bound, floating)

    def _agree(self, number, bound, floating):
        name = 'host%d' % number
        instances, servers = [], []
        members = [('b', cells) for cells in bound]
        members += [('f', memory_mb) for memory_mb in floating]
        for i, (kind, cells) in enumerate(members):
            uuid = getattr(uuids, '%s_%s%d' % (name, kind, i))
            specs = {'pmem:hot_ratio': '1'}
            if kind == 'b':
                instances.append(self.bound_instance(uuid, cells, specs))
                ram_mb, placed = sum(cells.values()), tuple(cells.items())
            else:
                instances.append(self.instance(uuid, cells, specs))
                ram_mb, placed = cells, ()
            servers.append(snapshot.Server(
                id=uuid, name='%s%d' % (kind, i), host=name,
                status='ACTIVE', flavor_name='f', ram_mb=ram_mb,
                extra_specs=specs, numa_nodes=tuple(c for c, _ in placed),
                numa_cells=placed))
        usage = tuple(sum(c.get(cell, 0) for c in bound) for cell in (0, 1))
        host = test_numa_cells.numa_host(
            name, [test_numa_cells.MM4_CELLS], instances, usage=usage)

        # The same hot RAM.
        ledger_ram = self.ledger.usage_by_host([host])[(name, name + '-node')]
        doctor_ram, _placed = cloud.hot_ram(servers, schedulerconf.defaults())
        self.assertEqual(ledger_ram, doctor_ram)

        # The same verdict on each cell.
        snap = snapshot.Snapshot(
            aggregates=(snapshot.Aggregate(
                'mm', '1', (name,), dict(test_numa_cells.MM4_CELLS)),),
            computes=(snapshot.Compute(name, (name + '-node',)),),
            servers=tuple(servers))
        over = {f.object for f in checks.run(snap)
                if f.code == 'cache-overcommitted'}
        tiny = fakes.request_spec({'pmem:hot_ratio': '1'}, memory_mb=1)
        refused = not self._passing([host], tiny)
        self.assertEqual(refused, bool(over), (bound, floating, over))
        for cell in (0, 1):
            used = ledger_ram.bound.get(cell, 0.0) + ledger_ram.floating / 2
            self.assertEqual(used > 2048,
                             'host %s (NUMA cell %d)' % (name, cell) in over)


def kernel_tiering_entry(state):
    """A host profile's kernel_tiering object saying ``state``."""
    on = state == 'on'
    return {'version': 1, 'numa_balancing': 3 if on else 1,
            'demotion_enabled': True, 'promotes': on, 'demotes': True,
            'state': state}


def alternate(scen, config, names, boots=400):
    """VMs of each of ``names`` the simulator places, booted in turn."""
    fleet_ = simulate.Fleet(simulate.kinds_of_configs(scen, {config: 1}))
    flavors = simulate.flavors_of(scen)
    events = [simulate.Event(float(n), simulate.BOOT, 'vm-%d' % n,
                             names[n % len(names)]) for n in range(boots)]
    result = simulate.replay(fleet_, flavors, events)
    return tuple(sum(1 for _i, flavor, host, _r in result.decisions
                     if flavor == name and host is not None)
                 for name in names)


class KernelTieringAgreementTestCase(fakes.PmemTestCase):
    """On cxl_kmem hosts the planner, the simulator and the scheduler agree.

    A NUMA-bound flavor charges its whole RAM to near memory, and with the
    kernel's tiering off every flavor does: the planner's densities are
    what the simulator packs on the same node, a mix of bound and unbound
    VMs stops where the planner's patterns say a node is full, and a
    discovered host's tiering reaches the planner, the simulator and the
    scheduler alike.
    """

    def setUp(self):
        super().setUp()
        # Redis alone, floating and bound: nova-config's memory ratio
        # (the smallest any workload needs) is then each one's.
        cases = kernel_tiering_cases
        data = cases.raw()
        data['workloads'] = {name: data['workloads'][name] for name in (
            cases.FLOATING, cases.BOUND, cases.BOUND2)}
        self.scen = cases.load(data)

    def test_densities(self):
        cases = kernel_tiering_cases
        for config, name, expected in (
                (cases.KMEM, cases.FLOATING, 115),
                (cases.KMEM_OFF, cases.FLOATING, 48),
                (cases.KMEM_1S, cases.FLOATING, 57),
                (cases.KMEM_1S_OFF, cases.FLOATING, 24),
                (cases.KMEM_1S, cases.BOUND, 24),
                (cases.KMEM_1S_OFF, cases.BOUND, 24)):
            with self.subTest(config=config, workload=name):
                node = model.node(self.scen.configs[config],
                                  self.scen.policies)
                vms, _binding = vmsizing.density(
                    node, self.scen.workloads[name], self.scen.policies)
                self.assertEqual(expected, vms)
                self.assertEqual(vms, simulated_density(self.scen, config,
                                                        name))

    def test_a_mix_of_bound_and_unbound_fills_a_node_as_planned(self):
        cases = kernel_tiering_cases
        names = (cases.FLOATING, cases.BOUND)
        demands = [patterns.Demand.of(self.scen.workloads[n])
                   for n in names]
        for config, expected in ((cases.KMEM_1S, (20, 19)),
                                 (cases.KMEM_1S_OFF, (12, 12))):
            with self.subTest(config=config):
                placed = alternate(self.scen, config, names)
                self.assertEqual(expected, placed)
                node = model.node(self.scen.configs[config],
                                  self.scen.policies)
                cap = patterns.Capacity.of(node, self.scen.policies)
                self.assertTrue(patterns.fits(cap, demands, placed))
                for more in ((1, 0), (0, 1)):
                    self.assertFalse(patterns.fits(
                        cap, demands, [p + m for p, m in zip(placed, more)]))

    def test_discovered_tiering_reaches_every_part(self):
        directory = self.useFixture(fixtures.TempDir()).path
        hosts = {}
        for state in ('on', 'off'):
            data = discover(kinds.CXL_KMEM, True)
            data['hostname'] = 'kmem-' + state
            data['kernel_tiering'] = kernel_tiering_entry(state)
            hostfile.write(os.path.join(directory, state + '.json'), data)
            hosts[state] = discoveredhost.parse(data, state + '.json')
        found = {k.hosts[0]: k for k in fleet.load(directory)}
        self.assertEqual(2, len({k.name for k in found.values()}))
        host_kinds = {k.name: k for k in simulate.kinds_of_profiles(
            self.scen, directory, vcpus=64)}
        workload = self.scen.workloads[kernel_tiering_cases.FLOATING]
        limits = {}
        for state, host in hosts.items():
            kind = found['kmem-' + state]
            node = kind.node()
            self.assertEqual(state, node.profile.kernel_tiering)
            self.assertEqual(host.profile(), node.profile)
            self.assertEqual(node.profile, scheduler_profile(
                host.metadata()))
            self.assertEqual(node.profile, host_kinds[kind.name].profile)
            limits[state] = vmsizing.limits(node, workload,
                                            self.scen.policies)['dram_cache']
        near_mb = hosts['off'].dram_cache_gb * profile.MB_PER_GB
        self.assertEqual(int(near_mb // workload.ram_mb), limits['off'])
        self.assertEqual(int(near_mb // (workload.ram_mb
                                         * workload.hot_ratio)),
                         limits['on'])
