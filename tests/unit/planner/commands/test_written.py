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
"""A command that writes a file says so: ``COMMAND: wrote PATH (N bytes)``.

On stderr (stdout is the command's data), one line a file, as report
lists the files it wrote; a file left as it was says so; none with -q.
"""

import os

import fixtures
import testtools

from tests.unit import clitools


class WrittenTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path

    def path(self, name):
        return os.path.join(self.dir, name)

    def run_ok(self, *argv):
        status, out, err = clitools.run_cli(self, argv)
        self.assertEqual(0, status, err)
        return out, err

    def assert_wrote(self, err, command, *paths):
        self.assertEqual(
            ''.join('%s: wrote %s (%d bytes)\n'
                    % (command, p, os.path.getsize(p)) for p in paths), err)

    def test_nova_config_files(self):
        for words, option in ((['script'], '-o'), (['osa'], '-o'),
                              (['provider-config', '--role',
                                'compute:pmem-mm-192-512'], '--output')):
            target = self.path(words[0])
            out, err = self.run_ok('nova-config', *(words + [option,
                                                             target]))
            self.assertEqual('', out)
            self.assert_wrote(err, 'nova-config %s' % words[0], target)

    def test_kolla_output_dir_and_unchanged(self):
        out, err = self.run_ok('nova-config', 'kolla', '--output-dir',
                               self.dir)
        target = self.path(os.path.join('nova', 'nova-scheduler.conf'))
        self.assertEqual('', out)
        self.assert_wrote(err, 'nova-config kolla', target)
        _out, err = self.run_ok('nova-config', 'kolla', '--output-dir',
                                self.dir)
        self.assertEqual('nova-config kolla: %s unchanged: it has the '
                         'settings\n' % target, err)

    def test_merge_into_and_unchanged(self):
        target = self.path('nova.conf')
        with open(target, 'w') as f:
            f.write('[DEFAULT]\ndebug = True\n')
        _out, err = self.run_ok('nova-config', 'nova-conf', '--merge-into',
                                target)
        self.assert_wrote(err, 'nova-config nova-conf', target)
        _out, err = self.run_ok('nova-config', 'nova-conf', '--merge-into',
                                target)
        self.assertEqual('nova-config nova-conf: %s unchanged: it has the '
                         'settings\n' % target, err)

    def test_quiet_says_nothing(self):
        target = self.path('script')
        out, err = self.run_ok('-q', 'nova-config', 'script', '-o', target)
        self.assertEqual(('', ''), (out, err))
        self.assertTrue(os.path.exists(target))

    def test_simulate_files(self):
        chart, timeline, trace = (self.path('c.png'), self.path('t.csv'),
                                  self.path('trace.csv'))
        out, err = self.run_ok(
            'simulate', '--nodes', 'mm-192-512=2', '--mix', 'redis=10',
            '--days', '5', '--no-progress', '--chart', chart, '--timeline',
            timeline, '--write-trace', trace, '-f', 'value', '-c', 'kind')
        self.assertEqual('mm-192-512\ntotal\n', out)
        self.assert_wrote(err, 'simulate', trace, timeline, chart)

    def test_sweep_chart(self):
        chart = self.path('sweep.png')
        out, err = self.run_ok('sweep', '--jobs', '1', '--chart', chart,
                               '-f', 'value', '-c', 'nodes')
        self.assertEqual('52\n', out)
        self.assert_wrote(err, 'sweep', chart)
