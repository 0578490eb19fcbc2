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
"""The node model: the field notes' example, and invariants of any node.

The published numbers (field notes, section 1) are expectations of these
tests; the model computes them from the hardware, the flavors and the 90%
rule, and is never told them.
"""

import dataclasses
import math

import hypothesis
from hypothesis import strategies as st
from nova import objects
from nova.virt import hardware
import testtools
import yaml

from nova_pmem_filters.core.formats import scenario_sections as sec
from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import nearmem
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters.planner import admission
from nova_pmem_filters.planner import memperf
from nova_pmem_filters.planner import model
from nova_pmem_filters.planner import population
from nova_pmem_filters.planner.population import common
from nova_pmem_filters.planner import realise
from nova_pmem_filters.planner import scenario
from nova_pmem_filters.planner.scenario import loading
from nova_pmem_filters.planner import tables
from nova_pmem_filters.planner import vmsizing

# Field notes, section 1.
PUBLISHED_VISIBLE_GB = {'dram-384': 384, 'mm-192-512': 512}
PUBLISHED_VMS = {'redis': {'dram-384': 14, 'mm-192-512': 19},
                 'mysql': {'dram-384': 15, 'mm-192-512': 20}}
PUBLISHED_GAIN = {'redis': 1.10, 'mysql': 1.20}

CATALOG = scenario.builtin_catalog()

# Hypothesis runs derandomized: the unit suite is deterministic.
PROPERTY = hypothesis.settings(
    derandomize=True, deadline=None, max_examples=100, database=None,
    print_blob=True,
    suppress_health_check=[hypothesis.HealthCheck.too_slow,
                           hypothesis.HealthCheck.filter_too_much])


def node_config(platform, cpu, mode, per_socket, name='test'):
    plat = CATALOG.platforms[platform]
    one = {CATALOG.dimms[d]: n for d, n in per_socket.items() if n}
    return scenario.NodeConfig(name=name, platform=plat,
                               cpu=CATALOG.cpus[cpu], mode=mode,
                               sockets=tuple(dict(one)
                                             for _ in range(plat.sockets)))


def workload(name='w', **raw):
    return loading._build_workload(
        name, sec.from_mapping(sec.Workload, raw), 'test')


