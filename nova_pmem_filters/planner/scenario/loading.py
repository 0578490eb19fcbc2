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
"""Reading a scenario: the file's values, the planner's model of them.

The file format (YAML, the schema, the rules between keys and the names it
refers to) is :mod:`nova_pmem_filters.core.formats.scenario`'s; here its values
become the planner's types, with the built-in catalog, the DIMM population
rules and the measured hot ratios.
"""

import contextlib
import dataclasses
import importlib.resources
import os

from nova_pmem_filters.core.formats import observation

from nova_pmem_filters.core.formats import scenario as document
from nova_pmem_filters.core.formats import scenario_schema as sch
from nova_pmem_filters.core.formats import scenario_sections as sec
from nova_pmem_filters.core.plans import hotratio
from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters import fileutil
from nova_pmem_filters.planner import errors
from nova_pmem_filters.planner import model
from nova_pmem_filters.planner import observed
from nova_pmem_filters.planner import population
from nova_pmem_filters.planner.population import common
from nova_pmem_filters.planner.scenario import types


BUILTIN_SCENARIO = 'telco-cost-matched'


@contextlib.contextmanager
def _planner_errors():
    """The file format's errors as the planner's (exit status 2)."""
    try:
        yield
    except sch.ScenarioError as exc:
        if isinstance(exc, errors.ScenarioError):
            raise
        raise errors.ScenarioError(exc.source, exc.path, exc.rule) from None


def _package_text(name):
    return importlib.resources.files('nova_pmem_filters.planner').joinpath(
        'data', name).read_text(encoding='utf-8')


def builtin_names():
    """Names of the scenarios that ship with the planner."""
    names = []
    for entry in importlib.resources.files(
            'nova_pmem_filters.planner').joinpath('data').iterdir():
        if entry.name.endswith('.yaml') and entry.name != 'catalog.yaml':
            names.append(entry.name[:-len('.yaml')])
    return sorted(names)


def builtin_catalog():
    """The catalog that ships with the planner."""
    with _planner_errors():
        section = document.parse_catalog(_package_text('catalog.yaml'),
                                         'built-in catalog.yaml')
    return sec.resolved(section)


def _merge(base, section):
    if section is None:
        return base
    return base.merged(sec.resolved(section))


def _socket_population(names, catalog):
    return {catalog.dimms[name]: n for name, n in sorted(names.items()) if n}


def _build_config(name, config, catalog):
    platform = catalog.platforms[config.platform]
    sockets = tuple(_socket_population(names, catalog)
                    for names in config.populations(platform.sockets))
    return types.NodeConfig(name=name, platform=platform,
                            cpu=catalog.cpus[config.cpu],
                            mode=config.mode, sockets=sockets,
                            description=sec.resolved(config).description,
                            kernel_tiering=config.kernel_tiering)


def _check_populations(configs, source):
    for name, config in configs.items():
        problems = common.errors(population.check(config))
        if problems:
            raise errors.ScenarioError(
                source, ['configs', name],
                'invalid population: %s (%s) [%s]'
                % (problems[0].message, problems[0].code,
                   problems[0].source))


def _check_host_reserve(configs, policies, source):
    # What the host keeps for itself must leave memory for guests on
    # every configuration, or every density is zero for a typo.
    visible, name = min((model.node(config, policies).visible_memory_gb,
                         name) for name, config in configs.items())
    if policies.host_reserve_gb >= visible:
        raise errors.ScenarioError(
            source, ['policies', 'host_reserve_gb'],
            '%g GB leaves no memory for guests on configuration %s '
            '(%g GB); allowed: 0 to less than %g'
            % (policies.host_reserve_gb, name, visible, visible))


def workload_extra_specs(raw):
    """The flavor extra specs that express a workload's scenario entry."""
    return sec.from_mapping(sec.Workload, raw).extra_specs()


def explicit_specs(specs, request):
    """``specs`` with every value the plan relies on written out.

    A workload that gives no modes or hot ratio is planned with the core's
    defaults (:data:`nova_pmem_filters.core.rules.extra_specs.DEFAULTS`, the
    defaults of ``[pmem] default_flavor_modes`` and ``default_hot_ratio``);
    its flavor carries them as ``pmem:modes`` and ``pmem:hot_ratio``, so
    that a cloud whose options differ still admits what was planned.
    """
    specs = dict(specs)
    if extra_specs.MODES_KEY not in specs:
        specs[extra_specs.MODES_KEY] = ','.join(
            m for m in kinds.FLAVOR_MODES if m in request.modes)
    if extra_specs.HOT_RATIO_KEY not in specs:
        specs[extra_specs.HOT_RATIO_KEY] = extra_specs.format_hot_ratio(
            request.hot_ratio)
    return specs


