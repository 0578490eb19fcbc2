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
import testtools

from nova_pmem_filters import extra_specs
from nova_pmem_filters import profile
from planner import model
from planner import population
from planner import scenario
from planner import tables

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
    return scenario._build_workload(name, raw, 'test')


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
                got, _binding = model.density(self.nodes[config], work,
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
            _vms, got = model.density(self.nodes[config],
                                      self.scen.workloads[name],
                                      self.policies)
            self.assertEqual(binding, got, (config, name))

    def test_limits(self):
        limits = model.limits(self.nodes['mm-192-512'],
                              self.scen.workloads['redis'], self.policies)
        # 80 vCPU / 4; 0.9 x 512 / 24; 192 GB cache / (32 GB x 0.25 hot).
        self.assertEqual({'vcpu': 20, 'memory': 19, 'dram_cache': 24},
                         limits)
        limits = model.limits(self.nodes['dram-384'],
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
            self.assertEqual(gain, cal.published_gain)
            self.assertAlmostEqual(gain, cal.model_gain, places=9)
            self.assertEqual((n_dram, n_mm),
                             (cal.baseline_vms, cal.config_vms))
            # The cache holds every VM's hot RAM, so the per-VM factor is
            # the node gain spread over more VMs.
            self.assertEqual(1.0, cal.hit_fraction)
            self.assertAlmostEqual(gain * n_dram / n_mm, cal.t_hit,
                                   places=9)
            self.assertLess(cal.t_hit, 1.0)
            self.assertIn('field notes 1', cal.source)

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
        fits = model.compare(self.scen)
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
        self.policies = scenario.Policies()
        self.mm = model.node(node_config(
            'cascade-lake-2s', 'xeon-gold-6230n', profile.MEMORY_MODE,
            {'ddr4-16': 6, 'pmem100-128': 2}), self.policies)

    def test_dram_cache_binds_a_hot_flavor(self):
        # All 32 GB hot: 192 GB of cache holds 6 such VMs.
        work = workload(vcpus=4, ram_gb=32, used_gb=24, hot_ratio=1)
        self.assertEqual((6, 'dram_cache'),
                         model.density(self.mm, work, self.policies))

    def test_mode_excluded(self):
        work = workload(vcpus=4, ram_gb=32, modes=['dram'])
        self.assertEqual((0, 'mode'),
                         model.density(self.mm, work, self.policies))
        fit = model.fit(self.mm, work, self.policies, scenario.Performance())
        self.assertEqual(math.inf, fit.cost_per_vm)
        self.assertEqual(0, fit.vms_per_kw)

    def test_vpmem_namespaces(self):
        # 4 x 128 GB PMem 200 per socket, 1/64 lost to metadata: 504 GB
        # per socket, 31 namespaces of 16 GB each.
        node = model.node(node_config(
            'ice-lake-2s', 'xeon-gold-6330', profile.APP_DIRECT,
            {'ddr4-32': 8, 'pmem200-128': 4}), self.policies)
        self.assertEqual((504.0, 504.0), node.region_gb)
        work = workload(vcpus=1, ram_gb=2, vpmem={'label': 'S',
                                                  'size_gb': 16})
        self.assertEqual(62, model.limits(node, work, self.policies)[
            'pmem_namespaces'])
        self.assertEqual((62, 'pmem_namespaces'),
                         model.density(node, work, self.policies))
        # The same flavor cannot run on a Memory-Mode node.
        self.assertEqual((0, 'mode+pmem_namespaces'),
                         model.density(self.mm, work, self.policies))

    def test_hit_fraction_counts_the_dram_not_the_overcommit(self):
        # Overcommitting the cache 2:1 admits 12 fully hot 32 GB VMs;
        # 192 GB of DRAM holds half of their 384 GB of hot RAM.
        policies = scenario.Policies(cache_overcommit=2.0)
        work = workload(vcpus=1, ram_gb=32, used_gb=8, hot_ratio=1)
        vms, binding = model.density(self.mm, work, policies)
        self.assertEqual((12, 'dram_cache'), (vms, binding))
        self.assertEqual(0.5, model.hit_fraction(self.mm, work, vms,
                                                 policies))
        performance = scenario.Performance()
        miss = model.miss_factor(performance)
        self.assertAlmostEqual(
            0.5 + 0.5 * miss,
            model.per_vm_throughput(self.mm, work, vms, policies,
                                    performance))

    def test_metadata_carries_the_cache_exactly(self):
        odd = scenario.Dimm(name='ddr4-odd', type='ddr4',
                            capacity_gb=102.8809, price=0, watts=0)
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
    return not population.errors(population.check(config))


@st.composite
def grown_configs(draw, modes=profile.MODES):
    """(config, a larger one): same platform, CPU, mode and DIMM kinds.

    The larger one has as many or more DIMMs, each as large or larger, and
    both populations are valid.
    """
    mode = draw(st.sampled_from(modes))
    platform, cpu, pmems = draw(st.sampled_from(
        [f for f in FAMILIES if f[2] or mode == profile.DRAM]))
    plat = CATALOG.platforms[platform]
    channels, slots = plat.channels_per_socket, plat.slots_per_socket
    controllers = plat.controllers_per_socket
    if mode == profile.DRAM:
        pmem = pmem2 = 0
    else:
        low = controllers if mode == profile.MEMORY_MODE else 1
        pmem = draw(st.integers(low, channels))
        pmem2 = draw(st.integers(pmem, channels))
    low = max(pmem, 1, controllers if mode == profile.MEMORY_MODE else 1)
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
        raw['modes'] = draw(st.lists(st.sampled_from(profile.MODES),
                                     min_size=1, max_size=3, unique=True))
    # vPMEM flavors run on App Direct nodes only: one in five.
    if (profile.APP_DIRECT in raw.get('modes', profile.MODES)
            and draw(st.sampled_from([False, False, False, False, True]))):
        raw['vpmem'] = {'label': 'L', 'size_gb': draw(
            st.sampled_from([1, 4, 16, 64, 100, 128]))}
    return workload(**raw)


policies_strategy = st.builds(
    scenario.Policies,
    memory_cap=st.floats(min_value=0.05, max_value=1.0),
    host_reserve_gb=st.sampled_from([0, 0, 8, 16, 64]),
    cpu_overcommit=st.sampled_from([0.5, 1.0, 1.0, 2.0, 4.0, 16.0]),
    cache_overcommit=st.sampled_from([0.0, 0.5, 1.0, 1.0, 1.25, 2.0]),
    namespace_overhead=st.sampled_from([0.0, 1.0 / 64, 0.1, 0.5]))


class PropertyTestCase(testtools.TestCase):

    @PROPERTY
    @hypothesis.given(grown_configs(), workloads(), policies_strategy)
    def test_more_memory_never_fewer_vms(self, pair, work, policies):
        small, large = pair
        before, _ = model.density(model.node(small, policies), work,
                                  policies)
        after, _ = model.density(model.node(large, policies), work,
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
        before, _ = model.density(node, work, policies)
        after, _ = model.density(node, work, larger)
        self.assertLessEqual(before, after)

    @PROPERTY
    @hypothesis.given(node_configs, workloads(), policies_strategy)
    def test_density_is_the_smallest_limit(self, config, work, policies):
        node = model.node(config, policies)
        limits = model.limits(node, work, policies)
        vms, binding = model.density(node, work, policies)
        for name, allowed in limits.items():
            self.assertLessEqual(vms, allowed, name)
        self.assertEqual(min(limits.values()), vms)
        named = binding.split('+')
        self.assertEqual({n for n, v in limits.items() if v == vms},
                         set(named))
        # In the documented order, each once.
        self.assertEqual([n for n in model.CONSTRAINTS if n in named],
                         named)

    @PROPERTY
    @hypothesis.given(node_configs, workloads(), policies_strategy)
    def test_cost_per_vm(self, config, work, policies):
        fit = model.fit(model.node(config, policies), work, policies,
                        scenario.Performance())
        if fit.vms_per_node:
            self.assertTrue(math.isclose(fit.node_cost,
                                         fit.cost_per_vm * fit.vms_per_node,
                                         rel_tol=1e-12))
        else:
            self.assertEqual(math.inf, fit.cost_per_vm)

    @PROPERTY
    @hypothesis.given(
        grown_configs(modes=[profile.MEMORY_MODE]).map(lambda p: p[0]),
        workloads(), policies_strategy,
        st.floats(min_value=0.5, max_value=300.0))
    def test_memory_mode_density_within_the_cache(self, config, work,
                                                  policies, dram_gb):
        # Any DRAM module size, not only the catalog's.
        odd = scenario.Dimm(name='ddr4-odd', type='ddr4',
                            capacity_gb=dram_gb, price=1, watts=1)
        config = dataclasses.replace(config, sockets=tuple(
            {(odd if not d.is_pmem else d): n for d, n in sock.items()}
            for sock in config.sockets))
        node = model.node(config, policies)
        vms, _ = model.density(node, work, policies)
        capacity = config.dram_gb * profile.MB_PER_GB * \
            policies.cache_overcommit
        self.assertLessEqual(vms, profile.instances_in_cache(
            capacity, work.request.hot_mb(work.ram_mb)))

    @hypothesis.settings(PROPERTY, max_examples=200)
    @hypothesis.given(
        st.one_of(st.floats(min_value=0.0, max_value=1e7),
                  st.integers(0, 10 ** 7).map(float)),
        st.one_of(st.floats(min_value=1e-3, max_value=1e6),
                  st.integers(1, 10 ** 6).map(float)))
    def test_instances_in_cache_agrees_with_fits_cache(self, capacity, hot):
        n = profile.instances_in_cache(capacity, hot)
        self.assertGreaterEqual(n, 0)
        if n:
            self.assertTrue(profile.fits_cache((n - 1) * hot, hot,
                                               capacity))
        self.assertFalse(profile.fits_cache(n * hot, hot, capacity))