class FieldNotesExampleTestCase(testtools.TestCase):
    """The cost-matched pair of the field notes, section 1."""

    def setUp(self):
        super().setUp()
        self.scen = scenario.load()
        self.policies = self.scen.policies
        self.nodes = {name: model.node(config, self.policies)
                      for name, config in self.scen.configs.items()}

    def test_visible_memory(self):
        for name, visible in PUBLISHED_VISIBLE_GB.items():
            self.assertEqual(visible, self.nodes[name].visible_memory_gb)
        # "30% more memory"; the arithmetic gives +33%.
        self.assertAlmostEqual(
            1 / 3, PUBLISHED_VISIBLE_GB['mm-192-512']
            / PUBLISHED_VISIBLE_GB['dram-384'] - 1)
        # The 192 GB of DRAM becomes the cache.
        self.assertEqual(192, self.nodes['mm-192-512'].dram_cache_gb)
        self.assertEqual(0, self.nodes['dram-384'].dram_cache_gb)

    def test_vms_per_node(self):
        for name, expected in PUBLISHED_VMS.items():
            work = self.scen.workloads[name]
            for config, vms in expected.items():
                got, _binding = vmsizing.density(self.nodes[config], work,
                                                 self.policies)
                self.assertEqual(vms, got, (name, config))

    def test_binding(self):
        # Memory runs out first ("memory exhausted"); on the Memory-Mode
        # node MySQL's 20 VMs also take all 80 vCPUs.
        expected = {('dram-384', 'redis'): 'memory',
                    ('dram-384', 'mysql'): 'memory',
                    ('mm-192-512', 'redis'): 'memory',
                    ('mm-192-512', 'mysql'): 'vcpu+memory'}
        for (config, name), binding in expected.items():
            _vms, got = vmsizing.density(self.nodes[config],
                                         self.scen.workloads[name],
                                         self.policies)
            self.assertEqual(binding, got, (config, name))

    def test_limits(self):
        limits = vmsizing.limits(self.nodes['mm-192-512'],
                                 self.scen.workloads['redis'], self.policies)
        # 80 vCPU / 4; 0.9 x 512 / 24; 192 GB cache / (32 GB x 0.25 hot).
        self.assertEqual({'vcpu': 20, 'memory': 19, 'dram_cache': 24},
                         limits)
        limits = vmsizing.limits(self.nodes['dram-384'],
                                 self.scen.workloads['redis'], self.policies)
        self.assertEqual({'vcpu': 20, 'memory': 14}, limits)

    def test_the_90_percent_rule(self):
        # The field notes' rule reproduces its own numbers from the used GB
        # the scenario records, independently of the model.
        for name, expected in PUBLISHED_VMS.items():
            used = self.scen.workloads[name].used_gb
            for config, vms in expected.items():
                self.assertEqual(vms, math.floor(
                    0.9 * PUBLISHED_VISIBLE_GB[config] / used))

    def test_calibration_reproduces_published_gains(self):
        calibrations = model.calibrate(self.scen)
        self.assertEqual(set(PUBLISHED_GAIN), set(calibrations))
        for name, gain in PUBLISHED_GAIN.items():
            cal = calibrations[name]
            n_dram = PUBLISHED_VMS[name]['dram-384']
            n_mm = PUBLISHED_VMS[name]['mm-192-512']
            self.assertEqual('mm-192-512', cal.config)
            self.assertEqual(gain, cal.node_gain)
            self.assertAlmostEqual(gain, cal.model_gain, places=9)
            self.assertEqual((n_dram, n_mm),
                             (cal.baseline_vms, cal.config_vms))
            # The cache holds every VM's hot RAM, so the per-VM factor is
            # the node gain spread over more VMs.
            self.assertEqual(1.0, cal.hit_fraction)
            self.assertAlmostEqual(gain * n_dram / n_mm, cal.t_hit,
                                   places=9)
            self.assertLess(cal.t_hit, 1.0)
            self.assertIn('as the telco case reports', cal.source)

    def test_calibration_table(self):
        frame = tables.calibration(self.scen)
        for row in frame.to_dict('records'):
            gain = PUBLISHED_GAIN[row['workload']]
            n_dram = PUBLISHED_VMS[row['workload']]['dram-384']
            n_mm = PUBLISHED_VMS[row['workload']]['mm-192-512']
            self.assertAlmostEqual(gain, row['model_gain'], places=4)
            self.assertAlmostEqual(gain * n_dram / n_mm, row['t_hit'],
                                   places=4)
            self.assertAlmostEqual(90 / 350, row['miss_factor'], places=3)

    def test_compare(self):
        rows = model.compare(self.scen)
        self.assertEqual(['dram-384'] * 2 + ['mm-192-512'] * 2,
                         [fit.config for fit, _r, _c in rows])
        for fit, relative, cost_delta in rows:
            self.assertEqual(PUBLISHED_VMS[fit.workload][fit.config],
                             fit.vms_per_node)
            if fit.config == 'dram-384':
                self.assertEqual(1.0, relative)
                self.assertEqual(0.0, cost_delta)
            else:
                self.assertAlmostEqual(PUBLISHED_GAIN[fit.workload],
                                       relative, places=9)
                self.assertEqual(('mm-ratio',), fit.warnings)
                self.assertEqual(1.0, fit.hit_fraction)

    def test_comparison_table_is_the_model(self):
        frame = tables.comparison(self.scen)
        fits = model.compare(self.scen, admission.admitted_counts(self.scen))
        self.assertEqual(len(fits), len(frame))
        for row, (fit, relative, _cost) in zip(frame.to_dict('records'),
                                               fits):
            self.assertEqual((fit.config, fit.workload, fit.vms_per_node,
                              fit.binding),
                             (row['config'], row['workload'],
                              row['vms_per_node'], row['binding']))
            self.assertAlmostEqual(relative, row['relative_throughput'],
                                   places=3)

    def test_aggregate_metadata(self):
        mm = self.scen.configs['mm-192-512']
        self.assertEqual({'pmem_mode': 'memory_mode',
                          'pmem_dram_cache_gb': '192'},
                         model.aggregate_metadata(mm))
        self.assertEqual(profile.HostProfile(mode='memory_mode',
                                             dram_cache_gb=192.0),
                         model.host_profile(mm))
        dram = self.scen.configs['dram-384']
        self.assertEqual({'pmem_mode': 'dram'},
                         model.aggregate_metadata(dram))

    def test_cost_and_power(self):
        for name, config in self.scen.configs.items():
            node = self.nodes[name]
            plat, cpu = config.platform, config.cpu
            dimms = [(d, n) for sock in config.sockets
                     for d, n in sock.items()]
            self.assertEqual(plat.base_cost + 2 * cpu.price
                             + sum(d.price * n for d, n in dimms), node.cost)
            self.assertEqual(plat.base_watts + 2 * cpu.watts
                             + sum(d.watts * n for d, n in dimms),
                             node.watts)
            self.assertEqual(80, node.vcpus)


class ConstraintTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.policies = sec.resolved(sec.Policies())
        self.mm = model.node(node_config(
            'cascade-lake-2s', 'xeon-gold-6230n', kinds.MEMORY_MODE,
            {'ddr4-16': 6, 'pmem100-128': 2}), self.policies)

    def test_dram_cache_binds_a_hot_flavor(self):
        # All 32 GB hot: 192 GB of cache holds 6 such VMs.
        work = workload(vcpus=4, ram_gb=32, used_gb=24, hot_ratio=1)
        self.assertEqual((6, 'dram_cache'),
                         vmsizing.density(self.mm, work, self.policies))

    def test_mode_excluded(self):
        work = workload(vcpus=4, ram_gb=32, modes=['dram'])
        self.assertEqual((0, 'mode'),
                         vmsizing.density(self.mm, work, self.policies))
        fit = model.fit(self.mm, work, self.policies,
                        sec.resolved(sec.Performance()))
        self.assertEqual(math.inf, fit.cost_per_vm)
        self.assertEqual(0, fit.vms_per_kw)

    def test_vpmem_namespaces(self):
        # 4 x 128 GB PMem 200 per socket, 1/64 lost to metadata: 504 GB
        # per socket, 31 namespaces of 16 GB each.
        node = model.node(node_config(
            'ice-lake-2s', 'xeon-gold-6330', kinds.APP_DIRECT,
            {'ddr4-32': 8, 'pmem200-128': 4}), self.policies)
        self.assertEqual((504.0, 504.0), node.region_gb)
        work = workload(vcpus=1, ram_gb=2, vpmem={'label': 'S',
                                                  'size_gb': 16})
        self.assertEqual(62, vmsizing.limits(node, work, self.policies)[
            'pmem_namespaces'])
        self.assertEqual((62, 'pmem_namespaces'),
                         vmsizing.density(node, work, self.policies))
        # The same flavor cannot run on a Memory-Mode node.
        self.assertEqual((0, 'mode+pmem_namespaces'),
                         vmsizing.density(self.mm, work, self.policies))

    def test_hit_fraction_counts_the_dram_not_the_overcommit(self):
        # Overcommitting the cache 2:1 admits 12 fully hot 32 GB VMs;
        # 192 GB of DRAM holds half of their 384 GB of hot RAM.
        policies = sec.resolved(sec.Policies(cache_overcommit=2.0))
        work = workload(vcpus=1, ram_gb=32, used_gb=8, hot_ratio=1)
        vms, binding = vmsizing.density(self.mm, work, policies)
        self.assertEqual((12, 'dram_cache'), (vms, binding))
        self.assertEqual(0.5, memperf.hit_fraction(self.mm, work, vms,
                                                   policies))
        performance = sec.resolved(sec.Performance())
        miss = memperf.miss_factor(performance)
        self.assertAlmostEqual(
            0.5 + 0.5 * miss,
            memperf.per_vm_throughput(self.mm, work, vms, policies,
                                      performance))

    def test_metadata_carries_the_cache_exactly(self):
        odd = sec.resolved(sec.Dimm(name='ddr4-odd', type='ddr4',
                                    capacity_gb=102.8809, price=0, watts=0))
        config = dataclasses.replace(
            self.mm.config,
            sockets=tuple({odd: 6, CATALOG.dimms['pmem100-128']: 2}
                          for _ in range(2)))
        metadata = model.aggregate_metadata(config)
        self.assertEqual(config.dram_gb,
                         float(metadata[profile.DRAM_CACHE_KEY]))
        self.assertEqual(config.dram_gb,
                         model.host_profile(config).dram_cache_gb)


# Hardware families: platform, CPU and the PMem modules the CPU takes.
FAMILIES = (
    ('purley-2s', 'xeon-gold-6148', ()),
    ('cascade-lake-2s', 'xeon-gold-6230n', ('pmem100-128',)),
    ('cascade-lake-2s', 'xeon-gold-6238l',
     ('pmem100-128', 'pmem100-256', 'pmem100-512')),
    ('ice-lake-2s', 'xeon-gold-6330',
     ('pmem200-128', 'pmem200-256', 'pmem200-512')),
)
DRAM_DIMMS = ('ddr4-16', 'ddr4-32', 'ddr4-64', 'ddr4-128')


def _valid(config):
    return not common.errors(population.check(config))


@st.composite
def grown_configs(draw, modes=kinds.MODES):
    """(config, a larger one): same platform, CPU, mode and DIMM kinds.

    The larger one has as many or more DIMMs, each as large or larger, and
    both populations are valid.
    """
    mode = draw(st.sampled_from(modes))
    platform, cpu, pmems = draw(st.sampled_from(
        [f for f in FAMILIES if f[2] or mode == kinds.DRAM]))
    plat = CATALOG.platforms[platform]
    channels, slots = plat.channels_per_socket, plat.slots_per_socket
    controllers = plat.controllers_per_socket
    if mode == kinds.DRAM:
        pmem = pmem2 = 0
    else:
        low = controllers if mode == kinds.MEMORY_MODE else 1
        pmem = draw(st.integers(low, channels))
        pmem2 = draw(st.integers(pmem, channels))
    low = max(pmem, 1, controllers if mode == kinds.MEMORY_MODE else 1)
    dram = draw(st.integers(low, slots - pmem2))
    dram2 = draw(st.integers(max(dram, pmem2), slots - pmem2))
    size = draw(st.integers(0, len(DRAM_DIMMS) - 1))
    size2 = draw(st.integers(size, len(DRAM_DIMMS) - 1))
    pick = draw(st.integers(0, max(len(pmems) - 1, 0)))
    pick2 = draw(st.integers(pick, max(len(pmems) - 1, 0)))

    def build(n_dram, dram_size, n_pmem, pmem_size):
        population_ = {DRAM_DIMMS[dram_size]: n_dram}
        if n_pmem:
            population_[pmems[pmem_size]] = n_pmem
        return node_config(platform, cpu, mode, population_)

    small = build(dram, size, pmem, pick)
    large = build(dram2, size2, pmem2, pick2)
    hypothesis.assume(_valid(small) and _valid(large))
    return small, large


node_configs = grown_configs().map(lambda pair: pair[0])

HOT_RATIOS = st.one_of(
    st.floats(min_value=1e-6, max_value=1.0),
    st.sampled_from([0.05, 0.1, 0.25, 0.5, 1, '1', '.5', '0.125']))


