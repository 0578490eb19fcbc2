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
"""How integration results are judged and counted, without a deployment.

The scenarios run against a real multi-process Nova (tests/integration);
what they conclude from the servers Nova reports, and how CI counts their
checks, is plain code and tested here.
"""

import json
import os

import fixtures
import testtools

from tests.integration import scenarios
from tests.unit import paths


def record(status, fault=None, host=None, claimed=None, t0=0.0, t1=None):
    return {'id': '%08d-0000-0000-0000-000000000000' % id(fault),
            'name': 'it-x', 'status': status, 'fault': fault, 'host': host,
            'claimed': claimed, 't0': t0, 't1': t1}


class IntegrationCountsTestCase(testtools.TestCase):

    def setUp(self):
        super(IntegrationCountsTestCase, self).setUp()
        self.totals = paths.tool('test_totals')
        self.dir = self.useFixture(fixtures.TempDir()).path

    def write(self, content):
        path = os.path.join(self.dir, 'results.json')
        with open(path, 'w') as f:
            f.write(content)
        return path

    def test_counts_each_check(self):
        path = self.write(json.dumps({'checks': [
            {'name': 'a', 'passed': True, 'detail': ''},
            {'name': 'b', 'passed': False, 'detail': 'over-admitted 2'},
            {'name': 'c', 'passed': True}]}))
        passed, failed, skipped, lines = self.totals.integration_counts(
            path)
        self.assertEqual((2, 1, 0), (passed, failed, skipped))
        self.assertIn('integration FAILED: b (over-admitted 2)', lines)

    def test_missing_file_is_a_failure(self):
        passed, failed, _skipped, lines = self.totals.integration_counts(
            os.path.join(self.dir, 'nothing.json'))
        self.assertEqual((0, 1), (passed, failed))
        self.assertIn('did not come up', lines[0])

    def test_garbage_and_empty_results_are_failures(self):
        for content in ('{"checks": [', '[]', '{"rows": []}',
                        '{"checks": []}', '{"checks": [{"passed": true}]}'):
            passed, failed, _skipped, _lines = (
                self.totals.integration_counts(self.write(content)))
            self.assertEqual((0, 1), (passed, failed), content)

    def test_closing_line_adds_integration_checks(self):
        path = self.write(json.dumps({'checks': [
            {'name': 'a', 'passed': True}, {'name': 'b', 'passed': True}]}))
        out = self.useFixture(fixtures.StringStream('stdout'))
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', out.stream))
        rc = self.totals.main(['--repo-url', self.dir, '--check', 'pep8=0',
                               '--integration', path])
        out.stream.flush()
        lines = out.getDetails()['stdout'].as_text().splitlines()
        # No stestr repository here: one failure, plus pep8 and 2 checks.
        self.assertEqual('3 passed, 1 failed, 0 skipped', lines[-1])
        self.assertEqual(1, rc)


