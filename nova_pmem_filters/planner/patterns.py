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
"""What one node can hold of several workloads at once: patterns.

A *pattern* is a vector of VM counts, one per workload, that one node of a
configuration holds within every constraint of the node model
(:mod:`nova_pmem_filters.planner.model`): the flavor's modes, vCPUs, memory
(the memory cap after host reserve), the near memory of a tiered node (with the
same comparison PmemCacheFilter makes, each VM charging what the core's
:func:`~nova_pmem_filters.core.rules.charging.instance_mb` says on that node:
its hot RAM, or its whole RAM on a ``cxl_kmem`` node where Nova binds it or
the kernel does not tier) and the vPMEM namespaces that fit each socket's
App-Direct region. With one workload, the largest pattern is the
model's density, exactly (a test holds the two to that).

:func:`fits` checks a pattern exactly; :func:`best_pattern` finds the
pattern of largest value for given per-VM values (the pricing problem of
the optimiser), as a small integer program on HiGHS.
"""

import dataclasses
import math

import numpy as np
from scipy import optimize as sp_optimize


from nova_pmem_filters.core.rules import charging
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import nearmem
from nova_pmem_filters.planner import solverout
from nova_pmem_filters.planner import vmsizing


# The model's floors: n <= capacity / size + 1e-9.


@dataclasses.dataclass(frozen=True)
class Demand:
    """What one VM of a workload takes from a node.

    ``hot_mb`` is its hot RAM; what it charges a node's near memory
    depends on the node (:meth:`Capacity.near_mb`), from its RAM
    (``ram_mb``), its flavor's request and whether Nova binds its memory
    (``binds``).
    """

    name: str
    vcpus: float
    used_gb: float
    hot_mb: float
    vpmem_gb: float
    modes: frozenset
    ram_mb: float = 0.0
    binds: bool = False
    request: object = dataclasses.field(default=None, compare=False)

    @classmethod
    def of(cls, workload):
        request = workload.request
        return cls(name=workload.name, vcpus=float(workload.vcpus),
                   used_gb=float(workload.used_gb),
                   hot_mb=float(request.hot_mb(workload.ram_mb)),
                   vpmem_gb=float(workload.vpmem_gb or 0.0),
                   modes=frozenset(m for m in kinds.ALL_MODES
                                   if request.allows(m)),
                   ram_mb=float(workload.ram_mb),
                   binds=vmsizing.binds_memory(workload), request=request)


@dataclasses.dataclass(frozen=True)
class Capacity:
    """What one node of a configuration offers, as the model counts it."""

    name: str
    mode: str
    # None: not counted (a discovered node that reports no vCPUs).
    vcpus: float
    memory_gb: float
    # Tiered modes only: the near-memory MB PmemCacheFilter admits.
    cache_mb: float
    # App Direct: usable GB of each socket's region.
    regions: tuple
    # The scheduler's profile of the node: what a VM charges its near
    # memory (None: each VM's hot RAM).
    profile: object = None

    @classmethod
    def of(cls, node_, policies):
        mode = node_.config.mode
        vcpus = (None if node_.vcpus is None
                 else node_.vcpus * policies.cpu_overcommit)
        cache = (node_.profile.cache_capacity_mb(policies.cache_overcommit)
                 if mode in kinds.TIERED else None)
        return cls(name=node_.config.name, mode=mode, vcpus=vcpus,
                   memory_gb=vmsizing.vm_memory_gb(node_, policies),
                   cache_mb=cache,
                   regions=tuple(node_.region_gb), profile=node_.profile)

    def near_mb(self, demand):
        """Near-memory MB one VM of ``demand`` charges on this node.

        The core's :func:`~nova_pmem_filters.core.rules.charging.instance_mb`,
        as
        :func:`nova_pmem_filters.planner.vmsizing.charge_mb` counts it.
        """
        if self.profile is None or demand.request is None:
            return demand.hot_mb
        return float(charging.instance_mb(self.profile, demand.request,
                                          demand.ram_mb, demand.binds))


def allowed(capacity, demand):
    return capacity.mode in demand.modes


def _within(total, cap, sizes):
    # n_w x s_w summed within cap, with the model's tolerance: for a single
    # workload this is n <= cap / s + 1e-9 exactly.
    return total <= cap + vmsizing.EPS * max(sizes)


