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
"""Scenario files: hardware catalogs, node configurations, workloads, policies.

A scenario is a YAML file. It is checked against a JSON Schema (types,
ranges, unknown keys), then for references (every SKU it names exists) and
through the shared ``pmem:`` extra-spec parser (a workload's hot ratio and
priority are flavor extra specs, read exactly as the scheduler reads them).
Every problem becomes a :class:`ScenarioError` whose one-line message names
the file, the key path and the rule.

The built-in catalog (``data/catalog.yaml``) is always loaded first; a
scenario's own ``catalog`` section adds entries or replaces them by name.
"""

import dataclasses
import decimal
import importlib.resources
import os

import jsonschema
import yaml

from nova_pmem_filters.core import extra_specs
from nova_pmem_filters.core import kinds
from nova_pmem_filters.core import profile

from planner import errors
from planner import population

BUILTIN_SCENARIO = 'telco-cost-matched'

# Nova's flavor extra spec for a guest NUMA topology of N cells.
NUMA_NODES_KEY = 'hw:numa_nodes'

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
    # Flavor extra specs are strings in Nova; numbers are accepted here and
    # turned into the string the flavor would carry.
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
}, required=['name', 'configs', 'workloads'])


@dataclasses.dataclass(frozen=True)
class Cpu:
    name: str
    cores: int
    threads: int
    price: float
    watts: float
    memory_limit_gb: float
    pmem_generations: tuple = ()
    pmem_max_module_gb: float = 0
    cxl_lanes: int = 0
    flat_memory_mode: bool = False
    generation: str = ''
    description: str = ''
    price_source: str = ''
    watts_source: str = ''
    # Where the entry's facts (PMem support, limits) come from.
    source: str = ''


@dataclasses.dataclass(frozen=True)
class Dimm:
    name: str
    type: str
    capacity_gb: float
    price: float
    watts: float
    generation: str = None
    price_source: str = ''
    watts_source: str = ''
    bandwidth_gbps: float = None
    latency_ns: float = None
    lanes: int = 0
    source: str = ''

    @property
    def is_pmem(self):
        return self.type == 'pmem'

    @property
    def is_cxl(self):
        return self.type == 'cxl'

    @property
    def is_dram(self):
        """A DRAM DIMM in a memory channel (not PMem, not CXL)."""
        return self.type in ('ddr4', 'ddr5')


@dataclasses.dataclass(frozen=True)
class Platform:
    name: str
    sockets: int
    controllers_per_socket: int
    channels_per_socket: int
    slots_per_channel: int
    base_cost: float
    base_watts: float
    pmem_generations: tuple = ()
    description: str = ''
    base_cost_source: str = ''
    base_watts_source: str = ''
    source: str = ''
    rack_units: int = 2
    memory_type: str = 'ddr4'
    cxl_lanes: int = 0

    @property
    def slots_per_socket(self):
        return self.channels_per_socket * self.slots_per_channel


@dataclasses.dataclass(frozen=True)
class Catalog:
    cpus: dict
    dimms: dict
    platforms: dict


@dataclasses.dataclass(frozen=True)
class NodeConfig:
    """One hardware configuration: platform, CPU, DIMMs per socket, mode."""

    name: str
    platform: Platform
    cpu: Cpu
    mode: str
    # One {Dimm: count} per socket.
    sockets: tuple
    description: str = ''

    @property
    def per_socket(self):
        return self.sockets[0]

    def total_gb(self, pmem):
        return sum(d.capacity_gb * n for sock in self.sockets
                   for d, n in sock.items() if d.is_pmem == pmem)

    @property
    def dram_gb(self):
        return sum(d.capacity_gb * n for sock in self.sockets
                   for d, n in sock.items() if d.is_dram)

    @property
    def cxl_gb(self):
        return sum(d.capacity_gb * n for sock in self.sockets
                   for d, n in sock.items() if d.is_cxl)

    @property
    def pmem_gb(self):
        return self.total_gb(pmem=True)

    def population_label(self):
        return ' + '.join('%d x %s' % (n * len(self.sockets), d.name)
                          for d, n in sorted(self.per_socket.items(),
                                             key=lambda kv: kv[0].name)
                          if n)


