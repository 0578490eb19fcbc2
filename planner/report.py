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
"""The capacity report: PNG charts and one self-contained HTML file.

Rendering is pure: :func:`chart_png` and :func:`render_html` take the frames
of :mod:`planner.tables` (and the scenario) and return ``bytes`` or ``str``;
:func:`build` runs them all and returns the files to write. :func:`write` is
the only function that touches the file system: every file goes to a
temporary file in the target directory, is synced, and is renamed over the
old one, HTML last, so a reader finds the old report or the new one and
never half of one.

Charts are drawn on matplotlib's Agg canvas directly (no pyplot, no display).
"""

import base64
import collections
import dataclasses
import html
import io
import math
import numbers
import os

from matplotlib.backends import backend_agg
from matplotlib import figure
from matplotlib import patches

from nova_pmem_filters import fileutil

import planner
from planner import model
from planner import tables

HTML_NAME = 'report.html'
DEFAULT_OUTPUT_DIR = 'pmem-report'
# Prices in the built-in catalog are US dollars; a scenario's own catalog
# entries are expected in the same unit.
CURRENCY = 'USD'

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

DPI = 120


@dataclasses.dataclass(frozen=True)
class Frames:
    """The tables a report is made of."""

    comparison: object
    calibration: object
    configs: object


def frames(scen):
    return Frames(comparison=tables.comparison(scen),
                  calibration=tables.calibration(scen),
                  configs=tables.configs(scen))


@dataclasses.dataclass(frozen=True)
class Artifact:
    """One file of a report: its name in the output directory and bytes."""

    name: str
    kind: str
    data: bytes


# ---------------------------------------------------------------- charts


def _finite(value):
    return (isinstance(value, numbers.Real) and not isinstance(value, bool)
            and math.isfinite(value))


def _order(column):
    return list(dict.fromkeys(column))


def _cell(comparison, config, workload, column):
    rows = comparison[(comparison['config'] == config)
                      & (comparison['workload'] == workload)]
    return rows[column].iloc[0] if len(rows) else None


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
    fig = figure.Figure(figsize=(width, height), dpi=DPI,
                        layout='constrained')
    backend_agg.FigureCanvasAgg(fig)
    return fig


def _grouped_bars(comparison, baseline, column, title, ylabel, label,
                  reference=None):
    """Bars of one comparison column: workloads on x, a bar per config.

    :param label: ``label(value, baseline_value)`` -> text above a bar.
    :param reference: (y, text) of a dashed horizontal line.
    """
    configs = _order(comparison['config'])
    workloads = _order(comparison['workload'])
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
            value = _cell(comparison, config, workload, column)
            base = _cell(comparison, baseline, workload, column)
            x = j - 0.4 + width * (i + 0.5)
            height = float(value) if _finite(value) else 0.0
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
        if not _finite(value):
            # Cost and power per VM of a node that holds none.
            return '0 VMs'
        text = fmt % value
        if _finite(base) and base and value != base:
            text += '\n(%+.0f%%)' % (100.0 * (value / base - 1.0))
        return text
    return label


def _vms_per_node(comparison, baseline):
    return _grouped_bars(
        comparison, baseline, 'vms_per_node',
        'VMs per node, by configuration and workload', 'VMs per node',
        _vs_baseline('%d'))


def _cost_per_vm(comparison, baseline):
    return _grouped_bars(
        comparison, baseline, 'cost_per_vm',
        'Node purchase cost per VM (lower is better)',
        'cost per VM (%s)' % CURRENCY, _vs_baseline('%.0f'))


def _vms_per_kw(comparison, baseline):
    return _grouped_bars(
        comparison, baseline, 'vms_per_kw',
        'VMs per kW of node power (higher is better)', 'VMs per kW',
        _vs_baseline('%.1f'))


def _relative_throughput(comparison, baseline):
    def label(value, base):
        return '%.2f\u00d7' % value if _finite(value) else 'n/a'
    return _grouped_bars(
        comparison, baseline, 'relative_throughput',
        'Node throughput relative to the baseline node',
        'node throughput (\u00d7 baseline)', label,
        reference=(1.0, 'baseline node = 1.0'))


