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
"""The simulator replays a trace exactly as the in-process Nova places it.

Six hosts (two per memory mode, each a little different in RAM so that
RAMWeigher never ties: Nova orders equal weights by a set's order) and four
flavors: latency-bound on DRAM tiers at high priority, capacity at low
priority with a small hot ratio, a database flavor and one without pmem
specs. A seeded trace of more than 200 boots and deletes, more than the
fleet holds, goes through the compute API one event at a time and through
the simulator, whose fleet is built from what Placement reports; every
boot lands on the same host or fails with NoValidHost in both.

``host_subset_size`` is 1 (the default) and the weighers are RAMWeigher,
CPUWeigher, PmemTierWeigher and PmemCacheHeadroomWeigher in that order.

The second test does the same with Placement accounting: every host reports
its near memory (``CUSTOM_NEAR_MEMORY_MB``) through a provider config, as
the discovery tool writes it, and every flavor requests its hot MB of it.

Nova's scheduler hears of a boot or a delete after the API has answered
(the compute node record, the instances nova-compute casts to it): before
each boot the test waits until it has (``PmemTestBase._settle``). The third
test delivers those casts late on purpose, as a busy message bus would, and
the simulator must still match.
"""

import collections
import os
import threading

import fixtures
import yaml

from nova.scheduler import host_manager

from nova_pmem_filters.core.formats import providerconfig
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import placement
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters.planner import simulate
from tests.functional import base

SizedHost = collections.namedtuple('SizedHost', 'name vcpus memory_mb')

HOSTS = (SizedHost('dram1', 8, 24 * 1024 + 112),
         SizedHost('dram2', 8, 20 * 1024 + 304),
         SizedHost('mm1', 8, 40 * 1024 + 176),
         SizedHost('mm2', 8, 36 * 1024 + 48),
         SizedHost('ad1', 8, 16 * 1024 + 400),
         SizedHost('ad2', 8, 18 * 1024 + 240))
AGGREGATES = (
    base.Aggregate('dram', ['dram1', 'dram2'],
                   {profile.MODE_KEY: kinds.DRAM}),
    base.Aggregate('pmem-mm', ['mm1', 'mm2'],
                   {profile.MODE_KEY: kinds.MEMORY_MODE,
                    profile.DRAM_CACHE_KEY: '6'}),
    base.Aggregate('pmem-ad', ['ad1', 'ad2'],
                   {profile.MODE_KEY: kinds.APP_DIRECT}))
FLAVORS = {
    'lat': (2, 2, {'pmem:modes': 'dram,app_direct',
                   'pmem:priority': 'high'}),
    'cap': (1, 4, {'pmem:priority': 'low', 'pmem:hot_ratio': '0.25'}),
    'db': (2, 2, {'pmem:hot_ratio': '0.5'}),
    'any': (1, 1, {}),
}
# Steady-state VMs of each flavor: more than the hosts hold together.
MIX = {'lat': 30, 'cap': 16, 'db': 20, 'any': 24}
EVENTS = 220


