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
"""A small client for the integration deployment's compute and placement APIs.

Only 127.0.0.1; every wait is bounded. Each user's requests carry a token
Keystone issued for that user's password (``Tokens``); a token Keystone no
longer accepts (401) is replaced once and the request sent again.

    python -m tests.integration.client services-up BINARY COUNT
    python -m tests.integration.client wait-providers COUNT
    python -m tests.integration.client wait-consumer QUEUE

A server may close a keep-alive connection at the moment the client sends
on it (gunicorn closes one that has been idle for its keep-alive time), and
the request then fails with "Connection reset by peer" or "Remote end
closed connection without response" although nothing is wrong. So:

* idempotent requests (GET, HEAD, PUT, DELETE, OPTIONS) go over pooled
  connections and are retried on a connection error, at most
  ``READ_RETRIES`` times, with a bounded back-off (urllib3's ``Retry``);
* a POST never goes out on a pooled connection that may be stale: each one
  opens a new connection. A connection that could not be opened is retried
  (the request was never sent). When a POST fails after it may have been
  sent, the answer is lost, not the request: a POST the caller marks
  idempotent is sent again; a create is *reconciled*, looked up by its
  unique name, and sent again only if the server does not have it;
  anything else is raised.

``STATS`` counts the retries and reconciliations, so a run can say whether
it needed them.
"""

import collections
import inspect
import os
import re
import sys
import threading
import time

import kombu
import requests
from requests import adapters
from urllib3 import exceptions as urllib3_exceptions
from urllib3.util import retry as urllib3_retry

BASE = int(os.environ.get('PMEM_IT_PORT_BASE', '18000'))
COMPUTE_URL = 'http://127.0.0.1:%d/v2.1' % (BASE + 774)
PLACEMENT_URL = 'http://127.0.0.1:%d' % (BASE + 778)
KEYSTONE_URL = 'http://127.0.0.1:%d/v3' % (BASE + 500)
WATCHER_URL = 'http://127.0.0.1:%d' % (BASE + 322)
PROMETHEUS_URL = 'http://127.0.0.1:%d' % (BASE + 909)
AETOS_URL = 'http://127.0.0.1:%d' % (BASE + 908)
AMQP_URL = 'amqp://guest:guest@127.0.0.1:%d//' % (BASE + 672)
MICROVERSION = 'latest'
REGION = 'RegionOne'

Credentials = collections.namedtuple('Credentials',
                                     'username password project')
# keystone-manage bootstrap's admin (deploy.sh, same default password).
ADMIN = Credentials(
    'admin', os.environ.get('PMEM_IT_ADMIN_PASSWORD', 'pmem-it-admin'),
    'admin')
# A user with the member role only, in a project of its own
# (keystonesetup.py creates it).
MEMBER = Credentials('it-member', 'pmem-it-member', 'it-project')

IDEMPOTENT = frozenset(['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS'])
# Retries of an idempotent request whose connection broke (read) or could
# not be opened (connect); the first retry is immediate, later ones back
# off 0.5, 1, 2 s (BACKOFF_MAX at most).
READ_RETRIES = 3
CONNECT_RETRIES = 5
BACKOFF_FACTOR = 0.25
BACKOFF_MAX = 2.0
# How long a create whose answer was lost is looked for by name before it
# is taken as never received and sent again.
RECONCILE_WAIT_S = 10.0
RECONCILE_POLL_S = 0.5
# Attempts at a POST whose answer was lost (the first included).
POST_ATTEMPTS = 3


class _Stats(object):
    """Thread-safe counters: retried, resent, reconciled, not_found."""

    def __init__(self):
        self._lock = threading.Lock()
        self._counts = collections.Counter()

    def add(self, key, n=1):
        with self._lock:
            self._counts[key] += n

    def snapshot(self):
        with self._lock:
            return dict(self._counts)

    def reset(self):
        with self._lock:
            self._counts.clear()


STATS = _Stats()


# urllib3 2 takes the cap of the back-off as the argument backoff_max;
# urllib3 1.26 (in the upper-constraints of OpenStack 2025.1 and 2025.2)
# only as the class attribute DEFAULT_BACKOFF_MAX, which _CountingRetry
# sets (urllib3 2 ignores it there).
_BACKOFF_MAX_ARGUMENT = 'backoff_max' in inspect.signature(
    urllib3_retry.Retry.__init__).parameters


