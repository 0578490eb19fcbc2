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
"""What the kernel-tiering tests of the planner share.

The built-in CXL scenario with its ``cxl_kmem`` configuration also run with
the kernel's tiering off, one-socket ``cxl_kmem`` nodes (one NUMA cell with
CPUs, as the simulator's hosts are) and Redis VMs bound to one and to two
NUMA cells; near memory is not overcommitted.
"""

import copy

import yaml

from nova_pmem_filters.planner import scenario
from tests.unit.planner import cxl_cases

KMEM = 'kmem-1536-1536'
KMEM_OFF = 'kmem-off'
KMEM_1S = 'kmem-1s'
KMEM_1S_OFF = 'kmem-1s-off'
BOUND = 'redis-numa'
BOUND2 = 'redis-numa2'
FLOATING = 'redis'


def raw():
    """The scenario's mapping, before it is read."""
    data = copy.deepcopy(cxl_cases.raw_scenario())
    platforms = data['catalog']['platforms']
    one = dict(platforms['granite-rapids-ap-2s'], sockets=1,
               description='one socket of granite-rapids-ap-2s')
    platforms['granite-rapids-ap-1s'] = one
    configs = data['configs']
    configs[KMEM_OFF] = dict(configs[KMEM], kernel_tiering='off')
    configs[KMEM_1S] = dict(configs[KMEM], platform='granite-rapids-ap-1s')
    configs[KMEM_1S_OFF] = dict(configs[KMEM_1S], kernel_tiering=False)
    workloads = data['workloads']
    workloads[BOUND] = dict(workloads[FLOATING], numa_nodes=1)
    workloads[BOUND2] = dict(workloads[FLOATING], numa_nodes=2)
    data.pop('demand', None)
    # Whole RAM cannot spill beyond the DRAM it is bound to.
    data['policies']['cache_overcommit'] = 1.0
    return data


def load(data=None):
    data = raw() if data is None else data
    return scenario.parse(yaml.safe_dump(data), 'kernel-tiering.yaml')
