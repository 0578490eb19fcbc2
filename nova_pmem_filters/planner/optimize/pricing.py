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
"""Pricing: the node patterns worth adding; the bound that none is left."""

import dataclasses
import time

import numpy as np

from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.planner.optimize import clock
from nova_pmem_filters.planner import patterns


# Reduced costs below this, relative to the node's price, do not count.
RC_TOL = 1e-7


def _fractional(values, sizes, limits, capacity):
    """Dantzig's bound: the knapsack with fractions of the last item."""
    total = 0.0
    room = capacity
    free = 0.0
    order = []
    for v, size, lim in zip(values, sizes, limits):
        if size <= 0:
            free += v * lim
        else:
            order.append((v / size, v, size, lim))
    order.sort(key=lambda item: -item[0])
    for _ratio, v, size, lim in order:
        if room <= 0:
            break
        take = min(lim, room / size)
        total += v * take
        room -= take * size
    return total + free


def pricing_bound(cand, demand_list, values):
    """An upper bound on the best pattern's value, without a solver.

    The least of Dantzig's bound for each resource alone and for their
    surrogate (every resource as a share of the node, summed): each relaxes
    the node's constraints, so none is below the best pattern's value.
    """
    use = [(d, v, lim) for d, v, lim in zip(demand_list, values,
                                            cand.limits) if v > 0 and lim]
    if not use:
        return 0.0
    cap = cand.capacity
    vals = [v for _d, v, _l in use]
    lims = [lim for _d, _v, lim in use]
    resources = [([d.used_gb for d, _v, _l in use], cap.memory_gb)]
    if cap.vcpus is not None:
        resources.append(([d.vcpus for d, _v, _l in use], cap.vcpus))
    if cap.mode in kinds.TIERED:
        resources.append(([cap.near_mb(d) for d, _v, _l in use],
                          cap.cache_mb))
    if any(d.vpmem_gb for d, _v, _l in use):
        resources.append(([d.vpmem_gb for d, _v, _l in use],
                          sum(cap.regions)))
    bounds = [sum(v * lim for v, lim in zip(vals, lims))]
    surrogate = [0.0] * len(use)
    for sizes, total in resources:
        if total <= 0:
            continue
        bounds.append(_fractional(vals, sizes, lims, total))
        for i, size in enumerate(sizes):
            surrogate[i] += size / total
    bounds.append(_fractional(vals, surrogate, lims, len(resources)))
    return min(bounds) * (1 + 1e-9) + 1e-9


# The pricing integer programs may stop this close to their optimum; their
# dual bound, not their answer, goes into the bound, which it lowers by as
# much: a tenth of the gap asked of the fleet, within these limits
# (master.pricing_gap).
LOOSEST_PRICING_GAP = 1e-3
TIGHTEST_PRICING_GAP = 1e-6


def pricing_gap(gap):
    """How close to their optimum the pricing programs must get."""
    return min(LOOSEST_PRICING_GAP, max(gap / 10.0, TIGHTEST_PRICING_GAP))


def bound_gap(master):
    """How close the last round's pricing programs get (every one priced).

    Ten times the master's pricing gap, within :data:`LOOSEST_PRICING_GAP`:
    the dual bound of a pricing program is far closer to its optimum than
    the gap it stops at. On the benchmark of 20 workloads, 100
    configurations and 3 periods, the last round took 3.1 s instead of
    10.8 s, and its Lagrangian bound moved by 0.0015%; the bound of whole
    node counts, which follows, gains that time.
    """
    return min(LOOSEST_PRICING_GAP, 10.0 * master.pricing_gap)


