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
"""The scheduling simulator: what Nova really packs, event by event.

A trace of VM boots and deletes is replayed on a fleet. Each boot is placed
as Nova places it, with ``host_subset_size = 1``:

1. Placement's allocation candidates: every host whose inventories hold the
   flavor (``VCPU``, ``MEMORY_MB`` and, when the flavor requests it,
   ``CUSTOM_NEAR_MEMORY_MB``): ``used + amount <= (total - reserved) x
   allocation_ratio`` and ``amount <= max_unit``;
2. the filters PmemModeFilter and PmemCacheFilter, through the rules of
   :mod:`nova_pmem_filters.core.rules.decide` (the functions the filters
   themselves call), with the flavor defaults of ``[pmem]``
   (:class:`nova_pmem_filters.core.rules.extra_specs.Defaults`);
3. the weighers in Nova's order and arithmetic: RAMWeigher (free RAM),
   CPUWeigher (free vCPUs), PmemTierWeigher and PmemCacheHeadroomWeigher,
   each normalised as ``nova.weights.normalize`` does and multiplied by its
   multiplier; the first host of the highest weight wins.

The state of the fleet is a set of arrays, one entry per host; a
placement costs a few vector operations over the groups of alike hosts
(same kind, same usage), whatever the fleet's size.

Hosts have no NUMA cells here: :func:`run` refuses workloads with
``numa_nodes`` (``hw:numa_nodes`` flavors) rather than replay them
host-wide.

This package imports nothing from Nova.

One module per idea: ``engine`` (the fleet's state and the placement of a
boot), ``traces`` (synthetic and CSV traces), ``summary`` (rows per host
kind, with the model's density), ``charts`` (the timeline as PNG) and
``runner`` (a simulation of a scenario).
"""

from nova_pmem_filters.planner.simulate import charts
from nova_pmem_filters.planner.simulate import engine
from nova_pmem_filters.planner.simulate import runner
from nova_pmem_filters.planner.simulate import summary
from nova_pmem_filters.planner.simulate import traces


# The names callers use, from the module that holds each.
BOOT = engine.BOOT
DELETE = engine.DELETE
EVENTS = engine.EVENTS
NO_RESOURCES = engine.NO_RESOURCES
REASONS = engine.REASONS
SECONDS_PER_DAY = engine.SECONDS_PER_DAY
MAX_SAMPLES = engine.MAX_SAMPLES
WEIGHERS = engine.WEIGHERS
Scheduler = engine.Scheduler
HostKind = engine.HostKind
Flavor = engine.Flavor
Event = engine.Event
Fleet = engine.Fleet
Result = engine.Result
replay = engine.replay
synthetic = traces.synthetic
MAX_EVENTS = traces.MAX_EVENTS
expected_events = traces.expected_events
check_synthetic = traces.check_synthetic
CSV_FIELDS = traces.CSV_FIELDS
read_csv = traces.read_csv
write_csv = traces.write_csv
SUMMARY_COLUMNS = summary.SUMMARY_COLUMNS
SHORT_COLUMNS = summary.SHORT_COLUMNS
model_density = summary.model_density
plot_png = charts.plot_png
chart_png = charts.chart_png
flavors_of = runner.flavors_of
kinds_of_configs = runner.kinds_of_configs
kinds_of_profiles = runner.kinds_of_profiles
Run = runner.Run
check_no_numa = runner.check_no_numa
planned_fleet = runner.planned_fleet
run = runner.run