class _CountingRetry(urllib3_retry.Retry):
    """urllib3's Retry, counting each retry it grants in STATS."""

    DEFAULT_BACKOFF_MAX = BACKOFF_MAX

    def increment(self, *args, **kwargs):
        new_retry = super(_CountingRetry, self).increment(*args, **kwargs)
        STATS.add('retried')
        return new_retry


def _retry(read):
    cap = {'backoff_max': BACKOFF_MAX} if _BACKOFF_MAX_ARGUMENT else {}
    return _CountingRetry(
        total=None, connect=CONNECT_RETRIES, read=read, redirect=0,
        status=0, other=0, allowed_methods=IDEMPOTENT,
        backoff_factor=BACKOFF_FACTOR, raise_on_status=False,
        respect_retry_after_header=False, **cap)


def pooled_session(headers=None):
    """A session whose idempotent requests survive a stale connection."""
    session = requests.Session()
    adapter = adapters.HTTPAdapter(max_retries=_retry(read=READ_RETRIES),
                                   pool_maxsize=32)
    session.mount('http://', adapter)
    session.headers.update(headers or {})
    return session


def _fresh_session(headers):
    # A new session has an empty pool: the request opens a new connection.
    # Only connecting is retried; a POST that may have been sent is not.
    session = requests.Session()
    session.mount('http://', adapters.HTTPAdapter(max_retries=_retry(
        read=False)))
    session.headers.update(headers)
    return session


def may_have_been_sent(exc):
    """False if ``exc`` says the request never left: no connection."""
    if isinstance(exc, requests.ConnectTimeout):
        return False
    reason = getattr(exc.args[0] if exc.args else None, 'reason', None)
    # NewConnectionError (refused, unreachable) is a ConnectTimeoutError.
    return not isinstance(reason, urllib3_exceptions.ConnectTimeoutError)


def issue_token(credentials, url=None, timeout=30):
    """(token, token body): Keystone's answer to a password, project scope.

    A lost answer is asked again: a second token does no harm.
    """
    body = {'auth': {
        'identity': {'methods': ['password'], 'password': {'user': {
            'name': credentials.username, 'password': credentials.password,
            'domain': {'name': 'Default'}}}},
        'scope': {'project': {'name': credentials.project,
                              'domain': {'name': 'Default'}}}}}
    for attempt in range(1, POST_ATTEMPTS + 1):
        try:
            with _fresh_session({}) as session:
                resp = session.post((url or KEYSTONE_URL) + '/auth/tokens',
                                    json=body, timeout=timeout)
        except (requests.ConnectionError, requests.Timeout):
            if attempt == POST_ATTEMPTS:
                raise
            STATS.add('resent')
            continue
        if resp.status_code != 201:
            raise APIError(resp)
        return resp.headers['X-Subject-Token'], resp.json()['token']


class Tokens(object):
    """One user's current token, issued when first needed; thread-safe."""

    def __init__(self, credentials, url=None):
        self.credentials = credentials
        self.url = url
        self._lock = threading.Lock()
        self._token = None

    def get(self):
        with self._lock:
            if self._token is None:
                self._token = issue_token(self.credentials, self.url)[0]
            return self._token

    def invalidate(self, token):
        """Forget ``token`` (refused); the next get() asks for another."""
        with self._lock:
            if self._token == token:
                self._token = None


_TOKENS = {}
_TOKENS_LOCK = threading.Lock()


def tokens_for(credentials):
    """The process's one Tokens of ``credentials``."""
    with _TOKENS_LOCK:
        return _TOKENS.setdefault(credentials, Tokens(credentials))


def _auth_source(auth):
    # A fixed token (a str) or a Tokens for Credentials.
    if isinstance(auth, Credentials):
        return tokens_for(auth)
    return auth


class APIError(Exception):
    def __init__(self, response):
        self.status = response.status_code
        self.body = response.text
        super(APIError, self).__init__(
            '%s %s: %s %s' % (response.request.method, response.url,
                              response.status_code, response.text[:300]))


