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
"""Tests of the pmem: extra-spec parser, which imports nothing from Nova."""

import testtools

from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import kinds

ALL_MODES = frozenset(kinds.MODES)


class FromOptionsTestCase(testtools.TestCase):

    def test_reads_the_two_options(self):
        class Options:
            default_flavor_modes = [kinds.DRAM]
            default_hot_ratio = 1
        got = extra_specs.Defaults.from_options(Options)
        self.assertEqual(extra_specs.Defaults(modes=[kinds.DRAM],
                                              hot_ratio=1.0), got)
        self.assertEqual(frozenset([kinds.DRAM]), got.modes)


class ParseDefaultsTestCase(testtools.TestCase):

    def test_no_specs(self):
        for specs in (None, {}):
            req = extra_specs.parse(specs)
            self.assertEqual(ALL_MODES, req.modes)
            self.assertEqual(extra_specs.PRIORITY_NORMAL, req.priority)
            self.assertEqual(extra_specs.DEFAULT_HOT_RATIO, req.hot_ratio)
            self.assertEqual((), req.vpmem_labels)
            self.assertIsNone(req.conflict)
            self.assertFalse(req.constrains_modes)

    def test_configured_defaults(self):
        req = extra_specs.parse({}, extra_specs.Defaults(modes=['dram'],
                                                         hot_ratio=0.5))
        self.assertEqual(frozenset(['dram']), req.modes)
        self.assertTrue(req.constrains_modes)
        self.assertEqual(0.5, req.hot_ratio)
        self.assertIsInstance(req.hot_ratio, float)

    def test_specs_override_defaults(self):
        req = extra_specs.parse(
            {'pmem:modes': 'memory_mode', 'pmem:hot_ratio': '0.25'},
            extra_specs.Defaults(modes=['dram'], hot_ratio=0.5))
        self.assertEqual(frozenset(['memory_mode']), req.modes)
        self.assertEqual(0.25, req.hot_ratio)

    def test_other_namespaces_ignored(self):
        req = extra_specs.parse({'hw:cpu_policy': 'dedicated',
                                 'aggregate_instance_extra_specs:pmem': 'x',
                                 'pmem_modes': 'nonsense',
                                 'resources:MEMORY_MB': '0'})
        self.assertEqual(ALL_MODES, req.modes)

    def test_hot_mb(self):
        req = extra_specs.parse({'pmem:hot_ratio': '0.25'})
        self.assertEqual(1024.0, req.hot_mb(4096))


class ModesTestCase(testtools.TestCase):

    def test_valid(self):
        cases = {
            'dram': {'dram'},
            'memory_mode': {'memory_mode'},
            'app_direct': {'app_direct'},
            'dram,app_direct': {'dram', 'app_direct'},
            ' dram , memory_mode ': {'dram', 'memory_mode'},
            'dram,\tapp_direct': {'dram', 'app_direct'},
            'dram,dram': {'dram'},
            'app_direct,memory_mode,dram': ALL_MODES,
            'cxl_flat': {'cxl_flat'},
            'cxl_kmem': {'cxl_kmem'},
            'cxl_devdax': {'cxl_devdax'},
            'memory_mode, cxl_kmem': {'memory_mode', 'cxl_kmem'},
            'cxl_devdax,cxl_flat,cxl_kmem': {'cxl_flat', 'cxl_kmem',
                                             'cxl_devdax'},
        }
        for value, expected in cases.items():
            req = extra_specs.parse({'pmem:modes': value})
            self.assertEqual(frozenset(expected), req.modes, value)
            self.assertEqual(frozenset(expected),
                             extra_specs.parse_modes(value))

    def test_all_modes_do_not_constrain(self):
        req = extra_specs.parse({'pmem:modes': 'dram,memory_mode,app_direct'})
        self.assertFalse(req.constrains_modes)
        req = extra_specs.parse({'pmem:modes': 'dram,memory_mode'})
        self.assertTrue(req.constrains_modes)
        # CXL values admit only hosts the three admit already.
        req = extra_specs.parse({'pmem:modes': ','.join(kinds.FLAVOR_MODES)})
        self.assertFalse(req.constrains_modes)
        req = extra_specs.parse({'pmem:modes': 'dram,memory_mode,cxl_devdax'})
        self.assertTrue(req.constrains_modes)

    def test_cxl_values_select_their_kind(self):
        req = extra_specs.parse({'pmem:modes': 'cxl_kmem'})
        self.assertEqual(['cxl_kmem'],
                         [m for m in kinds.ALL_MODES if req.allows(m)])
        # The Optane values keep admitting the CXL kinds that behave as
        # them.
        req = extra_specs.parse({'pmem:modes': 'memory_mode'})
        self.assertEqual(['memory_mode', 'cxl_flat', 'cxl_kmem'],
                         [m for m in kinds.ALL_MODES if req.allows(m)])
        req = extra_specs.parse({'pmem:modes': 'dram'})
        self.assertEqual(['dram', 'cxl_devdax'],
                         [m for m in kinds.ALL_MODES if req.allows(m)])
        self.assertFalse(req.allows(None))
        self.assertFalse(req.allows('mixed'))

    def test_described_values(self):
        for mode in kinds.FLAVOR_MODES:
            self.assertIn(mode, extra_specs.MODES_DESCRIPTION)
            self.assertIn(mode, extra_specs.RULES['pmem:modes'][0])

    def test_invalid(self):
        for value in ('', ' ', 'DRAM', 'dram,', ',dram', 'dram,,app_direct',
                      'dram;memory_mode', 'dram memory_mode', 'memory-mode',
                      'optane', 'dram,optane', 'cxl', 'CXL_KMEM',
                      'cxl_kmem,', 'cxl-kmem', 'mixed', 'cxl_kmemx'):
            exc = self.assertRaises(extra_specs.InvalidExtraSpec,
                                    extra_specs.parse, {'pmem:modes': value})
            self.assertEqual('pmem:modes', exc.key)
            self.assertEqual(value, exc.value)

    def test_non_string(self):
        for value in (None, 1, ['dram'], b'dram'):
            self.assertRaises(extra_specs.InvalidExtraSpec,
                              extra_specs.parse, {'pmem:modes': value})