@dataclasses.dataclass(frozen=True)
class Workload:
    """A flavor and how its VMs really use memory."""

    name: str
    vcpus: int
    ram_gb: float
    used_gb: float
    # The flavor's extra specs, as nova-config would set them.
    extra_specs: dict
    # What the shared parser made of them.
    request: extra_specs.PmemRequest
    vpmem_gb: float = 0.0
    throughput: dict = dataclasses.field(default_factory=dict)
    calibration: dict = None
    description: str = ''
    # hw:numa_nodes of the flavor; None: no NUMA topology is asked for.
    numa_nodes: int = None
    # 'latency' or 'bandwidth': what limits the VM's speed (see
    # model.per_vm_throughput); bandwidth_gbps: what one VM draws.
    bound: str = 'latency'
    bandwidth_gbps: float = None

    @property
    def ram_mb(self):
        return int(round(self.ram_gb * profile.MB_PER_GB))

    @property
    def hot_ratio(self):
        return self.request.hot_ratio

    @property
    def priority(self):
        return self.request.priority


@dataclasses.dataclass(frozen=True)
class Policies:
    memory_cap: float = 0.9
    host_reserve_gb: float = 0.0
    cpu_overcommit: float = 1.0
    cache_overcommit: float = 1.0
    # Share of an App-Direct region lost to namespace metadata and alignment
    # (devdax/fsdax with struct-page metadata on the device: 64 bytes per
    # 4 KiB page is 1/64).
    namespace_overhead: float = 1.0 / 64


@dataclasses.dataclass(frozen=True)
class Performance:
    # Field notes 7: Optane media about 350 ns idle read latency against
    # under 100 ns for DRAM.
    dram_latency_ns: float = 90.0
    pmem_latency_ns: float = 350.0


@dataclasses.dataclass(frozen=True)
class Economics:
    """What a node costs over its service life, and the fleet's caps."""

    # Assumptions to replace with the site's own figures.
    power_price_per_kwh: float = 0.10
    pue: float = 1.5
    years: float = 5.0
    budget: float = None
    power_kw: float = None
    rack_units: float = None


@dataclasses.dataclass(frozen=True)
class Period:
    """VMs to carry for some years: one step of a demand forecast."""

    name: str
    years: float
    vms: dict


@dataclasses.dataclass(frozen=True)
class Scenario:
    name: str
    source: str
    catalog: Catalog
    configs: dict
    baseline: str
    workloads: dict
    policies: Policies
    performance: Performance
    description: str = ''
    economics: Economics = Economics()
    # Periods of demand, in order; empty when the scenario gives none.
    demand: tuple = ()


def _read_yaml(text, source):
    try:
        data = yaml.safe_load(text)
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
        raise errors.ScenarioError(source, where, 'not valid YAML: %s'
                                   % (problem or exc))
    if not isinstance(data, dict):
        raise errors.ScenarioError(source, [], 'expected a mapping of keys to '
                                   'values, got %s' % type(data).__name__)
    return data


def _schema_check(data, schema, source):
    validator = jsonschema.Draft202012Validator(schema)
    found = sorted(validator.iter_errors(data),
                   key=lambda e: (len(e.absolute_path),
                                  [str(p) for p in e.absolute_path]))
    if found:
        err = found[0]
        raise errors.ScenarioError(source, list(err.absolute_path),
                                   _describe(err))


