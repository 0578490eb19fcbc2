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
"""What the plugin adds to one ``select_destinations``, end to end.

``scheduler_overhead.py`` times each class of ours against one of Nova's;
this benchmark answers the operator's question: how much longer does one
scheduling request take with the plugin enabled than without it? It runs
Nova's own ``nova.scheduler.manager.SchedulerManager.select_destinations``
in-process, in the same run, with two configurations:

* **Nova**: the defaults of nova.conf, ``[filter_scheduler]
  enabled_filters`` (ComputeFilter, ComputeCapabilitiesFilter,
  ImagePropertiesFilter, ServerGroupAntiAffinityFilter,
  ServerGroupAffinityFilter) and ``weight_classes``
  (``nova.scheduler.weights.all_weighers``: all thirteen of Nova's
  weighers);
* **Nova + plugin**: the same plus PmemModeFilter and PmemCacheFilter at the
  end of ``enabled_filters`` and ``nova_pmem_filters.weighers.all_weighers``
  (PmemTierWeigher, PmemCacheHeadroomWeigher, PmemNumaCellWeigher) in
  ``weight_classes``, as the devstack plugin and ``doc/source/install.rst``
  configure them.

For the NUMA-bound flavor both configurations also enable Nova's
NUMATopologyFilter: without it no filter of Nova's checks that a
``hw:numa_nodes`` request fits the host's cells, and a cloud that offers
such flavors enables it (``--numa-without-ntf`` leaves it out of both).

Each configuration is a real SchedulerManager with its own HostManager,
built from nova.conf as nova-scheduler builds it, and every request goes
through Nova's whole code path: the request filters
(``request_filter.process_reqspec``), ``resources_from_request_spec``, the
allocation candidates by provider, ``HostManager.get_host_states_by_uuids``
(new HostStates for every request, each ``update``\\ d from its ComputeNode
and service, with its aggregates and instances), ``get_filtered_hosts``,
``get_weighed_hosts``, the claim, ``HostState.consume_from_request`` for each
instance of a multi-create, and the alternates
(``[scheduler] max_attempts`` = 3). The hosts, their aggregates and their
instances are those of ``scheduler_overhead.py`` (``Cloud`` and, for the
NUMA-bound flavor, ``NumaCloud``: memory_mode hosts with two real NUMA
cells). The instances are known to the HostManager as
``[filter_scheduler] track_instance_changes`` (the default) keeps them
after nova-compute's first sync: one dict per host, the same for every
request, of Instance objects without their flavor.

What touches a database, Placement or RPC is replaced, and left out of the
times:

* ``HostManager._get_computes_for_cells`` (one query per cell for the
  compute nodes and services) returns the ComputeNode and Service objects
  built once, rather than new ones per request;
* the Placement client answers ``get_allocation_candidates`` with one
  candidate per host for every host (as with ``[scheduler]
  max_placement_results`` at least the number of hosts; Nova's default of
  1,000 would give the scheduler at most 1,000 hosts whatever the size of
  the cloud), already decoded from JSON, and ``claim_resources`` succeeds
  without a request;
* ``objects.service.get_minimum_version_all_cells`` (the request filter
  ``owner_nova_filter``) returns this Nova's service version;
* notifications go through oslo.messaging's fake transport with no
  notification driver (nova.conf's default);
* the ledger's batched flavor load is ``scheduler_overhead``'s counting
  stand-in; a warm-up request per configuration fills a new ledger for
  each request kind, and the timed requests must make no query but the
  ledger's reload of each cell when its records are older than ``[pmem]
  instance_cache_ttl``.

So the times are Nova's CPU work per request without the database and
Placement round trips, which add to both configurations alike: the ratios
are upper bounds of what a real request sees.

The requests: a plain flavor (no extra specs), a ``pmem:`` flavor
(``pmem:modes``, ``pmem:hot_ratio``, ``pmem:priority``), a NUMA-bound one
(``hw:numa_nodes=1``), a multi-create of 10 instances of the ``pmem:``
flavor (``num_instances=10``: ten passes over the hosts, and one more for
the alternates) and, as ``room``, the plain flavor again on the same hosts
each holding half its instances: there our filters reject (almost) no host
for the weighers after them, where in the first cloud PmemCacheFilter
rejects those whose cache is full. Each round runs one request per
configuration, alternating which goes first, on a new RequestSpec built as
the API builds it (``RequestSpec.from_components``) and passed through
serialisation as RPC passes it. What lives through the run is frozen out
of the garbage collector's walks, which are off while a request runs; its
time includes freeing what it leaves: Nova's HostStates as it returns, and
the RequestSpec, a reference cycle that holds what our classes keep of the
request, by a pass of the collector over the youngest objects. The ratio
is the best round of Nova + plugin over the best round of Nova (the median
of the rounds' own ratios is printed too). The targets: at most
``TARGET_RATIO`` (1.10) for the plain and ``pmem:`` flavors (``room`` too)
and the multi-create, ``NUMA_TARGET_RATIO`` (1.25) for the NUMA-bound
flavor. Every instance must be placed.

The breakdown gives, for each configuration, the best over the rounds of
each part (so the parts need not add up to the best total): HostManager
(``_get_host_states``), Nova's filters, ours, the filter handler (Nova's
bookkeeping per filter and host, and the deep copy of each host's
allocation candidates), Nova's weighers, ours (``weigh_objects``), the
weigher handler (per weigher and host: normalisation, the
``weight_multiplier`` of each weigher, Nova's log data; and the sort) and
the rest of ``select_destinations``. A host our filters reject is one
fewer for every weigher; ``--classes`` adds each class. The handler's cost
per weigher and host weighed is printed, and that of each weigher's
``weight_multiplier`` (timed apart, outside the rounds), which the handler
calls for every weigher and host.

Run::

    python benchmarks/scheduler_request.py             # 1,000 and 10,000
    python benchmarks/scheduler_request.py --cpu-time  # on a busy machine
    python benchmarks/scheduler_request.py --sizes 1000 --classes --profile
    python benchmarks/scheduler_request.py --cases plain,room --no-fail

The exit status is 1 when a target is missed, unless ``--no-fail``.
"""

