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
"""Every pattern, when they are few: the integer program is then exact.

A fleet loses nothing by running only *maximal* patterns (no count can
grow by one and still fit, :func:`nova_pmem_filters.planner.patterns.maximal`):
a pattern below one that fits serves no more, and a slot need not be used. With
a few workloads the maximal patterns of every configuration number in the
hundreds; then they are all listed, and the integer program over them
(the master problem with every pattern, the caps held) *is* the problem:
HiGHS's answer is the optimum and its dual bound a bound of the problem
itself, not of a restriction to the patterns column generation found.
The listing stops as soon as it would take more than its budget, and the
optimiser generates columns instead.
"""

import dataclasses

import numpy as np

from nova_pmem_filters.planner.optimize import pricing
from nova_pmem_filters.planner import patterns


# The listing of maximal patterns gives up past this many patterns, or
# this many fit checks (a tenth of a second or so), over all
# configurations.
MAX_PATTERNS = 20000
MAX_CHECKS = 50000


def listing(problem, checks=None, most=None):
    """{candidate index: maximal patterns}, or None when they are too many.

    Only workloads with demand in some period are counted (a pattern
    needs no slot for a workload nobody asks for); configurations of one
    shape (:func:`pricing.shape`) are listed once.
    """
    use = [w for w, name in enumerate(problem.workloads)
           if any(p.vms.get(name, 0) for p in problem.periods)]
    budget = patterns.Budget(MAX_CHECKS if checks is None else checks,
                             MAX_PATTERNS if most is None else most)
    known = {}
    out = {}
    try:
        for ci, cand in enumerate(problem.candidates):
            key = pricing.shape(cand)
            if key not in known:
                known[key] = patterns.maximal(
                    cand.capacity, problem.demands, cand.limits, use,
                    budget)
            out[ci] = known[key]
    except patterns.TooMany:
        return None
    return out


@dataclasses.dataclass
class Outcome:
    """The integer program's answer over every pattern.

    ``vector``: the fleet in the master's layout (None: none found);
    ``value``: its objective; ``bound``: HiGHS's dual bound, a bound of
    the whole problem; ``infeasible``: proven that no fleet exists.
    """

    vector: object = None
    value: float = None
    bound: float = None
    infeasible: bool = False


def add_all(problem, master, pool):
    """Every listed pattern joins the master problem, in every period."""
    for ci, found in pool.items():
        for t in range(len(problem.periods)):
            for counts in found:
                master.add(ci, t, counts)


def solve(master, time_limit, gap):
    """The integer program over the master's patterns, caps held.

    Exact when the master holds every maximal pattern (:func:`add_all`).
    """
    res, layout = master.solve_mip(
        max(time_limit, 0.5), gap, hold_caps=True,
        what='the integer program over every pattern')
    s0 = layout[1]
    cost = master._build()[0]
    out = Outcome()
    if res.status == 2:
        out.infeasible = True
        return out
    dual = getattr(res, 'mip_dual_bound', None)
    if dual is not None and np.isfinite(dual):
        out.bound = float(dual)
    if res.x is not None:
        out.vector = np.round(np.array(res.x))
        out.vector[s0:] = np.array(res.x)[s0:]
        out.value = float(cost @ out.vector)
        if out.bound is not None:
            out.bound = min(out.bound, out.value)
    return out