def _observed(name, workload, source, ratios):
    """``workload`` with its observed hot ratio, and that ratio's source."""
    path = ['workloads', name, 'hot_ratio']
    if ratios is None:
        raise errors.ScenarioError(
            source, path, "'%s' needs observations: give the scenario's "
            "observations key or --observations DIR, a directory of "
            "nova-pmem-observe documents" % sch.OBSERVED)
    directory, by_flavor = ratios
    flavor = name if workload.flavor is None else workload.flavor
    found = by_flavor.get(flavor)
    if found is None:
        raise errors.ScenarioError(
            source, path, 'no measured instance of flavor %r in %s '
            '(flavors measured: %s)' % (flavor, directory, ', '.join(
                sorted(by_flavor)) or 'none'))
    return (dataclasses.replace(workload, hot_ratio=found.recommended),
            observed.describe(found, directory))


def _observations(doc, source, directory):
    """(directory, {flavor: FlavorRatios}), or None when none is given.

    ``directory`` (from the command line) wins over the scenario's
    ``observations`` key, which is relative to the scenario file.
    """
    if directory is not None:
        return directory, observed.load(directory)
    if doc.observations is None:
        return None
    directory = doc.observations
    if not source.startswith('built-in '):
        directory = os.path.join(os.path.dirname(source), directory)
    try:
        return directory, hotratio.by_flavor(observation.load(directory))
    except observation.ObservationError as exc:
        raise errors.ScenarioError(source, ['observations'], str(exc))


def _build_workload(name, workload, source, ratios=None):
    ratio_source = sec.resolved(workload).hot_ratio_source
    if workload.observed:
        workload, ratio_source = _observed(name, workload, source, ratios)
    with _planner_errors():
        specs, request = document.flavor_request(name, workload, source)
    specs = explicit_specs(specs, request)
    workload = sec.resolved(workload)
    return types.Workload(
        name=name, vcpus=workload.vcpus, ram_gb=workload.ram_gb,
        # A workload that says nothing of its use uses all its RAM.
        used_gb=(workload.ram_gb if workload.used_gb is None
                 else workload.used_gb),
        extra_specs=specs, request=request,
        vpmem_gb=float(workload.vpmem.size_gb if workload.vpmem else 0),
        throughput=workload.throughput,
        calibration=(None if workload.calibration is None
                     else sec.to_mapping(workload.calibration)),
        description=workload.description, numa_nodes=workload.numa_nodes,
        bound=workload.bound, bandwidth_gbps=workload.bandwidth_gbps,
        flavor=workload.flavor, hot_ratio_source=ratio_source)


def parse(text, source, catalog=None, observations=None):
    """Build a :class:`Scenario` from YAML text.

    :param source: the file name to use in error messages.
    :param observations: a directory of observation documents for the
        workloads whose hot ratio is ``observed``, in place of the
        scenario's ``observations`` key.
    :raises nova_pmem_filters.planner.errors.ScenarioError: on the first
    problem found.
    """
    catalog = catalog or builtin_catalog()
    with _planner_errors():
        doc = document.parse(text, source, catalog)
    catalog = _merge(catalog, doc.catalog)
    configs = {name: _build_config(name, c, catalog)
               for name, c in doc.configs.items()}
    _check_populations(configs, source)
    ratios = _observations(doc, source, observations)
    workloads = {name: _build_workload(name, w, source, ratios)
                 for name, w in doc.workloads.items()}
    policies = sec.resolved(doc.policies or sec.Policies())
    _check_host_reserve(configs, policies, source)
    performance = sec.resolved(doc.performance or sec.Performance())
    economics = sec.resolved(doc.economics or sec.Economics())
    return types.Scenario(
        name=doc.name, source=source, catalog=catalog,
        configs=configs, baseline=doc.baseline_config, workloads=workloads,
        policies=policies, performance=performance,
        description=sec.resolved(doc).description, economics=economics,
        demand=_build_demand(doc.demand, workloads, economics))


def _build_demand(periods, workloads, economics):
    if periods is None:
        return ()
    return tuple(
        sec.Period(name=p.name,
                   # None: the service life.
                   years=float(economics.years if p.years is None
                               else p.years),
                   vms={w: int(p.vms.get(w, 0)) for w in workloads})
        for p in periods)


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
        return fileutil.read_text(path), path
    except FileNotFoundError as exc:
        raise errors.ScenarioError(
            path, [], 'cannot read the file: %s; nor is it a built-in '
            'scenario (%s)' % (exc.strerror, ', '.join(builtin_names())))
    except OSError as exc:
        raise errors.ScenarioError(path, [], 'cannot read the file: %s'
                                   % exc.strerror)
    except UnicodeDecodeError:
        raise errors.ScenarioError(path, [], 'not UTF-8 text')
