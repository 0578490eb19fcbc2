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
"""Sweeps: many variants of a scenario, optimised in parallel.

A grid over the power price, the hot ratio of the workloads and a scale of
the demand; each point is one scenario whose cheapest fleet the optimiser
finds. The points run through joblib on this machine (processes, as many
as asked) or, given the address of a Dask scheduler, on its cluster. The
work of a point is :func:`evaluate`, a module-level function of plain
arguments, so that either engine can ship it to another process.
"""

import dataclasses
import itertools

from nova_pmem_filters.planner import errors

COLUMNS = ('power_price_per_kwh', 'hot_ratio', 'demand_scale', 'nodes',
           'fleet', 'capex', 'energy', 'tco', 'tco_per_vm', 'vms', 'gap',
           'status')


@dataclasses.dataclass(frozen=True)
class Point:
    power_price_per_kwh: float = None
    hot_ratio: float = None
    demand_scale: float = 1.0


def grid(power_prices=(), hot_ratios=(), demand_scales=()):
    """Every combination of the values given (None: the scenario's)."""
    return [Point(p, h, d) for p, h, d in itertools.product(
        power_prices or (None,), hot_ratios or (None,),
        demand_scales or (1.0,))]


def variant(scen, point):
    """The scenario with the point's price, hot ratio and demand."""
    from nova_pmem_filters.core.formats import scenario_sections as sec
    from nova_pmem_filters.core.rules import extra_specs
    changes = {}
    if point.power_price_per_kwh is not None:
        changes['economics'] = dataclasses.replace(
            scen.economics, power_price_per_kwh=point.power_price_per_kwh)
    if point.hot_ratio is not None:
        workloads = {}
        for name, w in scen.workloads.items():
            specs = dict(w.extra_specs)
            specs[extra_specs.HOT_RATIO_KEY] = extra_specs.format_hot_ratio(
                point.hot_ratio)
            workloads[name] = dataclasses.replace(
                w, extra_specs=specs, request=dataclasses.replace(
                    w.request, hot_ratio=float(point.hot_ratio)))
        changes['workloads'] = workloads
    if point.demand_scale != 1.0:
        changes['demand'] = tuple(sec.Period(
            name=p.name, years=p.years,
            vms={w: int(round(n * point.demand_scale))
                 for w, n in p.vms.items()}) for p in scen.demand)
    return dataclasses.replace(scen, **changes) if changes else scen


def _vms(problem, plan, period):
    """The VMs the plan places in ``period``.

    A TCO plan is for the demand: the fleet holds it, and slots beyond it
    are spare room that cost nothing, so that optimal fleets of one TCO may
    show more or fewer of them (HiGHS releases break that tie differently).
    It places its demand. The other objectives count what they maximise.
    """
    slots = {w: 0 for w in problem.workloads}
    for (_config, name), counts in plan.vms.items():
        if name == period.name:
            for w, n in counts.items():
                slots[w] += n
    if problem.objective == 'tco':
        return sum(min(n, period.vms.get(w, 0)) for w, n in slots.items())
    return sum(slots.values())


def evaluate(text, name, point, time_limit=60.0):
    """One point: the optimiser's fleet for the variant, as a row."""
    from nova_pmem_filters.planner import optimize
    from nova_pmem_filters.planner import scenario as scenario_mod
    scen = variant(scenario_mod.parse(text, name), point)
    row = {'power_price_per_kwh': scen.economics.power_price_per_kwh,
           'hot_ratio': point.hot_ratio, 'demand_scale': point.demand_scale}
    try:
        problem = optimize.build(scen)
        plan = optimize.solve(problem, scen=scen, time_limit=time_limit)
    except errors.Infeasible as exc:
        row.update({'status': 'infeasible: %s' % exc})
        return {c: row.get(c) for c in COLUMNS}
    last = problem.periods[-1]
    fleet = {c: n for (c, p), n in sorted(plan.nodes.items())
             if p == last.name and n}
    vms = _vms(problem, plan, last)
    capex = sum(plan.capex.values())
    energy = sum(plan.energy.values())
    row.update({
        'nodes': sum(fleet.values()),
        'fleet': ' '.join('%s:%d' % item for item in fleet.items()),
        'capex': round(capex, 2), 'energy': round(energy, 2),
        'tco': round(capex + energy, 2),
        'tco_per_vm': round((capex + energy) / vms, 2) if vms else None,
        'vms': vms, 'gap': None if plan.gap is None else round(plan.gap, 5),
        'status': plan.status})
    return {c: row.get(c) for c in COLUMNS}


