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
"""The scenario file's JSON Schemas, and their errors in words."""

import math

from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import tiering


# Nova's flavor extra spec for a guest NUMA topology of N cells.
NUMA_NODES_KEY = extra_specs.NUMA_NODES_KEY


# The hot_ratio of a workload that asks for the measured one (the
# observations of the scenario's ``observations`` key, or the planner's
# ``--observations``).
OBSERVED = 'observed'


# The name of the one period of a demand given as VMs per workload: it
# lasts the service life (economics.years).
WHOLE_LIFE = 'all'


# A workload's bound: what limits its speed.
LATENCY_BOUND = 'latency'


BANDWIDTH_BOUND = 'bandwidth'


# DIMM types.
PMEM = 'pmem'


CXL = 'cxl'


# The largest number a scenario (and a planner option for the same
# quantity, such as --budget) may give: more than any price, count or size
# of a plan in any currency, and below 2**53, so that a float still holds
# every whole number up to it. 1e20 and its 21 digits are the one number
# and meet the one bound.
NUMBER_LIMIT = 1e15


def short_number(value):
    """A number as a message shows it, in a dozen characters or fewer.

    ``10**20`` and ``1e20`` both read ``1e+20``; whole numbers below a
    trillion and floats whose shortest form is short are shown as they
    are (``11704``, ``0.25``), anything else in ``%g``.
    """
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int) and abs(value) < 10 ** 12:
        return str(value)
    try:
        value = float(value)
    except OverflowError:
        # A whole number with more than 308 digits.
        value = math.inf if value > 0 else -math.inf
    if value.is_integer() and abs(value) < 1e12:
        return str(int(value))
    text = repr(value)
    return text if len(text) <= 12 else '%g' % value


class ScenarioError(ValueError):
    """A scenario or catalog that cannot be used; the message is one line.

    ``source`` is the file, ``path`` the keys from the top of the document
    to the one at fault, ``rule`` what is wrong.
    """

    def __init__(self, source, path, rule):
        self.source = source
        self.path = path
        self.rule = rule
        # A key is shown as written unless it holds a line break or another
        # unprintable character (a YAML key may end in a newline).
        where = '.'.join(str(p) if str(p).isprintable() else repr(p)
                         for p in path) or '(top level)'
        message = '%s: %s: %s' % (source, where, rule)
        super().__init__(' '.join(message.splitlines()))


# Every number is bounded above by NUMBER_LIMIT at least (a test walks
# the schema): an unbounded one let 1e300 through to the arithmetic.
_POSITIVE = {'type': 'number', 'exclusiveMinimum': 0,
             'maximum': NUMBER_LIMIT}


_NON_NEGATIVE = {'type': 'number', 'minimum': 0, 'maximum': NUMBER_LIMIT}


_POSITIVE_INT = {'type': 'integer', 'minimum': 1, 'maximum': NUMBER_LIMIT}


_COUNT = {'type': 'integer', 'minimum': 0, 'maximum': NUMBER_LIMIT}


_TEXT = {'type': 'string'}


_NAME_PATTERN = r'^[A-Za-z0-9][A-Za-z0-9._-]*$'


_LABEL_PATTERN = r'^[A-Za-z0-9_]+$'


# What each pattern allows, in the words of a message.
_PATTERN_WORDS = {
    _NAME_PATTERN: 'a name of letters, digits, ".", "_" and "-" that '
                   'starts with a letter or a digit',
    _LABEL_PATTERN: 'a label of letters, digits and "_"',
}


_NAME = {'type': 'string', 'pattern': _NAME_PATTERN}


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
    'cxl_lanes': _COUNT,
    'cxl_lanes_source': _TEXT,
    'flat_memory_mode': {'type': 'boolean'},
    'flat_memory_mode_source': _TEXT,
}, required=['cores', 'threads', 'price', 'watts', 'memory_limit_gb'])


DIMM_SCHEMA = _obj({
    # 'cxl': a CXL Type-3 memory expander (E3.S or add-in card), which sits
    # on CXL lanes, not in a DIMM slot.
    'type': {'enum': ['ddr4', 'ddr5', PMEM, CXL]},
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
    'cxl_lanes': _COUNT,
    'cxl_lanes_source': _TEXT,
}, required=['sockets', 'controllers_per_socket', 'channels_per_socket',
             'slots_per_channel', 'base_cost', 'base_watts'])


