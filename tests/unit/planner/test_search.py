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
"""Tests of the planner's population search and its command."""

import contextlib
import dataclasses
import io
import logging
import math
import subprocess
import sys

import hypothesis
from hypothesis import strategies as st
import testtools


from nova_pmem_filters.core.formats import scenario_sections as sec
from nova_pmem_filters.core.rules import kinds

from nova_pmem_filters.planner import cli
from nova_pmem_filters.planner import enumeration
from nova_pmem_filters.planner import errors
from nova_pmem_filters.planner import model
from nova_pmem_filters.planner import population
from nova_pmem_filters.planner.population import common
from nova_pmem_filters.planner import ranking
from nova_pmem_filters.planner import scenario
from nova_pmem_filters.planner import search

ICE_LAKE = 'ice-lake-2s'
GOLD_6330 = 'xeon-gold-6330'
ICE_LAKE_DIMMS = ['ddr4-16', 'ddr4-32', 'ddr4-64',
                  'pmem200-128', 'pmem200-256', 'pmem200-512']


def population_key(config):
    """(((DIMM name, modules per socket), ...), mode): a population."""
    counts = tuple(sorted((d.name, int(n))
                          for d, n in config.per_socket.items() if n))
    return counts, config.mode


class SearchTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.scen = scenario.load()
        self.catalog = self.scen.catalog

    def _run(self, **kwargs):
        args = dict(platform=ICE_LAKE, cpu=GOLD_6330, dimms=ICE_LAKE_DIMMS,
                    budget=14000, limit=0)
        args.update(kwargs)
        return search.run(self.scen, **args)

    def test_every_population_passes_the_rules(self):
        for kwargs in ({}, {'budget': 12000},
                       {'platform': 'cascade-lake-2s',
                        'cpu': 'xeon-gold-6230n', 'dimms': None,
                        'budget': 11704, 'band': 0.3}):
            result = self._run(**kwargs)
            self.assertGreater(len(result.nodes), 50)
            self.assertEqual(len(result.nodes), len(result.frame))
            for name, node_ in result.nodes.items():
                config = node_.config
                self.assertEqual(
                    [], common.errors(population.check(config)), name)
                self.assertEqual(name, config.name)
                self.assertEqual(config.platform.sockets,
                                 len(config.sockets))
                for sock in config.sockets:
                    self.assertEqual(config.per_socket, sock)
            self.assertEqual(sorted(result.nodes),
                             sorted(result.frame['config']))

    def test_populations_are_distinct(self):
        result = self._run()
        keys = [population_key(n.config)
                for n in result.nodes.values()]
        self.assertEqual(len(keys), len(set(keys)))

    def _assert_sorted(self, frame, objective):
        values = [math.inf if v is None else v for v in frame[objective]]
        if ranking.OBJECTIVES[objective]:
            values = [-v for v in values]
        self.assertEqual(sorted(values), values)

    def test_ranking_follows_the_objective(self):
        t_hit = model.calibrate(self.scen)['redis'].t_hit
        for objective in ranking.OBJECTIVES:
            result = self._run(objective=objective)
            frame = result.frame
            self.assertEqual(list(range(1, len(frame) + 1)),
                             list(frame['rank']))
            self._assert_sorted(frame, objective)
            # The ranking is over the unrounded model values too.
            fits = [model.fit(result.nodes[name], result.workload,
                              self.scen.policies, self.scen.performance,
                              t_hit=t_hit)
                    for name in frame['config'][:30]]
            raw = [getattr(f, objective) for f in fits]
            if ranking.OBJECTIVES[objective]:
                raw = [-v for v in raw]
            self.assertEqual(sorted(raw), raw)

    def test_limit_keeps_the_top_rows(self):
        whole = self._run().frame
        top = self._run(limit=7).frame
        self.assertEqual(7, len(top))
        self.assertEqual(list(whole['config'][:7]), list(top['config']))
        self.assertEqual(search.DEFAULT_LIMIT, len(self._run(
            limit=search.DEFAULT_LIMIT).frame))

    def test_budget_band_is_respected(self):
        for budget, band in ((12000, 0.10), (20000, 0.05), (13048, 0.0),
                             (15000, 0.5)):
            result = self._run(budget=budget, band=band)
            low, high = budget * (1 - band), budget * (1 + band)
            self.assertEqual((low, high), (result.low, result.high))
            for node_ in result.nodes.values():
                self.assertTrue(low - 1e-6 <= node_.cost <= high + 1e-6,
                                '%s costs %s' % (node_.config.name,
                                                 node_.cost))
            for cost in result.frame['node_cost']:
                self.assertTrue(low - 0.01 <= cost <= high + 0.01)

    def test_band_finds_everything_the_wider_band_has_inside_it(self):
        narrow = self._run(budget=15000, band=0.05)
        wide = self._run(budget=15000, band=0.5)
        inside = {name for name, n in wide.nodes.items()
                  if narrow.low <= n.cost <= narrow.high}
        self.assertEqual(inside, set(narrow.nodes))

    def test_field_notes_memory_mode_population_is_found(self):
        # Field notes 1: 6 x 16 GB DDR4 + 2 x 128 GB PMem per socket, Memory
        # Mode, 2 x Gold 6230N: 19 Redis VMs per node.
        published = self.scen.configs['mm-192-512']
        cost = model.node(published, self.scen.policies).cost
        result = search.run(self.scen, 'cascade-lake-2s', 'xeon-gold-6230n',
                            workload='redis', budget=cost, band=0.10,
                            limit=0)
        self.assertIn('mm-6x16+2x128', result.nodes)
        node_ = result.nodes['mm-6x16+2x128']
        self.assertEqual(population_key(published),
                         population_key(node_.config))
        self.assertEqual(cost, node_.cost)
        row = result.frame[result.frame['config'] == 'mm-6x16+2x128']
        self.assertEqual(1, len(row))
        row = row.iloc[0]
        self.assertEqual(kinds.MEMORY_MODE, row['mode'])
        self.assertEqual('12 x ddr4-16 + 4 x pmem100-128', row['population'])
        self.assertEqual(19, row['vms_per_node'])
        self.assertEqual(512.0, row['visible_memory_gb'])
        self.assertEqual(192.0, row['dram_cache_gb'])
        self.assertIn('mm-ratio', row['warnings'].split(','))

    def test_default_budget_is_the_baseline_cost(self):
        result = search.run(self.scen, 'cascade-lake-2s', 'xeon-gold-6230n',
                            limit=3)
        baseline = model.node(self.scen.configs[self.scen.baseline],
                              self.scen.policies)
        self.assertEqual(baseline.cost, result.budget)
        self.assertEqual('redis', result.workload.name)
        self.assertEqual(3, len(result.frame))

    def test_default_dimms_are_those_the_platform_and_cpu_take(self):
        result = search.run(self.scen, ICE_LAKE, GOLD_6330, budget=20000)
        names = [d.name for d in result.dimms]
        self.assertEqual(['ddr4-16', 'ddr4-32', 'ddr4-64', 'ddr4-128',
                          'pmem200-128', 'pmem200-256', 'pmem200-512'],
                         names)
        result = search.run(self.scen, 'cascade-lake-2s', 'xeon-gold-6230n',
                            budget=12000)
        self.assertNotIn('pmem100-256', [d.name for d in result.dimms])
        result = search.run(self.scen, 'purley-2s', 'xeon-gold-6148',
                            budget=12000)
        self.assertFalse(any(d.is_pmem for d in result.dimms))
        self.assertEqual((kinds.DRAM,), result.modes)
        self.assertEqual({kinds.DRAM}, set(result.frame['mode']))

    def test_modes(self):
        result = self._run(modes=['memory_mode'])
        self.assertEqual({kinds.MEMORY_MODE}, set(result.frame['mode']))
        result = self._run(modes=['dram,app_direct'])
        self.assertEqual({kinds.DRAM, kinds.APP_DIRECT},
                         set(result.frame['mode']))
        for node_ in result.nodes.values():
            has_pmem = node_.config.pmem_gb > 0
            self.assertEqual(node_.config.mode == kinds.APP_DIRECT,
                             has_pmem)

    def test_config_names(self):
        dimms = self.catalog.dimms
        labels = enumeration.dimm_labels([dimms['ddr4-16'],
                                          dimms['pmem100-128']])
        self.assertEqual('mm-6x16+2x128', enumeration.config_name(
            kinds.MEMORY_MODE, {dimms['pmem100-128']: 2,
                                dimms['ddr4-16']: 6}, labels))
        self.assertEqual('ad-4x16+4x128', enumeration.config_name(
            kinds.APP_DIRECT, {dimms['ddr4-16']: 4,
                               dimms['pmem200-128']: 4}))
        # Two DRAM types of one size would read alike: names instead.
        other = dataclasses.replace(dimms['ddr4-16'], name='ddr5-16',
                                    type='ddr5')
        labels = enumeration.dimm_labels([dimms['ddr4-16'], other])
        self.assertEqual('dram-1xddr4-16+2xddr5-16', enumeration.config_name(
            kinds.DRAM, {other: 2, dimms['ddr4-16']: 1}, labels))

    def test_rejected_options(self):
        cases = [
            (dict(platform='nope'), '--platform: unknown platform'),
            (dict(platform=None), '--platform: required'),
            (dict(cpu='nope'), '--cpu: unknown CPU'),
            (dict(cpu=None), '--cpu: required'),
            (dict(workload='nope'), '--workload: unknown workload'),
            (dict(dimms=['nope']), '--dimm: unknown DIMM'),
            (dict(dimms=['pmem100-128']), 'cannot drive PMem 100'),
            (dict(objective='nope'), '--objective: unknown objective'),
            (dict(modes=['dram,nope']), '--modes: unknown mode'),
            (dict(budget='x'), '--budget: expected a number'),
            (dict(budget=0), '--budget: must be greater than 0'),
            # One bound, one short line, however the number is written.
            (dict(budget='1e300'),
             '--budget: must be at most 1e+15, got 1e+300'),
            (dict(budget='1' + '0' * 300),
             '--budget: must be at most 1e+15, got 1e+300'),
            (dict(budget='inf'), '--budget: must be at most 1e+15, got inf'),
            (dict(budget='nan'), "--budget: expected a number, got 'nan'"),
            (dict(band=-0.1), '--band: must be at least 0'),
            (dict(limit='ten'), '--limit: expected a whole number'),
            (dict(budget=100), 'no valid population'),
            (dict(dimms=['pmem200-128'], modes=['app_direct'],
                  budget=10000, band=0.3), 'all invalid'),
        ]
        for kwargs, fragment in cases:
            exc = self.assertRaises(errors.PlannerError, self._run,
                                    **kwargs)
            self.assertIn(fragment, str(exc))
            self.assertNotIn('\n', str(exc))