def _describe(err):
    if err.validator == 'additionalProperties':
        extra = sorted(set(err.instance) - set(err.schema.get(
            'properties', {})))
        allowed = ', '.join(sorted(err.schema.get('properties', {})))
        return 'unknown key %s (allowed: %s)' % (
            ', '.join(repr(k) for k in extra), allowed)
    if err.validator == 'type':
        return 'expected %s, got %r' % (err.validator_value, err.instance)
    if err.validator in ('minimum', 'exclusiveMinimum', 'maximum',
                         'exclusiveMaximum'):
        words = {'minimum': 'at least', 'exclusiveMinimum': 'greater than',
                 'maximum': 'at most', 'exclusiveMaximum': 'less than'}
        return 'must be %s %s, got %r' % (words[err.validator],
                                          err.validator_value, err.instance)
    if err.validator == 'enum':
        return 'must be one of %s, got %r' % (
            ', '.join(str(v) for v in err.validator_value), err.instance)
    if err.validator == 'pattern':
        return '%r does not match %s' % (err.instance, err.validator_value)
    return err.message


def _package_text(name):
    return importlib.resources.files('planner').joinpath(
        'data', name).read_text(encoding='utf-8')


def builtin_names():
    """Names of the scenarios that ship with the planner."""
    names = []
    for entry in importlib.resources.files('planner').joinpath(
            'data').iterdir():
        if entry.name.endswith('.yaml') and entry.name != 'catalog.yaml':
            names.append(entry.name[:-len('.yaml')])
    return sorted(names)


def _build_catalog(raw, source, path=()):
    cpus = {name: Cpu(name=name, cores=c['cores'], threads=c['threads'],
                      price=float(c['price']), watts=float(c['watts']),
                      memory_limit_gb=float(c['memory_limit_gb']),
                      pmem_generations=tuple(c.get('pmem_generations', ())),
                      pmem_max_module_gb=float(
                          c.get('pmem_max_module_gb', 0)),
                      cxl_lanes=int(c.get('cxl_lanes', 0)),
                      flat_memory_mode=bool(c.get('flat_memory_mode',
                                                  False)),
                      generation=c.get('generation', ''),
                      description=c.get('description', ''),
                      price_source=c.get('price_source', ''),
                      watts_source=c.get('watts_source', ''),
                      source=c.get('source', ''))
            for name, c in raw.get('cpus', {}).items()}
    dimms = {}
    for name, d in raw.get('dimms', {}).items():
        if d['type'] == 'pmem' and 'generation' not in d:
            raise errors.ScenarioError(
                source,
                list(path) + ['dimms', name, 'generation'],
                'a pmem DIMM needs its generation '
                '(100 or 200)')
        if d['type'] == 'cxl':
            for key in ('lanes', 'latency_ns', 'bandwidth_gbps'):
                if key not in d:
                    raise errors.ScenarioError(
                        source, list(path) + ['dimms', name, key],
                        'a CXL memory device needs %s (link lanes, idle '
                        'latency and bandwidth drive the population rules '
                        'and the throughput model)' % key)
        dimms[name] = Dimm(name=name, type=d['type'],
                           capacity_gb=float(d['capacity_gb']),
                           price=float(d['price']), watts=float(d['watts']),
                           generation=d.get('generation'),
                           price_source=d.get('price_source', ''),
                           watts_source=d.get('watts_source', ''),
                           bandwidth_gbps=d.get('bandwidth_gbps'),
                           latency_ns=d.get('latency_ns'),
                           lanes=int(d.get('lanes', 0)),
                           source=d.get('source', ''))
    platforms = {name: Platform(
        name=name, sockets=p['sockets'],
        controllers_per_socket=p['controllers_per_socket'],
        channels_per_socket=p['channels_per_socket'],
        slots_per_channel=p['slots_per_channel'],
        base_cost=float(p['base_cost']), base_watts=float(p['base_watts']),
        pmem_generations=tuple(p.get('pmem_generations', ())),
        description=p.get('description', ''),
        base_cost_source=p.get('base_cost_source', ''),
        base_watts_source=p.get('base_watts_source', ''),
        source=p.get('source', ''), rack_units=p.get('rack_units', 2),
        memory_type=p.get('memory_type', 'ddr4'),
        cxl_lanes=int(p.get('cxl_lanes', 0)))
        for name, p in raw.get('platforms', {}).items()}
    return cpus, dimms, platforms


