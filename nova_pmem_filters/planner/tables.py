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
"""Report tables: pure functions of a scenario.

Each table is a list of rows (``comparison_rows``, ...), which the CLI
commands list as they are (:func:`listing`), and a pandas DataFrame of the
same rows (``comparison``, ...), which the HTML report renders, so a number
reads the same everywhere. pandas is imported by the DataFrames only: the
commands that list a table start without it.
"""

import dataclasses
import math

from nova_pmem_filters.planner import vmsizing

from nova_pmem_filters.planner import memperf

from nova_pmem_filters.planner import model
from nova_pmem_filters.planner import population
from nova_pmem_filters.planner.population import common
from nova_pmem_filters.planner.population import sources

# Prices in the built-in catalog are US dollars; a scenario's own catalog
# entries are expected in the same unit. Every cost column is in it.
CURRENCY = 'USD'
# The columns of any listing that are amounts of CURRENCY: a table shows
# the unit in their header ("cost_per_vm USD"); the machine formats keep
# the plain names.
MONEY_COLUMNS = frozenset(['node_cost', 'memory_cost', 'cost_per_vm',
                           'capex', 'energy', 'tco', 'tco_per_vm'])
# What each binding value (vmsizing.CONSTRAINTS) means, for the commands' help.
BINDINGS = {
    'mode': "the flavor's pmem: extra specs exclude the node's memory mode "
            "(0 VMs)",
    'vcpu': 'vCPUs: sockets x threads x cpu overcommit / the flavor\'s '
            'vCPUs',
    'memory': 'visible memory, less the host reserve, x the memory cap / '
              'the memory a VM uses',
    'dram_cache': 'near memory (the DRAM cache in Memory Mode, the DRAM on '
                  'CXL nodes) PmemCacheFilter admits at the flavor\'s hot '
                  'ratio',
    'pmem_namespaces': "whole App-Direct namespaces of the flavor's vPMEM "
                       'size in each socket\'s region',
    'numa_nodes': "the flavor's hw:numa_nodes is more than the node's "
                  'sockets (0 VMs)',
    'socket_vcpu': 'vCPUs of one NUMA cell (socket), for a flavor with '
                   'hw:numa_nodes',
    'socket_memory': 'memory of one NUMA cell, for a flavor with '
                     'hw:numa_nodes',
    'socket_dram_cache': 'near memory of one NUMA cell, for a flavor with '
                         'hw:numa_nodes',
    'shared_ratio': 'the ram_allocation_ratio of hosts shared with other '
                    'workloads (nova-config\'s role); --workload NAME plans '
                    'hosts of the workload\'s own',
    'near_memory_rounding': 'the CUSTOM_NEAR_MEMORY_MB request, rounded up '
                            'to whole MB, of --placement-accounting',
}

COMPARISON_COLUMNS = (
    'config', 'workload', 'mode', 'visible_memory_gb', 'dram_cache_gb',
    'vms_per_node', 'binding', 'node_cost', 'memory_cost', 'cost_vs_baseline',
    'cost_per_vm', 'node_watts', 'vms_per_kw', 'per_vm_throughput',
    'relative_throughput', 'warnings')
# The compare command's columns: the report's, then those added for scripts
# (appended, so that csv and value columns keep their places):
# cost_vs_baseline as a number, and the currency of the cost columns.
COMPARE_COMMAND_COLUMNS = COMPARISON_COLUMNS + ('cost_vs_baseline_pct',
                                                'currency')
# What a reader decides by: the table of ``compare`` without --long (it
# fits 100 columns; the mode, power, memory and costs are in --long).
COMPARISON_SHORT_COLUMNS = (
    'config', 'workload', 'vms_per_node', 'binding', 'cost_per_vm',
    'vms_per_kw', 'relative_throughput', 'warnings')


def counted(count, word, text=None):
    """``1 file``, ``2 files``: a count and its noun, singular for one.

    :param text: the count as shown, if not ``%d`` of it (``1.5``).
    """
    return '%s %s%s' % ('%d' % count if text is None else text, word,
                        '' if count == 1 else 's')


def _round(value, digits):
    if value is None or (isinstance(value, float) and not
                         math.isfinite(value)):
        return None
    return round(value, digits)


def memory_cost(config):
    return sum(d.price * n for sock in config.sockets
               for d, n in sock.items())


# The integers a pandas int64 column holds; a column with others stays one
# of Python objects.
_INT64 = range(-2 ** 63, 2 ** 63)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _missing(value):
    return value is None or (isinstance(value, float) and math.isnan(value))


def _column(values):
    """A column's values as a DataFrame of the rows would hold them.

    pandas makes a column of numbers with a float or a missing value among
    them a float64 column (1 reads 1.0, a missing value NaN); a column of
    integers stays integers, and any other column keeps its values.
    """
    present = [v for v in values if not _missing(v)]
    if (present and all(_is_number(v) for v in present)
            and all(v in _INT64 for v in present if isinstance(v, int))
            and (len(present) < len(values)
                 or any(isinstance(v, float) for v in present))):
        return [None if _missing(v) else float(v) for v in values]
    return [None if _missing(v) else v for v in values]