@st.composite
def workloads(draw):
    """A workload as a scenario file would give it, read by the planner."""
    ram_gb = draw(st.one_of(st.sampled_from([1, 2, 4, 8, 16, 32, 64, 128]),
                            st.floats(min_value=0.25, max_value=512)))
    raw = {'vcpus': draw(st.integers(1, 16)), 'ram_gb': ram_gb,
           'used_gb': ram_gb * draw(st.floats(min_value=0.05,
                                              max_value=1.0))}
    if draw(st.booleans()):
        raw['hot_ratio'] = draw(HOT_RATIOS)
    if draw(st.booleans()):
        raw['priority'] = draw(st.sampled_from(extra_specs.PRIORITIES))
    if draw(st.booleans()):
        raw['modes'] = draw(st.lists(st.sampled_from(kinds.MODES),
                                     min_size=1, max_size=3, unique=True))
    # vPMEM flavors run on App Direct nodes only: one in five.
    if (kinds.APP_DIRECT in raw.get('modes', kinds.MODES)
            and draw(st.sampled_from([False, False, False, False, True]))):
        raw['vpmem'] = {'label': 'L', 'size_gb': draw(
            st.sampled_from([1, 4, 16, 64, 100, 128]))}
    return workload(**raw)


policies_strategy = st.builds(
    sec.Policies,
    memory_cap=st.floats(min_value=0.05, max_value=1.0),
    host_reserve_gb=st.sampled_from([0, 0, 8, 16, 64]),
    cpu_overcommit=st.sampled_from([0.5, 1.0, 1.0, 2.0, 4.0, 16.0]),
    cache_overcommit=st.sampled_from([0.0, 0.5, 1.0, 1.0, 1.25, 2.0]),
    namespace_overhead=st.sampled_from([0.0, 1.0 / 64, 0.1, 0.5])).map(
        sec.resolved)


class PropertyTestCase(testtools.TestCase):

    @PROPERTY
    @hypothesis.given(grown_configs(), workloads(), policies_strategy)
    def test_more_memory_never_fewer_vms(self, pair, work, policies):
        small, large = pair
        before, _ = vmsizing.density(model.node(small, policies), work,
                                     policies)
        after, _ = vmsizing.density(model.node(large, policies), work,
                                    policies)
        self.assertLessEqual(before, after)

    @PROPERTY
    @hypothesis.given(node_configs, workloads(), policies_strategy,
                      st.floats(min_value=0.0, max_value=1.0))
    def test_larger_memory_cap_never_fewer_vms(self, config, work,
                                               policies, more):
        larger = dataclasses.replace(
            policies, memory_cap=policies.memory_cap
            + more * (1.0 - policies.memory_cap))
        node = model.node(config, policies)
        before, _ = vmsizing.density(node, work, policies)
        after, _ = vmsizing.density(node, work, larger)
        self.assertLessEqual(before, after)

    @PROPERTY
    @hypothesis.given(node_configs, workloads(), policies_strategy)
    def test_density_is_the_smallest_limit(self, config, work, policies):
        node = model.node(config, policies)
        limits = vmsizing.limits(node, work, policies)
        vms, binding = vmsizing.density(node, work, policies)
        for name, allowed in limits.items():
            self.assertLessEqual(vms, allowed, name)
        self.assertEqual(min(limits.values()), vms)
        named = binding.split('+')
        self.assertEqual({n for n, v in limits.items() if v == vms},
                         set(named))
        # In the documented order, each once.
        self.assertEqual([n for n in vmsizing.CONSTRAINTS if n in named],
                         named)

    @PROPERTY
    @hypothesis.given(node_configs, workloads(), policies_strategy)
    def test_cost_per_vm(self, config, work, policies):
        fit = model.fit(model.node(config, policies), work, policies,
                        sec.resolved(sec.Performance()))
        if fit.vms_per_node:
            self.assertTrue(math.isclose(fit.node_cost,
                                         fit.cost_per_vm * fit.vms_per_node,
                                         rel_tol=1e-12))
        else:
            self.assertEqual(math.inf, fit.cost_per_vm)

    @PROPERTY
    @hypothesis.given(
        grown_configs(modes=[kinds.MEMORY_MODE]).map(lambda p: p[0]),
        workloads(), policies_strategy,
        st.floats(min_value=0.5, max_value=300.0))
    def test_memory_mode_density_within_the_cache(self, config, work,
                                                  policies, dram_gb):
        # Any DRAM module size, not only the catalog's.
        odd = sec.resolved(sec.Dimm(name='ddr4-odd', type='ddr4',
                                    capacity_gb=dram_gb, price=1, watts=1))
        config = dataclasses.replace(config, sockets=tuple(
            {(odd if not d.is_pmem else d): n for d, n in sock.items()}
            for sock in config.sockets))
        node = model.node(config, policies)
        vms, _ = vmsizing.density(node, work, policies)
        capacity = config.dram_gb * profile.MB_PER_GB * \
            policies.cache_overcommit
        self.assertLessEqual(vms, nearmem.instances_in_cache(
            capacity, work.request.hot_mb(work.ram_mb)))

    @hypothesis.settings(PROPERTY, max_examples=200)
    @hypothesis.given(
        st.one_of(st.floats(min_value=0.0, max_value=1e7),
                  st.integers(0, 10 ** 7).map(float)),
        st.one_of(st.floats(min_value=1e-3, max_value=1e6),
                  st.integers(1, 10 ** 6).map(float)))
    def test_instances_in_cache_agrees_with_fits_cache(self, capacity, hot):
        n = nearmem.instances_in_cache(capacity, hot)
        self.assertGreaterEqual(n, 0)
        if n:
            self.assertTrue(nearmem.fits_cache((n - 1) * hot, hot,
                                               capacity))
        self.assertFalse(nearmem.fits_cache(n * hot, hot, capacity))


