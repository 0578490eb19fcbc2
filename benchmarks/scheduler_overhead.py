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
"""Per-host cost of the pmem filters and weighers, against Nova's own.

Builds 1,000 and 10,000 real ``nova.scheduler.host_manager.HostState``
objects the way ``HostManager._get_host_states`` does (a ComputeNode, a
service record, shared Aggregate objects and, per host, 40 bare
``objects.Instance(context, uuid=...)`` with no flavor loaded, as
``HostManager._get_instances_by_host`` builds them), then times in the same
run:

* PmemModeFilter and PmemCacheFilter (``filter_all`` over all hosts) against
  Nova's AggregateInstanceExtraSpecsFilter, called the same way;
* PmemTierWeigher and PmemCacheHeadroomWeigher (``weigh_objects`` over
  WeighedHost objects) against Nova's RAMWeigher.

The target is that every one of ours costs at most 1.5 times
AggregateInstanceExtraSpecsFilter per host (best of the repeats).

There is no database: ``InstanceList.get_by_filters`` is replaced by a
counting stand-in that returns the instances of the requested UUIDs with
their flavors, and ``Instance.obj_load_attr`` (one query per instance in real
Nova) is counted as a query too. The first request on an empty
``hostinfo.LEDGER`` must make exactly one batched load per cell; the
requests after it none.

Run::

    python benchmarks/scheduler_overhead.py            # or: tox -e benchmark
    python benchmarks/scheduler_overhead.py --no-fail  # report only
    python benchmarks/scheduler_overhead.py --sizes 1000 --profile
    python benchmarks/scheduler_overhead.py --cpu-time # on a busy machine

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
from nova.scheduler.filters import aggregate_instance_extra_specs as aies
from nova.scheduler import host_manager
from nova.scheduler import weights
from nova.scheduler.weights import ram
from nova import version as nova_version

from nova_pmem_filters import filters as pmem_filters
from nova_pmem_filters import hostinfo
from nova_pmem_filters import weighers as pmem_weighers

CONF = nova.conf.CONF

TARGET_RATIO = 1.5
INSTANCES_PER_HOST = 40
GB = 1024

# The aggregates of the simulated cloud: (name, metadata), shared by their
# hosts like HostManager.aggs_by_id. Every host's aggregates carry
# ``storage`` and ``network``, the keys the benchmark flavors ask for with
# aggregate_instance_extra_specs, so AggregateInstanceExtraSpecsFilter walks
# every key of every host.
AGGREGATES = [
    ('dram-25g', {'pmem_mode': 'dram', 'storage': 'ssd',
                  'network': '25g'}),
    ('dram-100g', {'pmem_mode': 'dram', 'storage': 'ssd,nvme',
                   'network': '100g'}),
    ('pmem-mm-128', {'pmem_mode': 'memory_mode', 'pmem_dram_cache_gb': '128',
                     'storage': 'ssd', 'network': '25g'}),
    ('pmem-mm-192', {'pmem_mode': 'memory_mode', 'pmem_dram_cache_gb': '192',
                     'storage': 'ssd', 'network': '100g'}),
    # Mode and cache size from two aggregates: hardware generation and
    # DIMM population.
    ('pmem-mm-gen2', {'pmem_mode': 'memory_mode', 'storage': 'nvme',
                      'network': '100g'}),
    ('dram-cache-256', {'pmem_dram_cache_gb': '256'}),
    ('pmem-ad', {'pmem_mode': 'app_direct', 'storage': 'nvme',
                 'network': '100g'}),
    ('az1', {'availability_zone': 'az1'}),
    ('az2', {'availability_zone': 'az2'}),
]

# host index % 10 -> (mode, aggregates besides the availability zone)
LAYOUT = {
    0: ('dram', ['dram-25g']),
    1: ('dram', ['dram-100g']),
    2: ('dram', ['dram-25g']),
    3: ('dram', ['dram-100g']),
    4: ('memory_mode', ['pmem-mm-128']),
    5: ('memory_mode', ['pmem-mm-192']),
    6: ('memory_mode', ['pmem-mm-192']),
    7: ('memory_mode', ['pmem-mm-gen2', 'dram-cache-256']),
    8: ('app_direct', ['pmem-ad']),
    9: ('app_direct', ['pmem-ad']),
}

# Host RAM as Nova sees it (MB): Memory Mode exposes the PMem capacity.
HOST_MEMORY_MB = {'dram': 1024 * GB, 'memory_mode': 1536 * GB,
                  'app_direct': 1024 * GB}

# Flavors of the instances already on the hosts, per host mode:
# (name, memory_mb, extra specs).
INSTANCE_FLAVORS = {
    'dram': [
        ('m1.medium', 4096, {}),
        ('m1.xlarge', 16384, {'pmem:priority': 'normal'}),
        ('db.large', 32768, {'pmem:modes': 'dram,app_direct',
                             'pmem:priority': 'high'}),
    ],
    'memory_mode': [
        ('m1.medium', 4096, {}),
        ('m1.xlarge', 16384, {'pmem:hot_ratio': '0.25'}),
        ('r1.2xlarge', 32768, {'pmem:hot_ratio': '0.1',
                               'pmem:priority': 'low'}),
        ('c1.large', 8192, {'pmem:hot_ratio': '1.0'}),
    ],
    'app_direct': [
        ('m1.xlarge', 16384, {}),
        ('db.large', 32768, {'pmem:modes': 'dram,app_direct',
                             'pmem:priority': 'high'}),
        ('db.vpmem', 16384, {'hw:pmem': '6GB,6GB'}),
    ],
}

# The two requests of every round: a capacity VM and a latency-sensitive
# one. Both allow memory_mode, so PmemCacheFilter does its accounting on
# every memory_mode host, and both reject app_direct hosts in
# PmemModeFilter.
REQUESTS = [
    ('redis.capacity', 16384, {
        'pmem:modes': 'dram,memory_mode',
        'pmem:hot_ratio': '0.25',
        'pmem:priority': 'low',
        'aggregate_instance_extra_specs:storage': '<in> ssd',
        'aggregate_instance_extra_specs:network': '<or> 25g <or> 100g',
    }),
    ('web.latency', 8192, {
        'pmem:modes': 'dram, memory_mode',
        'pmem:hot_ratio': '0.75',
        'pmem:priority': 'high',
        'aggregate_instance_extra_specs:storage': '<in> ssd',
    }),
]

BASE_FILTER = 'AggregateInstanceExtraSpecsFilter'
BASE_WEIGHER = 'RAMWeigher'


class CountingCellDatabase(object):
    """Stands in for the cell databases, counting every query.

    ``get_by_filters`` answers the ledger's batched flavor load with real
    Instance objects (flavor and ``deleted`` loaded) of the requested UUIDs
    that live in the context's cell; ``obj_load_attr`` is what a lazy load of
    one field of one instance would have been.
    """

    def __init__(self):
        self.flavor_of = {}
        self.cell_of = {}
        self.batched = collections.Counter()
        self.lazy = collections.Counter()
        self.batched_rows = 0
        self.seconds = 0.0

    def add(self, cell_uuid, uuid, flavor):
        self.flavor_of[uuid] = flavor
        self.cell_of[uuid] = cell_uuid

    def reset_counts(self):
        self.batched.clear()
        self.lazy.clear()
        self.batched_rows = 0
        self.seconds = 0.0

    def get_by_filters(self, context, filters, sort_key='created_at',
                       sort_dir='desc', limit=None, marker=None,
                       expected_attrs=None, use_slave=False, sort_keys=None,
                       sort_dirs=None):
        start = TIMER()
        cell = getattr(context, 'cell_uuid', None)
        self.batched[cell] += 1
        if set(filters) != {'uuid'}:
            raise AssertionError('unexpected filters %r' % sorted(filters))
        with_flavor = 'flavor' in (expected_attrs or ())
        found = []
        for uuid in filters['uuid']:
            if self.cell_of.get(uuid) != cell:
                continue
            inst = objects.Instance(context, uuid=uuid, deleted=False)
            if with_flavor:
                inst.flavor = self.flavor_of[uuid]
            found.append(inst)
        self.batched_rows += len(found)
        result = objects.InstanceList(context, objects=found)
        self.seconds += TIMER() - start
        return result

    def lazy_load(self, inst, attrname):
        self.lazy[getattr(inst._context, 'cell_uuid', None)] += 1
        if attrname == 'flavor':
            inst.flavor = self.flavor_of[inst.uuid]
        elif attrname == 'deleted':
            inst.deleted = False
        else:
            raise AssertionError('unexpected lazy-load of Instance.%s'
                                 % attrname)

    def patched(self):
        """Context manager replacing the two database paths."""
        database = self

        def get_by_filters(cls, context, filters, **kwargs):
            return database.get_by_filters(context, filters, **kwargs)

        def obj_load_attr(inst, attrname):
            database.lazy_load(inst, attrname)

        patches = [
            mock.patch.object(objects.InstanceList, 'get_by_filters',
                              classmethod(get_by_filters)),
            mock.patch.object(objects.Instance, 'obj_load_attr',
                              obj_load_attr),
        ]

        class _Patched(object):
            def __enter__(self):
                for patch in patches:
                    patch.start()

            def __exit__(self, *exc):
                for patch in reversed(patches):
                    patch.stop()

        return _Patched()


def make_flavor(flavorid, name, memory_mb, extra_specs):
    return objects.Flavor(
        id=flavorid, flavorid=str(flavorid), name=name, memory_mb=memory_mb,
        vcpus=max(1, memory_mb // 4096), root_gb=40, ephemeral_gb=0, swap=0,
        rxtx_factor=1.0, vcpu_weight=0, disabled=False, is_public=True,
        description=None, extra_specs=dict(extra_specs))


def make_request_specs(ctxt):
    """New RequestSpecs, one per entry of REQUESTS.

    Nova deserialises a new RequestSpec (and Flavor) for every request and
    hands that same object to every filter and weigher of the request, so
    each benchmark round gets new ones.
    """
    specs = []
    for index, (name, memory_mb, extra_specs) in enumerate(REQUESTS):
        flavor = make_flavor(100 + index, name, memory_mb, extra_specs)
        specs.append(objects.RequestSpec(
            ctxt, instance_uuid=str(uuid_lib.uuid4()), flavor=flavor,
            num_instances=1, project_id='bench', user_id='bench',
            scheduler_hints={}, ignore_hosts=None, force_hosts=None,
            force_nodes=None))
    return specs


class Cloud(object):
    """HostStates of ``size`` compute nodes spread over ``cells`` cells."""

    def __init__(self, size, cells, database, rng):
        self.size = size
        admin = nova_context.get_admin_context()
        self.cell_contexts = []
        for index in range(cells):
            # What context.target_cell() yields; the ledger reads only
            # cell_uuid, and there is no cell database to connect to.
            cctxt = nova_context.RequestContext.from_dict(admin.to_dict())
            cctxt.cell_uuid = str(uuid_lib.UUID(int=index + 1))
            self.cell_contexts.append(cctxt)
        self.aggs_by_name = {}
        for agg_id, (name, metadata) in enumerate(AGGREGATES, start=1):
            self.aggs_by_name[name] = objects.Aggregate(
                id=agg_id, uuid=str(uuid_lib.uuid4()), name=name,
                hosts=[], metadata=dict(metadata))
        flavors = {}
        flavorid = 0
        for mode, catalogue in INSTANCE_FLAVORS.items():
            flavors[mode] = []
            for name, memory_mb, extra_specs in catalogue:
                flavorid += 1
                flavors[mode].append(make_flavor(flavorid, name, memory_mb,
                                                 extra_specs))
        now = datetime.datetime.now(datetime.timezone.utc)
        self.hosts = []
        self.mode_of = {}
        self.modes = collections.Counter()
        self.aggregate_counts = collections.Counter()
        for index in range(size):
            mode, agg_names = LAYOUT[index % 10]
            if len(agg_names) == 1 and index // 10 % 3 < 2:
                # Two thirds of the single-aggregate hosts are in an AZ too.
                agg_names = agg_names + [('az1', 'az2')[index // 10 % 3]]
            aggregates = [self.aggs_by_name[n] for n in agg_names]
            cctxt = self.cell_contexts[index * cells // size]
            host = 'compute-%05d' % index
            inst_dict = {}
            used_mb = 0
            for _ in range(INSTANCES_PER_HOST):
                uuid = str(uuid_lib.UUID(int=rng.getrandbits(128),
                                         version=4))
                flavor = rng.choice(flavors[mode])
                used_mb += flavor.memory_mb
                database.add(cctxt.cell_uuid, uuid, flavor)
                # HostManager._get_instances_by_host, verbatim.
                inst_dict[uuid] = objects.Instance(cctxt, uuid=uuid)
            total_mb = HOST_MEMORY_MB[mode]
            compute = objects.ComputeNode(
                id=index + 1, uuid=str(uuid_lib.uuid4()), host=host,
                hypervisor_hostname=host, hypervisor_type='QEMU',
                hypervisor_version=8002000, cpu_info='{}',
                host_ip='10.0.%d.%d' % (index // 250, index % 250 + 1),
                memory_mb=total_mb, memory_mb_used=used_mb,
                free_ram_mb=total_mb - used_mb, vcpus=112,
                vcpus_used=INSTANCES_PER_HOST * 2, local_gb=3500,
                local_gb_used=INSTANCES_PER_HOST * 40,
                free_disk_gb=3500 - INSTANCES_PER_HOST * 40,
                disk_available_least=1800, running_vms=INSTANCES_PER_HOST,
                current_workload=0, numa_topology=None,
                pci_device_pools=objects.PciDevicePoolList(objects=[]),
                supported_hv_specs=[], metrics=None,
                stats={'num_instances': str(INSTANCES_PER_HOST)},
                cpu_allocation_ratio=4.0, ram_allocation_ratio=1.0,
                disk_allocation_ratio=1.0, updated_at=now)
            host_state = host_manager.HostState(host, host, cctxt.cell_uuid)
            host_state.update(compute, {'host': host, 'disabled': False,
                                        'forced_down': False},
                              aggregates, inst_dict)
            self.hosts.append(host_state)
            self.mode_of[host] = mode
            self.modes[mode] += 1
            self.aggregate_counts[len(aggregates)] += 1
        self.weighed = [weights.WeighedHost(hs, 0.0) for hs in self.hosts]

    @property
    def instances(self):
        return self.size * INSTANCES_PER_HOST


# time.perf_counter, or time.thread_time with --cpu-time.
TIMER = time.perf_counter


def _timed(func):
    gc.disable()
    try:
        start = TIMER()
        result = func()
        return TIMER() - start, result
    finally:
        gc.enable()


class Subject(object):
    """One filter or weigher under test, and how the scheduler calls it."""

    def __init__(self, obj, kind):
        self.obj = obj
        self.kind = kind
        self.name = obj.__class__.__name__
        self.seconds = []

    def call(self, cloud, spec):
        if self.kind == 'filter':
            return list(self.obj.filter_all(cloud.hosts, spec))
        return self.obj.weigh_objects(cloud.weighed, spec)

    def count(self, result):
        if self.kind == 'filter':
            return len(result)
        return sum(1 for w in result if w)

    def run(self, cloud, spec):
        seconds, result = _timed(lambda: self.call(cloud, spec))
        return seconds, self.count(result)

    @property
    def best_us(self):
        return min(self.seconds) * 1e6

    @property
    def median_us(self):
        return statistics.median(self.seconds) * 1e6


def make_subjects():
    return [
        Subject(aies.AggregateInstanceExtraSpecsFilter(), 'filter'),
        Subject(pmem_filters.PmemModeFilter(), 'filter'),
        Subject(pmem_filters.PmemCacheFilter(), 'filter'),
        Subject(ram.RAMWeigher(), 'weigher'),
        Subject(pmem_weighers.PmemTierWeigher(), 'weigher'),
        Subject(pmem_weighers.PmemCacheHeadroomWeigher(), 'weigher'),
    ]


def profile_ours(cloud, ctxt, subjects, out):
    for subject in subjects:
        if subject.name in (BASE_FILTER, BASE_WEIGHER):
            continue
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(3):
            for spec in make_request_specs(ctxt):
                subject.call(cloud, spec)
        prof.disable()
        buf = io.StringIO()
        stats = pstats.Stats(prof, stream=buf)
        stats.strip_dirs().sort_stats('tottime').print_stats(8)
        lines = [line for line in buf.getvalue().splitlines()
                 if line.strip() and 'Ordered by' not in line
                 and 'List reduced' not in line]
        out('  profile of %s (3 rounds x %d requests, sorted by own time):'
            % (subject.name, len(REQUESTS)))
        for line in lines[1:]:
            out('    ' + line.rstrip())


def bench_size(size, args, database, ctxt, rng, out):
    build_start = time.perf_counter()
    cloud = Cloud(size, args.cells, database, rng)
    build_seconds = time.perf_counter() - build_start
    repeats = args.repeats or (15 if size <= 2000 else 5)
    out('')
    out('== %s hosts (%s) in %d cell(s), %d-%d aggregates each, %s '
        'instances; %d rounds x %d requests; built in %.1f s ==' % (
            format(size, ','),
            ', '.join('%d %s' % (cloud.modes[m], m)
                      for m in ('dram', 'memory_mode', 'app_direct')),
            args.cells, min(cloud.aggregate_counts),
            max(cloud.aggregate_counts), format(cloud.instances, ','),
            repeats, len(REQUESTS), build_seconds))

    failures = []
    subjects = make_subjects()
    by_name = {s.name: s for s in subjects}

    # Cold: the first request of the process, on an empty ledger.
    hostinfo.LEDGER = hostinfo.HotRamLedger()
    database.reset_counts()
    cache_filter = by_name['PmemCacheFilter']
    gc.collect()
    cold_spec = make_request_specs(ctxt)[0]
    cold_seconds, cold_result = _timed(
        lambda: cache_filter.call(cloud, cold_spec))
    cold_batched = dict(database.batched)
    cold_lazy = sum(database.lazy.values())
    cold_db_seconds = database.seconds
    cold_rows = database.batched_rows

    # Warm: rounds of one request per entry of REQUESTS, each request
    # through every class in Nova's order (filters, then weighers) with the
    # same new RequestSpec, so that drift and noise hit all classes alike.
    database.reset_counts()
    warm_requests = 0
    counts = collections.defaultdict(list)
    for _ in range(repeats):
        gc.collect()
        elapsed = collections.Counter()
        for spec in make_request_specs(ctxt):
            for subject in subjects:
                seconds, count = subject.run(cloud, spec)
                elapsed[subject.name] += seconds
                counts[subject.name].append(count)
            warm_requests += 1
        for subject in subjects:
            subject.seconds.append(
                elapsed[subject.name] / len(REQUESTS) / cloud.size)
    warm_batched = sum(database.batched.values())
    warm_lazy = sum(database.lazy.values())
    same = (cache_filter.call(cloud, make_request_specs(ctxt)[0])
            == cold_result)

    base_filter = by_name[BASE_FILTER].best_us
    base_weigher = by_name[BASE_WEIGHER].best_us
    out('%-34s %8s %8s %8s %8s  %-16s %s' % (
        'class (us per host)', 'best', 'median', 'x AIES', 'x RAMW',
        'hosts', 'target <= %.1fx AIES' % TARGET_RATIO))
    for subject in subjects:
        ratio_filter = subject.best_us / base_filter
        ratio_weigher = (subject.best_us / base_weigher
                         if subject.kind == 'weigher' else None)
        if subject.name in (BASE_FILTER, BASE_WEIGHER):
            verdict = 'baseline'
        elif ratio_filter <= TARGET_RATIO:
            verdict = 'PASS'
        else:
            verdict = 'FAIL'
            failures.append('%s %.2fx at %s hosts'
                            % (subject.name, ratio_filter,
                               format(size, ',')))
        what = 'pass' if subject.kind == 'filter' else 'scored'
        out('%-34s %8.2f %8.2f %7.2fx %8s  %-16s %s' % (
            subject.name, subject.best_us, subject.median_us, ratio_filter,
            '%.1fx' % ratio_weigher if ratio_weigher is not None else '-',
            '/'.join(str(c) for c in counts[subject.name][:len(REQUESTS)])
            + ' ' + what,
            verdict))

    mm_hosts = cloud.modes['memory_mode']
    cells_with_mm = len({hs.cell_uuid for hs in cloud.hosts
                         if cloud.mode_of[hs.host] == 'memory_mode'})
    cold_ok = (cold_lazy == 0 and len(cold_batched) == cells_with_mm
               and all(n == 1 for n in cold_batched.values()))
    warm_ok = warm_batched == 0 and warm_lazy == 0
    out('DB cold: first PmemCacheFilter request on an empty ledger (once '
        'per process, not in the ratios): %.0f ms, of which %.0f ms in the '
        'DB stand-in building %s Instance rows; ours %.0f us per '
        'memory_mode host' % (
            cold_seconds * 1e3, cold_db_seconds * 1e3,
            format(cold_rows, ','),
            (cold_seconds - cold_db_seconds) * 1e6 / max(mm_hosts, 1)))
    out('         %d batched load(s) over %d cell(s) (max %d per cell), '
        '%d lazy-load(s)  %s' % (
            sum(cold_batched.values()), len(cold_batched),
            max(cold_batched.values() or [0]), cold_lazy,
            'PASS' if cold_ok else 'FAIL'))
    out('DB warm: the %d timed requests after it, through all %d classes: '
        '%d batched load(s), %d lazy-load(s)  %s' % (
            warm_requests, len(subjects), warm_batched, warm_lazy,
            'PASS' if warm_ok else 'FAIL'))
    if not cold_ok:
        failures.append('cold request made %s batched load(s) per cell and '
                        '%d lazy-load(s) at %s hosts (expected 1 per cell, '
                        '0 lazy)' % (cold_batched, cold_lazy,
                                     format(size, ',')))
    if not warm_ok:
        failures.append('warm requests made %d batched load(s) and %d '
                        'lazy-load(s) at %s hosts' % (
                            warm_batched, warm_lazy, format(size, ',')))
    if not same:
        failures.append('PmemCacheFilter result changed between the cold '
                        'and the warm request at %s hosts'
                        % format(size, ','))
    if args.profile:
        profile_ours(cloud, ctxt, subjects, out)
    return failures


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description='Per-host cost of the nova-pmem-filters filters and '
                    'weighers against AggregateInstanceExtraSpecsFilter and '
                    'RAMWeigher, and their database access.')
    parser.add_argument('--sizes', default='1000,10000',
                        help='comma-separated host counts (default: '
                             '%(default)s)')
    parser.add_argument('--repeats', type=int, default=0,
                        help='timed rounds per size (default: 15 up to '
                             '2,000 hosts, 5 above)')
    parser.add_argument('--cells', type=int, default=2,
                        help='cells the hosts are spread over (default: '
                             '%(default)s)')
    parser.add_argument('--seed', type=int, default=20240229,
                        help='random seed of the instance layout')
    parser.add_argument('--cpu-time', action='store_true',
                        help='time with time.thread_time instead of '
                             'time.perf_counter, for a machine busy with '
                             'other work')
    parser.add_argument('--profile', action='store_true',
                        help='also print a cProfile of each of our classes')
    parser.add_argument('--no-fail', action='store_true',
                        help='report only; always exit 0')
    args = parser.parse_args(argv)
    args.sizes = [int(s) for s in args.sizes.split(',') if s.strip()]
    if args.cells < 1 or any(s < args.cells for s in args.sizes):
        parser.error('need at least one cell and one host per cell')
    return args


def _load_note(when):
    """A line about the load average when it makes wall times unreliable."""
    cpus = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except OSError:
        return None
    if load <= cpus:
        return None
    return ('NOTE: load average %.1f on %d CPU(s) %s: other processes '
            'compete for the CPU, so times are inflated and noisy; rerun '
            'on an idle machine or with --cpu-time.' % (load, cpus, when))


def main(argv=None):
    global TIMER
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.cpu_time:
        TIMER = time.thread_time
    # The filters log at DEBUG for every rejected host; keep WARNING so the
    # cost measured is the one of a production scheduler.
    logging.basicConfig(level=logging.WARNING,
                        format='%(levelname)s %(name)s: %(message)s')
    logging.getLogger().setLevel(logging.WARNING)
    CONF([], project='nova', default_config_files=[],
         default_config_dirs=[])
    # The aggregate-view check reads the aggregates once per worker process,
    # not per request, and needs Nova's API database, which is not here.
    CONF.set_override('check_aggregate_view', False, group='pmem')
    objects.register_all()

    def out(line):
        print(line, flush=True)

    start = time.perf_counter()
    out('nova-pmem-filters scheduler overhead: nova %s, Python %s, %d '
        'CPU(s), timer time.%s' % (
            nova_version.version_string(), platform.python_version(),
            os.cpu_count() or 1, TIMER.__name__))
    out('Hosts: real nova.scheduler.host_manager.HostState, %d bare '
        'objects.Instance(context, uuid=...) each.' % INSTANCES_PER_HOST)
    for name, memory_mb, specs in REQUESTS:
        out('Request %s, %d MB: %s' % (
            name, memory_mb,
            ', '.join('%s=%s' % kv for kv in sorted(specs.items()))))
    out('Columns: us per host per request, best and median of the rounds; '
        'x AIES and x RAMW: best over the best of '
        'AggregateInstanceExtraSpecsFilter and of RAMWeigher; hosts: '
        'passed (filters) or scored > 0 (weighers), one figure per '
        'request.')
    note = _load_note('at the start')
    if note:
        out(note)

    database = CountingCellDatabase()
    ctxt = nova_context.get_admin_context()
    rng = random.Random(args.seed)
    failures = []
    with database.patched():
        for size in args.sizes:
            failures.extend(bench_size(size, args, database, ctxt, rng,
                                       out))
    out('')
    note = _load_note('at the end')
    if note:
        out(note)
    elapsed = time.perf_counter() - start
    if failures:
        out('VERDICT: FAIL (%.0f s): %s' % (elapsed, '; '.join(failures)))
    else:
        out('VERDICT: PASS (%.0f s): PmemModeFilter, PmemCacheFilter, '
            'PmemTierWeigher and PmemCacheHeadroomWeigher each <= %.1fx '
            'AggregateInstanceExtraSpecsFilter per host at %s hosts; one '
            'batched DB load per cell cold, none warm.'
            % (elapsed, TARGET_RATIO,
               ' and '.join(format(s, ',') for s in args.sizes)))
    return 1 if failures and not args.no_fail else 0


if __name__ == '__main__':
    sys.exit(main())
