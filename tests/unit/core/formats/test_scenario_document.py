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
"""The scenario document: its keys, its reader and its writer agree.

Every scenario and catalog that ships parses to values that are what the
file says, is written back by the core's builder and parses to the same
values; and the planner's model of the written file is the model of the
original.
"""

import dataclasses
import glob
import math
import os

import testtools
import yaml

from nova_pmem_filters.core.formats import scenario as document
from nova_pmem_filters.core.formats import scenario_schema as sch
from nova_pmem_filters.core.formats import scenario_sections as sec
from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.planner import errors
from nova_pmem_filters.planner import scenario
from tests.unit import paths

CATALOG = paths.of('nova_pmem_filters', 'planner', 'data', 'catalog.yaml')


def _read(path):
    with open(path, encoding='utf-8') as f:
        return f.read()


def shipped():
    """Paths of the scenarios that ship: the built-in ones, any in etc/."""
    found = sorted(p for p in glob.glob(paths.of(
        'nova_pmem_filters', 'planner', 'data', '*.yaml'))
        if p != CATALOG)
    for path in sorted(glob.glob(paths.of('etc', '**', '*.yaml'),
                                 recursive=True)):
        data = yaml.safe_load(_read(path))
        if isinstance(data, dict) and {'configs', 'workloads'} <= set(data):
            found.append(path)
    return found


def base_catalog():
    return document.parse_catalog(_read(CATALOG), 'catalog.yaml')


def _small(**changes):
    """A small scenario built from values, as a writer builds one."""
    values = dict(
        name='small',
        configs={
            'dram': sec.Config(platform='purley-2s',
                               cpu='xeon-gold-6148', mode='dram',
                               per_socket={'ddr4-16': 12}),
            'mm': sec.Config(platform='cascade-lake-2s',
                             cpu='xeon-gold-6230n', mode='memory_mode',
                             per_socket={'ddr4-16': 6,
                                         'pmem100-128': 2}),
        },
        workloads={'w': sec.Workload(vcpus=4, ram_gb=32, used_gb=24,
                                     hot_ratio=0.25, priority='low')})
    values.update(changes)
    return sec.Document(**values)


class KeysTestCase(testtools.TestCase):

    def test_fields_are_the_schema_keys(self):
        for cls, schema in sec.SCHEMAS.items():
            fields = sec.keys(cls)
            self.assertEqual(sorted(schema['properties']),
                             sorted(f.name for f in fields), cls.__name__)
            required = [f.name for f in fields
                        if f.default is dataclasses.MISSING
                        and f.default_factory is dataclasses.MISSING]
            self.assertEqual(sorted(schema['required']), sorted(required),
                             cls.__name__)

    def test_every_section_schema_has_its_class(self):
        # The sections of the document's schema are the classes' schemas.
        top = sch.SCENARIO_SCHEMA['properties']
        self.assertIs(sch.CATALOG_SCHEMA, top['catalog'])
        self.assertIs(sch.CONFIG_SCHEMA,
                      top['configs']['additionalProperties'])
        self.assertIs(sch.WORKLOAD_SCHEMA,
                      top['workloads']['additionalProperties'])
        self.assertIs(sch.PERIOD_SCHEMA,
                      top['demand']['oneOf'][1]['items'])
        workload = sch.WORKLOAD_SCHEMA['properties']
        self.assertIs(sch.VPMEM_SCHEMA, workload['vpmem'])
        self.assertIs(sch.CALIBRATION_SCHEMA, workload['calibration'])

    def test_planner_names_are_the_cores(self):
        self.assertIs(sch.SCENARIO_SCHEMA, scenario.SCENARIO_SCHEMA)
        self.assertIs(sch.CATALOG_SCHEMA, scenario.CATALOG_SCHEMA)
        self.assertEqual(sch.NUMA_NODES_KEY, scenario.NUMA_NODES_KEY)
        self.assertTrue(issubclass(errors.ScenarioError,
                                   sch.ScenarioError))


