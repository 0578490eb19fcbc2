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
"""What the optimiser's tests share: scenarios small enough to prove."""

import sys
import time

import hypothesis
import yaml

from nova_pmem_filters.planner import optimize
from nova_pmem_filters.planner.optimize import colgen
from nova_pmem_filters.planner.optimize import master as master_mod
from nova_pmem_filters.planner.optimize import pricing
from nova_pmem_filters.planner import scenario
from tests.unit import paths

sys.path.insert(0, paths.of('benchmarks'))
import fleet_optimize  # noqa: E402

PROPERTY = hypothesis.settings(
    derandomize=True, deadline=None, max_examples=60, database=None,
    suppress_health_check=[hypothesis.HealthCheck.too_slow])

BUILTIN = scenario.load()

# Seconds a solve may take where a test checks its answer or its proof, not
# its speed: a time limit a busy machine reaches would make it fail by
# timing (a solve ends as soon as it has its proof).
LONG = 3600.0


def seeded(problem):
    """A master of the seed patterns only, priced exactly (gap 0)."""
    master = master_mod.Master(problem)
    master.pricing_gap = pricing.pricing_gap(0.0)
    colgen.seed(problem, master)
    return master


def generated(problem, generate=True):
    """(master, column generation run to its end, gap 0) of ``problem``."""
    master = seeded(problem)
    deadline = time.monotonic() + LONG
    return master, colgen.generate_columns(problem, master, deadline,
                                           deadline, 0.0, generate, None)


def scenario_of(workloads, configs=None, demand=None, economics=None):
    raw = {'name': 'test', 'workloads': workloads,
           'configs': configs or {
               'dram-384': {'platform': 'purley-2s',
                            'cpu': 'xeon-gold-6148', 'mode': 'dram',
                            'per_socket': {'ddr4-16': 12}},
               'mm-192-512': {'platform': 'cascade-lake-2s',
                              'cpu': 'xeon-gold-6230n',
                              'mode': 'memory_mode',
                              'per_socket': {'ddr4-16': 6,
                                             'pmem100-128': 2}}}}
    if demand is not None:
        raw['demand'] = demand
    if economics is not None:
        raw['economics'] = economics
    return scenario.parse(yaml.safe_dump(raw), 'test scenario')


def small_benchmark():
    return fleet_optimize.make_scenario(workloads=4, configs=6, seed=3)


def brute_force_case():
    """(scenario, problem): 23 of a and 17 of b on mm-192-512 alone.

    Small enough for test_solver to enumerate every fleet of it.
    """
    scen = scenario_of(
        {'a': {'vcpus': 4, 'ram_gb': 48, 'used_gb': 40, 'hot_ratio': 0.25},
         'b': {'vcpus': 8, 'ram_gb': 20, 'used_gb': 18, 'hot_ratio': 1.0}},
        demand={'a': 23, 'b': 17})
    return scen, optimize.build(scen, configs=['mm-192-512'])