import argparse
import collections
import cProfile
import datetime
import gc
import io
import logging
import os
import platform
import pstats
import random
import statistics
import sys
import time
from unittest import mock
import uuid as uuid_lib

import nova.conf
from nova import context as nova_context
from nova import objects
from nova import rpc
from nova.scheduler.client import report
from nova.scheduler import host_manager
from nova.scheduler import manager
from nova import version as nova_version
from nova.virt import hardware
from oslo_messaging.rpc import dispatcher as messaging_dispatcher
from oslo_messaging import transport as messaging_transport

from nova_pmem_filters.core.rules import classes
from nova_pmem_filters.scheduler import ledger

import scheduler_overhead as overhead

CONF = nova.conf.CONF

# select_destinations with the plugin over without it, best rounds.
TARGET_RATIO = 1.10
NUMA_TARGET_RATIO = 1.25
MULTI_CREATE = 10

# The flavors of the requests: (case, name, memory_mb, extra specs,
# instances).
PMEM_SPECS = {
    'pmem:modes': 'dram,memory_mode',
    'pmem:hot_ratio': '0.25',
    'pmem:priority': 'low',
}
CASES = [
    ('plain', 'm1.xlarge', 16384, {}, 1),
    ('pmem', 'redis.capacity', 16384, PMEM_SPECS, 1),
    ('numa', 'db.numa', 32768, {
        'hw:numa_nodes': '1',
        'pmem:modes': 'dram,memory_mode',
        'pmem:hot_ratio': '0.25',
        'pmem:priority': 'high',
    }, 1),
    ('multi', 'redis.capacity', 16384, PMEM_SPECS, MULTI_CREATE),
    # The plain flavor again, on the same hosts holding half their
    # instances: our filters reject (almost) none, so that every host is
    # one more for each of our weighers.
    ('room', 'm1.xlarge', 16384, {}, 1),
]
CASE_NAMES = [case[0] for case in CASES]
# The share of its instances each host keeps in the 'room' case.
ROOM_SHARE = 0.5

NOVA = 'Nova'
PLUGIN = 'Nova + plugin'
NTF = 'NUMATopologyFilter'

# The parts of a request, in the order of the breakdown.
HOST_STATES = 'HostManager: host states'
NOVA_FILTERS = "Nova's filters"
OUR_FILTERS = 'our filters'
FILTER_HANDLER = 'filter handler, candidates'
NOVA_WEIGHERS = "Nova's weighers"
OUR_WEIGHERS = 'our weighers'
WEIGHER_HANDLER = 'weigher handler, sort'
REST = 'rest of select_destinations'
PARTS = [HOST_STATES, NOVA_FILTERS, OUR_FILTERS, FILTER_HANDLER,
         NOVA_WEIGHERS, OUR_WEIGHERS, WEIGHER_HANDLER, REST]
PER_WEIGHER_HOST = 'weigher handler per weigher and host'
# Stage timers, around HostManager's methods.
FILTER_STAGE = 'get_filtered_hosts'
WEIGH_STAGE = 'get_weighed_hosts'

