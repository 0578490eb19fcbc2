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
"""The scenario file: its keys, its schema, its reader and its writer.

A scenario (``doc/source/planner.rst``, "Scenario files") is a YAML
document: a hardware catalog of its own, node configurations, workloads,
policies, economics and demand. This module is its one home:

- its keys are the fields of the classes below, one class per section
  (:class:`Document`, :class:`Catalog`, :class:`Cpu`, :class:`Dimm`,
  :class:`Platform`, :class:`Config`, :class:`Workload`, ...), and its JSON
  Schemas (:data:`SCENARIO_SCHEMA`, :data:`CATALOG_SCHEMA`, ...) name the
  same keys;
- :func:`parse` reads a whole document into those values, checked: YAML,
  the schema (types, ranges, unknown keys), the rules between keys (a PMem
  DIMM's generation, one form of socket population, a bandwidth-bound
  workload's bandwidth, ``numa_nodes`` that divide the flavor, ...), the
  names it refers to (catalog entries, the baseline, the workloads of the
  demand) and its workloads' flavor extra specs, through the scheduler's
  own parser. Every problem is a :class:`ScenarioError` whose one-line
  message names the file, the key path and the rule;
- :func:`to_mapping` and :func:`dumps` build a document from such values,
  so that ``parse(dumps(document))`` gives ``document`` back.

A value is what the document says: a key it leaves out is ``None`` (the
planner, ``nova_pmem_filters.planner.scenario``, applies its defaults when it
builds its model on top of these values, with the built-in catalog, the DIMM
population rules and the measured hot ratios).

This module imports nothing from Nova; PyYAML and jsonschema (which Nova
requires) are imported when a document is read or written.
"""

import dataclasses
import functools
import math
import re

from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import profile
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


# The JSON Schemas.

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


# The values. A field is a key of its section; its metadata says how the
# value is read from YAML (_READ) and, where it differs from the generic
# rule of to_mapping, written back (_WRITE).

_READ = 'read'
_WRITE = 'write'


def _key(read=None, write=None, **kwargs):
    metadata = {}
    if read is not None:
        metadata[_READ] = read
    if write is not None:
        metadata[_WRITE] = write
    if 'default' not in kwargs and 'default_factory' not in kwargs:
        kwargs['default'] = None
    return dataclasses.field(metadata=metadata, **kwargs)


def _required(read=None):
    metadata = {_READ: read} if read is not None else {}
    return dataclasses.field(metadata=metadata)


def _section(cls):
    """Reads one mapping into ``cls``."""
    def read(raw):
        return _value(cls, raw)
    return read


def _sections(cls):
    """Reads {name: mapping} into {name: ``cls``}."""
    def read(raw):
        return {name: _value(cls, item) for name, item in raw.items()}
    return read


def _list(raw):
    return tuple(raw)


def _mapping(raw):
    return dict(raw)


def _populations(raw):
    return tuple(dict(population) for population in raw)


def _tiering_state(raw):
    """``on`` or ``off`` of a ``kernel_tiering`` (YAML's true or false)."""
    if isinstance(raw, bool):
        return tiering.ON if raw else tiering.OFF
    return raw


_VALUE = dataclasses.dataclass(frozen=True, kw_only=True)


@_VALUE
class Cpu:
    """A CPU of the catalog (``catalog.cpus.<name>``)."""

    description: str = _key()
    generation: str = _key()
    cores: int = _required()
    threads: int = _required()
    price: float = _required()
    price_source: str = _key()
    watts: float = _required()
    watts_source: str = _key()
    memory_limit_gb: float = _required()
    pmem_generations: tuple = _key(_list)
    pmem_max_module_gb: float = _key()
    source: str = _key()
    cxl_lanes: int = _key()
    cxl_lanes_source: str = _key()
    flat_memory_mode: bool = _key()
    flat_memory_mode_source: str = _key()


