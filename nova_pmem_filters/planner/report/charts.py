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
"""The report's charts: PNG bytes drawn on matplotlib's Agg canvas."""

import collections
import io

from matplotlib.backends import backend_agg
from matplotlib import figure
from matplotlib import patches

from nova_pmem_filters.planner.report import cells
from nova_pmem_filters.planner import tables
from nova_pmem_filters.planner import vmsizing


# The baseline is grey in every chart; the other configurations take these.
BASELINE_COLOR = '#8c8c8c'
PALETTE = ('#4c72b0', '#dd8452', '#55a868', '#c44e52', '#8172b3',
           '#937860', '#da8bc3', '#ccb974', '#64b5cd')
CONSTRAINT_COLORS = {
    'mode': '#d9d9d9',
    'vcpu': '#9ecae1',
    'memory': '#fdae6b',
    'dram_cache': '#bcbddc',
    'pmem_namespaces': '#a1d99b',
}
CONSTRAINT_TEXT = {
    'mode': 'mode: the flavor excludes the node\'s mode',
    'vcpu': 'vcpu: hardware threads',
    'memory': 'memory: memory capacity',
    'dram_cache': 'dram_cache: DRAM cache (hot RAM)',
    'pmem_namespaces': 'pmem_namespaces: vPMEM namespaces',
}


def _config_label(comparison, config, baseline):
    rows = comparison[comparison['config'] == config]
    label = '%s (%s)' % (config, rows['mode'].iloc[0])
    if config == baseline:
        label += ', baseline'
    codes = [c for c in rows['warnings'].iloc[0].split(',') if c]
    if codes:
        label += ', warning: %s' % ', '.join(codes)
    return label