def _cache_fits(capacity_mb, hots):
    used = [(n, h) for n, h in hots if n]
    if not used:
        return True
    if len(used) == 1:
        n, h = used[0]
        # The comparison instances_in_cache makes for the n-th instance.
        return nearmem.fits_cache((n - 1) * h, h, capacity_mb)
    return nearmem.fits_cache(sum(n * h for n, h in used), 0.0, capacity_mb)


def _namespaces_fit(regions, wanted):
    """Whether namespaces of the given sizes fit the sockets' regions."""
    wanted = sorted(((s, n) for s, n in wanted if n), reverse=True)
    if not wanted:
        return True
    if not regions:
        return False

    def place(i, free):
        if i == len(wanted):
            return True
        size, count = wanted[i]
        return _spread(size, count, 0, list(free), i)

    def _spread(size, count, socket, free, i):
        if count == 0:
            return place(i + 1, free)
        if socket == len(free):
            return False
        most = min(count, int(math.floor(free[socket] / size + vmsizing.EPS)))
        for k in range(most, -1, -1):
            free[socket] -= k * size
            if _spread(size, count - k, socket + 1, free, i):
                return True
            free[socket] += k * size
        return False

    return place(0, regions)


def fits(capacity, demands, counts):
    """Whether one node of ``capacity`` holds ``counts`` of ``demands``."""
    pairs = [(d, int(n)) for d, n in zip(demands, counts) if n]
    if any(n < 0 for _d, n in pairs):
        return False
    if any(not allowed(capacity, d) for d, _n in pairs):
        return False
    if not pairs:
        return True
    if capacity.vcpus is not None and not _within(
            sum(n * d.vcpus for d, n in pairs), capacity.vcpus,
            [d.vcpus for d, _n in pairs]):
        return False
    if not _within(sum(n * d.used_gb for d, n in pairs), capacity.memory_gb,
                   [d.used_gb for d, _n in pairs]):
        return False
    if capacity.mode in kinds.TIERED and not _cache_fits(
            capacity.cache_mb, [(n, capacity.near_mb(d))
                                for d, n in pairs]):
        return False
    vpmem = [(d.vpmem_gb, n) for d, n in pairs if d.vpmem_gb]
    return _namespaces_fit(capacity.regions, vpmem)


def single_limit(capacity, demand):
    """The largest count of ``demand`` alone that one node holds."""
    if not allowed(capacity, demand):
        return 0
    # An upper bound from memory, then down to what fits.
    n = int(math.floor(capacity.memory_gb / demand.used_gb + vmsizing.EPS))
    if capacity.vcpus is not None:
        n = min(n, int(math.floor(capacity.vcpus / demand.vcpus
                                  + vmsizing.EPS)))
    near_mb = capacity.near_mb(demand)
    if capacity.mode in kinds.TIERED and near_mb > 0:
        n = min(n, nearmem.instances_in_cache(capacity.cache_mb, near_mb))
    if demand.vpmem_gb:
        n = min(n, sum(int(math.floor(r / demand.vpmem_gb + vmsizing.EPS))
                       for r in capacity.regions))
    counts = [0]
    while n > 0:
        counts[0] = n
        if fits(capacity, [demand], counts):
            return n
        n -= 1
    return 0


