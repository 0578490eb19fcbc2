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
"""Tests of the pmem: validators, through Nova's own validator registry.

``nova.api.validation.extra_specs.validators`` loads the validators of every
module on the ``nova.api.extra_spec_validators`` entry point at import, as
nova-api does; these tests go through it, so they also prove that the entry
point of the installed package is found.
"""

from nova.api.validation.extra_specs import base
from nova.api.validation.extra_specs import validators
from nova import exception
from nova import test

from nova_pmem_filters import api_validators
from nova_pmem_filters.core.rules import extra_specs


class PmemValidatorsTestCase(test.NoDBTestCase):

    def _refused(self, key, value):
        exc = self.assertRaises(exception.ValidationError,
                                validators.validate, key, value)
        return str(exc)

    def test_registered_through_entry_point(self):
        self.assertIn('pmem', validators.NAMESPACES)
        for key in ('pmem:modes', 'pmem:priority', 'pmem:hot_ratio',
                    'pmem:{key}'):
            self.assertIsInstance(validators.VALIDATORS[key],
                                  api_validators.PmemExtraSpecValidator)

    def test_register(self):
        registered = api_validators.register()
        self.assertEqual(
            ['pmem:modes', 'pmem:priority', 'pmem:hot_ratio', 'pmem:{key}'],
            [v.name for v in registered])
        for validator in registered:
            self.assertIsInstance(validator, base.ExtraSpecValidator)
            self.assertTrue(validator.description)

    def test_valid_values(self):
        valid = [
            ('pmem:modes', 'dram'),
            ('pmem:modes', 'memory_mode'),
            ('pmem:modes', 'app_direct'),
            ('pmem:modes', 'dram,app_direct'),
            ('pmem:modes', ' dram , memory_mode '),
            ('pmem:modes', 'cxl_flat'),
            ('pmem:modes', 'cxl_kmem'),
            ('pmem:modes', 'cxl_devdax'),
            ('pmem:modes', 'memory_mode, cxl_kmem,cxl_devdax'),
            ('pmem:priority', 'high'),
            ('pmem:priority', 'normal'),
            ('pmem:priority', 'low'),
            ('pmem:hot_ratio', '1'),
            ('pmem:hot_ratio', '1.0'),
            ('pmem:hot_ratio', '0.25'),
            ('pmem:hot_ratio', '.5'),
        ]
        for key, value in valid:
            validators.validate(key, value)

    def test_invalid_values(self):
        cases = [
            ('pmem:modes', 'dram,', 'a comma-separated list of dram, '
             'memory_mode, app_direct, cxl_flat, cxl_kmem, cxl_devdax'),
            ('pmem:modes', 'DRAM', 'a comma-separated list of dram, '
             'memory_mode, app_direct, cxl_flat, cxl_kmem, cxl_devdax'),
            ('pmem:modes', 'cxl', 'a comma-separated list of dram, '
             'memory_mode, app_direct, cxl_flat, cxl_kmem, cxl_devdax'),
            ('pmem:modes', 'cxl_kmem,mixed', 'a comma-separated list of '
             'dram, memory_mode, app_direct, cxl_flat, cxl_kmem, '
             'cxl_devdax'),
            ('pmem:priority', 'urgent', 'one of high, normal, low'),
            ('pmem:priority', 'High', 'one of high, normal, low'),
            ('pmem:hot_ratio', '0', 'a decimal number greater than 0 and at '
             'most 1'),
            ('pmem:hot_ratio', '1.01', 'a decimal number greater than 0 and '
             'at most 1'),
            ('pmem:hot_ratio', '5e-1', 'a decimal number greater than 0 and '
             'at most 1'),
        ]
        for key, value, rule in cases:
            self.assertEqual(
                "Validation failed; extra spec '%s' has value '%s', "
                "expected %s." % (key, value, rule),
                self._refused(key, value))

    def test_unknown_pmem_key_lists_valid_keys(self):
        for key in ('pmem:hotratio', 'pmem:mode', 'pmem:'):
            self.assertEqual(
                "Validation failed; extra spec '%s' has value 'x', expected "
                "one of the keys pmem:hot_ratio, pmem:modes, pmem:priority."
                % key, self._refused(key, 'x'))

    def test_other_namespaces_untouched(self):
        # Nova's own checks still apply to its keys, and keys that merely
        # look like ours are not ours.
        validators.validate('hw:pmem', 'SMALL,LARGE')
        validators.validate('pmem_modes', 'anything')
        validators.validate('aggregate_instance_extra_specs:pmem_mode',
                            'memory_mode')
        self.assertRaises(exception.ValidationError,
                          validators.validate, 'hw:pmem', 'SMALL LARGE')

    def test_documented_rule_matches_validation(self):
        # Nova renders the ``value`` dictionaries in its extra-spec docs;
        # Nova's own pattern / enum check must agree with ours.
        samples = ['dram', 'dram,memory_mode', ' app_direct ', 'dram,',
                   'high', 'low', 'urgent', '', '1', '0.5', '.5', '0',
                   '1.5', '1.', '01', '0.0', 'x']
        for key in (extra_specs.MODES_KEY, extra_specs.PRIORITY_KEY,
                    extra_specs.HOT_RATIO_KEY):
            validator = validators.VALIDATORS[key]
            for value in samples:
                try:
                    extra_specs.validate(key, value)
                    ours = True
                except extra_specs.InvalidExtraSpec:
                    ours = False
                try:
                    base.ExtraSpecValidator.validate(validator, key, value)
                    documented = True
                except exception.ValidationError:
                    documented = False
                self.assertEqual(ours, documented, (key, value))
