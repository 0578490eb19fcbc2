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
* PmemTierWeigher, PmemCacheHeadroomWeigher and PmemNumaCellWeigher
  (``weigh_objects`` over WeighedHost objects) against Nova's RAMWeigher.

Each request goes through every class in Nova's order with the same
RequestSpec, as nova-scheduler calls them: the filters and weighers of one
request share what the request has computed (its flavor's pmem request, the
hosts' profiles and hot RAM; ``nova_pmem_filters.scheduler.request_memo``).
The targets, per host (best of the repeats): every filter of ours at most
``FILTER_TARGET`` (0.2) times AggregateInstanceExtraSpecsFilter, every
weigher at most ``WEIGHER_TARGET`` (1.0) times RAMWeigher. Each weigher is
also timed "alone", on a copy of the RequestSpec (as when it is the only
class of ours enabled), for information.

The NUMA case (skip it with ``--no-numa``) builds as many memory_mode
HostStates again, each with a real two-cell ``objects.NUMATopology`` (4K
pages, cells' ``memory_usage`` and ``cpu_usage`` those of the host's
NUMA-bound instances), a PciDeviceStats and one Placement allocation
candidate, with about 40% of their instances NUMA-bound
(``instance.numa_topology``, cells on host cells). Its requests are
``hw:numa_nodes=1`` flavors with ``pmem:priority=high``, whose
``numa_topology`` is ``nova.virt.hardware.numa_get_constraints(flavor,
image_meta)`` as the API builds it. It times in the same run, each request
through every class in Nova's order with the same RequestSpec:

* Nova's NUMATopologyFilter (``filter_all``), the baseline;
* PmemCacheFilter, which fits the request with Nova's
  ``numa_fit_instance_to_host`` once per host and checks the DRAM caches of
  the cells it would claim;
* PmemCacheHeadroomWeigher and PmemNumaCellWeigher, which reuse the filter's
  fit of the same request; and PmemNumaCellWeigher "alone", on a copy of the
  RequestSpec, as when PmemCacheFilter is not enabled and it fits each host
  itself.

Its target is that every one of ours costs at most 1.5 times
NUMATopologyFilter per host. PmemCacheFilter's decisions are checked against
the benchmark's own arithmetic (some hosts pass, some fail on a full cell)
so that it cannot measure a no-op, and the first request on an empty ledger
must again make one batched load per cell, the ones after it none.

There is no database: ``InstanceList.get_by_filters`` is replaced by a
counting stand-in that returns the instances of the requested UUIDs with
their flavors and NUMA topologies, and ``Instance.obj_load_attr`` (one
query per instance in real Nova) is counted as a query too. The first
request on an empty ``ledger.LEDGER`` must make exactly one batched load
per cell; the requests after it none.

Run::

    python benchmarks/scheduler_overhead.py            # or: tox -e benchmark
    python benchmarks/scheduler_overhead.py --no-fail  # report only
    python benchmarks/scheduler_overhead.py --sizes 1000 --profile
    python benchmarks/scheduler_overhead.py --cpu-time # on a busy machine
    python benchmarks/scheduler_overhead.py --no-numa  # without NUMA case

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
from nova.scheduler.filters import numa_topology_filter
from nova.scheduler import host_manager
from nova.scheduler import weights
from nova.scheduler.weights import ram
from nova import version as nova_version
from nova.virt import hardware

from nova_pmem_filters import filters as pmem_filters
from nova_pmem_filters.scheduler import ledger
from nova_pmem_filters import weighers as pmem_weighers

CONF = nova.conf.CONF

# The NUMA case's target against NUMATopologyFilter.
TARGET_RATIO = 1.5
# The classic case's targets: filters against
# AggregateInstanceExtraSpecsFilter, weighers against RAMWeigher.
FILTER_TARGET = 0.2
WEIGHER_TARGET = 1.0
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

# The NUMA case: memory_mode hosts with two NUMA cells (sockets) of 56
# threads (28 cores x 2) and half the host's RAM each.
BASE_NUMA_FILTER = 'NUMATopologyFilter'
NUMA_CELLS = 2
CPUS_PER_CELL = 56

# The aggregates above and one more: a host whose two sockets' DRAM caches
# differ (DIMM population), given per cell.
NUMA_AGGREGATES = AGGREGATES + [
    ('pmem-mm-cells', {'pmem_mode': 'memory_mode',
                       'pmem_dram_cache_gb_per_cell': '0:64,1:128',
                       'storage': 'ssd', 'network': '100g'}),
]

# host index % 5 -> (aggregates besides the availability zone, the DRAM
# cache of each cell in GB as PmemCacheFilter must derive it).
NUMA_LAYOUT = {
    0: (['pmem-mm-128'], (64, 64)),
    1: (['pmem-mm-192'], (96, 96)),
    2: (['pmem-mm-gen2', 'dram-cache-256'], (128, 128)),
    3: (['pmem-mm-cells'], (64, 128)),
    4: (['pmem-mm-192'], (96, 96)),
}

# The instances of the NUMA hosts: the memory_mode flavors above, floating,
# and three NUMA-bound ones (hw:numa_nodes).
NUMA_INSTANCE_FLAVORS = INSTANCE_FLAVORS['memory_mode'] + [
    ('m1.xlarge.numa', 16384, {'hw:numa_nodes': '1',
                               'pmem:hot_ratio': '0.25'}),
    ('db.2xlarge.numa', 32768, {'hw:numa_nodes': '1',
                                'pmem:hot_ratio': '0.25',
                                'pmem:priority': 'high'}),
    ('r1.4xlarge.numa2', 65536, {'hw:numa_nodes': '2',
                                 'pmem:hot_ratio': '0.1'}),
]

# The requests of every NUMA round. Both are pmem:priority=high, so that
# PmemNumaCellWeigher does its work on every call.
NUMA_REQUESTS = [
    ('db.numa', 32768, {
        'hw:numa_nodes': '1',
        'pmem:modes': 'dram,memory_mode',
        'pmem:hot_ratio': '0.25',
        'pmem:priority': 'high',
    }),
    ('cache.numa', 16384, {
        'hw:numa_nodes': '1',
        'pmem:modes': 'dram,memory_mode',
        'pmem:hot_ratio': '0.75',
        'pmem:priority': 'high',
    }),
]


def _host_state(cctxt, index, host, subnet, total_mb, used_mb, vcpus,
                vcpus_used, numa_topology, aggregates, inst_dict, now):
    """A ComputeNode and the HostState built from it, as HostManager does.

    :returns: (compute node, host state).
    """
    compute = objects.ComputeNode(
        id=index + 1, uuid=str(uuid_lib.uuid4()), host=host,
        hypervisor_hostname=host, hypervisor_type='QEMU',
        hypervisor_version=8002000, cpu_info='{}',
        host_ip='%s.%d.%d' % (subnet, index // 250, index % 250 + 1),
        memory_mb=total_mb, memory_mb_used=used_mb,
        free_ram_mb=total_mb - used_mb, vcpus=vcpus, vcpus_used=vcpus_used,
        local_gb=3500, local_gb_used=INSTANCES_PER_HOST * 40,
        free_disk_gb=3500 - INSTANCES_PER_HOST * 40,
        disk_available_least=1800, running_vms=INSTANCES_PER_HOST,
        current_workload=0, numa_topology=numa_topology,
        pci_device_pools=objects.PciDevicePoolList(objects=[]),
        supported_hv_specs=[], metrics=None,
        stats={'num_instances': str(INSTANCES_PER_HOST)},
        cpu_allocation_ratio=4.0, ram_allocation_ratio=1.0,
        disk_allocation_ratio=1.0, updated_at=now)
    host_state = host_manager.HostState(host, host, cctxt.cell_uuid)
    host_state.update(compute, {'host': host, 'disabled': False,
                                'forced_down': False},
                      aggregates, inst_dict)
    return compute, host_state


class CountingCellDatabase(object):
    """Stands in for the cell databases, counting every query.

    ``get_by_filters`` answers the ledger's batched flavor load with real
    Instance objects (``deleted`` and the ``expected_attrs`` flavor and
    ``numa_topology`` loaded) of the requested UUIDs that live in the
    context's cell; ``obj_load_attr`` is what a lazy load of
    one field of one instance would have been.
    """

    def __init__(self):
        self.flavor_of = {}
        self.numa_of = {}
        self.cell_of = {}
        self.batched = collections.Counter()
        self.lazy = collections.Counter()
        self.batched_rows = 0
        self.seconds = 0.0

    def add(self, cell_uuid, uuid, flavor, numa_topology=None):
        self.flavor_of[uuid] = flavor
        self.cell_of[uuid] = cell_uuid
        if numa_topology is not None:
            self.numa_of[uuid] = numa_topology

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
        with_numa = 'numa_topology' in (expected_attrs or ())
        found = []
        for uuid in filters['uuid']:
            if self.cell_of.get(uuid) != cell:
                continue
            inst = objects.Instance(context, uuid=uuid, deleted=False)
            if with_flavor:
                inst.flavor = self.flavor_of[uuid]
            if with_numa:
                # None for an instance without a NUMA topology, as Nova's
                # instance_extra gives it.
                inst.numa_topology = self.numa_of.get(uuid)
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
        elif attrname == 'numa_topology':
            inst.numa_topology = self.numa_of.get(inst.uuid)
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


def make_image_meta():
    return objects.ImageMeta.from_dict({
        'id': '6ee4a3d3-1b5d-4a4e-9d2c-3c1a4b0e9f10', 'name': 'bench',
        'disk_format': 'qcow2', 'container_format': 'bare', 'min_ram': 0,
        'min_disk': 0, 'size': 1 << 30, 'status': 'active',
        'properties': {}})


def make_request_specs(ctxt, requests=REQUESTS):
    """New RequestSpecs, one per entry of ``requests``.

    Nova deserialises a new RequestSpec (and Flavor) for every request and
    hands that same object to every filter and weigher of the request, so
    each benchmark round gets new ones. A flavor with ``hw:numa_nodes`` gets
    what the API and the conductor give such a request: the image, the
    ``numa_topology`` of ``numa_get_constraints``, empty PCI requests and
    network metadata, no request groups.
    """
    specs = []
    for index, (name, memory_mb, extra_specs) in enumerate(requests):
        flavor = make_flavor(100 + index, name, memory_mb, extra_specs)
        spec = objects.RequestSpec(
            ctxt, instance_uuid=str(uuid_lib.uuid4()), flavor=flavor,
            num_instances=1, project_id='bench', user_id='bench',
            scheduler_hints={}, ignore_hosts=None, force_hosts=None,
            force_nodes=None)
        if 'hw:numa_nodes' in extra_specs:
            image = make_image_meta()
            spec.image = image
            spec.numa_topology = hardware.numa_get_constraints(flavor,
                                                               image)
            spec.pci_requests = objects.InstancePCIRequests(requests=[])
            spec.network_metadata = objects.NetworkMetadata(
                physnets=set(), tunneled=False)
            spec.requested_resources = []
        specs.append(spec)
    return specs


def make_cell_contexts(cells):
    admin = nova_context.get_admin_context()
    contexts = []
    for index in range(cells):
        # What context.target_cell() yields; the ledger reads only
        # cell_uuid, and there is no cell database to connect to.
        cctxt = nova_context.RequestContext.from_dict(admin.to_dict())
        cctxt.cell_uuid = str(uuid_lib.UUID(int=index + 1))
        contexts.append(cctxt)
    return contexts


class Cloud(object):
    """HostStates of ``size`` compute nodes spread over ``cells`` cells."""

    def __init__(self, size, cells, database, rng):
        self.size = size
        self.cell_contexts = make_cell_contexts(cells)
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
        # The ComputeNode of each host, for a HostManager to build its
        # HostStates from (benchmarks/scheduler_request.py).
        self.computes = []
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
            compute, host_state = _host_state(
                cctxt, index, host, '10.0', total_mb, used_mb, 112,
                INSTANCES_PER_HOST * 2, None, aggregates, inst_dict, now)
            self.hosts.append(host_state)
            self.computes.append(compute)
            self.mode_of[host] = mode
            self.modes[mode] += 1
            self.aggregate_counts[len(aggregates)] += 1
        self.weighed = [weights.WeighedHost(hs, 0.0) for hs in self.hosts]

    @property
    def instances(self):
        return self.size * INSTANCES_PER_HOST


def hot_ratio_of(extra_specs):
    return float(extra_specs.get('pmem:hot_ratio',
                                 CONF.pmem.default_hot_ratio))


def host_numa_topology(cell_memory_mb, memory_usage, cpu_usage):
    """A two-cell NUMATopology as the libvirt driver reports it.

    4K pages only (no huge pages), no dedicated CPUs; ``memory_usage`` and
    ``cpu_usage`` are the NUMA-bound instances' ({cell: MB or vCPUs}), as
    ``hardware.numa_usage_from_instance_numa`` accounts them.
    """
    cells = []
    half = CPUS_PER_CELL // 2
    for cell in range(NUMA_CELLS):
        first = cell * CPUS_PER_CELL
        cells.append(objects.NUMACell(
            id=cell, socket=cell,
            cpuset=set(range(first, first + CPUS_PER_CELL)),
            pcpuset=set(), memory=cell_memory_mb,
            cpu_usage=cpu_usage[cell], memory_usage=memory_usage[cell],
            pinned_cpus=set(),
            siblings=[{first + core, first + core + half}
                      for core in range(half)],
            mempages=[objects.NUMAPagesTopology(
                size_kb=4, total=cell_memory_mb * 1024 // 4,
                used=memory_usage[cell] * 1024 // 4, reserved=0)],
            network_metadata=objects.NetworkMetadata(
                physnets=set(), tunneled=False)))
    return objects.NUMATopology(cells=cells)


class NumaCloud(object):
    """``size`` memory_mode HostStates with two NUMA cells each.

    About 40% of the instances are NUMA-bound; each host leans on one cell
    (three in four of its one-cell instances are there), so the cells of a
    host fill unevenly. The benchmark's own picture of each host (``caps``,
    ``floating``, ``bound``: hot MB) decides independently of the code
    measured what PmemCacheFilter must do.
    """

    def __init__(self, size, cells, database, rng):
        self.size = size
        self.cell_contexts = make_cell_contexts(cells)
        self.aggs_by_name = {}
        for agg_id, (name, metadata) in enumerate(NUMA_AGGREGATES,
                                                  start=1):
            self.aggs_by_name[name] = objects.Aggregate(
                id=agg_id, uuid=str(uuid_lib.uuid4()), name=name,
                hosts=[], metadata=dict(metadata))
        image = make_image_meta()
        flavors = []
        for flavorid, (name, memory_mb, extra_specs) in enumerate(
                NUMA_INSTANCE_FLAVORS, start=201):
            flavors.append(make_flavor(flavorid, name, memory_mb,
                                       extra_specs))
        # (flavor id, host cells) -> the InstanceNUMATopology Nova stores
        # for such an instance; shared, as nothing here changes them.
        topologies = {}
        now = datetime.datetime.now(datetime.timezone.utc)
        total_mb = HOST_MEMORY_MB['memory_mode']
        cell_memory_mb = total_mb // NUMA_CELLS
        self.hosts = []
        self.computes = []
        self.candidates = []
        self.caps = {}
        self.floating = {}
        self.bound = {}
        self.bound_instances = 0
        self.aggregate_counts = collections.Counter()
        for index in range(size):
            agg_names, cache_gb = NUMA_LAYOUT[index % len(NUMA_LAYOUT)]
            if len(agg_names) == 1 and index // 10 % 3 < 2:
                agg_names = agg_names + [('az1', 'az2')[index // 10 % 3]]
            aggregates = [self.aggs_by_name[n] for n in agg_names]
            cctxt = self.cell_contexts[index * cells // size]
            host = 'numa-%05d' % index
            leaning = rng.randrange(NUMA_CELLS)
            inst_dict = {}
            used_mb = vcpus_used = 0
            memory_usage = [0] * NUMA_CELLS
            cpu_usage = [0] * NUMA_CELLS
            floating = 0.0
            bound = [0.0] * NUMA_CELLS
            for _ in range(INSTANCES_PER_HOST):
                uuid = str(uuid_lib.UUID(int=rng.getrandbits(128),
                                         version=4))
                flavor = rng.choice(flavors)
                used_mb += flavor.memory_mb
                vcpus_used += flavor.vcpus
                hot = flavor.memory_mb * hot_ratio_of(flavor.extra_specs)
                nodes = int(flavor.extra_specs.get('hw:numa_nodes', 0))
                topology = None
                if not nodes:
                    floating += hot
                else:
                    if nodes == NUMA_CELLS:
                        placed = tuple(range(NUMA_CELLS))
                    elif rng.random() < 0.75:
                        placed = (leaning,)
                    else:
                        placed = (rng.randrange(NUMA_CELLS),)
                    key = (flavor.id, placed)
                    topology = topologies.get(key)
                    if topology is None:
                        topology = hardware.numa_get_constraints(flavor,
                                                                 image)
                        for inst_cell, host_cell in zip(topology.cells,
                                                        placed):
                            inst_cell.id = host_cell
                        topologies[key] = topology
                    for inst_cell in topology.cells:
                        memory_usage[inst_cell.id] += inst_cell.memory
                        cpu_usage[inst_cell.id] += len(inst_cell.cpuset)
                        bound[inst_cell.id] += (
                            hot * inst_cell.memory / flavor.memory_mb)
                    self.bound_instances += 1
                database.add(cctxt.cell_uuid, uuid, flavor, topology)
                inst_dict[uuid] = objects.Instance(cctxt, uuid=uuid)
            numa_topology = host_numa_topology(cell_memory_mb, memory_usage,
                                               cpu_usage)
            compute, host_state = _host_state(
                cctxt, index, host, '10.1', total_mb, used_mb,
                NUMA_CELLS * CPUS_PER_CELL, vcpus_used,
                # A string field: HostState.update() deserialises it.
                numa_topology._to_json(), aggregates, inst_dict, now)
            self.hosts.append(host_state)
            self.computes.append(compute)
            # One Placement allocation candidate, as the scheduler's
            # HostManager gives every host of a request without request
            # groups.
            self.candidates.append([{
                'allocations': {compute.uuid: {'resources': {
                    'VCPU': 8, 'MEMORY_MB': 32768, 'DISK_GB': 40}}},
                'mappings': {'': [compute.uuid]},
            }])
            ratio = CONF.pmem.cache_overcommit_ratio
            self.caps[host] = {cell: gb * GB * ratio
                               for cell, gb in enumerate(cache_gb)}
            self.floating[host] = floating
            self.bound[host] = dict(enumerate(bound))
            self.aggregate_counts[len(aggregates)] += 1
        self.weighed = [weights.WeighedHost(hs, 0.0) for hs in self.hosts]
        self.reset_candidates()

    def reset_candidates(self):
        """Every host's allocation candidates, as at a request's start.

        NUMATopologyFilter keeps only the candidates that fit (and a host
        without any is out); HostManager gives each request new ones.
        """
        for host_state, candidates in zip(self.hosts, self.candidates):
            host_state.allocation_candidates = list(candidates)

    @property
    def instances(self):
        return self.size * INSTANCES_PER_HOST

    def expected(self, spec):
        """What PmemCacheFilter must decide, from the benchmark's numbers.

        :returns: ({host: reason}, reason one of 'pass', 'full cell',
            'full cell, host-wide fits', 'no NUMA fit').
        """
        memory_mb = spec.flavor.memory_mb
        hot_ratio = hot_ratio_of(spec.flavor.extra_specs)
        verdicts = {}
        for host_state in self.hosts:
            host = host_state.host
            limits = objects.NUMATopologyLimits(
                cpu_allocation_ratio=host_state.cpu_allocation_ratio,
                ram_allocation_ratio=host_state.ram_allocation_ratio)
            fitted = hardware.numa_fit_instance_to_host(
                host_state.numa_topology, spec.numa_topology.obj_clone(),
                provider_mapping={'': [host_state.uuid]}, limits=limits,
                pci_stats=host_state.pci_stats)
            if fitted is None:
                verdicts[host] = 'no NUMA fit'
                continue
            caps = self.caps[host]
            total_cap = sum(caps.values())
            used = {cell: self.bound[host][cell]
                    + self.floating[host] * cap / total_cap
                    for cell, cap in caps.items()}
            full = [cell for cell in fitted.cells
                    if used[cell.id] + cell.memory * hot_ratio
                    > caps[cell.id] + 1e-6]
            if not full:
                verdicts[host] = 'pass'
            elif (sum(used.values()) + memory_mb * hot_ratio
                  <= total_cap + 1e-6):
                verdicts[host] = 'full cell, host-wide fits'
            else:
                verdicts[host] = 'full cell'
        return verdicts


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

    def __init__(self, obj, kind, alone=False):
        self.obj = obj
        self.kind = kind
        self.name = obj.__class__.__name__
        # Alone: on a copy of the request's RequestSpec, so that nothing an
        # earlier class of the request computed for it is reused.
        self.alone = alone
        self.label = self.name + (', alone' if alone else '')
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
        if self.alone:
            spec = spec.obj_clone()
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
        Subject(pmem_weighers.PmemNumaCellWeigher(), 'weigher'),
        Subject(pmem_weighers.PmemTierWeigher(), 'weigher', alone=True),
        Subject(pmem_weighers.PmemCacheHeadroomWeigher(), 'weigher',
                alone=True),
    ]


def make_numa_subjects():
    return [
        Subject(numa_topology_filter.NUMATopologyFilter(), 'filter'),
        Subject(pmem_filters.PmemCacheFilter(), 'filter'),
        Subject(pmem_weighers.PmemCacheHeadroomWeigher(), 'weigher'),
        Subject(pmem_weighers.PmemNumaCellWeigher(), 'weigher'),
        Subject(pmem_weighers.PmemNumaCellWeigher(), 'weigher', alone=True),
    ]


def profile_ours(cloud, ctxt, subjects, out, requests=REQUESTS,
                 bases=(BASE_FILTER, BASE_WEIGHER)):
    for subject in subjects:
        if subject.name in bases or subject.alone:
            continue
        if isinstance(cloud, NumaCloud):
            # Ours only read them.
            cloud.reset_candidates()
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(3):
            for spec in make_request_specs(ctxt, requests):
                subject.call(cloud, spec)
        prof.disable()
        buf = io.StringIO()
        stats = pstats.Stats(prof, stream=buf)
        stats.strip_dirs().sort_stats('tottime').print_stats(8)
        lines = [line for line in buf.getvalue().splitlines()
                 if line.strip() and 'Ordered by' not in line
                 and 'List reduced' not in line]
        out('  profile of %s (3 rounds x %d requests, sorted by own time):'
            % (subject.name, len(requests)))
        for line in lines[1:]:
            out('    ' + line.rstrip())


def _warm_rounds(cloud, database, subjects, make_specs, repeats,
                 before=None):
    """Rounds of new requests through every subject, in Nova's order.

    Each subject's seconds per host of a request are appended to its
    ``seconds``, one value per round. Returns (requests, {label: [hosts
    each call returned]}, rows read in batches, rows lazy-loaded).

    :param make_specs: new RequestSpecs for one round (Nova deserialises
        new ones for every request).
    :param before: called before each request (the NUMA case restores the
        hosts' allocation candidates).
    """
    database.reset_counts()
    requests = 0
    counts = collections.defaultdict(list)
    for _ in range(repeats):
        gc.collect()
        elapsed = collections.Counter()
        specs = make_specs()
        for spec in specs:
            if before is not None:
                before()
            for subject in subjects:
                seconds, count = subject.run(cloud, spec)
                elapsed[subject.label] += seconds
                counts[subject.label].append(count)
            requests += 1
        for subject in subjects:
            subject.seconds.append(
                elapsed[subject.label] / len(specs) / cloud.size)
    return (requests, counts, sum(database.batched.values()),
            sum(database.lazy.values()))


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
    cache_filter = by_name['PmemCacheFilter']
    (cold_seconds, cold_result, cold_batched, cold_lazy, cold_db_seconds,
     cold_rows) = _cold_request(cloud, database, cache_filter,
                                make_request_specs(ctxt)[0])

    # Warm: rounds of one request per entry of REQUESTS, each request
    # through every class in Nova's order (filters, then weighers) with the
    # same new RequestSpec, so that drift and noise hit all classes alike.
    warm_requests, counts, warm_batched, warm_lazy = _warm_rounds(
        cloud, database, subjects, lambda: make_request_specs(ctxt),
        repeats)
    same = (cache_filter.call(cloud, make_request_specs(ctxt)[0])
            == cold_result)

    base_filter = by_name[BASE_FILTER].best_us
    base_weigher = by_name[BASE_WEIGHER].best_us
    out('%-34s %8s %8s %8s %8s  %-16s %s' % (
        'class (us per host)', 'best', 'median', 'x AIES', 'x RAMW',
        'hosts', 'target: filters <= %.1fx AIES, weighers <= %.1fx RAMW'
        % (FILTER_TARGET, WEIGHER_TARGET)))
    for subject in subjects:
        ratio_filter = subject.best_us / base_filter
        ratio_weigher = (subject.best_us / base_weigher
                         if subject.kind == 'weigher' else None)
        if subject.name in (BASE_FILTER, BASE_WEIGHER):
            verdict = 'baseline'
        elif subject.alone:
            verdict = 'information'
        elif (ratio_filter <= FILTER_TARGET if subject.kind == 'filter'
              else ratio_weigher <= WEIGHER_TARGET):
            verdict = 'PASS'
        else:
            verdict = 'FAIL'
            failures.append('%s %.2fx %s at %s hosts' % (
                subject.name, ratio_filter if subject.kind == 'filter'
                else ratio_weigher, 'AIES' if subject.kind == 'filter'
                else 'RAMW', format(size, ',')))
        what = 'pass' if subject.kind == 'filter' else 'scored'
        out('%-34s %8.2f %8.2f %7.2fx %8s  %-16s %s' % (
            subject.label, subject.best_us, subject.median_us, ratio_filter,
            '%.2fx' % ratio_weigher if ratio_weigher is not None else '-',
            '/'.join(str(c) for c in counts[subject.label][:len(REQUESTS)])
            + ' ' + what,
            verdict))

    mm_hosts = cloud.modes['memory_mode']
    cells_with_mm = len({hs.cell_uuid for hs in cloud.hosts
                         if cloud.mode_of[hs.host] == 'memory_mode'})
    failures.extend(_query_verdicts(
        out, '', cold_seconds, cold_db_seconds, cold_rows, mm_hosts,
        'memory_mode host', cold_batched, cold_lazy, cells_with_mm,
        warm_requests, len(subjects), warm_batched, warm_lazy, same, size))
    if args.profile:
        profile_ours(cloud, ctxt, subjects, out)
    return failures


def _cold_request(cloud, database, cache_filter, spec):
    """PmemCacheFilter's first request on an empty ledger, timed.

    :returns: (seconds, passing hosts, batched loads per cell, lazy-loads,
        seconds in the DB stand-in, rows it built).
    """
    ledger.LEDGER = ledger.HotRamLedger()
    database.reset_counts()
    gc.collect()
    seconds, result = _timed(lambda: cache_filter.call(cloud, spec))
    return (seconds, result, dict(database.batched),
            sum(database.lazy.values()), database.seconds,
            database.batched_rows)


def _query_verdicts(out, case, cold_seconds, cold_db_seconds, cold_rows,
                    hosts, host_word, cold_batched, cold_lazy, cells,
                    warm_requests, classes, warm_batched, warm_lazy, same,
                    size):
    """Print the database-query verdicts of a case; return its failures.

    The first request on an empty ledger must make one batched load per
    cell and no lazy-load; the timed requests after it none at all.
    """
    failures = []
    label = ('%s case: ' % case.strip()) if case else ''
    cold_ok = (cold_lazy == 0 and len(cold_batched) == cells
               and all(n == 1 for n in cold_batched.values()))
    warm_ok = warm_batched == 0 and warm_lazy == 0
    out('DB cold: first %sPmemCacheFilter request on an empty ledger (once '
        'per process, not in the ratios): %.0f ms, of which %.0f ms in the '
        'DB stand-in building %s Instance rows; ours %.0f us per %s' % (
            case, cold_seconds * 1e3, cold_db_seconds * 1e3,
            format(cold_rows, ','),
            (cold_seconds - cold_db_seconds) * 1e6 / max(hosts, 1),
            host_word))
    out('         %d batched load(s) over %d cell(s) (max %d per cell), '
        '%d lazy-load(s)  %s' % (
            sum(cold_batched.values()), len(cold_batched),
            max(cold_batched.values() or [0]), cold_lazy,
            'PASS' if cold_ok else 'FAIL'))
    out('DB warm: the %d timed %srequests after it, through all %d '
        'classes: %d batched load(s), %d lazy-load(s)  %s' % (
            warm_requests, case, classes, warm_batched, warm_lazy,
            'PASS' if warm_ok else 'FAIL'))
    if not cold_ok:
        failures.append('%scold request made %s batched load(s) per cell '
                        'and %d lazy-load(s) at %s hosts (expected 1 per '
                        'cell, 0 lazy)' % (label, cold_batched, cold_lazy,
                                           format(size, ',')))
    if not warm_ok:
        failures.append('%swarm requests made %d batched load(s) and %d '
                        'lazy-load(s) at %s hosts' % (
                            label, warm_batched, warm_lazy,
                            format(size, ',')))
    if not same:
        failures.append('%sPmemCacheFilter result changed between the cold '
                        'and the warm request at %s hosts'
                        % (label, format(size, ',')))
    return failures


def _decisions(cloud, ctxt, by_label, out):
    """Check, untimed, that the NUMA case measures real decisions.

    Each NUMA request once more: NUMATopologyFilter and PmemCacheFilter
    against the benchmark's own arithmetic (``NumaCloud.expected``), and
    some hosts must pass and some fail on a full cell; the weighers must
    tell hosts apart, and the filter and both weighers together fit each
    host once (every host has one allocation candidate).

    :returns: (failures, the hosts PmemCacheFilter passed for the first
        request).
    """
    failures = []
    first = None
    for spec in make_request_specs(ctxt, NUMA_REQUESTS):
        name = spec.flavor.name
        cloud.reset_candidates()
        fitting = [hs.host for hs in
                   by_label[BASE_NUMA_FILTER].call(cloud, spec)]
        fits = mock.Mock(wraps=hardware.numa_fit_instance_to_host)
        with mock.patch.object(hardware, 'numa_fit_instance_to_host', fits):
            passing = [hs.host for hs in
                       by_label['PmemCacheFilter'].call(cloud, spec)]
            spreads = []
            for label in ('PmemCacheHeadroomWeigher',
                          'PmemNumaCellWeigher'):
                scores = by_label[label].call(cloud, spec)
                spreads.append((label, sum(1 for w in scores if w),
                                len({round(w, 6) for w in scores})))
        if first is None:
            first = passing
        expected = cloud.expected(spec)
        tally = collections.Counter(expected.values())
        full = tally['full cell'] + tally['full cell, host-wide fits']
        wrong = set(passing).symmetric_difference(
            host for host, verdict in expected.items() if verdict == 'pass')
        wrong_fit = set(fitting).symmetric_difference(
            host for host, verdict in expected.items()
            if verdict != 'no NUMA fit')
        meaningful = (tally['pass'] and full and not wrong and not wrong_fit
                      and all(scored and distinct > 1
                              for _label, scored, distinct in spreads)
                      and fits.call_count == cloud.size)
        out('Decisions %s: NUMATopologyFilter passes %d, PmemCacheFilter '
            '%d; the benchmark\'s arithmetic: %d pass, %d fail on a full '
            'cell (%d of them within the host-wide bound), %d without a '
            'NUMA fit; %d host(s) differ; %s; NUMA fits by PmemCacheFilter '
            'and both weighers: %.2f per host  %s' % (
                name, len(fitting), len(passing), tally['pass'], full,
                tally['full cell, host-wide fits'], tally['no NUMA fit'],
                len(wrong) + len(wrong_fit),
                ', '.join('%s scores %d > 0 (%d distinct)' % spread
                          for spread in spreads),
                fits.call_count / cloud.size,
                'PASS' if meaningful else 'FAIL'))
        if not meaningful:
            failures.append(
                'NUMA request %s at %s hosts: %d pass, %d full cell, %d '
                'differ from the arithmetic, weighers %s, %d NUMA fits' % (
                    name, format(cloud.size, ','), tally['pass'], full,
                    len(wrong) + len(wrong_fit), spreads, fits.call_count))
    return failures, first


def bench_numa(size, args, database, ctxt, out):
    # A random stream of its own: the main case's hosts stay the same with
    # or without the NUMA case.
    rng = random.Random('%d/numa/%d' % (args.seed, size))
    build_start = time.perf_counter()
    cloud = NumaCloud(size, args.cells, database, rng)
    build_seconds = time.perf_counter() - build_start
    repeats = args.repeats or (15 if size <= 2000 else 5)
    out('')
    out('-- NUMA case: %s memory_mode hosts with %d NUMA cells in %d '
        'cell(s), %d-%d aggregates each, %s instances (%d%% NUMA-bound); '
        '%d rounds x %d hw:numa_nodes=1 requests; built in %.1f s --' % (
            format(size, ','), NUMA_CELLS, args.cells,
            min(cloud.aggregate_counts), max(cloud.aggregate_counts),
            format(cloud.instances, ','),
            round(100.0 * cloud.bound_instances / cloud.instances),
            repeats, len(NUMA_REQUESTS), build_seconds))

    failures = []
    subjects = make_numa_subjects()
    by_label = {s.label: s for s in subjects}
    cache_filter = by_label['PmemCacheFilter']

    # Cold: the first request on an empty ledger, as in a new process.
    cloud.reset_candidates()
    (cold_seconds, cold_result, cold_batched, cold_lazy, cold_db_seconds,
     cold_rows) = _cold_request(cloud, database, cache_filter,
                                make_request_specs(ctxt, NUMA_REQUESTS)[0])

    # Warm: as in bench_size; each request starts with the hosts' own
    # allocation candidates, which NUMATopologyFilter narrows.
    warm_requests, counts, warm_batched, warm_lazy = _warm_rounds(
        cloud, database, subjects,
        lambda: make_request_specs(ctxt, NUMA_REQUESTS), repeats,
        before=cloud.reset_candidates)

    base = by_label[BASE_NUMA_FILTER].best_us
    out('%-34s %8s %8s %8s  %-16s %s' % (
        'class (us per host)', 'best', 'median', 'x NTF', 'hosts',
        'target <= %.1fx NTF' % TARGET_RATIO))
    for subject in subjects:
        ratio = subject.best_us / base
        if subject.name == BASE_NUMA_FILTER:
            verdict = 'baseline'
        elif ratio <= TARGET_RATIO:
            verdict = 'PASS'
        else:
            verdict = 'FAIL'
            failures.append('NUMA case: %s %.2fx NUMATopologyFilter at %s '
                            'hosts' % (subject.label, ratio,
                                       format(size, ',')))
        what = 'pass' if subject.kind == 'filter' else 'scored'
        out('%-34s %8.2f %8.2f %7.2fx  %-16s %s' % (
            subject.label, subject.best_us, subject.median_us, ratio,
            '/'.join(str(c)
                     for c in counts[subject.label][:len(NUMA_REQUESTS)])
            + ' ' + what,
            verdict))

    decision_failures, first = _decisions(cloud, ctxt, by_label, out)
    failures.extend(decision_failures)
    cells_used = len({hs.cell_uuid for hs in cloud.hosts})
    same = [hs.host for hs in cold_result] == first
    failures.extend(_query_verdicts(
        out, 'NUMA ', cold_seconds, cold_db_seconds, cold_rows, size,
        'host', cold_batched, cold_lazy, cells_used, warm_requests,
        len(subjects), warm_batched, warm_lazy, same, size))
    if args.profile:
        profile_ours(cloud, ctxt, subjects, out, requests=NUMA_REQUESTS,
                     bases=(BASE_NUMA_FILTER,))
    return failures


def cloud_arguments(parser, repeats_help):
    """Add the options of the benchmarks on a :class:`Cloud`.

    Its size, its cells, its seed, the rounds, the timer and whether a
    missed target fails the run.
    """
    parser.add_argument('--sizes', default='1000,10000',
                        help='comma-separated host counts (default: '
                             '%(default)s)')
    parser.add_argument('--repeats', type=int, default=0, help=repeats_help)
    parser.add_argument('--cells', type=int, default=2,
                        help='cells the hosts are spread over (default: '
                             '%(default)s)')
    parser.add_argument('--seed', type=int, default=20240229,
                        help='random seed of the instance layout')
    parser.add_argument('--cpu-time', action='store_true',
                        help='time with time.thread_time instead of '
                             'time.perf_counter, for a machine busy with '
                             'other work')
    parser.add_argument('--no-fail', action='store_true',
                        help='report only; always exit 0')


def check_cloud_args(parser, args):
    """Parse ``--sizes`` and check it against ``--cells``."""
    args.sizes = [int(s) for s in args.sizes.split(',') if s.strip()]
    if args.cells < 1 or any(s < args.cells for s in args.sizes):
        parser.error('need at least one cell and one host per cell')


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description='Per-host cost of the nova-pmem-filters filters and '
                    'weighers against AggregateInstanceExtraSpecsFilter and '
                    'RAMWeigher, and their database access.')
    cloud_arguments(parser, 'timed rounds per size (default: 15 up to '
                            '2,000 hosts, 5 above)')
    parser.add_argument('--profile', action='store_true',
                        help='also print a cProfile of each of our classes')
    parser.add_argument('--no-numa', action='store_true',
                        help='skip the NUMA case (NUMA-bound requests on '
                             'hosts with NUMA cells, against '
                             'NUMATopologyFilter)')
    args = parser.parse_args(argv)
    check_cloud_args(parser, args)
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
    if not args.no_numa:
        for name, memory_mb, specs in NUMA_REQUESTS:
            out('NUMA request %s, %d MB: %s' % (
                name, memory_mb,
                ', '.join('%s=%s' % kv for kv in sorted(specs.items()))))
    out('Columns: us per host per request, best and median of the rounds; '
        'x AIES and x RAMW: best over the best of '
        'AggregateInstanceExtraSpecsFilter and of RAMWeigher; hosts: '
        'passed (filters) or scored > 0 (weighers), one figure per '
        'request.')
    if not args.no_numa:
        out('NUMA case columns: x NTF: best over the best of '
            'NUMATopologyFilter, timed in the same rounds.')
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
            if not args.no_numa:
                failures.extend(bench_numa(size, args, database, ctxt,
                                           out))
    out('')
    note = _load_note('at the end')
    if note:
        out(note)
    elapsed = time.perf_counter() - start
    if failures:
        out('VERDICT: FAIL (%.0f s): %s' % (elapsed, '; '.join(failures)))
    else:
        numa = ''
        if not args.no_numa:
            numa = ('; NUMA case: PmemCacheFilter, PmemCacheHeadroomWeigher '
                    'and PmemNumaCellWeigher each <= %.1fx '
                    'NUMATopologyFilter, decisions as computed'
                    % TARGET_RATIO)
        out('VERDICT: PASS (%.0f s): PmemModeFilter and PmemCacheFilter '
            'each <= %.1fx AggregateInstanceExtraSpecsFilter, '
            'PmemTierWeigher, PmemCacheHeadroomWeigher and '
            'PmemNumaCellWeigher each <= %.1fx RAMWeigher per host at %s '
            'hosts; one batched DB load per cell cold, none warm%s.'
            % (elapsed, FILTER_TARGET, WEIGHER_TARGET,
               ' and '.join(format(s, ',') for s in args.sizes), numa))
    return 1 if failures and not args.no_fail else 0


if __name__ == '__main__':
    sys.exit(main())
