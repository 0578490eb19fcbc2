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
"""nova-api refuses bad ``pmem:`` extra specs and accepts good ones.

nova-pmem-filters registers validators for the ``pmem`` namespace
(``nova.api.extra_spec_validators``); Nova runs them from microversion 2.86
on. Each bad value is first checked to be bad by the documented grammar
(:func:`nova_pmem_tempest_plugin.contract.spec_problem`, written from
doc/source/scheduling.rst, "Flavor extra specs"), so a test cannot pass by
sending a value that is actually good.
"""

from tempest import config
from tempest.lib import decorators
from tempest.lib import exceptions as lib_exc

from nova_pmem_tempest_plugin import contract
from nova_pmem_tempest_plugin.tests import base

CONF = config.CONF


class PmemExtraSpecsTest(base.BaseAdminTest):
    """``pmem:`` extra specs through the compute API, as an admin."""

    # Nova validates extra specs from 2.86 on.
    min_microversion = '2.86'

    @classmethod
    def skip_checks(cls):
        super(PmemExtraSpecsTest, cls).skip_checks()
        if not CONF.pmem_filters.api_validators:
            raise cls.skipException(
                'nova-api of this cloud does not load the pmem: extra-spec '
                'validators ([pmem_filters] api_validators = False)')

    def assert_refused(self, key, values):
        """Each value gets HTTP 400 naming key and value; none is set."""
        flavor = self.create_flavor('bad-spec',
                                    CONF.pmem_filters.flavor_ram_mb)
        for value in values:
            self.assertIsNotNone(contract.spec_problem(key, value))
            exc = self.assertRaises(
                lib_exc.BadRequest,
                self.admin_flavors_client.set_flavor_extra_spec,
                flavor['id'], **{key: value})
            message = base.error_message(exc)
            self.assertIn("'%s'" % key, message)
            self.assertIn("'%s'" % value, message)
        specs = self.admin_flavors_client.list_flavor_extra_specs(
            flavor['id'])['extra_specs']
        self.assertNotIn(key, specs)

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('01f52853-1b0e-4040-8255-04c9bca204da')
    def test_hot_ratio_out_of_range(self):
        self.assert_refused(contract.HOT_RATIO_KEY,
                            ['0', '2', '1.5', '-0.5'])

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('8df45714-31e6-4600-a76c-028200522d4e')
    def test_hot_ratio_not_a_decimal(self):
        self.assert_refused(contract.HOT_RATIO_KEY,
                            ['half', '50%', '1e-1'])

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('2ce24a64-175a-41ff-8589-dc7e5cd1fb2a')
    def test_unknown_mode(self):
        self.assert_refused(contract.MODES_KEY,
                            ['dram,tape', 'memory-mode', 'DRAM',
                             'dram,,app_direct'])

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('65545b33-1eda-4b52-b9af-27c69bb40429')
    def test_unknown_priority(self):
        self.assert_refused(contract.PRIORITY_KEY, ['urgent', 'HIGH'])

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('05bce920-8e73-420d-a16d-6673f9d7597c')
    def test_unknown_key(self):
        # A typo would otherwise be ignored: the flavor would silently get
        # the defaults.
        self.assert_refused('pmem:hotratio', ['0.5'])
        self.assert_refused('pmem:mode', ['dram'])

    @decorators.idempotent_id('f1ff3383-ca65-4659-aa03-2bb46d4aabe8')
    def test_valid_specs_accepted(self):
        specs = {contract.MODES_KEY: 'dram,memory_mode',
                 contract.PRIORITY_KEY: contract.PRIORITY_LOW,
                 contract.HOT_RATIO_KEY: '0.25'}
        flavor = self.create_flavor('good-spec',
                                    CONF.pmem_filters.flavor_ram_mb, specs)
        stored = self.admin_flavors_client.list_flavor_extra_specs(
            flavor['id'])['extra_specs']
        self.assertEqual(specs, {k: v for k, v in stored.items()
                                 if k.startswith('pmem:')})
        # What every user of the public flavor sees (2.61 and later).
        shown = self.flavors_client.show_flavor(flavor['id'])['flavor']
        self.assertEqual(specs, {k: v for k, v in
                                 shown['extra_specs'].items()
                                 if k.startswith('pmem:')})
