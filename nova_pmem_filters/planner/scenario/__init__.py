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

A scenario is a YAML file whose format is
:mod:`nova_pmem_filters.core.formats.scenario`'s: it is checked against a JSON
Schema (types, ranges, unknown keys), for the rules between its keys, for
references (every SKU it names exists) and through the shared ``pmem:``
extra-spec parser (a workload's hot ratio and priority are flavor extra
specs, read exactly as the scheduler reads them). Every problem becomes a
:class:`nova_pmem_filters.planner.errors.ScenarioError` whose one-line message
names the file, the key path and the rule.

The built-in catalog (``data/catalog.yaml``) is always loaded first; a
scenario's own ``catalog`` section adds entries or replaces them by name.

One module per idea: ``types`` (what a scenario holds once read:
configurations, workloads and the whole; its catalog entries, policies,
economics and demand are the file's own values, resolved) and ``loading``
(building them from the file's values, the DIMM population rules and the
measured hot ratios, the built-in files included).
"""

from nova_pmem_filters.core.formats import scenario_schema as sch
from nova_pmem_filters.planner.scenario import loading
from nova_pmem_filters.planner.scenario import types


# The names callers use, from the module that holds each.
CPU_SCHEMA = sch.CPU_SCHEMA
DIMM_SCHEMA = sch.DIMM_SCHEMA
PLATFORM_SCHEMA = sch.PLATFORM_SCHEMA
CATALOG_SCHEMA = sch.CATALOG_SCHEMA
CONFIG_SCHEMA = sch.CONFIG_SCHEMA
WORKLOAD_SCHEMA = sch.WORKLOAD_SCHEMA
POLICIES_SCHEMA = sch.POLICIES_SCHEMA
PERFORMANCE_SCHEMA = sch.PERFORMANCE_SCHEMA
ECONOMICS_SCHEMA = sch.ECONOMICS_SCHEMA
DEMAND_SCHEMA = sch.DEMAND_SCHEMA
SCENARIO_SCHEMA = sch.SCENARIO_SCHEMA
NUMA_NODES_KEY = sch.NUMA_NODES_KEY
NodeConfig = types.NodeConfig
Workload = types.Workload
Scenario = types.Scenario
BUILTIN_SCENARIO = loading.BUILTIN_SCENARIO
builtin_names = loading.builtin_names
builtin_catalog = loading.builtin_catalog
workload_extra_specs = loading.workload_extra_specs
explicit_specs = loading.explicit_specs
parse = loading.parse
load = loading.load
read_text = loading.read_text