class SimulatorMatchesNovaTest(base.PmemTestBase):

    # A whole trace boots one server after another: on a loaded 2-core
    # machine that took 161 s, past OS_TEST_TIMEOUT (160 s). The timeout
    # guards against a hang, not a slow machine: three times it here.
    TIMEOUT_SCALING_FACTOR = 3
    HOSTS = ()
    AGGREGATES = ()
    # Flavors request their hot MB from Placement.
    NEAR_MEMORY = False

    def scheduler_flags(self):
        flags = super().scheduler_flags()
        flags.update(host_subset_size=1,
                     shuffle_best_same_weighed_hosts=False,
                     weight_classes=[
                         'nova.scheduler.weights.ram.RAMWeigher',
                         'nova.scheduler.weights.cpu.CPUWeigher',
                         'nova_pmem_filters.weighers.PmemTierWeigher',
                         'nova_pmem_filters.weighers.'
                         'PmemCacheHeadroomWeigher'])
        return flags

    def _near_gb(self, host):
        """DRAM the host reports as near memory, GB."""
        md = next(a.metadata for a in AGGREGATES if host.name in a.hosts)
        if md[profile.MODE_KEY] == kinds.MEMORY_MODE:
            return float(md[profile.DRAM_CACHE_KEY])
        return host.memory_mb / profile.MB_PER_GB

    def _flavors(self):
        flavors = {}
        for name, (vcpus, gb, specs) in FLAVORS.items():
            specs = dict(specs)
            if self.NEAR_MEMORY:
                ratio = float(specs.get('pmem:hot_ratio', '0.5'))
                specs.update(placement.near_memory_spec(
                    gb * profile.MB_PER_GB, ratio))
            flavors[name] = (vcpus, gb, specs)
        return flavors

    def setUp(self):
        if self.NEAR_MEMORY:
            conf_dir = self.useFixture(fixtures.TempDir()).path
            for host in HOSTS:
                inventory = placement.near_memory_inventory(
                    'memory_mode' if host.name.startswith('mm') else 'dram',
                    self._near_gb(host))
                with open(os.path.join(conf_dir, '%s.yaml' % host.name),
                          'w') as f:
                    yaml.safe_dump(providerconfig.near_memory_provider_config(
                        inventory, name=host.name), f)
            self.flags(provider_config_location=conf_dir, group='compute')
        super().setUp()
        for host in HOSTS:
            compute = self._start_compute(host.name)
            driver = compute.manager.driver
            driver.vcpus = host.vcpus
            driver.memory_mb = host.memory_mb
            driver.local_gb = 10000
            driver.resources = base.fake.Resources(
                vcpus=host.vcpus, memory_mb=host.memory_mb, local_gb=10000)
        self._run_periodics()
        for aggregate in AGGREGATES:
            self._create_pmem_aggregate(aggregate)

    def _fleet(self):
        """The simulator's fleet, from Placement's inventories."""
        by_host = {h: md for agg in AGGREGATES for h in agg.hosts
                   for md in [agg.metadata]}
        kinds = []
        for host in HOSTS:
            inv = self._get_provider_inventory(
                self._get_provider_uuid_by_host(host.name))
            near = inv.get(placement.NEAR_MEMORY_RC)
            self.assertEqual(self.NEAR_MEMORY, near is not None)
            kinds.append(simulate.HostKind(
                name=host.name,
                profile=profile.from_metadata([by_host[host.name]]),
                vcpus=inv['VCPU']['total'],
                memory_mb=inv['MEMORY_MB']['total'],
                dram_gb=(near['total'] if near else
                         inv['MEMORY_MB']['total']) / profile.MB_PER_GB,
                reserved_host_memory_mb=inv['MEMORY_MB']['reserved'],
                ram_allocation_ratio=inv['MEMORY_MB']['allocation_ratio'],
                cpu_allocation_ratio=inv['VCPU']['allocation_ratio']))
        fleet = simulate.Fleet(kinds)
        # Kind names carry a serial: map them back to the hosts.
        fleet.names = [h.name for h in HOSTS]
        return fleet

    def test_same_host_for_every_request(self):
        table = self._flavors()
        flavors = {name: simulate.Flavor(name, vcpus, gb * profile.MB_PER_GB,
                                         specs)
                   for name, (vcpus, gb, specs) in table.items()}
        events = simulate.synthetic(MIX, days=60, lifetime_days=20,
                                    seed=7)[:EVENTS]
        self.assertGreaterEqual(len(events), 200)
        fleet = self._fleet()
        sim = simulate.replay(fleet, flavors, events).decisions
        sim_hosts = [host for _uuid, _flavor, host, _reason in sim]

        flavor_ids = {name: self._create_pmem_flavor(
            name, memory_gb=gb, vcpus=vcpus, extra_specs=specs)
            for name, (vcpus, gb, specs) in table.items()}
        servers = {}
        nova_hosts = []
        for event in events:
            if event.kind == simulate.BOOT:
                # The simulator decides on the state every earlier event
                # left; Nova on what its scheduler has heard of them.
                self._settle()
                server = self._boot(flavor_ids[event.flavor],
                                    expected_state=None)
                servers[event.instance] = server
                nova_hosts.append(self._host_of(server))
                if server['status'] == 'ERROR':
                    self._assert_no_valid_host(server)
            else:
                self._delete(servers.pop(event.instance))
        # Every cast has reached the scheduler before its service stops.
        self._settle()
        boots = [e for e in events if e.kind == simulate.BOOT]
        self.assertEqual(len(boots), len(nova_hosts))
        # The trace fills the fleet: some boots fail, most land, and every
        # mode is used.
        self.assertIn(None, nova_hosts)
        self.assertGreater(sum(h is not None for h in nova_hosts), 100)
        self.assertEqual({h.name for h in HOSTS},
                         set(nova_hosts) - {None})
        for i, (nova, simulated) in enumerate(zip(nova_hosts, sim_hosts)):
            self.assertEqual(
                nova, simulated, 'boot %d (%s, flavor %s): Nova chose %s, '
                'the simulator %s' % (i, boots[i].instance, boots[i].flavor,
                                      nova, simulated))


class SimulatorMatchesNovaNearMemoryTest(SimulatorMatchesNovaTest):
    """The same trace with near memory accounted by Placement."""

    NEAR_MEMORY = True


# How late the scheduler gets the instances nova-compute casts to it.
CAST_DELAY_S = 0.2


def _late(method):
    def deliver_later(self, *args, **kwargs):
        threading.Timer(CAST_DELAY_S, method, (self,) + args, kwargs).start()
    return deliver_later


class SimulatorMatchesNovaLateCastsTest(SimulatorMatchesNovaTest):
    """The same trace with the computes' casts reaching the scheduler late."""

    def setUp(self):
        for name in ('update_instance_info', 'delete_instance_info'):
            self.useFixture(fixtures.MonkeyPatch(
                'nova.scheduler.host_manager.HostManager.' + name,
                _late(getattr(host_manager.HostManager, name))))
        super().setUp()
