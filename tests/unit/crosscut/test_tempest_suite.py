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
neither are imported from ``tempest_plugin/``): how the suite writes
tempest.conf and reads Tempest's results, how CI counts a skipped Tempest
test, and the plugin's own arithmetic of the documented contract: on
examples worked out from the docs, and against the scheduler's core,
which must decide the same (two implementations of one documented rule).
"""

import configparser
import fractions
import importlib
import importlib.util
import io
import itertools
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

GB = profile.MB_PER_GB
F = fractions.Fraction


def plugin(name):
    """A module of the Tempest plugin, imported from ``tempest_plugin/``."""
    with fixtures.PythonPathEntry(paths.of('tempest_plugin')):
        return importlib.import_module('nova_pmem_tempest_plugin.' + name)


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
        plugin_conf = plugin('config')
        ours = {o.name: o for o in plugin_conf.PmemFiltersGroup}
        theirs = {o.name: o for o in pmem_conf.pmem_opts}
        for name in plugin_conf.SCHEDULER_OPTIONS:
            mine, core = ours[name].type, theirs[name].type
            self.assertEqual(theirs[name].default, ours[name].default, name)
            for limit in ('min', 'max'):
                self.assertEqual(getattr(core, limit, None),
                                 getattr(mine, limit, None),
                                 '%s %s' % (name, limit))
            self.assertEqual(list(getattr(core, 'choices', None) or ()),
                             list(getattr(mine, 'choices', None) or ()),
                             name)


class CacheProbeTestCase(testtools.TestCase):
    """The plugin's flavors for the DRAM-cache test, judged by the core."""

    def setUp(self):
        super(CacheProbeTestCase, self).setUp()
        self.hosts = plugin('hosts')
        self.contract = plugin('contract')
        self.prof = self.contract.host([{'pmem_mode': 'memory_mode',
                                         'pmem_dram_cache_gb': '192'}])
        self.core_prof = profile.build(kinds.MEMORY_MODE, 192)

    def admits(self, used, ratio, ram_mb):
        request = extra_specs.parse({extra_specs.HOT_RATIO_KEY: ratio})
        return decide.cache_check(self.core_prof, 1.0,
                                  nearmem.HotRam(float(used)), request,
                                  ram_mb)[0]

    def test_empty_host_of_the_deployment(self):
        used = 0
        probe, why = self.hosts.plan_cache_probe(
            'mm1', self.prof, 1.0, used, (512 * GB - 512, 512 * GB), 512)
        self.assertIsNone(why)
        self.assertEqual((245760, '1.0', '0.8', 512),
                         (probe.ram_mb, probe.over_ratio, probe.fit_ratio,
                          probe.small_ram_mb))
        self.assertFalse(self.admits(used, probe.over_ratio, probe.ram_mb))
        self.assertTrue(self.admits(used, probe.fit_ratio, probe.ram_mb))
        self.assertTrue(self.admits(used, '1', probe.small_ram_mb))
        after = used + probe.ram_mb * float(probe.fit_ratio)
        self.assertFalse(self.admits(after, '1', probe.small_ram_mb))

    def test_host_with_instances_needs_more_digits(self):
        used = 12345.0
        probe, why = self.hosts.plan_cache_probe(
            'mm1', self.prof, 1.0, used, (400 * GB, 512 * GB), 512)
        self.assertIsNone(why)
        remaining = 192 * GB - 12345.0
        fit_hot = probe.ram_mb * float(probe.fit_ratio)
        self.assertLessEqual(fit_hot, remaining)
        self.assertLess(remaining - fit_hot, 512)
        self.assertGreater(probe.ram_mb, remaining)
        self.assertFalse(self.admits(used, probe.over_ratio, probe.ram_mb))
        self.assertTrue(self.admits(used, probe.fit_ratio, probe.ram_mb))
        self.assertFalse(self.admits(used + fit_hot, '1',
                                     probe.small_ram_mb))

    def test_ram_runs_out_first(self):
        probe, why = self.hosts.plan_cache_probe(
            'mm1', self.prof, 1.0, 0, (192 * GB + 100, 512 * GB), 512)
        self.assertIsNone(probe)
        self.assertIn('RAM runs out before the cache', why)

    def test_cache_already_full(self):
        probe, why = self.hosts.plan_cache_probe(
            'mm1', self.prof, 1.0, 192 * GB - 100.0, (300 * GB, 512 * GB),
            512)
        self.assertIsNone(probe)
        self.assertIn('has 100 MB of its DRAM cache free', why)

    def test_hot_ram_counts_as_the_scheduler(self):
        servers = [
            {'flavor': {'ram': 1000, 'extra_specs': {}}},
            {'flavor': {'ram': 1000, 'extra_specs': {
                extra_specs.HOT_RATIO_KEY: '0.25'}}},
            # Specs the API would now refuse: all of its RAM is hot.
            {'flavor': {'ram': 1000, 'extra_specs': {
                extra_specs.HOT_RATIO_KEY: 'lots'}}}]
        self.assertEqual(500 + 250 + 1000, self.hosts.hot_ram(servers, 0.5))
        defaults = extra_specs.Defaults(hot_ratio=0.5)
        self.assertEqual(1750, sum(
            extra_specs.counted_hot_mb(s['flavor']['ram'], extra_specs.
                                       request_of(s['flavor']['extra_specs'],
                                                  defaults)[0])
            for s in servers))

    def test_split_hosts_leaves_unknown_out(self):
        def host(mode):
            return self.contract.host([{'pmem_mode': mode}])

        profiles = {'dram1': host('dram'), 'mm1': self.prof,
                    'ad1': host('app_direct'), 'odd': host('tape')}
        request = self.contract.flavor({'pmem:modes': 'dram,app_direct'})
        self.assertEqual((['ad1', 'dram1'], ['mm1']),
                         self.hosts.split_hosts(profiles, request))