class Client(object):
    """Compute API as one user (``ADMIN`` unless told otherwise)."""

    def __init__(self, auth=ADMIN, microversion=MICROVERSION,
                 timeout=60, url=None, reconcile_wait=RECONCILE_WAIT_S):
        """A client of ``url`` (the compute API) as one user.

        :param auth: Credentials, whose tokens Keystone issues, or a
            fixed token (a str), sent as it is.
        """
        self.url = url or COMPUTE_URL
        self.auth = _auth_source(auth)
        self.headers = {
            'OpenStack-API-Version': 'compute %s' % microversion,
            'X-OpenStack-Nova-API-Version': microversion,
        }
        self.session = pooled_session(self.headers)
        self.timeout = timeout
        self.reconcile_wait = reconcile_wait

    def request(self, method, path, body=None, ok=(200, 201, 202, 204),
                idempotent=False, reconcile=None):
        """Send one request; the decoded answer, or None if it has none.

        :param idempotent: a POST that may be sent twice (setting metadata
            or extra specs); GET, HEAD, PUT, DELETE and OPTIONS always are.
        :param reconcile: for a POST that creates something: a function
            that returns the answer the POST would have given (the thing,
            found by its unique name) or None if the server does not have
            it. Called when the answer was lost.

        A 401 (the token expired or was revoked) was refused before
        anything was done: with a new token the request is sent again,
        once.
        """
        tokens = self.auth if isinstance(self.auth, Tokens) else None
        for renewed in (False, True):
            token = tokens.get() if tokens else self.auth
            try:
                return self._send(method.upper(), path, body, ok,
                                  idempotent, reconcile,
                                  dict(self.headers, **{'X-Auth-Token':
                                                        token}))
            except APIError as exc:
                if (not tokens or renewed or exc.status != 401
                        or 401 in ok):
                    raise
                tokens.invalidate(token)
                STATS.add('token_renewed')

    def _send(self, method, path, body, ok, idempotent, reconcile, headers):
        if method in IDEMPOTENT:
            resp = self.session.request(method, self.url + path, json=body,
                                        timeout=self.timeout,
                                        headers=headers)
            return self._answer(resp, ok)
        for attempt in range(1, POST_ATTEMPTS + 1):
            try:
                with _fresh_session(headers) as session:
                    resp = session.request(method, self.url + path,
                                           json=body, timeout=self.timeout)
                    return self._answer(resp, ok)
            except (requests.ConnectionError, requests.Timeout) as exc:
                if (attempt == POST_ATTEMPTS or not may_have_been_sent(exc)
                        or not (idempotent or reconcile)):
                    raise
                if reconcile is not None:
                    found = self._reconcile(reconcile)
                    if found is not None:
                        STATS.add('reconciled')
                        return found
                    STATS.add('not_found')
                STATS.add('resent')
                time.sleep(min(BACKOFF_MAX, BACKOFF_FACTOR * 2 ** attempt))

    def _reconcile(self, reconcile):
        # The server may still be working on the request: look for a while.
        deadline = time.monotonic() + self.reconcile_wait
        while True:
            found = reconcile()
            if found is not None or time.monotonic() >= deadline:
                return found
            time.sleep(RECONCILE_POLL_S)

    @staticmethod
    def _answer(resp, ok):
        if resp.status_code not in ok:
            raise APIError(resp)
        return resp.json() if resp.content else None

    def get(self, path):
        return self.request('GET', path)

    def post(self, path, body, ok=(200, 201, 202, 204), idempotent=False,
             reconcile=None):
        return self.request('POST', path, body, ok, idempotent=idempotent,
                            reconcile=reconcile)

    def put(self, path, body):
        return self.request('PUT', path, body)

    def delete(self, path):
        return self.request('DELETE', path, ok=(202, 204, 404))

    # -- creates and actions that survive a lost answer ---------------------

    def create_server(self, body):
        """POST /servers; ``body['name']`` must be unique."""
        name = body['name']

        def find():
            servers = self.get('/servers?name=%s' % _exact(name))['servers']
            servers = [s for s in servers if s['name'] == name]
            return {'server': servers[0]} if servers else None

        return self.post('/servers', {'server': body}, reconcile=find)

    def create_flavor(self, body):
        """POST /flavors; ``body['name']`` must be unique."""
        name = body['name']

        def find():
            flavors = self.get('/flavors/detail?is_public=None')['flavors']
            flavors = [f for f in flavors if f['name'] == name]
            return {'flavor': flavors[0]} if flavors else None

        return self.post('/flavors', {'flavor': body}, reconcile=find)

    def create_aggregate(self, name):
        """POST /os-aggregates; aggregate names are unique in Nova."""
        def find():
            aggs = self.get('/os-aggregates')['aggregates']
            aggs = [a for a in aggs if a['name'] == name]
            return {'aggregate': aggs[0]} if aggs else None

        return self.post('/os-aggregates', {'aggregate': {'name': name}},
                         reconcile=find)

    def aggregate_host(self, agg_id, action, host):
        """add_host or remove_host; done if the host is (not) in it."""
        want = action == 'add_host'

        def find():
            agg = self.get('/os-aggregates/%s' % agg_id)['aggregate']
            return {'aggregate': agg} if (host in agg['hosts']) == want \
                else None

        return self.post('/os-aggregates/%s/action' % agg_id,
                         {action: {'host': host}}, reconcile=find)

    def set_metadata(self, agg_id, meta):
        return self.post('/os-aggregates/%s/action' % agg_id,
                         {'set_metadata': {'metadata': meta}},
                         idempotent=True)


