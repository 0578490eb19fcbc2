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
"""The populations found, ranked: one row per equivalent population."""

import collections
import dataclasses
import math

import pandas as pd

from nova_pmem_filters.core.formats import scenario_sections as sec
from nova_pmem_filters.planner import errors
from nova_pmem_filters.planner import scenario


COLUMNS = ('rank', 'config', 'mode', 'population', 'visible_memory_gb',
           'dram_cache_gb', 'vms_per_node', 'binding', 'node_cost',
           'cost_vs_budget', 'cost_per_vm', 'node_watts', 'vms_per_kw',
           'node_throughput', 'warnings', 'equivalents')

# Objective -> True when a larger value is better.
OBJECTIVES = {
    'cost_per_vm': False,
    'vms_per_node': True,
    'vms_per_kw': True,
    'node_throughput': True,
}


# Ties on the objective are broken by these, in order.
_TIE_BREAKERS = (('cost_per_vm', True), ('vms_per_node', False),
                 ('node_cost', True), ('node_watts', True), ('config', True))


@dataclasses.dataclass(frozen=True)
class Result:
    """A finished search: the ranked table and what it was asked."""

    frame: pd.DataFrame
    # Every valid population in the band, by configuration name.
    nodes: dict
    platform: sec.Platform
    cpu: sec.Cpu
    workload: scenario.Workload
    dimms: tuple
    modes: tuple
    budget: float
    low: float
    high: float
    objective: str


def _round(value, digits):
    if value is None or not math.isfinite(value):
        return None
    return round(float(value), digits)


def module_class(dimm):
    """What the rules and the model read of a module: all but its name.

    Modules of different vendors with the same class (capacity, price,
    watts, bandwidth, latency, lanes...) are interchangeable in a plan.
    """
    return tuple(getattr(dimm, f.name) for f in dataclasses.fields(dimm)
                 if not _names_or_cites(f.name))


def _names_or_cites(field):
    """Whether a module's field names it, says it or cites a source.

    Every other field (one added later too) is a figure a rule or the model
    may read.
    """
    return field in ('name', 'description', 'source') or field.endswith(
        '_source')


def equivalence_key(config):
    """Populations with the same key differ only in equivalent modules."""
    counts = collections.Counter()
    for dimm, n in config.per_socket.items():
        counts[module_class(dimm)] += int(n)
    return config.mode, tuple(sorted(
        (cls, n) for cls, n in counts.items() if n))


def _representatives(names, nodes):
    """One population of each equivalence class, and how many it folds.

    A class is placed where the first of its members is in ``names``, and
    named by its member with the fewest module types (3 x one vendor's
    module rather than a mix of vendors), then by name.

    :returns: [(name, how many equivalent populations it stands for
        besides itself)], in the order of ``names``.
    """
    members = {}
    for name in names:
        members.setdefault(equivalence_key(nodes[name].config),
                           []).append(name)

    def simplest(name):
        per = nodes[name].config.per_socket
        return sum(1 for n in per.values() if n), name

    return [(min(group, key=simplest), len(group) - 1)
            for group in members.values()]


def rank(fits, nodes, objective, budget, limit=None):
    """The ranked table of the search command.

    Populations that differ only in equivalent modules (:func:`module_class`:
    the same figures from another vendor) have the same measures: one row
    stands for them all, the first in the ranking, and ``equivalents``
    says how many others it stands for.

    :param fits: model.Fit of each population, by configuration name.
    :param nodes: model.Node of each population, by configuration name.
    :param limit: keep the best ``limit`` rows; None or 0 keeps all.
    """
    if objective not in OBJECTIVES:
        raise errors.PlannerError('--objective: unknown objective %r '
                                  '(known: %s)' % (objective,
                                                   ', '.join(OBJECTIVES)))
    order = [(objective, not OBJECTIVES[objective])]
    order += [(c, up) for c, up in _TIE_BREAKERS if c != objective]
    keys = pd.DataFrame({column: [getattr(f, column) for f in fits.values()]
                         for column, _ in order})
    keys = keys.sort_values([c for c, _ in order],
                            ascending=[up for _, up in order],
                            kind='mergesort')
    kept = _representatives(list(keys['config']), nodes)
    if limit:
        kept = kept[:limit]
    rows = []
    for index, (name, equivalents) in enumerate(kept, start=1):
        fit = fits[name]
        rows.append({
            'rank': index,
            'config': name,
            'mode': fit.mode,
            'population': nodes[name].config.population_label(),
            'visible_memory_gb': _round(fit.visible_memory_gb, 1),
            'dram_cache_gb': _round(fit.dram_cache_gb, 1),
            'vms_per_node': fit.vms_per_node,
            'binding': fit.binding,
            'node_cost': _round(fit.node_cost, 2),
            'cost_vs_budget': '%+.1f%%' % (100.0 * (fit.node_cost / budget
                                                    - 1.0)),
            'cost_per_vm': _round(fit.cost_per_vm, 2),
            'node_watts': _round(fit.node_watts, 1),
            'vms_per_kw': _round(fit.vms_per_kw, 2),
            'node_throughput': _round(fit.node_throughput, 3),
            'warnings': ','.join(fit.warnings),
            'equivalents': equivalents,
        })
    # object columns keep None (an infinite cost per VM) as None, not NaN.
    return pd.DataFrame(rows, columns=COLUMNS, dtype=object)
