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
"""Reading a scenario: YAML, the schema, references and the built-in files."""

import decimal
import importlib.resources
import os

import jsonschema
import yaml

from nova_pmem_filters.core import extra_specs
from nova_pmem_filters.core import kinds
from nova_pmem_filters.core import observation
from nova_pmem_filters.core import profile
from planner import errors
from planner import observed
from planner import population
from planner.scenario import schemas
from planner.scenario import types


BUILTIN_SCENARIO = 'telco-cost-matched'


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
        if err.validator in ('oneOf', 'anyOf') and err.context:
            # "... is not valid under any of the given schemas" names
            # neither the key nor the rule: report the sub-error of the
            # branch that fits the value best (a negative count in a
            # mapping of counts, not "expected an array").
            err = jsonschema.exceptions.best_match([err])
        raise errors.ScenarioError(source, list(err.absolute_path),
                                   _describe(err))


def _allowed(schema):
    """What a number schema allows, in words: 'a whole number >= 0'."""
    kind = {'integer': 'a whole number', 'number': 'a number'}.get(
        str(schema.get('type')))
    if kind is None:
        return None
    words = [kind] + ['%s %s' % (sign, schema[key]) for key, sign in (
        ('minimum', '>='), ('exclusiveMinimum', '>'), ('maximum', '<='),
        ('exclusiveMaximum', '<')) if key in schema]
    return ' '.join(words[:2]) + ''.join(' and %s' % w for w in words[2:])


def _describe(err):
    text = _rule(err)
    allowed = (_allowed(err.schema) if isinstance(err.schema, dict)
               else None)
    if allowed and err.validator in ('type', 'minimum', 'exclusiveMinimum',
                                     'maximum', 'exclusiveMaximum'):
        text = '%s (allowed: %s)' % (text, allowed)
    return text