@_VALUE
class Dimm:
    """A memory module of the catalog (``catalog.dimms.<name>``)."""

    type: str = _required()
    generation: str = _key()
    description: str = _key()
    capacity_gb: float = _required()
    price: float = _required()
    price_source: str = _key()
    watts: float = _required()
    watts_source: str = _key()
    source: str = _key()
    bandwidth_gbps: float = _key()
    bandwidth_source: str = _key()
    latency_ns: float = _key()
    latency_source: str = _key()
    lanes: int = _key()
    lanes_source: str = _key()


@_VALUE
class Platform:
    """A board of the catalog (``catalog.platforms.<name>``)."""

    description: str = _key()
    sockets: int = _required()
    controllers_per_socket: int = _required()
    channels_per_socket: int = _required()
    slots_per_channel: int = _required()
    pmem_generations: tuple = _key(_list)
    cpu_generations: tuple = _key(_list)
    base_cost: float = _required()
    base_cost_source: str = _key()
    base_watts: float = _required()
    base_watts_source: str = _key()
    rack_units: int = _key()
    rack_units_source: str = _key()
    source: str = _key()
    memory_type: str = _key()
    cxl_lanes: int = _key()
    cxl_lanes_source: str = _key()


@_VALUE
class Catalog:
    """Hardware entries by name.

    A scenario's ``catalog`` section, or the planner's built-in catalog
    file.
    """

    cpus: dict = _key(_sections(Cpu), default_factory=dict)
    dimms: dict = _key(_sections(Dimm), default_factory=dict)
    platforms: dict = _key(_sections(Platform), default_factory=dict)

    def merged(self, other):
        """This catalog with ``other``'s entries added or replacing."""
        return Catalog(cpus={**self.cpus, **other.cpus},
                       dimms={**self.dimms, **other.dimms},
                       platforms={**self.platforms, **other.platforms})


@_VALUE
class Config:
    """A node configuration (``configs.<name>``).

    Its platform, CPU and DIMMs are the names of catalog entries.
    """

    description: str = _key()
    platform: str = _required()
    cpu: str = _required()
    mode: str = _required()
    # {DIMM name: count} on every socket ...
    per_socket: dict = _key(_mapping)
    # ... or one per socket.
    sockets: tuple = _key(_populations)
    # cxl_kmem only: tiering.ON or tiering.OFF (None: not said, on).
    kernel_tiering: str = _key(_tiering_state)

    def populations(self, sockets):
        """One {DIMM name: count} per socket of a board of ``sockets``."""
        if self.per_socket is not None:
            return tuple(dict(self.per_socket) for _ in range(sockets))
        return tuple(dict(population) for population in self.sockets)


@_VALUE
class Vpmem:
    """The vPMEM namespace of a workload (Nova's ``hw:pmem``)."""

    label: str = _required()
    size_gb: float = _required()


@_VALUE
class Calibration:
    """A published node throughput gain of a workload."""

    mode: str = _required()
    node_gain: float = _required()
    source: str = _key()


@_VALUE
class Workload:
    """A flavor and how its VMs use memory (``workloads.<name>``)."""

    description: str = _key()
    vcpus: int = _required()
    ram_gb: float = _required()
    used_gb: float = _key()
    used_source: str = _key()
    flavor: str = _key()
    # A number, the text of a pmem:hot_ratio, or OBSERVED.
    hot_ratio: object = _key()
    hot_ratio_source: str = _key()
    priority: str = _key()
    modes: tuple = _key(_list)
    numa_nodes: int = _key()
    vpmem: Vpmem = _key(_section(Vpmem))
    throughput: dict = _key(_mapping)
    bound: str = _key()
    bandwidth_gbps: float = _key()
    bandwidth_source: str = _key()
    calibration: Calibration = _key(_section(Calibration))

    @property
    def observed(self):
        """Whether the hot ratio is the measured one."""
        return self.hot_ratio == OBSERVED

    def extra_specs(self):
        """The flavor extra specs that express the workload.

        An observed hot ratio, not known here, is left out.
        """
        specs = {}
        if self.modes is not None:
            specs[extra_specs.MODES_KEY] = ','.join(
                str(m) for m in self.modes)
        if self.priority is not None:
            specs[extra_specs.PRIORITY_KEY] = spec_text(self.priority)
        if self.hot_ratio is not None and not self.observed:
            specs[extra_specs.HOT_RATIO_KEY] = _hot_ratio_text(
                self.hot_ratio)
        if self.vpmem is not None:
            specs[extra_specs.VPMEM_KEY] = self.vpmem.label
        if self.numa_nodes is not None:
            # int(): the schema lets 2.0 through as an integer, and Nova
            # refuses hw:numa_nodes=2.0.
            specs[NUMA_NODES_KEY] = str(int(self.numa_nodes))
        return specs

    @functools.cached_property
    def request(self):
        """The PmemRequest of :meth:`extra_specs` (computed once).

        As the scheduler reads the specs.

        :raises nova_pmem_filters.core.rules.extra_specs.InvalidExtraSpec: for
            a value the parse of the document would have refused.
        """
        return extra_specs.parse(self.extra_specs())


