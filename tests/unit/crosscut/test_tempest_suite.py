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
"""The Tempest run of the integration suite and the plugin's arithmetic.

Without a cloud and without Tempest (the plugin's modules that need
neither are loaded from ``tempest_plugin/`` by path): how the suite writes
tempest.conf and reads Tempest's results, how CI counts a skipped Tempest
test, and how the plugin sizes the flavors of the DRAM-cache test with the
scheduler's core.
"""

import configparser
import importlib.util
import io
import json
import os

import fixtures
import subunit
import testtools

from nova_pmem_filters.conf import pmem as pmem_conf
from nova_pmem_filters.core.rules import decide
from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import nearmem
from nova_pmem_filters.core.rules import profile
from tests.integration import scenarios
from tests.integration import tempest_suite
from tests.unit import paths

PLUGIN_DIR = paths.of('tempest_plugin', 'nova_pmem_tempest_plugin')
GB = profile.MB_PER_GB


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def subunit_stream(events):
    """A subunit v2 stream of (test id, status, file name, text) events."""
    out = io.BytesIO()
    writer = subunit.StreamResultToBytes(out)
    for test_id, status, name, text in events:
        writer.status(test_id=test_id, test_status='inprogress')
        kwargs = {}
        if name:
            kwargs = dict(file_name=name, file_bytes=text.encode(),
                          mime_type='text/plain; charset=utf8', eof=True)
        writer.status(test_id=test_id, test_status=status, **kwargs)
    return out.getvalue()


TEMPEST_OUTPUT = b'''{0} a.B.test_x [1.2s] ... ok

======
Totals
======
Ran: 13 tests in 138.2837 sec.
 - Passed: 11
 - Skipped: 2
 - Expected Fail: 0
 - Unexpected Success: 0
 - Failed: 0
Sum of execute time for each test: 250.1 sec.
'''


class TempestResultsTestCase(testtools.TestCase):

    def setUp(self):
        super(TempestResultsTestCase, self).setUp()
        for target in ('tests.integration.scenarios.log',
                       'tests.integration.tempest_suite.log'):
            self.useFixture(fixtures.MonkeyPatch(target, lambda *a: None))

    def test_parse_subunit(self):
        stream = subunit_stream([
            ('p.T.test_ok[id-1,negative]', 'success', None, None),
            ('p.T.test_skip[id-2]', 'skip', 'reason', 'no host of kind x'),
            ('p.T.test_fail[id-3]', 'fail', 'traceback',
             'Traceback (most recent call last):\n  ...\n'
             'MismatchError: mm1 not in [dram1]\n')])
        self.assertEqual([
            {'id': 'p.T.test_ok', 'status': 'success', 'reason': ''},
            {'id': 'p.T.test_skip', 'status': 'skip',
             'reason': 'no host of kind x'},
            {'id': 'p.T.test_fail', 'status': 'fail',
             'reason': 'MismatchError: mm1 not in [dram1]'},
        ], tempest_suite.parse_subunit(stream))

    def test_parse_garbage_is_no_test(self):
        self.assertEqual([], tempest_suite.parse_subunit(b'not subunit\n'))

    def test_totals_line(self):
        self.assertEqual(
            'Totals: Ran: 13 tests in 138.2837 sec; Passed: 11; Skipped: 2; '
            'Expected Fail: 0; Unexpected Success: 0; Failed: 0',
            tempest_suite.totals_line(TEMPEST_OUTPUT))
        self.assertEqual('', tempest_suite.totals_line(b'Traceback ...'))

    def run_checks(self, tests, listed):
        results = scenarios.Results()
        tempest_suite.check_tests(results, tests, listed)
        return {c['name']: c for c in results.checks}

    def expected_skips(self):
        return [{'id': test_id, 'status': 'skip',
                 'reason': '[pmem_filters] %s: ...' % words}
                for test_id, words in tempest_suite.EXPECTED_SKIPS.items()]

    def test_a_check_per_test_skips_marked(self):
        tests = [{'id': 'p.T.test_ok', 'status': 'success', 'reason': ''},
                 {'id': 'p.T.test_bad', 'status': 'fail', 'reason': 'boom'}]
        tests += self.expected_skips()
        checks = self.run_checks(tests, [t['id'] for t in tests])
        self.assertTrue(checks['tempest: p.T.test_ok']['passed'])
        self.assertFalse(checks['tempest: p.T.test_bad']['passed'])
        self.assertIn('boom', checks['tempest: p.T.test_bad']['detail'])
        for test_id in tempest_suite.EXPECTED_SKIPS:
            check = checks['tempest: %s' % test_id]
            self.assertEqual((True, True), (check['passed'],
                                            check['skipped']))
        self.assertTrue(all(c['passed'] for n, c in checks.items()
                            if not n.startswith('tempest: ')))

    def test_unexpected_skip_and_missing_result_fail(self):
        tests = [{'id': 'p.T.test_a', 'status': 'skip',
                  'reason': 'no compute host of kind memory_mode'}]
        checks = self.run_checks(tests, ['p.T.test_a', 'p.T.test_b'])
        self.assertFalse(
            checks['tempest ran every test it lists for the plugin']
            ['passed'])
        skips = [c for n, c in checks.items() if n.startswith(
            'tempest skips only')]
        self.assertFalse(skips[0]['passed'])
        self.assertIn('p.T.test_a (no compute host', skips[0]['detail'])

    def test_skipped_tempest_tests_count_as_skipped(self):
        totals = load(paths.of('tools', 'test_totals.py'), 'test_totals')
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'results.json')
        results = scenarios.Results()
        tempest_suite.check_tests(
            results, [{'id': 'p.T.test_ok', 'status': 'success',
                       'reason': ''}] + self.expected_skips(),
            ['p.T.test_ok'] + list(tempest_suite.EXPECTED_SKIPS))
        with open(path, 'w') as f:
            json.dump({'checks': results.checks}, f)
        passed, failed, skipped, lines = totals.integration_counts(path)
        # test_ok, every listed test ran, only the expected skips.
        self.assertEqual((3, 0, len(tempest_suite.EXPECTED_SKIPS)),
                         (passed, failed, skipped))
        self.assertEqual('integration: 3 passed, 0 failed, %d skipped'
                         % skipped, lines[0])