def node_rows(capacity, demands, use, limits):
    """One node's constraints as the rows of an integer program.

    Variables: the count a_i of each workload i in ``use``, then, for each
    vPMEM workload in ``use``, its count on each socket (the namespaces of
    a socket fit its region). Every capacity carries the model's tolerance,
    so the rows admit what :func:`fits` admits (a solver's own tolerance
    may still let a row slip by a hair: check what it returns with
    :func:`fits`). The pricing problem and the optimiser's integer stage
    both build a node from these rows.

    :returns: (rows, lbs, ubs, var_ubs): each row a list of (variable,
        coefficient); var_ubs the upper bound of each variable.
    """
    vpmem = [i for i in use if demands[i].vpmem_gb]
    sockets = len(capacity.regions)
    n_a = len(use)
    rows, lbs, ubs = [], [], []

    def add(coeffs, ub, lb=-np.inf):
        rows.append(coeffs)
        lbs.append(lb)
        ubs.append(ub)

    if capacity.vcpus is not None:
        add([(j, demands[i].vcpus) for j, i in enumerate(use)],
            capacity.vcpus + vmsizing.EPS * min(demands[i].vcpus for i in use))
    add([(j, demands[i].used_gb) for j, i in enumerate(use)],
        capacity.memory_gb
        + vmsizing.EPS * min(demands[i].used_gb for i in use))
    if capacity.mode in kinds.TIERED:
        hot = [(j, capacity.near_mb(demands[i])) for j, i in enumerate(use)
               if capacity.near_mb(demands[i])]
        if hot:
            add(hot, capacity.cache_mb)
    for v, i in enumerate(vpmem):
        j = use.index(i)
        base = n_a + v * sockets
        add([(j, 1.0)] + [(base + s, -1.0) for s in range(sockets)], 0.0,
            0.0)
    for s in range(sockets):
        if vpmem:
            add([(n_a + v * sockets + s, demands[i].vpmem_gb)
                 for v, i in enumerate(vpmem)], capacity.regions[s])
    var_ubs = np.array([limits[i] for i in use]
                       + [limits[i] for i in vpmem for _s in range(sockets)],
                       dtype=float)
    return rows, lbs, ubs, var_ubs


def _dense(coeffs, width):
    row = np.zeros(width)
    for j, v in coeffs:
        row[j] += v
    return row


def best_pattern(capacity, demands, values, limits=None, gap=0.0,
                 time_limit=None):
    """The pattern of largest total value that one node holds.

    :param values: value of one VM of each demand (the duals of the
        optimiser); workloads of value 0 or less are left out.
    :param limits: per-demand upper bounds (default: :func:`single_limit`).
    :param gap, time_limit: let the solver stop early; the third value
        returned then bounds what it did not prove.
    :returns: (value, counts, bound): counts a tuple of ints and bound an
        upper bound on the best value (equal to value when proven);
        (0.0, zeros, 0.0) if no VM of positive value fits.
    """
    k = len(demands)
    limits = list(limits if limits is not None
                  else [single_limit(capacity, d) for d in demands])
    use = [i for i in range(k) if values[i] > 0 and limits[i] > 0]
    zero = tuple(0 for _ in range(k))
    if not use:
        return 0.0, zero, 0.0
    rows, lbs, ubs, bounds_ub = node_rows(capacity, demands, use, limits)
    n_a = len(use)
    c = np.zeros(len(bounds_ub))
    c[:n_a] = [-values[i] for i in use]
    rows = [_dense(row, len(bounds_ub)) for row in rows]
    constraints = (sp_optimize.LinearConstraint(np.array(rows), lbs, ubs)
                   if rows else ())
    tighten = 0.0
    first_bound = None
    for _attempt in range(4):
        if tighten and rows:
            constraints = sp_optimize.LinearConstraint(
                np.array(rows), lbs, [u - tighten * max(abs(u), 1.0)
                                      if np.isfinite(u) and u != 0.0
                                      else u for u in ubs])
        options = {'mip_rel_gap': gap}
        if time_limit is not None:
            options['time_limit'] = time_limit
        with solverout.to_stderr():
            res = sp_optimize.milp(
                c, integrality=np.ones(len(bounds_ub)),
                bounds=sp_optimize.Bounds(np.zeros(len(bounds_ub)),
                                          bounds_ub),
                constraints=constraints, options=options)
        # Minimising -value: the dual bound is minus an upper bound.
        bound = (-res.mip_dual_bound
                 if getattr(res, 'mip_dual_bound', None) is not None
                 and np.isfinite(res.mip_dual_bound) else
                 sum(values[i] * limits[i] for i in use))
        # Only the untightened problem's bound holds for the node.
        if first_bound is None:
            first_bound = bound
        bound = first_bound
        if res.x is None:
            return 0.0, zero, bound
        counts = list(zero)
        for j, i in enumerate(use):
            counts[i] = int(round(res.x[j]))
        if fits(capacity, demands, counts):
            value = sum(values[i] * counts[i] for i in range(k))
            return value, tuple(counts), max(bound, value)
        # The solver's tolerance let a constraint slip by a hair: tighten.
        tighten = tighten * 10 if tighten else 1e-9
    return 0.0, zero, sum(values[i] * limits[i] for i in use)


