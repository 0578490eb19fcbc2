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

The rebalancing plan (``working-set-over-near-memory``) is run as printed
too: each ``openstack server migrate --live-migration --host`` line is the
live migration it asks for, through Nova's scheduler and its filters.

Every code the checks can emit is either run here (``RUN_BY``: the tests
that run its fix) or listed with the reason its fix cannot be run against
the APIs (``NOT_RUN``); :class:`FixClassificationTest` keeps the two
complete, so that a new finding gets a fix test or a reason.
"""

import glob
import os
import re
import shlex
import time
import urllib.parse

import fixtures
from nova import context as nova_context
from nova.tests.functional.api import client
import testtools
import yaml

from nova_pmem_filters.core.formats import providerconfig
from nova_pmem_filters.core.plans import rebalance
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import placement
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters.doctor import checks
from nova_pmem_filters.doctor.checks import observations
from nova_pmem_filters.doctor import snapshot
from tests.functional import base
from tests.unit import obsdocs

NEAR_RC = placement.NEAR_MEMORY_RC
# The second Memory-Mode host of the rebalancing test.
MM2 = 'mm2'
MM_HOSTS = (base.MM_HOST, MM2)
# A live migration's end states, and how often (every 0.02 s) it is asked.
MIGRATION_ENDS = ('completed', 'error', 'failed', 'cancelled')
MIGRATION_POLLS = 3000

# Nova validates extra specs from this microversion on; flavors whose specs
# it would refuse are planted one below, as flavors made before the
# validators were installed look.
UNVALIDATED_MICROVERSION = '2.85'

# The codes whose printed fix is ``openstack aggregate|flavor set|unset``
# commands, and the tests below that plant the finding, run the fix as
# printed and check that only that finding went away. Some codes have other
# forms that print a placeholder: those are named in NOT_RUN_FORMS.
RUN_BY = {
    'untidy-pmem-mode': (
        'test_mode_with_spaces_is_a_warning_and_its_fix_works',),
    'invalid-pmem-mode': ('test_misspelt_mode_fix_works',),
    'misspelt-key': ('test_misspelt_key_fixes_work',
                     'test_misspelt_key_fix_sets_a_readable_value',
                     'test_misspelt_flavor_key_fix_works'),
    'invalid-weight-multiplier': ('test_non_finite_multiplier_fix_works',),
    'invalid-extra-spec': ('test_unknown_pmem_key_fix_works',),
    'near-memory-mismatch': ('test_numbered_group_fix_works',
                             'test_several_groups_fix_works'),
    'placement-accounting-partial': ('test_partial_accounting_fix_works',),
    'hot-ratio-under-declared': ('test_hot_ratio_fix_works',),
    'invalid-kernel-tiering': ('test_kernel_tiering_fixes_work',),
    'kernel-tiering-ignored': ('test_kernel_tiering_fixes_work',),
    'working-set-over-near-memory': ('test_rebalancing_plan_works',),
}

# Forms of the codes above whose fix is not run, and why.
NOT_RUN_FORMS = {
    'invalid-kernel-tiering': 'no state close to the value and no '
                              'discovered hosts: <on or off> is for the '
                              'operator to choose',
    'misspelt-key': 'a value the filters would not read under the right '
                    'key either (and no mode close to it): the placeholder '
                    'of the key is for the operator to fill in',
    'invalid-pmem-mode': 'no mode close to the value: <mode> is for the '
                         'operator to choose',
    'invalid-weight-multiplier': 'the warning (not a number): <number> is '
                                 'for the operator to choose',
    'invalid-extra-spec': 'a known pmem: key, or a misspelt one whose value '
                          'does not validate: <rule> is for the operator '
                          'to choose',
}

# The codes whose fix is not openstack commands that can be run against the
# compute API, and why.
NOT_RUN = {
    # nova.conf: the fix edits the scheduler's file and restarts it.
    'nova-conf-not-read': 'informational: run the doctor again with '
                          '--config-file; nothing in the cloud changes',
    'filter-not-available': 'edits [filter_scheduler] available_filters in '
                            'nova.conf',
    'filter-not-enabled': 'edits [filter_scheduler] enabled_filters in '
                          'nova.conf and restarts nova-scheduler',
    'filter-unknown': 'edits [filter_scheduler] enabled_filters in '
                      'nova.conf and restarts nova-scheduler',
    'weighers-not-configured': 'edits [filter_scheduler] weight_classes in '
                               'nova.conf',
    'nova-weighers-dropped': 'edits [filter_scheduler] weight_classes in '
                             'nova.conf',
    'weight-multiplier-not-finite': 'edits [pmem] in nova.conf and restarts '
                                    'nova-scheduler',
    'filter-only-cache-accounting': 'provider configs on the computes and '
                                    'planner-made flavor specs, or '
                                    '[scheduler] workers in nova.conf',
    # Aggregates: values only the host's hardware tells.
    'invalid-dram-cache': 'placeholder <GB of DRAM cache per host>: the '
                          'size is measured on the host '
                          '(nova-pmem-discover --aggregate)',
    'invalid-dram-cache-per-cell': 'placeholder <cell:GB,...> (and '
                                   'AGGREGATE from the host check): the '
                                   'sizes are measured on the host '
                                   '(nova-pmem-discover --numa)',
    'memory-mode-without-cache': 'placeholder <GB of DRAM cache per '
                                 'host>: the size is measured on the host',
    'dram-cache-without-memory-mode': 'a choice in prose: set pmem_mode or '
                                      'unset the cache, by what the hosts '
                                      'run',
    # Flavors.
    'vpmem-modes-conflict': 'a choice in prose: add app_direct to '
                            'pmem:modes or drop hw:pmem, by what the flavor '
                            'is for',
    # Hosts.
    'aggregates-disagree': 'a choice in prose: which aggregate (or value) '
                           'is right for the host',
    'profile-mismatch': 'moves the host to the aggregate that discovery on '
                        'the host (--fleet) prints',
    'mode-trait-mismatch': 'regenerates the provider config on the compute '
                           'host and restarts nova-compute',
    'near-memory-inventory-missing': 'installs a provider config on the '
                                     'compute host and restarts '
                                     'nova-compute',
    'near-memory-inventory-mismatch': 'regenerates the provider config on '
                                      'the compute host and restarts '
                                      'nova-compute',
    'cache-overcommitted': 'live-migrates instances (placeholder SERVER), '
                           'as many as the operator picks',
    'cache-cells-unchecked': 'informational: --fleet with the host\'s '
                             'discovered profile, or per-cell sizes '
                             'measured on the host',
    'fleet-host-unknown': 'informational: about a file in the --fleet '
                          'directory',
    # Instances with vPMEM: namespaces are carved on the host.
    'vpmem-numa-remote': 'carves namespaces on the host (ndctl) and '
                         'migrates instances',
    'vpmem-numa-unknown': 'informational: discovery and virsh/ndctl on the '
                          'host',
    'vpmem-guest-numa-nodes': 'flavor design in prose (hw:numa_nodes=1) and '
                              'resizes of existing instances',
    # The kernel's tiering on cxl_kmem hosts: run on the host (ssh), and
    # checked with fake ssh and openstack in tests/unit/doctor/test_tiering.
    'kernel-tiering-off': 'sysctl and sysfs lines run on the compute host '
                          '(ssh), then discovery again',
    'kernel-tiering-half-on': 'sysctl or sysfs lines run on the compute '
                              'host (ssh), then discovery again',
    'far-node-in-dram-tier': 'the host\'s firmware (HMAT); the fix shows '
                             'the memory tiers on the host',
    'kernel-tiering-unknown': 'informational: discovery on the host again',
    'kernel-tiering-mismatch': 'a choice in comments: the aggregate line, '
                               'or the tiering lines run on the host',
    'bound-flavor-whole-ram': 'a choice in comments: pmem:modes without '
                              'cxl_kmem, or accepting the cost',
    'kernel-demotes-bound-memory': 'a kernel to boot, in comments, then '
                                   'discovery on the host again (ssh)',
    # Observations: what the instances do.
    'numa-memory-remote': 'migrates instances and checks what moves their '
                          'memory on the host',
    'numa-memory-slow-tier': 'flavor choice and the host\'s demotion '
                             'settings, in prose; migrates instances',
    # Observations of the kernel's tiering: run on the host (ssh), or a
    # live migration; run with fake ssh and openstack in
    # tests/unit/doctor/test_tiering_observations.py.
    'observed-tiering-off': 'sysctl and sysfs lines run on the compute '
                            'host (ssh), then discovery again',
    'tiering-promotion-lags': 'a sysctl run on the compute host (ssh), or '
                              'migrates instances',
    'tiering-direct-demotion': 'migrates instances (SERVER for the '
                               'operator to choose)',
    'hot-pages-on-far-node': 'the tiering lines run on the host (ssh), or '
                             'a live migration of the instance',
    'bound-memory-demoted': 'migratepages run on the compute host (ssh)',
}

# A code as the checks write it: a quoted lower-case word with dashes.
_CODE_RE = re.compile(r"'([a-z0-9]+(?:-[a-z0-9]+)+)'")
# What the operator is to fill in: <mode>, <GB of DRAM cache per host>.
_PLACEHOLDER_RE = re.compile(r'<[^<>]+>')


def commands(fix):
    """The commands of ``fix``: (noun, verb, arguments, name) each.

    Only the forms :meth:`DoctorFixesTest.apply` runs: ``openstack
    aggregate|flavor set|unset --property ... NAME``, joined by ``&&``, and
    ``openstack --os-compute-api-version V server migrate --live-migration
    --host HOST SERVER`` (V at least 2.30: the scheduler checks HOST), one
    a line; lines that start with ``#`` are comments, as for the shell. Any
    other word (a placeholder, prose, another verb or option) fails, and so
    does a fix with nothing to run.
    """
    if _PLACEHOLDER_RE.search(fix):
        raise AssertionError('a placeholder: %r' % fix)
    parsed = []
    for line in fix.splitlines():
        if line.startswith('#'):
            continue
        words = [[]]
        for word in shlex.split(line):
            if word == '&&':
                words.append([])
            else:
                words[-1].append(word)
        parsed.extend(_command(command, fix) for command in words)
    if not parsed:
        raise AssertionError('nothing to run: %r' % fix)
    return parsed


def _command(command, fix):
    if command[:2] == ['openstack', '--os-compute-api-version']:
        version = command[2:3]
        if (len(command) != 9 or command[3:7] != [
                'server', 'migrate', '--live-migration', '--host']
                or not re.match(r'^2\.[0-9]+$', version[0])
                or int(version[0].split('.')[1]) < 30
                or command[8].startswith('-')):
            raise AssertionError('not a fix the test runs: %r' % fix)
        return ('server', 'migrate', [version[0], command[7]], command[8])
    options, name = command[3:-1], command[-1:]
    if (command[:1] != ['openstack']
            or command[1:2] not in (['aggregate'], ['flavor'])
            or command[2:3] not in (['set'], ['unset'])
            or not options or len(options) % 2
            or options[::2] != ['--property'] * (len(options) // 2)
            or name[0].startswith('-')):
        raise AssertionError('not a fix the test runs: %r' % fix)
    props = options[1::2]
    if command[2] == 'set' and not all('=' in p for p in props):
        raise AssertionError('set without a value: %r' % fix)
    return (command[1], command[2], props, name[0])


def migrate_line(server_id, host):
    """The doctor's line that live-migrates ``server_id`` to ``host``."""
    return observations.migrate_line(rebalance.Move(
        server_id, None, None, host, 0.0, 0.0))


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
        # mm1 reports its DRAM cache to Placement, as the provider config of
        # nova-pmem-discover gives it: flavors that request near memory
        # land there once a fix makes them right. Read when the computes
        # start, in super().setUp().
        conf_dir = self.useFixture(fixtures.TempDir()).path
        self.near_inventory = placement.near_memory_inventory(
            kinds.MEMORY_MODE, base.MM_CACHE_GB)
        with open(os.path.join(conf_dir, 'mm1.yaml'), 'w') as f:
            yaml.safe_dump(providerconfig.near_memory_provider_config(
                self.near_inventory, name=base.MM_HOST), f)
        self.flags(provider_config_location=conf_dir, group='compute')
        super(DoctorFixesTest, self).setUp()
        self.flavors = {}

    def doctor(self, observations=None):
        conn = _Connection(self.admin_api, self.placement)
        return {(f.severity, f.code, f.object): f
                for f in checks.run(snapshot.gather(
                    conn, observations=observations))}

    def flavor(self, name, memory_gb, specs, microversion='latest'):
        """Create flavor ``name``; its extra specs set at ``microversion``.

        Below 2.86 nova-api takes specs its validators refuse.
        """
        self.flavors[name] = self._create_pmem_flavor(name, memory_gb)
        saved = self.admin_api.microversion
        self.admin_api.microversion = microversion
        try:
            self.admin_api.post_extra_spec(self.flavors[name],
                                           {'extra_specs': specs})
        finally:
            self.admin_api.microversion = saved
        return self.flavors[name]

    def extra_specs(self, name):
        return self.admin_api.api_get(
            'flavors/%s/os-extra_specs' % self.flavors[name]
        ).body['extra_specs']

    def apply(self, fix):
        """Run ``fix`` as printed: openstack commands joined by &&.

        Each through the API call the command makes, at the API's latest
        microversion (or the one the line gives), as the client does: a
        value nova-api refuses fails, and so does a live migration that
        does not complete on the host the line names.
        """
        for noun, verb, props, name in commands(fix):
            if noun == 'server':
                self.live_migrate(name, *props)
                continue
            if noun == 'aggregate':
                self.assertIn(name, self.aggregates, fix)
                if verb == 'set':
                    meta = dict(p.split('=', 1) for p in props)
                else:
                    meta = {p: None for p in props}
                self.admin_api.post_aggregate_action(
                    self.aggregates[name],
                    {'set_metadata': {'metadata': meta}})
                continue
            self.assertIn(name, self.flavors, fix)
            if verb == 'set':
                self.admin_api.post_extra_spec(
                    self.flavors[name],
                    {'extra_specs': dict(p.split('=', 1) for p in props)})
            else:
                for key in props:
                    self.admin_api.api_delete(
                        'flavors/%s/os-extra_specs/%s'
                        % (self.flavors[name], urllib.parse.quote(key)))

    def live_migrate(self, server_id, version, host):
        """A migrate line's live migration, as the client sends it.

        ``openstack --os-compute-api-version VERSION server migrate
        --live-migration --host HOST SERVER``: python-openstackclient
        calls openstacksdk's ``live_migrate_server(server, host=HOST,
        block_migration=None)``,
        which at 2.30 posts ``os-migrateLive`` with the host and
        ``block_migration: auto``, without ``force``: the scheduler runs
        its filters on HOST. The migration must complete there.
        """
        def migrations():
            return [m for m in self.admin_api.api_get(
                'os-migrations').body['migrations']
                if m['instance_uuid'] == server_id]

        known = {m['id'] for m in migrations()}
        saved = self.admin_api.microversion
        self.admin_api.microversion = version
        try:
            self.admin_api.post_server_action(server_id, {'os-migrateLive': {
                'host': host, 'block_migration': 'auto'}})
        finally:
            self.admin_api.microversion = saved
        migration = None
        for _ in range(MIGRATION_POLLS):
            migration = [m for m in migrations() if m['id'] not in known]
            if migration and migration[0]['status'] in MIGRATION_ENDS:
                break
            time.sleep(0.02)
        self.assertEqual('completed', migration and migration[0]['status'],
                         '%s to %s: %s' % (server_id, host, migration))
        server = self._wait_for_state_change({'id': server_id}, 'ACTIVE')
        self.assertEqual(host, self._host_of(server))
        # The next migration is scheduled with this one in the view: the
        # computes' periodic tasks write a live migration's usage to the
        # compute node records and tell the scheduler the hosts'
        # instances, as they would within a minute on a cloud (_settle).
        ctxt = nova_context.get_admin_context()
        for compute in self.computes.values():
            compute.manager.update_available_resource(ctxt)
            compute.manager._sync_scheduler_instance_info(ctxt)
        self._settle()

    def assert_fix_clears(self, code, obj, observations=None):
        """Apply the fix of finding (code, obj): only it goes away."""
        before = self.doctor(observations)
        (key,) = [k for k in before if k[1:] == (code, obj)]
        self.apply(before[key].fix)
        after = self.doctor(observations)
        expected = dict(before)
        del expected[key]
        self.assertEqual(sorted(expected), sorted(after))
        return before[key]

    def assert_lands_on_mm(self, flavor, near_mb=None):
        """A boot of ``flavor`` lands on mm1, with ``near_mb`` accounted."""
        server = self._boot(flavor)
        self.assertEqual(base.MM_HOST, self._host_of(server))
        rp_uuid = self._get_provider_uuid_by_host(base.MM_HOST)
        self.assertEqual(near_mb or 0, self._get_provider_usages(
            rp_uuid).get(NEAR_RC, 0))
        self._delete(server)

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

    def test_misspelt_key_fix_sets_a_readable_value(self):
        # Moved as it is, the value would be reported next: untidy or
        # invalid pmem_mode.
        baseline = self.doctor()
        name = base.MEMORY_MODE_AGGREGATE.name
        for wrong, value in (('PMEM_MODE', ' %s ' % kinds.MEMORY_MODE),
                             ('pmem-mode', 'memory-mode')):
            self.apply(shlex.join([
                'openstack', 'aggregate', 'unset', '--property',
                profile.MODE_KEY, name]))
            self.apply(shlex.join([
                'openstack', 'aggregate', 'set', '--property',
                '%s=%s' % (wrong, value), name]))
            found = self.doctor()
            self.apply(found[(checks.WARNING, 'misspelt-key', self.MM)].fix)
            self.assertEqual(sorted(baseline), sorted(self.doctor()))
        self.assertEqual(
            dict(base.MEMORY_MODE_AGGREGATE.metadata),
            self.admin_api.api_get('os-aggregates/%s' % self.aggregates[name]
                                   ).body['aggregate']['metadata'])

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

    def test_several_groups_fix_works(self):
        # Two groups request near memory and Placement sums them: 3072 MB
        # for 8 GB x 0.25 = 2048.
        self.flavor('two groups', 8, {
            'pmem:modes': kinds.MEMORY_MODE, 'pmem:hot_ratio': '0.25',
            'resources1:%s' % NEAR_RC: '1024',
            'resources2:%s' % NEAR_RC: '2048'})
        finding = self.assert_fix_clears('near-memory-mismatch',
                                         'flavor two groups')
        self.assertIn(' && ', finding.fix)
        specs = self.extra_specs('two groups')
        self.assertEqual('2048', specs['resources1:%s' % NEAR_RC])
        self.assertNotIn('resources2:%s' % NEAR_RC, specs)
        self.assert_lands_on_mm(self.flavors['two groups'], 2048)

    def test_misspelt_mode_fix_works(self):
        baseline = self.doctor()
        self.apply(shlex.join([
            'openstack', 'aggregate', 'set', '--property',
            '%s=memory-mode' % profile.MODE_KEY,
            base.MEMORY_MODE_AGGREGATE.name]))
        self.assert_fix_clears('invalid-pmem-mode', self.MM)
        self.assertEqual(sorted(baseline), sorted(self.doctor()))
        self.assertEqual(
            kinds.MEMORY_MODE,
            self.admin_api.api_get('os-aggregates/%s' % self.aggregates[
                base.MEMORY_MODE_AGGREGATE.name]
            ).body['aggregate']['metadata'][profile.MODE_KEY])
        self.flavor('mm-only', 8, {'pmem:modes': kinds.MEMORY_MODE,
                                   'pmem:hot_ratio': '0.5'})
        self.assert_lands_on_mm(self.flavors['mm-only'])

    def test_kernel_tiering_fixes_work(self):
        baseline = self.doctor()
        self.flavor('mm-only', 8, {'pmem:modes': kinds.MEMORY_MODE,
                                   'pmem:hot_ratio': '0.5'})
        # A value the scheduler cannot read: the host's profile is unknown
        # and the flavor finds no host.
        self.apply(shlex.join([
            'openstack', 'aggregate', 'set', '--property',
            '%s=Of' % profile.KERNEL_TIERING_KEY,
            base.MEMORY_MODE_AGGREGATE.name]))
        self._assert_no_valid_host(
            self._boot(self.flavors['mm-only'], expected_state='ERROR'))
        found = self.doctor()
        finding = found[(checks.ERROR, 'invalid-kernel-tiering', self.MM)]
        self.assertIn('=off ', finding.fix)
        self.apply(finding.fix)
        # Read now, and meaningless on a Memory-Mode host: said so.
        found = self.doctor()
        self.assertNotIn((checks.ERROR, 'invalid-kernel-tiering', self.MM),
                         found)
        self.assertIn((checks.WARNING, 'kernel-tiering-ignored', self.MM),
                      found)
        self.assert_lands_on_mm(self.flavors['mm-only'])
        self.assert_fix_clears('kernel-tiering-ignored', self.MM)
        self.assertEqual(sorted(baseline), sorted(self.doctor()))
        self.assertNotIn(
            profile.KERNEL_TIERING_KEY,
            self.admin_api.api_get('os-aggregates/%s' % self.aggregates[
                base.MEMORY_MODE_AGGREGATE.name]
            ).body['aggregate']['metadata'])

    def test_misspelt_flavor_key_fix_works(self):
        # Unread, pmem_modes lets the flavor land on any host.
        self.flavor('m1 odd', 8, {'pmem_modes': kinds.MEMORY_MODE,
                                  'pmem:hot_ratio': '0.5'})
        finding = self.assert_fix_clears('misspelt-key', 'flavor m1 odd')
        self.assertTrue(finding.fix.startswith(
            "openstack flavor unset --property pmem_modes 'm1 odd' && "),
            finding.fix)
        self.assertEqual({'pmem:modes': kinds.MEMORY_MODE,
                          'pmem:hot_ratio': '0.5'},
                         self.extra_specs('m1 odd'))
        self.assert_lands_on_mm(self.flavors['m1 odd'])

    def test_unknown_pmem_key_fix_works(self):
        # nova-api refuses pmem:hotratio from 2.86 on; flavors from before
        # the validators keep it, and the filters reject every host.
        self.flavor('m1 old', 8, {'pmem:modes': kinds.MEMORY_MODE,
                                  'pmem:hotratio': '0.3'},
                    microversion=UNVALIDATED_MICROVERSION)
        self._assert_no_valid_host(
            self._boot(self.flavors['m1 old'], expected_state='ERROR'))
        self.assert_fix_clears('invalid-extra-spec', 'flavor m1 old')
        self.assertEqual({'pmem:modes': kinds.MEMORY_MODE,
                          'pmem:hot_ratio': '0.3'},
                         self.extra_specs('m1 old'))
        self.assert_lands_on_mm(self.flavors['m1 old'])

    def test_partial_accounting_fix_works(self):
        specs = {'pmem:modes': kinds.MEMORY_MODE, 'pmem:hot_ratio': '0.25'}
        specs.update(placement.near_memory_spec(8 * base.GB, 0.25))
        self.flavor('accounted', 8, specs)
        self.flavor('m1 partial', 8, {'pmem:modes': kinds.MEMORY_MODE,
                                      'pmem:hot_ratio': '0.5'})
        finding = self.assert_fix_clears('placement-accounting-partial',
                                         'flavor m1 partial')
        self.assertIn('=4096 ', finding.fix)
        # Placement now holds its hot RAM: 8 GB x 0.5.
        self.assert_lands_on_mm(self.flavors['m1 partial'], 4096)

    def test_hot_ratio_fix_works(self):
        ram_mb = 8 * base.GB
        # Observed at 0.4: the recommended ratio is 0.4, above 0.25.
        self.flavor('plain', 8, {'pmem:modes': kinds.MEMORY_MODE,
                                 'pmem:hot_ratio': '0.25'})
        observed = [obsdocs.document(base.MM_HOST, [
            obsdocs.instance('%s-%d' % (name, n), name, ram_mb, 0.4)
            for name in ('plain', 'redis grouped', 'split')
            for n in range(2)])]
        self.assert_fix_clears('hot-ratio-under-declared', 'flavor plain',
                               observed)
        self.assertEqual('0.4', self.extra_specs('plain')['pmem:hot_ratio'])
        # A flavor that requests near memory in a numbered group: the fix
        # keeps the group, or Placement would add a second request to it.
        self.flavor('redis grouped', 8, {
            'pmem:modes': kinds.MEMORY_MODE, 'pmem:hot_ratio': '0.25',
            'resources1:%s' % NEAR_RC: '2048'})
        self.assert_fix_clears('hot-ratio-under-declared',
                               'flavor redis grouped', observed)
        # 8192 MB x 0.4 = 3276.8, requested as 3277.
        self.assertEqual({'pmem:modes': kinds.MEMORY_MODE,
                          'pmem:hot_ratio': '0.4',
                          'resources1:%s' % NEAR_RC: '3277'},
                         self.extra_specs('redis grouped'))
        self.assert_lands_on_mm(self.flavors['redis grouped'], 3277)
        # Two groups that add up to the hot RAM: the fix keeps one.
        self.flavor('split', 8, {
            'pmem:modes': kinds.MEMORY_MODE, 'pmem:hot_ratio': '0.25',
            'resources1:%s' % NEAR_RC: '1024',
            'resources2:%s' % NEAR_RC: '1024'})
        self.assert_fix_clears('hot-ratio-under-declared', 'flavor split',
                               observed)
        self.assertEqual({'pmem:modes': kinds.MEMORY_MODE,
                          'pmem:hot_ratio': '0.4',
                          'resources1:%s' % NEAR_RC: '3277'},
                         self.extra_specs('split'))

    def observe(self, ratios):
        """Each host's window: its servers now, at their hot ratios.

        What nova-pmem-observe would write on each host: the instances
        Nova has there, each measured at its own ratio wherever it runs;
        the near memory of the Memory-Mode hosts.
        """
        docs = []
        for host in sorted(self.computes):
            servers = [s for s in self.api.get_servers()
                       if self._host_of(s) == host]
            if not servers:
                continue
            docs.append(obsdocs.document(host, [
                obsdocs.instance(
                    s['id'], s['flavor']['original_name'],
                    s['flavor']['ram'], ratios[s['id']], name=s['name'])
                for s in sorted(servers, key=lambda s: s['name'])],
                near_memory_mb=(float(base.MM_CACHE_GB * base.GB)
                                if host in MM_HOSTS else None)))
        return docs

    def test_rebalancing_plan_works(self):
        # mm2: a second Memory-Mode host, in the same aggregate.
        self._start_sized_compute(base.Host(MM2, vcpus=80, memory_gb=512,
                                            local_gb=2000))
        self._run_periodics()
        self.admin_api.add_host_to_aggregate(
            self.aggregates[base.MEMORY_MODE_AGGREGATE.name], MM2)
        self.flavor('capacity', 32, {'pmem:modes': kinds.MEMORY_MODE,
                                     'pmem:hot_ratio': '0.5'})
        self.flavor('general', 8, {'pmem:modes': 'dram,memory_mode',
                                   'pmem:hot_ratio': '1.0'})
        self.flavor('filler', 120, {'pmem:modes': kinds.DRAM})
        ratios = {}
        # mm1: 6 x 32 GB at 0.85 and 4 x 8 GB at 1.0 = 199885 MB measured
        # over its 196608 MB of DRAM cache. mm2: 2 x 32 GB at 0.5. dram1:
        # 3 x 120 GB, 24064 MB of RAM left (reserved 512 MB).
        for host, flavor, count, ratio in (
                (base.MM_HOST, 'capacity', 6, 0.85),
                (base.MM_HOST, 'general', 4, 1.0),
                (MM2, 'capacity', 2, 0.5),
                (base.DRAM_HOST, 'filler', 3, 0.1)):
            for n in range(count):
                server = self.api.post_server({'server': self._build_server(
                    name='%s-%s-%d' % (host, flavor, n),
                    flavor_id=self.flavors[flavor], image_uuid=base.IMAGE,
                    networks='none', az='nova:%s' % host)})
                server = self._wait_for_state_change(server, 'ACTIVE')
                self.assertEqual(host, self._host_of(server))
                ratios[server['id']] = ratio
        self._settle()
        where = {s['id']: self._host_of(s) for s in self.api.get_servers()}
        before = self.doctor(self.observe(ratios))
        key = (checks.WARNING, 'working-set-over-near-memory',
               'host %s' % base.MM_HOST)
        fix = before[key].fix
        # At most 0.9 x 196608 = 176947 MB: 22938 MB of working set must
        # go. Three 8 GB servers (24576 MB) move the least memory (one
        # 32 GB one moves more); dram1's RAM takes two of them, mm2 the
        # third (a 32 GB one only mm2 could take: memory_mode only).
        moves = [(name, props[1]) for noun, _verb, props, name
                 in commands(fix)]
        self.assertEqual(3, len(moves), fix)
        self.assertEqual([base.DRAM_HOST, base.DRAM_HOST, MM2],
                         sorted(host for _server, host in moves))
        for server_id, _host in moves:
            self.assertEqual(base.MM_HOST, where[server_id])
            self.assertEqual(8 * base.GB, self.api.get_server(
                server_id)['flavor']['ram'])
        # A host the filters refuse fails its line: a memory_mode-only
        # server to ad1, whose RAM Placement has (PmemModeFilter refuses
        # it). Below 2.34 nova-api waits for the scheduler: the command
        # gets the 400 and exits 1; the server stays where it was.
        refused = [i for i, h in where.items() if h == base.MM_HOST
                   and i not in dict(moves)
                   and self.api.get_server(i)['flavor']['ram'] > 8 * base.GB]
        error = self.assertRaises(
            client.OpenStackApiException, self.apply,
            migrate_line(refused[0], base.AD_HOST))
        self.assertEqual(400, error.response.status_code)
        self.assertIn('No valid host', str(error))
        self.assertIn('fails pmem mode check', self.pmem_log.output)
        self.assertEqual(base.MM_HOST, self._host_of(
            self.api.get_server(refused[0])))
        self.apply(fix)
        # Each where the plan said; every other server where it was.
        where.update(moves)
        self.assertEqual(where, {s['id']: self._host_of(s)
                                 for s in self.api.get_servers()})
        # Measured again where they now run: mm1 is no longer over, and
        # nothing else changed.
        after = self.doctor(self.observe(ratios))
        expected = dict(before)
        del expected[key]
        self.assertEqual(sorted(expected), sorted(after))


