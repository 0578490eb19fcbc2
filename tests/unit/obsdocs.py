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
"""Observation documents as nova-pmem-observe writes them, for the tests.

Every document is checked with the core's parser, so a test cannot feed
its readers a file the observer would not write; :func:`document` returns
it as the readers get it (an ``observation.Observation``) and :func:`write`
writes it as the observer does (``observation.dumps``).
"""

import os

from nova_pmem_filters.core.formats import observation
from nova_pmem_filters.core.rules import tiering as core_tiering


def instance(uuid, flavor, ram_mb, hot_ratio, numa_mb=None, cell=0,
             name=None):
    """A measured instance: working set = hot ratio x flavor RAM."""
    return {
        'uuid': uuid, 'name': name or 'instance-%s' % uuid,
        'flavor': flavor, 'flavor_ram_mb': ram_mb, 'flavor_vcpus': 2,
        'pid': 1000, 'method': 'damon',
        'working_set_mb': round(hot_ratio * ram_mb, 1),
        'hot_ratio': hot_ratio,
        'numa_mb': numa_mb if numa_mb is not None else {'0': float(ram_mb)},
        'cell': cell, 'gap': None}


def tiering(numa_balancing=2, demotion_enabled=True, rate_limit=65536,
            tiers=((4, (0,)), (22, (2,))), far_nodes=(2,), cpu_nodes=(0,),
            rates=None, node_rates=None, kernel='6.9.0-1-amd64',
            cgroup=None):
    """A document's ``tiering`` section, judged by the core.

    :param rates: {vmstat counter: per second}.
    :param cgroup: the cpuset's hierarchy (``v1``, ``v2``, None).
    """
    state = core_tiering.State(
        kernel=kernel, numa_balancing=numa_balancing,
        demotion_enabled=demotion_enabled,
        promotion_rate_limit_mbps=rate_limit, tiers=tiers, cgroup=cgroup)
    entry, _verdict = observation.Tiering.of(
        state, cpu_nodes, far_nodes, rates=rates, node_rates=node_rates)
    return entry.to_dict()


def document(hostname, instances, started='2026-11-25T12:00:00Z',
             near_memory_mb=None, cells=(), nodes=None, tiering=None):
    """One host's window; its working set is that of its instances.

    :param instances: dicts, as :func:`instance` makes them.
    :param tiering: the ``tiering`` section (:func:`tiering`), or None.
    """
    working = sum(i['working_set_mb'] or 0 for i in instances)
    doc = {
        'schema': observation.SCHEMA, 'hostname': hostname,
        'started': started, 'window_s': 60.0,
        'profile': None,
        'nodes': nodes if nodes is not None else [{'id': 0, 'cpus': True}],
        'instances': list(instances),
        'host': {'working_set_mb': working,
                 'near_memory_mb': near_memory_mb, 'cells': list(cells)},
        'far_memory': {'media_read_mb_per_s': None,
                       'media_write_mb_per_s': None,
                       'promote_pages_per_s': None,
                       'demote_pages_per_s': None},
        'gaps': []}
    if tiering is not None:
        doc['tiering'] = tiering
    return observation.parse(doc, hostname)


def write(directory, docs):
    """Write ``docs`` as <hostname>-<n>.json files; returns ``directory``."""
    os.makedirs(directory, exist_ok=True)
    for n, doc in enumerate(docs):
        path = os.path.join(directory, '%s-%02d.json' % (doc.hostname, n))
        with open(path, 'w', encoding='utf-8') as f:
            f.write(observation.dumps(doc))
    return directory