def _binding(comparison, baseline):
    """Binding constraints: a cell per (config, workload).

    A cell is coloured by the constraint that binds; ties are stripes.
    """
    configs = _order(comparison['config'])
    workloads = _order(comparison['workload'])
    fig = _figure(min(12.0, max(7.0, 2.6 + 1.9 * len(workloads))),
                  1.9 + 0.75 * len(configs))
    ax = fig.add_subplot()
    seen = []
    for r, config in enumerate(configs):
        for c, workload in enumerate(workloads):
            binding = _cell(comparison, config, workload, 'binding') or ''
            vms = _cell(comparison, config, workload, 'vms_per_node')
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
    order = [n for n in model.CONSTRAINTS if n in seen] + [
        n for n in seen if n not in model.CONSTRAINTS]
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

# tables, one per chart, HTML, writing the files.
STEPS = len(CHARTS) + 3


def chart_png(spec, comparison, baseline):
    """PNG bytes of one chart of the comparison frame."""
    fig = spec.draw(comparison, baseline)
    buf = io.BytesIO()
    # No "Software" key: the same frame gives the same bytes.
    fig.savefig(buf, format='png', metadata={'Software': None})
    return buf.getvalue()


# ------------------------------------------------------------------ HTML

_CSS = """
body { font-family: "DejaVu Sans", "Segoe UI", Helvetica, Arial, sans-serif;
       color: #222; margin: 0; background: #fafafa; font-size: 14px;
       line-height: 1.45; }
main { max-width: 1360px; margin: 0 auto; padding: 16px 20px 40px;
       background: #fff; }
h1 { font-size: 26px; margin: 12px 0 4px; }
h2 { font-size: 20px; margin: 30px 0 8px; padding-bottom: 4px;
     border-bottom: 2px solid #e3e3e3; }
h3 { font-size: 16px; margin: 20px 0 6px; }
p.lead { font-size: 15px; color: #444; margin: 4px 0 10px; }
dl.meta { display: grid; grid-template-columns: max-content 1fr;
          gap: 2px 14px; margin: 8px 0; color: #444; }
dl.meta dt { font-weight: bold; }
dl.meta dd { margin: 0; }
nav { margin: 10px 0; font-size: 13px; }
nav a { margin-right: 14px; color: #1f5fa8; }
.warnings { border: 2px solid #d08b00; background: #fff6e0;
            border-radius: 6px; padding: 8px 18px 12px; margin: 18px 0; }
.warnings h2 { border: none; margin-top: 6px; color: #8a5a00; }
.warnings li { margin: 6px 0; }
.ok { border: 2px solid #4c9a4c; background: #eef8ee; border-radius: 6px;
      padding: 8px 18px; margin: 18px 0; }
.badge { display: inline-block; padding: 0 7px; border-radius: 10px;
         font-size: 12px; font-weight: bold; color: #fff;
         background: #c77c00; text-transform: uppercase; }
.badge.error { background: #b52a2a; }
.src { color: #666; font-size: 12px; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; margin: 6px 0 4px; font-size: 13px; }
th, td { border: 1px solid #d6d6d6; padding: 4px 6px; vertical-align: top; }
th { background: #eef1f5; text-align: left; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums;
         white-space: nowrap; }
td.key { white-space: nowrap; }
tr:nth-child(even) td { background: #f8f9fb; }
tr.warn td { background: #fff6e0; }
td.warn { color: #8a5a00; font-weight: bold; }
td.missing { color: #b52a2a; font-style: italic; }
.charts { display: grid; grid-template-columns: repeat(2, minmax(0, 1fr));
          gap: 18px; }
figure { margin: 0; border: 1px solid #e3e3e3; border-radius: 6px;
         padding: 8px; background: #fff; }
figure.wide { grid-column: 1 / -1; }
figure img { width: 100%; height: auto; display: block; }
figcaption { font-size: 13px; color: #444; margin-top: 6px; }
code { background: #f0f0f0; padding: 0 3px; border-radius: 3px; }
.note { color: #555; font-size: 13px; }
footer { margin-top: 30px; color: #777; font-size: 12px; }
"""