class ScenarioJudgementTestCase(testtools.TestCase):

    def setUp(self):
        super(ScenarioJudgementTestCase, self).setUp()
        # The scenarios' progress lines go to stderr.
        self.useFixture(fixtures.MonkeyPatch(
            'tests.integration.scenarios.log', lambda *args: None))

    def test_percentile(self):
        self.assertIsNone(scenarios.percentile([], 50))
        self.assertEqual(2.0, scenarios.percentile([3.0, 1.0, 2.0], 50))
        self.assertEqual(9.55, scenarios.percentile(range(11), 95.5))

    def test_attribution(self):
        cases = [
            (record('ERROR', 'No valid host was found. '), 'race',
             'scheduler decision (NoValidHost)'),
            (record('ERROR', 'MessagingTimeout: Timed out waiting'),
             'fault: kill -9 scheduler worker',
             'Nova: RPC lost (MessagingTimeout)'),
            (record('ERROR'), 'fault: kill -9 + restart compute mm1',
             'Nova: compute restart'),
            (record('STUCK', host='mm1'), 'fault: RabbitMQ restart',
             'Nova: stuck on host mm1'),
            (record('STUCK', claimed=True), 'fault: RabbitMQ restart',
             'Nova: scheduled and claimed, build cast to the compute lost '
             '(no host)'),
            (record('STUCK', claimed=False), 'fault: RabbitMQ restart',
             'Nova: build request lost before scheduling'),
            (record('ERROR', 'Build of instance 1 aborted: Failed to '
                    'allocate the network(s), not rescheduling.'),
             'fault: RabbitMQ restart',
             'Nova: build failed during the fault: Build of instance 1 '
             'aborted: Failed to allocate the network(s), not '
             'rescheduling.'),
            (record('ERROR'), 'race', 'unexplained: (no fault)'),
            (record('ERROR', 'Exceeded maximum number of retries.'), 'race',
             'unexplained: Exceeded maximum number of retries.'),
        ]
        for rec, scenario, expected in cases:
            self.assertEqual(expected, scenarios.attribute(rec, scenario))

    def test_summarize_counts_and_latency(self):
        records = {str(i): rec for i, rec in enumerate([
            record('ACTIVE', t0=0.0, t1=2.0),
            record('ACTIVE', t0=1.0, t1=5.0),
            record('ERROR', 'No valid host was found.', t0=0.0, t1=1.0),
            record('STUCK', claimed=False)])}
        row = scenarios.summarize('s', records, ['POST failed'],
                                  over=(1, 2048.0, {}))
        self.assertEqual(
            (5, 2, 1, 1, 1, 1, 2048, 3.0),
            (row['requests'], row['active'], row['error'], row['stuck'],
             row['api_rejected'], row['over_admitted'],
             row['over_admitted_mb'], row['p50_s']))
        self.assertEqual(1, len(row['stuck_ids']))

    def test_checks(self):
        results = scenarios.Results()
        row = {'scenario': 's', 'requests': 3, 'active': 3, 'stuck': 0,
               'api_rejected': 0, 'stuck_ids': [], 'faults': {},
               'over_admitted': 0, 'over_admitted_mb': 0,
               'per_host': {'mm1': {'instances': 12}}}
        self.assertTrue(results.check_bound(row))
        self.assertTrue(results.check_all_active(row))
        self.assertTrue(results.check_settled(row))
        bad = dict(row, active=2, stuck=1, stuck_ids=['x'],
                   over_admitted=1, over_admitted_mb=16384)
        self.assertFalse(results.check_bound(bad))
        self.assertFalse(results.check_all_active(bad))
        self.assertFalse(results.check_settled(bad))
        self.assertFalse(results.check_all_active(dict(row, requests=0,
                                                       active=0)))
        self.assertEqual([True] * 3 + [False] * 4,
                         [c['passed'] for c in results.checks])

    def test_describe_names_the_fault(self):
        text = scenarios.describe(
            [record('ERROR', 'MessagingTimeout: Timed out waiting for a '
                    'reply to message ID 4468'),
             record('ACTIVE', host='mm1')], ['HTTP 500'])
        self.assertIn('ERROR (MessagingTimeout: Timed out', text)
        self.assertIn('ACTIVE on mm1,', text)
        self.assertIn('API: HTTP 500', text)


class ConsumedQueuesTestCase(testtools.TestCase):
    """After a broker restart: until every service consumes its queues."""

    # Part of what deploy.sh rpc-queues printed in a run of the
    # deployment (rabbitmqctl -s list_queues name consumers, RabbitMQ
    # 3.10), after a scheduler worker had been killed and replaced.
    LISTED = ('compute.mm2 1\n'
              'reply_5f59e119279f46aba964dba0e34433a1 1\n'
              'scheduler_fanout_8abb390aa1cf46719f4301fcb8ca1d02 1\n'
              'compute 4\n'
              'conductor 1\n'
              'scheduler 2\n'
              'scheduler.vm 2\n')

    def test_parse(self):
        self.assertEqual(
            {'compute.mm2': 1,
             'reply_5f59e119279f46aba964dba0e34433a1': 1,
             'scheduler_fanout_8abb390aa1cf46719f4301fcb8ca1d02': 1,
             'compute': 4, 'conductor': 1, 'scheduler': 2,
             'scheduler.vm': 2},
            scenarios.parse_queues(self.LISTED + 'garbage\n\nx y z\n'))
        self.assertEqual({}, scenarios.parse_queues(''))

    def test_waits_until_every_consumer_is_back(self):
        before = scenarios.parse_queues(self.LISTED)
        # The broker down, then back with the services reconnecting one
        # by one: the wait ends at the first listing with all of them.
        listings = [{}, {'conductor': 1},
                    dict(before, scheduler=1),
                    dict(before, extra=3),
                    before]
        now = [0.0]

        def sleep(seconds):
            now[0] += seconds

        waited, missing = scenarios.wait_consumed(
            before, limit=60, read=lambda: listings.pop(0), sleep=sleep,
            clock=lambda: now[0])
        self.assertEqual((3.0, []), (waited, missing))
        self.assertEqual([before], listings)

    def test_names_what_never_came_back(self):
        before = scenarios.parse_queues(self.LISTED)
        now = [0.0]

        def sleep(seconds):
            now[0] += seconds

        waited, missing = scenarios.wait_consumed(
            before, limit=5, read=lambda: dict(before, scheduler=1,
                                               conductor=0),
            sleep=sleep, clock=lambda: now[0])
        self.assertEqual((5.0, ['conductor', 'scheduler']),
                         (waited, missing))