class FixClassificationTest(testtools.TestCase):
    """Every code the doctor can emit: its fix run above, or a reason."""

    def test_every_code_is_run_or_has_a_reason(self):
        # Finding() refuses a code not in CODES, so CODES holds every code
        # the checks can emit; the source names each of them.
        source = ''
        for path in sorted(glob.glob(os.path.join(
                os.path.dirname(checks.__file__), '*.py'))):
            with open(path, encoding='utf-8') as f:
                source += f.read()
        emitted = set(_CODE_RE.findall(source)) & set(checks.CODES)
        self.assertEqual(set(checks.CODES), emitted)
        self.assertEqual(set(), set(RUN_BY) & set(NOT_RUN))
        self.assertEqual(emitted, set(RUN_BY) | set(NOT_RUN))
        self.assertLessEqual(set(NOT_RUN_FORMS), set(RUN_BY))
        for code, tests in RUN_BY.items():
            for name in tests:
                self.assertTrue(
                    callable(getattr(DoctorFixesTest, name, None)),
                    '%s: no test %s' % (code, name))

    def test_only_plain_commands_are_run(self):
        self.assertEqual(
            [('flavor', 'unset', ['a', 'b'], 'm1 x'),
             ('flavor', 'set', ['c=1'], 'm1 x')],
            commands("openstack flavor unset --property a --property b "
                     "'m1 x' && openstack flavor set --property c=1 'm1 x'"))
        for fix in (
                'openstack aggregate set --property pmem_mode=<mode> mm',
                'openstack aggregate set --property pmem_dram_cache_gb=<GB '
                'of DRAM cache per host> mm (nova-pmem-discover prints it)',
                'openstack aggregate add host mm mm1',
                'openstack flavor set --property a=1 --private m1',
                'openstack flavor set --property a m1',
                'openstack flavor set m1',
                'openstack flavor set --property a=1 m1 &&',
                'set [pmem] tier_weight_multiplier to a finite number',
                'openstack server migrate --live-migration SERVER',
                '# only a comment',
                'openstack --os-compute-api-version 2.29 server migrate '
                '--live-migration --host mm2 u1',
                'openstack --os-compute-api-version 2.30 server migrate '
                '--live-migration --host mm2 --force u1',
                'openstack --os-compute-api-version 2.30 server migrate '
                '--host mm2 u1'):
            self.assertRaises(AssertionError, commands, fix)
        self.assertEqual(
            [('server', 'migrate', ['2.30', 'mm2'], 'u1'),
             ('server', 'migrate', ['2.30', 'dram1'], 'u2')],
            commands('# the plan\nopenstack --os-compute-api-version 2.30 '
                     'server migrate --live-migration --host mm2 u1\n'
                     'openstack --os-compute-api-version 2.30 server '
                     'migrate --live-migration --host dram1 u2'))