class ContractExamplesTestCase(testtools.TestCase):
    """The plugin's arithmetic on examples worked out from the docs."""

    def setUp(self):
        super(ContractExamplesTestCase, self).setUp()
        self.contract = plugin('contract')

    def host(self, **meta):
        meta.setdefault('pmem_mode', 'memory_mode')
        return self.contract.host([meta])

    def test_bound_of_the_filters_log_line(self):
        # doc/source/scheduling.rst, "Filters", PmemCacheFilter: 192 GB x
        # 1024 x 1.0 = 196608 MB; 196608 MB hot there + 16384 MB exceeds it.
        c, prof = self.contract, self.host(pmem_dram_cache_gb='192')
        self.assertEqual(196608, c.cache_bound_mb(prof, 1.0))
        self.assertFalse(c.admits(prof, 1.0, 196608, 16384))
        # "stays within": 180224 + 16384 = 196608 MB meets it and passes.
        self.assertTrue(c.admits(prof, 1.0, 180224, 16384))
        self.assertFalse(c.admits(prof, 1.0, 180225, 16384))
        # cache_overcommit_ratio 1.5: 192 x 1024 x 1.5 = 294912 MB; 0
        # admits nothing (configuration.rst).
        self.assertEqual(294912, c.cache_bound_mb(prof, 1.5))
        self.assertTrue(c.admits(prof, 1.5, 278528, 16384))
        self.assertFalse(c.admits(prof, 0.0, 0, 1))
        # A decimal ratio is exact: 10 x 1024 x 1.1 = 11264 MB.
        prof = self.host(pmem_dram_cache_gb='10')
        self.assertEqual(11264, c.cache_bound_mb(prof, 1.1))
        self.assertTrue(c.admits(prof, 1.1, 11264 - 0.1 * 1000,
                                 c.hot_mb(1000, {'pmem:hot_ratio': '0.1'})))

    def test_hot_ram_of_a_flavor(self):
        # scheduling.rst, "Flavor extra specs" and PmemCacheFilter: RAM x
        # pmem:hot_ratio, [pmem] default_hot_ratio (0.5) without one, all
        # of its RAM with an invalid pmem: spec.
        hot = self.contract.hot_mb
        self.assertEqual(500, hot(1000, {}))
        self.assertEqual(250, hot(1000, {'pmem:hot_ratio': '.25'}))
        self.assertEqual(1000, hot(1000, {'pmem:hot_ratio': '1'}))
        self.assertEqual(100, hot(1000, {}, 0.1))
        self.assertEqual(1000, hot(1000, {'pmem:hot_ratio': 'lots'}))
        self.assertEqual(1000, hot(1000, {'pmem:priority': 'urgent',
                                          'pmem:hot_ratio': '0.25'}))

    def test_extra_spec_grammar(self):
        # scheduling.rst, "Flavor extra specs": plain decimal 0 < r <= 1.
        problem = self.contract.spec_problem
        for good in ('0.25', '.5', '1', '1.0', '0.00001'):
            self.assertIsNone(problem('pmem:hot_ratio', good), good)
        for bad in ('0', '2', '1.5', '-0.5', 'half', '50%', '1e-1', '.',
                    ' 0.5'):
            self.assertIsNotNone(problem('pmem:hot_ratio', bad), bad)
        self.assertIsNone(problem('pmem:modes', 'dram, cxl_kmem'))
        for bad in ('dram,tape', 'memory-mode', 'DRAM', 'dram,,app_direct'):
            self.assertIsNotNone(problem('pmem:modes', bad), bad)
        self.assertIsNone(problem('pmem:priority', 'low'))
        self.assertIsNotNone(problem('pmem:priority', 'HIGH'))
        self.assertIsNotNone(problem('pmem:hotratio', '0.5'))

    def test_kinds_each_modes_value_admits(self):
        # scheduling.rst, "The hosts each pmem:modes value admits".
        flavor = self.contract.flavor
        admitted = {value: sorted(k for k in self.contract.KINDS
                                  if flavor({'pmem:modes': value}).allows(k))
                    for value in ('dram', 'memory_mode', 'cxl_kmem',
                                  'dram,cxl_flat')}
        self.assertEqual({
            'dram': ['cxl_devdax', 'dram'],
            'memory_mode': ['cxl_flat', 'cxl_kmem', 'memory_mode'],
            'cxl_kmem': ['cxl_kmem'],
            'dram,cxl_flat': ['cxl_devdax', 'cxl_flat', 'dram']}, admitted)
        # hw:pmem needs app_direct; with pmem:modes leaving it out, no host.
        self.assertEqual({'app_direct'},
                         flavor({'hw:pmem': 'SMALL'}).modes)
        self.assertEqual(set(), flavor({'hw:pmem': 'SMALL',
                                        'pmem:modes': 'dram'}).modes)

    def test_host_from_aggregates(self):
        # numa.rst, "The model" (Capacity); discovery.rst's cxl_kmem host.
        host = self.host
        self.assertEqual(
            (192, {0: 96, 1: 96}),
            (host(pmem_dram_cache_gb_per_cell='0:96,1:96').cache_gb,
             host(pmem_dram_cache_gb_per_cell='0:96,1:96').cell_gb))
        kmem = host(pmem_mode='cxl_kmem', pmem_dram_cache_gb='509.25',
                    pmem_dram_cache_gb_per_cell='0:253.75,1:255.5',
                    pmem_kernel_tiering='on')
        self.assertEqual((F(2037, 4), {0: F(1015, 4), 1: F(511, 2)}),
                         (kmem.cache_gb, kmem.cell_gb))
        # Adding up to pmem_dram_cache_gb within 1 MB (1/1024 GB).
        self.assertTrue(host(pmem_dram_cache_gb='192',
                             pmem_dram_cache_gb_per_cell='0:96,1:'
                             '95.9990234375').known)
        for meta in ({'pmem_dram_cache_gb': '192',
                      'pmem_dram_cache_gb_per_cell': '0:96,1:95'},
                     {'pmem_dram_cache_gb_per_cell': '0:96,0:96'},
                     {'pmem_dram_cache_gb': '-1'},
                     {},
                     {'pmem_dram_cache_gb': '1', 'pmem_kernel_tiering': 'x'},
                     {'pmem_mode': 'tape'}):
            self.assertFalse(host(**meta).known, meta)
        self.assertFalse(self.contract.host([
            {'pmem_mode': 'dram'}, {'pmem_mode': 'app_direct'}]).known)
        # [pmem] default_host_mode for a host no aggregate gives a mode;
        # a memory_mode default needs pmem_dram_cache_gb (configuration.rst).
        self.assertEqual('app_direct', self.contract.host(
            [{}], default_mode='app_direct').mode)
        self.assertFalse(self.contract.host(
            [{}], default_mode='memory_mode').known)

    def test_numa_worked_example(self):
        # numa.rst, "Worked example": 192 GB on two cells, ratio 1.0, each
        # cell 96 GB; a floating 64 GB instance (32 GB hot: 16 GB a cell)
        # and two 48 GB instances bound to cell 0 (48 GB hot there).
        c, prof = self.contract, self.host(pmem_dram_cache_gb='192')
        self.assertEqual({0: 96 * GB, 1: 96 * GB},
                         c.cell_bounds_mb(prof, [0, 1], 1.0))
        used, on_0 = 32 * GB, {0: 48 * GB}
        self.assertEqual({0: 16 * GB, 1: 16 * GB},
                         c.spread_mb(prof, [0, 1], used))

        def admits(new_mb=0, new_cells=None):
            return c.admits(prof, 1.0, used, new_mb, [0, 1], on_0, new_cells)

        # A new 80 GB hw:numa_nodes=1 instance charges 40 GB to one cell:
        # cell 1, 16 + 40 = 56 of 96, passes; cell 0, 64 + 40 = 104 of 96,
        # refused, though the host-wide count (120 GB of 192) admits it.
        self.assertTrue(admits(new_cells={1: 40 * GB}))
        self.assertFalse(admits(new_cells={0: 40 * GB}))
        self.assertTrue(c.admits(prof, 1.0, used + 48 * GB, 40 * GB))
        # A new floating 64 GB instance charges 16 GB to each: cell 0
        # reaches 80 of 96, passes.
        self.assertTrue(admits(new_mb=32 * GB))
        # Cell 0 has 32 GB free: 64 GB floating more (32 a cell) fits
        # exactly, a MB more does not.
        self.assertTrue(admits(new_mb=64 * GB))
        self.assertFalse(admits(new_mb=64 * GB + 2))
        # Per-cell sizes that name other cells than the host has: refused.
        odd = self.host(pmem_dram_cache_gb_per_cell='0:96,1:96')
        self.assertIsNone(c.cell_bounds_mb(odd, [0, 1, 2], 1.0))
        self.assertFalse(c.admits(odd, 1.0, 0, 0, [0, 1, 2], {0: 1}, None))