def greedy_pattern(capacity, demands, values, limits):
    """A good pattern fast: fill by value per unit of the scarcest resource.

    Several orders are tried (value per share of the tightest resource, per
    GB of memory, per vCPU); each fills a node one workload at a time with
    as many VMs as still fit. Returns (value, counts) of the best, which
    :func:`fits` holds; it need not be optimal (:func:`best_pattern` is).
    """
    k = len(demands)
    use = [i for i in range(k) if values[i] > 0 and limits[i] > 0]
    zero = tuple(0 for _ in range(k))
    if not use:
        return 0.0, zero
    cap = capacity

    def share(i):
        d = demands[i]
        parts = [d.used_gb / max(cap.memory_gb, 1e-12)]
        if cap.vcpus:
            parts.append(d.vcpus / cap.vcpus)
        if cap.cache_mb:
            parts.append(cap.near_mb(d) / cap.cache_mb)
        if d.vpmem_gb and sum(cap.regions):
            parts.append(d.vpmem_gb / sum(cap.regions))
        return max(parts)

    orders = [
        sorted(use, key=lambda i: -values[i] / max(share(i), 1e-12)),
        sorted(use, key=lambda i: -values[i] / demands[i].used_gb),
        sorted(use, key=lambda i: -values[i]),
    ]
    if cap.vcpus:
        orders.append(sorted(use, key=lambda i: -values[i]
                             / demands[i].vcpus))
    best = (0.0, zero)
    for order in orders:
        counts = list(zero)
        for i in order:
            lo, hi = 0, limits[i]
            # The largest count of i that still fits beside the others.
            while lo < hi:
                mid = (lo + hi + 1) // 2
                counts[i] = mid
                if fits(capacity, demands, counts):
                    lo = mid
                else:
                    hi = mid - 1
            counts[i] = lo
        value = sum(values[i] * counts[i] for i in range(k))
        if value > best[0]:
            best = (value, tuple(counts))
    return best


class TooMany(Exception):
    """More maximal patterns, or more work to list them, than allowed."""


def maximal(capacity, demands, limits, use, budget):
    """Every maximal pattern of the workloads ``use`` on one node.

    A pattern is maximal when no count in it can grow by one and still
    fit. The node model is monotone (a pattern below one that fits fits
    too), so any pattern lies below a maximal one: a fleet loses nothing
    by running maximal patterns only (a slot need not be used).

    :param limits: the largest count of each demand alone
        (:func:`single_limit`).
    :param budget: a :class:`Budget`, shared by the configurations of one
        listing.
    :returns: a list of count tuples (workloads outside ``use`` at 0).
    :raises TooMany: when the budget runs out.
    """
    use = [i for i in use if limits[i] > 0]
    counts = [0] * len(demands)
    found = []

    def fit():
        budget.spend(1)
        return fits(capacity, demands, counts)

    def most(i):
        # The largest count of i beside the others (monotone: bisect).
        lo, hi = 0, limits[i]
        while lo < hi:
            counts[i] = (lo + hi + 1) // 2
            if fit():
                lo = counts[i]
            else:
                hi = counts[i] - 1
        counts[i] = 0
        return lo

    def grows(i):
        counts[i] += 1
        bigger = counts[i] <= limits[i] and fit()
        counts[i] -= 1
        return bigger

    def walk(pos):
        i = use[pos]
        top = most(i)
        if pos == len(use) - 1:
            counts[i] = top
            if any(counts) and not any(grows(j) for j in use[:-1]):
                found.append(tuple(counts))
                budget.spend(0, 1)
            counts[i] = 0
            return
        for n in range(top, -1, -1):
            counts[i] = n
            walk(pos + 1)
        counts[i] = 0

    if use:
        walk(0)
    return found


class Budget(object):
    """How many fit checks and patterns a listing may still take."""

    def __init__(self, checks, patterns):
        self.checks = checks
        self.patterns = patterns

    def spend(self, checks, patterns=0):
        self.checks -= checks
        self.patterns -= patterns
        if self.checks < 0 or self.patterns < 0:
            raise TooMany()