# --- numa_nodes: per-socket density -----------------------------------------

def sized_config(sockets, threads, dram_gb, pmem_gb=0, mode=kinds.DRAM):
    """A node of ``sockets`` alike sockets, each one DIMM of each kind."""
    plat = dataclasses.replace(CATALOG.platforms['cascade-lake-2s'],
                               name='p%d' % sockets, sockets=sockets)
    cpu = dataclasses.replace(CATALOG.cpus['xeon-gold-6238l'],
                              name='c%d' % threads, threads=threads)
    one = {sec.resolved(sec.Dimm(name='dram', type='ddr4',
                                 capacity_gb=dram_gb, price=1,
                                 watts=1)): 1}
    if pmem_gb:
        one[sec.resolved(sec.Dimm(name='pmem', type='pmem',
                                  capacity_gb=pmem_gb, price=1, watts=1,
                                  generation='100'))] = 1
    return scenario.NodeConfig(name='n', platform=plat, cpu=cpu, mode=mode,
                               sockets=tuple(dict(one)
                                             for _ in range(sockets)))


class NumaTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.scen = scenario.load()
        self.policies = self.scen.policies
        self.nodes = {name: model.node(c, self.policies)
                      for name, c in self.scen.configs.items()}

    def density(self, config, **raw):
        return vmsizing.density(self.nodes[config], workload(**raw),
                                self.policies)

    def test_constraint_names_only_appended(self):
        self.assertEqual(('mode', 'vcpu', 'memory', 'dram_cache',
                          'pmem_namespaces'), vmsizing.CONSTRAINTS[:5])
        self.assertEqual(('numa_nodes', 'socket_vcpu', 'socket_memory',
                          'socket_dram_cache'), vmsizing.CONSTRAINTS[5:9])
        self.assertEqual(('shared_ratio', 'near_memory_rounding'),
                         vmsizing.CONSTRAINTS[9:])

    def test_no_numa_nodes_no_socket_limits(self):
        w = self.scen.workloads['redis']
        for node in self.nodes.values():
            self.assertFalse(set(vmsizing.limits(node, w, self.policies))
                             & set(vmsizing.CONSTRAINTS[5:]))

    def test_cell_sizing(self):
        dram = model.cell_sizing(self.scen.configs['dram-384'])
        self.assertEqual(vmsizing.Cells(cells=2, memory_mb=192 * 1024,
                                        vcpus=40, cache_gb=0.0), dram)
        mm = model.cell_sizing(self.scen.configs['mm-192-512'])
        self.assertEqual(vmsizing.Cells(cells=2, memory_mb=256 * 1024,
                                        vcpus=40, cache_gb=96.0), mm)

    def test_split_flavor_as_dense_as_host_wide(self):
        # 2 x 192 GB cells: floor(192 x 0.9 / 12) = 14 halves per cell,
        # 2 x 14 / 2 = 14 VMs, as host-wide.
        self.assertEqual((14, 'memory+socket_memory'), self.density(
            'dram-384', vcpus=4, ram_gb=32, used_gb=24, numa_nodes=2))

    def test_more_cells_than_sockets(self):
        self.assertEqual((0, 'numa_nodes'), self.density(
            'dram-384', vcpus=4, ram_gb=32, numa_nodes=4))

    def test_fits_the_host_but_no_socket_memory(self):
        # 200 GB of RAM: the node's 384 GB hold one (host-wide memory
        # allows 2), no 192 GB cell does.
        raw = dict(vcpus=8, ram_gb=200, used_gb=150)
        self.assertEqual((2, 'memory'), self.density('dram-384', **raw))
        self.assertEqual((0, 'socket_memory'), self.density(
            'dram-384', numa_nodes=1, **raw))

    def test_fits_the_host_but_no_socket_vcpus(self):
        raw = dict(vcpus=48, ram_gb=16)
        self.assertEqual(1, self.density('dram-384', **raw)[0])
        self.assertEqual((0, 'socket_vcpu'), self.density(
            'dram-384', numa_nodes=1, **raw))
        # Split in two, 24 vCPUs per 40-thread cell: one VM.
        self.assertEqual((1, 'vcpu+socket_vcpu'), self.density(
            'dram-384', numa_nodes=2, **raw))

    def test_fits_the_host_cache_but_no_socket_cache(self):
        # 100 GB hot: within the host's 192 GB cache, above a socket's 96.
        raw = dict(vcpus=8, ram_gb=200, used_gb=150, hot_ratio=0.5)
        self.assertEqual((1, 'dram_cache'),
                         self.density('mm-192-512', **raw))
        self.assertEqual((0, 'socket_dram_cache'), self.density(
            'mm-192-512', numa_nodes=1, **raw))

    def test_slices_per_socket(self):
        # 3 sockets of 6 threads, 1 slice of 4 vCPUs each, 2 cells per VM:
        # floor(3 x 1 / 2) = 1 VM, though the 18 threads hold 2 host-wide.
        node = model.node(sized_config(3, 6, 64), self.policies)
        w = workload(vcpus=8, ram_gb=4, numa_nodes=2)
        self.assertEqual({'socket_vcpu': 1, 'socket_memory': 28},
                         vmsizing.cell_slices(node, w, self.policies))
        self.assertEqual(2, vmsizing.limits(node, w, self.policies)['vcpu'])
        self.assertEqual((1, 'socket_vcpu'),
                         vmsizing.density(node, w, self.policies))
        # Two slices per socket: floor(3 x 2 / 2) = 3, as many as the 24
        # threads hold host-wide.
        node = model.node(sized_config(3, 8, 64), self.policies)
        self.assertEqual((3, 'vcpu+socket_vcpu'),
                         vmsizing.density(node, w, self.policies))

    def test_discovered_node(self):
        w = workload(vcpus=4, ram_gb=32, used_gb=24, numa_nodes=2)
        unknown = model.discovered_node('h', kinds.DRAM, 384, 0, vcpus=80)
        self.assertEqual((0, 'numa_nodes'),
                         vmsizing.density(unknown, w, self.policies))
        known = model.discovered_node('h', kinds.DRAM, 384, 0, vcpus=80,
                                      sockets=2)
        self.assertEqual((14, 'memory+socket_memory'),
                         vmsizing.density(known, w, self.policies))


