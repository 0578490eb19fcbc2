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
"""Which CPUs a platform takes: the rule, search and scenario validation."""

import dataclasses
import os

import fixtures
import testtools
import yaml

from nova_pmem_filters.core.rules import kinds

from nova_pmem_filters.planner import errors
from nova_pmem_filters.planner import population
from nova_pmem_filters.planner.population import common
from nova_pmem_filters.planner.population import cpus
from nova_pmem_filters.planner import scenario
from nova_pmem_filters.planner import search
from tests.unit import clitools
from tests.unit.planner.population import test_pmem

CATALOG = test_pmem.CATALOG


def problem(platform, cpu, catalog=None):
    return cpus.cpu_problem(CATALOG.platforms[platform],
                            CATALOG.cpus[cpu], catalog)


class CpuRuleTestCase(testtools.TestCase):

    def test_ice_lake_cpu_on_cascade_lake_board(self):
        found = problem('cascade-lake-2s', 'xeon-gold-6330', CATALOG)
        self.assertEqual(common.ERROR, found.severity)
        self.assertEqual('cpu-unsupported-platform', found.code)
        for part in ('xeon-gold-6330', 'Ice Lake', 'LGA4189',
                     'cascade-lake-2s', 'board takes only CPUs of',
                     'Cascade Lake (socket LGA3647)',
                     'xeon-gold-6148, xeon-gold-6230n, xeon-gold-6238l'):
            self.assertIn(part, found.message)
        self.assertIn('hothardware.com', found.source)
        # The board's list is the catalog's, named as the project's.
        self.assertIn('assumption: the catalog entry of platform '
                      'cascade-lake-2s lists the CPU generations its board '
                      'takes (skylake, cascade_lake)', found.source)

    def test_a_platform_without_a_list_is_judged_by_its_memory(self):
        board = dataclasses.replace(CATALOG.platforms['cascade-lake-2s'],
                                    cpu_generations=())
        found = cpus.cpu_problem(board, CATALOG.cpus['xeon-gold-6330'])
        for part in ('8 DDR4 channels per socket', 'cascade-lake-2s, whose '
                     '6 DDR4 channels per socket take only CPUs of',
                     'Cascade Lake (socket LGA3647)'):
            self.assertIn(part, found.message)
        self.assertIsNone(cpus.cpu_problem(
            board, CATALOG.cpus['xeon-gold-6230n']))

    def test_same_memory_other_socket(self):
        # Xeon 6900P and EPYC 9005 boards both wire 12 DDR5 channels: only
        # the boards' lists tell them apart.
        scen = scenario.load('cxl-cost-matched')
        catalog = scen.catalog
        found = cpus.cpu_problem(catalog.platforms['turin-2s'],
                                 catalog.cpus['xeon-6980p'], catalog)
        self.assertIn('CPU xeon-6980p, generation granite_rapids, does not '
                      'fit platform turin-2s, whose board takes only CPUs '
                      'of: generation genoa; generation turin', found.message)
        self.assertIsNotNone(cpus.cpu_problem(
            catalog.platforms['granite-rapids-ap-2s'],
            catalog.cpus['epyc-9755']))
        self.assertIsNone(cpus.cpu_problem(
            catalog.platforms['granite-rapids-ap-2s'],
            catalog.cpus['xeon-6980p']))

    def test_ice_lake_cpu_on_purley_board(self):
        found = problem('purley-2s', 'xeon-gold-6330')
        self.assertIn('purley-2s', found.message)
        # Without a catalog the platform's generations are named.
        self.assertIn('Skylake-SP (socket LGA3647)', found.message)
        self.assertNotIn('CPUs of the catalog', found.message)

    def test_cascade_lake_cpu_on_ice_lake_board(self):
        found = problem('ice-lake-2s', 'xeon-gold-6230n', CATALOG)
        self.assertIn('Ice Lake (socket LGA4189)', found.message)
        self.assertIn('CPUs of the catalog it takes: xeon-gold-6330',
                      found.message)

    def test_cpus_that_fit(self):
        for platform, cpu in (('purley-2s', 'xeon-gold-6148'),
                              ('purley-2s', 'xeon-gold-6230n'),
                              ('cascade-lake-2s', 'xeon-gold-6148'),
                              ('cascade-lake-2s', 'xeon-gold-6238l'),
                              ('ice-lake-2s', 'xeon-gold-6330')):
            self.assertIsNone(problem(platform, cpu), (platform, cpu))

    def test_unknown_generation_or_interface_is_not_judged(self):
        # Only where the platform lists no generations of its own.
        unlisted = dataclasses.replace(CATALOG.platforms['cascade-lake-2s'],
                                       cpu_generations=())
        cpu = dataclasses.replace(CATALOG.cpus['xeon-gold-6330'],
                                  generation='acme')
        self.assertIsNone(cpus.cpu_problem(unlisted, cpu))
        self.assertIn('generation acme', cpus.cpu_problem(
            CATALOG.platforms['cascade-lake-2s'], cpu).message)
        board = dataclasses.replace(unlisted, channels_per_socket=4)
        self.assertIsNone(cpus.cpu_problem(
            board, CATALOG.cpus['xeon-gold-6330']))

    def test_check_reports_it(self):
        config = test_pmem.node_config('purley-2s', 'xeon-gold-6330',
                                       kinds.DRAM, {'ddr4-16': 12})
        self.assertEqual(['cpu-unsupported-platform'],
                         [f.code for f in common.errors(
                             population.check(config))])

    def test_every_generation_has_a_public_source(self):
        for name, gen in cpus.GENERATIONS.items():
            source_id, detail = gen.source
            self.assertIn(source_id, population.sources.SOURCES, name)
            self.assertTrue(detail)


class SearchRefusesTestCase(testtools.TestCase):

    def test_run(self):
        scen = scenario.load()
        exc = self.assertRaises(errors.PlannerError, search.run, scen,
                                'cascade-lake-2s', 'xeon-gold-6330')
        self.assertIn('--cpu: CPU xeon-gold-6330', str(exc))
        self.assertIn('does not fit platform cascade-lake-2s', str(exc))
        self.assertIn('xeon-gold-6230n', str(exc))

    def test_command(self):
        status, out, err = clitools.run_cli(
            self, ['search', '--platform', 'cascade-lake-2s', '--cpu',
                   'xeon-gold-6330'])
        self.assertEqual(2, status)
        self.assertEqual('', out)
        self.assertIn('(cpu-unsupported-platform)', err)


class ScenarioRefusesTestCase(testtools.TestCase):

    def _scenario(self):
        raw = yaml.safe_load(scenario.read_text('telco-cost-matched')[0])
        raw['configs']['dram-384']['cpu'] = 'xeon-gold-6330'
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'scenario.yaml')
        with open(path, 'w') as f:
            yaml.safe_dump(raw, f)
        return path

    def test_load(self):
        exc = self.assertRaises(errors.ScenarioError, scenario.load,
                                self._scenario())
        for part in ('configs.dram-384', 'xeon-gold-6330', 'purley-2s',
                     'LGA3647', '(cpu-unsupported-platform)'):
            self.assertIn(part, str(exc))

    def test_configs_command(self):
        status, out, err = clitools.run_cli(
            self, ['configs', '--scenario', self._scenario()])
        self.assertEqual(2, status)
        self.assertIn('does not fit platform purley-2s', err)
