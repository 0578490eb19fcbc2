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
"""The optimiser's plan: a fleet, its objective and its proven gap."""

import dataclasses
import time

import numpy as np

from nova_pmem_filters.planner.optimize import master as master_mod


# The name of the fleet of solve(): optimal only when its status is.
OPTIMAL = 'optimal'


BEST_FOUND = 'best-found'


# A gap this small is 0: the answer is proven optimal.
ZERO_GAP = 1e-6


@dataclasses.dataclass(frozen=True)
class Plan:
    """One fleet: nodes and VMs per configuration and period."""

    name: str
    # {(config, period): nodes}
    nodes: dict
    # {(config, period): {workload: VMs}}
    vms: dict
    # {(config, period): {workload: slots}} of the patterns the nodes run.
    patterns: dict
    # {(config, period): [({workload: VMs}, nodes running that pattern)]}
    runs: dict
    capex: dict
    energy: dict
    objective: float
    lp_bound: float
    gap: float
    status: str
    seconds: float
    rounds: int
    columns: int
    # The time limit cut a stage of the search short (:mod:`clock`): the
    # same inputs may give another answer on another machine.
    time_limited: bool = False


class Solution(object):
    """A fleet: the master's vector in the layout it was found in."""

    def __init__(self, x, fun, layout, message='found from the LP'):
        self.x = x
        self.fun = fun
        self.layout = layout
        self.message = message

    def vector(self, master):
        """The vector in the master's current layout (more columns)."""
        current = master.layout()
        if tuple(self.layout) == tuple(current):
            return self.x
        return master_mod.expand(self.x, self.layout, current)

    def configs(self, master):
        """Indexes of the configurations the fleet has nodes of."""
        return {ci for ci in range(master.nc) for t in range(master.nt)
                if self.x[master._n(ci, t)] > 0.5}


def of_runs(problem, master, whole, runs, message):
    """The :class:`Solution` of a fleet of whole patterns, or None.

    ``whole``: nodes per (configuration, period), an array; ``runs``:
    [(ci, t, pattern, nodes)], patterns the master lacks joining it. Each
    workload's VMs of a period go to its slots there, in order. None where
    the fleet breaks a row of the master (a cap, held; demand unserved).
    """
    for ci, t, pattern, _n in runs:
        master.add(ci, t, pattern)
    cost, a_ub, b_ub, layout = master._build()
    x0, s0, _k0, nvar = layout
    vec = np.zeros(nvar)
    for ci in range(master.nc):
        for t in range(master.nt):
            vec[master._n(ci, t)] = whole[ci, t]
    index = {key: j for j, key in enumerate(master.columns)}
    slots = {}
    for ci, t, pattern, n in runs:
        vec[x0 + index[ci, t, tuple(pattern)]] += n
        for w, a in enumerate(pattern):
            slots[w, ci, t] = slots.get((w, ci, t), 0) + a * n
    left = {(w, t): float(period.vms.get(name, 0))
            for t, period in enumerate(problem.periods)
            for w, name in enumerate(problem.workloads)}
    for j, (w, ci, t) in enumerate(master.serve):
        vec[s0 + j] = min(slots.get((w, ci, t), 0), left[w, t])
        left[w, t] -= vec[s0 + j]
    if master_mod.over(a_ub, vec, b_ub):
        return None
    return Solution(vec, float(cost @ vec), layout, message)


def rebased(problem, solution, source, master):
    """``solution``, a fleet of ``source``'s, as one of ``master``'s.

    ``source``: a copy of ``master`` (``Master.copy``) that grew apart
    from it; the same nodes and patterns, the patterns ``master`` lacks
    joining it. None where ``solution`` is None.
    """
    if solution is None:
        return None
    x0, s0, _k0, _nvar = solution.layout
    whole = np.array([[solution.x[source._n(ci, t)]
                       for t in range(source.nt)]
                      for ci in range(source.nc)])
    runs = []
    for j, (ci, t, pattern) in enumerate(source.columns[:s0 - x0]):
        n = int(round(solution.x[x0 + j]))
        if n:
            runs.append((ci, t, pattern, n))
    return of_runs(problem, master, whole, runs, solution.message)