@_VALUE
class Policies:
    """How full a node may be (``policies``)."""

    memory_cap: float = _key()
    memory_cap_source: str = _key()
    host_reserve_gb: float = _key()
    cpu_overcommit: float = _key()
    cache_overcommit: float = _key()
    namespace_overhead: float = _key()


@_VALUE
class Performance:
    """Memory latencies of the throughput model (``performance``)."""

    dram_latency_ns: float = _key()
    pmem_latency_ns: float = _key()
    source: str = _key()


@_VALUE
class Economics:
    """Power prices, service life, the fleet's caps (``economics``)."""

    power_price_per_kwh: float = _key()
    power_price_source: str = _key()
    pue: float = _key()
    pue_source: str = _key()
    years: float = _key()
    years_source: str = _key()
    budget: float = _key()
    power_kw: float = _key()
    rack_units: float = _key()


@_VALUE
class Period:
    """VMs per workload to carry for some years: one step of ``demand``.

    A demand given as VMs per workload is one period named
    :data:`WHOLE_LIFE` whose ``years`` is None: the service life.
    """

    name: str = _required()
    years: float = _required()
    vms: dict = _required(_mapping)


def _read_demand(raw):
    if isinstance(raw, dict):
        return (Period(name=WHOLE_LIFE, years=None, vms=dict(raw)),)
    return tuple(_value(Period, period) for period in raw)


def _write_demand(periods):
    if len(periods) == 1 and periods[0].years is None:
        return dict(periods[0].vms)
    return [to_mapping(period) for period in periods]


@_VALUE
class Document:
    """A whole scenario."""

    name: str = _required()
    description: str = _key()
    source: str = _key()
    baseline: str = _key()
    catalog: Catalog = _key(_section(Catalog))
    configs: dict = _required(_sections(Config))
    workloads: dict = _required(_sections(Workload))
    policies: Policies = _key(_section(Policies))
    performance: Performance = _key(_section(Performance))
    economics: Economics = _key(_section(Economics))
    # Periods (Period), in order.
    demand: tuple = _key(_read_demand, _write_demand)
    observations: str = _key()

    @property
    def baseline_config(self):
        """The configuration the others are compared with.

        The baseline, or else the first configuration.
        """
        return self.baseline if self.baseline is not None else next(
            iter(self.configs))


# The schema of each section, by the class of its values.
SCHEMAS = {
    Cpu: CPU_SCHEMA, Dimm: DIMM_SCHEMA, Platform: PLATFORM_SCHEMA,
    Catalog: CATALOG_SCHEMA, Config: CONFIG_SCHEMA, Vpmem: VPMEM_SCHEMA,
    Calibration: CALIBRATION_SCHEMA, Workload: WORKLOAD_SCHEMA,
    Policies: POLICIES_SCHEMA, Performance: PERFORMANCE_SCHEMA,
    Economics: ECONOMICS_SCHEMA, Period: PERIOD_SCHEMA,
    Document: SCENARIO_SCHEMA,
}


