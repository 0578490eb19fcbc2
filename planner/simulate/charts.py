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


def _draw_timeline(timeline, title, top, bottom):
    for column in [c for c in timeline if c.startswith('vms:')]:
        top.plot(timeline['day'], timeline[column],
                 label=column.split(':', 1)[1])
    top.plot(timeline['day'], timeline['vms'], label='all', color='k')
    top.set_ylabel('VMs running')
    top.set_title(title)
    top.legend(fontsize='small', **LEGEND_OUTSIDE)
    for column in timeline:
        if column.startswith(('memory_util:', 'vcpu_util:')) or \
                column in ('cache_pressure_mean', 'cache_pressure_max',
                           'fragmentation'):
            bottom.plot(timeline['day'], timeline[column], label=column)
    bottom.set_ylabel('share')
    bottom.set_xlabel('day')
    bottom.set_ylim(0, 1.05)
    bottom.legend(fontsize='small', **LEGEND_OUTSIDE)