def _exact(name):
    # Nova matches the name filter as a regular expression.
    return requests.utils.quote('^%s$' % re.escape(name), safe='')


class Placement(object):
    def __init__(self, microversion='1.39', auth=ADMIN):
        self.tokens = tokens_for(auth)
        self.session = pooled_session({
            'OpenStack-API-Version': 'placement %s' % microversion,
        })

    def get(self, path):
        for _attempt in range(2):
            token = self.tokens.get()
            resp = self.session.get(PLACEMENT_URL + path, timeout=30,
                                    headers={'X-Auth-Token': token})
            if resp.status_code != 401:
                break
            self.tokens.invalidate(token)
        if resp.status_code != 200:
            raise APIError(resp)
        return resp.json()


def cloud_config(credentials=ADMIN):
    """The deployment as a clouds.yaml cloud: password auth, the catalog."""
    return {
        'auth_type': 'password',
        'auth': {'auth_url': KEYSTONE_URL,
                 'username': credentials.username,
                 'password': credentials.password,
                 'project_name': credentials.project,
                 'user_domain_name': 'Default',
                 'project_domain_name': 'Default'},
        'region_name': REGION,
        'interface': 'public',
        # As devstack's clouds.yaml says; the openstack client needs it.
        'identity_api_version': 3,
    }


def services_up(binary, count, timeout=120):
    client = Client()
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            services = client.get('/os-services?binary=%s' % binary)
            up = [s for s in services['services'] if s['state'] == 'up']
            if len(up) >= count:
                return
        except (requests.RequestException, APIError):
            pass
        time.sleep(1)
    sys.exit('%s: fewer than %d up after %ds' % (binary, count, timeout))


def wait_providers(count, timeout=120):
    """Wait for COUNT compute node providers with near-memory inventory."""
    placement = Placement()
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            rps = placement.get('/resource_providers')['resource_providers']
            ready = 0
            for rp in rps:
                inv = placement.get('/resource_providers/%s/inventories'
                                    % rp['uuid'])['inventories']
                if 'CUSTOM_NEAR_MEMORY_MB' in inv and 'MEMORY_MB' in inv:
                    ready += 1
            if ready >= count:
                return
        except (requests.RequestException, APIError):
            pass
        time.sleep(1)
    sys.exit('fewer than %d providers with CUSTOM_NEAR_MEMORY_MB after %ds'
             % (count, timeout))


def wait_consumer(queue, timeout=60):
    """Wait until a service consumes from QUEUE on the broker.

    An RPC call sent to a queue nobody has declared yet is dropped, and
    the caller waits its whole timeout: nova-compute's first call to the
    conductor did exactly that when the computes started with it.
    """
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with kombu.Connection(AMQP_URL, connect_timeout=5) as conn:
                _name, _messages, consumers = conn.default_channel \
                    .queue_declare(queue=queue, passive=True)
                if consumers:
                    return
        except Exception:  # not declared yet, broker not ready
            pass
        time.sleep(0.5)
    sys.exit('no consumer on queue %s after %ds' % (queue, timeout))


def main(argv):
    if argv[1] == 'services-up':
        services_up(argv[2], int(argv[3]))
    elif argv[1] == 'wait-providers':
        wait_providers(int(argv[2]))
    elif argv[1] == 'wait-consumer':
        wait_consumer(argv[2])
    else:
        sys.exit('unknown command %s' % argv[1])


if __name__ == '__main__':
    main(sys.argv)
