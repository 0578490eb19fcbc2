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
"""A plan as rows of a table: the columns and their values."""

from nova_pmem_filters.planner.optimize import fleetplan


LEADING_COLUMNS = ('fleet', 'period', 'config', 'nodes')
TRAILING_COLUMNS = ('vcpu_util', 'memory_util', 'dram_cache_util',
                    'namespace_util', 'capex', 'energy', 'tco', 'objective',
                    'lp_bound', 'gap', 'status', 'time_limited')
# Then, per workload, the VMs of its demand the fleet does not serve.
UNMET = 'unmet:'
# The table without --long: these and the VMs of each workload (it fits
# 100 columns with three workloads); the period too when there are several.
SHORT_COLUMNS = ('fleet', 'config', 'nodes', 'memory_util', 'tco')


def columns(problem):
    """Columns of the optimiser's listing; one per workload in the middle.

    The VMs served of each workload come before the fixed columns at the
    end, and the unmet VMs of each after them.
    """
    return (list(LEADING_COLUMNS) + list(problem.workloads)
            + list(TRAILING_COLUMNS)
            + [UNMET + w for w in problem.workloads])


def short_columns(column_names, periods=1):
    fixed = set(LEADING_COLUMNS) | set(TRAILING_COLUMNS)
    return [c for c in column_names
            if c in SHORT_COLUMNS or (c == 'period' and periods > 1)
            or (c not in fixed and not c.startswith(UNMET))]


def unmet(problem, plan):
    """{period: {workload: VMs of its demand not served}}, of a plan."""
    result = {}
    for period in problem.periods:
        served = {w: sum(plan.vms.get((c.name, period.name), {}).get(w, 0)
                         for c in problem.candidates)
                  for w in problem.workloads}
        result[period.name] = {
            w: max(0, int(period.vms.get(w, 0)) - served[w])
            for w in problem.workloads}
    return result


def _round(value, digits):
    return None if value is None else round(value, digits)


def rows(problem, plans):
    """Rows of the listing: per plan, period and configuration, and totals.

    A configuration row has the nodes, the VMs of each workload they hold,
    the used share of each node resource and the cost split; the ``total``
    row of each plan and period adds them up and carries the objective, the
    bound of the LP relaxation, the proven gap, the status, whether the
    time limit cut the search short and the demand not served.
    """
    result = []
    for plan in plans:
        if plan is None:
            continue
        left = unmet(problem, plan)
        for period in problem.periods:
            total = {w: 0 for w in problem.workloads}
            nodes = capex = energy = 0
            for cand in problem.candidates:
                key = (cand.name, period.name)
                # A single-configuration plan knows only its own.
                n = plan.nodes.get(key, 0)
                if not n:
                    continue
                util = fleetplan.utilisation(
                    problem, plan, cand.name, period.name)
                row = {'fleet': plan.name, 'period': period.name,
                       'config': cand.name, 'nodes': n}
                row.update(plan.vms[key])
                row.update({
                    'vcpu_util': _round(util['vcpu'], 3),
                    'memory_util': _round(util['memory'], 3),
                    'dram_cache_util': _round(util['dram_cache'], 3),
                    'namespace_util': _round(util['namespaces'], 3),
                    'capex': round(plan.capex[key], 2),
                    'energy': round(plan.energy[key], 2),
                    'tco': round(plan.capex[key] + plan.energy[key], 2)})
                result.append(row)
                nodes += n
                capex += plan.capex[key]
                energy += plan.energy[key]
                for w in problem.workloads:
                    total[w] += plan.vms[key][w]
            row = {'fleet': plan.name, 'period': period.name,
                   'config': 'total', 'nodes': nodes}
            row.update(total)
            row.update({'capex': round(capex, 2), 'energy': round(energy, 2),
                        'tco': round(capex + energy, 2),
                        'objective': round(plan.objective, 2),
                        'lp_bound': round(plan.lp_bound, 2),
                        'gap': _round(plan.gap, 5), 'status': plan.status,
                        'time_limited': plan.time_limited})
            row.update((UNMET + w, n) for w, n in left[period.name].items())
            result.append(row)
    return result
