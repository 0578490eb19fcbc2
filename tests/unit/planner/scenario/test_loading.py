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
"""Scenario files: the built-in ones load, every bad one is one clear line.

A bad file must give one line naming the file, the key path and the rule,
both from :func:`nova_pmem_filters.planner.scenario.load` and from the command
line (exit status 2, nothing on stdout).
"""

import os

import fixtures
import testtools
import yaml

from nova_pmem_filters.core.formats import scenario_sections as sec
from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.planner import errors
from nova_pmem_filters.planner import scenario
from tests.unit import clitools
from tests.unit.planner import test_cli


def _base():
    """A small valid scenario, as the YAML file would hold it."""
    return {
        'name': 'small',
        'configs': {
            'dram': {'platform': 'purley-2s', 'cpu': 'xeon-gold-6148',
                     'mode': 'dram', 'per_socket': {'ddr4-16': 12}},
            'mm': {'platform': 'cascade-lake-2s', 'cpu': 'xeon-gold-6230n',
                   'mode': 'memory_mode',
                   'per_socket': {'ddr4-16': 6, 'pmem100-128': 2}},
        },
        'workloads': {
            'w': {'vcpus': 4, 'ram_gb': 32, 'used_gb': 24,
                  'hot_ratio': 0.25, 'priority': 'low'},
        },
    }


class ScenarioFileTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def write(self, content, name='scenario.yaml'):
        path = os.path.join(self.tmp, name)
        if isinstance(content, dict):
            content = yaml.safe_dump(content, sort_keys=False)
        mode = 'wb' if isinstance(content, bytes) else 'w'
        with open(path, mode) as f:
            f.write(content)
        return path

    def assertBad(self, content, where, rule, path=None):
        """The file is refused with one line: file, key path, rule."""
        if path is None:
            path = self.write(content)
        exc = self.assertRaises(errors.ScenarioError, scenario.load, path)
        message = str(exc)
        self.assertEqual([message], message.splitlines())
        self.assertTrue(message.startswith('%s: %s: ' % (path, where)),
                        message)
        self.assertIn(rule, message)

        status, out, err = clitools.run_cli(
            self, ['compare', '--scenario', path])
        self.assertEqual(2, status, err)
        self.assertEqual('', out)
        self.assertEqual('nova-pmem-planner compare: error: %s\n' % message,
                         err)
        return message


class BuiltinScenarioTestCase(ScenarioFileTestCase):

    def test_builtin_names(self):
        self.assertIn(scenario.BUILTIN_SCENARIO, scenario.builtin_names())
        self.assertNotIn('catalog', scenario.builtin_names())

    def test_default_is_the_telco_example(self):
        scen = scenario.load()
        self.assertEqual('telco-cost-matched', scen.name)
        self.assertEqual('built-in telco-cost-matched.yaml', scen.source)
        self.assertEqual('dram-384', scen.baseline)
        self.assertEqual(['dram-384', 'mm-192-512'], list(scen.configs))
        self.assertEqual(['redis', 'mysql'], list(scen.workloads))
        self.assertEqual(scen, scenario.load('telco-cost-matched'))

    def test_every_builtin_loads(self):
        for name in scenario.builtin_names():
            scen = scenario.load(name)
            self.assertTrue(scen.configs, name)
            self.assertTrue(scen.workloads, name)

    def test_telco_hardware(self):
        scen = scenario.load()
        dram = scen.configs['dram-384']
        mm = scen.configs['mm-192-512']
        self.assertEqual((384, 0), (dram.dram_gb, dram.pmem_gb))
        self.assertEqual((192, 512), (mm.dram_gb, mm.pmem_gb))
        self.assertEqual(kinds.MEMORY_MODE, mm.mode)
        self.assertEqual(2, len(mm.sockets))
        self.assertEqual(mm.sockets[0], mm.sockets[1])

    def test_workloads_read_through_the_shared_parser(self):
        scen = scenario.load()
        redis = scen.workloads['redis']
        # Every value the plan relies on: the modes it gives none of are
        # the default's, written out.
        self.assertEqual({extra_specs.PRIORITY_KEY: 'low',
                          extra_specs.HOT_RATIO_KEY: '0.25',
                          extra_specs.MODES_KEY:
                              'dram,memory_mode,app_direct'},
                         redis.extra_specs)
        self.assertEqual(extra_specs.parse(redis.extra_specs),
                         redis.request)
        self.assertEqual(0.25, redis.hot_ratio)
        self.assertEqual('low', redis.priority)
        self.assertEqual((4, 32.0, 24.0),
                         (redis.vcpus, redis.ram_gb, redis.used_gb))
        self.assertEqual(32 * 1024, redis.ram_mb)

    def test_policies(self):
        policies = scenario.load().policies
        self.assertEqual(0.9, policies.memory_cap)
        self.assertEqual(0, policies.host_reserve_gb)
        self.assertEqual(1.0, policies.cpu_overcommit)
        self.assertEqual(1.0, policies.cache_overcommit)


