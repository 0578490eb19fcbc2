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
"""One warning per problem per process, in bounded memory."""

import logging

import fixtures


from nova_pmem_filters.scheduler import logonce
from tests.unit import fakes

LOG = logging.getLogger('nova_pmem_filters.test_logonce')


class WarnOnceTestCase(fakes.PmemTestCase):

    def test_warned_set_is_bounded(self):
        self.useFixture(fixtures.MockPatchObject(logonce, '_WARNED_MAX', 3))
        for n in range(7):
            logonce.warn_once(LOG, ('k', n), 'problem %(n)s', {'n': n})
        self.assertLessEqual(len(logonce._WARNED), 3)
        self.assertEqual(7, len(self.log_lines('WARNING')))
