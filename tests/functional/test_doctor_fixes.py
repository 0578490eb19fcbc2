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
"""The doctor's printed fixes, run against a real Nova.

The doctor reads the in-process Nova and Placement through the same
``snapshot.gather`` the CLI uses; each fix is run as printed, through the
API call its ``openstack`` command maps to, and the doctor is run again:
the finding is gone and no other has appeared.

The database here is SQLite, which compares keys exactly; the MariaDB
behaviour that makes "unset before set" necessary is not reproduced, only
that the printed order works.
"""

import shlex
import urllib.parse

from nova_pmem_filters.core import kinds
from nova_pmem_filters.core import profile
from nova_pmem_filters.doctor import checks
from nova_pmem_filters.doctor import snapshot
from tests.functional import base


class _Response(object):
    """What ``snapshot`` reads of a response: status and JSON body."""

    def __init__(self, status_code, body):
        self.status_code = status_code
        self._body = body
        self.headers = {}
        self.text = ''

    def json(self):
        return self._body


class _Compute(object):

    def __init__(self, api):
        self.api = api

    def get(self, path, microversion=None):
        path = urllib.parse.urlsplit(path)
        relative = path.path.lstrip('/')
        if relative.startswith('v2.1/'):
            relative = relative[len('v2.1/'):]
        if path.query:
            relative += '?' + path.query
        saved = self.api.microversion
        self.api.microversion = microversion
        try:
            response = self.api.api_request(relative)
        finally:
            self.api.microversion = saved
        body = response.json() if response.content else {}
        return _Response(response.status_code, body)


class _Placement(object):

    def __init__(self, api):
        self.api = api

    def get(self, path, microversion=None):
        response = self.api.get(path, version=microversion)
        return _Response(response.status, response.body)


class _Connection(object):
    """The part of an openstacksdk Connection that ``gather`` uses."""

    def __init__(self, compute, placement):
        self.compute = _Compute(compute)
        self.placement = _Placement(placement)


class DoctorFixesTest(base.PmemTestBase):

    MM = 'aggregate %s' % base.MEMORY_MODE_AGGREGATE.name

    def setUp(self):
        super(DoctorFixesTest, self).setUp()
        self.flavors = {}

    def doctor(self):
        conn = _Connection(self.admin_api, self.placement)
        return {(f.severity, f.code, f.object): f
                for f in checks.run(snapshot.gather(conn))}

    def apply(self, fix):
        """Run ``fix`` as printed: openstack commands joined by &&."""
        words = shlex.split(fix)
        commands = [[]]
        for word in words:
            if word == '&&':
                commands.append([])
            else:
                commands[-1].append(word)
        for command in commands:
            self.assertEqual('openstack', command[0], fix)
            noun, verb, name = command[1], command[2], command[-1]
            props = [command[i + 1] for i, w in enumerate(command[:-1])
                     if w == '--property']
            self.assertIn(noun, ('aggregate', 'flavor'), fix)
            self.assertIn(verb, ('set', 'unset'), fix)
            if noun == 'aggregate':
                if verb == 'set':
                    meta = dict(p.split('=', 1) for p in props)
                else:
                    meta = {p: None for p in props}
                self.admin_api.post_aggregate_action(
                    self.aggregates[name],
                    {'set_metadata': {'metadata': meta}})
            elif verb == 'set':
                self.admin_api.post_extra_spec(
                    self.flavors[name],
                    {'extra_specs': dict(p.split('=', 1) for p in props)})
            else:
                for key in props:
                    self.admin_api.api_delete(
                        'flavors/%s/os-extra_specs/%s'
                        % (self.flavors[name], urllib.parse.quote(key)))

    def assert_fix_clears(self, code, obj):
        """Apply the fix of finding (code, obj): only it goes away."""
        before = self.doctor()
        (key,) = [k for k in before if k[1:] == (code, obj)]
        self.apply(before[key].fix)
        after = self.doctor()
        expected = dict(before)
        del expected[key]
        self.assertEqual(sorted(expected), sorted(after))
        return before[key]

    def test_mode_with_spaces_is_a_warning_and_its_fix_works(self):
        baseline = self.doctor()
        self.apply(shlex.join([
            'openstack', 'aggregate', 'set', '--property',
            '%s= %s ' % (profile.MODE_KEY, kinds.MEMORY_MODE),
            base.MEMORY_MODE_AGGREGATE.name]))
        found = self.doctor()
        self.assertNotIn((checks.ERROR, 'invalid-pmem-mode', self.MM), found)
        self.assertIn((checks.WARNING, 'untidy-pmem-mode', self.MM), found)
        # The scheduler reads memory_mode: a Memory-Mode-only flavor boots
        # on the host.
        flavor = self._create_pmem_flavor(
            'mm-only', 8, extra_specs={'pmem:modes': kinds.MEMORY_MODE,
                                       'pmem:hot_ratio': '0.5'})
        server = self._boot(flavor)
        self.assertEqual(base.MM_HOST, self._host_of(server))
        self._delete(server)
        self.assert_fix_clears('untidy-pmem-mode', self.MM)
        self.assertEqual(sorted(baseline), sorted(self.doctor()))

    def test_misspelt_key_fixes_work(self):
        baseline = self.doctor()
        name = base.MEMORY_MODE_AGGREGATE.name
        for wrong in ('PMEM_DRAM_CACHE_GB', profile.DRAM_CACHE_KEY + ' '):
            self.apply(shlex.join([
                'openstack', 'aggregate', 'unset', '--property',
                profile.DRAM_CACHE_KEY, name]))
            self.apply(shlex.join([
                'openstack', 'aggregate', 'set', '--property',
                '%s=%s' % (wrong, base.MM_CACHE_GB), name]))
            found = self.doctor()
            self.assertIn((checks.WARNING, 'misspelt-key', self.MM), found)
            fix = found[(checks.WARNING, 'misspelt-key', self.MM)].fix
            self.assertTrue(fix.startswith(
                'openstack aggregate unset --property %s '
                % shlex.quote(wrong)), fix)
            self.apply(fix)
            self.assertEqual(sorted(baseline), sorted(self.doctor()))

    def test_non_finite_multiplier_fix_works(self):
        baseline = self.doctor()
        self.apply(shlex.join([
            'openstack', 'aggregate', 'set', '--property',
            '%s=nan' % profile.TIER_WEIGHT_MULTIPLIER_KEY,
            base.MEMORY_MODE_AGGREGATE.name]))
        self.assert_fix_clears('invalid-weight-multiplier', self.MM)
        self.assertEqual(sorted(baseline), sorted(self.doctor()))

    def test_numbered_group_fix_works(self):
        specs = {'pmem:modes': kinds.MEMORY_MODE, 'pmem:hot_ratio': '0.25',
                 'resources1:CUSTOM_NEAR_MEMORY_MB': '1024'}
        self.flavors['grouped'] = self._create_pmem_flavor(
            'grouped', 8, extra_specs=specs)
        finding = self.assert_fix_clears('near-memory-mismatch',
                                         'flavor grouped')
        self.assertIn('resources1:CUSTOM_NEAR_MEMORY_MB=2048', finding.fix)
        specs = self.admin_api.api_get(
            'flavors/%s/os-extra_specs' % self.flavors['grouped']
        ).body['extra_specs']
        self.assertEqual('2048', specs['resources1:CUSTOM_NEAR_MEMORY_MB'])
        self.assertNotIn('resources:CUSTOM_NEAR_MEMORY_MB', specs)