class TempestConfTestCase(testtools.TestCase):

    def test_conf_merged_into_tempest_init_file(self):
        workspace = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(workspace, 'tempest.conf')
        with open(path, 'w') as f:
            f.write('[DEFAULT]\nlog_dir = /x/logs\nlog_file = tempest.log\n'
                    '[oslo_concurrency]\nlock_path = /x/lock\n')
        tempest_suite.write_conf(path, tempest_suite.conf_values(workspace))
        conf = configparser.ConfigParser(interpolation=None)
        conf.read(path)
        self.assertEqual('/x/logs', conf['DEFAULT']['log_dir'])
        self.assertEqual(os.path.join(workspace, 'tempest_lock'),
                         conf['oslo_concurrency']['lock_path'])
        self.assertEqual(tempest_suite.api.KEYSTONE_URL,
                         conf['identity']['uri_v3'])
        self.assertEqual(tempest_suite.stubs.IMAGE_ID,
                         conf['compute']['image_ref'])
        self.assertEqual('False', conf['service_available']['neutron'])
        self.assertEqual('True', conf['service_available']['pmem_filters'])
        self.assertEqual('False', conf['validation']['run_validation'])
        self.assertEqual(tempest_suite.api.ADMIN.password,
                         conf['auth']['admin_password'])
        self.assertEqual('none', conf['pmem_filters']['server_networks'])

    def test_pmem_options_are_the_deployments(self):
        # The scheduler's [pmem] in deploy.sh, its defaults otherwise.
        with open(paths.of('tests', 'integration', 'deploy.sh')) as f:
            deploy = f.read()
        self.assertIn('[pmem]\ndefault_hot_ratio = %s\n'
                      % tempest_suite.PMEM_OPTIONS['default_hot_ratio'],
                      deploy)
        defaults = {o.name: o.default for o in pmem_conf.pmem_opts}
        self.assertEqual(defaults['default_host_mode'],
                         tempest_suite.PMEM_OPTIONS['default_host_mode'])
        self.assertEqual(defaults['cache_overcommit_ratio'],
                         float(tempest_suite.PMEM_OPTIONS[
                             'cache_overcommit_ratio']))

    def test_plugin_defaults_are_the_schedulers(self):
        plugin_conf = load(os.path.join(PLUGIN_DIR, 'config.py'),
                           'pmem_tempest_config')
        ours = {o.name: o.default for o in plugin_conf.PmemFiltersGroup}
        theirs = {o.name: o.default for o in pmem_conf.pmem_opts}
        for name in ('default_host_mode', 'default_hot_ratio',
                     'cache_overcommit_ratio'):
            self.assertEqual(theirs[name], ours[name], name)