# time.perf_counter, or time.thread_time with --cpu-time.
TIMER = time.perf_counter


def ours(obj):
    return type(obj).__module__.startswith('nova_pmem_filters')


class Probe(object):
    """Seconds spent in each part of the requests of one configuration.

    Wraps, on one HostManager, ``_get_host_states``, the two stages and
    each filter's ``filter_all`` and weigher's ``weigh_objects``: one timer
    call per class and pass, not per host.
    """

    def __init__(self, host_mgr):
        self.seconds = collections.Counter()
        # Hosts each filter returned, first pass of the last request.
        self.passed = []
        # Hosts weighed, over the passes of the last request.
        self.weighed = [0]
        self._wrap(host_mgr, '_get_host_states', HOST_STATES)
        self._wrap(host_mgr, 'get_filtered_hosts', FILTER_STAGE)
        self._wrap(host_mgr, 'get_weighed_hosts', WEIGH_STAGE)
        for filter_ in host_mgr.enabled_filters:
            self._wrap(filter_, 'filter_all', type(filter_).__name__,
                       materialise=True)
        for weigher in host_mgr.weighers:
            self._wrap(weigher, 'weigh_objects', type(weigher).__name__)
        self.filters = [type(f).__name__ for f in host_mgr.enabled_filters]
        self.our_filters = [type(f).__name__
                            for f in host_mgr.enabled_filters if ours(f)]
        self.weighers = [type(w).__name__ for w in host_mgr.weighers]
        self.our_weighers = [type(w).__name__
                             for w in host_mgr.weighers if ours(w)]

    def _wrap(self, obj, method, label, materialise=False):
        func = getattr(obj, method)
        seconds = self.seconds
        passed = self.passed
        weighed = self.weighed if label == WEIGH_STAGE else None

        def timed(*args, **kwargs):
            if weighed is not None:
                weighed[0] += len(args[0])
            start = TIMER()
            try:
                result = func(*args, **kwargs)
                if materialise and result is not None:
                    # Nova's filters are generators: what they cost is
                    # spent when the handler lists them.
                    result = list(result)
                    passed.append((label, len(result)))
                return result
            finally:
                seconds[label] += TIMER() - start

        setattr(obj, method, timed)

    def reset(self):
        self.seconds.clear()
        del self.passed[:]
        self.weighed[0] = 0

    def parts(self, total):
        """The request's seconds, split into PARTS."""
        secs = self.seconds
        nova_filters = sum(secs[name] for name in self.filters
                           if name not in self.our_filters)
        our_filters = sum(secs[name] for name in self.our_filters)
        nova_weighers = sum(secs[name] for name in self.weighers
                            if name not in self.our_weighers)
        our_weighers = sum(secs[name] for name in self.our_weighers)
        parts = {
            HOST_STATES: secs[HOST_STATES],
            NOVA_FILTERS: nova_filters,
            OUR_FILTERS: our_filters,
            FILTER_HANDLER: secs[FILTER_STAGE] - nova_filters - our_filters,
            NOVA_WEIGHERS: nova_weighers,
            OUR_WEIGHERS: our_weighers,
            WEIGHER_HANDLER: (secs[WEIGH_STAGE] - nova_weighers
                              - our_weighers),
        }
        parts[REST] = total - sum(parts.values())
        # Nova's handler per weigher and host weighed, in seconds.
        parts[PER_WEIGHER_HOST] = parts[WEIGHER_HANDLER] / max(
            1, self.weighed[0] * len(self.weighers))
        return parts

    def classes(self):
        """{class name: seconds} of the request."""
        return {name: self.seconds[name]
                for name in self.filters + self.weighers}