def is_proven(best, bound, gap):
    """Whether ``best`` is proven within ``gap`` (or 0) of ``bound``."""
    return best is not None and within(proven_gap(best.fun, bound), gap)


def build(problem, master, vec, layout, lp_bound, converged, started,
          rounds, asked):
    """The plan of ``vec``; optimal when proven within ``asked`` (--gap)."""
    x0, s0, _k0, _nvar = layout
    nodes, vms, slots, capex, energy, runs = {}, {}, {}, {}, {}, {}
    last = len(problem.periods) - 1
    for ci, cand in enumerate(problem.candidates):
        for t, period in enumerate(problem.periods):
            n = int(round(vec[master._n(ci, t)]))
            key = (cand.name, period.name)
            nodes[key] = n
            vms[key] = {w: 0 for w in problem.workloads}
            slots[key] = {w: 0 for w in problem.workloads}
            runs[key] = []
            energy[key] = n * problem.energy(cand, period)
            capex[key] = (n * cand.capex if t == last else 0.0)
    for j, (ci, t, counts) in enumerate(master.columns):
        count = int(round(vec[x0 + j]))
        if count:
            key = (problem.candidates[ci].name, problem.periods[t].name)
            runs[key].append((dict(zip(problem.workloads, counts)), count))
            for w, a in enumerate(counts):
                slots[key][problem.workloads[w]] += a * count
    for j, (w, ci, t) in enumerate(master.serve):
        key = (problem.candidates[ci].name, problem.periods[t].name)
        vms[key][problem.workloads[w]] += vec[s0 + j]
    for key in vms:
        # Served VMs are whole; the solver may leave a hair.
        vms[key] = {w: int(round(v)) for w, v in vms[key].items()}
    value = _objective_value(problem, vms, capex, energy)
    # The LP minimised the TCO, or minus what is served.
    bound = lp_bound if problem.objective == 'tco' else -lp_bound
    gap = proven_gap(value, bound) if converged else None
    status = 'optimal' if within(gap, asked) else 'feasible'
    return Plan(name=OPTIMAL if status == 'optimal' else BEST_FOUND,
                nodes=nodes, vms=vms, patterns=slots, runs=runs,
                capex=capex, energy=energy, objective=value,
                lp_bound=bound, gap=gap, status=status,
                seconds=time.monotonic() - started, rounds=rounds,
                columns=len(master.columns))


def within(gap, asked):
    """Whether a proven gap (None: none) is within the gap asked for.

    The search stops once within ``asked``; rounding may leave a hair over.
    A gap of at most :data:`ZERO_GAP` is 0 whatever was asked.
    """
    return gap is not None and gap <= max(asked * (1 + 1e-6) + 1e-12,
                                          ZERO_GAP)


def proven_gap(value, bound):
    """(answer - bound) / answer, in absolute values; None if unknown.

    An answer of 0 is proven only by a bound of 0 (gap 0); against any
    other bound its relative gap has no finite value (None).
    """
    if abs(value) > 1e-9:
        return abs(value - bound) / abs(value)
    return 0.0 if abs(bound) <= 1e-9 else None


def _objective_value(problem, vms, capex, energy):
    if problem.objective == 'tco':
        return sum(capex.values()) + sum(energy.values())
    total = 0.0
    for cand in problem.candidates:
        for period in problem.periods:
            for w, name in enumerate(problem.workloads):
                weight = (cand.throughput[w]
                          if problem.objective == 'throughput' else 1.0)
                total += weight * vms[cand.name, period.name][name]
    return total


def utilisation(problem, plan, config, period):
    """Used share of each node resource of one configuration's nodes."""
    cand = next(c for c in problem.candidates if c.name == config)
    n = plan.nodes.get((config, period), 0)
    counts = [plan.vms[config, period][w] for w in problem.workloads]
    cap = cand.capacity
    ds = problem.demands

    def share(size, total):
        if not n or not total:
            return None
        return sum(c * size(d) for c, d in zip(counts, ds)) / (n * total)

    return {
        'vcpu': share(lambda d: d.vcpus, cap.vcpus),
        'memory': share(lambda d: d.used_gb, cap.memory_gb),
        'dram_cache': share(cap.near_mb, cap.cache_mb),
        'namespaces': share(lambda d: d.vpmem_gb, sum(cap.regions)),
    }