CATALOG_SCHEMA = _obj({
    'cpus': _named(CPU_SCHEMA),
    'dimms': _named(DIMM_SCHEMA),
    'platforms': _named(PLATFORM_SCHEMA),
})


_POPULATION = {'type': 'object', 'propertyNames': _NAME,
               'additionalProperties': _COUNT}


CONFIG_SCHEMA = _obj({
    'description': _TEXT,
    'platform': _NAME,
    'cpu': _NAME,
    'mode': {'enum': list(kinds.ALL_MODES)},
    # The same DIMMs on every socket ...
    'per_socket': _POPULATION,
    # ... or one population per socket, which must then be alike.
    'sockets': {'type': 'array', 'items': _POPULATION, 'minItems': 1},
    # cxl_kmem only: whether the kernel promotes and demotes (the hosts'
    # pmem_kernel_tiering). YAML reads on and off unquoted as true and
    # false: both spellings are taken.
    'kernel_tiering': {'enum': list(tiering.STATES) + [True, False]},
}, required=['platform', 'cpu', 'mode'])


VPMEM_SCHEMA = _obj({'label': {'type': 'string',
                               'pattern': _LABEL_PATTERN},
                     'size_gb': _POSITIVE},
                    required=['label', 'size_gb'])


CALIBRATION_SCHEMA = _obj({'mode': {'enum': [kinds.MEMORY_MODE]},
                           'node_gain': _POSITIVE, 'source': _TEXT},
                          required=['mode', 'node_gain'])


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
    # the observations recommend for the flavor (see
    # nova_pmem_filters.planner.observed).
    'hot_ratio': {'type': ['number', 'string'], 'maximum': NUMBER_LIMIT},
    'hot_ratio_source': _TEXT,
    'priority': _TEXT,
    'modes': {'type': 'array', 'items': _TEXT, 'minItems': 1},
    # The flavor's hw:numa_nodes: each VM split evenly over this many host
    # NUMA cells (sockets).
    'numa_nodes': _POSITIVE_INT,
    'vpmem': VPMEM_SCHEMA,
    'throughput': _obj({m: _POSITIVE for m in kinds.ALL_MODES}),
    # What limits the workload's speed: memory latency (the default) or
    # memory bandwidth; a bandwidth-bound workload says how much bandwidth
    # one VM draws at full speed.
    'bound': {'enum': [LATENCY_BOUND, BANDWIDTH_BOUND]},
    'bandwidth_gbps': _POSITIVE,
    'bandwidth_source': _TEXT,
    'calibration': CALIBRATION_SCHEMA,
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
    'pue': {'type': 'number', 'minimum': 1, 'maximum': NUMBER_LIMIT},
    'pue_source': _TEXT,
    'years': _POSITIVE, 'years_source': _TEXT,
    # Optional caps on the whole fleet.
    'budget': _NON_NEGATIVE, 'power_kw': _NON_NEGATIVE,
    'rack_units': _NON_NEGATIVE,
})


_VM_COUNTS = {'type': 'object', 'propertyNames': _NAME,
              'additionalProperties': _COUNT}


PERIOD_SCHEMA = _obj({
    'name': _NAME, 'years': _POSITIVE, 'vms': _VM_COUNTS,
}, required=['name', 'years', 'vms'])


DEMAND_SCHEMA = {'oneOf': [
    # VMs per workload, for the whole service life ...
    _VM_COUNTS,
    # ... or per period of growth, each lasting some years.
    {'type': 'array', 'minItems': 1, 'items': PERIOD_SCHEMA},
]}


# A scenario's configurations and workloads: every one is compared with
# every other, so their number is bounded (the built-in ones have 2 to 4).
CONFIG_LIMIT = 1000


WORKLOAD_LIMIT = 1000


SCENARIO_SCHEMA = _obj({
    'name': _NAME,
    'description': _TEXT,
    'source': _TEXT,
    'catalog': CATALOG_SCHEMA,
    'baseline': _NAME,
    'configs': {**_named(CONFIG_SCHEMA), 'minProperties': 1,
                'maxProperties': CONFIG_LIMIT},
    'workloads': {**_named(WORKLOAD_SCHEMA), 'minProperties': 1,
                  'maxProperties': WORKLOAD_LIMIT},
    'policies': POLICIES_SCHEMA,
    'performance': PERFORMANCE_SCHEMA,
    'economics': ECONOMICS_SCHEMA,
    'demand': DEMAND_SCHEMA,
    # A directory of nova-pmem-observe documents, relative to the scenario
    # file, for workloads whose hot_ratio is 'observed'.
    'observations': {'type': 'string', 'minLength': 1},
}, required=['name', 'configs', 'workloads'])