class Deployment(object):
    """What the databases and Placement tell the scheduler of a cloud.

    Built once from a ``scheduler_overhead`` cloud: the compute nodes by
    cell, a service record per host, the aggregates and the instances of
    each host, and one allocation candidate and provider summary per
    compute node.
    """

    def __init__(self, cloud, now, share=1.0):
        """:param share: the share of its instances each host keeps."""
        self.cloud = cloud
        self.size = len(cloud.hosts)
        self.computes_by_cell = collections.defaultdict(list)
        self.services = {}
        self.aggs_by_id = {}
        self.host_aggregates_map = collections.defaultdict(set)
        self.instance_info = {}
        self.alloc_reqs = []
        self.summaries = {}
        self.mode_of = {}
        for index, (host_state, compute) in enumerate(
                zip(cloud.hosts, cloud.computes)):
            host = host_state.host
            self.computes_by_cell[host_state.cell_uuid].append(compute)
            self.services[host] = objects.Service(
                id=index + 1, uuid=str(uuid_lib.uuid4()), host=host,
                binary='nova-compute', topic='compute', report_count=1000,
                disabled=False, disabled_reason=None, forced_down=False,
                last_seen_up=now,
                created_at=now - datetime.timedelta(days=90),
                updated_at=now, deleted=False, deleted_at=None)
            for agg in host_state.aggregates:
                self.aggs_by_id[agg.id] = agg
                self.host_aggregates_map[host].add(agg.id)
            instances = host_state.instances
            if share < 1.0:
                instances = dict(list(instances.items())[
                    :int(len(instances) * share)])
            self.instance_info[host] = {'instances': instances,
                                        'updated': True}
            self.mode_of[host] = getattr(cloud, 'mode_of', {}).get(
                host, 'memory_mode')
            self.alloc_reqs.append({
                'allocations': {compute.uuid: {'resources': {
                    'VCPU': 4, 'MEMORY_MB': 16384, 'DISK_GB': 40}}},
                'mappings': {'': [compute.uuid]},
            })
            self.summaries[compute.uuid] = {
                'resources': {
                    'VCPU': {'capacity': compute.vcpus * 4,
                             'used': compute.vcpus_used},
                    'MEMORY_MB': {'capacity': compute.memory_mb,
                                  'used': compute.memory_mb_used},
                    'DISK_GB': {'capacity': compute.local_gb,
                                'used': compute.local_gb_used},
                },
                'traits': ['COMPUTE_STATUS_ENABLED', 'OWNER_NOVA'],
                'parent_provider_uuid': None,
                'root_provider_uuid': compute.uuid,
            }
        self.cells = {cell: objects.CellMapping(
            uuid=cell, name='cell%d' % number, disabled=False,
            transport_url='fake:/', database_connection='sqlite://')
            for number, cell in enumerate(self.computes_by_cell, start=1)}

    def heartbeat(self):
        """Every compute service reported just now, as live ones do."""
        now = datetime.datetime.now(datetime.timezone.utc)
        for service in self.services.values():
            service.last_seen_up = now

    def computes_for_cells(self, context, cells, compute_uuids):
        """``HostManager._get_computes_for_cells`` without the queries."""
        wanted = None if compute_uuids is None else set(compute_uuids)
        compute_nodes = collections.defaultdict(list)
        for cell, computes in self.computes_by_cell.items():
            compute_nodes[cell].extend(
                c for c in computes if wanted is None or c.uuid in wanted)
        return compute_nodes, self.services


class PlacementStandIn(object):
    """The scheduler's Placement client: candidates for every host."""

    def __init__(self):
        self.deployment = None
        self.claims = 0

    def get_allocation_candidates(self, context, resources):
        deployment = self.deployment
        # New containers per answer, as the client decodes a new body.
        return (list(deployment.alloc_reqs), dict(deployment.summaries),
                '1.39')

    def claim_resources(self, context, consumer_uuid, alloc_request,
                        project_id, user_id, allocation_request_version,
                        consumer_generation=None):
        self.claims += 1
        return True


def make_scheduler(deployment, enabled_filters, weight_classes):
    """A SchedulerManager configured by nova.conf, over ``deployment``."""
    CONF.set_override('enabled_filters', enabled_filters,
                      group='filter_scheduler')
    CONF.set_override('weight_classes', weight_classes,
                      group='filter_scheduler')
    try:
        # The cell, aggregate and instance caches are read from the API
        # and cell databases at start-up: given below instead.
        with mock.patch.object(host_manager.HostManager,
                               'refresh_cells_caches'), \
                mock.patch.object(host_manager.HostManager,
                                  '_init_aggregates'), \
                mock.patch.object(host_manager.HostManager,
                                  '_init_instance_info'):
            scheduler = manager.SchedulerManager()
    finally:
        CONF.clear_override('enabled_filters', group='filter_scheduler')
        CONF.clear_override('weight_classes', group='filter_scheduler')
    host_mgr = scheduler.host_manager
    host_mgr.cells = dict(deployment.cells)
    host_mgr.enabled_cells = list(deployment.cells.values())
    host_mgr.host_to_cell_uuid = {}
    host_mgr.aggs_by_id = deployment.aggs_by_id
    host_mgr.host_aggregates_map = deployment.host_aggregates_map
    host_mgr._instance_info = deployment.instance_info
    host_mgr._get_computes_for_cells = deployment.computes_for_cells
    return scheduler