class ContractAgreesWithCoreTestCase(testtools.TestCase):
    """The plugin's cache rule and the core's decide alike on a grid.

    Two implementations of the documented rule, written apart: the
    plugin's (``contract.admits``) and the scheduler's
    (``decide.cache_check``), host-wide and per NUMA cell. The loads are
    worked out exactly, near each bound, on it and 1 MB off it; the plugin
    gets them exact, the core as the nearest floats (what it counts with).
    """

    RATIOS = ('0', '0.5', '1.0', '1.1', '1.5')
    HOT_RATIOS = ('0.1', '0.25', '0.5', '0.75', '1')
    SIZES = (512, 4096, 16384, 65536)
    # Aggregate metadata and each cell's GB (cells 0 and 1).
    CACHES = (({'pmem_dram_cache_gb': '192'}, {0: F(96), 1: F(96)}),
              ({'pmem_dram_cache_gb': '10.5'}, {0: F(21, 4), 1: F(21, 4)}),
              ({'pmem_dram_cache_gb_per_cell': '0:96,1:32'},
               {0: F(96), 1: F(32)}),
              ({'pmem_dram_cache_gb': '509.25',
                'pmem_dram_cache_gb_per_cell': '0:253.75,1:255.5'},
               {0: F('253.75'), 1: F('255.5')}))

    def setUp(self):
        super(ContractAgreesWithCoreTestCase, self).setUp()
        self.contract = plugin('contract')

    def cases(self):
        """The grid's points, each with the core's profile and ours.

        (core profile, plugin host, ratio text, cells' GB, hot ratio text,
        RAM MB).
        """
        for (meta, cell_gb), ratio, text, ram_mb in itertools.product(
                self.CACHES, self.RATIOS, self.HOT_RATIOS, self.SIZES):
            meta = dict(meta, pmem_mode='memory_mode')
            core = profile.from_metadata([meta])
            mine = self.contract.host([meta])
            self.assertEqual((True, float(sum(cell_gb.values()))),
                             (mine.known, float(mine.cache_gb)))
            yield core, mine, ratio, cell_gb, text, ram_mb

    @staticmethod
    def loads(room):
        """Hot MB already there, given the room left for the new one."""
        for load in (room * F(3, 10), room * F(9, 10), room - 1, room,
                     room + 1):
            if load >= 0:
                yield load

    def check(self, core, mine, ratio, floating, bound, text, ram_mb,
              cells=None, fit=None):
        """Both verdicts, which must be the same; returns it."""
        request = extra_specs.parse({extra_specs.HOT_RATIO_KEY: text})
        used = nearmem.HotRam(float(floating + sum(bound.values())),
                              {c: float(mb) for c, mb in bound.items()})
        theirs = decide.cache_check(
            core, float(ratio), used, request, ram_mb, cells=cells,
            fit=None if fit is None else (lambda: dict(fit)))[0]
        ours = self.contract.admits(
            mine, float(ratio), floating, ram_mb * F(text), cells, bound,
            None if fit is None else {c: mb * F(text)
                                      for c, mb in fit.items()})
        self.assertEqual(bool(theirs), ours, (
            core, ratio, floating, bound, text, ram_mb, cells, fit))
        return ours

    def test_host_wide(self):
        verdicts = set()
        for core, mine, ratio, cell_gb, text, ram_mb in self.cases():
            bound_mb = sum(cell_gb.values()) * GB * F(ratio)
            for used in self.loads(bound_mb - ram_mb * F(text)):
                for cells in (None, [0, 1]):
                    verdicts.add(self.check(core, mine, ratio, used, {},
                                            text, ram_mb, cells))
        self.assertEqual({True, False}, verdicts)

    def test_per_cell(self):
        verdicts = set()
        for core, mine, ratio, cell_gb, text, ram_mb in self.cases():
            share = {c: gb / sum(cell_gb.values())
                     for c, gb in cell_gb.items()}
            hot = ram_mb * F(text)
            for cell, fit in ((0, {0: ram_mb}), (1, {1: ram_mb}),
                              (0, {0: F(ram_mb, 4), 1: F(ram_mb * 3, 4)}),
                              (0, None)):
                new = (hot * share[cell] if fit is None
                       else fit[cell] * F(text))
                room = cell_gb[cell] * GB * F(ratio) - new
                # Half of the cell's load bound there, half floating.
                for load in self.loads(room):
                    bound = {cell: load / 2}
                    floating = load / 2 / share[cell]
                    verdicts.add(self.check(core, mine, ratio, floating,
                                            bound, text, ram_mb, [0, 1],
                                            fit))
            # Per-cell sizes naming other cells than the host has.
            self.check(core, mine, ratio, F(0), {0: F(1)}, text, ram_mb,
                       [0, 1, 2], {0: ram_mb})
        self.assertEqual({True, False}, verdicts)