COMPARISON_HEADINGS = {
    'config': 'config',
    'workload': 'workload',
    'mode': 'mode',
    'visible_memory_gb': 'visible memory (GB)',
    'dram_cache_gb': 'DRAM cache (GB)',
    'vms_per_node': 'VMs per node',
    'binding': 'binding',
    'node_cost': 'node cost (%s)' % CURRENCY,
    'memory_cost': 'memory cost (%s)' % CURRENCY,
    'cost_vs_baseline': 'node cost vs baseline',
    'cost_per_vm': 'cost per VM (%s)' % CURRENCY,
    'node_watts': 'node power (W)',
    'vms_per_kw': 'VMs per kW',
    'per_vm_throughput': 'per-VM throughput (\u00d7 same VM on DRAM)',
    'relative_throughput': 'node throughput (\u00d7 baseline)',
    'warnings': 'population warnings',
}

CALIBRATION_HEADINGS = {
    'workload': 'workload',
    'config': 'calibrated on',
    'published_gain': 'published node gain (\u00d7)',
    'source': 'source',
    'baseline_vms': 'baseline VMs (model)',
    'config_vms': 'config VMs (model)',
    'hit_fraction': 'DRAM-cache hit fraction h',
    'miss_factor': 'miss factor',
    't_hit': 'derived per-VM factor t_hit',
    'model_gain': 'model node gain (\u00d7)',
}

CONFIGS_HEADINGS = {
    'config': 'config',
    'platform': 'platform',
    'cpu': 'CPU',
    'mode': 'mode',
    'population': 'DIMMs per node',
    'dram_gb': 'DRAM (GB)',
    'pmem_gb': 'PMem (GB)',
    'node_cost': 'node cost (%s)' % CURRENCY,
    'node_watts': 'node power (W)',
    'errors': 'errors',
    'warnings': 'warnings',
}

_MONEY_COLUMNS = frozenset(['node_cost', 'memory_cost', 'cost_per_vm'])
# Decimals of ratio columns, as many as tables.py keeps, so that a column
# reads evenly (1.000 and 0.811, not 1 and 0.811).
_DIGITS = {'per_vm_throughput': 3, 'relative_throughput': 3,
           'published_gain': 3, 'model_gain': 3, 'hit_fraction': 3,
           'miss_factor': 3, 't_hit': 4}
# Columns of signed percentages, aligned like numbers.
_NUMERIC_TEXT = frozenset(['cost_vs_baseline'])


def format_value(value, column=None):
    """The text of one table cell, as the report shows it."""
    if value is None or isinstance(value, str):
        return '' if value is None else value
    if isinstance(value, bool):
        return 'yes' if value else 'no'
    if isinstance(value, numbers.Integral):
        return '{:,}'.format(int(value))
    if isinstance(value, numbers.Real):
        if math.isnan(value):
            return 'n/a'
        if math.isinf(value):
            return '\u221e'
        if column in _MONEY_COLUMNS:
            return '{:,.2f}'.format(value)
        if column in _DIGITS:
            return '{:,.{}f}'.format(value, _DIGITS[column])
        if float(value).is_integer():
            return '{:,.0f}'.format(value)
        return '{:,}'.format(float(value))
    return str(value)


def _esc(text):
    return html.escape(str(text), quote=True)


def _table(frame, headings, table_id, warn_column=None, wrap=()):
    """An HTML table of a frame.

    Text columns not in ``wrap`` never break, so dram-384 stays whole.
    """
    head = ''.join('<th>%s</th>' % _esc(headings.get(c, c))
                   for c in frame.columns)
    body = []
    for row in frame.itertuples(index=False, name=None):
        cells = []
        warn = False
        for column, value in zip(frame.columns, row):
            text = format_value(value, column)
            classes = []
            if (isinstance(value, numbers.Real) and not isinstance(
                    value, bool)) or column in _NUMERIC_TEXT:
                classes.append('num')
            elif column not in wrap:
                classes.append('key')
            if column == warn_column and text:
                classes.append('warn')
                warn = True
                text = '\u26a0 ' + text
            attr = ' class="%s"' % ' '.join(classes) if classes else ''
            cells.append('<td%s>%s</td>' % (attr, _esc(text)))
        body.append('<tr%s>%s</tr>' % (' class="warn"' if warn else '',
                                       ''.join(cells)))
    return ('<div class="table-wrap"><table id="%s"><thead><tr>%s</tr>'
            '</thead><tbody>\n%s\n</tbody></table></div>'
            % (_esc(table_id), head, '\n'.join(body)))


