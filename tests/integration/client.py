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

Only 127.0.0.1; every wait is bounded.

    python -m tests.integration.client services-up BINARY COUNT
    python -m tests.integration.client wait-providers COUNT
    python -m tests.integration.client wait-consumer QUEUE
"""

import os
import sys
import time

import kombu
import requests

BASE = int(os.environ.get('PMEM_IT_PORT_BASE', '18000'))
COMPUTE_URL = 'http://127.0.0.1:%d/v2.1' % (BASE + 774)
PLACEMENT_URL = 'http://127.0.0.1:%d' % (BASE + 778)
AMQP_URL = 'amqp://guest:guest@127.0.0.1:%d//' % (BASE + 672)
MICROVERSION = 'latest'


class APIError(Exception):
    def __init__(self, response):
        self.status = response.status_code
        self.body = response.text
        super(APIError, self).__init__(
            '%s %s: %s %s' % (response.request.method, response.url,
                              response.status_code, response.text[:300]))


class Client(object):
    """Compute API as one user; ``admin:admin`` is the admin."""

    def __init__(self, token='admin:admin', microversion=MICROVERSION,
                 timeout=60):
        self.session = requests.Session()
        self.session.headers.update({
            'X-Auth-Token': token,
            'OpenStack-API-Version': 'compute %s' % microversion,
            'X-OpenStack-Nova-API-Version': microversion,
        })
        self.timeout = timeout

    def request(self, method, path, body=None, ok=(200, 201, 202, 204)):
        resp = self.session.request(method, COMPUTE_URL + path, json=body,
                                    timeout=self.timeout)
        if resp.status_code not in ok:
            raise APIError(resp)
        return resp.json() if resp.content else None

    def get(self, path):
        return self.request('GET', path)

    def post(self, path, body, ok=(200, 201, 202, 204)):
        return self.request('POST', path, body, ok)

    def put(self, path, body):
        return self.request('PUT', path, body)

    def delete(self, path):
        return self.request('DELETE', path, ok=(202, 204, 404))


class Placement(object):
    def __init__(self, microversion='1.39'):
        self.session = requests.Session()
        self.session.headers.update({
            'X-Auth-Token': 'admin',
            'OpenStack-API-Version': 'placement %s' % microversion,
        })

    def get(self, path):
        resp = self.session.get(PLACEMENT_URL + path, timeout=30)
        if resp.status_code != 200:
            raise APIError(resp)
        return resp.json()


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
