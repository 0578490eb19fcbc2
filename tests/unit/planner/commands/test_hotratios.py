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
"""hot-ratios, and scenario workloads whose hot ratio is observed."""

import json
import os
import shlex

import fixtures
import testtools

from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import placement
from nova_pmem_filters.planner import errors
from nova_pmem_filters.planner import scenario
from tests.unit import clitools
from tests.unit import obsdocs

GB = 1024


class HotRatiosTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        # m1.db: 0.2 and 0.6 -> p95 at 0.95: 0.2 + 0.95 x 0.4 = 0.58, up
        # to 0.6. An unmeasured instance (a gap) does not count.
        gap = dict(obsdocs.instance('g', 'm1.db', 8 * GB, 0.9),
                   method=None, working_set_mb=None, hot_ratio=None,
                   gap='the process exited')
        self.obs = obsdocs.write(os.path.join(self.dir, 'obs'), [
            obsdocs.document('h1', [
                obsdocs.instance('a', 'm1.db', 8 * GB, 0.2),
                obsdocs.instance('b', 'm1.db', 8 * GB, 0.6), gap])])

    def scenario_file(self, workload, top=''):
        return clitools.dram_scenario(self.dir, 's', workload, top)

    def run_cli(self, *argv):
        if argv[0] == 'hot-ratios' and '--min-instances' not in argv:
            # Two instances of m1.db: recommend from them.
            argv += ('--min-instances', '2')
        return clitools.run_cli(self, argv)

    def test_without_scenario(self):
        status, out, err = self.run_cli('hot-ratios', '--observations',
                                        self.obs, '-f', 'json')
        self.assertEqual(0, status, err)
        self.assertEqual([{
            'flavor': 'm1.db', 'instances': 2, 'windows': 1, 'p50': 0.4,
            'p95': 0.58, 'max': 0.6, 'declared': None, 'workload': None,
            'recommended': 0.6, 'under_declared': None,
            'command': 'openstack flavor set --property pmem:hot_ratio=0.6 '
                       'm1.db', 'held_back': None}], json.loads(out))

    def test_too_few_instances_are_held_back(self):
        path = self.scenario_file(
            'db: {vcpus: 2, ram_gb: 8, flavor: m1.db, hot_ratio: 0.3}\n')
        # The default minimum is 3 instances: m1.db has 2.
        status, out, err = clitools.run_cli(self, (
            'hot-ratios', '--observations', self.obs, '--scenario', path,
            '-f', 'json'))
        self.assertEqual(0, status, err)
        row, = json.loads(out)
        self.assertIn('m1.db: no recommendation', err)
        # How many were seen, the distribution, and why no value.
        self.assertEqual(
            (2, 0.58, 0.3, None, None, None, '2 instances, fewer than 3'),
            tuple(row[c] for c in ('instances', 'p95', 'declared',
                                   'recommended', 'under_declared',
                                   'command', 'held_back')))
        # The default table has no command for it, and stderr says why.
        status, out, err = clitools.run_cli(self, (
            'hot-ratios', '--observations', self.obs))
        self.assertEqual(0, status, err)
        self.assertEqual('m1.db: no recommendation: 2 instances, fewer '
                         'than 3 (--min-instances)\n', err)
        self.assertIn('m1.db', out)
        self.assertNotIn('openstack flavor set', out)
        # One instance is enough when asked.
        status, out, err = clitools.run_cli(self, (
            'hot-ratios', '--observations', self.obs, '--min-instances', '1',
            '-f', 'value', '-c', 'recommended', '-c', 'held_back'))
        self.assertEqual('0.6 \n', out)

    def test_min_instances_must_be_a_whole_number(self):
        for bad in ('0', '-1', '2.5', 'three', 'nan'):
            status, out, err = clitools.run_cli(self, (
                'hot-ratios', '--observations', self.obs,
                '--min-instances', bad))
            self.assertEqual(2, status, bad)
            self.assertEqual(1, len(err.splitlines()), err)
            self.assertIn('--min-instances %s' % bad, err)
            self.assertEqual('', out)

    def test_declared_by_the_workload_of_that_flavor(self):
        path = self.scenario_file(
            'db: {vcpus: 2, ram_gb: 8, flavor: m1.db, hot_ratio: 0.3}\n')
        status, out, err = self.run_cli(
            'hot-ratios', '--observations', self.obs, '--scenario', path,
            '-f', 'value', '-c', 'workload', '-c', 'declared',
            '-c', 'under_declared')
        self.assertEqual(0, status, err)
        # -f value prints the chosen columns in the listing's order.
        self.assertEqual('0.3 db True\n', out)
        # nova-config creates and sets the flavor under that name.
        status, out, err = self.run_cli('nova-config', '--scenario', path,
                                        '-f', 'value', '-c', 'command')
        self.assertEqual(0, status, err)
        self.assertIn('--disk 10 m1.db\n', out)
        self.assertIn('pmem:hot_ratio=0.3 m1.db\n', out)

    def test_placement_accounted_flavor_keeps_its_request_consistent(self):
        path = self.scenario_file(
            'db: {vcpus: 2, ram_gb: 8, flavor: m1.db, hot_ratio: 0.3}\n')
        status, out, err = self.run_cli(
            'hot-ratios', '--observations', self.obs, '--scenario', path,
            '--placement-accounting', '-f', 'value', '-c', 'command')
        self.assertEqual(0, status, err)
        words = shlex.split(out)
        self.assertEqual(['openstack', 'flavor', 'set'], words[:3])
        self.assertEqual('m1.db', words[-1])
        specs = dict(w.split('=', 1) for w in words[4:-1:2])
        # The flavor nova-config --placement-accounting creates, with the
        # command applied: the doctor's rule finds its request consistent.
        status, out, err = self.run_cli(
            'nova-config', '--scenario', path, '--placement-accounting',
            '-f', 'json')
        planned = {r['key']: r['value'] for r in json.loads(out)
                   if r['scope'] == 'flavor' and r['key'] != 'create'}
        planned.update(specs)
        self.assertEqual('0.6', planned[extra_specs.HOT_RATIO_KEY])
        self.assertEqual(placement.instance_near_memory_mb(8192, 0.6),
                         placement.requested_near_memory(planned))
        # Without a scenario the RAM is unknown: only the ratio is set.
        status, out, err = self.run_cli(
            'hot-ratios', '--observations', self.obs,
            '--placement-accounting', '-f', 'value', '-c', 'command')
        self.assertEqual('openstack flavor set --property '
                         'pmem:hot_ratio=0.6 m1.db\n', out)

    def test_bad_input_is_one_line_and_exit_2(self):
        bad = os.path.join(self.dir, 'bad')
        os.mkdir(bad)
        with open(os.path.join(bad, 'h.json'), 'w') as f:
            json.dump(dict(obsdocs.document('h', []).to_dict(),
                           window_s='long'), f)
        for directory, words in (
                (os.path.join(self.dir, 'nope'), ('nope', 'not a '
                                                  'directory')),
                (bad, ('h.json["window_s"]', 'expected a number'))):
            status, out, err = self.run_cli('hot-ratios', '--observations',
                                            directory)
            self.assertEqual(2, status)
            self.assertEqual('', out)
            self.assertEqual(1, len(err.splitlines()), err)
            for word in words:
                self.assertIn(word, err)

    def test_nothing_measured_says_what_was_read_and_why(self):
        gap = dict(obsdocs.instance('g', 'm1.db', 8 * GB, 0.9),
                   method=None, working_set_mb=None, hot_ratio=None,
                   gap='pid 1000: exited during the window')
        # The observer writes the flavor Nova's metadata gives, or null.
        anonymous = dict(obsdocs.instance('n', 'm1.db', 8 * GB, 0.3),
                         flavor=None)
        for name, docs, words in (
                ('gaps', [obsdocs.document('h1', [gap]),
                          obsdocs.document('h1', [gap],
                                           started='2026-11-25T13:00:00Z'),
                          obsdocs.document('h2', [])],
                 ['read 3 documents from 2 hosts: 1 instance, '
                  'none measured',
                  'nothing to recommend: no instance has a measured '
                  'working set (1 not measured; gap: pid 1000: exited '
                  'during the window)']),
                ('flavorless', [obsdocs.document('h1', [anonymous, gap])],
                 ['read 1 document from 1 host: 2 instances, none '
                  'measured with a flavor',
                  'nothing to recommend: no measured instance has a '
                  'flavor (1 measured without one; 1 not measured; gap: '
                  'pid 1000: exited during the window)']),
                ('empty', [obsdocs.document('h1', [])],
                 ['read 1 document from 1 host: no instance',
                  'nothing to recommend: the documents list no running '
                  'instance'])):
            directory = obsdocs.write(os.path.join(self.dir, name), docs)
            for fmt, expected in (('table', ''), ('json', '[]\n'),
                                  ('value', '')):
                status, out, err = self.run_cli(
                    'hot-ratios', '--observations', directory, '-f', fmt)
                # As calibration with no points: not an error, and the
                # machine formats give an empty list.
                self.assertEqual(0, status, err)
                self.assertEqual(expected, out)
                self.assertEqual(['%s: %s' % (directory, words[0]),
                                  words[1]], err.splitlines())

    def test_observed_workload(self):
        path = self.scenario_file(
            'db: {vcpus: 2, ram_gb: 8, flavor: m1.db, hot_ratio: observed,\n'
            '     hot_ratio_source: a guess}\n'
            'web: {vcpus: 2, ram_gb: 4, hot_ratio: 0.3}\n')
        with open(path, 'a') as f:
            f.write('observations: obs\n')
        scen = scenario.load(path)
        db = scen.workloads['db']
        self.assertEqual((0.6, 'm1.db'), (db.hot_ratio, db.flavor_name))
        self.assertTrue(db.hot_ratio_source.startswith(
            'observed: p95 of 2 instances in 1 windows, %s' % self.obs))
        self.assertEqual(('', 'web'), (scen.workloads['web'].hot_ratio_source,
                                       scen.workloads['web'].flavor_name))

    def test_observed_errors(self):
        def fails(workload, *words, top='', **load):
            path = self.scenario_file(workload, top)
            exc = self.assertRaises(errors.PlannerError, scenario.load, path,
                                    **load)
            for word in words:
                self.assertIn(word, str(exc))
        fails('db: {vcpus: 2, ram_gb: 8, hot_ratio: observed}\n',
              'workloads.db.hot_ratio', "'observed' needs observations")
        fails('db: {vcpus: 2, ram_gb: 8, hot_ratio: observed}\n',
              'workloads.db.hot_ratio', "no measured instance of flavor "
              "'db'", 'measured: m1.db', observations=self.obs)
        fails('db: {vcpus: 2, ram_gb: 8, hot_ratio: often}\n',
              'workloads.db.hot_ratio', 'pmem:hot_ratio')
        fails('db: {vcpus: 2, ram_gb: 8}\n', 's.yaml: observations:',
              'not a directory', top='observations: nope\n')
        fails('db: {vcpus: 2, ram_gb: 8}\n', 'nope', 'not a directory',
              observations=os.path.join(self.dir, 'nope'))