def _rows_table(headings, rows, table_id, classes=()):
    """A table from plain rows of already formatted text.

    :param classes: a CSS class per column ('num', 'key' or '').
    """
    head = ''.join('<th>%s</th>' % _esc(h) for h in headings)
    body = []
    for row in rows:
        cells = []
        for index, cell in enumerate(row):
            cls = classes[index] if index < len(classes) else ''
            if isinstance(cell, tuple):
                cell, cls = cell
            cells.append('<td%s>%s</td>' % (
                ' class="%s"' % cls if cls else '', _esc(cell)))
        body.append('<tr>%s</tr>' % ''.join(cells))
    return ('<div class="table-wrap"><table id="%s"><thead><tr>%s</tr>'
            '</thead><tbody>\n%s\n</tbody></table></div>'
            % (_esc(table_id), head, '\n'.join(body)))


def _warnings_section(findings_by_config):
    items = []
    for config, findings in findings_by_config.items():
        for f in findings:
            items.append(
                '<li><strong>%s</strong> <span class="badge %s">%s</span> '
                '<code>%s</code>: %s <span class="src">[%s]</span></li>'
                % (_esc(config), _esc(f.severity), _esc(f.severity),
                   _esc(f.code), _esc(f.message), _esc(f.source)))
    if not items:
        return ('<section id="warnings" class="ok"><strong>Population '
                'checks:</strong> no warnings for any configuration.'
                '</section>')
    return ('<section id="warnings" class="warnings">'
            '<h2>\u26a0 Population warnings</h2>'
            '<p>These configurations can be built but are outside vendor '
            'guidance; every number in this report is computed for them as '
            'given, so read those numbers with the warning in mind.</p>'
            '<ul>%s</ul></section>' % '\n'.join(items))


def _best(comparison, workload, column, highest):
    rows = comparison[comparison['workload'] == workload]
    rows = rows[rows[column].map(_finite)]
    if not len(rows):
        return None
    index = rows[column].idxmax() if highest else rows[column].idxmin()
    return rows.loc[index]


def _summary_section(comparison, baseline):
    money = '%%s %s' % CURRENCY
    measures = (('cost_per_vm', False, 'lowest cost per VM', money, True),
                ('vms_per_kw', True, 'most VMs per kW', '%s VMs/kW', True),
                ('relative_throughput', True, 'highest node throughput',
                 '%s \u00d7 baseline', False))
    rows = []
    for workload in _order(comparison['workload']):
        row = [workload]
        for column, highest, _, unit, with_base in measures:
            best = _best(comparison, workload, column, highest)
            base = _cell(comparison, baseline, workload, column)
            if best is None:
                row.append('n/a')
                continue
            text = '%s: %s' % (best['config'], unit % format_value(
                best[column], column))
            if with_base and best['config'] != baseline and _finite(base):
                text += ' (baseline %s)' % format_value(base, column)
            if best['warnings']:
                text += ' \u26a0 %s' % best['warnings']
            row.append(text)
        rows.append(row)
    return ('<section id="summary"><h2>At a glance</h2>'
            '<p class="note">The best configuration for each workload by '
            'cost per VM, VMs per kW and node throughput, with the '
            'baseline\'s value for comparison (\u26a0: the configuration '
            'has population warnings).</p>%s</section>'
            % _rows_table(['workload'] + [m[2] for m in measures], rows,
                          'summary', classes=('key',)))


def _png_width(png):
    # IHDR is the first chunk: width is the big-endian int at bytes 16-20.
    return int.from_bytes(png[16:20], 'big')


def _charts_section(charts):
    figures = []
    for spec, png in charts:
        # Charts wider than the default size take a whole row of the grid.
        wide = _png_width(png) > 7.5 * DPI
        uri = 'data:image/png;base64,' + base64.b64encode(png).decode(
            'ascii')
        figures.append(
            '<figure%s><img src="%s" alt="Chart: %s"><figcaption>'
            '<strong>%s.</strong> %s</figcaption></figure>'
            % (' class="wide"' if wide else '', uri, _esc(spec.title),
               _esc(spec.title[:1].upper() + spec.title[1:]),
               _esc(spec.caption)))
    return ('<section id="charts"><h2>Charts</h2><div class="charts">%s'
            '</div></section>' % '\n'.join(figures))