def check_schema(data, schema, source):
    """Raise ScenarioError for the first key of ``data`` ``schema`` refuses.

    The first by depth, then by key path, so that the message is stable.
    A mapping of more entries than its ``maxProperties`` is refused before
    the rest is validated, which would take their number's time.
    """
    for key, sub in schema.get('properties', {}).items():
        value = data.get(key) if isinstance(data, dict) else None
        limit = sub.get('maxProperties')
        if limit is not None and isinstance(value, dict) \
                and len(value) > limit:
            raise ScenarioError(source, [key], _too_many(value, limit))
    import jsonschema
    validator = jsonschema.Draft202012Validator(schema)
    found = sorted(validator.iter_errors(data),
                   key=lambda e: (len(e.absolute_path),
                                  [str(p) for p in e.absolute_path]))
    if found:
        err = found[0]
        if err.validator in ('oneOf', 'anyOf') and err.context:
            # "... is not valid under any of the given schemas" names
            # neither the key nor the rule: report the sub-error of the
            # branch that fits the value best (a negative count in a
            # mapping of counts, not "expected an array").
            err = jsonschema.exceptions.best_match([err])
        raise ScenarioError(source, list(err.absolute_path), _describe(err))


def _too_many(mapping, limit):
    return '%d entries, allowed: at most %d' % (len(mapping), limit)


def _allowed(schema):
    """What a number schema allows, in words: 'a whole number >= 0'."""
    kind = {'integer': 'a whole number', 'number': 'a number'}.get(
        str(schema.get('type')))
    if kind is None:
        return None
    bounds = (('minimum', '>='), ('exclusiveMinimum', '>'),
              ('maximum', '<='), ('exclusiveMaximum', '<'))
    # The bound on every number goes without saying: a value above it is
    # told "must be at most 1e+15".
    words = [kind] + ['%s %s' % (sign, short_number(schema[key]))
                      for key, sign in bounds if key in schema
                      and not (key == 'maximum'
                               and schema[key] == NUMBER_LIMIT)]
    return ' '.join(words[:2]) + ''.join(' and %s' % w for w in words[2:])


def _describe(err):
    text = _rule(err)
    allowed = (_allowed(err.schema) if isinstance(err.schema, dict)
               else None)
    if allowed and err.validator in ('type', 'minimum', 'exclusiveMinimum',
                                     'maximum', 'exclusiveMaximum'):
        text = '%s (allowed: %s)' % (text, allowed)
    return text


_BOUND_WORDS = {'minimum': 'at least', 'exclusiveMinimum': 'greater than',
                'maximum': 'at most', 'exclusiveMaximum': 'less than'}


def _shown(value):
    """A value in a message: numbers short, anything else as repr."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return short_number(value)
    return repr(value)


def _rule(err):
    if err.validator == 'additionalProperties':
        extra = sorted(set(err.instance) - set(err.schema.get(
            'properties', {})))
        allowed = ', '.join(sorted(err.schema.get('properties', {})))
        return 'unknown key %s (allowed: %s)' % (
            ', '.join(repr(k) for k in extra), allowed)
    if err.validator == 'maxProperties':
        return _too_many(err.instance, err.validator_value)
    if err.validator == 'type':
        return 'expected %s, got %s' % (err.validator_value,
                                        _shown(err.instance))
    if err.validator in _BOUND_WORDS:
        return 'must be %s %s, got %s' % (
            _BOUND_WORDS[err.validator],
            short_number(err.validator_value), _shown(err.instance))
    if err.validator == 'enum':
        # true and false stand for YAML's reading of on and off
        # (kernel_tiering): the words are what a file is told to write.
        words = [v for v in err.validator_value if not isinstance(v, bool)]
        return 'must be one of %s, got %r' % (
            ', '.join(str(v) for v in words), err.instance)
    if err.validator in ('oneOf', 'anyOf'):
        # No branch has the value's type.
        types = [str(branch['type']) for branch in err.validator_value
                 if 'type' in branch]
        if types:
            return 'expected %s, got %r' % (' or '.join(types), err.instance)
    if err.validator == 'pattern':
        return 'expected %s, got %r' % (_PATTERN_WORDS[err.validator_value],
                                        err.instance)
    return err.message