def node_limits(problem, master, incumbent, hard_caps=False):
    """K[c,t]: the most nodes of c in period t of some optimal fleet.

    A fleet needs no node that serves nothing when it is bought, so it has
    at most a node per VM of the periods so far; with TCO, no more nodes
    than a fleet at hand (``incumbent``) pays for; under a cap, no more
    than the cap holds (:func:`node_rows`). ``hard_caps``: count the caps
    even where the master problem lets them grow (the integer stage holds
    them).
    """
    limits = {}
    most = 0.0
    for t, period in enumerate(problem.periods):
        most = max(most, float(sum(period.vms.values())))
        rows = node_rows(problem, master, t, incumbent, hard_caps)
        for ci in range(len(problem.candidates)):
            k = most
            for weights, room in rows:
                if weights[ci] > 0:
                    k = min(k, room / weights[ci])
            limits[ci, t] = k
    return limits


def node_rows(problem, master, t, incumbent, hard_caps=False):
    """[(what a node of each configuration takes, the room)] in period t.

    Rows that every node count N[.,t] of some optimal fleet meets:
    sum_c weights[c] N[c,t] <= room. A node bought for period t stays: it
    costs its capex and its energy from t on, and the optimum costs no
    more than the fleet at hand (TCO); the capex budget and the rack
    units count every node of the last period, the power cap of a period
    from t on those of t (nodes of t stay on in the later ones).
    """
    rows = []
    if incumbent is not None and (problem.objective == 'tco'
                                  or master.keep_served is not None):
        rows.append(([c.capex + sum(problem.energy(c, p)
                                    for p in problem.periods[t:])
                      for c in problem.candidates], incumbent))
    if hard_caps or not master.elastic:
        for kind, tt, value in master.caps:
            # A cap that counts the nodes of period t or a later one
            # holds N[.,t]: node counts never fall.
            if master.cap_period(kind, tt) >= t:
                rows.append((master.cap_weights(kind), value))
    return rows


def most_gain(problem, master, gains, limits, incumbent, hard_caps=False):
    """The most that patterns not in the master could lower its LP by.

    ``gains``: {(c, t): an upper bound on the best pattern's value less
    the node's dual, where positive}. With all the other rows relaxed at
    the LP's duals (Lagrange), each node of c in t is worth at most its
    gain, and the nodes of period t are at most ``limits`` (K[c,t]) and
    meet every row of :func:`node_rows`, and no more nodes than the VMs
    of the periods so far (each node of c bought in t serves a VM then,
    or an idle node of c from before would do): the least of the
    fractional knapsacks of each such row bounds what they are worth.
    """
    total = 0.0
    nc = len(problem.candidates)
    vms = 0.0
    for t, period in enumerate(problem.periods):
        vms += float(sum(period.vms.values()))
        gain = [max(0.0, gains.get((ci, t), 0.0)) for ci in range(nc)]
        if not any(gain):
            continue
        most = [limits[ci, t] for ci in range(nc)]
        worth = sum(g * k for g, k in zip(gain, most))
        rows = node_rows(problem, master, t, incumbent, hard_caps)
        for weights, room in rows + [([1.0] * nc, vms)]:
            worth = min(worth, _fractional(gain, weights, most, room))
        total += worth
    return total


def known_bound(problem, master, ci, t, values):
    """An upper bound on the best pattern of (ci, t) from its last pricing.

    The best value U(v) of a pattern is convex in the workload values v:
    for any pattern a, a.v = a.v0 + a.(v - v0) <= U(v0) + a.(v - v0)+, so
    U(v) <= U(v0) + the quick bound at the positive part of v - v0. While
    the duals move little (stabilised, near the end), this proves that no
    pattern pays without solving the pricing problem again. None: not
    priced exactly yet.
    """
    last = master.tops.get((ci, t))
    if last is None:
        return None
    before, top = last
    rise = [max(0.0, v - v0) for v, v0 in zip(values, before)]
    return top + pricing_bound(problem.candidates[ci], problem.demands,
                               rise)


def _remember(master, ci, t, values, top):
    """The upper bound of an exact pricing, for :func:`known_bound`."""
    master.tops[ci, t] = (list(values), top)


def shape(cand):
    """What a configuration's pricing problem depends on, but its duals.

    Configurations of one shape (the same node model and limits, another
    name or price) have the same best pattern for the same workload
    values: it is solved once.
    """
    return (dataclasses.replace(cand.capacity, name=''), cand.limits)