def _policies_rows(scen):
    p, perf = scen.policies, scen.performance
    return [
        ('memory_cap', format_value(p.memory_cap),
         'share of visible memory (after the host reserve) that VMs may '
         'consume; VMs per node = floor((visible - reserve) x cap / GB a '
         'VM really uses)'),
        ('host_reserve_gb', format_value(p.host_reserve_gb) + ' GB',
         'memory kept for the host before the cap applies'),
        ('cpu_overcommit', format_value(p.cpu_overcommit),
         'vCPUs per hardware thread'),
        ('cache_overcommit', format_value(p.cache_overcommit),
         'Memory Mode: hot RAM allowed per GB of DRAM cache '
         '(PmemCacheFilter\'s ratio)'),
        ('namespace_overhead', '%.4f' % p.namespace_overhead,
         'App Direct: share of a region lost to namespace metadata'),
        ('dram_latency_ns', format_value(perf.dram_latency_ns) + ' ns',
         'performance model: memory latency of a DRAM access'),
        ('pmem_latency_ns', format_value(perf.pmem_latency_ns) + ' ns',
         'performance model: latency of a DRAM-cache miss served by PMem'),
        ('miss factor', '%.3f' % model.miss_factor(perf),
         'dram_latency / pmem_latency: throughput of a cache miss '
         'relative to a hit'),
    ]


def _workload_rows(scen):
    rows = []
    for w in scen.workloads.values():
        cal = w.calibration or {}
        rows.append([
            w.name, w.description, format_value(w.vcpus),
            format_value(w.ram_gb), format_value(w.used_gb),
            format_value(w.hot_ratio), w.priority,
            ', '.join(sorted(w.request.modes)),
            format_value(w.vpmem_gb) if w.vpmem_gb else '',
            ('%s \u00d7%s' % (cal.get('mode', ''),
                              format_value(cal.get('node_gain')))
             if cal else ''),
        ])
    return rows


def _assumptions_section(scen):
    return (
        '<section id="assumptions"><h2>Assumptions</h2>'
        '<h3>Policies and performance model</h3>%s'
        '<p class="note">Per-VM throughput on a Memory-Mode node is '
        '<code>t_hit x (h + (1 - h) x miss factor)</code>, where h is the '
        'share of the node\'s hot working set (flavor RAM x hot ratio x '
        'VMs) that the DRAM cache holds. On DRAM and App-Direct nodes it is '
        'the workload\'s own throughput figure (1.0 if none is given). '
        'Prices are in %s.</p>'
        '<h3>Workloads</h3>%s</section>'
        % (_rows_table(['parameter', 'value', 'meaning'],
                       _policies_rows(scen), 'policies',
                       classes=('key', 'key', '')),
           _esc(CURRENCY),
           _rows_table(['workload', 'description', 'vCPU',
                        'flavor RAM (GB)', 'really used (GB)', 'hot ratio',
                        'priority', 'allowed modes', 'vPMEM (GB)',
                        'calibration'],
                       _workload_rows(scen), 'workloads',
                       classes=('key', '', 'num', 'num', 'num', 'num',
                                'key', '', 'num', 'key'))))


def _source(text):
    return (text, '') if text else ('not given', 'missing')


def source_rows(scen):
    """Catalog entries the configurations use, with price/watts sources."""
    used = collections.OrderedDict()

    def add(kind, item, config, count, price, price_src, watts, watts_src):
        key = (kind, item.name)
        if key not in used:
            used[key] = {'price': price, 'price_source': price_src,
                         'watts': watts, 'watts_source': watts_src,
                         'used_by': []}
        used[key]['used_by'].append('%s (%s)' % (config, count))

    for name, config in scen.configs.items():
        plat, cpu = config.platform, config.cpu
        add('platform', plat, name, 1, plat.base_cost,
            plat.base_cost_source, plat.base_watts, plat.base_watts_source)
        add('CPU', cpu, name, plat.sockets, cpu.price, cpu.price_source,
            cpu.watts, cpu.watts_source)
        counts = collections.Counter()
        for sock in config.sockets:
            counts.update(sock)
        for dimm in sorted(counts, key=lambda d: d.name):
            add('DIMM', dimm, name, counts[dimm], dimm.price,
                dimm.price_source, dimm.watts, dimm.watts_source)
    rows = []
    for (kind, item), info in used.items():
        rows.append([kind, item, ', '.join(info['used_by']),
                     (format_value(float(info['price']), 'node_cost'),
                      'num'),
                     _source(info['price_source']),
                     (format_value(float(info['watts'])), 'num'),
                     _source(info['watts_source'])])
    return rows