class PriorityTestCase(testtools.TestCase):

    def test_valid(self):
        for value in extra_specs.PRIORITIES:
            req = extra_specs.parse({'pmem:priority': value})
            self.assertEqual(value, req.priority)

    def test_invalid(self):
        for value in ('', 'HIGH', ' high', 'high ', 'urgent', 'high,low', 1):
            exc = self.assertRaises(extra_specs.InvalidExtraSpec,
                                    extra_specs.parse,
                                    {'pmem:priority': value})
            self.assertEqual('pmem:priority', exc.key)


class HotRatioTestCase(testtools.TestCase):

    def test_valid(self):
        cases = {
            '1': 1.0, '1.0': 1.0, '1.': 1.0, '01': 1.0, '1.000': 1.0,
            '0.5': 0.5, '.5': 0.5, '0.25': 0.25, '00.1': 0.1,
            '0.001': 0.001, '0.50': 0.5,
        }
        for value, expected in cases.items():
            req = extra_specs.parse({'pmem:hot_ratio': value})
            self.assertEqual(expected, req.hot_ratio, value)
            self.assertEqual(expected, extra_specs.parse_hot_ratio(value))

    def test_invalid(self):
        for value in ('0', '0.0', '.0', '0.', '.', '', '1.01', '1.5', '2',
                      '-0.5', '+0.5', '5e-1', '1e0', 'nan', 'inf',
                      ' 0.5', '0.5 ', '0,5', '½', '0.5.1', '1/2'):
            exc = self.assertRaises(extra_specs.InvalidExtraSpec,
                                    extra_specs.parse,
                                    {'pmem:hot_ratio': value})
            self.assertEqual('pmem:hot_ratio', exc.key)
            self.assertEqual(value, exc.value)

    def test_non_string(self):
        for value in (0.5, 1, None):
            self.assertRaises(extra_specs.InvalidExtraSpec,
                              extra_specs.parse, {'pmem:hot_ratio': value})

    def test_underflow_refused(self):
        # Matches the grammar but is 0.0 as a float; only possible past
        # Nova's 255-character limit on values.
        value = '0.' + '0' * 400 + '1'
        self.assertRaises(extra_specs.InvalidExtraSpec,
                          extra_specs.parse_hot_ratio, value)
        value = '0.' + '0' * 252 + '1'
        self.assertEqual(1e-253, extra_specs.parse_hot_ratio(value))