# Sockets of 1 to 4 with their memory, vCPUs and cache.
numa_configs = st.builds(
    lambda sockets, threads, dram, pmem, mode: sized_config(
        sockets, threads, dram, pmem if mode == kinds.MEMORY_MODE else 0,
        mode),
    st.integers(1, 4), st.integers(2, 48),
    st.sampled_from([8, 16, 24, 48, 96, 192]),
    st.sampled_from([64, 128, 256, 512]),
    st.sampled_from([kinds.DRAM, kinds.MEMORY_MODE]))


@st.composite
def numa_workloads(draw, max_nodes=4):
    n = draw(st.integers(1, max_nodes))
    ram_gb = n * draw(st.sampled_from([1, 2, 4, 8, 16, 32, 64, 100]))
    # Whole MB per cell, and not only powers of two.
    ram_gb = draw(st.sampled_from([ram_gb, ram_gb * 0.75]))
    raw = {'vcpus': n * draw(st.integers(1, 6)), 'ram_gb': ram_gb,
           'used_gb': ram_gb * draw(st.floats(min_value=0.25,
                                              max_value=1.0)),
           'hot_ratio': draw(st.sampled_from([0.1, 0.25, 0.5, 1.0])),
           'numa_nodes': n}
    return workload(**raw)


numa_policies = st.builds(
    sec.Policies,
    memory_cap=st.floats(min_value=0.5, max_value=1.0),
    host_reserve_gb=st.sampled_from([0, 0, 8]),
    cpu_overcommit=st.sampled_from([1.0, 1.0, 2.0, 4.0]),
    cache_overcommit=st.sampled_from([0.5, 1.0, 1.0, 1.5])).map(
        sec.resolved)


def _fits_one_socket(config, work, policies, slices):
    """Whether one socket holds ``slices`` instance cells: by hand."""
    if not slices:
        return True
    n = work.numa_nodes
    sockets = config.platform.sockets
    vcpus, mb = work.vcpus // n, work.ram_mb // n
    threads = config.cpu.threads
    visible_gb = (config.pmem_gb if config.mode == kinds.MEMORY_MODE
                  else config.dram_gb) / sockets
    if vcpus > threads or mb > visible_gb * 1024:
        return False
    if slices * vcpus > threads * policies.cpu_overcommit + 1e-9:
        return False
    if (slices * work.used_gb / n
            > visible_gb * policies.memory_cap * (1 + 1e-12)):
        return False
    if config.mode == kinds.MEMORY_MODE:
        capacity = (config.dram_gb * 1024 * policies.cache_overcommit
                    / sockets)
        hot = mb * work.hot_ratio
        return nearmem.fits_cache((slices - 1) * hot, hot, capacity)
    return True