def listing(rows, columns):
    """cliff (columns, rows) of a table's rows, without pandas.

    The cells are those of
    :func:`nova_pmem_filters.planner.commands.base.frame_rows` of
    ``pandas.DataFrame(rows, columns=columns)``: the same types and values, a
    missing value None (the report's frames and the commands' listings show the
    same numbers).
    """
    cells = [_column([row.get(c) for row in rows]) for c in columns]
    return tuple(columns), [tuple(cell[i] for cell in cells)
                            for i in range(len(rows))]


def _frame(rows, columns):
    import pandas as pd

    return pd.DataFrame(rows, columns=columns)


def comparison(scen, fleet_kinds=(), columns=COMPARISON_COLUMNS):
    """:func:`comparison_rows` as a DataFrame of ``columns``."""
    return _frame(comparison_rows(scen, fleet_kinds), columns)


def comparison_rows(scen, fleet_kinds=(), workloads=None,
                    placement_accounting=False):
    """One row per (config, workload), baseline first.

    Each row has every column of COMPARE_COMMAND_COLUMNS (which holds
    COMPARISON_COLUMNS, the report's).

    :param fleet_kinds: node kinds of the current fleet
        (:func:`nova_pmem_filters.planner.fleet.load`), added as configs named
        ``fleet:<kind>``; they have no price or power.
    :param workloads: the workloads planned together (default all): the
        densities are those Nova admits with the settings ``nova-config``
        prints for them
        (:func:`nova_pmem_filters.planner.admission.admitted_counts`), with
        ``placement_accounting`` or without.
    """
    from nova_pmem_filters.planner import admission

    if workloads:
        scen = dataclasses.replace(scen, workloads={
            name: scen.workloads[name] for name in workloads})
    admitted = admission.admitted_counts(scen, None, placement_accounting)
    rows = []
    for fit, relative, cost_delta in model.compare(scen, admitted):
        config = scen.configs[fit.config]
        rows.append({
            'config': fit.config,
            'workload': fit.workload,
            'mode': fit.mode,
            'visible_memory_gb': _round(fit.visible_memory_gb, 1),
            'dram_cache_gb': _round(fit.dram_cache_gb, 1),
            'vms_per_node': fit.vms_per_node,
            'binding': fit.binding,
            'node_cost': _round(fit.node_cost, 2),
            'memory_cost': _round(memory_cost(config), 2),
            'cost_vs_baseline': ('%+.1f%%' % (100.0 * cost_delta)
                                 if math.isfinite(cost_delta) else None),
            'cost_vs_baseline_pct': _round(100.0 * cost_delta, 2),
            'currency': CURRENCY,
            'cost_per_vm': _round(fit.cost_per_vm, 2),
            'node_watts': _round(fit.node_watts, 1),
            'vms_per_kw': _round(fit.vms_per_kw, 2),
            'per_vm_throughput': _round(fit.per_vm_throughput, 3),
            'relative_throughput': _round(relative, 3),
            'warnings': ','.join(fit.warnings),
        })
    rows.extend(_fleet_rows(scen, fleet_kinds))
    return rows


def _fleet_rows(scen, kinds):
    policies, performance = scen.policies, scen.performance
    if not kinds:
        return []
    cal = model.calibrate(scen)
    base_node = model.node(scen.configs[scen.baseline], policies)
    rows = []
    for kind in kinds:
        node = kind.node()
        for workload in scen.workloads.values():
            t_hit = cal[workload.name].t_hit if workload.name in cal else None
            this = model.fit(node, workload, policies, performance,
                             t_hit=t_hit)
            base = model.fit(base_node, workload, policies, performance,
                             t_hit=t_hit)
            relative = (this.node_throughput / base.node_throughput
                        if base.node_throughput else None)
            rows.append({
                'config': 'fleet:%s' % kind.name,
                'workload': workload.name, 'mode': kind.mode,
                'visible_memory_gb': _round(this.visible_memory_gb, 1),
                'dram_cache_gb': _round(this.dram_cache_gb, 1),
                'vms_per_node': this.vms_per_node,
                'binding': this.binding,
                'node_cost': None, 'memory_cost': None,
                'cost_vs_baseline': None, 'cost_vs_baseline_pct': None,
                'currency': CURRENCY, 'cost_per_vm': None,
                'node_watts': None, 'vms_per_kw': None,
                'per_vm_throughput': _round(this.per_vm_throughput, 3),
                'relative_throughput': _round(relative, 3),
                'warnings': '',
            })
    return rows


