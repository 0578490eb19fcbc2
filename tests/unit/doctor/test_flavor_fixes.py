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
"""Every printed flavor fix, applied to the snapshot: no new finding.

Each planted flavor's findings are read, each fix that is ``openstack
flavor set|unset`` commands is applied to the snapshot as the commands
say (a placeholder takes each of a few allowed values, as an operator
would fill it in), and the doctor runs again: the finding went away, and
no finding appeared that was not there before. The functional suite runs
some of the same fixes against a real Nova; this runs every form.
"""

import collections
import dataclasses
import re
import shlex

import testtools

from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import placement
from nova_pmem_filters.doctor import checks
from tests.unit.doctor import cases

NEAR = cases.NEAR
# name -> (RAM GB, extra specs): one defect each, on the clean cloud.
PLANTED = {
    'bad-priority': (4, {'pmem:priority': 'urgent'}),
    'bad-priority-accounted': (4, {'pmem:priority': 'urgent',
                                   NEAR: '2048'}),
    'bad-priority-dram': (4, {'pmem:priority': 'urgent',
                              'pmem:modes': 'dram'}),
    'bad-modes': (4, {'pmem:modes': 'dram,mm'}),
    'bad-ratio': (4, {'pmem:hot_ratio': '2'}),
    'bad-ratio-accounted': (4, {'pmem:hot_ratio': '2', NEAR: '2048'}),
    'unknown-key': (4, {'pmem:hotratio': '0.3', 'pmem:priority': 'urgent'}),
    'misspelt-ratio': (2, {'pmem_hot_ratio': '0.3', NEAR: '1024'}),
    'misspelt-bad-ratio': (2, {'pmem_hot_ratio': '1.5', NEAR: '1024'}),
    'misspelt-modes': (2, {'PMEM:modes': 'memory_mode'}),
    'misspelt-priority': (2, {'pmem-priority': 'low', NEAR: '1024'}),
    'unaccounted': (2, {}),
    'under-requested': (32, {'pmem:modes': 'memory_mode',
                             'pmem:hot_ratio': '0.25', NEAR: '4096'}),
    'two-groups': (32, {'pmem:modes': 'memory_mode',
                        'pmem:hot_ratio': '0.25',
                        'resources1:CUSTOM_NEAR_MEMORY_MB': '4096',
                        NEAR: '8192'}),
}

PLACEHOLDER = re.compile(r'<([^<>]*)>')
# What an operator may write for each rule's placeholder.
CHOICES = {
    extra_specs.RULES[extra_specs.PRIORITY_KEY][0]: ('high', 'normal',
                                                     'low'),
    extra_specs.RULES[extra_specs.MODES_KEY][0]: (
        'dram', 'memory_mode', 'app_direct', 'dram,app_direct', 'cxl_kmem'),
    extra_specs.RULES[extra_specs.HOT_RATIO_KEY][0]: ('0.3', '1.0'),
}


def _filled(fix, ram_mb):
    """``fix`` with its placeholders filled in, each way an operator may."""
    rules = PLACEHOLDER.findall(fix)
    if not rules:
        return [fix]
    rule = rules[0]
    filled = []
    for value in CHOICES[rule]:
        text = fix.replace('<%s>' % rule, value, 1)
        # The near-memory amount of the ratio chosen.
        amount = str(placement.instance_near_memory_mb(ram_mb, float(value))
                     if rule == extra_specs.RULES[
                         extra_specs.HOT_RATIO_KEY][0] else 0)
        text = re.sub(r'<\d+ MB x the ratio chosen, rounded up>', amount,
                      text)
        filled.extend(_filled(text, ram_mb))
    return filled


def _applied(snap, fix):
    """``snap`` once the ``openstack flavor`` commands of ``fix`` ran."""
    flavors = {f.name: f for f in snap.flavors}
    for line in fix.split(' && '):
        words = shlex.split(line)
        if words[:2] != ['openstack', 'flavor'] or (
                words[2] not in ('set', 'unset')):
            raise ValueError('not a flavor command: %s' % line)
        name = words[-1]
        props = words[3:-1]
        assert props[::2] == ['--property'] * (len(props) // 2), line
        specs = dict(flavors[name].extra_specs)
        for prop in props[1::2]:
            if words[2] == 'unset':
                specs.pop(prop, None)
            else:
                key, _sep, value = prop.partition('=')
                specs[key] = value
        flavors[name] = dataclasses.replace(flavors[name], extra_specs=specs)
    return cases.replace(snap, flavors=tuple(flavors.values()))


def _counts(found):
    return collections.Counter((f.code, f.object) for f in found)


class FlavorFixTestCase(testtools.TestCase):

    def _check(self, name, ram_gb, specs):
        snap = cases.with_flavor(cases.clean(),
                                 cases.flavor(name, ram_gb, **specs))
        before = checks.run(snap)
        mine = [f for f in before if f.object == 'flavor %s' % name]
        self.assertNotEqual([], mine, name)
        for finding in mine:
            for fix in _filled(finding.fix, ram_gb * cases.GB):
                after = _counts(checks.run(_applied(snap, fix)))
                counts = _counts(before)
                key = (finding.code, finding.object)
                self.assertEqual(counts[key] - 1, after[key],
                                 '%s: %s did not go away' % (fix, key))
                new = after - counts
                self.assertEqual(collections.Counter(), new,
                                 '%s left %s behind' % (fix, new))

    def test_every_flavor_fix_leaves_no_new_finding(self):
        for name, (ram_gb, specs) in PLANTED.items():
            self._check(name, ram_gb, specs)

    def test_invalid_priority_fix_requests_near_memory(self):
        # The case: another flavor requests near memory, so once
        # the priority is valid the flavor would be partially accounted.
        snap = cases.with_flavor(cases.clean(), cases.flavor(
            'old', 4, **{'pmem:priority': 'urgent'}))
        fix, = [f.fix for f in checks.run(snap)
                if f.code == 'invalid-extra-spec']
        self.assertEqual(
            'openstack flavor set --property pmem:priority=<one of high, '
            'normal, low> old && openstack flavor set --property '
            'resources:CUSTOM_NEAR_MEMORY_MB=2048 old', fix)
        # A flavor that never lands on tiered hosts needs nothing more.
        snap = cases.with_flavor(cases.clean(), cases.flavor(
            'old', 4, **{'pmem:priority': 'urgent', 'pmem:modes': 'dram'}))
        fix, = [f.fix for f in checks.run(snap)
                if f.code == 'invalid-extra-spec']
        self.assertNotIn(NEAR, fix)
