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
"""simulate: work it cannot finish is refused at once; progress per policy.
"""

import fixtures
import testtools

from nova_pmem_filters.planner import progress
from tests.unit import clitools


class SimulateLimitsTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        # Neither the trace nor the optimiser's fleet may be made first.
        for target in ('numpy.random.default_rng',
                       'nova_pmem_filters.planner.simulate.runner.'
                       'planned_fleet'):
            self.useFixture(fixtures.MockPatch(
                target, side_effect=AssertionError('%s called' % target)))

    def test_the_issue_s_inputs_are_refused_in_one_line(self):
        # The issue's: numpy could not allocate 99.3 GiB; 557 s and 1.9 GB.
        for days, shown in (('1e9', '1000000000'), ('100000', '100000')):
            status, out, err = clitools.run_cli(
                self, ['simulate', '--days', days])
            self.assertEqual(2, status, err)
            self.assertEqual('', out)
            self.assertEqual(1, len(err.splitlines()), err)
            self.assertRegex(
                err, r'^nova-pmem-planner simulate: error: --days %s: '
                     r'a synthetic trace of about \S+ events '
                     r'\(a boot and a delete per VM: 1000 VMs of the mix '
                     r'living 30 days on average\), more than the 1000000 '
                     r'events a simulation replays; ' % shown)

    def test_samples_are_refused_in_one_line(self):
        status, out, err = clitools.run_cli(
            self, ['simulate', '--mix', 'redis=1', '--lifetime-days',
                   '1000000', '--days', '200000'])
        self.assertEqual(2, status, err)
        self.assertEqual(1, len(err.splitlines()), err)
        self.assertIn('--days 200000 at --sample-days 1: 200000 samples, '
                      'more than the 100000 samples', err)

    def test_help_states_the_limits(self):
        status, out, err = clitools.run_cli(self, ['help', 'simulate'])
        text = ' '.join(out.split())
        self.assertIn('1000000 events', text)
        self.assertIn('100000 samples', text)


class SimulateProgressTestCase(testtools.TestCase):

    ARGS = ['simulate', '--nodes', 'mm-192-512=12', '--nodes', 'dram-384=4',
            '--mix', 'redis=400', '--mix', 'mysql=200', '--days', '200',
            '--lifetime-days', '5', '-f', 'value', '-c', 'kind']

    def test_a_line_per_tenth_off_a_terminal(self):
        status, out, err = clitools.run_cli(self, self.ARGS)
        self.assertEqual(0, status, err)
        lines = err.splitlines()
        self.assertTrue(lines, err)
        self.assertTrue(all(ln.startswith('simulate: [') for ln in lines),
                        lines)
        self.assertLessEqual(len(lines), progress.TENTHS + 1)
        self.assertRegex(lines[-1], r'^simulate: \[(\d+)/\1\] events '
                                    r'replayed$')
        clitools.assert_silent(self, self.ARGS)