def builtin_catalog():
    """The catalog that ships with the planner."""
    source = 'built-in catalog.yaml'
    raw = _read_yaml(_package_text('catalog.yaml'), source)
    _schema_check(raw, CATALOG_SCHEMA, source)
    return Catalog(*_build_catalog(raw, source))


def _merge(base, raw, source):
    cpus, dimms, platforms = _build_catalog(raw, source, ['catalog'])
    return Catalog(cpus={**base.cpus, **cpus},
                   dimms={**base.dimms, **dimms},
                   platforms={**base.platforms, **platforms})


def _lookup(table, name, source, path, what):
    try:
        return table[name]
    except KeyError:
        raise errors.ScenarioError(source, path, 'unknown %s %r (known: %s)'
                                   % (what, name, ', '.join(sorted(table))))


def _socket_population(raw, catalog, source, path):
    return {_lookup(catalog.dimms, name, source, path + [name], 'DIMM'): n
            for name, n in sorted(raw.items()) if n}


def _build_config(name, raw, catalog, source):
    path = ['configs', name]
    platform = _lookup(catalog.platforms, raw['platform'], source,
                       path + ['platform'], 'platform')
    cpu = _lookup(catalog.cpus, raw['cpu'], source, path + ['cpu'], 'CPU')
    if ('per_socket' in raw) == ('sockets' in raw):
        raise errors.ScenarioError(
            source, path, 'give exactly one of per_socket '
            '(same DIMMs on every socket) or sockets '
            '(a list, one population per socket)')
    if 'per_socket' in raw:
        one = _socket_population(raw['per_socket'], catalog, source,
                                 path + ['per_socket'])
        sockets = tuple(dict(one) for _ in range(platform.sockets))
    else:
        if len(raw['sockets']) != platform.sockets:
            raise errors.ScenarioError(
                source, path + ['sockets'],
                'platform %s has %d sockets, %d populations '
                'given' % (platform.name, platform.sockets,
                           len(raw['sockets'])))
        sockets = tuple(_socket_population(s, catalog, source,
                                           path + ['sockets', i])
                        for i, s in enumerate(raw['sockets']))
    return NodeConfig(name=name, platform=platform, cpu=cpu,
                      mode=raw['mode'], sockets=sockets,
                      description=raw.get('description', ''))


def _spec_value(value):
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        # A plain decimal, as the flavor carries it: repr(0.00001) is
        # '1e-05', which the shared grammar (no exponents) refuses.
        return format(decimal.Decimal(repr(value)), 'f')
    return str(value)


def workload_extra_specs(raw):
    """The flavor extra specs that express a workload's scenario entry."""
    specs = {}
    if 'modes' in raw:
        specs[extra_specs.MODES_KEY] = ','.join(str(m) for m in raw['modes'])
    if 'priority' in raw:
        specs[extra_specs.PRIORITY_KEY] = _spec_value(raw['priority'])
    if 'hot_ratio' in raw:
        specs[extra_specs.HOT_RATIO_KEY] = _spec_value(raw['hot_ratio'])
    if 'vpmem' in raw:
        specs[extra_specs.VPMEM_KEY] = raw['vpmem']['label']
    if 'numa_nodes' in raw:
        # int(): the schema lets 2.0 through as an integer, and Nova
        # refuses hw:numa_nodes=2.0.
        specs[NUMA_NODES_KEY] = str(int(raw['numa_nodes']))
    return specs


