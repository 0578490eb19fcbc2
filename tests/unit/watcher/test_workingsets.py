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
"""The working sets read from Prometheus's HTTP API (no Watcher needed)."""

import urllib.parse

import fixtures
import testtools

from nova_pmem_filters.watcher import workingsets
from tests.unit import httpstub

MB = 1024 * 1024


def vector(*samples):
    return {'status': 'success', 'data': {'resultType': 'vector',
                                          'result': list(samples)}}


def sample(value, **labels):
    return {'metric': labels, 'value': [1767225600.0, value]}


class WorkingSetsTestCase(testtools.TestCase):

    def serve(self, status, answer):
        queries = []

        def app(method, path, headers, body):
            url = urllib.parse.urlsplit(path)
            queries.append((url.path, urllib.parse.parse_qs(url.query)))
            return status, answer
        server = self.useFixture(httpstub.StubServer(app))
        return server.url, queries

    def test_megabytes_by_uuid(self):
        url, queries = self.serve(200, vector(
            sample(str(1536 * MB), uuid='a'), sample('0', uuid='b')))
        self.assertEqual({'a': 1536.0, 'b': 0.0},
                         workingsets.working_sets(url + '/'))
        self.assertEqual([('/api/v1/query', {'query': [workingsets.QUERY]})],
                         queries)

    def test_no_sample_is_no_measurement(self):
        # NaN and infinities are not a working set; the larger of two
        # series of one instance counts.
        url, _ = self.serve(200, vector(
            sample('NaN', uuid='a'), sample('+Inf', uuid='b'),
            sample(str(100 * MB), uuid='c'), sample(str(300 * MB), uuid='c')))
        self.assertEqual({'c': 300.0}, workingsets.working_sets(url))

    def test_series_without_uuid(self):
        url, _ = self.serve(200, vector(sample('1', instance='h:9100')))
        exc = self.assertRaises(workingsets.PrometheusError,
                                workingsets.working_sets, url, 'sum(x)')
        self.assertEqual("Prometheus at %s: a series has no uuid label: "
                         "{'instance': 'h:9100'} (the query must keep the "
                         "observer's uuid label)" % url, str(exc))

    def test_refused_query(self):
        url, _ = self.serve(400, {'status': 'error', 'errorType': 'bad_data',
                                  'error': 'parse error at char 5'})
        exc = self.assertRaises(workingsets.PrometheusError,
                                workingsets.working_sets, url, 'max((')
        self.assertEqual('Prometheus at %s: HTTP 400: parse error at char 5'
                         % url, str(exc))

    def test_not_a_vector(self):
        url, _ = self.serve(200, {'status': 'success', 'data': {
            'resultType': 'matrix', 'result': []}})
        exc = self.assertRaises(workingsets.PrometheusError,
                                workingsets.working_sets, url)
        self.assertIn("expected an instant vector, got 'matrix'", str(exc))

    def test_answer_beyond_the_bound(self):
        # A valid answer, larger than the bound: refused, not decoded.
        self.useFixture(fixtures.MonkeyPatch(
            'nova_pmem_filters.watcher.workingsets.ANSWER_LIMIT', 1000))
        url, _ = self.serve(200, vector(*[
            sample(str(MB), uuid='u%d' % i) for i in range(100)]))
        exc = self.assertRaises(workingsets.PrometheusError,
                                workingsets.working_sets, url)
        self.assertIn('answered more than the 1000 bytes', str(exc))

    def test_unreachable(self):
        url = 'http://127.0.0.1:%d' % httpstub.closed_port()
        exc = self.assertRaises(workingsets.PrometheusError,
                                workingsets.working_sets, url)
        self.assertTrue(str(exc).startswith(
            'Prometheus at %s: cannot be reached (' % url), str(exc))

    def test_no_url(self):
        exc = self.assertRaises(workingsets.PrometheusError,
                                workingsets.working_sets, None)
        self.assertEqual('Prometheus at None: no URL is configured',
                         str(exc))
