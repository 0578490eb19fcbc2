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
"""tools/test_times.py: stestr shares the slow tests out in a fresh clone."""

import os

import fixtures
from stestr.repository import util as repo_util
from stestr import scheduler
import testtools

from tests.unit import paths

SLOW = 'tests.functional.test_a.T.test_slow'
FAST = ['tests.functional.test_a.T.test_fast_%d' % i for i in range(6)]


class TestTimesTestCase(testtools.TestCase):

    def setUp(self):
        super(TestTimesTestCase, self).setUp()
        self.times = paths.tool('test_times')
        self.dir = self.useFixture(fixtures.TempDir()).path

    def write(self, text):
        path = os.path.join(self.dir, 'times.csv')
        with open(path, 'w') as f:
            f.write(text)
        return path

    def test_the_file_of_the_tree_reads(self):
        times = self.times.read_times(self.times.TIMES_FILE)
        self.assertGreater(len(times), 50)
        # The slow functional tests are what it is for.
        self.assertTrue(any(t.startswith('tests.functional.test_planner_loop')
                            for t in times))

    def test_seeded_times_split_the_slow_test_from_the_rest(self):
        path = self.write('test_id,seconds\n%s,100\n%s\n' % (
            SLOW, '\n'.join('%s,1.5' % t for t in FAST)))
        repo_dir = os.path.join(self.dir, 'repo')
        self.assertEqual(7, self.times.seed(repo_dir, path))
        repo = repo_util.get_repo_open(repo_url=repo_dir)
        # It adds durations, not a run: nothing to count as a result.
        self.assertEqual([], repo.get_run_ids())
        parts = scheduler.partition_tests([SLOW] + FAST, 2, repo, None)
        self.assertIn([SLOW], parts)

    def test_without_times_a_split_by_count_pairs_the_slow_test(self):
        # What a fresh clone did before: the slow test shares a worker.
        repo_dir = os.path.join(self.dir, 'repo')
        os.makedirs(repo_dir)
        repo = repo_util.get_repo_initialise(repo_url=repo_dir)
        parts = scheduler.partition_tests([SLOW] + FAST, 2, repo, None)
        self.assertNotIn([SLOW], parts)

    def test_save_writes_back_what_seed_reads(self):
        path = self.write('test_id,seconds\n%s,100\n%s,0.5\n' % (
            SLOW, FAST[0]))
        repo_dir = os.path.join(self.dir, 'repo')
        self.times.seed(repo_dir, path)
        out = os.path.join(self.dir, 'out.csv')
        self.assertEqual(1, self.times.save([repo_dir], out, 2.0))
        self.assertEqual({SLOW: 100.0}, self.times.read_times(out))

    def test_bad_rows_are_named(self):
        for text, what in (('tests.a,fast\n', 'line 1'),
                           ('test_id,seconds\ntests.a,1,2\n', 'line 2'),
                           ('nova.tests.a,1\n', 'not a test id'),
                           ('tests.a,-1\n', 'seconds >= 0'),
                           ('tests.a,nan\n', 'seconds >= 0')):
            e = self.assertRaises(ValueError, self.times.read_times,
                                  self.write(text))
            self.assertIn(what, str(e))

    def test_cli_exit_statuses(self):
        repo_dir = os.path.join(self.dir, 'repo')
        self.assertEqual(0, self.times.main(
            ['seed', '--repo-url', repo_dir,
             '--file', self.write('%s,3\n' % SLOW)]))
        self.assertEqual(3, self.times.main(
            ['seed', '--repo-url', repo_dir, '--file', self.write('x\n')]))
        self.assertEqual(3, self.times.main(
            ['save', '--repo-url', os.path.join(self.dir, 'none'),
             '--file', os.path.join(self.dir, 'o.csv')]))