def _rule(err):
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
    if err.validator in ('oneOf', 'anyOf'):
        # No branch has the value's type.
        types = [str(branch['type']) for branch in err.validator_value
                 if 'type' in branch]
        if types:
            return 'expected %s, got %r' % (' or '.join(types), err.instance)
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
    cpus = {name: types.Cpu(
            name=name, cores=c['cores'], threads=c['threads'],
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
        dimms[name] = types.Dimm(
            name=name, type=d['type'],
            capacity_gb=float(d['capacity_gb']),
            price=float(d['price']), watts=float(d['watts']),
            generation=d.get('generation'),
            price_source=d.get('price_source', ''),
            watts_source=d.get('watts_source', ''),
            bandwidth_gbps=d.get('bandwidth_gbps'),
            latency_ns=d.get('latency_ns'),
            lanes=int(d.get('lanes', 0)),
            source=d.get('source', ''))
    platforms = {name: types.Platform(
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
        cxl_lanes=int(p.get('cxl_lanes', 0)),
        cpu_generations=tuple(p.get('cpu_generations', ())))
        for name, p in raw.get('platforms', {}).items()}
    return cpus, dimms, platforms


def builtin_catalog():
    """The catalog that ships with the planner."""
    source = 'built-in catalog.yaml'
    raw = _read_yaml(_package_text('catalog.yaml'), source)
    _schema_check(raw, schemas.CATALOG_SCHEMA, source)
    return types.Catalog(*_build_catalog(raw, source))


def _merge(base, raw, source):
    cpus, dimms, platforms = _build_catalog(raw, source, ['catalog'])
    return types.Catalog(cpus={**base.cpus, **cpus},
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
    return types.NodeConfig(name=name, platform=platform, cpu=cpu,
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
        specs[types.NUMA_NODES_KEY] = str(int(raw['numa_nodes']))
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
            m for m in kinds.FLAVOR_MODES if m in request.modes)
    if extra_specs.HOT_RATIO_KEY not in specs:
        specs[extra_specs.HOT_RATIO_KEY] = _spec_value(request.hot_ratio)
    return specs


def _observed(name, raw, source, ratios):
    """``raw`` with its observed hot ratio, and that ratio's source."""
    path = ['workloads', name, 'hot_ratio']
    if ratios is None:
        raise errors.ScenarioError(
            source, path, "'%s' needs observations: give the scenario's "
            "observations key or --observations DIR, a directory of "
            "nova-pmem-observe documents" % observed.OBSERVED)
    directory, by_flavor = ratios
    flavor = raw.get('flavor', name)
    found = by_flavor.get(flavor)
    if found is None:
        raise errors.ScenarioError(
            source, path, 'no measured instance of flavor %r in %s '
            '(flavors measured: %s)' % (flavor, directory, ', '.join(
                sorted(by_flavor)) or 'none'))
    return (dict(raw, hot_ratio=found.recommended),
            observed.describe(found, directory))


def _observations(raw, source, directory):
    """(directory, {flavor: FlavorRatios}), or None when none is given.

    ``directory`` (from the command line) wins over the scenario's
    ``observations`` key, which is relative to the scenario file.
    """
    if directory is not None:
        return directory, observed.load(directory)
    if 'observations' not in raw:
        return None
    directory = raw['observations']
    if not source.startswith('built-in '):
        directory = os.path.join(os.path.dirname(source), directory)
    try:
        return directory, observation.by_flavor(observation.load(directory))
    except observation.ObservationError as exc:
        raise errors.ScenarioError(source, ['observations'], str(exc))


def _build_workload(name, raw, source, ratios=None):
    path = ['workloads', name]
    ratio_source = raw.get('hot_ratio_source', '')
    if raw.get('hot_ratio') == observed.OBSERVED:
        raw, ratio_source = _observed(name, raw, source, ratios)
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
    return types.Workload(
        name=name, vcpus=raw['vcpus'],
        ram_gb=float(raw['ram_gb']), used_gb=used_gb,
        extra_specs=specs, request=request,
        vpmem_gb=float(raw.get('vpmem', {}).get('size_gb', 0)),
        throughput=dict(raw.get('throughput', {})),
        calibration=raw.get('calibration'),
        description=raw.get('description', ''),
        numa_nodes=numa_nodes, bound=bound,
        bandwidth_gbps=raw.get('bandwidth_gbps'),
        flavor=raw.get('flavor'), hot_ratio_source=ratio_source)


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
                % (nodes, field, value, unit, types.NUMA_NODES_KEY, nodes))


def parse(text, source, catalog=None, observations=None):
    """Build a :class:`Scenario` from YAML text.

    :param source: the file name to use in error messages.
    :param observations: a directory of observation documents for the
        workloads whose hot ratio is ``observed``, in place of the
        scenario's ``observations`` key.
    :raises planner.errors.ScenarioError: on the first problem found.
    """
    raw = _read_yaml(text, source)
    _schema_check(raw, schemas.SCENARIO_SCHEMA, source)
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
    ratios = _observations(raw, source, observations)
    workloads = {name: _build_workload(name, w, source, ratios)
                 for name, w in raw['workloads'].items()}
    policies = types.Policies(
        **{k: v for k, v in raw.get('policies', {}).items()
           if not k.endswith('_source')})
    performance = types.Performance(**{k: v for k, v in raw.get(
        'performance', {}).items() if k != 'source'})
    economics = types.Economics(**{k: v for k, v in raw.get(
        'economics', {}).items() if not k.endswith('_source')})
    demand = _build_demand(raw.get('demand'), workloads, economics, source)
    return types.Scenario(
        name=raw['name'], source=source, catalog=catalog,
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
        result.append(
            types.Period(name=name, years=float(years),
                         vms={w: int(vms.get(w, 0)) for w in workloads}))
    return tuple(result)


def load(path=None, observations=None):
    """Load a scenario file, or a built-in scenario by name.

    :param path: a file path, a built-in scenario name, or None for the
        default built-in scenario.
    :param observations: see :func:`parse`.
    """
    return parse(*read_text(path), observations=observations)


def read_text(path=None):
    """(YAML text, source name) of a scenario file or built-in scenario."""
    if path is None:
        path = BUILTIN_SCENARIO
    if not os.path.exists(path) and path in builtin_names():
        return _package_text(path + '.yaml'), 'built-in %s.yaml' % path
    try:
        with open(path, encoding='utf-8') as f:
            return f.read(), path
    except FileNotFoundError as exc:
        raise errors.ScenarioError(
            path, [], 'cannot read the file: %s; nor is it a built-in '
            'scenario (%s)' % (exc.strerror, ', '.join(builtin_names())))
    except OSError as exc:
        raise errors.ScenarioError(path, [], 'cannot read the file: %s'
                                   % exc.strerror)
    except UnicodeDecodeError:
        raise errors.ScenarioError(path, [], 'not UTF-8 text')