def from_mapping(cls, raw):
    """The value (``cls``) of a section's mapping.

    Its keys become the fields; nothing is checked (:func:`parse` checks).
    """
    return _value(cls, raw)


def _value(cls, raw):
    values = {}
    for field in dataclasses.fields(cls):
        if field.name in raw:
            read = field.metadata.get(_READ)
            value = raw[field.name]
            values[field.name] = read(value) if read else value
    return cls(**values)


def _left_out(field, value):
    if field.default is not dataclasses.MISSING:
        return value is None
    if field.default_factory is not dataclasses.MISSING:
        return value == field.default_factory()
    return False


def to_mapping(value):
    """The YAML mapping (plain dicts, lists and scalars) of a value.

    Keys the value leaves out (None) are not written.
    """
    if dataclasses.is_dataclass(value):
        mapping = {}
        for field in dataclasses.fields(value):
            item = getattr(value, field.name)
            if _left_out(field, item):
                continue
            write = field.metadata.get(_WRITE, to_mapping)
            mapping[field.name] = write(item)
        return mapping
    if isinstance(value, dict):
        return {key: to_mapping(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_mapping(item) for item in value]
    return value


def dumps(document):
    """The YAML text of a :class:`Document` (or of a :class:`Catalog`)."""
    import yaml
    return yaml.dump(to_mapping(document), Dumper=_yaml_class('SafeDumper'),
                     sort_keys=False, default_flow_style=False,
                     allow_unicode=True)


def spec_text(value):
    """The flavor extra spec text of a scenario value (a number or text).

    A number becomes a plain decimal, as a flavor carries it:
    ``repr(0.00001)`` is ``1e-05``, which the shared grammar (no
    exponents) refuses.
    """
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return extra_specs.plain_decimal(value)
    return str(value)


def _hot_ratio_text(value):
    """A workload's hot ratio as its flavor carries it.

    A ratio the file gives as a number with a fraction is written the one
    way (:func:`extra_specs.format_hot_ratio`); text and whole numbers are
    kept as the file writes them, for the scheduler's parser to read (and
    to refuse naming the key).
    """
    if isinstance(value, float) and 0.0 < value <= 1.0:
        return extra_specs.format_hot_ratio(value)
    return spec_text(value)


# Reading: YAML and the schema, with messages that name the key.

# A number with an exponent as YAML 1.2 (and JSON) writes it: PyYAML
# follows YAML 1.1, whose floats need a dot and a signed exponent, and read
# 1e20 as the text '1e20'. Quoted text stays text.
_EXPONENT = re.compile(r'^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)'
                       r'[eE][-+]?[0-9]+$')


@functools.lru_cache(maxsize=None)
def _yaml_class(name):
    """PyYAML's SafeLoader or SafeDumper, with YAML 1.2's exponents.

    The dumper quotes the text that the loader would read as a number.
    """
    import yaml

    members = {}
    if name == 'SafeLoader':
        members = {'compose_node': _compose_node,
                   'compose_document': _compose_document,
                   'construct_mapping': _construct_mapping}
    cls = type(name, (getattr(yaml, name),), members)
    cls.add_implicit_resolver('tag:yaml.org,2002:float', _EXPONENT,
                              list('-+0123456789.'))
    if name == 'SafeLoader':
        cls.add_constructor('tag:yaml.org,2002:int', _construct_int)
    return cls


# Aliases (``*name``) a document may hold, and the nodes it may hold once
# they are expanded: a "billion laughs" of a few hundred bytes expands to
# more than memory holds; no format of ours needs more than a few.
ALIAS_LIMIT = 100
EXPANDED_NODE_LIMIT = 1000000


def _compose_node(loader, parent, index):
    import yaml
    if loader.check_event(yaml.events.AliasEvent):
        loader.alias_count = getattr(loader, 'alias_count', 0) + 1
        if loader.alias_count > ALIAS_LIMIT:
            raise yaml.composer.ComposerError(
                None, None, 'more than %d aliases (*name); a document may '
                'hold at most %d' % (ALIAS_LIMIT, ALIAS_LIMIT),
                loader.peek_event().start_mark)
    return super(type(loader), loader).compose_node(parent, index)


def _compose_document(loader):
    import yaml
    node = super(type(loader), loader).compose_document()
    # The nodes as a reader of the data sees them, aliases expanded.
    count, pending = 0, [node]
    while pending:
        current = pending.pop()
        count += 1
        if count > EXPANDED_NODE_LIMIT:
            raise yaml.composer.ComposerError(
                None, None, 'more than %d values once its aliases are '
                'expanded; a document may hold at most %d'
                % (EXPANDED_NODE_LIMIT, EXPANDED_NODE_LIMIT),
                node.start_mark)
        if isinstance(current, yaml.MappingNode):
            for key, value in current.value:
                pending.extend((key, value))
        elif isinstance(current, yaml.SequenceNode):
            pending.extend(current.value)
    return node


def _construct_mapping(loader, node, deep=False):
    import yaml
    if isinstance(node, yaml.MappingNode):
        seen = set()
        for key_node, _value in node.value:
            if key_node.tag == 'tag:yaml.org,2002:merge':
                continue
            key = loader.construct_object(key_node, deep=True)
            try:
                repeated = key in seen
            except TypeError:
                # An unhashable key: the constructor names it.
                break
            if repeated:
                raise yaml.constructor.ConstructorError(
                    None, None, 'duplicate key %r: a key may appear once in '
                    'a mapping' % (key,), key_node.start_mark)
            seen.add(key)
    return super(type(loader), loader).construct_mapping(node, deep=deep)


def _construct_int(loader, node):
    try:
        return loader.construct_yaml_int(node)
    except ValueError:
        # More digits than Python turns into an int (4300): beyond every
        # bound, which the schema then names with the key.
        return math.inf


def _check_no_nan(data, source, path=()):
    # .nan passes every bound of the schema (it compares false with all).
    if isinstance(data, float) and math.isnan(data):
        raise ScenarioError(source, list(path), 'expected a number, got nan')
    if isinstance(data, dict):
        for key, value in data.items():
            _check_no_nan(value, source, path + (key,))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            _check_no_nan(value, source, path + (index,))


def _read_yaml(text, source):
    import yaml
    try:
        data = yaml.load(text, Loader=_yaml_class('SafeLoader'))
    except yaml.YAMLError as exc:
        mark = getattr(exc, 'problem_mark', None)
        problem = getattr(exc, 'problem', None)
        if mark:
            where = ['line %d' % (mark.line + 1)]
        elif isinstance(exc, yaml.reader.ReaderError):
            # A character YAML does not allow: no mark, and str(exc) spans
            # two lines.
            where = ['line %d' % (text.count('\n', 0, exc.position) + 1)]
            problem = '%s (character #x%04x)' % (exc.reason, exc.character)
        else:
            where = []
        raise ScenarioError(source, where, 'not valid YAML: %s'
                            % (problem or exc))
    if not isinstance(data, dict):
        raise ScenarioError(source, [], 'expected a mapping of keys to '
                            'values, got %s' % type(data).__name__)
    _check_no_nan(data, source)
    return data


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


# Reading: the rules between keys and the names a document refers to.

def _check_catalog(catalog, source, path):
    for name, dimm in catalog.dimms.items():
        if dimm.type == PMEM and dimm.generation is None:
            raise ScenarioError(
                source, list(path) + ['dimms', name, 'generation'],
                'a pmem DIMM needs its generation (100 or 200)')
        if dimm.type == CXL:
            for key in ('lanes', 'latency_ns', 'bandwidth_gbps'):
                if getattr(dimm, key) is None:
                    raise ScenarioError(
                        source, list(path) + ['dimms', name, key],
                        'a CXL memory device needs %s (link lanes, idle '
                        'latency and bandwidth drive the population rules '
                        'and the throughput model)' % key)


def _lookup(table, name, source, path, what):
    try:
        return table[name]
    except KeyError:
        raise ScenarioError(source, path, 'unknown %s %r (known: %s)'
                            % (what, name, ', '.join(sorted(table))))


def _population_dimms(population, catalog, source, path):
    """The catalog's DIMMs of one socket's population, by name."""
    return {name: _lookup(catalog.dimms, name, source, path + [name],
                          'DIMM')
            for name, count in sorted(population.items()) if count}


def _check_config(name, config, catalog, source):
    path = ['configs', name]
    platform = _lookup(catalog.platforms, config.platform, source,
                       path + ['platform'], 'platform')
    _lookup(catalog.cpus, config.cpu, source, path + ['cpu'], 'CPU')
    if (config.per_socket is None) == (config.sockets is None):
        raise ScenarioError(
            source, path, 'give exactly one of per_socket '
            '(same DIMMs on every socket) or sockets '
            '(a list, one population per socket)')
    if (config.kernel_tiering is not None
            and config.mode not in kinds.KERNEL_TIERED):
        raise ScenarioError(
            source, path + ['kernel_tiering'],
            'applies only to a mode whose tiering the kernel does (%s), '
            'not to mode %s; leave it out (allowed values on %s: %s)'
            % (', '.join(sorted(kinds.KERNEL_TIERED)), config.mode,
               ', '.join(sorted(kinds.KERNEL_TIERED)),
               ', '.join(tiering.STATES)))
    if not any(any(population.values()) for population in
               config.populations(platform.sockets)):
        raise ScenarioError(
            source, path, 'a node needs memory: give at least one DIMM '
            'a count of 1 or more')
    if config.per_socket is not None:
        _population_dimms(config.per_socket, catalog, source,
                          path + ['per_socket'])
        return
    if len(config.sockets) != platform.sockets:
        raise ScenarioError(
            source, path + ['sockets'],
            'platform %s has %d sockets, %d populations given'
            % (config.platform, platform.sockets, len(config.sockets)))
    for i, population in enumerate(config.sockets):
        _population_dimms(population, catalog, source,
                          path + ['sockets', i])


def _check_bandwidth(document, catalog, source):
    # The bandwidth model needs every module's bandwidth on every node a
    # bandwidth-bound workload is compared on.
    bound = [name for name, w in document.workloads.items()
             if w.bound == BANDWIDTH_BOUND]
    if not bound:
        return
    for name, config in document.configs.items():
        dimms = {}
        for population in config.populations(
                catalog.platforms[config.platform].sockets):
            dimms.update(_population_dimms(population, catalog, source, []))
        for dimm_name, dimm in sorted(dimms.items()):
            if dimm.type != PMEM and dimm.bandwidth_gbps is None:
                raise ScenarioError(
                    source, ['configs', name],
                    'workload %s is bandwidth-bound but DIMM %s of this '
                    'configuration gives no bandwidth_gbps in the catalog'
                    % (bound[0], dimm_name))


# Which key of a workload a flavor extra spec comes from.
_SPEC_FIELDS = {extra_specs.MODES_KEY: 'modes',
                extra_specs.PRIORITY_KEY: 'priority',
                extra_specs.HOT_RATIO_KEY: 'hot_ratio'}


def flavor_request(name, workload, source):
    """(extra specs, PmemRequest) of a workload, read as the scheduler does.

    :raises ScenarioError: naming the workload's key whose spec the shared
        parser refuses, or the conflict between its specs.
    """
    path = ['workloads', name]
    specs = workload.extra_specs()
    try:
        request = workload.request
    except extra_specs.InvalidExtraSpec as exc:
        raise ScenarioError(
            source, path + [_SPEC_FIELDS[exc.key]],
            'flavor extra spec %s=%r is invalid: expected %s'
            % (exc.key, exc.value, exc.allowed))
    if request.conflict:
        raise ScenarioError(source, path, request.conflict)
    return specs, request


def _check_numa_nodes(name, workload, source):
    # Nova splits the flavor evenly over the guest cells and refuses the
    # boot when it cannot (ImageNUMATopologyAsymmetric).
    nodes = int(workload.numa_nodes)
    ram_mb = int(round(workload.ram_gb * profile.MB_PER_GB))
    for field, value, unit in (('vcpus', workload.vcpus, 'vCPUs'),
                               ('ram_gb', ram_mb, 'MB of RAM')):
        if value % nodes:
            raise ScenarioError(
                source, ['workloads', name, 'numa_nodes'],
                'numa_nodes: %d does not divide %s (%d %s): Nova refuses '
                'to boot a flavor with %s=%d that it cannot split evenly '
                'over the guest NUMA cells'
                % (nodes, field, value, unit, NUMA_NODES_KEY, nodes))


def _check_workload(name, workload, source):
    path = ['workloads', name]
    flavor_request(name, workload, source)
    if round(workload.ram_gb * profile.MB_PER_GB) < 1:
        # Nova's memory_mb is a whole number of MB; 0 has no hot RAM.
        raise ScenarioError(
            source, path + ['ram_gb'], 'a flavor has at '
            'least 1 MB of RAM, got %r GB' % workload.ram_gb)
    if workload.used_gb is not None and workload.used_gb > workload.ram_gb:
        raise ScenarioError(
            source, path + ['used_gb'], 'a workload uses at most its '
            'flavor\'s RAM: used_gb %r is more than ram_gb %r'
            % (workload.used_gb, workload.ram_gb))
    if (workload.bound == BANDWIDTH_BOUND
            and workload.bandwidth_gbps is None):
        raise ScenarioError(
            source, path + ['bandwidth_gbps'],
            'a bandwidth-bound workload needs bandwidth_gbps, '
            'the memory bandwidth one VM draws at full '
            'speed')
    if workload.numa_nodes is not None:
        _check_numa_nodes(name, workload, source)


def _check_demand(demand, workloads, source):
    names = [period.name for period in demand]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise ScenarioError(source, ['demand', i, 'name'],
                                'period %r is named twice' % name)
    for i, period in enumerate(demand):
        path = (['demand'] if period.years is None
                else ['demand', i, 'vms'])
        for workload in period.vms:
            if workload not in workloads:
                raise ScenarioError(
                    source, path + [workload],
                    'unknown workload %r (known: %s)'
                    % (workload, ', '.join(sorted(workloads))))


def parse_catalog(text, source):
    """The :class:`Catalog` of a catalog file's YAML text.

    :raises ScenarioError: on the first problem found.
    """
    catalog = _value(Catalog, _parsed(text, CATALOG_SCHEMA, source))
    _check_catalog(catalog, source, [])
    return catalog


def _parsed(text, schema, source):
    raw = _read_yaml(text, source)
    check_schema(raw, schema, source)
    return raw


def parse(text, source, base_catalog=None):
    """The :class:`Document` of a scenario's YAML text, checked.

    :param source: the file name to use in error messages.
    :param base_catalog: the catalog the document's own ``catalog`` adds
        to (the planner's built-in one): the names of its entries, a
        platform's ``sockets`` and a DIMM's ``type`` and ``bandwidth_gbps``
        are what the checks read. None: the document's own entries only.
    :raises ScenarioError: on the first problem found.
    """
    document = _value(Document, _parsed(text, SCENARIO_SCHEMA, source))
    catalog = base_catalog if base_catalog is not None else Catalog()
    if document.catalog is not None:
        _check_catalog(document.catalog, source, ['catalog'])
        catalog = Catalog.merged(catalog, document.catalog)
    for name, config in document.configs.items():
        _check_config(name, config, catalog, source)
    _check_bandwidth(document, catalog, source)
    if document.baseline_config not in document.configs:
        raise ScenarioError(
            source, ['baseline'], 'unknown config %r (known: %s)'
            % (document.baseline, ', '.join(sorted(document.configs))))
    for name, workload in document.workloads.items():
        _check_workload(name, workload, source)
    if document.demand is not None:
        _check_demand(document.demand, document.workloads, source)
    return document