class UnknownKeysTestCase(testtools.TestCase):

    def test_unknown_pmem_keys(self):
        for key in ('pmem:hotratio', 'pmem:mode', 'pmem:', 'pmem:modes:x',
                    'pmem:Priority'):
            exc = self.assertRaises(extra_specs.InvalidExtraSpec,
                                    extra_specs.parse, {key: 'high'})
            self.assertEqual(key, exc.key)
            self.assertIn(
                'one of the keys pmem:hot_ratio, pmem:modes, pmem:priority',
                str(exc))

    def test_validate(self):
        extra_specs.validate('pmem:modes', 'dram')
        extra_specs.validate('pmem:priority', 'low')
        extra_specs.validate('pmem:hot_ratio', '0.5')
        self.assertRaises(extra_specs.InvalidExtraSpec,
                          extra_specs.validate, 'pmem:modes', 'ram')
        self.assertRaises(extra_specs.InvalidExtraSpec,
                          extra_specs.validate, 'pmem:typo', 'dram')

    def test_first_bad_key_in_sorted_order(self):
        specs = {'pmem:priority': 'urgent', 'pmem:hot_ratio': '2',
                 'pmem:modes': 'ram'}
        exc = self.assertRaises(extra_specs.InvalidExtraSpec,
                                extra_specs.parse, specs)
        self.assertEqual('pmem:hot_ratio', exc.key)

    def test_non_string_keys_ignored(self):
        req = extra_specs.parse({1: 'x', None: 'y', 'pmem:priority': 'low'})
        self.assertEqual('low', req.priority)


class MessageTestCase(testtools.TestCase):

    def test_message_names_key_value_and_rule(self):
        cases = [
            ('pmem:modes', 'dram,optane',
             'a comma-separated list of dram, memory_mode, app_direct, '
             'cxl_flat, cxl_kmem, cxl_devdax'),
            ('pmem:priority', 'urgent', 'one of high, normal, low'),
            ('pmem:hot_ratio', '1.5',
             'a decimal number greater than 0 and at most 1'),
            ('pmem:hotratio', '0.5',
             'one of the keys pmem:hot_ratio, pmem:modes, pmem:priority'),
        ]
        for key, value, allowed in cases:
            exc = self.assertRaises(extra_specs.InvalidExtraSpec,
                                    extra_specs.parse, {key: value})
            self.assertEqual(
                "extra spec '%s' has value '%s', expected %s"
                % (key, value, allowed), str(exc))
            self.assertEqual(allowed, exc.allowed)

    def test_is_a_value_error(self):
        self.assertTrue(issubclass(extra_specs.InvalidExtraSpec, ValueError))


class VpmemTestCase(testtools.TestCase):

    def test_hw_pmem_restricts_to_app_direct(self):
        req = extra_specs.parse({'hw:pmem': '4GB,SMALL'})
        self.assertEqual(frozenset(['app_direct']), req.modes)
        self.assertEqual(('4GB', 'SMALL'), req.vpmem_labels)
        self.assertIsNone(req.conflict)
        self.assertTrue(req.constrains_modes)

    def test_hw_pmem_with_modes_including_app_direct(self):
        req = extra_specs.parse({'hw:pmem': 'SMALL',
                                 'pmem:modes': 'dram,app_direct'})
        self.assertEqual(frozenset(['app_direct']), req.modes)
        self.assertIsNone(req.conflict)

    def test_empty_hw_pmem_is_no_vpmem(self):
        for value in ('', ' , ', None):
            req = extra_specs.parse({'hw:pmem': value,
                                     'pmem:modes': 'dram'})
            self.assertEqual(frozenset(['dram']), req.modes)
            self.assertEqual((), req.vpmem_labels)
            self.assertIsNone(req.conflict)

    def test_contradiction_with_pmem_modes(self):
        req = extra_specs.parse({'hw:pmem': 'SMALL',
                                 'pmem:modes': 'dram,memory_mode'})
        self.assertEqual(frozenset(), req.modes)
        self.assertTrue(req.constrains_modes)
        self.assertEqual(('SMALL',), req.vpmem_labels)
        self.assertEqual(
            'hw:pmem=SMALL needs an app_direct host but pmem:modes allows '
            'only dram,memory_mode', req.conflict)

    def test_contradiction_with_default_modes(self):
        req = extra_specs.parse({'hw:pmem': 'SMALL'}, extra_specs.Defaults(
            modes=['memory_mode', 'dram']))
        self.assertEqual(frozenset(), req.modes)
        self.assertEqual(
            'hw:pmem=SMALL needs an app_direct host but [pmem] '
            'default_flavor_modes allows only dram,memory_mode',
            req.conflict)

    def test_invalid_spec_wins_over_contradiction(self):
        self.assertRaises(extra_specs.InvalidExtraSpec, extra_specs.parse,
                          {'hw:pmem': 'SMALL', 'pmem:modes': 'ram'})