class GoodScenarioTestCase(ScenarioFileTestCase):

    def test_small(self):
        scen = scenario.load(self.write(_base()))
        self.assertEqual('dram', scen.baseline)
        self.assertEqual(sec.resolved(sec.Policies()), scen.policies)
        self.assertEqual(sec.resolved(sec.Performance()), scen.performance)

    def test_used_defaults_to_flavor_ram(self):
        data = _base()
        del data['workloads']['w']['used_gb']
        scen = scenario.load(self.write(data))
        self.assertEqual(32.0, scen.workloads['w'].used_gb)

    def test_sockets_list_form(self):
        data = _base()
        del data['configs']['mm']['per_socket']
        data['configs']['mm']['sockets'] = [
            {'ddr4-16': 6, 'pmem100-128': 2}] * 2
        listed = scenario.load(self.write(data)).configs['mm']
        per_socket = scenario.load(self.write(_base(), 'b.yaml')).configs[
            'mm']
        self.assertEqual(per_socket.sockets, listed.sockets)

    def test_hot_ratio_forms(self):
        # Numbers become the string a flavor would carry; plain decimals
        # only, even for ratios whose repr() has an exponent.
        for value, spec in ((0.25, '0.25'), (1, '1'), ('.5', '.5'),
                            (1.0, '1.0'), (0.00001, '0.00001'),
                            (1.5e-7, '0.00000015')):
            data = _base()
            data['workloads']['w']['hot_ratio'] = value
            work = scenario.load(self.write(data)).workloads['w']
            self.assertEqual(spec, work.extra_specs['pmem:hot_ratio'])
            self.assertEqual(float(value), work.hot_ratio)

    def test_workloads_use_the_scheduler_parser(self):
        calls = []
        real = extra_specs.parse

        def recording(specs, *args, **kwargs):
            calls.append(dict(specs))
            return real(specs, *args, **kwargs)

        self.useFixture(fixtures.MonkeyPatch(
            'nova_pmem_filters.core.rules.extra_specs.parse', recording))
        scenario.load(self.write(_base()))
        self.assertEqual([{'pmem:priority': 'low',
                           'pmem:hot_ratio': '0.25'}], calls)

    def test_modes_and_vpmem(self):
        data = _base()
        data['workloads']['w']['modes'] = ['dram', 'app_direct']
        data['workloads']['w']['vpmem'] = {'label': 'SMALL', 'size_gb': 16}
        work = scenario.load(self.write(data)).workloads['w']
        self.assertEqual({'pmem:modes': 'dram,app_direct',
                          'pmem:priority': 'low',
                          'pmem:hot_ratio': '0.25', 'hw:pmem': 'SMALL'},
                         work.extra_specs)
        # hw:pmem narrows the flavor to App Direct hosts.
        self.assertEqual(frozenset([kinds.APP_DIRECT]), work.request.modes)
        self.assertEqual(16.0, work.vpmem_gb)

    def test_catalog_override_and_addition(self):
        data = _base()
        data['catalog'] = {'dimms': {
            'ddr4-16': {'type': 'ddr4', 'capacity_gb': 16, 'price': 64,
                        'watts': 2},
            'ddr4-24': {'type': 'ddr4', 'capacity_gb': 24, 'price': 96,
                        'watts': 2}}}
        data['configs']['dram24'] = {
            'platform': 'purley-2s', 'cpu': 'xeon-gold-6148', 'mode': 'dram',
            'per_socket': {'ddr4-24': 12}}
        scen = scenario.load(self.write(data))
        self.assertEqual(64, scen.catalog.dimms['ddr4-16'].price)
        self.assertEqual(576, scen.configs['dram24'].dram_gb)
        # The rest of the built-in catalog is still there.
        self.assertIn('pmem100-128', scen.catalog.dimms)
        self.assertEqual(scenario.builtin_catalog().cpus, scen.catalog.cpus)


