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
"""Snapshots of a cloud for the doctor's tests, one defect at a time.

``clean()`` is a cloud set up as the docs say (the integration deployment's
shape)::

    aggregate dram    pmem_mode=dram                          dram1
    aggregate pmem-mm pmem_mode=memory_mode, cache 192 GB     mm1, mm2
    aggregate pmem-ad pmem_mode=app_direct                    ad1

with both filters and weighers configured, two scheduler workers, every
Memory-Mode flavor accounted in Placement and providers as
nova-pmem-discover describes them. It has no finding; each test plants one
defect and expects exactly the findings it causes.
"""


import dataclasses
import os
import subprocess

import fixtures
import testtools

from nova_pmem_filters.conf import schedulerconf
from nova_pmem_filters.core.formats import discoveredhost
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import placement
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters.discover import outputs
from nova_pmem_filters.doctor import checks
from nova_pmem_filters.doctor import snapshot as snap_mod

GB = 1024
HOSTS = {'dram1': (kinds.DRAM, 384), 'mm1': (kinds.MEMORY_MODE, 192),
         'mm2': (kinds.MEMORY_MODE, 192), 'ad1': (kinds.APP_DIRECT, 192)}
NEAR = 'resources:CUSTOM_NEAR_MEMORY_MB'


# A stand-in tool: each call leaves N.args (its arguments, a line each) and
# N.stdin (what it read) in $RECORD, N counting from 0.
_RECORDER = '''#!/bin/sh
n=$(($(ls "$RECORD" | wc -l) / 2))
printf '%s\\n' "$@" > "$RECORD/$n.args"
cat > "$RECORD/$n.stdin"
'''