def _colors(configs, baseline):
    others = iter(PALETTE * (1 + len(configs) // len(PALETTE)))
    return {c: BASELINE_COLOR if c == baseline else next(others)
            for c in configs}


def _figure(width, height):
    fig = figure.Figure(figsize=(width, height), dpi=cells.DPI,
                        layout='constrained')
    backend_agg.FigureCanvasAgg(fig)
    return fig


def _grouped_bars(comparison, baseline, column, title, ylabel, label,
                  reference=None):
    """Bars of one comparison column: workloads on x, a bar per config.

    :param label: ``label(value, baseline_value)`` -> text above a bar.
    :param reference: (y, text) of a dashed horizontal line.
    """
    configs = cells.column_order(comparison['config'])
    workloads = cells.column_order(comparison['workload'])
    colors = _colors(configs, baseline)
    bars = len(configs) * len(workloads)
    fig = _figure(min(12.0, max(7.0, 1.2 + 0.75 * bars)), 4.6)
    ax = fig.add_subplot()
    width = 0.8 / len(configs)
    fontsize = 9 if bars <= 12 else 7
    rotation = 0 if bars <= 12 else 90
    top = 0.0
    for i, config in enumerate(configs):
        for j, workload in enumerate(workloads):
            value = cells.comparison_cell(comparison, config, workload,
                                          column)
            base = cells.comparison_cell(comparison, baseline, workload,
                                         column)
            x = j - 0.4 + width * (i + 0.5)
            height = float(value) if cells.finite(value) else 0.0
            top = max(top, height)
            ax.bar(x, height, width * 0.9, color=colors[config],
                   label=(_config_label(comparison, config, baseline)
                          if j == 0 else None))
            ax.annotate(label(value, base), (x, height), xytext=(0, 3),
                        textcoords='offset points', ha='center',
                        va='bottom', fontsize=fontsize, rotation=rotation)
    if reference is not None:
        # Named in the legend: a label on the line would collide with bars.
        ax.axhline(reference[0], color='#333333', linestyle='--',
                   linewidth=1, label=reference[1])
    ax.set_xticks(range(len(workloads)), workloads)
    ax.set_xlim(-0.5, len(workloads) - 0.5)
    # Room above the tallest bar for its label.
    ax.set_ylim(0, (top or 1.0) * (1.18 if rotation == 0 else 1.45))
    ax.set_xlabel('workload (flavor)')
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(axis='y', color='#dddddd', linewidth=0.8)
    ax.set_axisbelow(True)
    for side in ('top', 'right'):
        ax.spines[side].set_visible(False)
    handles, labels = ax.get_legend_handles_labels()
    if reference is not None:
        # Configs first, in scenario order; the reference line last.
        pairs = sorted(zip(handles, labels),
                       key=lambda hl: hl[1] == reference[1])
        handles, labels = [h for h, _ in pairs], [la for _, la in pairs]
    fig.legend(handles, labels, loc='outside lower center',
               ncol=min(len(handles), 2), frameon=False, fontsize=9)
    return fig


def _vs_baseline(fmt):
    def label(value, base):
        if not cells.finite(value):
            # Cost and power per VM of a node that holds none.
            return '0 VMs'
        text = fmt % value
        if cells.finite(base) and base and value != base:
            text += '\n(%+.0f%%)' % (100.0 * (value / base - 1.0))
        return text
    return label


def _bars(column, title, ylabel, label, reference=None):
    """The chart of one comparison column's bars (``_grouped_bars``)."""
    def draw(comparison, baseline):
        return _grouped_bars(comparison, baseline, column, title, ylabel,
                             label, reference=reference)
    return draw


def _throughput_label(value, base):
    return '%.2f\u00d7' % value if cells.finite(value) else 'n/a'


_vms_per_node = _bars(
    'vms_per_node', 'VMs per node, by configuration and workload',
    'VMs per node', _vs_baseline('%d'))
_cost_per_vm = _bars(
    'cost_per_vm', 'Node purchase cost per VM (lower is better)',
    'cost per VM (%s)' % tables.CURRENCY, _vs_baseline('%.0f'))
_vms_per_kw = _bars(
    'vms_per_kw', 'VMs per kW of node power (higher is better)',
    'VMs per kW', _vs_baseline('%.1f'))
_relative_throughput = _bars(
    'relative_throughput', 'Node throughput relative to the baseline node',
    'node throughput (\u00d7 baseline)', _throughput_label,
    reference=(1.0, 'baseline node = 1.0'))


def _binding(comparison, baseline):
    """Binding constraints: a cell per (config, workload).

    A cell is coloured by the constraint that binds; ties are stripes.
    """
    configs = cells.column_order(comparison['config'])
    workloads = cells.column_order(comparison['workload'])
    fig = _figure(min(12.0, max(7.0, 2.6 + 1.9 * len(workloads))),
                  1.9 + 0.75 * len(configs))
    ax = fig.add_subplot()
    seen = []
    for r, config in enumerate(configs):
        for c, workload in enumerate(workloads):
            binding = cells.comparison_cell(
                comparison, config, workload, 'binding') or ''
            vms = cells.comparison_cell(comparison, config, workload,
                                        'vms_per_node')
            names = [n for n in binding.split('+') if n] or ['mode']
            stripe = 1.0 / len(names)
            for k, name in enumerate(names):
                if name not in seen:
                    seen.append(name)
                ax.add_patch(patches.Rectangle(
                    (c + k * stripe, r), stripe, 1,
                    facecolor=CONSTRAINT_COLORS.get(name, '#eeeeee'),
                    edgecolor='white', linewidth=2))
            text = '%s\n%s VMs' % (' +\n'.join(names), vms)
            ax.text(c + 0.5, r + 0.5, text, ha='center', va='center',
                    fontsize=9, bbox={'boxstyle': 'round,pad=0.25',
                                      'facecolor': 'white', 'alpha': 0.85,
                                      'edgecolor': 'none'})
    ax.set_xlim(0, len(workloads))
    ax.set_ylim(len(configs), 0)
    ax.set_xticks([c + 0.5 for c in range(len(workloads))], workloads)
    ax.set_yticks([r + 0.5 for r in range(len(configs))],
                  [c + (' (baseline)' if c == baseline else '')
                   for c in configs])
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    ax.set_xlabel('workload (flavor)')
    ax.set_ylabel('configuration')
    ax.set_title('Binding constraint: the resource that limits VMs per node')
    order = [n for n in vmsizing.CONSTRAINTS if n in seen] + [
        n for n in seen if n not in vmsizing.CONSTRAINTS]
    handles = [patches.Patch(facecolor=CONSTRAINT_COLORS.get(n, '#eeeeee'),
                             label=CONSTRAINT_TEXT.get(n, n))
               for n in order]
    fig.legend(handles=handles, loc='outside lower center',
               ncol=min(len(handles), 2), frameon=False, fontsize=9)
    return fig


ChartSpec = collections.namedtuple('ChartSpec', 'name title draw caption')

CHARTS = (
    ChartSpec('vms-per-node.png', 'VMs per node', _vms_per_node,
              'How many VMs of each workload one node holds; the percentage '
              'is the change against the baseline.'),
    ChartSpec('cost-per-vm.png', 'cost per VM', _cost_per_vm,
              'Node purchase cost (platform, CPUs, DIMMs) divided by VMs per '
              'node.'),
    ChartSpec('vms-per-kw.png', 'VMs per kW', _vms_per_kw,
              'VMs per node divided by the node\'s power (platform, CPUs, '
              'DIMMs) in kW.'),
    ChartSpec('binding.png', 'binding constraints', _binding,
              'Which resource limits VMs per node; two colours mean two '
              'resources bind at once.'),
    ChartSpec('relative-throughput.png', 'relative node throughput',
              _relative_throughput,
              'VMs per node x per-VM throughput, relative to the baseline '
              'node (performance model, calibrated where a gain is '
              'published).'),
)


def chart_png(spec, comparison, baseline):
    """PNG bytes of one chart of the comparison frame."""
    fig = spec.draw(comparison, baseline)
    buf = io.BytesIO()
    # No "Software" key: the same frame gives the same bytes.
    fig.savefig(buf, format='png', metadata={'Software': None})
    return buf.getvalue()