class BadScenarioTestCase(ScenarioFileTestCase):

    def test_unknown_platform(self):
        data = _base()
        data['configs']['mm']['platform'] = 'whitebox-4s'
        self.assertBad(data, 'configs.mm.platform',
                       "unknown platform 'whitebox-4s' (known: "
                       "cascade-lake-2s, ice-lake-2s, purley-2s)")

    def test_unknown_cpu(self):
        data = _base()
        data['configs']['dram']['cpu'] = 'xeon-gold-9999'
        self.assertBad(data, 'configs.dram.cpu',
                       "unknown CPU 'xeon-gold-9999'")

    def test_unknown_dimm(self):
        data = _base()
        data['configs']['mm']['per_socket']['pmem100-64'] = 1
        self.assertBad(data, 'configs.mm.per_socket.pmem100-64',
                       "unknown DIMM 'pmem100-64'")

    def test_unknown_dimm_in_socket_list(self):
        data = _base()
        del data['configs']['dram']['per_socket']
        data['configs']['dram']['sockets'] = [{'ddr4-16': 12},
                                              {'ddr4-17': 12}]
        self.assertBad(data, 'configs.dram.sockets.1.ddr4-17',
                       "unknown DIMM 'ddr4-17'")

    def test_key_with_a_line_break_stays_on_one_line(self):
        data = _base()
        data['configs']['dram']['per_socket'] = {'ddr4-16\n': 12}
        self.assertBad(data, "configs.dram.per_socket.'ddr4-16\\n'",
                       "unknown DIMM 'ddr4-16\\n'")

    def test_invalid_population(self):
        data = _base()
        # PMem behind a 1st-generation Xeon Scalable CPU.
        data['configs']['mm']['cpu'] = 'xeon-gold-6148'
        self.assertBad(data, 'configs.mm',
                       'invalid population: CPU xeon-gold-6148 cannot drive '
                       'PMem 100')
        message = str(self.assertRaises(errors.ScenarioError,
                                        scenario.load, self.write(data)))
        self.assertIn('(pmem-unsupported-cpu)', message)
        self.assertIn('[Intel, ', message)

    def test_asymmetric_sockets(self):
        data = _base()
        del data['configs']['dram']['per_socket']
        data['configs']['dram']['sockets'] = [{'ddr4-16': 12},
                                              {'ddr4-16': 6}]
        self.assertBad(data, 'configs.dram',
                       'invalid population: sockets are populated '
                       'differently')

    def test_socket_list_length(self):
        data = _base()
        del data['configs']['dram']['per_socket']
        data['configs']['dram']['sockets'] = [{'ddr4-16': 12}]
        self.assertBad(data, 'configs.dram.sockets',
                       'platform purley-2s has 2 sockets, 1 populations')

    def test_both_population_forms(self):
        data = _base()
        data['configs']['dram']['sockets'] = [{'ddr4-16': 12}] * 2
        self.assertBad(data, 'configs.dram',
                       'give exactly one of per_socket')

    def test_negative_dimm_price(self):
        data = _base()
        data['catalog'] = {'dimms': {'ddr4-16': {
            'type': 'ddr4', 'capacity_gb': 16, 'price': -192, 'watts': 3}}}
        self.assertBad(data, 'catalog.dimms.ddr4-16.price',
                       'must be at least 0, got -192')

    def test_negative_cpu_price(self):
        data = _base()
        data['catalog'] = {'cpus': {'xeon-gold-6148': {
            'cores': 20, 'threads': 40, 'price': -0.5, 'watts': 150,
            'memory_limit_gb': 768}}}
        self.assertBad(data, 'catalog.cpus.xeon-gold-6148.price',
                       'must be at least 0, got -0.5')

    def test_pmem_dimm_without_generation(self):
        data = _base()
        data['catalog'] = {'dimms': {'pmem-x': {
            'type': 'pmem', 'capacity_gb': 128, 'price': 577, 'watts': 15}}}
        self.assertBad(data, 'catalog.dimms.pmem-x.generation',
                       'a pmem DIMM needs its generation')

    def test_wrong_type_integer(self):
        data = _base()
        data['workloads']['w']['vcpus'] = 'four'
        self.assertBad(data, 'workloads.w.vcpus',
                       "expected integer, got 'four'")

    def test_wrong_type_number(self):
        data = _base()
        data['workloads']['w']['ram_gb'] = '32 GB'
        self.assertBad(data, 'workloads.w.ram_gb',
                       "expected number, got '32 GB'")

    def _ram_gb_file(self, text):
        data = _base()
        data['workloads']['w']['ram_gb'] = 'RAM'
        return self.write(yaml.safe_dump(data, sort_keys=False).replace(
            'ram_gb: RAM', 'ram_gb: %s' % text))

    def test_number_bound_is_one_for_every_spelling(self):
        # YAML 1.1 reads 1e20 as text: the file was refused as "expected
        # number" while the same number in digits was taken. Every
        # spelling is a number and meets the same bound, in a short line.
        messages = set()
        for text in ('1e20', '1E+20', '1.0e+20', '100000000000000000000',
                     '100_000_000_000_000_000_000'):
            messages.add(self.assertBad(
                None, 'workloads.w.ram_gb',
                'must be at most 1e+15, got 1e+20',
                path=self._ram_gb_file(text)))
        self.assertEqual(1, len(messages), messages)
        rule = messages.pop().split(': ', 2)[2]
        self.assertLess(len(rule), 80, rule)

    def test_number_bound_refuses_infinity_and_nan(self):
        self.assertBad(None, 'workloads.w.ram_gb',
                       'must be at most 1e+15, got inf',
                       path=self._ram_gb_file('.inf'))
        self.assertBad(None, 'workloads.w.ram_gb',
                       'expected a number, got nan',
                       path=self._ram_gb_file('.nan'))

    def test_number_with_exponent_is_a_number(self):
        loaded = scenario.load(self._ram_gb_file('3.2e1'))
        self.assertEqual(32.0, loaded.workloads['w'].ram_gb)
        loaded = scenario.load(self._ram_gb_file('32e0'))
        self.assertEqual(32.0, loaded.workloads['w'].ram_gb)

    def test_number_bound_on_counts_and_prices(self):
        data = _base()
        data['demand'] = {'w': 10 ** 16}
        self.assertBad(data, 'demand.w', 'must be at most 1e+15, got 1e+16')
        data = _base()
        data['economics'] = {'budget': 1e300}
        self.assertBad(data, 'economics.budget',
                       'must be at most 1e+15, got 1e+300')

    def test_wrong_type_dimm_count(self):
        data = _base()
        data['configs']['dram']['per_socket']['ddr4-16'] = 1.5
        self.assertBad(data, 'configs.dram.per_socket.ddr4-16',
                       'expected integer, got 1.5')

    def test_wrong_type_section(self):
        data = _base()
        data['configs'] = ['dram']
        self.assertBad(data, 'configs', "expected object, got ['dram']")

    def test_wrong_type_boolean_hot_ratio(self):
        data = _base()
        data['workloads']['w']['hot_ratio'] = True
        self.assertBad(data, 'workloads.w.hot_ratio', 'expected')

    def test_out_of_range(self):
        data = _base()
        data['policies'] = {'memory_cap': 1.5}
        self.assertBad(data, 'policies.memory_cap',
                       'must be at most 1, got 1.5')

    def test_bad_mode(self):
        data = _base()
        data['configs']['dram']['mode'] = 'two_level_memory'
        self.assertBad(data, 'configs.dram.mode',
                       'must be one of dram, memory_mode, app_direct')

    def test_missing_required_key(self):
        data = _base()
        del data['workloads']['w']['ram_gb']
        self.assertBad(data, 'workloads.w',
                       "'ram_gb' is a required property")

    def test_unknown_key_top_level(self):
        data = _base()
        data['polices'] = {'memory_cap': 0.9}
        self.assertBad(data, '(top level)', "unknown key 'polices' "
                       "(allowed: baseline, catalog, configs,")

    def test_unknown_key_in_config(self):
        data = _base()
        data['configs']['mm']['memory_mode'] = True
        self.assertBad(data, 'configs.mm', "unknown key 'memory_mode'")

    def test_unknown_key_in_workload(self):
        data = _base()
        data['workloads']['w']['hot-ratio'] = 0.5
        self.assertBad(data, 'workloads.w', "unknown key 'hot-ratio'")

    def test_unknown_key_in_vpmem(self):
        data = _base()
        data['workloads']['w']['vpmem'] = {'label': 'S', 'size_gb': 16,
                                           'size': 16}
        self.assertBad(data, 'workloads.w.vpmem', "unknown key 'size'")

    def test_unknown_key_in_policies(self):
        data = _base()
        data['policies'] = {'cpu_over_commit': 2.0}
        self.assertBad(data, 'policies', "unknown key 'cpu_over_commit'")

    def test_unknown_key_in_catalog_entry(self):
        data = _base()
        data['catalog'] = {'dimms': {'ddr4-16': {
            'type': 'ddr4', 'capacity_gb': 16, 'price': 192, 'watts': 3,
            'speed': 2666}}}
        self.assertBad(data, 'catalog.dimms.ddr4-16', "unknown key 'speed'")

    def test_invalid_hot_ratio(self):
        # Read by the shared extra-spec parser, exactly as the scheduler
        # would read the flavor.
        for value, spec in ((0, '0'), (1.5, '1.5'), (-0.25, '-0.25'),
                            ('hot', 'hot'), (' 0.5', ' 0.5')):
            data = _base()
            data['workloads']['w']['hot_ratio'] = value
            self.assertBad(data, 'workloads.w.hot_ratio',
                           'flavor extra spec pmem:hot_ratio=%r is invalid: '
                           'expected a decimal number greater than 0 and '
                           'at most 1' % spec)

    def test_hot_ratio_with_exponent(self):
        # Unquoted, 1e-1 is a number (YAML 1.2), written as the flavor
        # carries it; quoted, it is the flavor's text, which the shared
        # grammar (no exponents) refuses.
        text = yaml.safe_dump(_base(), sort_keys=False)
        plain = self.write(text.replace('hot_ratio: 0.25',
                                        'hot_ratio: 1e-1'))
        self.assertEqual(
            '0.1', scenario.load(plain).workloads['w'].extra_specs[
                extra_specs.HOT_RATIO_KEY])
        quoted = self.write(text.replace('hot_ratio: 0.25',
                                         "hot_ratio: '1e-1'"))
        self.assertBad(None, 'workloads.w.hot_ratio',
                       "pmem:hot_ratio='1e-1' is invalid", path=quoted)

    def test_invalid_priority(self):
        data = _base()
        data['workloads']['w']['priority'] = 'urgent'
        self.assertBad(data, 'workloads.w.priority',
                       "flavor extra spec pmem:priority='urgent' is "
                       "invalid: expected one of high, normal, low")

    def test_invalid_modes(self):
        data = _base()
        data['workloads']['w']['modes'] = ['dram', 'optane']
        self.assertBad(data, 'workloads.w.modes',
                       "flavor extra spec pmem:modes='dram,optane' is "
                       "invalid")

    def test_vpmem_without_app_direct(self):
        data = _base()
        data['workloads']['w']['modes'] = ['dram', 'memory_mode']
        data['workloads']['w']['vpmem'] = {'label': 'SMALL', 'size_gb': 16}
        self.assertBad(data, 'workloads.w',
                       'hw:pmem=SMALL needs an app_direct host but '
                       'pmem:modes allows only dram,memory_mode')

    def test_flavor_without_ram(self):
        # Less than 1 MB is 0 MB in Nova: nothing to be hot.
        data = _base()
        data['workloads']['w']['ram_gb'] = 0.0001
        self.assertBad(data, 'workloads.w.ram_gb',
                       'a flavor has at least 1 MB of RAM, got 0.0001 GB')

    def test_unknown_baseline(self):
        data = _base()
        data['baseline'] = 'dram-384'
        self.assertBad(data, 'baseline',
                       "unknown config 'dram-384' (known: dram, mm)")

    def test_yaml_syntax_error(self):
        self.assertBad('name: small\nconfigs: {dram: [\nworkloads: {}\n',
                       'line 4', 'not valid YAML: ')

    def test_yaml_bad_indentation(self):
        self.assertBad('name: small\n  configs: {}\n', 'line 2',
                       'not valid YAML: ')

    def test_yaml_forbidden_character(self):
        self.assertBad('name: small\nconfigs: {}\n\x01workloads: {}\n',
                       'line 3', 'not valid YAML: special characters are '
                       'not allowed (character #x0001)')

    def test_empty_file(self):
        self.assertBad('', '(top level)', 'expected a mapping of keys to '
                       'values, got NoneType')

    def test_not_a_mapping(self):
        self.assertBad('- dram\n- mm\n', '(top level)',
                       'expected a mapping of keys to values, got list')

    def test_not_utf8(self):
        self.assertBad(b'name: \xff\xfe\n', '(top level)', 'not UTF-8 text')

    def test_missing_file(self):
        self.assertBad(None, '(top level)',
                       'cannot read the file: No such file or directory',
                       path=os.path.join(self.tmp, 'missing.yaml'))

    def test_an_unknown_name_lists_the_built_in_scenarios(self):
        exc = self.assertRaises(errors.ScenarioError, scenario.load,
                                'nosuch')
        self.assertIn("nor is it a built-in scenario (%s)"
                      % ', '.join(scenario.builtin_names()), str(exc))
        self.assertIn('telco-cost-matched', scenario.builtin_names())

    def test_every_command_refuses(self):
        path = self.write('')
        for command in test_cli.COMMANDS:
            status, out, err = clitools.run_cli(
                self, [command, '--scenario', path])
            self.assertEqual(2, status, command)
            self.assertEqual('', out, command)
            self.assertEqual(1, len(err.splitlines()), command)


