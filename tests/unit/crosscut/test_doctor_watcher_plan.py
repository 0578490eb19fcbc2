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
"""The doctor and Watcher give the same plan for the same cloud.

One recorded cloud (hosts, aggregates, instances in several Nova states,
the working sets measured) is fed through the doctor's path (a snapshot:
Placement's providers, the servers with their API status, the observers'
windows; ``cloud.rebalance_hosts`` and the check's fix) and through the
Watcher strategy's (its compute model, with each instance's vm_state, the
aggregates and the working sets Prometheus gives; ``watcher.inputs``).
Both must propose the same live migrations.

Watcher's own model cannot be built in this process (Watcher and Nova
cannot share one, tests/unit/watcher/harness.py): a stand-in with the
fields and methods of ``ModelRoot`` that ``watcher.inputs`` reads holds
the cloud, and counts free resources as ``get_node_free_resources``
does.
"""

import types

import testtools

from nova_pmem_filters.conf import schedulerconf
from nova_pmem_filters.core.plans import rebalance
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters.doctor import checks
from nova_pmem_filters.doctor.checks import observations
from nova_pmem_filters.doctor import cloud
from nova_pmem_filters.doctor import snapshot as snap_mod
from nova_pmem_filters.watcher import inputs
from tests.unit import obsdocs

GB = 1024
RESERVED_MB = 512
VCPU_RATIO = 2.0
MM_ONLY = {'pmem:modes': kinds.MEMORY_MODE}
# Nova's API status of each vm_state the cloud holds (Watcher reads the
# vm_state, the doctor the status).
STATUS = {'active': 'ACTIVE', 'stopped': 'SHUTOFF', 'paused': 'PAUSED',
          'suspended': 'SUSPENDED', 'shelved': 'SHELVED'}

# host: (memory GB, vCPUs, aggregate metadata).
HOSTS = {
    'mm1': (64, 32, profile.metadata(kinds.MEMORY_MODE, 8)),
    'mm2': (64, 32, profile.metadata(kinds.MEMORY_MODE, 8)),
    'mm3': (64, 32, profile.metadata(kinds.MEMORY_MODE, 4)),
    'dram1': (16, 32, profile.metadata(kinds.DRAM)),
}
# (name, host, RAM MB, vCPUs, extra specs, vm_state, working set MB).
INSTANCES = (
    # mm1 measures 11500 MB on 8192 MB of near memory: over.
    ('vm1', 'mm1', 4096, 2, {}, 'active', 3000.0),
    ('vm2', 'mm1', 4096, 2, MM_ONLY, 'active', 3500.0),
    ('vm3', 'mm1', 2048, 2, MM_ONLY, 'active', 2500.0),
    # As vm3, but paused: measured, and it stays (no live migration).
    ('vm4', 'mm1', 2048, 2, MM_ONLY, 'paused', 2500.0),
    # No guest runs: no window measures it, and it touches nothing.
    ('vm5', 'mm1', 8192, 4, {}, 'stopped', None),
    ('vm6', 'mm2', 4096, 2, {}, 'active', 2000.0),
    ('vm7', 'mm2', 2048, 2, MM_ONLY, 'shelved', None),
    ('vm8', 'mm2', 1024, 2, {}, 'suspended', None),
    # Running and not measured: mm3 is not judged.
    ('vm9', 'mm3', 4096, 2, {}, 'active', None),
    ('vm10', 'dram1', 2048, 2, {}, 'active', 1500.0),
)


def uuid(name):
    return '00000000-0000-4000-8000-%012d' % int(name[2:])


def on(host):
    return [i for i in INSTANCES if i[1] == host]


def doctor_snapshot():
    """The cloud as the doctor reads it from Nova, Placement, observers."""
    servers = tuple(
        snap_mod.Server(id=uuid(name), name=name, host=host,
                        status=STATUS[state], flavor_name='f-' + name,
                        ram_mb=ram, extra_specs=dict(specs), vcpus=vcpus)
        for name, host, ram, vcpus, specs, state, _ws in INSTANCES)
    providers = {}
    for host, (memory_gb, vcpus, _meta) in HOSTS.items():
        # Placement keeps the allocations of guests that do not run.
        providers[host] = snap_mod.Provider(
            uuid='rp-' + host, name=host, traits=frozenset(),
            inventories={
                'MEMORY_MB': {'total': memory_gb * GB,
                              'reserved': RESERVED_MB,
                              'allocation_ratio': 1.0},
                'VCPU': {'total': vcpus, 'allocation_ratio': VCPU_RATIO}},
            usages={'MEMORY_MB': sum(i[2] for i in on(host)),
                    'VCPU': sum(i[3] for i in on(host))})
    windows = tuple(
        obsdocs.document(host, [
            obsdocs.instance(uuid(name), 'f-' + name, ram, ws / ram,
                             name=name)
            for name, _h, ram, _v, _s, _st, ws in on(host)
            if ws is not None], nodes=[],
            near_memory_mb=profile.from_metadata(
                [HOSTS[host][2]]).cache_capacity_mb())
        for host in sorted(HOSTS))
    return snap_mod.Snapshot(
        aggregates=tuple(snap_mod.Aggregate('agg-' + h, str(n), (h,), meta)
                         for n, (h, (_m, _v, meta)) in enumerate(
                             sorted(HOSTS.items()))),
        computes=tuple(snap_mod.Compute(h, (h,)) for h in sorted(HOSTS)),
        servers=servers, providers=providers,
        config=schedulerconf.defaults(), observations=windows)


