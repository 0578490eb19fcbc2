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
"""The JSON Schemas of a scenario file and of each of its sections."""

from nova_pmem_filters.core import kinds


_NUMBER = {'type': 'number'}
_POSITIVE = {'type': 'number', 'exclusiveMinimum': 0}
_NON_NEGATIVE = {'type': 'number', 'minimum': 0}
_POSITIVE_INT = {'type': 'integer', 'minimum': 1}
_TEXT = {'type': 'string'}
_NAME = {'type': 'string', 'pattern': r'^[A-Za-z0-9][A-Za-z0-9._-]*$'}
_GENERATIONS = {'type': 'array', 'items': {'enum': ['100', '200']},
                'uniqueItems': True}


def _obj(properties, required=()):
    return {'type': 'object', 'properties': properties,
            'required': list(required), 'additionalProperties': False}


def _named(item_schema):
    return {'type': 'object', 'propertyNames': _NAME,
            'additionalProperties': item_schema}


CPU_SCHEMA = _obj({
    'description': _TEXT, 'generation': _TEXT, 'cores': _POSITIVE_INT,
    'threads': _POSITIVE_INT, 'price': _NON_NEGATIVE, 'price_source': _TEXT,
    'watts': _NON_NEGATIVE, 'watts_source': _TEXT,
    'memory_limit_gb': _POSITIVE, 'pmem_generations': _GENERATIONS,
    'pmem_max_module_gb': _NON_NEGATIVE, 'source': _TEXT,
    # CXL: lanes per socket that can carry CXL.mem (0: none), and whether
    # the part offers hardware-managed tiering (Xeon 6 flat memory mode).
    'cxl_lanes': {'type': 'integer', 'minimum': 0},
    'cxl_lanes_source': _TEXT,
    'flat_memory_mode': {'type': 'boolean'},
    'flat_memory_mode_source': _TEXT,
}, required=['cores', 'threads', 'price', 'watts', 'memory_limit_gb'])

DIMM_SCHEMA = _obj({
    # 'cxl': a CXL Type-3 memory expander (E3.S or add-in card), which sits
    # on CXL lanes, not in a DIMM slot.
    'type': {'enum': ['ddr4', 'ddr5', 'pmem', 'cxl']},
    'generation': {'enum': ['100', '200']},
    'description': _TEXT,
    'capacity_gb': _POSITIVE, 'price': _NON_NEGATIVE, 'price_source': _TEXT,
    'watts': _NON_NEGATIVE, 'watts_source': _TEXT, 'source': _TEXT,
    # Peak bandwidth of one module (a DIMM: its channel's) and idle load
    # latency, for the throughput model; CXL: link lanes of one device.
    'bandwidth_gbps': _POSITIVE, 'bandwidth_source': _TEXT,
    'latency_ns': _POSITIVE, 'latency_source': _TEXT,
    'lanes': _POSITIVE_INT, 'lanes_source': _TEXT,
}, required=['type', 'capacity_gb', 'price', 'watts'])

PLATFORM_SCHEMA = _obj({
    'description': _TEXT, 'sockets': _POSITIVE_INT,
    'controllers_per_socket': _POSITIVE_INT,
    'channels_per_socket': _POSITIVE_INT,
    'slots_per_channel': _POSITIVE_INT, 'pmem_generations': _GENERATIONS,
    # The CPU generations (a CPU's ``generation``) the board's socket takes.
    'cpu_generations': {'type': 'array', 'items': _TEXT, 'minItems': 1,
                        'uniqueItems': True},
    'base_cost': _NON_NEGATIVE, 'base_cost_source': _TEXT,
    'base_watts': _NON_NEGATIVE, 'base_watts_source': _TEXT,
    'rack_units': _POSITIVE_INT, 'rack_units_source': _TEXT,
    'source': _TEXT,
    # DIMM type the slots take (default ddr4) and CXL lanes wired to
    # device bays per socket (default 0).
    'memory_type': {'enum': ['ddr4', 'ddr5']},
    'cxl_lanes': {'type': 'integer', 'minimum': 0},
    'cxl_lanes_source': _TEXT,
}, required=['sockets', 'controllers_per_socket', 'channels_per_socket',
             'slots_per_channel', 'base_cost', 'base_watts'])

CATALOG_SCHEMA = _obj({
    'cpus': _named(CPU_SCHEMA),
    'dimms': _named(DIMM_SCHEMA),
    'platforms': _named(PLATFORM_SCHEMA),
})

_POPULATION = {'type': 'object', 'propertyNames': _NAME,
               'additionalProperties': {'type': 'integer', 'minimum': 0}}