def _sources_section(scen):
    return (
        '<section id="sources"><h2>Sources of prices and power</h2>'
        '<p class="note">Every catalog entry the configurations use, with '
        'the number of units per node in brackets. Prices and watts are '
        'inputs: replace them with your own quotes and measurements in the '
        'scenario\'s <code>catalog</code> section.</p>%s</section>'
        % _rows_table(['kind', 'name', 'used by (units per node)',
                       'unit price (%s)' % CURRENCY, 'price source',
                       'unit power (W)', 'power source'],
                      source_rows(scen), 'sources',
                      classes=('key', 'key', '')))


def _simulation_section(simulation, png):
    """The simulated trace: its summary table and its chart."""
    if simulation is None:
        return ''
    from planner import simulate
    headings = list(simulate.SUMMARY_COLUMNS)
    rows = [[format_value(r[c], c) for c in headings]
            for r in simulation.rows]
    return ('<section id="simulation"><h2>Simulated placement</h2>'
            '<p class="note">A synthetic trace of %d events replayed on '
            'the optimiser\'s fleet as Nova places each boot (Placement, '
            'the pmem filters and weighers, RAM and CPU weighers). '
            '<em>density_mean</em> is what Nova reaches, '
            '<em>model_density</em> the per-node model for the same mix, '
            '<em>planned_vms</em> the optimiser\'s packing.</p>%s'
            '<figure><img alt="simulated placement over time" '
            'src="data:image/png;base64,%s"></figure></section>'
            % (len(simulation.events),
               _rows_table(headings, rows, 'simulation'),
               base64.b64encode(png).decode('ascii')))


def render_html(scen, report_frames, charts, version=None, simulation=None,
                simulation_png=None):
    """The report as one self-contained HTML document.

    :param report_frames: a :class:`Frames`.
    :param charts: [(ChartSpec, PNG bytes)], embedded as data: URIs.
    :param simulation: a :class:`planner.simulate.Run` to add, with its
        chart ``simulation_png``.
    """
    version = version or planner.version_string()
    findings = tables.findings_by_config(scen)
    nav = ''.join('<a href="#%s">%s</a>' % (anchor, title) for anchor, title
                  in (('warnings', 'Warnings'), ('summary', 'At a glance'),
                      ('comparison', 'Comparison'), ('charts', 'Charts'),
                      ('calibration', 'Calibration'),
                      ('configs', 'Configurations'),
                      ('assumptions', 'Assumptions'),
                      ('sources', 'Sources')))
    parts = [
        '<!DOCTYPE html>',
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, '
        'initial-scale=1">',
        '<title>PMem capacity report: %s</title>' % _esc(scen.name),
        '<style>%s</style></head><body><main>' % _CSS,
        '<header><h1>PMem capacity report: %s</h1>' % _esc(scen.name),
        '<p class="lead">%s</p>' % _esc(scen.description),
        '<dl class="meta"><dt>scenario</dt><dd>%s</dd>'
        '<dt>baseline</dt><dd>%s</dd><dt>configurations</dt><dd>%s</dd>'
        '<dt>workloads</dt><dd>%s</dd></dl></header>'
        % (_esc(scen.source), _esc(scen.baseline),
           _esc(', '.join(scen.configs)), _esc(', '.join(scen.workloads))),
        '<nav>%s</nav>' % nav,
        _warnings_section(findings),
        _summary_section(report_frames.comparison, scen.baseline),
        '<section id="comparison"><h2>Comparison</h2>'
        '<p class="note">One row per configuration and workload, baseline '
        'first. <em>binding</em> names the resource that limits VMs per '
        'node; node throughput is VMs per node x per-VM throughput, '
        'relative to the baseline node.</p>%s</section>'
        % _table(report_frames.comparison, COMPARISON_HEADINGS,
                 'comparison', warn_column='warnings'),
        _charts_section(charts),
        _simulation_section(simulation, simulation_png),
        '<section id="calibration"><h2>Calibration</h2>'
        '<p class="note">Where a node-throughput gain is published, the '
        'per-VM factor t_hit of the Memory-Mode node is solved so that the '
        'model reproduces it: gain = config VMs x t_hit x (h + (1 - h) x '
        'miss factor) / baseline VMs.</p>%s</section>'
        % (_table(report_frames.calibration, CALIBRATION_HEADINGS,
                  'calibration', wrap=('source',))
           if len(report_frames.calibration)
           else '<p>No workload of this scenario is calibrated.</p>'),
        '<section id="configs"><h2>Configurations</h2>%s</section>'
        % _table(report_frames.configs, CONFIGS_HEADINGS, 'configs',
                 warn_column='warnings', wrap=('errors', 'warnings')),
        _assumptions_section(scen),
        _sources_section(scen),
        '<footer>Written by nova-pmem-planner %s (nova-pmem-filters). '
        'All figures are model results from the scenario\'s inputs.'
        '</footer>' % _esc(version),
        '</main></body></html>',
    ]
    return '\n'.join(parts) + '\n'