# ``node_gain`` is the scenario's calibration.node_gain, published or
# assumed (``reference`` says which). ``published_gain``, its old name,
# keeps its place in the machine formats, which scripts read; it is the
# same value and leaves the table.
CALIBRATION_COLUMNS = (
    'workload', 'config', 'published_gain', 'source', 'baseline_vms',
    'config_vms', 'hit_fraction', 'miss_factor', 't_hit', 'model_gain',
    'node_gain')
# The calibration command's columns: the report's, then the source as a
# short reference (:func:`nova_pmem_filters.planner.population.sources.short`).
CALIBRATION_COMMAND_COLUMNS = CALIBRATION_COLUMNS + ('reference',)
# The table of ``calibration`` without --long.
CALIBRATION_SHORT_COLUMNS = (
    'workload', 'config', 'baseline_vms', 'config_vms', 't_hit',
    'model_gain', 'node_gain', 'reference')


def calibration(scen):
    """:func:`calibration_rows` as a DataFrame."""
    return _frame(calibration_rows(scen), CALIBRATION_COLUMNS)


def calibration_rows(scen):
    miss = memperf.miss_factor(scen.performance)
    rows = [{'workload': c.workload, 'config': c.config,
             'published_gain': c.node_gain, 'node_gain': c.node_gain,
             'source': c.source,
             'reference': sources.short(c.source),
             'baseline_vms': c.baseline_vms, 'config_vms': c.config_vms,
             'hit_fraction': round(c.hit_fraction, 3),
             'miss_factor': round(miss, 3), 't_hit': round(c.t_hit, 4),
             'model_gain': round(c.model_gain, 4)}
            for c in model.calibrate(scen).values()]
    return rows


def findings_by_config(scen):
    return {name: population.check(config)
            for name, config in scen.configs.items()}


CONFIGS_COLUMNS = (
    'config', 'platform', 'cpu', 'mode', 'population', 'dram_gb', 'pmem_gb',
    'node_cost', 'node_watts', 'errors', 'warnings')
# The configs command's columns: the report's, then the findings by code
# ("warning mm-ratio, ..."), errors first.
CONFIGS_COMMAND_COLUMNS = CONFIGS_COLUMNS + ('checks',)
# The table of ``configs`` without --long: the messages are in --long.
CONFIGS_SHORT_COLUMNS = (
    'config', 'mode', 'population', 'dram_gb', 'pmem_gb', 'node_cost',
    'checks')


def configs(scen):
    """:func:`configs_rows` as a DataFrame."""
    return _frame(configs_rows(scen), CONFIGS_COLUMNS)


def configs_rows(scen):
    rows = []
    for name, config in scen.configs.items():
        node = model.node(config, scen.policies)
        rows.append({
            'config': name, 'platform': config.platform.name,
            'cpu': config.cpu.name, 'mode': config.mode,
            'population': config.population_label(),
            'dram_gb': config.dram_gb, 'pmem_gb': config.pmem_gb,
            'node_cost': round(node.cost, 2),
            'node_watts': round(node.watts, 1),
            'errors': '; '.join(f.message for f in common.errors(
                node.findings)),
            'warnings': '; '.join(f.message for f in common.warnings(
                node.findings)),
            'checks': ', '.join('%s %s' % (f.severity, f.code) for f in
                                common.errors(node.findings)
                                + common.warnings(node.findings)),
        })
    return rows


def admission_notes(scen, workloads=None, placement_accounting=False):
    """One line per (config, workload) Nova admits fewer of than planned.

    Each names what takes the VMs off (the role's shared
    ``ram_allocation_ratio``, a near-memory request rounded up) and the
    density the planner counts for hosts of the workload's own, which
    ``--workload NAME`` plans and configures.
    """
    from nova_pmem_filters.planner import admission

    if workloads:
        scen = dataclasses.replace(scen, workloads={
            name: scen.workloads[name] for name in workloads})
    lines = []
    for (config, name), (count, reason) in admission.admitted_counts(
            scen, None, placement_accounting).items():
        if reason is None:
            continue
        workload = scen.workloads[name]
        own, _ = admission.admitted(scen, config, workload, [workload],
                                    placement_accounting)
        planned, _ = vmsizing.density(
            model.node(scen.configs[config], scen.policies), workload,
            scen.policies)
        if reason == admission.SHARED_RATIO:
            _reserved, ratio = admission.compute_memory(
                scen, config, list(scen.workloads.values()))
            lines.append(
                '%s: note shared_ratio: %s: %d VMs per node at the '
                'ram_allocation_ratio %s shared with %s; %d on hosts of '
                'its own (--workload %s)' % (
                    config, name, count, admission.ratio_text(ratio),
                    ', '.join(w for w in scen.workloads if w != name),
                    own, name))
        else:
            lines.append(
                '%s: note near_memory_rounding: %s: %d VMs per node: its '
                'CUSTOM_NEAR_MEMORY_MB request, rounded up to whole MB, '
                'divides the inventory %d times (%d without Placement '
                'accounting)' % (config, name, count, count, planned))
    return lines
