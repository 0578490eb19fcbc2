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

- its keys are the fields of the classes of ``scenario_sections``, one
  class per section (``Document``, ``Catalog``, ``Cpu``, ``Dimm``,
  ``Platform``, ``Config``, ``Workload``, ...), and the JSON Schemas of
  ``scenario_schema`` (``SCENARIO_SCHEMA``, ``CATALOG_SCHEMA``, ...) name
  the same keys; ``scenario_yaml`` reads the YAML, bounded;
- :func:`parse` reads a whole document into those values, checked: YAML,
  the schema (types, ranges, unknown keys), the rules between keys (a PMem
  DIMM's generation, one form of socket population, a bandwidth-bound
  workload's bandwidth, ``numa_nodes`` that divide the flavor, ...), the
  names it refers to (catalog entries, the baseline, the workloads of the
  demand) and its workloads' flavor extra specs, through the scheduler's
  own parser. Every problem is a ``scenario_schema.ScenarioError`` whose
  one-line message names the file, the key path and the rule;
- ``scenario_sections.to_mapping`` and :func:`dumps` build a document from
  such values, so that ``parse(dumps(document))`` gives ``document`` back.

A value is what the document says: a key it leaves out is ``None``, so that
the writer leaves it out too. What a reader assumes for such a key is
declared once, with the key (``scenario_sections.resolved`` fills it in); the
planner, ``nova_pmem_filters.planner.scenario``, builds its model on these
resolved values, with the built-in catalog, the DIMM population rules and
the measured hot ratios.

This module imports nothing from Nova; PyYAML and jsonschema (which Nova
requires) are imported when a document is read or written.
"""

from nova_pmem_filters.core.formats import scenario_schema as sch
from nova_pmem_filters.core.formats import scenario_sections as sec
from nova_pmem_filters.core.formats import scenario_yaml as syaml
from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters.core.rules import tiering


def dumps(document):
    """The YAML text of a :class:`Document` (or of a :class:`Catalog`)."""
    import yaml
    return yaml.dump(sec.to_mapping(document),
                     Dumper=syaml.yaml_class('SafeDumper'), sort_keys=False,
                     default_flow_style=False, allow_unicode=True)


def _check_catalog(catalog, source, path):
    for name, dimm in catalog.dimms.items():
        if dimm.type == sch.PMEM and dimm.generation is None:
            raise sch.ScenarioError(
                source, list(path) + ['dimms', name, 'generation'],
                'a pmem DIMM needs its generation (100 or 200)')
        if dimm.type == sch.CXL:
            for key in ('lanes', 'latency_ns', 'bandwidth_gbps'):
                if getattr(dimm, key) is None:
                    raise sch.ScenarioError(
                        source, list(path) + ['dimms', name, key],
                        'a CXL memory device needs %s (link lanes, idle '
                        'latency and bandwidth drive the population rules '
                        'and the throughput model)' % key)


def _lookup(table, name, source, path, what):
    try:
        return table[name]
    except KeyError:
        raise sch.ScenarioError(source, path, 'unknown %s %r (known: %s)'
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
        raise sch.ScenarioError(
            source, path, 'give exactly one of per_socket '
            '(same DIMMs on every socket) or sockets '
            '(a list, one population per socket)')
    if (config.kernel_tiering is not None
            and config.mode not in kinds.KERNEL_TIERED):
        raise sch.ScenarioError(
            source, path + ['kernel_tiering'],
            'applies only to a mode whose tiering the kernel does (%s), '
            'not to mode %s; leave it out (allowed values on %s: %s)'
            % (', '.join(sorted(kinds.KERNEL_TIERED)), config.mode,
               ', '.join(sorted(kinds.KERNEL_TIERED)),
               ', '.join(tiering.STATES)))
    if not any(any(population.values()) for population in
               config.populations(platform.sockets)):
        raise sch.ScenarioError(
            source, path, 'a node needs memory: give at least one DIMM '
            'a count of 1 or more')
    if config.per_socket is not None:
        _population_dimms(config.per_socket, catalog, source,
                          path + ['per_socket'])
        return
    if len(config.sockets) != platform.sockets:
        raise sch.ScenarioError(
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
             if w.bound == sch.BANDWIDTH_BOUND]
    if not bound:
        return
    for name, config in document.configs.items():
        dimms = {}
        for population in config.populations(
                catalog.platforms[config.platform].sockets):
            dimms.update(_population_dimms(population, catalog, source, []))
        for dimm_name, dimm in sorted(dimms.items()):
            if dimm.type != sch.PMEM and dimm.bandwidth_gbps is None:
                raise sch.ScenarioError(
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
        raise sch.ScenarioError(
            source, path + [_SPEC_FIELDS[exc.key]],
            'flavor extra spec %s=%r is invalid: expected %s'
            % (exc.key, exc.value, exc.allowed))
    if request.conflict:
        raise sch.ScenarioError(source, path, request.conflict)
    return specs, request


def _check_numa_nodes(name, workload, source):
    # Nova splits the flavor evenly over the guest cells and refuses the
    # boot when it cannot (ImageNUMATopologyAsymmetric).
    nodes = int(workload.numa_nodes)
    ram_mb = int(round(workload.ram_gb * profile.MB_PER_GB))
    for field, value, unit in (('vcpus', workload.vcpus, 'vCPUs'),
                               ('ram_gb', ram_mb, 'MB of RAM')):
        if value % nodes:
            raise sch.ScenarioError(
                source, ['workloads', name, 'numa_nodes'],
                'numa_nodes: %d does not divide %s (%d %s): Nova refuses '
                'to boot a flavor with %s=%d that it cannot split evenly '
                'over the guest NUMA cells'
                % (nodes, field, value, unit, sch.NUMA_NODES_KEY, nodes))


def _check_workload(name, workload, source):
    path = ['workloads', name]
    flavor_request(name, workload, source)
    if round(workload.ram_gb * profile.MB_PER_GB) < 1:
        # Nova's memory_mb is a whole number of MB; 0 has no hot RAM.
        raise sch.ScenarioError(
            source, path + ['ram_gb'], 'a flavor has at '
            'least 1 MB of RAM, got %r GB' % workload.ram_gb)
    if workload.used_gb is not None and workload.used_gb > workload.ram_gb:
        raise sch.ScenarioError(
            source, path + ['used_gb'], 'a workload uses at most its '
            'flavor\'s RAM: used_gb %r is more than ram_gb %r'
            % (workload.used_gb, workload.ram_gb))
    if (workload.bound == sch.BANDWIDTH_BOUND
            and workload.bandwidth_gbps is None):
        raise sch.ScenarioError(
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
            raise sch.ScenarioError(source, ['demand', i, 'name'],
                                    'period %r is named twice' % name)
    for i, period in enumerate(demand):
        path = (['demand'] if period.years is None
                else ['demand', i, 'vms'])
        for workload in period.vms:
            if workload not in workloads:
                raise sch.ScenarioError(
                    source, path + [workload],
                    'unknown workload %r (known: %s)'
                    % (workload, ', '.join(sorted(workloads))))


def parse_catalog(text, source):
    """The :class:`Catalog` of a catalog file's YAML text.

    :raises ScenarioError: on the first problem found.
    """
    catalog = sec.value_of(sec.Catalog,
                           _parsed(text, sch.CATALOG_SCHEMA, source))
    _check_catalog(catalog, source, [])
    return catalog


def _parsed(text, schema, source):
    raw = syaml.read_yaml(text, source)
    sch.check_schema(raw, schema, source)
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
    document = sec.value_of(sec.Document,
                            _parsed(text, sch.SCENARIO_SCHEMA, source))
    catalog = base_catalog if base_catalog is not None else sec.Catalog()
    if document.catalog is not None:
        _check_catalog(document.catalog, source, ['catalog'])
        catalog = sec.Catalog.merged(catalog, document.catalog)
    for name, config in document.configs.items():
        _check_config(name, config, catalog, source)
    _check_bandwidth(document, catalog, source)
    if document.baseline_config not in document.configs:
        raise sch.ScenarioError(
            source, ['baseline'], 'unknown config %r (known: %s)'
            % (document.baseline, ', '.join(sorted(document.configs))))
    for name, workload in document.workloads.items():
        _check_workload(name, workload, source)
    if document.demand is not None:
        _check_demand(document.demand, document.workloads, source)
    return document