SIMULATION_CHART = 'simulation.png'


def build(scen, png=True, progress=None, simulation=None):
    """Render the report of a scenario; nothing is written.

    :param png: also return the charts as PNG files (they are always
        embedded in the HTML).
    :param progress: called as ``progress(step, STEPS, label)`` before
        each step; the last step, writing, is the caller's.
    :param simulation: a :class:`planner.simulate.Run` to add, with a
        chart of it.
    :returns: a list of :class:`Artifact`, the HTML last.
    """
    step = iter(range(1, STEPS + 1))

    def tell(label):
        if progress is not None:
            progress(next(step), STEPS, label)

    tell('tables: comparison, calibration, configs')
    report_frames = frames(scen)
    charts = []
    for spec in CHARTS:
        tell('chart: %s' % spec.title)
        charts.append((spec, chart_png(spec, report_frames.comparison,
                                       scen.baseline)))
    sim_png = None
    if simulation is not None:
        from planner import simulate
        sim_png = simulate.chart_png(simulation.result.timeline,
                                     'Simulated placement: %s' % scen.name)
    tell('html: %s' % HTML_NAME)
    text = render_html(scen, report_frames, charts, simulation=simulation,
                       simulation_png=sim_png)
    artifacts = [Artifact(spec.name, 'png', data)
                 for spec, data in charts] if png else []
    if png and sim_png is not None:
        artifacts.append(Artifact(SIMULATION_CHART, 'png', sim_png))
    artifacts.append(Artifact(HTML_NAME, 'html', text.encode('utf-8')))
    return artifacts


# ----------------------------------------------------------------- files


def output_dir_problem(path):
    """Why a report cannot be written under ``path``, or None.

    A quick check before rendering, which creates nothing; :func:`write`
    still reports what really fails.
    """
    probe = os.path.abspath(path)
    while not os.path.lexists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    if not os.path.isdir(probe):
        return '%s is not a directory' % probe
    if not os.access(probe, os.W_OK | os.X_OK):
        return 'permission denied on %s' % probe
    return None


def write(artifacts, output_dir):
    """Write artifacts into ``output_dir``, each file atomically.

    All files are written and synced to temporary files first; only then
    are they renamed over the old ones, the HTML last. On any failure the
    temporary files are removed and the old report stays as it was.

    :returns: [(path, kind, bytes)] of the files written.
    :raises OSError: when the directory or a file cannot be written.
    """
    os.makedirs(output_dir, exist_ok=True)
    ordered = sorted(artifacts, key=lambda a: a.kind == 'html')
    temps = []
    try:
        for artifact in ordered:
            temps.append(fileutil.stage(output_dir, artifact.name,
                                        artifact.data))
        written = []
        for artifact, tmp in zip(ordered, temps):
            path = os.path.join(output_dir, artifact.name)
            os.replace(tmp, path)
            written.append((path, artifact.kind, len(artifact.data)))
    except BaseException:
        fileutil.discard(temps)
        raise
    fileutil.fsync_dir(output_dir)
    return written
