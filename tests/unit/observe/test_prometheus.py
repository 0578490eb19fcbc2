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
"""The observation as Prometheus metrics: textfile and HTTP, parsed back."""

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request

import fixtures
from prometheus_client import parser
import testtools
import yaml

from nova_pmem_filters.core.formats import observation
from nova_pmem_filters.observe import prometheus
from tests.unit import paths

MB = 1024 * 1024
PROMTOOL_TESTS = os.path.join(os.path.dirname(__file__), 'data',
                              'promtool')
# Serve the document of argv[1] on an ephemeral port of 127.0.0.1; print
# the port; stop when stdin closes.
SERVE = """
from nova_pmem_filters.core.formats import observation
from nova_pmem_filters.observe import prometheus
import sys
doc = observation.read(sys.argv[1])
reg = prometheus.registry(prometheus.DocumentCollector(doc))
server = prometheus.serve('127.0.0.1', 0, reg)
print(server.server_address[1], flush=True)
sys.stdin.read()
server.shutdown()
"""


def document():
    return observation.parse({
        'schema': observation.SCHEMA, 'hostname': 'compute-mm-01',
        'started': '2026-11-25T12:00:00Z', 'window_s': 60.0,
        'profile': {'pmem_mode': 'memory_mode', 'near_memory_mb': 196608.0,
                    'cells': [{'id': 0, 'near_memory_mb': 98304.0}]},
        'nodes': [{'id': 0, 'cpus': True}, {'id': 2, 'cpus': False}],
        'instances': [
            {'uuid': 'u-1', 'name': 'instance-1', 'flavor': 'm1.redis',
             'flavor_ram_mb': 24576, 'flavor_vcpus': 4, 'pid': 4242,
             'declared_hot_ratio': 0.125, 'method': 'damon',
             'working_set_mb': 3900.5,
             'hot_ratio': 0.1587, 'numa_mb': {'0': 20000.0, '2': 4000.0},
             'cell': 0, 'gap': None},
            {'uuid': 'u-2', 'name': 'instance-2', 'flavor': 'm1.small',
             'flavor_ram_mb': 2048, 'flavor_vcpus': 1, 'pid': 4343,
             'method': None, 'working_set_mb': None, 'hot_ratio': None,
             'numa_mb': {}, 'cell': None, 'gap': 'pid 4343: exited'}],
        'host': {'working_set_mb': 3900.5, 'near_memory_mb': 196608.0,
                 'cells': [{'id': 0, 'working_set_mb': 3900.5,
                            'near_memory_mb': 98304.0}]},
        'far_memory': {'media_read_mb_per_s': 12.5,
                       'media_write_mb_per_s': 3.0,
                       'promote_pages_per_s': None,
                       'demote_pages_per_s': None},
        'gaps': ['host working set counts 1 of 2 instances'],
    }, 'test')


def cxl_document():
    """A cxl_kmem host whose kernel does not demote, promotion lagging."""
    data = document().to_dict()
    data['hostname'] = 'compute-cxl-01'
    data['profile'] = None
    data['instances'][0].update(near_resident_mb=1024.0,
                                far_resident_mb=3072.0,
                                hot_on_far_mb=2876.5)
    data['tiering'] = {
        'version': 1, 'kernel': '6.9.0-1-amd64', 'numa_balancing': 2,
        'demotion_enabled': False, 'promotion_rate_limit_mbps': 1,
        'memory_tiers': [{'tier': 4, 'nodes': [0]},
                         {'tier': 22, 'nodes': [2]}],
        'far_nodes': [2], 'promotes': True, 'demotes': False,
        'state': 'off', 'problems': ['demotion-disabled'],
        'rates': {'pgpromote_success': 100.0,
                  'pgpromote_candidate': 10000.0,
                  'pgdemote_direct': 0.0},
        'node_rates': {'0': {'pgpromote_success': 100.0},
                       '2': {'pgpromote_success': 0.0}}}
    return observation.parse(data, 'test')


def samples(text):
    """{(name, sorted labels): value} of an exposition text."""
    found = {}
    for family in parser.text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = (
                sample.value)
    return found


def inst(uuid, name, flavor, **more):
    labels = dict(uuid=uuid, name=name, flavor=flavor, **more)
    return tuple(sorted(labels.items()))


