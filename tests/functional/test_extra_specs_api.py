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
"""nova-api refuses bad pmem: extra specs at 2.86+; the scheduler below.

The validators are loaded by Nova from the ``nova.api.extra_spec_validators``
entry point of the installed package, as in production.
"""

from nova.tests.functional.api import client as api_client
from nova import utils

from tests.functional import base

VALID = {
    'pmem:modes': 'dram, app_direct',
    'pmem:priority': 'high',
    'pmem:hot_ratio': '.25',
}

MODES_ALLOWED = ('a comma-separated list of dram, memory_mode, app_direct, '
                 'cxl_flat, cxl_kmem, cxl_devdax')
RATIO_ALLOWED = 'a decimal number greater than 0 and at most 1'

# (key, bad value, what the message says is allowed)
INVALID = [
    ('pmem:modes', 'dram,fast', MODES_ALLOWED),
    ('pmem:modes', '', MODES_ALLOWED),
    ('pmem:priority', 'urgent', 'one of high, normal, low'),
    ('pmem:hot_ratio', '1.5', RATIO_ALLOWED),
    ('pmem:hot_ratio', '0', RATIO_ALLOWED),
    ('pmem:hot_ratio', '25%', RATIO_ALLOWED),
    ('pmem:hotratio', '0.5',
     'one of the keys pmem:hot_ratio, pmem:modes, pmem:priority'),
]


class ExtraSpecValidationTest(base.PmemTestBase):

    HOSTS = (base.DRAM,)
    AGGREGATES = (base.DRAM_AGGREGATE,)

    def setUp(self):
        super(ExtraSpecValidationTest, self).setUp()
        self.flavor = self._create_pmem_flavor('plain', memory_gb=16)

    def _assert_refused(self, call, key, value, allowed):
        exc = self.assertRaises(api_client.OpenStackApiException, call)
        self.assertEqual(400, exc.response.status_code)
        message = exc.response.json()['badRequest']['message']
        self.assertIn("extra spec '%s' has value '%s', expected %s"
                      % (key, value, allowed), message)

    def test_invalid_specs_refused_from_2_86(self):
        for microversion in ('2.86', 'latest'):
            with utils.temporary_mutation(self.admin_api,
                                          microversion=microversion):
                for key, value, allowed in INVALID:
                    self._assert_refused(
                        lambda: self.admin_api.post_extra_spec(
                            self.flavor, {'extra_specs': {key: value}}),
                        key, value, allowed)
                    self._assert_refused(
                        lambda: self.admin_api.put_extra_spec(
                            self.flavor, key, {key: value}),
                        key, value, allowed)
                    # One bad key refuses the whole request.
                    self._assert_refused(
                        lambda: self.admin_api.post_extra_spec(
                            self.flavor,
                            {'extra_specs': dict(VALID, **{key: value})}),
                        key, value, allowed)
        self.assertEqual({}, self.admin_api.get_extra_specs(self.flavor))

    def test_valid_specs_accepted(self):
        with utils.temporary_mutation(self.admin_api, microversion='2.86'):
            self.admin_api.post_extra_spec(self.flavor,
                                           {'extra_specs': VALID})
            self.admin_api.put_extra_spec(
                self.flavor, 'pmem:hot_ratio', {'pmem:hot_ratio': '1'})
        self.assertEqual(dict(VALID, **{'pmem:hot_ratio': '1'}),
                         self.admin_api.get_extra_specs(self.flavor))
        # ...and the scheduler takes them: dram1 is the only dram host.
        self.assertEqual(base.DRAM_HOST, self._host_of(self._boot(
            self.flavor)))

    def test_scheduler_rejects_what_older_microversions_stored(self):
        # Before 2.86 Nova stores any extra spec; the filters then refuse
        # every host for the flavor and say which spec is wrong.
        for key, value, allowed in (INVALID[0], INVALID[-1]):
            flavor = self._create_pmem_flavor(key + value, memory_gb=16)
            with utils.temporary_mutation(self.admin_api,
                                          microversion='2.85'):
                self.admin_api.post_extra_spec(
                    flavor, {'extra_specs': {key: value}})
            self.assertEqual({key: value},
                             self.admin_api.get_extra_specs(flavor))
            server = self._boot(flavor, 'ERROR')
            self._assert_no_valid_host(server)
            self.assertIn(
                "PmemModeFilter rejects every host for instance %s: extra "
                "spec '%s' has value '%s', expected %s"
                % (server['id'], key, value, allowed),
                self.pmem_log.output)
        self.assertIn('Filter PmemModeFilter returned 0 hosts',
                      self.stdlog.logger.output)
