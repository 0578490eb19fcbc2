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
"""The integration client against a server that closes idle connections.

gunicorn closes a keep-alive connection that has been idle for its
keep-alive time; a request the client sends on it at that moment crosses
the close on the wire and is answered with a reset or with nothing. The
server here makes that race certain instead of likely, and independent of
timing: when a test says the keep-alive time has passed
(``expire_idle_connections``), a request that then arrives on a connection
that was idle is not served; the connection is closed, with a FIN or with a
reset (RST). It can also lose the answer to a POST it carried out, or drop a
POST unread.

The server runs in a thread of the test process, in httpstub's accept
loop: socketserver's ``serve_forever`` would hang the test once Nova's test
modules have monkey-patched the process with eventlet.
"""

import collections
import http.server
import json
import re
import socket
import struct
import threading
import urllib.parse
import uuid

import fixtures
import requests
import testtools
from urllib3 import exceptions as urllib3_exceptions

from tests.integration import client
from tests.unit import httpstub


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def setup(self):
        super(_Handler, self).setup()
        self.served = 0
        # The keep-alive period the connection went idle in.
        self.idle_since = None
        with self.server.lock:
            self.server.connections += 1
            self.connection_no = self.server.connections

    def log_message(self, *args):
        pass

    def parse_request(self):
        if not super(_Handler, self).parse_request():
            return False
        if self.server.always_close:
            self._abort('closed')
            return False
        if self.served and self.idle_since != self.server.keepalive_period:
            # gunicorn has closed this connection for idleness by now.
            self._abort('closed idle')
            return False
        return True

    def _record(self, outcome):
        with self.server.lock:
            self.server.log.append({
                'method': self.command, 'path': self.path,
                'outcome': outcome, 'connection': self.connection_no,
                'request_on_connection': self.served + 1})

    def _abort(self, outcome):
        self._record(outcome)
        self.close_connection = True
        if self.server.close == 'rst':
            self.server.reset.add(self.connection)

    def _reply(self, status, body=None):
        data = json.dumps(body).encode() if body is not None else b''
        # Recorded, and the connection idle from now, before the client
        # can read the answer and go on.
        self._record('served %d' % status)
        self.served += 1
        with self.server.lock:
            self.idle_since = self.server.keepalive_period
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path == '/servers':
            query = urllib.parse.parse_qs(url.query)
            pattern = re.compile(query.get('name', [''])[0])
            with self.server.lock:
                found = [s for s in self.server.servers.values()
                         if pattern.search(s['name'])]
            return self._reply(200, {'servers': found})
        return self._reply(200, {'path': url.path})

    def do_DELETE(self):
        server_id = self.path.rsplit('/', 1)[-1]
        with self.server.lock:
            gone = self.server.servers.pop(server_id, None)
        self._reply(204 if gone else 404)

    def do_POST(self):
        length = int(self.headers.get('Content-Length') or 0)
        with self.server.lock:
            fault = (self.server.faults.popleft() if self.server.faults
                     else None)
        if fault == 'drop':
            # Closed before the request was read: nothing happened.
            return self._abort('dropped')
        body = json.loads(self.rfile.read(length) or b'{}')
        with self.server.lock:
            if self.path == '/servers':
                server = {'id': str(uuid.uuid4()),
                          'name': body['server']['name']}
                self.server.servers[server['id']] = server
                answer = {'server': server}
            else:
                self.server.metadata.update(body)
                answer = {'metadata': dict(self.server.metadata)}
        if fault == 'lose_answer':
            # Done, but the answer never leaves.
            return self._abort('answer lost')
        self._reply(202, answer)


class _Server(httpstub.AcceptLoop, http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, close):
        super(_Server, self).__init__(('127.0.0.1', 0), _Handler)
        self.close = close
        self.lock = threading.Lock()
        self.connections = 0
        self.log = []
        self.servers = {}
        self.metadata = {}
        self.faults = collections.deque()
        self.always_close = False
        self.reset = set()
        self.keepalive_period = 0

    def expire_idle_connections(self):
        """The keep-alive time passes: every idle connection is stale now."""
        with self.lock:
            self.keepalive_period += 1

    def shutdown_request(self, request):
        if request in self.reset:
            # Closing with a zero linger sends RST instead of FIN.
            self.reset.discard(request)
            request.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                               struct.pack('ii', 1, 0))
            self.close_request(request)
            return
        super(_Server, self).shutdown_request(request)

    def outcomes(self, method=None):
        with self.lock:
            return [e['outcome'] for e in self.log
                    if method is None or e['method'] == method]


