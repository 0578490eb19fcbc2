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
"""The defaults of the ``[pmem]`` options, without oslo.config.

``conf.pmem`` declares the options with these defaults; the simulator
decides with them when a scenario sets no scheduler option, so both say
the same thing by reading it here.
"""

# The DRAM cache admits hot RAM up to its size.
CACHE_OVERCOMMIT_RATIO = 1.0
# Outweighs the sum of Nova's default weighers (see the option's help).
TIER_WEIGHT_MULTIPLIER = 10.0
CACHE_HEADROOM_WEIGHT_MULTIPLIER = 1.0
NUMA_CELL_WEIGHT_MULTIPLIER = 1.0