def run_recorded(test, script, tools=('ssh', 'openstack')):
    """Run ``script`` as a printed fix runs (``sh -e``), ``tools`` recorded.

    :returns: a list, in call order, of (arguments, lines of standard
        input) of each call of a recorded tool.
    """
    tmp = test.useFixture(fixtures.TempDir()).path
    bin_dir, record = os.path.join(tmp, 'bin'), os.path.join(tmp, 'record')
    os.mkdir(bin_dir)
    os.mkdir(record)
    for name in tools:
        path = os.path.join(bin_dir, name)
        with open(path, 'w') as f:
            f.write(_RECORDER)
        os.chmod(path, 0o755)
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ['PATH'],
               RECORD=record)
    proc = subprocess.run(['sh', '-ec', script], env=env, timeout=30,
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)
    test.assertEqual(0, proc.returncode, proc.stdout)
    calls = []
    for n in range(len(os.listdir(record)) // 2):
        with open(os.path.join(record, '%d.args' % n)) as f:
            args = f.read().splitlines()
        with open(os.path.join(record, '%d.stdin' % n)) as f:
            calls.append((args, f.read().splitlines()))
    return calls


def config(**changes):
    values = dict(
        files=('nova.conf',),
        available_filters=('nova.scheduler.filters.all_filters',
                           'nova_pmem_filters.filters.all_filters'),
        enabled_filters=('ComputeFilter', 'PmemModeFilter',
                         'PmemCacheFilter'),
        weight_classes=('nova.scheduler.weights.all_weighers',
                        'nova_pmem_filters.weighers.all_weighers'),
        scheduler_workers=2, default_host_mode=kinds.DRAM,
        default_flavor_modes=kinds.MODES, default_hot_ratio=0.5,
        cache_overcommit_ratio=1.0)
    values.update(changes)
    return schedulerconf.NovaConfig(**values)


def discovered(host, mode=None, dram_gb=None, cache_gb=None):
    label, dram = HOSTS[host]
    mode = mode or label
    dram = dram_gb if dram_gb is not None else dram
    cache = (cache_gb if cache_gb is not None else dram) \
        if mode == kinds.MEMORY_MODE else 0.0
    return discoveredhost.DiscoveredHost(
        source='fleet/%s.json' % host, hostname=host, hardware_mode=mode,
        mode=mode, visible_memory_gb=512.0 if mode == kinds.MEMORY_MODE
        else float(dram), dram_cache_gb=float(cache), dram_gb=float(dram))


def discovery_output(prof):
    """The discovery output fields ``prof`` was read from."""
    return {'hostname': prof.hostname, 'mode': prof.hardware_mode,
            'scheduler_mode': prof.mode, 'dram_gb': prof.dram_gb,
            'dram_cache_gb': prof.dram_cache_gb}


def provider(host, prof=None):
    prof = prof or discovered(host)
    conf = outputs.provider_config(prof)['providers'][0]
    inventory = conf['inventories']['additional'][0][placement.NEAR_MEMORY_RC]
    return snap_mod.Provider(
        uuid='uuid-%s' % host, name=host,
        traits=frozenset(conf['traits']['additional']) | {'COMPUTE_NODE'},
        inventories={'VCPU': {'total': 80},
                     placement.NEAR_MEMORY_RC: dict(inventory)})


def flavor(name, ram_gb, **specs):
    return snap_mod.Flavor(name=name, id='id-%s' % name, ram_mb=ram_gb * GB,
                           extra_specs=dict(specs))


def server(name, host, ram_gb, **specs):
    # 4 vCPUs: the flavor the stub cloud of test_cli serves.
    return snap_mod.Server(id='id-%s' % name, name=name, host=host,
                           status='ACTIVE', flavor_name='f',
                           ram_mb=ram_gb * GB, extra_specs=dict(specs),
                           vcpus=4)


def clean():
    return snap_mod.Snapshot(
        aggregates=(
            snap_mod.Aggregate('dram', '1', ('dram1',),
                               {profile.MODE_KEY: kinds.DRAM}),
            snap_mod.Aggregate('pmem-mm', '2', ('mm1', 'mm2'),
                               {profile.MODE_KEY: kinds.MEMORY_MODE,
                                profile.DRAM_CACHE_KEY: '192',
                                'availability_zone': 'az1'}),
            snap_mod.Aggregate('pmem-ad', '3', ('ad1',),
                               {profile.MODE_KEY: kinds.APP_DIRECT})),
        flavors=(
            # 2 GB at the default hot ratio 0.5: 1024 MB near memory.
            flavor('small', 2, **{NEAR: '1024'}),
            flavor('capacity', 32, **{'pmem:modes': 'memory_mode',
                                      'pmem:priority': 'low',
                                      'pmem:hot_ratio': '0.25',
                                      NEAR: '8192'}),
            flavor('latency', 8, **{'pmem:modes': 'dram,app_direct',
                                    'pmem:priority': 'high'}),
            flavor('vpmem', 8, **{'hw:pmem': 'SMALL'})),
        computes=tuple(snap_mod.Compute(h, (h,)) for h in sorted(HOSTS)),
        servers=(server('c1', 'mm1', 32, **{'pmem:hot_ratio': '0.25'}),
                 server('s1', 'dram1', 2)),
        providers={h: provider(h) for h in HOSTS},
        config=config(),
        fleet=tuple(discovered(h) for h in sorted(HOSTS)))


def replace(snap, **changes):
    return dataclasses.replace(snap, **changes)


def with_aggregate(snap, name, hosts=None, **metadata):
    """``snap`` with aggregate ``name`` changed (metadata None removes)."""
    aggs = []
    found = False
    for agg in snap.aggregates:
        if agg.name == name:
            found = True
            meta = dict(agg.metadata)
            for key, value in metadata.items():
                if value is None:
                    meta.pop(key, None)
                else:
                    meta[key] = value
            agg = dataclasses.replace(
                agg, metadata=meta,
                hosts=tuple(hosts) if hosts is not None else agg.hosts)
        aggs.append(agg)
    if not found:
        aggs.append(snap_mod.Aggregate(name, str(len(aggs) + 1),
                                       tuple(hosts or ()), dict(metadata)))
    return replace(snap, aggregates=tuple(aggs))


def with_flavor(snap, new):
    return replace(snap, flavors=tuple(
        f for f in snap.flavors if f.name != new.name) + (new,))


def with_provider(snap, host, **changes):
    providers = dict(snap.providers)
    providers[host] = dataclasses.replace(providers[host], **changes)
    return replace(snap, providers=providers)


def ad_with_namespaces():
    """ad1 with three named devdax namespaces, as discovery lists them.

    ns0 (126 GiB usable, label 128GB) on node 0, ns1 (128GB) and ns2 (252
    GiB, label 256GB) on node 1; Placement has the inventories Nova makes
    of ``[libvirt] pmem_namespaces = 128GB:ns0|ns1,256GB:ns2``.
    """
    namespaces = (
        discoveredhost.Namespace('ns0', 'namespace0.0', 'devdax', 0, 126.0),
        discoveredhost.Namespace('ns1', 'namespace1.0', 'devdax', 1, 126.0),
        discoveredhost.Namespace('ns2', 'namespace1.1', 'devdax', 1, 252.0),
        discoveredhost.Namespace(None, 'namespace0.1', 'fsdax', 0, 500.0))
    snap = clean()
    fleet = tuple(dataclasses.replace(p, namespaces=namespaces)
                  if p.hostname == 'ad1' else p for p in snap.fleet)
    inventories = dict(snap.providers['ad1'].inventories)
    inventories['CUSTOM_PMEM_NAMESPACE_128GB'] = {'total': 2}
    inventories['CUSTOM_PMEM_NAMESPACE_256GB'] = {'total': 1}
    return with_provider(replace(snap, fleet=fleet), 'ad1',
                         inventories=inventories)


def vpmem_server(name, label, numa_nodes, host='ad1'):
    """An 8 GB server with vPMEM, its memory even over its guest nodes."""
    cells = None if numa_nodes is None else tuple(
        (node, 8 * GB // len(numa_nodes)) for node in numa_nodes)
    return dataclasses.replace(
        server(name, host, 8, **{'hw:pmem': label}), numa_nodes=numa_nodes,
        numa_cells=cells)


def bound_server(name, host, cells, hot_ratio='1'):
    """A server bound to host NUMA cells: {host cell: GB}."""
    return dataclasses.replace(
        server(name, host, sum(cells.values()),
               **{'pmem:hot_ratio': hot_ratio}),
        numa_nodes=tuple(cells),
        numa_cells=tuple((cell, gb * GB) for cell, gb in cells.items()))


class DoctorTestCase(testtools.TestCase):

    def findings(self, snap):
        return checks.run(snap)

    def assertFindings(self, snap, *expected):
        """Exactly these (severity, code, object) findings, in any order."""
        found = self.findings(snap)
        got = sorted((f.severity, f.code, f.object) for f in found)
        self.assertEqual(sorted(expected), got,
                         '\n'.join('%s %s %s: %s' % (f.severity, f.code,
                                                     f.object, f.problem)
                                   for f in found))
        return {(f.code, f.object): f for f in found}
