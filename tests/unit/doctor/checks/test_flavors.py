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
"""The checks of the flavors' pmem: extra specs."""

import dataclasses


from nova_pmem_filters.doctor import checks
from tests.unit.doctor import cases


class FlavorTestCase(cases.DoctorTestCase):

    def test_invalid_and_unknown_specs(self):
        bad = cases.flavor('old', 4, **{'pmem:hotratio': '0.3',
                                        'pmem:priority': 'urgent'})
        found = self.assertFindings(
            cases.with_flavor(cases.clean(), bad),
            (checks.ERROR, 'invalid-extra-spec', 'flavor old'),
            (checks.ERROR, 'invalid-extra-spec', 'flavor old'))
        fixes = sorted(
            f.fix for f in checks.run(cases.with_flavor(cases.clean(), bad)))
        # The value of a misspelt key is kept where it is valid.
        # Once both are fixed, the flavor lands on Memory-Mode hosts where
        # the others request near memory: both fixes request it too.
        self.assertEqual('openstack flavor set --property pmem:priority=<one '
                         'of high, normal, low> old && openstack flavor set '
                         '--property resources:CUSTOM_NEAR_MEMORY_MB=1229 '
                         'old', fixes[0])
        # Unset first: the database may take both keys for one.
        self.assertEqual('openstack flavor unset --property pmem:hotratio '
                         'old && openstack flavor set --property '
                         'pmem:hot_ratio=0.3 old && openstack flavor set '
                         '--property resources:CUSTOM_NEAR_MEMORY_MB=1229 '
                         'old', fixes[1])
        self.assertIn('NoValidHost',
                      found[('invalid-extra-spec', 'flavor old')].problem)

    def test_vpmem_without_app_direct(self):
        bad = cases.flavor('vpmem', 8, **{'hw:pmem': 'SMALL',
                                          'pmem:modes': 'dram'})
        self.assertFindings(cases.with_flavor(cases.clean(), bad),
                            (checks.ERROR, 'vpmem-modes-conflict',
                             'flavor vpmem'))

    def test_near_memory_amount(self):
        less = cases.flavor('capacity', 32, **{'pmem:modes': 'memory_mode',
                                               'pmem:hot_ratio': '0.25',
                                               cases.NEAR: '4096'})
        found = self.assertFindings(
            cases.with_flavor(cases.clean(), less),
            (checks.ERROR, 'near-memory-mismatch', 'flavor capacity'))
        finding = found[('near-memory-mismatch', 'flavor capacity')]
        self.assertIn('8192', finding.problem)
        self.assertIn('CUSTOM_NEAR_MEMORY_MB=8192 capacity', finding.fix)
        more = dataclasses.replace(less, extra_specs=dict(
            less.extra_specs, **{cases.NEAR: '16384'}))
        self.assertFindings(cases.with_flavor(cases.clean(), more),
                            (checks.WARNING, 'near-memory-mismatch',
                             'flavor capacity'))
        # The default hot ratio of nova.conf decides for a flavor without
        # its own: 2 GB at 0.25.
        snap = cases.replace(
            cases.clean(), config=cases.config(default_hot_ratio=0.25))
        self.assertFindings(snap, (checks.WARNING, 'near-memory-mismatch',
                                   'flavor small'))

    def test_near_memory_fix_keeps_the_numbered_group(self):
        # The amount is in request group 1: the fix sets that key, not an
        # unnumbered one that Placement would add to it.
        group1 = 'resources1:CUSTOM_NEAR_MEMORY_MB'
        less = cases.flavor('capacity', 32, **{'pmem:modes': 'memory_mode',
                                               'pmem:hot_ratio': '0.25',
                                               group1: '4096'})
        found = self.assertFindings(
            cases.with_flavor(cases.clean(), less),
            (checks.ERROR, 'near-memory-mismatch', 'flavor capacity'))
        self.assertEqual(
            'openstack flavor set --property '
            'resources1:CUSTOM_NEAR_MEMORY_MB=8192 capacity',
            found[('near-memory-mismatch', 'flavor capacity')].fix)
        # Two groups that Placement sums: one is kept, set to the amount.
        both = cases.flavor('capacity', 32, **{'pmem:modes': 'memory_mode',
                                               'pmem:hot_ratio': '0.25',
                                               group1: '4096',
                                               cases.NEAR: '8192'})
        found = self.assertFindings(
            cases.with_flavor(cases.clean(), both),
            (checks.WARNING, 'near-memory-mismatch', 'flavor capacity'))
        self.assertEqual(
            'openstack flavor unset --property '
            'resources:CUSTOM_NEAR_MEMORY_MB capacity && openstack flavor '
            'set --property resources1:CUSTOM_NEAR_MEMORY_MB=8192 capacity',
            found[('near-memory-mismatch', 'flavor capacity')].fix)

    def test_partial_placement_accounting(self):
        snap = cases.with_flavor(cases.clean(), cases.flavor('small', 2))
        found = self.assertFindings(
            snap, (checks.WARNING, 'placement-accounting-partial',
                   'flavor small'),
            (checks.WARNING, 'filter-only-cache-accounting',
             'nova.conf [scheduler] workers'))
        self.assertIn('CUSTOM_NEAR_MEMORY_MB=1024 small', found[(
            'placement-accounting-partial', 'flavor small')].fix)
        # Quoted: a flavor name may hold spaces.
        snap = cases.with_flavor(cases.clean(), cases.flavor('m1 small', 2))
        self.assertIn("CUSTOM_NEAR_MEMORY_MB=1024 'm1 small'", {
            f.code: f.fix for f in self.findings(snap)}[
                'placement-accounting-partial'])
        # A flavor that never lands in Memory Mode needs no accounting.
        dram_only = cases.flavor('small', 2, **{'pmem:modes': 'dram'})
        self.assertFindings(cases.with_flavor(cases.clean(), dram_only))

    def test_misspelt_flavor_keys(self):
        for wrong in ('pmem_modes', 'pmem.hot_ratio', 'PMEM:priority',
                      'pmem-modes'):
            snap = cases.with_flavor(cases.clean(), cases.flavor('odd', 2, **{
                cases.NEAR: '1024', wrong: 'dram'}))
            self.assertFindings(snap, (checks.WARNING, 'misspelt-key',
                                       'flavor odd'))

    def test_misspelt_key_with_an_invalid_value(self):
        # nova-api would refuse the value once the misspelt key is unset,
        # and a cloud without the validators would then report it.
        snap = cases.with_flavor(cases.clean(), cases.flavor('odd', 2, **{
            cases.NEAR: '1024', 'pmem_hot_ratio': '1.5'}))
        found = self.assertFindings(snap, (checks.WARNING, 'misspelt-key',
                                           'flavor odd'))
        # The request follows the ratio chosen: its amount is left to
        # fill in too.
        self.assertEqual(
            "openstack flavor unset --property pmem_hot_ratio odd && "
            "openstack flavor set --property 'pmem:hot_ratio=<a decimal "
            "number greater than 0 and at most 1>' odd && openstack flavor "
            "set --property 'resources:CUSTOM_NEAR_MEMORY_MB=<2048 MB x the "
            "ratio chosen, rounded up>' odd",
            found[('misspelt-key', 'flavor odd')].fix)