def _exact(problem, master, ci, values, mu, per_call, known=None, gap=None):
    """Exact pricing of one configuration; adds its best pattern if it pays.

    ``known``: {(shape, values): answer} of the pricing problems solved in
    this round, which configurations of the same shape reuse; ``gap``:
    how close to its optimum (default: the master's pricing gap).

    Returns (pays, counts, upper bound on the best pattern's value).
    """
    cand = problem.candidates[ci]
    key = (shape(cand), tuple(values))
    if known is not None and key in known:
        value, counts, top = known[key]
    else:
        value, counts, top = clock.timed(
            'pricing', per_call, patterns.best_pattern, cand.capacity,
            problem.demands, values, cand.limits,
            gap=master.pricing_gap if gap is None else gap,
            time_limit=per_call)
        if known is not None:
            known[key] = (value, counts, top)
    return _pays(value, mu), counts, top


def _pays(value, mu):
    """Whether a pattern of this value pays for a node of dual ``mu``."""
    return value > mu + RC_TOL * max(mu, 1e-6)


def lp_duals(master, res):
    """The duals of the master's LP ``res``, the VMs' slots at their worth.

    The LP may value a slot of workload w on a node of c in period t (the
    dual v of its serve row) above what a VM served there is worth when it
    serves none there (s[w,c,t] at 0, with a reduced cost d > 0): a
    pattern then seems to pay only because of that, and column generation
    stalls on such patterns. s is in its serve row with coefficient 1, so
    v lowered by d (not below 0) leaves its reduced cost at 0 or more, and
    every pattern's no lower; the serve rows' right-hand sides are 0, so
    the objective is the same: these are optimal duals of the same LP,
    for which pricing and the Lagrangian bound hold as for the LP's own.
    ``res`` may be of fewer patterns than the master has now.
    """
    duals = -res.ineqlin.marginals
    reduced = res.lower.marginals
    # The variables: N, the patterns, s, then the caps' growth.
    s0 = len(res.x) - len(master.serve) - (len(master.caps)
                                           if master.elastic else 0)
    for j, key in enumerate(master.serve):
        row = master.serve_row[key]
        duals[row] = max(0.0, duals[row] - max(0.0, reduced[s0 + j]))
    return duals


def farley_applies(problem, master):
    return (problem.objective == 'tco' and len(problem.periods) == 1
            and not master.caps)


def cover_duals(problem, master, duals):
    """The LP's duals with every workload valued at its demand's dual.

    One period, no caps, TCO: the master problem is the cover LP (least
    cost of nodes whose patterns cover the demand) in disguise, and the
    duals that count are those of the demand rows, pi. The LP may value a
    workload's slots on a configuration (its serve row) above pi (a VM
    served there has no cost of its own), and a node below its price; a
    pattern then seems to pay only because of that. Valuing every slot at
    pi and every node at its price (less the node cut's dual) is just as
    feasible in the dual, with the same objective (pi times the demand,
    plus the cut): so pricing at these duals ends column generation at
    the same LP, adds the patterns that pay for the cover, and gives a
    Farley bound at least as high.
    """
    out = np.array(duals, dtype=float)
    sigma = (max(0.0, out[master.cut_row])
             if master.cut_row is not None else 0.0)
    pi = [max(0.0, out[master.demand_row[w, 0]])
          for w in range(len(problem.workloads))]
    for (w, ci, _t), row in master.serve_row.items():
        out[row] = pi[w]
    for ci, cand in enumerate(problem.candidates):
        out[master.link_row[ci, 0]] = problem.node_cost(cand) - sigma
    return out