class Configuration(object):
    """One scheduler configuration and the rounds timed with it."""

    def __init__(self, label, deployment, enabled_filters, weight_classes):
        self.label = label
        self.scheduler = make_scheduler(deployment, enabled_filters,
                                        weight_classes)
        self.probe = Probe(self.scheduler.host_manager)
        # One (total seconds, {part: seconds}, {class: seconds}) a round.
        self.rounds = []

    def request(self, ctxt, spec, uuids):
        """The selections of the instances; none on NoValidHost."""
        try:
            return self.scheduler.select_destinations(
                ctxt, spec_obj=spec, instance_uuids=uuids,
                return_objects=True, return_alternates=True)
        except messaging_dispatcher.ExpectedException:
            return []

    def timed(self, ctxt, make, deployment):
        """One timed request; the mode of the host of each instance.

        What the request leaves to free is freed within the time: Nova
        frees its HostStates as the request returns, and a RequestSpec
        (in a reference cycle, with what our classes keep of the request)
        at the collector's next pass over the youngest objects, which is
        run here.

        :param make: a function making the request's (RequestSpec,
            instance UUIDs), as RPC hands them to the scheduler.
        """
        self.probe.reset()
        gc.collect()
        gc.disable()
        try:
            spec, uuids = make()
            start = TIMER()
            selections = self.request(ctxt, spec, uuids)
            del spec
            gc.collect(0)
            total = TIMER() - start
        finally:
            gc.enable()
        self.rounds.append((total, self.probe.parts(total),
                            self.probe.classes()))
        return chosen(selections, deployment), len(selections)

    @property
    def best_s(self):
        return min(r[0] for r in self.rounds)

    @property
    def median_s(self):
        return statistics.median(r[0] for r in self.rounds)

    def best_of(self, key, index=1):
        """The best of the rounds for one part (1) or class (2).

        The parts of a request do not all have their best in one round.
        """
        return min(r[index].get(key, 0.0) for r in self.rounds)


def make_request(ctxt, flavor, image, instances):
    """A RequestSpec as the API builds it and the scheduler receives it.

    :returns: (RequestSpec, instance UUIDs).
    """
    uuids = [str(uuid_lib.uuid4()) for _ in range(instances)]
    spec = objects.RequestSpec.from_components(
        ctxt, uuids[0], image, flavor,
        hardware.numa_get_constraints(flavor, image),
        objects.InstancePCIRequests(requests=[]),
        {'scheduler_hints': {}}, None, None,
        project_id='bench', user_id='bench')
    spec.num_instances = instances
    spec.network_metadata = objects.NetworkMetadata(physnets=set(),
                                                    tunneled=False)
    # What conductor's RPC call to the scheduler carries over.
    spec = objects.RequestSpec.obj_from_primitive(spec.obj_to_primitive())
    return spec, uuids


def multiplier_costs(config, ctxt, deployment):
    """us per host of each weigher's ``weight_multiplier``, untimed run.

    Nova's handler calls it for every weigher and host weighed, on the
    HostStates of a request.
    """
    host_mgr = config.scheduler.host_manager
    deployment.heartbeat()
    hosts = list(host_mgr.get_host_states_by_uuids(
        ctxt, list(deployment.summaries), None))
    costs = {}
    for weigher in host_mgr.weighers:
        multiplier = weigher.weight_multiplier
        best = None
        for _ in range(3):
            start = TIMER()
            for host_state in hosts:
                multiplier(host_state)
            seconds = TIMER() - start
            best = seconds if best is None else min(best, seconds)
        costs[type(weigher).__name__] = best * 1e6 / len(hosts)
    return costs


def chosen(selections, deployment):
    """'mode count, ...' of the hosts chosen for the instances."""
    modes = collections.Counter(
        deployment.mode_of[alternates[0].service_host]
        for alternates in selections)
    return ', '.join('%s %d' % kv for kv in sorted(modes.items()))