class PrometheusTestCase(testtools.TestCase):

    def check(self, text):
        found = samples(text)
        one = inst('u-1', 'instance-1', 'm1.redis')
        one_damon = inst('u-1', 'instance-1', 'm1.redis', method='damon')
        self.assertEqual(3900.5 * MB, found[
            ('nova_pmem_instance_working_set_bytes', one_damon)])
        self.assertEqual(0.1587, found[
            ('nova_pmem_instance_hot_ratio', one_damon)])
        self.assertEqual(24576 * MB, found[
            ('nova_pmem_instance_flavor_memory_bytes', one)])
        # Declared by u-1's flavor; u-2's declares nothing: no sample.
        self.assertEqual(0.125, found[
            ('nova_pmem_instance_declared_hot_ratio', one)])
        self.assertNotIn(('nova_pmem_instance_declared_hot_ratio',
                          inst('u-2', 'instance-2', 'm1.small')), found)
        self.assertEqual(4000.0 * MB, found[
            ('nova_pmem_instance_numa_memory_bytes',
             inst('u-1', 'instance-1', 'm1.redis', node='2'))])
        self.assertEqual(1.0, found[('nova_pmem_instance_measured', one)])
        two = inst('u-2', 'instance-2', 'm1.small')
        self.assertEqual(0.0, found[('nova_pmem_instance_measured', two)])
        # A null is no sample, never a zero.
        self.assertNotIn(
            ('nova_pmem_instance_working_set_bytes',
             inst('u-2', 'instance-2', 'm1.small', method='')), found)
        self.assertEqual(3900.5 * MB,
                         found[('nova_pmem_host_working_set_bytes', ())])
        self.assertEqual(196608.0 * MB,
                         found[('nova_pmem_host_near_memory_bytes', ())])
        self.assertEqual(3900.5 * MB, found[
            ('nova_pmem_cell_working_set_bytes', (('cell', '0'),))])
        self.assertEqual(98304.0 * MB, found[
            ('nova_pmem_cell_near_memory_bytes', (('cell', '0'),))])
        self.assertEqual(12.5 * MB, found[
            ('nova_pmem_far_memory_media_read_bytes_per_second', ())])
        self.assertNotIn(('nova_pmem_tiering_promotions_per_second', ()),
                         found)
        # One host gap and one instance gap.
        self.assertEqual(2.0, found[('nova_pmem_observation_gaps', ())])
        self.assertEqual(60.0,
                         found[('nova_pmem_observation_window_seconds', ())])
        self.assertEqual(1795608000.0, found[
            ('nova_pmem_observation_start_time_seconds', ())])

    def test_textfile(self):
        directory = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(directory, 'nova_pmem.prom')
        reg = prometheus.registry(prometheus.DocumentCollector(document()))
        prometheus.write_textfile(path, reg)
        with open(path) as f:
            self.check(f.read())
        # Nothing but the file: no temporary left behind.
        self.assertEqual(['nova_pmem.prom'], os.listdir(directory))

    def test_http(self):
        # The server runs in a process of its own: the stestr worker is
        # monkey-patched by Nova's test modules, and eventlet hangs
        # socketserver's serve_forever in a thread (tests/unit/httpstub.py).
        directory = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(directory, 'doc.json')
        with open(path, 'w') as f:
            f.write(observation.dumps(document()))
        child = subprocess.Popen(
            [sys.executable, '-c', SERVE, path], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, cwd=paths.ROOT)
        self.addCleanup(child.wait, 10)
        self.addCleanup(child.stdin.close)
        port = int(child.stdout.readline())
        url = 'http://127.0.0.1:%d/metrics' % port
        with urllib.request.urlopen(url, timeout=10) as response:
            self.assertEqual(200, response.status)
            self.check(response.read().decode())

    def test_every_far_memory_field_is_exported(self):
        self.assertEqual(
            [f.name for f in dataclasses.fields(observation.FarMemory)],
            [row[0] for row in prometheus._FAR_MEMORY])

    def test_an_instance_gone_leaves_no_series(self):
        doc = document()
        collector = prometheus.DocumentCollector(doc)
        reg = prometheus.registry(collector)
        doc = dataclasses.replace(doc, instances=doc.instances[1:])
        collector.update(doc)
        text = prometheus.render(reg)
        self.assertNotIn('u-1', text)
        self.assertIn('u-2', text)


