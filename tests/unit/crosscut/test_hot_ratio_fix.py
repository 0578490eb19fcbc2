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
"""One hot-ratio fix: the doctor and the planner write the same command.

``openstack flavor set --property pmem:hot_ratio=...`` is written by the
doctor's ``hot-ratio-under-declared`` (observations), by its
``near-memory-mismatch`` and ``placement-accounting-partial`` (the
near-memory half alone), and by the planner's ``hot-ratios``; all build it
with ``core.plans.flavorfix``, and keep the flavor's own near-memory request
group: a numbered ``resources1:`` or ``resources_G:`` key, never an
unnumbered one beside it (Placement would sum the two).
"""

import shlex

import hypothesis
from hypothesis import strategies as st
import testtools

from nova_pmem_filters.core.plans import flavorfix
from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import placement
from nova_pmem_filters.doctor import checks
from nova_pmem_filters.planner import observed
from tests.unit.doctor import cases
from tests.unit import hypo
from tests.unit import obsdocs

GB = cases.GB
RC = placement.NEAR_MEMORY_RC
# 8 GB x 0.4 = 3276.8 MB, requested as 3277.
RAM_GB = 8
OBSERVED = 0.4
HOT_MB = '3277'


def _specs(ratio, **groups):
    specs = {'pmem:modes': 'memory_mode', 'pmem:hot_ratio': ratio}
    specs.update(('%s:%s' % (group, RC), mb) for group, mb in groups.items())
    return specs


# name -> (the flavor's extra specs, the group it keeps, groups unset)
FLAVORS = {
    'grouped': (_specs('0.25', resources1='2048'), 'resources1', []),
    'named group': (_specs('0.25', resources_G='2048'), 'resources_G', []),
    'split': (_specs('0.25', resources1='1024', resources2='1024'),
              'resources1', ['resources2']),
    'plain': (_specs('0.25', resources='2048'), 'resources', []),
}


def _doctor(snap, code):
    return {f.object[len('flavor '):]: f.fix for f in checks.run(snap)
            if f.code == code}


class SitesAgreeTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        snap = cases.clean()
        for name, (specs, _group, _unset) in FLAVORS.items():
            snap = cases.with_flavor(snap, cases.flavor(name, RAM_GB,
                                                        **specs))
        self.snap = snap

    def observations(self):
        doc = obsdocs.document('mm1', [
            obsdocs.instance('%s-%d' % (name, n), name, RAM_GB * GB,
                             OBSERVED)
            for name in FLAVORS for n in range(2)])
        return cases.replace(self.snap, observations=(doc,))

    def test_doctor_and_planner_write_the_same_command(self):
        doctor = _doctor(self.observations(), 'hot-ratio-under-declared')
        self.assertEqual(set(FLAVORS), set(doctor))
        for name, (specs, group, unset) in FLAVORS.items():
            planner = observed.set_command(name, OBSERVED, RAM_GB * GB,
                                           specs)
            self.assertEqual(doctor[name], planner, name)
            words = shlex.split(planner.split(' && ')[-1])
            self.assertEqual(
                ['openstack', 'flavor', 'set',
                 '--property', 'pmem:hot_ratio=0.4',
                 '--property', '%s:%s=%s' % (group, RC, HOT_MB), name],
                words)
            if unset:
                self.assertEqual(
                    ['openstack', 'flavor', 'unset'] + [
                        w for g in unset
                        for w in ('--property', '%s:%s' % (g, RC))] + [name],
                    shlex.split(planner.split(' && ')[0]))
            else:
                self.assertNotIn(' && ', planner)

    def test_the_near_memory_fix_is_the_same_request(self):
        # Once the ratio is declared, near-memory-mismatch asks for the
        # same group and amount: the hot-ratio fix minus the ratio.
        snap = cases.clean()
        for name, (specs, _group, _unset) in FLAVORS.items():
            snap = cases.with_flavor(snap, cases.flavor(
                name, RAM_GB, **dict(specs, **{
                    extra_specs.HOT_RATIO_KEY: '0.4'})))
        mismatch = _doctor(snap, 'near-memory-mismatch')
        self.assertEqual(set(FLAVORS), set(mismatch))
        for name, (specs, _group, _unset) in FLAVORS.items():
            full = observed.set_command(name, OBSERVED, RAM_GB * GB, specs)
            self.assertEqual(
                full.replace(' --property pmem:hot_ratio=0.4', ''),
                mismatch[name], name)

    def test_applied_the_request_matches_the_ratio(self):
        for name, (specs, group, _unset) in FLAVORS.items():
            change = flavorfix.hot_ratio(name, specs, OBSERVED,
                                         memory_mb=RAM_GB * GB)
            after = change.apply(specs)
            self.assertEqual([group + ':' + RC],
                             placement.near_memory_keys(after))
            self.assertEqual(
                placement.instance_near_memory_mb(RAM_GB * GB, OBSERVED),
                placement.requested_near_memory(after))
            self.assertEqual(OBSERVED,
                             extra_specs.parse(after).hot_ratio)

    def test_an_unaccounted_flavor_only_declares_the_ratio(self):
        specs = {'pmem:modes': 'memory_mode'}
        self.assertEqual(
            'openstack flavor set --property pmem:hot_ratio=0.4 small',
            flavorfix.hot_ratio('small', specs, OBSERVED,
                                memory_mb=RAM_GB * GB).command())
        self.assertEqual(
            observed.set_command('small', OBSERVED),
            flavorfix.hot_ratio('small', specs, OBSERVED).command())
        # The planner with --placement-accounting: nova-config's key.
        self.assertEqual(
            'openstack flavor set --property pmem:hot_ratio=0.4 --property '
            'resources:CUSTOM_NEAR_MEMORY_MB=3277 small',
            observed.set_command('small', OBSERVED, RAM_GB * GB, specs))

    def test_a_name_is_quoted_for_the_shell(self):
        command = flavorfix.hot_ratio("m1 'big'", {}, 1.0).command()
        self.assertEqual(["openstack", "flavor", "set", "--property",
                          "pmem:hot_ratio=1.0", "m1 'big'"],
                         shlex.split(command))


class HotRatioTextTestCase(testtools.TestCase):
    """The core's formatter writes what the core's grammar reads back."""

    def test_by_hand(self):
        for value, text in ((1.0, '1.0'), (1, '1.0'), (0.5, '0.5'),
                            (0.25, '0.25'), (1e-05, '0.00001'),
                            (2.5e-07, '0.00000025'),
                            (0.1 + 0.2, '0.30000000000000004')):
            self.assertEqual(text, extra_specs.format_hot_ratio(value))
        for bad in (0, 0.0, -0.5, 1.5, float('nan'), float('inf'), None,
                    'half', True):
            self.assertRaises(extra_specs.InvalidExtraSpec,
                              extra_specs.format_hot_ratio, bad)

    @hypo.settings(500)
    @hypothesis.given(st.floats(min_value=0.0, max_value=1.0,
                                exclude_min=True))
    def test_reads_back(self, ratio):
        text = extra_specs.format_hot_ratio(ratio)
        extra_specs.validate(extra_specs.HOT_RATIO_KEY, text)
        self.assertEqual(ratio, extra_specs.parse_hot_ratio(text))