def run_case(case, deployment, configs, ctxt, database, repeats, out,
             classes_, profile):
    name, flavor_name, memory_mb, extra_specs, instances = case
    flavor = overhead.make_flavor(300 + CASE_NAMES.index(name), flavor_name,
                                  memory_mb, extra_specs)
    image = overhead.make_image_meta()
    target = NUMA_TARGET_RATIO if name == 'numa' else TARGET_RATIO
    nova, plugin = configs
    failures = []
    for config in configs:
        config.rounds = []

    # Warm-up, untimed: a new process's ledger (its first load of each
    # cell's flavors), Nova's lock objects.
    ledger.LEDGER = ledger.HotRamLedger()
    for config in configs:
        deployment.heartbeat()
        config.request(ctxt, *make_request(ctxt, flavor, image, instances))
    database.reset_counts()
    loaded = time.monotonic()
    picks = {}
    for index in range(repeats):
        # Each configuration goes first in every other round.
        order = configs if index % 2 == 0 else configs[::-1]
        for config in order:
            deployment.heartbeat()
            picks[config.label] = (
                config.timed(ctxt, lambda: make_request(
                    ctxt, flavor, image, instances), deployment),
                list(config.probe.passed))
    queries = (sum(database.batched.values()),
               sum(database.lazy.values()))
    # The ledger reads each cell's flavors again when its records are
    # older than instance_cache_ttl, as in a scheduler that runs on.
    reloads = len(deployment.computes_by_cell) * int(
        (time.monotonic() - loaded) // CONF.pmem.instance_cache_ttl)

    specs = ', '.join('%s=%s' % kv for kv in sorted(extra_specs.items()))
    out('')
    out('-- %s: %s, %d MB%s, %d instance(s); %s hosts; %d rounds --' % (
        name, flavor_name, memory_mb, ', ' + specs if specs else '',
        instances, format(deployment.size, ','), repeats))
    ratio = plugin.best_s / nova.best_s
    # The two requests of a round ran under about the same load.
    paired = statistics.median(
        p[0] / n[0] for n, p in zip(nova.rounds, plugin.rounds))
    out('%-31s %10s %14s %9s' % ('ms per request', NOVA, PLUGIN,
                                 'ratio'))
    verdict = 'PASS' if ratio <= target else 'FAIL'
    out('%-31s %10.1f %14.1f %8.3fx  target <= %.2fx  %s' % (
        'select_destinations, best', nova.best_s * 1e3,
        plugin.best_s * 1e3, ratio, target, verdict))
    out('%-31s %10.1f %14.1f %8.3fx  (median of the rounds\' ratios: '
        '%.3fx)' % ('  median', nova.median_s * 1e3, plugin.median_s * 1e3,
                    plugin.median_s / nova.median_s, paired))
    out('  breakdown, best of each part over the rounds:')
    for part in PARTS:
        mine, theirs = plugin.best_of(part), nova.best_of(part)
        out('%-31s %10.1f %14.1f %+9.1f' % (
            '    ' + part, theirs * 1e3, mine * 1e3, (mine - theirs) * 1e3))
    out('%-31s %10.2f %14.2f  us: what one more weigher costs in '
        'it per host weighed' % ('      per weigher and host',
                                 nova.best_of(PER_WEIGHER_HOST) * 1e6,
                                 plugin.best_of(PER_WEIGHER_HOST) * 1e6))
    if verdict == 'FAIL':
        failures.append('%s at %s hosts: %.3fx Nova (target %.2fx)' % (
            name, format(deployment.size, ','), ratio, target))
    if classes_:
        out('  classes of Nova + plugin, ms per request (best of each):')
        mine = plugin.probe.our_filters + plugin.probe.our_weighers
        names = plugin.probe.filters + plugin.probe.weighers
        for cls in sorted(names, key=lambda c: -plugin.best_of(c, 2)):
            out('    %-34s %8.2f%s' % (
                cls, plugin.best_of(cls, 2) * 1e3,
                '  (ours)' if cls in mine else ''))

    # The decisions, so that neither configuration measures a no-op.
    sane = True
    lines = []
    for config in configs:
        (modes, placed), passed = picks[config.label]
        first = {}
        for label, count in passed:
            first.setdefault(label, count)
        lines.append('%s: %d of %d instances placed (%s); first pass: %s' % (
            config.label, placed, instances, modes,
            ', '.join('%s %s' % (label.replace('Filter', ''),
                                 format(count, ','))
                      for label, count in first.items())))
        sane = sane and placed == instances
    out('Decisions: ' + '; '.join(lines) + ('  PASS' if sane else '  FAIL'))
    if not sane:
        failures.append('%s at %s hosts: not every instance was placed' % (
            name, format(deployment.size, ',')))
    costs = multiplier_costs(plugin, ctxt, deployment)
    mine = plugin.probe.our_weighers
    theirs = sorted(v for k, v in costs.items() if k not in mine)
    out('weight_multiplier, us per host (the weigher handler calls it for '
        'each weigher and host): %s; Nova\'s %d weighers %.2f-%.2f' % (
            ', '.join('%s %.2f' % (name, costs[name]) for name in mine),
            len(theirs), theirs[0], theirs[-1]))
    queries_ok = queries[0] <= reloads and queries[1] == 0
    out('DB: %d batched load(s) (%d when the ledger\'s records expire), '
        '%d lazy-load(s) in the timed requests  %s' % (
            queries[0], reloads, queries[1],
            'PASS' if queries_ok else 'FAIL'))
    if not queries_ok:
        failures.append('%s at %s hosts: %d batched load(s), %d lazy-'
                        'load(s)' % ((name, format(deployment.size, ','))
                                     + queries))
    if profile:
        prof = cProfile.Profile()
        spec, uuids = make_request(ctxt, flavor, image, instances)
        deployment.heartbeat()
        prof.enable()
        plugin.request(ctxt, spec, uuids)
        prof.disable()
        buf = io.StringIO()
        stats = pstats.Stats(prof, stream=buf)
        stats.strip_dirs().sort_stats('tottime').print_stats(15)
        out('  profile of one Nova + plugin request, by own time:')
        for line in buf.getvalue().splitlines():
            if (line.strip() and 'Ordered by' not in line
                    and 'List reduced' not in line
                    and 'function calls' not in line):
                out('    ' + line.rstrip())
    return failures


def configurations(deployment, numa, ntf):
    """(Nova, Nova + plugin) over ``deployment``."""
    filters = list(CONF.filter_scheduler.enabled_filters)
    weighers = list(CONF.filter_scheduler.weight_classes)
    if numa and ntf:
        filters.append(NTF)
    return (
        Configuration(NOVA, deployment, filters, weighers),
        Configuration(PLUGIN, deployment,
                      filters + list(classes.FILTERS),
                      weighers + [classes.ALL_WEIGHERS]),
    )


def bench_size(size, args, database, ctxt, placement, out):
    failures = []
    now = datetime.datetime.now(datetime.timezone.utc)
    rng = random.Random(args.seed)
    repeats = args.repeats or (21 if size <= 2000 else 9)
    multi_repeats = args.repeats or (11 if size <= 2000 else 5)
    plain_cases = [c for c in CASES if c[0] in args.cases
                   and c[0] not in ('numa', 'room')]
    if plain_cases or 'room' in args.cases:
        start = time.perf_counter()
        cloud = overhead.Cloud(size, args.cells, database, rng)
        deployment = Deployment(cloud, now)
        out('')
        out('== %s hosts (%s) in %d cell(s), %s instances; built in %.1f s '
            '==' % (format(size, ','), ', '.join(
                '%d %s' % (cloud.modes[m], m)
                for m in ('dram', 'memory_mode', 'app_direct')),
                args.cells, format(cloud.instances, ','),
                time.perf_counter() - start))
        placement.deployment = deployment
        configs = configurations(deployment, False, False)
        # What lives through the run is not for the collector to walk
        # before each round.
        gc.freeze()
        for case in plain_cases:
            failures.extend(run_case(
                case, deployment, configs, ctxt, database,
                multi_repeats if case[4] > 1 else repeats, out,
                args.classes, args.profile))
        if 'room' in args.cases:
            deployment = Deployment(cloud, now, ROOM_SHARE)
            out('')
            out('== the same hosts, each with %d%% of its instances ==' % (
                round(100 * ROOM_SHARE)))
            placement.deployment = deployment
            configs = configurations(deployment, False, False)
            gc.freeze()
            case = [c for c in CASES if c[0] == 'room'][0]
            failures.extend(run_case(
                case, deployment, configs, ctxt, database, repeats, out,
                args.classes, args.profile))
        del configs, deployment, cloud
        gc.unfreeze()
        gc.collect()
    if 'numa' in args.cases:
        start = time.perf_counter()
        cloud = overhead.NumaCloud(
            size, args.cells, database,
            random.Random('%d/numa/%d' % (args.seed, size)))
        deployment = Deployment(cloud, now)
        out('')
        out('== %s memory_mode hosts with %d NUMA cells in %d cell(s), %s '
            'instances (%d%% NUMA-bound); %s; built in %.1f s ==' % (
                format(size, ','), overhead.NUMA_CELLS, args.cells,
                format(cloud.instances, ','),
                round(100.0 * cloud.bound_instances / cloud.instances),
                NTF + (' in neither configuration' if args.numa_without_ntf
                       else ' in both configurations'),
                time.perf_counter() - start))
        placement.deployment = deployment
        configs = configurations(deployment, True,
                                 not args.numa_without_ntf)
        gc.freeze()
        case = [c for c in CASES if c[0] == 'numa'][0]
        failures.extend(run_case(case, deployment, configs, ctxt, database,
                                 repeats, out, args.classes, args.profile))
        del configs, deployment, cloud
        gc.unfreeze()
        gc.collect()
    return failures


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description='Time of one Nova select_destinations with and without '
                    'the nova-pmem-filters filters and weighers.')
    overhead.cloud_arguments(
        parser, 'rounds per request and configuration (default: 21 up to '
                '2,000 hosts, 9 above; multi-create 11 and 5)')
    parser.add_argument('--cases', default=','.join(CASE_NAMES),
                        help='comma-separated requests among %s (default: '
                             'all)' % ', '.join(CASE_NAMES))
    parser.add_argument('--numa-without-ntf', action='store_true',
                        help="NUMA-bound request with Nova's default "
                             'filters only, without NUMATopologyFilter')
    parser.add_argument('--classes', action='store_true',
                        help='also print the time of each class')
    parser.add_argument('--profile', action='store_true',
                        help='also print a cProfile of one Nova + plugin '
                             'request per case')
    args = parser.parse_args(argv)
    overhead.check_cloud_args(parser, args)
    args.cases = [c.strip() for c in args.cases.split(',') if c.strip()]
    unknown = set(args.cases) - set(CASE_NAMES)
    if unknown:
        parser.error('unknown case(s): %s' % ', '.join(sorted(unknown)))
    return args


