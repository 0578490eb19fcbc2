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
"""nova-pmem-observe's exporter for a fake compute host of the deployment.

A fake-driver compute runs no QEMU process whose memory could be measured,
so this stands in for the measuring half of ``nova-pmem-observe`` and keeps
its exporting half: the observer's own :class:`~nova_pmem_filters.observe.
prometheus.DocumentCollector`, registry and :func:`~nova_pmem_filters.
observe.prometheus.serve`. On each scrape the observation document is built
again from what really runs on the host, the servers Nova's API says are on
it (so an instance that migrated away leaves its series, one that arrived
gets one), and their working sets from a table the scenario writes
(``{instance uuid: MB}``, JSON; :func:`write_table`). An instance missing
from the table is a gap, as the observer reports one it could not measure.

    python -m tests.integration.observers HOST MODE NEAR_GB PORT TABLE

deploy.sh (``watcher start``) starts one per compute host.
"""

import json
import os
import sys
import threading
import time

from nova_pmem_filters.core.formats import observation
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters import fileutil
from nova_pmem_filters.observe import prometheus
from tests.integration import client as api

# The window a document says it covers; the table is what it measured.
WINDOW_S = 60.0


def read_table(path):
    """{uuid: MB} of the table; empty while the scenario wrote none."""
    try:
        with open(path) as f:
            return {k: float(v) for k, v in json.load(f).items()}
    except FileNotFoundError:
        return {}


def write_table(path, table):
    """Write the working-set table ({uuid: MB}) the observers read."""
    fileutil.write_atomic(path, json.dumps(table, sort_keys=True))


def _instance(server, table):
    flavor = server.get('flavor') or {}
    ram = flavor.get('ram')
    specs = flavor.get('extra_specs') or {}
    ws = table.get(server['id'])
    declared = specs.get('pmem:hot_ratio')
    return {
        'uuid': server['id'],
        'name': server.get('OS-EXT-SRV-ATTR:instance_name'),
        'flavor': flavor.get('original_name'),
        'flavor_ram_mb': ram,
        'flavor_vcpus': flavor.get('vcpus'),
        'pid': None,
        'declared_hot_ratio': float(declared) if declared else None,
        'method': observation.DAMON if ws is not None else None,
        'working_set_mb': ws,
        'hot_ratio': ws / ram if ws is not None and ram else None,
        'numa_mb': {}, 'cell': None,
        'gap': None if ws is not None else 'not in the working-set table',
    }


def document(host, mode, near_mb, servers, table):
    """The observation document of ``host`` with ``servers`` on it."""
    instances = [_instance(s, table) for s in servers]
    measured = [i['working_set_mb'] for i in instances
                if i['working_set_mb'] is not None]
    gaps = [] if len(measured) == len(instances) else [
        'host working set counts %d of %d instances'
        % (len(measured), len(instances))]
    return observation.parse({
        'schema': observation.SCHEMA, 'hostname': host,
        'started': time.strftime(observation.STARTED_FORMAT,
                                 time.gmtime(time.time() - WINDOW_S)),
        'window_s': WINDOW_S,
        'profile': {'pmem_mode': mode, 'near_memory_mb': near_mb},
        'nodes': [{'id': 0, 'cpus': True}],
        'instances': instances,
        'host': {'working_set_mb': sum(measured), 'near_memory_mb': near_mb,
                 'cells': []},
        'far_memory': {'media_read_mb_per_s': None,
                       'media_write_mb_per_s': None,
                       'promote_pages_per_s': None,
                       'demote_pages_per_s': None},
        'gaps': gaps,
    }, '%s observer' % host)


class HostCollector(prometheus.DocumentCollector):
    """The observer's collector, its document rebuilt at each scrape."""

    def __init__(self, host, mode, near_mb, table_path):
        super().__init__()
        self.host = host
        self.mode = mode
        self.near_mb = near_mb
        self.table_path = table_path
        self.nova = api.Client()
        self._scrape = threading.Lock()

    def collect(self):
        with self._scrape:
            servers = self.nova.get(
                '/servers/detail?all_tenants=1&host=%s' % self.host
            )['servers']
            # A server whose migration has not finished is on its source.
            self.update(document(self.host, self.mode, self.near_mb,
                                 servers, read_table(self.table_path)))
        yield from super().collect()


def main(argv):
    host, mode, near_gb, port, table = argv[1:6]
    near_mb = float(near_gb) * profile.MB_PER_GB
    reg = prometheus.registry(HostCollector(host, mode, near_mb, table))
    server = prometheus.serve('127.0.0.1', int(port), reg)
    print('observer of %s on 127.0.0.1:%s, table %s'
          % (host, server.server_address[1], os.path.abspath(table)),
          flush=True)
    threading.Event().wait()


if __name__ == '__main__':
    sys.exit(main(sys.argv))
