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
"""Every check on a clean cloud: nothing to report."""

import dataclasses


from nova_pmem_filters.doctor import checks
from tests.unit.doctor import cases


class CleanCloudTestCase(cases.DoctorTestCase):

    def test_clean_cloud_has_no_finding(self):
        self.assertFindings(cases.clean())
        self.assertEqual(0, checks.exit_status(checks.run(cases.clean())))

    def test_without_fleet_or_placement_traits_still_clean(self):
        snap = cases.replace(cases.clean(), fleet=None)
        self.assertFindings(snap)
        bare = {h: dataclasses.replace(p, traits=frozenset(['COMPUTE_NODE']))
                for h, p in snap.providers.items()}
        self.assertFindings(cases.replace(snap, providers=bare))

    def test_no_nova_conf_is_said_not_guessed(self):
        found = self.assertFindings(
            cases.replace(cases.clean(), config=None),
            (checks.INFO, 'nova-conf-not-read', 'nova.conf'))
        finding = found[('nova-conf-not-read', 'nova.conf')]
        self.assertIn('--config-file', finding.fix)
        self.assertIn('default_hot_ratio 0.5', finding.problem)
        self.assertEqual(0, checks.exit_status(checks.run(
            cases.replace(cases.clean(), config=None))))