def price_farley(problem, master, duals, value, priced, per_call):
    """Exact pricing with Farley's bound (one period, no caps, TCO).

    With the demand duals pi and the dual sigma of the node-count cut,
    theta (pi, sigma) is feasible in the dual of the LP over all patterns,
    theta = min_c cost_c / (U_c + sigma) with U_c an upper bound on the
    value of a pattern of c; so theta times the duals' value bounds the
    optimum from below. The duals need not be the LP's own: any
    nonnegative ones, such as the stabilised duals of column generation,
    give a bound (``value``: their dual objective, ``duals``: one per
    row of the master problem, nonnegative). Configurations are priced
    in the order of their quick bound, and pricing stops once no
    configuration left can lower theta; the patterns found on the way
    join the master problem. The next few are solved side by side
    (:func:`clock.each`): the answers are those of one after another.
    """
    cost = [problem.node_cost(c) for c in problem.candidates]
    sigma = (max(0.0, duals[master.cut_row])
             if master.cut_row is not None else 0.0)
    order = []
    for (ci, t), entry in priced.items():
        quick = entry[1] if entry[1] is not None else pricing_bound(
            problem.candidates[ci], problem.demands, entry[2])
        ratio = (cost[ci] / (quick + sigma) if quick + sigma > 0
                 else np.inf)
        order.append((ratio, ci, t, entry))
    order.sort(key=lambda item: item[0])
    theta = 1.0
    added = 0
    known = {}
    answers = {}

    def solve(i):
        _ratio, ci, _t, entry = order[i]
        return _exact(problem, master, ci, entry[2], entry[0], per_call,
                      known)

    for i, (ratio, ci, t, entry) in enumerate(order):
        if ratio >= theta:
            break
        if entry[1] is not None:
            # The quick bound already showed no pattern pays.
            theta = min(theta, ratio)
            continue
        if i not in answers:
            # This one and the next ones that may lower theta now, side by
            # side; an answer past where pricing stops is not used.
            ahead = [j for j in range(i, len(order))
                     if order[j][3][1] is None and order[j][0] < theta]
            ahead = ahead[:clock.threads()]
            answers.update(zip(ahead, clock.each(solve, ahead)))
        pays, counts, top = answers.pop(i)
        _remember(master, ci, t, entry[2], top)
        if pays and master.add(ci, t, counts):
            added += 1
        if top + sigma > 0:
            theta = min(theta, cost[ci] / (top + sigma))
    return added, theta * value


def node_cut(problem, master, res, per_call):
    """The fewest whole nodes any fleet needs (one period), or None.

    With the demand duals pi >= 0 of the LP, no node holds VMs worth more
    than max_c U_c(pi), so a fleet needs sum(pi d) / max_c U_c(pi) nodes or
    more; and a whole number of them. Returns that number when it cuts the
    LP's fleet off, else None.
    """
    duals = -res.ineqlin.marginals
    nw = len(problem.workloads)
    pi = [max(0.0, duals[master.demand_row[w, 0]]) for w in range(nw)]
    want = sum(p * problem.periods[0].vms.get(name, 0)
               for p, name in zip(pi, problem.workloads))
    if want <= 0:
        return None
    quick = sorted(((pricing_bound(c, problem.demands, pi), ci)
                    for ci, c in enumerate(problem.candidates)),
                   reverse=True)
    most = 0.0
    for upper, ci in quick:
        if upper <= most:
            break
        cand = problem.candidates[ci]
        _value, _counts, top = clock.timed(
            'the cut on nodes', per_call, patterns.best_pattern,
            cand.capacity, problem.demands, pi, cand.limits,
            gap=master.pricing_gap, time_limit=per_call)
        most = max(most, min(top, upper))
    if most <= 0:
        return None
    nodes = int(np.ceil(want / most - 1e-6))
    have = sum(res.x[master._n(ci, 0)] for ci in range(master.nc))
    return nodes if nodes > have + 1e-6 else None


# Column generation's rounds that need no bound solve the pricing
# problems this close to their optimum first: a pattern within 1% of the
# best still pays, and they are solved several times faster.
LOOSE_PRICING_GAP = 1e-2


