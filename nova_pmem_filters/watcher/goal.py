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
"""The goal ``near_memory_balance`` and its efficacy indicators.

A tiered host (PMem Memory Mode, CXL memory behind DRAM) whose measured
working set exceeds its near memory serves hot pages from the slow tier.
The goal is every such host back under its near memory. A solution states
how many hosts were over before and are after, the memory its migrations
move and how many there are; its global efficacy is the share of the hosts
over that it brings back under.
"""

from watcher.decision_engine.goal import base
from watcher.decision_engine.goal.efficacy import base as efficacy_base
from watcher.decision_engine.goal.efficacy import indicators
from watcher.decision_engine.solution import efficacy

NAME = 'near_memory_balance'
DISPLAY_NAME = 'Near memory balance'


class _Count(indicators.IndicatorSpecification):
    """A whole number of hosts."""

    def __init__(self, name, description):
        super().__init__(name=name, description=description, unit=None)

    @property
    def schema(self):
        return {'type': 'integer', 'minimum': 0}


class HostsOverBefore(_Count):
    def __init__(self):
        super().__init__('hosts_over_near_memory_before',
                         'Tiered hosts whose measured working set is over '
                         'their near memory (act_above) before the plan.')


class HostsOverAfter(_Count):
    def __init__(self):
        super().__init__('hosts_over_near_memory_after',
                         'Of those, the hosts the plan does not bring to '
                         'aim_below x their near memory.')


class HostsNotJudged(_Count):
    def __init__(self):
        super().__init__('hosts_not_judged',
                         'Tiered hosts not planned on: a working set not '
                         'measured, or their profile unknown.')


class MemoryMoved(indicators.IndicatorSpecification):
    def __init__(self):
        super().__init__(name='memory_moved_mb',
                         description='Flavor RAM of the instances the plan '
                         'migrates.', unit='MB')

    @property
    def schema(self):
        return {'type': 'number', 'minimum': 0}


class NearMemoryBalanceSpecification(efficacy_base.EfficacySpecification):
    """The indicators a ``near_memory_balance`` solution states."""

    def get_indicators_specifications(self):
        return [HostsOverBefore(), HostsOverAfter(), HostsNotJudged(),
                MemoryMoved(), indicators.InstanceMigrationsCount()]

    def get_global_efficacy_indicator(self, indicators_map=None):
        value = 0.0
        if indicators_map and indicators_map.hosts_over_near_memory_before:
            before = indicators_map.hosts_over_near_memory_before
            value = 100.0 * (before - indicators_map.
                             hosts_over_near_memory_after) / before
        return [efficacy.Indicator(
            name='hosts_brought_under_ratio',
            description='Share of the hosts over their near memory that '
            'the plan brings back under it.', unit='%', value=value)]


class NearMemoryBalance(base.Goal):
    """Near memory balance

    Every tiered host's measured working set within its near memory (the
    DRAM cache of a Memory-Mode host, the DRAM in front of CXL memory).
    """

    @classmethod
    def get_name(cls):
        return NAME

    @classmethod
    def get_display_name(cls):
        return DISPLAY_NAME

    @classmethod
    def get_translatable_display_name(cls):
        return DISPLAY_NAME

    @classmethod
    def get_efficacy_specification(cls):
        return NearMemoryBalanceSpecification()