class RoundTripTestCase(testtools.TestCase):

    def test_there_are_scenarios(self):
        names = [os.path.basename(p) for p in shipped()]
        self.assertIn('telco-cost-matched.yaml', names)
        self.assertIn('cxl-cost-matched.yaml', names)

    def test_shipped_scenarios(self):
        base = base_catalog()
        for path in shipped():
            text = _read(path)
            doc = document.parse(text, path, base)
            # The values are what the file says, key for key.
            self.assertEqual(yaml.safe_load(text), sec.to_mapping(doc),
                             path)
            written = document.dumps(doc)
            self.assertEqual(doc, document.parse(written, 'written', base),
                             path)

    def test_shipped_catalog(self):
        catalog = base_catalog()
        self.assertEqual(yaml.safe_load(_read(CATALOG)),
                         sec.to_mapping(catalog))
        self.assertEqual(catalog, document.parse_catalog(
            document.dumps(catalog), 'written'))

    def test_planner_model_of_the_written_file(self):
        base = base_catalog()
        for path in shipped():
            text = _read(path)
            written = document.dumps(document.parse(text, path, base))
            original = scenario.parse(text, path)
            self.assertEqual(original, scenario.parse(written, path), path)

    def test_forms_are_kept(self):
        # Each key that takes two forms is written in the form it was read.
        sockets = sec.Config(
            platform='cascade-lake-2s', cpu='xeon-gold-6230n',
            mode='memory_mode', sockets=({'ddr4-16': 6, 'pmem100-128': 2},
                                         {'ddr4-16': 6, 'pmem100-128': 2}))
        periods = (sec.Period(name='now', years=2, vms={'w': 10}),
                   sec.Period(name='later', years=3, vms={'w': 20}))
        for doc in (_small(),
                    _small(configs={'mm': sockets}),
                    _small(demand=(sec.Period(
                        name=sch.WHOLE_LIFE, years=None,
                        vms={'w': 10}),)),
                    _small(demand=periods)):
            text = document.dumps(doc)
            self.assertEqual(doc, document.parse(text, 'x', base_catalog()))
        self.assertEqual({'w': 10}, yaml.safe_load(document.dumps(_small(
            demand=(sec.Period(name=sch.WHOLE_LIFE, years=None,
                               vms={'w': 10}),))))['demand'])
        self.assertIn('sockets', yaml.safe_load(document.dumps(
            _small(configs={'mm': sockets})))['configs']['mm'])

    def test_every_workload_key(self):
        workload = sec.Workload(
            description='db', vcpus=8, ram_gb=64, used_gb=48,
            used_source='measured', flavor='db.large', hot_ratio='0.3',
            hot_ratio_source='guess', priority='high',
            modes=('dram', 'app_direct'), numa_nodes=2,
            vpmem=sec.Vpmem(label='SMALL', size_gb=16),
            throughput={'dram': 1.0, 'app_direct': 0.8}, bound='latency',
            bandwidth_gbps=4.5, bandwidth_source='spec',
            calibration=sec.Calibration(mode='memory_mode',
                                             node_gain=1.1, source='paper'))
        self.assertEqual(
            [f.name for f in dataclasses.fields(sec.Workload)],
            [k for k, v in vars(workload).items() if v is not None
             and not k.startswith('request')])
        doc = _small(workloads={'db': workload})
        self.assertEqual(doc, document.parse(document.dumps(doc), 'x',
                                             base_catalog()))

    def test_observed_hot_ratio_is_kept(self):
        doc = _small(workloads={'w': sec.Workload(
            vcpus=4, ram_gb=32, hot_ratio=sch.OBSERVED)},
            observations='obs')
        back = document.parse(document.dumps(doc), 'x', base_catalog())
        self.assertEqual(doc, back)
        self.assertTrue(back.workloads['w'].observed)
        self.assertEqual({}, back.workloads['w'].extra_specs())


class BuilderTestCase(testtools.TestCase):

    def test_numbers_become_plain_specs(self):
        # A writer's float is written so that the flavor's spec has no
        # exponent.
        doc = _small(workloads={'w': sec.Workload(
            vcpus=4, ram_gb=32, hot_ratio=0.00001)})
        scen = scenario.parse(document.dumps(doc), 'x')
        self.assertEqual('0.00001',
                         scen.workloads['w'].extra_specs[
                             extra_specs.HOT_RATIO_KEY])

    def test_spec_text(self):
        for value, text in ((0.25, '0.25'), (1, '1'), ('.5', '.5'),
                            (1.0, '1.0'), (1.5e-7, '0.00000015'),
                            (True, 'True'), ('low', 'low')):
            self.assertEqual(text, sec.spec_text(value))

    def test_from_mapping_is_to_mapping_reversed(self):
        raw = {'vcpus': 4, 'ram_gb': 32,
               'vpmem': {'label': 'A', 'size_gb': 8},
               'modes': ['app_direct']}
        workload = sec.from_mapping(sec.Workload, raw)
        self.assertEqual(sec.Vpmem(label='A', size_gb=8),
                         workload.vpmem)
        self.assertEqual(('app_direct',), workload.modes)
        self.assertEqual(raw, sec.to_mapping(workload))

    def test_baseline_config(self):
        self.assertEqual('dram', _small().baseline_config)
        self.assertEqual('mm', _small(baseline='mm').baseline_config)