class CacheProbeTestCase(testtools.TestCase):
    """The plugin's flavors for the DRAM-cache test, from the core."""

    def setUp(self):
        super(CacheProbeTestCase, self).setUp()
        self.hosts = load(os.path.join(PLUGIN_DIR, 'hosts.py'),
                          'pmem_tempest_hosts')
        self.prof = profile.build(kinds.MEMORY_MODE, 192)

    def admits(self, used, ratio, ram_mb):
        request = extra_specs.parse({extra_specs.HOT_RATIO_KEY: ratio})
        return decide.cache_check(self.prof, 1.0, used, request, ram_mb)[0]

    def test_empty_host_of_the_deployment(self):
        used = nearmem.HotRam(0.0)
        probe, why = self.hosts.plan_cache_probe(
            'mm1', self.prof, 1.0, used, (512 * GB - 512, 512 * GB), 512)
        self.assertIsNone(why)
        self.assertEqual((245760, '1.0', '0.8', 512),
                         (probe.ram_mb, probe.over_ratio, probe.fit_ratio,
                          probe.small_ram_mb))
        self.assertFalse(self.admits(used, probe.over_ratio, probe.ram_mb))
        self.assertTrue(self.admits(used, probe.fit_ratio, probe.ram_mb))
        self.assertTrue(self.admits(used, '1', probe.small_ram_mb))
        after = used.copy()
        after.add(probe.ram_mb * float(probe.fit_ratio))
        self.assertFalse(self.admits(after, '1', probe.small_ram_mb))

    def test_host_with_instances_needs_more_digits(self):
        used = nearmem.HotRam(0.0)
        used.add(12345.0)
        probe, why = self.hosts.plan_cache_probe(
            'mm1', self.prof, 1.0, used, (400 * GB, 512 * GB), 512)
        self.assertIsNone(why)
        remaining = 192 * GB - 12345.0
        fit_hot = probe.ram_mb * float(probe.fit_ratio)
        self.assertLessEqual(fit_hot, remaining)
        self.assertLess(remaining - fit_hot, 512)
        self.assertGreater(probe.ram_mb, remaining)

    def test_ram_runs_out_first(self):
        probe, why = self.hosts.plan_cache_probe(
            'mm1', self.prof, 1.0, nearmem.HotRam(0.0),
            (192 * GB + 100, 512 * GB), 512)
        self.assertIsNone(probe)
        self.assertIn('RAM runs out before the cache', why)

    def test_cache_already_full(self):
        used = nearmem.HotRam(192 * GB - 100.0)
        probe, why = self.hosts.plan_cache_probe(
            'mm1', self.prof, 1.0, used, (300 * GB, 512 * GB), 512)
        self.assertIsNone(probe)
        self.assertIn('has 100 MB of its DRAM cache free', why)

    def test_hot_ram_counts_as_the_scheduler(self):
        defaults = extra_specs.Defaults(hot_ratio=0.5)
        servers = [
            {'flavor': {'ram': 1000, 'extra_specs': {}}},
            {'flavor': {'ram': 1000, 'extra_specs': {
                extra_specs.HOT_RATIO_KEY: '0.25'}}},
            # Specs the API would now refuse: all of its RAM is hot.
            {'flavor': {'ram': 1000, 'extra_specs': {
                extra_specs.HOT_RATIO_KEY: 'lots'}}}]
        self.assertEqual(500 + 250 + 1000,
                         self.hosts.hot_ram(servers, defaults).total)

    def test_split_hosts_leaves_unknown_out(self):
        profiles = {
            'dram1': profile.build(kinds.DRAM),
            'mm1': self.prof,
            'ad1': profile.build(kinds.APP_DIRECT),
            'odd': profile.from_metadata([{profile.MODE_KEY: 'tape'}])}
        request = extra_specs.parse({extra_specs.MODES_KEY: 'dram,app_direct'})
        self.assertEqual((['ad1', 'dram1'], ['mm1']),
                         self.hosts.split_hosts(profiles, request))