class TieringTestCase(testtools.TestCase):
    """The kernel's tiering and the guests' memory near and far."""

    def render(self, doc):
        reg = prometheus.registry(prometheus.DocumentCollector(doc))
        return prometheus.render(reg)

    def test_tiering_metrics(self):
        text = self.render(cxl_document())
        found = samples(text)
        self.assertEqual(0.0, found[('nova_pmem_host_kernel_tiering', (
            ('demotion_enabled', 'false'), ('kernel', '6.9.0-1-amd64'),
            ('numa_balancing', '2'), ('problems', 'demotion-disabled')))])
        self.assertEqual(1.0, found[('nova_pmem_host_far_nodes', ())])
        self.assertEqual(10000.0, found[(
            'nova_pmem_tiering_events_per_second',
            (('counter', 'pgpromote_candidate'),))])
        self.assertEqual(0.0, found[(
            'nova_pmem_node_tiering_events_per_second',
            (('counter', 'pgpromote_success'), ('node', '2')))])
        # 100 promoted of 10000 candidates a second: the core's rule.
        self.assertEqual(1.0, found[('nova_pmem_tiering_lagging',
                                     (('code', 'promotion-lags'),))])
        self.assertNotIn(('nova_pmem_tiering_lagging',
                          (('code', 'direct-demotion'),)), found)
        one = inst('u-1', 'instance-1', 'm1.redis')
        self.assertEqual(3072.0 * MB, found[
            ('nova_pmem_instance_far_resident_bytes', one)])
        self.assertEqual(1024.0 * MB, found[
            ('nova_pmem_instance_near_resident_bytes', one)])
        self.assertEqual(2876.5 * MB, found[
            ('nova_pmem_instance_hot_on_far_bytes', one)])
        # The exposition lines, as a scrape shows them.
        self.assertIn('nova_pmem_host_kernel_tiering{demotion_enabled="false"'
                      ',kernel="6.9.0-1-amd64",numa_balancing="2",problems='
                      '"demotion-disabled"} 0.0\n', text)
        self.assertIn('nova_pmem_tiering_lagging{code="promotion-lags"} '
                      '1.0\n', text)

    def test_on_is_one(self):
        data = cxl_document().to_dict()
        data['tiering'].update(demotion_enabled=True, demotes=True,
                               state='on', problems=[])
        found = samples(self.render(observation.parse(data, 'test')))
        self.assertEqual(1.0, found[('nova_pmem_host_kernel_tiering', (
            ('demotion_enabled', 'true'), ('kernel', '6.9.0-1-amd64'),
            ('numa_balancing', '2'), ('problems', '')))])

    def test_an_older_document_has_no_tiering_sample(self):
        # Before the tiering section (or where it could not be read):
        # no sample, never a 0 that would read as "off".
        found = samples(self.render(document()))
        for name, _labels in found:
            self.assertNotIn('tiering', name)
            self.assertNotIn('far_nodes', name)
            self.assertNotIn('resident', name)


class ExamplesTestCase(testtools.TestCase):
    """etc/nova-pmem-filters/observe: valid files on metrics we export."""

    def setUp(self):
        super().setUp()
        self.names = set()
        for doc in (document(), cxl_document()):
            reg = prometheus.registry(prometheus.DocumentCollector(doc))
            self.names.update(
                f.name for f in parser.text_string_to_metric_families(
                    prometheus.render(reg)))
        # Metrics without a sample in document() are still declared.
        self.names.update(['nova_pmem_tiering_promotions_per_second',
                           'nova_pmem_tiering_demotions_per_second'])

    def used(self, text):
        return set(re.findall(r'\bnova_pmem_[a-z_]+\b', text))

    def test_alert_rules(self):
        with open(paths.of('etc', 'nova-pmem-filters', 'observe',
                           'alerts.yaml')) as f:
            rules = yaml.safe_load(f)
        recorded = set()
        for group in rules['groups']:
            self.assertIsInstance(group['name'], str)
            for rule in group['rules']:
                self.assertEqual(1, len({'alert', 'record'} & set(rule)),
                                 rule)
                self.assertIsInstance(rule['expr'], str)
                self.assertLessEqual(set(rule), {
                    'alert', 'record', 'expr', 'for', 'labels',
                    'annotations'})
                if 'record' in rule:
                    recorded.add(rule['record'])
                for name in self.used(rule['expr']):
                    if not any(name in r for r in recorded):
                        self.assertIn(name, self.names, rule['expr'])

    def test_dashboard(self):
        with open(paths.of('etc', 'nova-pmem-filters', 'observe',
                           'grafana-dashboard.json')) as f:
            dash = json.load(f)
        self.assertTrue(dash['panels'])
        for panel in dash['panels']:
            for target in panel['targets']:
                used = self.used(target['expr'])
                self.assertTrue(used, target['expr'])
                self.assertLessEqual(used, self.names, target['expr'])