def explicit_specs(specs, request):
    """``specs`` with every value the plan relies on written out.

    A workload that gives no modes or hot ratio is planned with the core's
    defaults (:data:`nova_pmem_filters.core.extra_specs.DEFAULTS`, the
    defaults of ``[pmem] default_flavor_modes`` and ``default_hot_ratio``);
    its flavor carries them as ``pmem:modes`` and ``pmem:hot_ratio``, so
    that a cloud whose options differ still admits what was planned.
    """
    specs = dict(specs)
    if extra_specs.MODES_KEY not in specs:
        specs[extra_specs.MODES_KEY] = ','.join(
            m for m in kinds.MODES if m in request.modes)
    if extra_specs.HOT_RATIO_KEY not in specs:
        specs[extra_specs.HOT_RATIO_KEY] = _spec_value(request.hot_ratio)
    return specs


def _build_workload(name, raw, source):
    path = ['workloads', name]
    specs = workload_extra_specs(raw)
    key_to_field = {extra_specs.MODES_KEY: 'modes',
                    extra_specs.PRIORITY_KEY: 'priority',
                    extra_specs.HOT_RATIO_KEY: 'hot_ratio'}
    try:
        request = extra_specs.parse(specs)
    except extra_specs.InvalidExtraSpec as exc:
        raise errors.ScenarioError(
            source, path + [key_to_field[exc.key]],
            'flavor extra spec %s=%r is invalid: expected %s'
            % (exc.key, exc.value, exc.allowed))
    if request.conflict:
        raise errors.ScenarioError(source, path, request.conflict)
    specs = explicit_specs(specs, request)
    if round(raw['ram_gb'] * profile.MB_PER_GB) < 1:
        # Nova's memory_mb is a whole number of MB; 0 has no hot RAM.
        raise errors.ScenarioError(
            source, path + ['ram_gb'], 'a flavor has at '
            'least 1 MB of RAM, got %r GB' % raw['ram_gb'])
    used_gb = float(raw.get('used_gb', raw['ram_gb']))
    bound = raw.get('bound', 'latency')
    if bound == 'bandwidth' and 'bandwidth_gbps' not in raw:
        raise errors.ScenarioError(
            source, path + ['bandwidth_gbps'],
            'a bandwidth-bound workload needs bandwidth_gbps, '
            'the memory bandwidth one VM draws at full '
            'speed')
    numa_nodes = raw.get('numa_nodes')
    if numa_nodes is not None:
        numa_nodes = int(numa_nodes)
        _check_numa_nodes(numa_nodes, raw, source, path)
    return Workload(name=name, vcpus=raw['vcpus'],
                    ram_gb=float(raw['ram_gb']), used_gb=used_gb,
                    extra_specs=specs, request=request,
                    vpmem_gb=float(raw.get('vpmem', {}).get('size_gb', 0)),
                    throughput=dict(raw.get('throughput', {})),
                    calibration=raw.get('calibration'),
                    description=raw.get('description', ''),
                    numa_nodes=numa_nodes, bound=bound,
                    bandwidth_gbps=raw.get('bandwidth_gbps'))


def _check_numa_nodes(nodes, raw, source, path):
    # Nova splits the flavor evenly over the guest cells and refuses the
    # boot when it cannot (ImageNUMATopologyAsymmetric).
    ram_mb = int(round(raw['ram_gb'] * profile.MB_PER_GB))
    for field, value, unit in (('vcpus', raw['vcpus'], 'vCPUs'),
                               ('ram_gb', ram_mb, 'MB of RAM')):
        if value % nodes:
            raise errors.ScenarioError(
                source, path + ['numa_nodes'],
                'numa_nodes: %d does not divide %s (%d %s): Nova refuses '
                'to boot a flavor with %s=%d that it cannot split evenly '
                'over the guest NUMA cells'
                % (nodes, field, value, unit, NUMA_NODES_KEY, nodes))