class _Model(object):
    """The ModelRoot methods watcher.inputs calls, on the recorded cloud."""

    def __init__(self):
        self.nodes = {
            'node-' + h: types.SimpleNamespace(
                uuid='node-' + h, hostname=h, memory=memory_gb * GB,
                memory_mb_reserved=RESERVED_MB, memory_ratio=1.0,
                vcpus=vcpus, vcpu_reserved=0, vcpu_ratio=VCPU_RATIO,
                state='up', status='enabled')
            for h, (memory_gb, vcpus, _meta) in HOSTS.items()}
        self.instances = {
            h: [types.SimpleNamespace(
                uuid=uuid(name), name=name, memory=ram, vcpus=vcpus,
                flavor_extra_specs=dict(specs), state=state,
                watcher_exclude=False)
                for name, _h, ram, vcpus, specs, state, _ws in on(h)]
            for h in HOSTS}

    def get_all_compute_nodes(self):
        return dict(self.nodes)

    def get_node_instances(self, node):
        return list(self.instances[node.hostname])

    def get_node_free_resources(self, node):
        # Capacity x allocation ratio, less reserved, less the flavors.
        mine = self.instances[node.hostname]
        return {
            'memory': ((node.memory - node.memory_mb_reserved)
                       * node.memory_ratio - sum(i.memory for i in mine)),
            'vcpu': ((node.vcpus - node.vcpu_reserved) * node.vcpu_ratio
                     - sum(i.vcpus for i in mine))}


def watcher_hosts():
    """The plan's hosts as the Watcher strategy builds them."""
    aggregates = [types.SimpleNamespace(hosts=[h], metadata=meta)
                  for h, (_m, _v, meta) in sorted(HOSTS.items())]
    # Prometheus gives the working sets of the running guests it saw.
    measured = {uuid(i[0]): i[6] for i in INSTANCES if i[6] is not None}
    hosts, left_out = inputs.hosts(_Model(), aggregates, measured,
                                   kinds.DRAM)
    return hosts, left_out


class SamePlanTestCase(testtools.TestCase):

    def plans(self):
        snap = doctor_snapshot()
        view = cloud.view(snap)
        config = view.config
        options = dict(cache_overcommit_ratio=config.cache_overcommit_ratio,
                       defaults=config.defaults)
        doctor = rebalance.plan(cloud.rebalance_hosts(snap, view), **options)
        hosts, left_out = watcher_hosts()
        self.assertEqual([], left_out)
        watcher = rebalance.plan(hosts, **options)
        return snap, doctor, watcher

    def test_same_hosts_given_to_the_plan(self):
        snap = doctor_snapshot()
        doctor = cloud.rebalance_hosts(snap, cloud.view(snap))
        watcher, _left_out = watcher_hosts()
        # Placement's room and the API's statuses on one side, the
        # model's and its vm_states on the other: the same records.
        self.assertEqual(sorted(watcher, key=lambda h: h.name),
                         sorted(doctor, key=lambda h: h.name))
        instances = {i.name: i for h in doctor for i in h.instances}
        self.assertEqual(0.0, instances['vm5'].working_set_mb)
        self.assertFalse(instances['vm4'].movable)
        self.assertIsNone(instances['vm9'].working_set_mb)

    def test_same_moves(self):
        _snap, doctor, watcher = self.plans()
        self.assertTrue(doctor.moves, 'the cloud must need a move')
        self.assertEqual(doctor.moves, watcher.moves)
        self.assertEqual(doctor.unfixed, watcher.unfixed)
        self.assertEqual((doctor.before, doctor.after),
                         (watcher.before, watcher.after))
        moved = {m.name for m in doctor.moves}
        # Only active instances move; the paused twin of vm3 stays.
        self.assertEqual(set(), moved & {'vm4', 'vm5', 'vm7', 'vm8'})
        # mm1 is judged (its stopped guest counts 0 MB) and fixed; mm3 is
        # not judged.
        self.assertEqual(['mm3'], [u.host for u in doctor.unfixed])
        self.assertEqual(rebalance.UNMEASURED, doctor.unfixed[0].reason)

    def test_the_doctor_prints_the_moves(self):
        snap, _doctor, watcher = self.plans()
        found = [f for f in checks.run(snap)
                 if f.code == 'working-set-over-near-memory'
                 and f.object.startswith('host mm1')]
        self.assertEqual(1, len(found), found)
        printed = [line for line in found[0].fix.splitlines()
                   if not line.startswith('#')]
        self.assertEqual([observations.migrate_line(m)
                          for m in watcher.moves], printed)