class PromtoolTestCase(testtools.TestCase):
    """alerts.yaml checked, and every alert of it run, by promtool.

    Where promtool is installed (Debian's ``prometheus`` package).
    """

    def setUp(self):
        super().setUp()
        self.promtool = shutil.which('promtool')
        if self.promtool is None:
            self.skipTest('promtool is not installed')
        self.tmp = self.useFixture(fixtures.TempDir()).path
        shutil.copy(paths.of('etc', 'nova-pmem-filters', 'observe',
                             'alerts.yaml'), self.tmp)

    def promtool_ok(self, *argv):
        proc = subprocess.run([self.promtool] + list(argv), cwd=self.tmp,
                              stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=300)
        output = proc.stdout.decode('utf-8', 'replace')
        self.assertEqual(0, proc.returncode, output)
        return output

    def test_check_rules(self):
        self.assertIn('SUCCESS', self.promtool_ok('check', 'rules',
                                                  'alerts.yaml'))

    def test_alerts_fire_as_written(self):
        names = promtool_tests()
        for name in names:
            shutil.copy(os.path.join(PROMTOOL_TESTS, name), self.tmp)
        output = self.promtool_ok('test', 'rules', *names)
        self.assertEqual(len(names), output.count('SUCCESS'), output)


def promtool_tests():
    """The ``promtool test rules`` files of data/promtool, sorted."""
    return sorted(n for n in os.listdir(PROMTOOL_TESTS)
                  if n.endswith('.yaml'))


class AlertCoverageTestCase(testtools.TestCase):
    """Each alert of alerts.yaml fires in a promtool test, and stays quiet.

    An alert added without its tests fails here (promtool itself runs them
    in PromtoolTestCase).
    """

    def cases(self):
        """{alertname: [(test file, eval_time, alerts expected)]}."""
        found = {}
        for name in promtool_tests():
            with open(os.path.join(PROMTOOL_TESTS, name)) as f:
                spec = yaml.safe_load(f)
            self.assertEqual(['alerts.yaml'], spec['rule_files'], name)
            for test in spec['tests']:
                for case in test.get('alert_rule_test', []):
                    found.setdefault(case['alertname'], []).append(
                        (name, case['eval_time'], case.get('exp_alerts')
                         or []))
        return found

    def test_every_alert_fires_and_stays_quiet_somewhere(self):
        with open(paths.of('etc', 'nova-pmem-filters', 'observe',
                           'alerts.yaml')) as f:
            rules = yaml.safe_load(f)
        alerts = [rule['alert'] for group in rules['groups']
                  for rule in group['rules'] if 'alert' in rule]
        self.assertIn('NovaPmemFlavorHotRatioUnderDeclared', alerts)
        cases = self.cases()
        # A test of an alert that does not exist tests nothing.
        self.assertLessEqual(set(cases), set(alerts))
        for alert in alerts:
            firing = [c for c in cases.get(alert, []) if c[2]]
            quiet = [c for c in cases.get(alert, []) if not c[2]]
            self.assertTrue(firing, '%s: no promtool test fires it (%s)'
                            % (alert, PROMTOOL_TESTS))
            self.assertTrue(quiet, '%s: no promtool test where it must '
                            'not fire (%s)' % (alert, PROMTOOL_TESTS))
            for name, when, expected in firing:
                for one in expected:
                    # The labels the rule gives, not only the series'.
                    self.assertIn('severity', one['exp_labels'],
                                  (alert, name, when))
