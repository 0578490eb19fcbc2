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
"""pmem:priority steers between tiers against Nova's default weighers.

The flavors allow both dram1 (384 GB) and mm1 (512 GB), so both pass the
filters and only the weighers choose. Each test first boots a flavor of
``normal`` priority to show where Nova's own weighers send it, then shows
that ``high`` or ``low`` lands on the other host, repeatedly.
"""

from tests.functional import base


class TierSteeringTest(base.PmemTestBase):

    HOSTS = (base.DRAM, base.MEMORY_MODE)
    AGGREGATES = (base.DRAM_AGGREGATE, base.MEMORY_MODE_AGGREGATE)

    def _flavor(self, priority):
        return self._create_pmem_flavor(
            'db-%s' % priority, memory_gb=16,
            extra_specs={'pmem:modes': 'dram,memory_mode',
                         'pmem:priority': priority})

    def _hosts_of(self, flavor, count):
        return [self._host_of(self._boot(flavor)) for _ in range(count)]

    def test_high_priority_stays_on_dram_while_ram_weigher_spreads(self):
        # RAMWeigher (multiplier 1.0, spreading) prefers mm1, which has the
        # most free RAM, and PmemCacheHeadroomWeigher prefers it too.
        self.assertEqual([base.MM_HOST],
                         self._hosts_of(self._flavor('normal'), 1))
        self.assertEqual([base.DRAM_HOST] * 3,
                         self._hosts_of(self._flavor('high'), 3))

    def test_low_priority_goes_to_memory_mode_while_ram_weigher_stacks(self):
        # A negative RAM multiplier packs hosts: RAMWeigher now prefers
        # dram1, which has less free RAM. PmemCacheHeadroomWeigher, which
        # prefers mm1 for any flavor, is turned off so that only
        # PmemTierWeigher works against Nova's weighers.
        self.flags(ram_weight_multiplier=-1.0, group='filter_scheduler')
        self.flags(cache_headroom_weight_multiplier=0.0, group='pmem')
        self.assertEqual([base.DRAM_HOST],
                         self._hosts_of(self._flavor('normal'), 1))
        self.assertEqual([base.MM_HOST] * 3,
                         self._hosts_of(self._flavor('low'), 3))

    def test_aggregate_multiplier_zero_turns_steering_off(self):
        # pmem_tier_weight_multiplier in aggregate metadata overrides
        # [pmem] tier_weight_multiplier, as Nova's own *_weight_multiplier
        # keys do.
        for aggregate in (base.DRAM_AGGREGATE, base.MEMORY_MODE_AGGREGATE):
            self.admin_api.post_aggregate_action(
                self.aggregates[aggregate.name],
                {'set_metadata': {'metadata': {
                    'pmem_tier_weight_multiplier': '0'}}})
        self.assertEqual([base.MM_HOST],
                         self._hosts_of(self._flavor('high'), 1))