def parse(text, source, catalog=None):
    """Build a :class:`Scenario` from YAML text.

    :param source: the file name to use in error messages.
    :raises planner.errors.ScenarioError: on the first problem found.
    """
    raw = _read_yaml(text, source)
    _schema_check(raw, SCENARIO_SCHEMA, source)
    catalog = catalog or builtin_catalog()
    if 'catalog' in raw:
        catalog = _merge(catalog, raw['catalog'], source)
    configs = {name: _build_config(name, c, catalog, source)
               for name, c in raw['configs'].items()}
    for name, config in configs.items():
        problems = population.errors(population.check(config))
        if problems:
            raise errors.ScenarioError(
                source, ['configs', name],
                'invalid population: %s (%s) [%s]'
                % (problems[0].message, problems[0].code,
                   problems[0].source))
    _check_bandwidth(configs, workloads_raw=raw['workloads'],
                     source=source)
    baseline = raw.get('baseline', next(iter(raw['configs'])))
    if baseline not in configs:
        raise errors.ScenarioError(
            source, ['baseline'], 'unknown config %r '
            '(known: %s)' % (baseline,
                             ', '.join(sorted(configs))))
    workloads = {name: _build_workload(name, w, source)
                 for name, w in raw['workloads'].items()}
    policies = Policies(**{k: v for k, v in raw.get('policies', {}).items()
                           if not k.endswith('_source')})
    performance = Performance(**{k: v for k, v in raw.get(
        'performance', {}).items() if k != 'source'})
    economics = Economics(**{k: v for k, v in raw.get(
        'economics', {}).items() if not k.endswith('_source')})
    demand = _build_demand(raw.get('demand'), workloads, economics, source)
    return Scenario(name=raw['name'], source=source, catalog=catalog,
                    configs=configs, baseline=baseline, workloads=workloads,
                    policies=policies, performance=performance,
                    description=raw.get('description', ''),
                    economics=economics, demand=demand)


def _check_bandwidth(configs, workloads_raw, source):
    # The bandwidth model needs every module's bandwidth on every node a
    # bandwidth-bound workload is compared on.
    bound = [name for name, w in workloads_raw.items()
             if w.get('bound') == 'bandwidth']
    if not bound:
        return
    for name, config in configs.items():
        for dimm in sorted({d for sock in config.sockets for d in sock
                            if not d.is_pmem}, key=lambda d: d.name):
            if dimm.bandwidth_gbps is None:
                raise errors.ScenarioError(
                    source, ['configs', name],
                    'workload %s is bandwidth-bound but DIMM %s of this '
                    'configuration gives no bandwidth_gbps in the catalog'
                    % (bound[0], dimm.name))


def _build_demand(raw, workloads, economics, source):
    if raw is None:
        return ()
    if isinstance(raw, dict):
        periods = [('all', economics.years, raw, ['demand'])]
    else:
        periods = [(p['name'], p['years'], p['vms'], ['demand', i, 'vms'])
                   for i, p in enumerate(raw)]
        names = [p[0] for p in periods]
        for i, name in enumerate(names):
            if name in names[:i]:
                raise errors.ScenarioError(source, ['demand', i, 'name'],
                                           'period %r is named twice' % name)
    result = []
    for name, years, vms, path in periods:
        for workload in vms:
            if workload not in workloads:
                raise errors.ScenarioError(
                    source, path + [workload],
                    'unknown workload %r (known: %s)'
                    % (workload, ', '.join(sorted(workloads))))
        result.append(Period(name=name, years=float(years),
                             vms={w: int(vms.get(w, 0)) for w in workloads}))
    return tuple(result)


def load(path=None):
    """Load a scenario file, or a built-in scenario by name.

    :param path: a file path, a built-in scenario name, or None for the
        default built-in scenario.
    """
    return parse(*read_text(path))


def read_text(path=None):
    """(YAML text, source name) of a scenario file or built-in scenario."""
    if path is None:
        path = BUILTIN_SCENARIO
    if not os.path.exists(path) and path in builtin_names():
        return _package_text(path + '.yaml'), 'built-in %s.yaml' % path
    try:
        with open(path, encoding='utf-8') as f:
            return f.read(), path
    except OSError as exc:
        raise errors.ScenarioError(path, [], 'cannot read the file: %s'
                                   % exc.strerror)
    except UnicodeDecodeError:
        raise errors.ScenarioError(path, [], 'not UTF-8 text')
