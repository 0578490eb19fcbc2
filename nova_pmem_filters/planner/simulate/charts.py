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
"""Charts of a replay's timeline, as PNG."""

from nova_pmem_filters.core.rules import kinds

# Legends sit right of their axes, their top at the axes' top: inside, they
# hid the lines they name.
LEGEND_OUTSIDE = {'loc': 'upper left', 'bbox_to_anchor': (1.01, 1.0),
                  'borderaxespad': 0.0}


def plot(draw, *args, figsize=None, **kwargs):
    """A matplotlib figure that ``draw(fig, axes)`` fills in.

    Drawn on the Agg canvas directly, not through pyplot: no global state to
    close, whatever backend the caller's process chose.

    :param args, kwargs: for ``Figure.subplots``.
    """
    from matplotlib.backends import backend_agg
    from matplotlib import figure

    fig = figure.Figure(figsize=figsize, dpi=100)
    backend_agg.FigureCanvasAgg(fig)
    draw(fig, fig.subplots(*args, **kwargs))
    # tight_layout counts the legends: axes shrink to leave them room.
    fig.tight_layout()
    return fig


def png(fig):
    """PNG bytes of a figure."""
    import io

    out = io.BytesIO()
    # No "Software" key: the same figure gives the same bytes.
    fig.savefig(out, format='png', metadata={'Software': None})
    return out.getvalue()


def plot_png(draw, *args, **kwargs):
    """PNG bytes of a figure :func:`plot` draws."""
    return png(plot(draw, *args, **kwargs))


def timeline_figure(timeline, title):
    """The timeline's figure: VMs, utilisation and cache pressure."""
    # Wider than the plots need, for the legends at their right.
    return plot(lambda fig, axes: _draw_timeline(timeline, title, *axes),
                2, 1, figsize=(11, 6.5), sharex=True)


def chart_png(timeline, title):
    """A chart of the timeline: VMs, utilisation and cache pressure."""
    return png(timeline_figure(timeline, title))


# The words of each mode in a legend ("memory used, Memory Mode nodes").
MODE_WORDS = {k.name: k.words for k in kinds.KINDS.values()}
ALL_NODES = 'all nodes'
REFUSED = 'boots refused so far'
# The shares of the lower plot: legend words and line style, by timeline
# column (a mode's columns by their prefix). Lines that meet (the mean and
# the fullest node's cache pressure of a single node) differ in style.
_SHARES = {
    'memory_util:': ('memory used, %s nodes', '-'),
    'vcpu_util:': ('vCPUs used, %s nodes', '--'),
    'cache_pressure_mean': ('DRAM cache pressure, mean node', '-.'),
    'cache_pressure_max': ('DRAM cache pressure, fullest node', ':'),
    'fragmentation': ('free memory no flavor fits (fragmentation)',
                      (0, (1, 1, 4, 1))),
}


def _share_line(column):
    """(legend words, line style) of a share column, or None."""
    prefix, _colon, mode = column.partition(':')
    if mode and prefix + ':' in _SHARES:
        words, style = _SHARES[prefix + ':']
        return words % MODE_WORDS.get(mode, mode.replace('_', ' ')), style
    return _SHARES.get(column)


def _draw_timeline(timeline, title, top, bottom):
    for column in [c for c in timeline if c.startswith('vms:')]:
        top.plot(timeline['day'], timeline[column], linestyle='-',
                 label=column.split(':', 1)[1])
    # Dashed over the kinds' solid lines: a fleet of one kind has the
    # same numbers, and both lines show.
    top.plot(timeline['day'], timeline['vms'], label=ALL_NODES, color='k',
             linestyle='--')
    if 'rejected' in timeline:
        top.plot(timeline['day'], timeline['rejected'], label=REFUSED,
                 color='tab:red', linestyle=':', linewidth=2)
    top.set_ylabel('VMs')
    top.set_title(title)
    top.legend(fontsize='small', **LEGEND_OUTSIDE)
    for column in timeline:
        line = _share_line(column)
        if line is not None:
            bottom.plot(timeline['day'], timeline[column], label=line[0],
                        linestyle=line[1])
    bottom.set_ylabel('share')
    bottom.set_xlabel('day')
    bottom.set_ylim(0, 1.05)
    bottom.legend(fontsize='small', **LEGEND_OUTSIDE)
