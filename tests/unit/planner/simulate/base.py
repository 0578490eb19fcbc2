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
"""What the simulator's tests share: the built-in scenario and a small fleet.
"""

import hypothesis

from nova_pmem_filters.planner import scenario
from nova_pmem_filters.planner import simulate


BUILTIN = scenario.load()
PROPERTY = hypothesis.settings(derandomize=True, deadline=None,
                               max_examples=40, database=None)


def make_fleet(nodes=None, scheduler=None):
    nodes = nodes or {'dram-384': 3, 'mm-192-512': 3}
    return simulate.Fleet(simulate.kinds_of_configs(BUILTIN, nodes),
                          scheduler)