class _ClientTestBase(testtools.TestCase):
    close = 'fin'

    def setUp(self):
        super(_ClientTestBase, self).setUp()
        # Short back-offs; the counts are what is tested.
        self.useFixture(fixtures.MonkeyPatch(
            'tests.integration.client.BACKOFF_FACTOR', 0.01))
        self.useFixture(fixtures.MonkeyPatch(
            'tests.integration.client.RECONCILE_POLL_S', 0.05))
        self.server = _Server(self.close)
        thread = threading.Thread(target=self.server.serve, daemon=True)
        thread.start()
        self.addCleanup(thread.join, 10)
        self.addCleanup(self.server.stop)
        self.url = 'http://127.0.0.1:%d' % self.server.server_address[1]
        client.STATS.reset()
        self.client = client.Client(url=self.url, timeout=10,
                                    reconcile_wait=0.3, auth='test-token')
        self.addCleanup(self.client.session.close)

    def pool_a_connection_and_idle(self):
        """One served GET leaves a pooled connection; then it goes stale."""
        self.assertEqual({'path': '/ping'}, self.client.get('/ping'))
        self.server.expire_idle_connections()

    def stats(self):
        return client.STATS.snapshot()

    def counts(self, *keys):
        # Only the counters a test is about.
        stats = self.stats()
        return tuple(stats.get(key, 0) for key in keys)

    def names(self, name):
        return [s for s in self.server.servers.values() if s['name'] == name]


class StaleConnectionFinTestCase(_ClientTestBase):
    """The server closes the stale connection with a FIN."""

    def test_the_server_reproduces_the_ci_failure(self):
        # A plain pooled session, as the client was: a request after an
        # idle time goes out on the connection the server has closed.
        for method, body in (('GET', None),
                             ('POST', {'server': {'name': 'old'}})):
            session = requests.Session()
            self.addCleanup(session.close)
            session.get(self.url + '/ping', timeout=10)
            self.server.expire_idle_connections()
            self.assertRaises(requests.ConnectionError, session.request,
                              method, self.url + '/servers', json=body,
                              timeout=10)
        self.assertEqual(['served 200', 'closed idle'] * 2,
                         self.server.outcomes())
        self.assertEqual({}, self.server.servers)

    def test_get_is_retried_on_a_new_connection(self):
        self.pool_a_connection_and_idle()
        self.assertEqual({'path': '/again'}, self.client.get('/again'))
        self.assertEqual(['served 200', 'closed idle', 'served 200'],
                         self.server.outcomes('GET'))
        self.assertEqual(2, self.server.connections)
        self.assertEqual(1, self.stats()['retried'])

    def test_delete_is_retried_and_deletes_once(self):
        server = self.client.create_server({'name': 'it-del'})['server']
        self.pool_a_connection_and_idle()
        self.assertIsNone(self.client.delete('/servers/%s' % server['id']))
        # Refused on the stale connection, then done once: 204, not 404.
        self.assertEqual(['closed idle', 'served 204'],
                         self.server.outcomes('DELETE'))
        self.assertEqual([], self.names('it-del'))

    def test_post_never_goes_out_on_a_pooled_connection(self):
        self.pool_a_connection_and_idle()
        server = self.client.create_server({'name': 'it-new'})['server']
        self.assertEqual([server], self.names('it-new'))
        posts = [e for e in self.server.log if e['method'] == 'POST']
        self.assertEqual(1, len(posts))
        self.assertEqual('served 202', posts[0]['outcome'])
        # A connection of its own, opened for it.
        self.assertEqual(1, posts[0]['request_on_connection'])
        self.assertNotIn('closed idle', self.server.outcomes())
        self.assertEqual({}, self.stats())

    def test_back_to_back_posts_each_open_a_connection(self):
        for i in range(3):
            self.client.create_server({'name': 'it-%d' % i})
        posts = [e for e in self.server.log if e['method'] == 'POST']
        self.assertEqual([1, 1, 1],
                         [e['request_on_connection'] for e in posts])
        self.assertEqual(3, len({e['connection'] for e in posts}))

    def test_lost_answer_is_reconciled_not_sent_again(self):
        self.server.faults.append('lose_answer')
        server = self.client.create_server({'name': 'it-lost'})['server']
        self.assertEqual([server], self.names('it-lost'))
        self.assertEqual(['answer lost'], self.server.outcomes('POST'))
        self.assertEqual((1, 0), self.counts('reconciled', 'resent'))

    def test_create_the_server_never_read_is_sent_once_more(self):
        self.server.faults.append('drop')
        server = self.client.create_server({'name': 'it-drop'})['server']
        self.assertEqual([server], self.names('it-drop'))
        self.assertEqual(['dropped', 'served 202'],
                         self.server.outcomes('POST'))
        self.assertEqual((0, 1, 1),
                         self.counts('reconciled', 'not_found', 'resent'))

    def test_plain_post_is_not_sent_again(self):
        self.server.faults.append('lose_answer')
        self.assertRaises(requests.ConnectionError, self.client.post,
                          '/servers', {'server': {'name': 'it-plain'}})
        self.assertEqual(['answer lost'], self.server.outcomes('POST'))
        self.assertEqual(1, len(self.names('it-plain')))
        self.assertEqual({}, self.stats())

    def test_idempotent_post_is_sent_again(self):
        self.server.faults.extend(['drop', 'lose_answer'])
        answer = self.client.post('/meta', {'k': 'v'}, idempotent=True)
        self.assertEqual({'metadata': {'k': 'v'}}, answer)
        self.assertEqual(['dropped', 'answer lost', 'served 202'],
                         self.server.outcomes('POST'))
        self.assertEqual({'resent': 2}, self.stats())

    def test_post_attempts_are_bounded(self):
        self.server.faults.extend(['drop'] * 10)
        self.assertRaises(requests.ConnectionError, self.client.post,
                          '/meta', {'k': 'v'}, idempotent=True)
        self.assertEqual(['dropped'] * client.POST_ATTEMPTS,
                         self.server.outcomes('POST'))

    def test_get_retries_are_bounded(self):
        self.server.always_close = True
        self.assertRaises(requests.ConnectionError, self.client.get, '/ping')
        self.assertEqual(['closed'] * (client.READ_RETRIES + 1),
                         self.server.outcomes('GET'))
        self.assertEqual(client.READ_RETRIES, self.stats()['retried'])

    def test_a_connection_never_made_is_retried_then_raised(self):
        with socket.socket() as sock:
            sock.bind(('127.0.0.1', 0))
            port = sock.getsockname()[1]
        # Nothing listens on the port now.
        nowhere = client.Client(url='http://127.0.0.1:%d' % port, timeout=5,
                                auth='test-token')
        self.addCleanup(nowhere.session.close)
        exc = self.assertRaises(requests.ConnectionError, nowhere.post,
                                '/servers', {'server': {'name': 'x'}},
                                reconcile=lambda: self.fail('reconciled'))
        self.assertFalse(client.may_have_been_sent(exc))
        self.assertEqual(client.CONNECT_RETRIES, self.stats()['retried'])