class NumaPropertyTestCase(testtools.TestCase):

    @PROPERTY
    @hypothesis.given(numa_configs, numa_workloads(), numa_policies)
    def test_density_is_the_most_vms_on_distinct_sockets(
            self, config, work, policies):
        node = model.node(config, policies)
        vms, binding = vmsizing.density(node, work, policies)
        host_wide = {k: v for k, v in vmsizing.limits(node, work,
                                                      policies).items()
                     if k in vmsizing.CONSTRAINTS[:5]}
        sockets, n = config.platform.sockets, work.numa_nodes
        # The most slices one socket holds, found by trying counts.
        k = 0
        while _fits_one_socket(config, work, policies, k + 1):
            k += 1
        # vms is feasible: deal each VM to the N least-loaded sockets.
        load = [0] * sockets
        for _vm in range(vms):
            order = sorted(range(sockets), key=lambda s: load[s])[:n]
            self.assertEqual(n, len(set(order)))
            for s in order:
                load[s] += 1
        for s in range(sockets):
            self.assertTrue(_fits_one_socket(config, work, policies,
                                             load[s]), (load, k))
        self.assertLessEqual(vms, min(host_wide.values()))
        # vms + 1 is not: a host-wide limit, or too few slices, each VM
        # taking at most one per socket.
        more = vms + 1
        slices = sum(min(k, more) for _s in range(sockets))
        self.assertTrue(more > min(host_wide.values())
                        or n > sockets or slices < more * n,
                        (vms, binding, k))
        if vms == 0 and min(host_wide.values()) > 0:
            self.assertIn(binding.split('+')[0], vmsizing.CONSTRAINTS[5:])

    @PROPERTY
    @hypothesis.given(numa_configs.filter(
        lambda c: c.platform.sockets == 1), numa_workloads(max_nodes=1),
        numa_policies)
    def test_one_cell_on_one_socket_is_the_host_wide_count(
            self, config, work, policies):
        policies = dataclasses.replace(policies, host_reserve_gb=0)
        node = model.node(config, policies)
        # Where the cell's checks coincide with the host's: no instance
        # cell larger than the cell itself.
        hypothesis.assume(work.vcpus <= node.vcpus)
        hypothesis.assume(work.ram_mb
                          <= node.visible_memory_gb * profile.MB_PER_GB)
        plain = dataclasses.replace(work, numa_nodes=None)
        self.assertEqual(vmsizing.density(node, plain, policies)[0],
                         vmsizing.density(node, work, policies)[0])


def nova_admits(config, work, policies, limit=1000):
    """VMs of ``work`` that Nova 34 boots, one by one, on an empty node.

    The node is a NUMA topology of one cell per socket, sized by
    :func:`nova_pmem_filters.planner.model.cell_sizing`, with small pages only.
    Each boot must pass Placement (VCPU and MEMORY_MB with the settings
    nova-config prints), Nova's own ``numa_fit_instance_to_host`` with
    NUMATopologyFilter's limits (default spread strategy) and, in Memory
    Mode, PmemCacheFilter on the cells Nova picks.
    """
    sizing = model.cell_sizing(config)
    node = model.node(config, policies)
    reserved, ram_ratio = admission.memory_settings(node, work, policies)
    cpu_ratio = float(policies.cpu_overcommit)
    total_mb = int(round(node.visible_memory_gb * profile.MB_PER_GB))
    cpus = sizing.vcpus
    host = objects.NUMATopology(cells=[objects.NUMACell(
        id=i, cpuset=set(range(i * cpus, (i + 1) * cpus)), pcpuset=set(),
        memory=sizing.memory_mb, cpu_usage=0, memory_usage=0,
        pinned_cpus=set(),
        siblings=[{c} for c in range(i * cpus, (i + 1) * cpus)],
        mempages=[objects.NUMAPagesTopology(
            size_kb=4, total=sizing.memory_mb * 256, used=0)],
        network_metadata=objects.NetworkMetadata(physnets=set(),
                                                 tunneled=False),
        socket=i) for i in range(sizing.cells)])
    flavor = objects.Flavor(vcpus=work.vcpus, memory_mb=work.ram_mb,
                            extra_specs=dict(work.extra_specs))
    image = objects.ImageMeta.from_dict({})
    limits = objects.NUMATopologyLimits(cpu_allocation_ratio=cpu_ratio,
                                        ram_allocation_ratio=ram_ratio)
    capacity = node.profile.cache_capacity_mb(policies.cache_overcommit)
    hot_used = [0.0] * sizing.cells
    booted = 0
    while booted < limit:
        if ((booted + 1) * work.vcpus > node.vcpus * cpu_ratio
                or ((booted + 1) * work.ram_mb
                    > (total_mb - reserved) * ram_ratio)):
            break
        fitted = hardware.numa_fit_instance_to_host(
            host, hardware.numa_get_constraints(flavor, image), None,
            limits=limits)
        if fitted is None:
            break
        if config.mode == kinds.MEMORY_MODE:
            each = capacity / sizing.cells
            charged = [(c.id, c.memory * work.hot_ratio)
                       for c in fitted.cells]
            if not all(nearmem.fits_cache(hot_used[i], mb, each)
                       for i, mb in charged):
                break
            for i, mb in charged:
                hot_used[i] += mb
        host = hardware.numa_usage_from_instance_numa(host, fitted)
        booted += 1
    return booted


class NovaAgreementTestCase(testtools.TestCase):
    """The planner's count is what Nova's own NUMA fitting admits."""

    def setUp(self):
        super().setUp()
        objects.register_all()

    @hypothesis.settings(PROPERTY, max_examples=150)
    @hypothesis.given(numa_configs, numa_workloads(), numa_policies)
    def test_nova_boots_the_planned_density(self, config, work, policies):
        vms, binding = vmsizing.density(model.node(config, policies), work,
                                        policies)
        self.assertEqual(vms, nova_admits(config, work, policies),
                         binding)

    def test_fill_order_reaches_every_slice(self):
        # 3 cells of 2 slices, 2 per VM: spread reaches 3 VMs.
        config = sized_config(3, 8, 64)
        work = workload(vcpus=8, ram_gb=4, numa_nodes=2)
        policies = sec.resolved(sec.Policies())
        self.assertEqual(3, nova_admits(config, work, policies))
        self.assertEqual(3, vmsizing.density(model.node(config, policies),
                                             work, policies)[0])


class NumaNovaConfigTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        text, _source = scenario.read_text()
        raw = yaml.safe_load(text)
        raw['workloads']['split'] = {'vcpus': 4, 'ram_gb': 32,
                                     'used_gb': 24, 'hot_ratio': 0.25,
                                     'numa_nodes': 2}
        self.scen = scenario.parse(yaml.safe_dump(raw), 'numa scenario')

    def rows(self, workloads):
        frame = realise.settings(self.scen, workloads=workloads)
        return {(r.target, r.key): r.value for r in frame.itertuples()}

    def test_flavor_and_filter(self):
        rows = self.rows(['split'])
        self.assertEqual('2', rows['split', 'hw:numa_nodes'])
        # The value to set: Nova's default filters, then ours.
        self.assertTrue(rows['nova.conf of the schedulers',
                             '[filter_scheduler] enabled_filters'].endswith(
            ',NUMATopologyFilter,PmemModeFilter,PmemCacheFilter'))
        # The scheduler's even split is the planner's: no per-cell key.
        self.assertNotIn(profile.DRAM_CACHE_PER_CELL_KEY,
                         {key for _target, key in rows})

    def test_without_numa_nodes_unchanged(self):
        rows = self.rows(['redis'])
        self.assertNotIn(('redis', 'hw:numa_nodes'), rows)
        self.assertTrue(rows['nova.conf of the schedulers',
                             '[filter_scheduler] enabled_filters'].endswith(
            'ServerGroupAffinityFilter,PmemModeFilter,PmemCacheFilter'))

    def test_cell_admits_is_novas_comparison(self):
        # 0.1 x 3 is 0.30000000000000004 in floats: Nova's limit.
        self.assertEqual(3, admission.cell_admits(10, 0.3, 1))
        self.assertEqual(2, admission.cell_admits(10, 0.29, 1))
        self.assertEqual(0, admission.cell_admits(10, 4.0, 11))

    def test_ratio_holds_host_and_cell_bounds(self):
        # 2 x 48 GB cells, 8 GB reserved, cap 0.68, 32 GB flavors using
        # 16.32 GB in halves: the exact ratio rounded to 4 decimals,
        # 1.3333, gives Placement the planner's 3 VMs but a cell 3 halves
        # where the planner counts floor(48 x 0.68 / 8.16) = 4.
        policies = sec.resolved(sec.Policies(memory_cap=0.68,
                                             host_reserve_gb=8))
        node = model.node(sized_config(2, 64, 48), policies)
        w = workload(vcpus=2, ram_gb=32, used_gb=16.32, numa_nodes=2)
        sizing = vmsizing.cells(node)
        self.assertEqual(4, vmsizing.cell_slices(node, w,
                                                 policies)['socket_memory'])
        self.assertEqual(3, admission.cell_admits(sizing.memory_mb, 1.3333,
                                                  w.ram_mb // 2))
        reserved, ratio = admission.memory_settings(node, w, policies)
        self.assertEqual(4, admission.cell_admits(sizing.memory_mb, ratio,
                                                  w.ram_mb // 2))
        self.assertEqual(
            vmsizing.limits(node, w, policies)['memory'],
            admission.placement_admits(2 * sizing.memory_mb, reserved,
                                       ratio, w.ram_mb))
        self.assertEqual((3, 'memory'), vmsizing.density(node, w, policies))


class NumaDocExampleTestCase(testtools.TestCase):
    """The worked example of doc/source/planner.rst, numa_nodes section."""

    WORKLOADS = {
        'db': {'vcpus': 8, 'ram_gb': 100, 'hot_ratio': 0.5},
        'db-1cell': {'vcpus': 8, 'ram_gb': 100, 'hot_ratio': 0.5,
                     'numa_nodes': 1},
        'db-2cells': {'vcpus': 8, 'ram_gb': 100, 'hot_ratio': 0.5,
                      'numa_nodes': 2},
        'wide-1cell': {'vcpus': 48, 'ram_gb': 16, 'numa_nodes': 1},
    }

    def test_compare(self):
        text, _source = scenario.read_text()
        raw = yaml.safe_load(text)
        raw.update(workloads=self.WORKLOADS, name='numa-example')
        for key in ('demand', 'policies'):
            raw.pop(key, None)
        scen = scenario.parse(yaml.safe_dump(raw), 'numa.yaml')
        got = {(f.config, f.workload): (f.vms_per_node, f.binding)
               for f, _rel, _cost in model.compare(scen)}
        self.assertEqual({
            ('dram-384', 'db'): (3, 'memory'),
            ('dram-384', 'db-1cell'): (2, 'socket_memory'),
            ('dram-384', 'db-2cells'): (3, 'memory+socket_memory'),
            ('dram-384', 'wide-1cell'): (0, 'socket_vcpu'),
            ('mm-192-512', 'db'): (3, 'dram_cache'),
            ('mm-192-512', 'db-1cell'): (2, 'socket_dram_cache'),
            ('mm-192-512', 'db-2cells'): (
                3, 'dram_cache+socket_dram_cache'),
            ('mm-192-512', 'wide-1cell'): (0, 'socket_vcpu'),
        }, got)