def price_all(problem, master, res, priced, per_call, incumbent,
              every=True):
    """Exact pricing of every configuration, with the Lagrangian bound.

    A configuration's patterns are the same in every period, only the
    VMs' values differ: a pattern found for one period joins every other
    period where it pays too. ``every`` False: a period that got one so
    is not priced itself this round (one pricing problem per
    configuration then, where its periods' values are alike), and the
    pricing problems are solved to :data:`LOOSE_PRICING_GAP` first, then,
    when no pattern pays, those whose bound leaves a doubt to the
    master's pricing gap; ``every`` True (the last round), each to
    :func:`bound_gap`. The bound is -inf when some were not priced.
    """
    upper = {key: entry[1] for key, entry in priced.items()
             if entry[1] is not None}
    pending = [key for key, entry in priced.items() if entry[1] is None]
    added = 0
    if not every and master.pricing_gap < LOOSE_PRICING_GAP:
        added = _price_pass(problem, master, priced, pending, per_call,
                            upper, LOOSE_PRICING_GAP)
        if added:
            return added, -np.inf
        # None paid: those whose bound leaves a doubt, closer.
        pending = [key for key in pending
                   if _pays(upper[key], priced[key][0])]
    added = _price_pass(problem, master, priced, pending, per_call, upper,
                        bound_gap(master) if every else master.pricing_gap,
                        every)
    if len(upper) < len(priced):
        return added, -np.inf
    limits = node_limits(problem, master, incumbent, hard_caps=True)
    lower = res.fun - most_gain(
        problem, master, {key: upper[key] - priced[key][0] for key in priced},
        limits, incumbent, hard_caps=True)
    return added, lower


def _price_pass(problem, master, priced, pending, per_call, upper, gap,
                every=False):
    """Price the (configuration, period) ``pending`` to ``gap``.

    ``upper`` gets the upper bound of each one priced. Returns the number
    of patterns added. The configurations are priced side by side
    (:func:`clock.each`), each one's periods in turn (a pattern found for
    one period may spare another its pricing); their patterns join the
    master in the order of ``pending``, as if priced one after another.
    """
    known = {}
    periods = {}
    for ci, t in pending:
        periods.setdefault(ci, []).append(t)

    def price(ci):
        # [(period, None: spared, or (pays, counts, top, elsewhere))]
        shared, out = set(), []
        for t in periods[ci]:
            if (ci, t) in shared and not every:
                out.append((t, None))
                continue
            entry = priced[ci, t]
            pays, counts, top = _exact(problem, master, ci, entry[2],
                                       entry[0], per_call, known, gap)
            elsewhere = (list(_pays_elsewhere(priced, ci, t, counts))
                         if pays else [])
            shared.update(elsewhere)
            out.append((t, (pays, counts, top, elsewhere)))
        return out

    added = 0
    for ci, out in zip(periods, clock.each(price, periods)):
        for t, answer in out:
            if answer is None:
                upper.pop((ci, t), None)
                continue
            pays, counts, top, elsewhere = answer
            _remember(master, ci, t, priced[ci, t][2], top)
            upper[ci, t] = top
            if pays and master.add(ci, t, counts):
                added += 1
            for key in elsewhere:
                if master.add(key[0], key[1], counts):
                    added += 1
    return added


def _pays_elsewhere(priced, ci, t, counts):
    """The other periods of ``ci`` where the pattern ``counts`` pays.

    Those whose pricing is pending (``priced`` with values, no quick
    bound that shows nothing pays there).
    """
    for (cj, tt), entry in priced.items():
        if cj == ci and tt != t and entry[1] is None:
            value = sum(c * v for c, v in zip(counts, entry[2]))
            if _pays(value, entry[0]):
                yield cj, tt


def best_by(problem, master, ci, values, deadline):
    """The best pattern of configuration ``ci`` at ``values``, by the deadline.

    :returns: (its value, its counts, an upper bound on the best value):
        the pricing problem of :func:`patterns.best_pattern`, solved to the
        master's pricing gap with the time left (half a second at least).
    """
    cand = problem.candidates[ci]
    left = max(deadline - time.monotonic(), 0.5)
    value, best, top = clock.timed(
        'pricing', left, patterns.best_pattern, cand.capacity,
        problem.demands, list(values), cand.limits,
        gap=master.pricing_gap, time_limit=left)
    return value, best, max(top, value)