_GENERATIONS = st.sampled_from([(), ('100',), ('200',), ('100', '200')])


@st.composite
def small_searches(draw):
    """A random small platform, CPU, DIMM types, modes and budget band.

    The budget is the price of a random handful of the DIMMs, so that most
    bands hold populations.
    """
    channels = draw(st.integers(1, 3))
    plat = sec.resolved(sec.Platform(
        name='small', sockets=draw(st.integers(1, 2)),
        controllers_per_socket=draw(st.integers(1, channels)),
        channels_per_socket=channels,
        slots_per_channel=draw(st.integers(1, 2)),
        base_cost=draw(st.integers(0, 2000)), base_watts=100.0,
        pmem_generations=draw(_GENERATIONS)))
    cpu = sec.resolved(sec.Cpu(
        name='cpu', cores=16, threads=32, price=draw(st.integers(0, 2000)),
        watts=150.0,
        memory_limit_gb=draw(st.sampled_from([256, 512, 1024, 6144])),
        pmem_generations=draw(_GENERATIONS),
        pmem_max_module_gb=draw(st.sampled_from([128, 256, 512]))))
    dimms = []
    for index in range(draw(st.integers(1, 2))):
        dimms.append(sec.resolved(sec.Dimm(
            name='ddr-%d' % index, type='ddr4',
            capacity_gb=draw(st.sampled_from([16, 32, 64, 128])),
            price=float(draw(st.integers(0, 1500))), watts=3.0)))
    for index in range(draw(st.integers(0, 2))):
        dimms.append(sec.resolved(sec.Dimm(
            name='pmem-%d' % index, type='pmem',
            generation=draw(st.sampled_from(
                plat.pmem_generations or ('100', '200'))),
            capacity_gb=draw(st.sampled_from([128, 256, 512])),
            price=float(draw(st.integers(0, 3000))), watts=15.0)))
    modes = tuple(m for m in kinds.MODES
                  if m in draw(st.sets(st.sampled_from(kinds.MODES),
                                       min_size=1)))
    handful = draw(st.lists(st.sampled_from(dimms), min_size=1,
                            max_size=plat.slots_per_socket))
    budget = (plat.base_cost + cpu.price * plat.sockets
              + plat.sockets * sum(d.price for d in handful))
    band = draw(st.sampled_from([0.0, 0.05, 0.1, 0.3, 1.0, 100.0]))
    return plat, cpu, dimms, modes, max(budget, 1.0), band


