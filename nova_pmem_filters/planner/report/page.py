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
"""The report's HTML page: one self-contained file, charts inlined."""

import base64
import collections
import html
import math
import numbers

from nova_pmem_filters import planner
from nova_pmem_filters.planner import memperf
from nova_pmem_filters.planner.report import cells
from nova_pmem_filters.planner import tables


# The unit of every price and cost, as the commands show it.
CURRENCY = tables.CURRENCY


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
    'node_gain': 'node gain (\u00d7)',
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
           'node_gain': 3, 'model_gain': 3, 'hit_fraction': 3,
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


def table_id(name):
    """The id of the table of section ``name``.

    The section keeps the bare name: it is the nav's anchor, and ids must
    be unique in a page.
    """
    return name + '-table'


def _table(frame, headings, name, warn_column=None, wrap=()):
    """An HTML table of a frame, the table of section ``name``.

    Text columns not in ``wrap`` never break, so dram-384 stays whole.
    """
    head = ''.join('<th>%s</th>' % _esc(headings.get(c, c))
                   for c in frame.columns)
    body = []
    for row in frame.itertuples(index=False, name=None):
        tds = []
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
            tds.append('<td%s>%s</td>' % (attr, _esc(text)))
        body.append('<tr%s>%s</tr>' % (' class="warn"' if warn else '',
                                       ''.join(tds)))
    return ('<div class="table-wrap"><table id="%s"><thead><tr>%s</tr>'
            '</thead><tbody>\n%s\n</tbody></table></div>'
            % (_esc(table_id(name)), head, '\n'.join(body)))


def _rows_table(headings, rows, name, classes=()):
    """A table from plain rows of already formatted text.

    Its id is the one :func:`table_id` gives ``name``.

    :param classes: a CSS class per column ('num', 'key' or '').
    """
    head = ''.join('<th>%s</th>' % _esc(h) for h in headings)
    body = []
    for row in rows:
        tds = []
        for index, cell in enumerate(row):
            cls = classes[index] if index < len(classes) else ''
            if isinstance(cell, tuple):
                cell, cls = cell
            tds.append('<td%s>%s</td>' % (
                ' class="%s"' % cls if cls else '', _esc(cell)))
        body.append('<tr>%s</tr>' % ''.join(tds))
    return ('<div class="table-wrap"><table id="%s"><thead><tr>%s</tr>'
            '</thead><tbody>\n%s\n</tbody></table></div>'
            % (_esc(table_id(name)), head, '\n'.join(body)))


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
    rows = rows[rows[column].map(cells.finite)]
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
    for workload in cells.column_order(comparison['workload']):
        row = [workload]
        for column, highest, _, unit, with_base in measures:
            best = _best(comparison, workload, column, highest)
            base = cells.comparison_cell(
                comparison, baseline, workload, column)
            if best is None:
                row.append('n/a')
                continue
            text = '%s: %s' % (best['config'], unit % format_value(
                best[column], column))
            if (with_base and best['config'] != baseline
                    and cells.finite(base)):
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
        wide = _png_width(png) > 7.5 * cells.DPI
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
        ('miss factor', '%.3f' % memperf.miss_factor(perf),
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
    from nova_pmem_filters.planner import simulate
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
    :param simulation: a :class:`nova_pmem_filters.planner.simulate.Run` to
    add, with its
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
        '<p class="note">Where a node-throughput gain is given (published '
        'or assumed, as the source says), the '
        'per-VM factor t_hit of the Memory-Mode node is solved so that the '
        'model reproduces it: gain = config VMs x t_hit x (h + (1 - h) x '
        'miss factor) / baseline VMs.</p>%s</section>'
        % (_table(report_frames.calibration.drop(columns=['published_gain']),
                  CALIBRATION_HEADINGS,
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