CONFIG_SCHEMA = _obj({
    'description': _TEXT,
    'platform': _NAME,
    'cpu': _NAME,
    'mode': {'enum': list(kinds.ALL_MODES)},
    # The same DIMMs on every socket ...
    'per_socket': _POPULATION,
    # ... or one population per socket, which must then be alike.
    'sockets': {'type': 'array', 'items': _POPULATION, 'minItems': 1},
}, required=['platform', 'cpu', 'mode'])

WORKLOAD_SCHEMA = _obj({
    'description': _TEXT,
    'vcpus': _POSITIVE_INT,
    'ram_gb': _POSITIVE,
    'used_gb': _POSITIVE,
    'used_source': _TEXT,
    # The Nova flavor the workload stands for (default: the workload's
    # name, as nova-config creates it): observations are matched by it.
    'flavor': {'type': 'string', 'minLength': 1},
    # Flavor extra specs are strings in Nova; numbers are accepted here and
    # turned into the string the flavor would carry. 'observed': the value
    # the observations recommend for the flavor (see planner.observed).
    'hot_ratio': {'type': ['number', 'string']},
    'hot_ratio_source': _TEXT,
    'priority': _TEXT,
    'modes': {'type': 'array', 'items': _TEXT, 'minItems': 1},
    # The flavor's hw:numa_nodes: each VM split evenly over this many host
    # NUMA cells (sockets).
    'numa_nodes': _POSITIVE_INT,
    'vpmem': _obj({'label': {'type': 'string',
                             'pattern': r'^[A-Za-z0-9_]+$'},
                   'size_gb': _POSITIVE},
                  required=['label', 'size_gb']),
    'throughput': _obj({m: _POSITIVE for m in kinds.ALL_MODES}),
    # What limits the workload's speed: memory latency (the default) or
    # memory bandwidth; a bandwidth-bound workload says how much bandwidth
    # one VM draws at full speed.
    'bound': {'enum': ['latency', 'bandwidth']},
    'bandwidth_gbps': _POSITIVE,
    'bandwidth_source': _TEXT,
    'calibration': _obj({'mode': {'enum': [kinds.MEMORY_MODE]},
                         'node_gain': _POSITIVE, 'source': _TEXT},
                        required=['mode', 'node_gain']),
}, required=['vcpus', 'ram_gb'])

POLICIES_SCHEMA = _obj({
    'memory_cap': {'type': 'number', 'exclusiveMinimum': 0, 'maximum': 1},
    'memory_cap_source': _TEXT,
    'host_reserve_gb': _NON_NEGATIVE,
    'cpu_overcommit': _POSITIVE,
    'cache_overcommit': _NON_NEGATIVE,
    'namespace_overhead': {'type': 'number', 'minimum': 0, 'maximum': 0.5},
})

PERFORMANCE_SCHEMA = _obj({
    'dram_latency_ns': _POSITIVE,
    'pmem_latency_ns': _POSITIVE,
    'source': _TEXT,
})

ECONOMICS_SCHEMA = _obj({
    'power_price_per_kwh': _NON_NEGATIVE, 'power_price_source': _TEXT,
    'pue': {'type': 'number', 'minimum': 1}, 'pue_source': _TEXT,
    'years': _POSITIVE, 'years_source': _TEXT,
    # Optional caps on the whole fleet.
    'budget': _NON_NEGATIVE, 'power_kw': _NON_NEGATIVE,
    'rack_units': _NON_NEGATIVE,
})

_VM_COUNTS = {'type': 'object', 'propertyNames': _NAME,
              'additionalProperties': {'type': 'integer', 'minimum': 0}}

DEMAND_SCHEMA = {'oneOf': [
    # VMs per workload, for the whole service life ...
    _VM_COUNTS,
    # ... or per period of growth, each lasting some years.
    {'type': 'array', 'minItems': 1, 'items': _obj({
        'name': _NAME, 'years': _POSITIVE, 'vms': _VM_COUNTS,
    }, required=['name', 'years', 'vms'])},
]}

SCENARIO_SCHEMA = _obj({
    'name': _NAME,
    'description': _TEXT,
    'source': _TEXT,
    'catalog': CATALOG_SCHEMA,
    'baseline': _NAME,
    'configs': {**_named(CONFIG_SCHEMA), 'minProperties': 1},
    'workloads': {**_named(WORKLOAD_SCHEMA), 'minProperties': 1},
    'policies': POLICIES_SCHEMA,
    'performance': PERFORMANCE_SCHEMA,
    'economics': ECONOMICS_SCHEMA,
    'demand': DEMAND_SCHEMA,
    # A directory of nova-pmem-observe documents, relative to the scenario
    # file, for workloads whose hot_ratio is 'observed'.
    'observations': {'type': 'string', 'minLength': 1},
}, required=['name', 'configs', 'workloads'])
