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
"""The engine: Nova's placement of each boot on the fleet."""

import fixtures
import hypothesis
from hypothesis import strategies as st
import numpy as np
import testtools

from nova_pmem_filters.core.rules import profile
from nova_pmem_filters.planner import errors
from nova_pmem_filters.planner import simulate
from tests.unit.planner.simulate import base


class ReplayTestCase(testtools.TestCase):

    @base.PROPERTY
    @hypothesis.given(seed=st.integers(0, 10 ** 6),
                      near=st.booleans(),
                      scale=st.sampled_from([0.5, 1.0, 2.0]))
    def test_never_beyond_any_bound(self, seed, near, scale):
        fleet = base.make_fleet(scheduler=simulate.Scheduler(near_memory=near))
        flavors = simulate.flavors_of(base.BUILTIN)
        events = simulate.synthetic({'redis': int(60 * scale),
                                     'mysql': int(50 * scale)},
                                    days=40, lifetime_days=8, seed=seed)
        checked = []

        def check(_count):
            self.assertTrue(np.all(fleet.mem_used <= fleet.mem_cap))
            self.assertTrue(np.all(fleet.vcpu_used <= fleet.vcpu_cap))
            mm = fleet.memory_mode
            self.assertTrue(np.all(fleet.hot_used[mm]
                                   <= fleet.cache_mb[mm] + 1))
            checked.append(1)

        result = simulate.replay(fleet, flavors, events, progress=check)
        self.assertEqual(len(events), len(checked))
        placed = sum(1 for d in result.decisions if d[2])
        self.assertEqual(result.boots, len(result.decisions))
        self.assertEqual(result.boots - placed,
                         sum(sum(v.values())
                             for v in result.rejected.values()))

    def test_model_density_is_reached_by_one_flavor(self):
        # One flavor, more than the fleet holds: every node fills to the
        # per-node model's density, and the rest are rejected by name.
        nodes = {'mm-192-512': 4}
        run = simulate.run(base.BUILTIN, nodes=nodes, mix={'redis': 20000},
                           days=30, lifetime_days=1000, seed=2)
        from nova_pmem_filters.planner import model
        from nova_pmem_filters.planner import vmsizing
        node = model.node(
            base.BUILTIN.configs['mm-192-512'], base.BUILTIN.policies)
        vms, _binding = vmsizing.density(node, base.BUILTIN.workloads['redis'],
                                         base.BUILTIN.policies)
        fleet = run.result.fleet
        self.assertEqual([vms] * 4, list(fleet.instances))
        self.assertGreater(sum(run.result.rejected[
            simulate.NO_RESOURCES].values()) + sum(run.result.rejected[
                'dram_cache'].values()), 0)
        total = run.rows[-1]
        self.assertEqual('total', total['kind'])
        self.assertEqual(4 * vms, total['vms_peak'])

    def test_latency_flavors_stay_on_dram(self):
        scen = base.BUILTIN
        flavors = simulate.flavors_of(scen)
        fleet = base.make_fleet()
        events = simulate.synthetic({'mysql': 40}, days=30, seed=3)
        result = simulate.replay(fleet, flavors, events)
        modes = {k.name: k.profile.mode for k in fleet.kinds}
        allowed = scen.workloads['mysql'].request.modes
        for _uuid, _flavor, host, _reason in result.decisions:
            if host:
                self.assertIn(modes[host.rsplit('-', 1)[0]], allowed)

    def test_unknown_profile_hosts_reject_by_name(self):
        kinds = [simulate.HostKind(
            name='mystery', profile=profile.HostProfile(problem='no mode'),
            vcpus=64, memory_mb=262144, dram_gb=256)]
        fleet = simulate.Fleet(kinds)
        host, reason = fleet.choose(simulate.flavors_of(base.BUILTIN)['redis'])
        self.assertIsNone(host)
        self.assertEqual('unknown_profile', reason)


class ReplayCheckTestCase(testtools.TestCase):
    """A replay refuses what it cannot replay, naming the event."""

    def events(self, *items):
        return [simulate.Event(float(when), kind, uuid, 'redis')
                for when, kind, uuid in items]

    def replay(self, events, **kwargs):
        return simulate.replay(base.make_fleet(),
                               simulate.flavors_of(base.BUILTIN), events,
                               **kwargs)

    def test_a_far_event_is_refused_before_any_sampling(self):
        events = self.events((0, 'boot', 'a'), (1e12, 'boot', 'b'))
        exc = self.assertRaises(errors.TraceError, self.replay, events)
        self.assertIn('event 2 (boot of instance b at 1e+12 s)', str(exc))
        self.assertIn('more than %d samples' % simulate.MAX_SAMPLES,
                      str(exc))
        # Sampled less often (every 10^6 days), the same trace replays.
        result = self.replay(events, sample_days=1e6)
        self.assertEqual(13, len(result.timeline))

    def test_the_bound_on_samples(self):
        self.useFixture(fixtures.MonkeyPatch(
            'nova_pmem_filters.planner.simulate.engine.MAX_SAMPLES', 50))
        day = simulate.SECONDS_PER_DAY
        result = self.replay(self.events((0, 'boot', 'a'),
                                         (50 * day - 1, 'delete', 'a')))
        self.assertEqual(51, len(result.timeline))
        self.assertRaises(errors.TraceError, self.replay,
                          self.events((0, 'boot', 'a'),
                                      (50 * day, 'delete', 'a')))

    def test_boots_and_deletes_in_turn(self):
        for events, message in (
                (self.events((0, 'boot', 'a'), (1, 'boot', 'a')),
                 'event 2: instance a boots again without a delete'),
                (self.events((0, 'boot', 'a'), (1, 'delete', 'b')),
                 'event 2: instance b is deleted but is not running')):
            exc = self.assertRaises(errors.TraceError, self.replay, events)
            self.assertEqual(message, str(exc))