class FastEqualsNaiveTestCase(testtools.TestCase):

    @hypothesis.settings(derandomize=True, max_examples=60, deadline=None,
                         database=None, print_blob=False,
                         suppress_health_check=[
                             hypothesis.HealthCheck.too_slow])
    @hypothesis.given(small_searches())
    def test_fast_enumeration_equals_naive(self, problem):
        plat, cpu, dimms, modes, budget, band = problem
        low, high = enumeration.band_limits(budget, band)
        policies = sec.resolved(sec.Policies())
        fast = enumeration.find(plat, cpu, dimms, modes, low, high, policies)
        naive = enumeration.NaiveSearch(plat, cpu, dimms, modes, low, high,
                                        policies).run()
        fast_keys = [population_key(n.config) for n in fast]
        self.assertEqual(len(fast_keys), len(set(fast_keys)))
        self.assertEqual(len(fast), len({n.config.name for n in fast}))
        self.assertEqual(
            sorted({population_key(n.config) for n in naive}),
            sorted(fast_keys))
        for node_ in fast:
            self.assertEqual([], common.errors(node_.findings))
            self.assertTrue(enumeration.in_band(node_.cost, low, high))

    def test_naive_and_fast_agree_on_a_real_platform(self):
        # ice-lake-2s cut to 3 channels: small enough for the naive one.
        scen = scenario.load()
        plat = dataclasses.replace(scen.catalog.platforms[ICE_LAKE],
                                   channels_per_socket=3,
                                   controllers_per_socket=1)
        cpu = scen.catalog.cpus[GOLD_6330]
        dimms = [scen.catalog.dimms[n] for n in ('ddr4-16', 'ddr4-64',
                                                 'pmem200-128',
                                                 'pmem200-256')]
        low, high = enumeration.band_limits(12000, 0.25)
        fast = enumeration.find(plat, cpu, dimms, kinds.MODES, low, high,
                                scen.policies)
        naive = enumeration.NaiveSearch(plat, cpu, dimms, kinds.MODES, low,
                                        high, scen.policies).run()
        self.assertGreater(len(fast), 20)
        self.assertEqual(
            sorted(population_key(n.config) for n in naive),
            sorted(population_key(n.config) for n in fast))


class SearchCommandTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        # cliff adds a console handler to the root logger on every run.
        root = logging.getLogger()
        self.addCleanup(setattr, root, 'handlers', list(root.handlers))
        self.addCleanup(root.setLevel, root.level)

    def _main(self, *argv):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = cli.main(['search'] + list(argv))
        return status, out.getvalue(), err.getvalue()

    def test_search_lists_ranked_populations(self):
        status, out, err = self._main(
            '--platform', 'cascade-lake-2s', '--cpu', 'xeon-gold-6230n',
            '--budget', '11704', '--limit', '40', '--modes', 'memory_mode',
            '-f', 'value', '-c', 'rank', '-c', 'config')
        self.assertEqual(0, status, err)
        lines = out.splitlines()
        self.assertEqual(40, len(lines))
        self.assertEqual('1', lines[0].split()[0])
        self.assertIn('mm-6x16+2x128', [line.split()[1] for line in lines])

    def test_bad_options_give_one_line_and_status_2(self):
        base = ['--platform', ICE_LAKE, '--cpu', GOLD_6330]
        cases = [
            (['--platform', 'nope', '--cpu', GOLD_6330], 'nope'),
            (['--platform', ICE_LAKE, '--cpu', 'nope'], 'nope'),
            (['--cpu', GOLD_6330], '--platform'),
            (base + ['--dimm', 'ddr9-1'], 'ddr9-1'),
            (base + ['--dimm', 'pmem100-128'], 'pmem100-128'),
            (base + ['--workload', 'nope'], 'nope'),
            (base + ['--objective', 'fastest'], 'fastest'),
            (base + ['--budget', '100'], 'no valid population'),
            (base + ['--band', 'wide'], '--band'),
        ]
        for argv, fragment in cases:
            status, out, err = self._main(*argv)
            self.assertEqual(2, status, argv)
            self.assertEqual('', out, argv)
            # Off a terminal, the stages run before it are lines too.
            self.assertEqual(1, len([ln for ln in err.splitlines()
                                     if not ln.startswith('search: ')]),
                             err)
            self.assertIn(fragment, err)

    def test_huge_budget_is_one_short_line(self):
        # It was an 884-character line with two 300-digit numbers.
        base = ['--platform', ICE_LAKE, '--cpu', GOLD_6330]
        for budget in ('1e300', '1' + '0' * 300):
            status, out, err = self._main(*base + ['--budget', budget])
            self.assertEqual(2, status, err)
            self.assertEqual('', out)
            self.assertEqual(['nova-pmem-planner search: error: --budget: '
                              'must be at most 1e+15, got 1e+300'],
                             err.splitlines())

    def test_nothing_found_shows_short_numbers(self):
        status, out, err = self._main('--platform', ICE_LAKE, '--cpu',
                                      GOLD_6330, '--budget', '1e15')
        self.assertEqual(2, status, err)
        self.assertIn('costs 1e+15 +-10% (9e+14 to 1.1e+15); populations '
                      'of these DIMMs cost 7672 to 207288 per node', err)

    def test_entry_point_in_a_subprocess(self):
        proc = subprocess.run(
            [sys.executable, '-m', 'nova_pmem_filters.planner.cli', 'search',
             '--platform', ICE_LAKE, '--cpu', GOLD_6330, '--objective',
             'nope'],
            capture_output=True, text=True, timeout=120)
        self.assertEqual(2, proc.returncode, proc.stderr)
        self.assertEqual('', proc.stdout)
        self.assertEqual(['nova-pmem-planner search: error: '
                          '--objective: unknown objective \'nope\' '
                          '(known: cost_per_vm, vms_per_node, vms_per_kw, '
                          'node_throughput)'], proc.stderr.splitlines())