class NumaNodesScenarioTestCase(ScenarioFileTestCase):

    def test_numa_nodes_read_and_set_on_the_flavor(self):
        data = _base()
        data['workloads']['w']['numa_nodes'] = 2
        scen = scenario.load(self.write(data))
        w = scen.workloads['w']
        self.assertEqual(2, w.numa_nodes)
        self.assertEqual('2', w.extra_specs[scenario.NUMA_NODES_KEY])
        self.assertEqual('hw:numa_nodes', scenario.NUMA_NODES_KEY)

    def test_integral_float_is_an_integer(self):
        data = _base()
        data['workloads']['w']['numa_nodes'] = 2.0
        w = scenario.load(self.write(data)).workloads['w']
        self.assertEqual(2, w.numa_nodes)
        self.assertIsInstance(w.numa_nodes, int)
        self.assertEqual('2', w.extra_specs[scenario.NUMA_NODES_KEY])

    def test_without_numa_nodes(self):
        w = scenario.load(self.write(_base())).workloads['w']
        self.assertIsNone(w.numa_nodes)
        self.assertNotIn(scenario.NUMA_NODES_KEY, w.extra_specs)

    def test_zero(self):
        data = _base()
        data['workloads']['w']['numa_nodes'] = 0
        self.assertBad(data, 'workloads.w.numa_nodes',
                       'must be at least 1, got 0')

    def test_negative(self):
        data = _base()
        data['workloads']['w']['numa_nodes'] = -2
        self.assertBad(data, 'workloads.w.numa_nodes',
                       'must be at least 1, got -2')

    def test_not_an_integer(self):
        data = _base()
        for value, shown in ((1.5, '1.5'), ('2', "'2'"), (True, 'True')):
            data['workloads']['w']['numa_nodes'] = value
            self.assertBad(data, 'workloads.w.numa_nodes',
                           'expected integer, got %s' % shown)

    def test_does_not_divide_vcpus(self):
        data = _base()
        data['workloads']['w']['numa_nodes'] = 3
        self.assertBad(data, 'workloads.w.numa_nodes',
                       'numa_nodes: 3 does not divide vcpus (4 vCPUs)')

    def test_does_not_divide_memory(self):
        data = _base()
        data['workloads']['w'].update(vcpus=6, ram_gb=32.001,
                                      numa_nodes=2)
        # 32.001 GB is 32769 MB: Nova cannot halve it.
        self.assertBad(data, 'workloads.w.numa_nodes',
                       'numa_nodes: 2 does not divide ram_gb (32769 MB '
                       'of RAM)')
