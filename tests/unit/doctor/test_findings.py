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
"""Findings: their codes, documented and tested, and the exit status."""

import glob
import os
import re

import testtools

from nova_pmem_filters.doctor import checks
from tests.unit.doctor import cases
from tests.unit import paths


class CodesTestCase(testtools.TestCase):

    def test_every_code_is_documented_and_tested(self):
        here = os.path.dirname(os.path.abspath(__file__))
        doc = paths.of('doc', 'source', 'doctor.rst')
        with open(doc) as f:
            documented = re.findall(r'^``([a-z-]+)``$', f.read(), re.M)
        self.assertEqual(sorted(checks.CODES), sorted(documented))
        tests = ''
        for path in glob.glob(os.path.join(here, '**', 'test_*.py'),
                              recursive=True):
            with open(path) as f:
                tests += f.read()
        for code in checks.CODES:
            self.assertIn("'%s'" % code, tests)

    def test_undocumented_codes_are_refused(self):
        self.assertRaises(ValueError, checks.Finding, checks.ERROR,
                          'made-up', 'o', 'p', 'f')
        self.assertRaises(ValueError, checks.Finding, 'fatal',
                          'misspelt-key', 'o', 'p', 'f')


class ExitStatusTestCase(testtools.TestCase):

    def test_exit_status(self):
        def finding(severity):
            return checks.Finding(severity, 'misspelt-key', 'o', 'p', 'f')
        self.assertEqual(0, checks.exit_status([]))
        self.assertEqual(0, checks.exit_status([finding(checks.INFO)]))
        self.assertEqual(1, checks.exit_status([finding(checks.INFO),
                                                finding(checks.WARNING)]))
        self.assertEqual(2, checks.exit_status([finding(checks.WARNING),
                                                finding(checks.ERROR)]))

    def test_order_errors_first(self):
        snap = cases.with_flavor(cases.replace(cases.clean(), config=None),
                                 cases.flavor(
                                     'old', 4, **{'pmem:hotratio': '1'}))
        severities = [f.severity for f in checks.run(snap)]
        self.assertEqual(sorted(severities, key=checks.SEVERITIES.index),
                         severities)
