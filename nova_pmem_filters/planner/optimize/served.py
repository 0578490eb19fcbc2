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
"""A fleet for the most VMs served: whole node counts, then whole patterns.

With ``vms`` and ``throughput`` the integer program over the patterns of
every period stops well short of the bound on large problems (20
workloads x 100 configurations, 3 periods: 0.5% under it). Here:

1. the master problem with whole node counts and everything else
   fractional (the patterns known so far; the caps held) picks the nodes
   of each configuration in each period and the VMs they serve;
2. each period alone: the VMs served there, rounded down, are packed onto
   exactly those nodes in whole patterns (:func:`budgets.fleet_of`; the
   patterns of any period, which are the same in every period); where
   they do not pack, one VM fewer of the workload with the most, and
   again.

A heuristic: the fleet is checked against every row of the master problem,
so what it serves is proven against the bound; finding none proves
nothing, and the integer program over the patterns follows.
"""

import dataclasses
import time

import numpy as np

from nova_pmem_filters.planner.optimize import budgets
from nova_pmem_filters.planner.optimize import clock
from nova_pmem_filters.planner.optimize import fleetplan
from nova_pmem_filters.planner.optimize import tranches


# VMs a period may give up, one at a time, before it is given up.
MAX_DROPS = 60
# Share of the time given that the node counts may take.
_COUNTS_SHARE = 0.5


def applies(problem):
    """The objectives that count the VMs served."""
    return problem.objective in ('vms', 'throughput')


def fleet(problem, master, deadline):
    """A fleet serving as much as whole node counts allow, or None.

    Returns a :class:`fleetplan.Solution` in the master's layout (its
    value: minus what is served, the master's sense).
    """
    left = deadline - time.monotonic()
    if left <= 0:
        clock.cut('the fleet of whole node counts')
        return None
    counts, want = _node_counts(master, _COUNTS_SHARE * left)
    if counts is None:
        return None
    runs = []
    for t in range(master.nt):
        found = _packed(problem, master, t, counts[:, t], want[t], deadline)
        if found is None:
            return None
        runs.extend(found)
    return fleetplan.of_runs(problem, master, counts, runs,
                             'whole patterns on whole node counts')


def _node_counts(master, time_limit):
    """(node counts per (ci, t), VMs served per (t, w)) or (None, None).

    The master problem with the node counts whole, the caps held.
    """
    res, (x0, s0, _k0, _nvar) = master.solve_mip(
        max(time_limit, 0.5), 1e-6, hold_caps=True,
        what='the whole node counts', nodes_only=True)
    if res.x is None:
        return None, None
    counts = np.round(res.x[:x0]).reshape(master.nc, master.nt)
    want = np.zeros((master.nt, master.nw))
    for j, (w, _ci, t) in enumerate(master.serve):
        want[t, w] += res.x[s0 + j]
    return counts, np.floor(want + 1e-6).astype(int)


def _packed(problem, master, t, nodes, want, deadline):
    """[(ci, t, pattern, nodes)]: ``want`` in whole patterns on ``nodes``.

    One VM fewer of the workload with the most, while they do not pack.
    """
    chosen = [ci for ci in range(master.nc) if nodes[ci] > 0]
    budget = {k: int(nodes[ci]) for k, ci in enumerate(chosen)}
    want = np.array(want)
    period = problem.periods[t]
    for _drop in range(MAX_DROPS + 1):
        if not want.any():
            return []
        if not budget:
            return None
        if time.monotonic() >= deadline:
            clock.cut('the fleet of whole node counts')
            return None
        alone = dataclasses.replace(problem, periods=(dataclasses.replace(
            period, vms=dict(zip(problem.workloads,
                                 (int(v) for v in want)))),))
        alone, sub = tranches.period_alone(alone, master, 0, chosen)
        found = budgets.fleet_of(alone, sub, budget, deadline)
        if found is not None:
            return [(chosen[k], t, pattern, n)
                    for (k, pattern), n in found[0].items()]
        want[int(np.argmax(want))] -= 1
    return None