class ReaderTestCase(testtools.TestCase):

    def assertBad(self, text, where, rule, base=None):
        exc = self.assertRaises(sch.ScenarioError, document.parse,
                                text, 'f.yaml', base)
        self.assertEqual('f.yaml: %s: %s' % (where, rule), str(exc))
        # The core's error, not the planner's: the planner makes its own.
        self.assertNotIsInstance(exc, errors.ScenarioError)
        return exc

    def test_yaml_and_schema(self):
        exc = self.assertRaises(sch.ScenarioError, document.parse,
                                'a: b: c', 'f.yaml')
        self.assertEqual((['line 1'], 'not valid YAML: mapping values are '
                          'not allowed here'), (exc.path, exc.rule))
        self.assertBad('- 1', '(top level)',
                       'expected a mapping of keys to values, got list')
        text = document.dumps(_small()).replace('vcpus: 4', 'vcpus: 0')
        self.assertBad(text, 'workloads.w.vcpus',
                       'must be at least 1, got 0 (allowed: a whole number '
                       '>= 1)')

    def test_every_number_is_bounded(self):
        # An unbounded number let 1e300 through to the arithmetic, and 1e20
        # was bounded differently from its 21 digits.
        def numbers(schema, path):
            if isinstance(schema, dict):
                types = schema.get('type')
                # ('type' is also a DIMM's key, whose schema is a dict.)
                types = (types if isinstance(types, list) else
                         [types] if isinstance(types, str) else [])
                if {'number', 'integer'} & set(types):
                    yield path, schema
                for key, value in schema.items():
                    yield from numbers(value, path + (key,))
            elif isinstance(schema, list):
                for index, value in enumerate(schema):
                    yield from numbers(value, path + (index,))

        found = list(numbers(sch.SCENARIO_SCHEMA, ()))
        self.assertGreater(len(found), 20)
        for path, schema in found:
            self.assertLessEqual(schema.get('maximum', math.inf),
                                 sch.NUMBER_LIMIT, path)

    def test_a_name_is_refused_in_words_not_a_regex(self):
        text = document.dumps(_small()).replace('  dram:', '  dram 384:', 1)
        exc = self.assertBad(
            text, 'configs', 'expected a name of letters, digits, ".", "_" '
            'and "-" that starts with a letter or a digit, got \'dram 384\'',
            base_catalog())
        self.assertNotIn('[A-Za-z', str(exc))

    def test_every_pattern_has_words(self):
        def patterns(schema):
            if isinstance(schema, dict):
                if isinstance(schema.get('pattern'), str):
                    yield schema['pattern']
                for value in schema.values():
                    yield from patterns(value)
            elif isinstance(schema, list):
                for value in schema:
                    yield from patterns(value)

        found = set(patterns(sch.SCENARIO_SCHEMA))
        self.assertEqual(2, len(found))
        for pattern in found:
            self.assertIn(pattern, sch._PATTERN_WORDS)

    def test_short_numbers(self):
        for value, text in ((10 ** 20, '1e+20'), (1e20, '1e+20'),
                            (0.25, '0.25'), (11704, '11704'),
                            (7672.0, '7672'), (float('inf'), 'inf'),
                            (1.1 * 1e300, '1.1e+300'),
                            (900000000000000.1, '9e+14'), (-3, '-3')):
            self.assertEqual(text, sch.short_number(value), value)

    def test_text_that_reads_as_a_number_is_quoted(self):
        # 1e5 is a number to the reader (YAML 1.2): a description that is
        # the text 1e5 is written quoted and reads back as text.
        doc = _small(description='1e5')
        text = document.dumps(doc)
        self.assertIn("description: '1e5'", text)
        self.assertEqual('1e5', document.parse(text, 'f.yaml',
                                               base_catalog()).description)

    def test_names_are_checked_against_the_catalogs(self):
        text = document.dumps(_small())
        # Without a base catalog, the document's own entries only.
        self.assertBad(text, 'configs.dram.platform',
                       "unknown platform 'purley-2s' (known: )")
        self.assertEqual('small', document.parse(text, 'f.yaml',
                                                 base_catalog()).name)

    def test_rules_between_keys(self):
        doc = _small(workloads={'w': sec.Workload(
            vcpus=3, ram_gb=32, numa_nodes=2)})
        self.assertBad(document.dumps(doc), 'workloads.w.numa_nodes',
                       'numa_nodes: 2 does not divide vcpus (3 vCPUs): Nova '
                       'refuses to boot a flavor with hw:numa_nodes=2 that '
                       'it cannot split evenly over the guest NUMA cells',
                       base_catalog())
        doc = _small(workloads={'w': sec.Workload(
            vcpus=4, ram_gb=32, hot_ratio=2)})
        self.assertBad(document.dumps(doc), 'workloads.w.hot_ratio',
                       "flavor extra spec pmem:hot_ratio='2' is invalid: "
                       "expected %s"
                       % extra_specs.RULES[extra_specs.HOT_RATIO_KEY][0],
                       base_catalog())

    def test_the_planner_says_the_same(self):
        doc = _small(baseline='nope')
        core = self.assertBad(document.dumps(doc), 'baseline',
                              "unknown config 'nope' (known: dram, mm)",
                              base_catalog())
        planner = self.assertRaises(errors.ScenarioError, scenario.parse,
                                    document.dumps(doc), 'f.yaml')
        self.assertEqual(str(core), str(planner))
        self.assertEqual((core.source, core.path, core.rule),
                         (planner.source, planner.path, planner.rule))

    def test_request_is_read_once(self):
        workload = sec.Workload(vcpus=4, ram_gb=32, hot_ratio='0.5')
        _specs, request = document.flavor_request('w', workload, 'f.yaml')
        self.assertIs(request, workload.request)
        self.assertEqual(0.5, request.hot_ratio)