def configure():
    """nova.conf as a scheduler has it, with the plugin available."""
    CONF([], project='nova', default_config_files=[],
         default_config_dirs=[])
    objects.register_all()
    CONF.set_override('available_filters',
                      ['nova.scheduler.filters.all_filters',
                       classes.ALL_FILTERS], group='filter_scheduler')
    # The aggregate-view check reads the aggregates once per worker
    # process, not per request, and needs Nova's API database.
    CONF.set_override('check_aggregate_view', False, group='pmem')
    # Notifications: oslo.messaging's fake transport, no driver.
    CONF.register_opts(messaging_transport._transport_opts)
    CONF.set_override('transport_url', 'fake:/')
    rpc.init(CONF)


def main(argv=None):
    global TIMER
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.cpu_time:
        TIMER = overhead.TIMER = time.thread_time
    # Nova's and our classes log at DEBUG per host; a production
    # scheduler logs at INFO.
    logging.basicConfig(level=logging.WARNING,
                        format='%(levelname)s %(name)s: %(message)s')
    logging.getLogger().setLevel(logging.WARNING)
    configure()

    def out(line):
        print(line, flush=True)

    start = time.perf_counter()
    out('nova-pmem-filters scheduler request: nova %s, Python %s, %d '
        'CPU(s), timer time.%s' % (
            nova_version.version_string(), platform.python_version(),
            os.cpu_count() or 1, TIMER.__name__))
    out('%s: enabled_filters = %s; weight_classes = %s' % (
        NOVA, ','.join(CONF.filter_scheduler.enabled_filters),
        ','.join(CONF.filter_scheduler.weight_classes)))
    out('%s: enabled_filters + %s; weight_classes + %s' % (
        PLUGIN, ','.join(classes.FILTERS), classes.ALL_WEIGHERS))
    out('Each request: SchedulerManager.select_destinations, '
        'return_alternates=True, max_attempts=%d; Placement answers with '
        'every host.' % CONF.scheduler.max_attempts)
    note = overhead._load_note('at the start')
    if note and not args.cpu_time:
        out(note)

    database = overhead.CountingCellDatabase()
    placement = PlacementStandIn()
    ctxt = nova_context.get_admin_context()
    failures = []
    with database.patched(), \
            mock.patch.object(report, 'report_client_singleton',
                              return_value=placement), \
            mock.patch.object(objects.service,
                              'get_minimum_version_all_cells',
                              return_value=objects.service.SERVICE_VERSION):
        for size in args.sizes:
            CONF.set_override('max_placement_results', size,
                              group='scheduler')
            failures.extend(bench_size(size, args, database, ctxt,
                                       placement, out))
    out('')
    note = overhead._load_note('at the end')
    if note and not args.cpu_time:
        out(note)
    elapsed = time.perf_counter() - start
    if failures:
        out('VERDICT: FAIL (%.0f s): %s' % (elapsed, '; '.join(failures)))
    else:
        met = []
        others = [c for c in args.cases if c != 'numa']
        if others:
            met.append('<= %.2fx Nova alone for %s' % (
                TARGET_RATIO, ', '.join(others)))
        if 'numa' in args.cases:
            met.append('<= %.2fx for the NUMA-bound flavor'
                       % NUMA_TARGET_RATIO)
        out('VERDICT: PASS (%.0f s): select_destinations with the plugin '
            '%s, every instance placed, at %s hosts.' % (
                elapsed, ', '.join(met),
                ' and '.join(format(s, ',') for s in args.sizes)))
    return 1 if failures and not args.no_fail else 0


if __name__ == '__main__':
    sys.exit(main())