class StaleConnectionResetTestCase(StaleConnectionFinTestCase):
    """The server resets the stale connection (ECONNRESET, as in CI)."""

    close = 'rst'


class BackoffTestCase(testtools.TestCase):
    """The back-off between retries stops growing at BACKOFF_MAX.

    On urllib3 2 (OpenStack 2026.1 on) and on urllib3 1.26 (2025.1 and
    2025.2), which cap it in different ways.
    """

    def test_the_backoff_is_capped(self):
        retry = client._retry(read=client.READ_RETRIES)
        backoffs = []
        for _ in range(client.CONNECT_RETRIES):
            retry = retry.increment(
                method='GET', url='/servers',
                error=urllib3_exceptions.ConnectTimeoutError())
            backoffs.append(retry.get_backoff_time())
        client.STATS.reset()
        # 0, then BACKOFF_FACTOR doubling, up to the cap and no further.
        self.assertEqual([0, 0.5, 1.0, 2.0, 2.0], backoffs)
        self.assertEqual(2.0, client.BACKOFF_MAX)


class TokenTestCase(testtools.TestCase):
    """Keystone's tokens: issued for a password, renewed once on a 401."""

    def setUp(self):
        super(TokenTestCase, self).setUp()
        self.issued = []
        self.revoked = set()
        self.refuse_all = False
        self.stub = self.useFixture(httpstub.StubServer(self.app))
        client.STATS.reset()

    def app(self, method, path, headers, body):
        if (method, path) == ('POST', '/auth/tokens'):
            auth = json.loads(body)['auth']
            user = auth['identity']['password']['user']
            if user['password'] != 'right':
                return 401, {'error': {'code': 401}}
            token = 'token-%d' % (len(self.issued) + 1)
            self.issued.append((user['name'],
                                auth['scope']['project']['name']))
            return 201, {'token': {'user': {'name': user['name']}}}, {
                'X-Subject-Token': token}
        token = headers.get('X-Auth-Token')
        if token in self.revoked or not token or self.refuse_all:
            return 401, {'error': {'code': 401}}
        return 200, {'token': token}

    def client(self, password='right'):
        creds = client.Credentials('it-member', password, 'it-project')
        tokens = client.Tokens(creds, url=self.stub.url)
        return client.Client(auth=tokens, url=self.stub.url, timeout=10)

    def test_a_token_is_issued_once_and_used(self):
        api = self.client()
        self.assertEqual({'token': 'token-1'}, api.get('/ping'))
        self.assertEqual({'token': 'token-1'}, api.get('/ping'))
        self.assertEqual([('it-member', 'it-project')], self.issued)

    def test_a_revoked_token_is_replaced_once(self):
        api = self.client()
        api.get('/ping')
        self.revoked.add('token-1')
        self.assertEqual({'token': 'token-2'}, api.get('/ping'))
        self.assertEqual(1, client.STATS.snapshot()['token_renewed'])
        # A new token refused too: raised, not asked for again and again.
        self.refuse_all = True
        exc = self.assertRaises(client.APIError, api.get, '/ping')
        self.assertEqual(401, exc.status)
        self.assertEqual(3, len(self.issued))

    def test_a_fixed_token_is_not_renewed(self):
        api = client.Client(auth='gone', url=self.stub.url, timeout=10)
        self.revoked.add('gone')
        exc = self.assertRaises(client.APIError, api.get, '/ping')
        self.assertEqual(401, exc.status)
        self.assertEqual([], self.issued)

    def test_a_wrong_password_is_an_error(self):
        exc = self.assertRaises(client.APIError, self.client('wrong').get,
                                '/ping')
        self.assertEqual(401, exc.status)
        self.assertIn('/auth/tokens', str(exc))
