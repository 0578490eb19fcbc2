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
"""The optimiser's problem: candidate configurations, demand periods and caps.
"""

import dataclasses

from nova_pmem_filters.core.formats import scenario_sections as sec
from nova_pmem_filters.planner import errors
from nova_pmem_filters.planner import memperf
from nova_pmem_filters.planner import model
from nova_pmem_filters.planner import patterns
from nova_pmem_filters.planner import vmsizing


OBJECTIVES = ('tco', 'vms', 'throughput')
DEFAULT_OBJECTIVE = 'tco'
HOURS_PER_YEAR = 8760.0


@dataclasses.dataclass(frozen=True)
class Candidate:
    """A configuration as the optimiser sees it."""

    name: str
    mode: str
    capacity: patterns.Capacity
    capex: float
    watts: float
    rack_units: float
    # Single-workload limits, in workload order.
    limits: tuple
    # Per-VM throughput of each workload on a node of this configuration.
    throughput: tuple


@dataclasses.dataclass(frozen=True)
class Problem:
    objective: str
    workloads: tuple
    demands: tuple
    candidates: tuple
    periods: tuple
    pue: float
    price_per_kwh: float
    budget: float = None
    power_kw: float = None
    rack_units: float = None

    def energy(self, cand, period):
        """Cost of the energy one node draws over a period."""
        return (cand.watts / 1000.0 * self.pue * HOURS_PER_YEAR
                * period.years * self.price_per_kwh)

    def node_cost(self, cand, period=None):
        """Capex of one node plus its energy over a period (the first)."""
        return cand.capex + self.energy(
            cand, self.periods[0] if period is None else period)

    def kw(self, cand):
        """Facility power of one node, PUE included."""
        return cand.watts / 1000.0 * self.pue

    def restricted(self, names):
        return dataclasses.replace(self, candidates=tuple(
            c for c in self.candidates if c.name in names))


def build(scen, objective=DEFAULT_OBJECTIVE, demand=None, periods=None,
          budget=None, power_kw=None, rack_units=None, configs=None):
    """The optimisation problem of a scenario.

    :param demand: {workload: VMs} replacing the scenario's demand (one
        period over the scenario's years).
    :param budget, power_kw, rack_units: caps replacing the scenario's.
    :param configs: names of the candidate configurations (default all).
    """
    if objective not in OBJECTIVES:
        raise errors.PlannerError('unknown objective %r (known: %s)'
                                  % (objective, ', '.join(OBJECTIVES)))
    econ = scen.economics
    policies, performance = scen.policies, scen.performance
    if periods is None:
        periods = scen.demand
    if demand is not None:
        periods = (_period('all', econ.years, demand, scen),)
    if not periods:
        raise errors.PlannerError(
            'scenario %s gives no demand: add a demand section or give '
            '--demand WORKLOAD=VMS' % scen.name)
    names = list(configs or scen.configs)
    for name in names:
        if name not in scen.configs:
            raise errors.PlannerError('unknown configuration %r (known: %s)'
                                      % (name, ', '.join(scen.configs)))
    workloads = tuple(scen.workloads.values())
    numa = _numa_bound(workloads, periods)
    demands = tuple(patterns.Demand.of(w) for w in workloads)
    cal = model.calibrate(scen)
    candidates = []
    for name in names:
        config = scen.configs[name]
        node = model.node(config, policies)
        cap = patterns.Capacity.of(node, policies)
        # A NUMA-bound workload (no demand, or build refused it) is in no
        # pattern.
        limits = tuple(0 if w.name in numa else patterns.single_limit(cap, d)
                       for w, d in zip(workloads, demands))
        tput = []
        for w, limit in zip(workloads, limits):
            t_hit = cal[w.name].t_hit if w.name in cal else None
            # The cache holds the hot set while it is not overcommitted.
            tput.append(memperf.per_vm_throughput(
                node, w, min(limit, 1), policies, performance, t_hit=t_hit)
                if limit else 0.0)
        candidates.append(Candidate(
            name=name, mode=config.mode, capacity=cap, capex=node.cost,
            watts=node.watts, rack_units=float(config.platform.rack_units),
            limits=limits, throughput=tuple(tput)))
    return Problem(
        objective=objective, workloads=tuple(w.name for w in workloads),
        demands=demands, candidates=tuple(candidates),
        periods=tuple(periods), pue=econ.pue,
        price_per_kwh=econ.power_price_per_kwh,
        budget=econ.budget if budget is None else budget,
        power_kw=econ.power_kw if power_kw is None else power_kw,
        rack_units=econ.rack_units if rack_units is None else rack_units)


def _numa_bound(workloads, periods):
    """Names of the NUMA-bound workloads, which must have no demand.

    Patterns count a node's resources host-wide; the per-socket
    constraints of ``numa_nodes``
    (:func:`nova_pmem_filters.planner.vmsizing.socket_limits`) are not in the
    pricing problem, so such a workload is refused rather than placed on nodes
    whose sockets cannot hold it.
    """
    names = set()
    for w in workloads:
        if not w.numa_nodes:
            continue
        if any(p.vms.get(w.name, 0) for p in periods):
            raise errors.PlannerError(
                'workload %s has numa_nodes: %d: optimize counts node '
                'capacity host-wide, not per socket, so it cannot plan '
                'NUMA-bound VMs; give the workload no demand (or use '
                'compare, whose densities count per socket)'
                % (w.name, w.numa_nodes))
        names.add(w.name)
    return names


def _period(name, years, vms, scen):
    for w in vms:
        if w not in scen.workloads:
            raise errors.PlannerError('unknown workload %r (known: %s)'
                                      % (w, ', '.join(scen.workloads)))
    return sec.Period(name=name, years=float(years),
                      vms={w: int(vms.get(w, 0)) for w in scen.workloads})


def check_carriable(problem, scen):
    """Raise Infeasible for a workload with demand no candidate can hold."""
    for w, name in enumerate(problem.workloads):
        wanted = max(p.vms.get(name, 0) for p in problem.periods)
        if not wanted or any(c.limits[w] for c in problem.candidates):
            continue
        reasons = []
        for cand in problem.candidates:
            node = model.node(scen.configs[cand.name], scen.policies)
            _vms, binding = vmsizing.density(node, scen.workloads[name],
                                             scen.policies)
            reasons.append('%s: %s' % (cand.name, binding))
        raise errors.Infeasible(
            'the demand of %d %s VMs cannot be met: no candidate '
            'configuration holds one of them (binding constraint per '
            'configuration: %s)' % (wanted, name, '; '.join(reasons)))