def run(scenario_ref, points, jobs=None, dask_address=None,
        time_limit=60.0):
    """Rows of every point, in the order of ``points``.

    :param jobs: joblib's ``n_jobs`` (default: one per CPU).
    :param dask_address: a Dask scheduler (``tcp://host:8786``) to run on
        instead.
    """
    # Fail here, on a bad scenario, not in every worker.
    from nova_pmem_filters.planner import scenario as scenario_mod
    text, name = scenario_mod.read_text(scenario_ref)
    scenario_mod.parse(text, name)
    if not points:
        raise errors.PlannerError('the sweep has no points')
    if dask_address:
        try:
            from dask import distributed
        except ImportError as exc:
            raise errors.MissingLibrary(
                "--dask needs dask.distributed, which is not installed: "
                "pip install 'dask[distributed]'") from exc
        try:
            client = distributed.Client(dask_address, timeout=30)
        except (OSError, TimeoutError) as exc:
            raise errors.PlannerError('cannot reach the Dask scheduler at '
                                      '%s: %s' % (dask_address, exc))
        with client:
            futures = client.map(evaluate, [text] * len(points),
                                 [name] * len(points), points,
                                 [time_limit] * len(points), pure=False)
            return client.gather(futures)
    import joblib
    return joblib.Parallel(n_jobs=jobs or -1)(
        joblib.delayed(evaluate)(text, name, p, time_limit)
        for p in points)


def chart_png(rows, title):
    """TCO per VM over the grid: a line per hot ratio and demand scale."""
    from nova_pmem_filters.planner.simulate import charts
    return charts.png(figure(rows, title))


def figure(rows, title):
    """The figure of :func:`chart_png`."""
    from nova_pmem_filters.planner.simulate import charts
    # Wider than the plot needs, for the legend at its right.
    return charts.plot(lambda fig, axis: _draw(rows, title, axis),
                       figsize=(10, 4.5))


# Line style and marker of each demand scale, in the order of the scales:
# TCO per VM barely moves with the demand, so the lines of one hot ratio
# (one hue) lie on each other. The first scale is a wide line in the light
# shade; the others are drawn over it, thin, dark, dashed or dotted and
# with other markers, so that each shows.
SCALE_STYLES = (('-', 'o'), ('--', 'x'), (':', '+'), ('-.', '1'),
                ((0, (5, 1, 1, 1)), '2'), ((0, (1, 3)), '3'))


def _series(rows):
    """{(hot ratio, demand scale): [(power price, TCO per VM)]}, sorted."""
    series = {}
    for row in rows:
        if row['tco_per_vm'] is None:
            continue
        key = (row['hot_ratio'], row['demand_scale'])
        series.setdefault(key, []).append(
            (row['power_price_per_kwh'], row['tco_per_vm']))
    return {key: sorted(points) for key, points in sorted(
        series.items(), key=lambda item: (str(item[0][0]), item[0][1]))}


def _draw(rows, title, axis):
    from nova_pmem_filters.core.rules import extra_specs
    from nova_pmem_filters.planner.simulate import charts
    from nova_pmem_filters.planner import tables

    from matplotlib import colormaps

    cmap = colormaps['tab20']
    series = _series(rows)
    hots = sorted({hot for hot, _s in series}, key=str)
    scales = sorted({scale for _h, scale in series})
    for (hot, scale), points in series.items():
        first = scales.index(scale) == 0
        linestyle, marker = SCALE_STYLES[scales.index(scale)
                                         % len(SCALE_STYLES)]
        # tab20 pairs a dark shade (even) with a light one (odd).
        axis.plot([p for p, _c in points], [c for _p, c in points],
                  color=cmap((2 * hots.index(hot) + first) % 20),
                  linestyle=linestyle, marker=marker,
                  linewidth=5 if first else 1.5,
                  markersize=12 if first else 8,
                  markeredgewidth=1.5, label='hot ratio %s, demand x%g'
                  % ('of the scenario' if hot is None
                     else extra_specs.format_hot_ratio(hot), scale))
    axis.set_xlabel('power price (%s per kWh)' % tables.CURRENCY)
    axis.set_ylabel('TCO per VM (%s)' % tables.CURRENCY)
    axis.set_title(title)
    axis.legend(fontsize='small', **charts.LEGEND_OUTSIDE)
