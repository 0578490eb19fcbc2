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


def plot_png(draw, *args, **kwargs):
    """PNG bytes of a matplotlib figure ``draw(fig, axes)`` fills in.

    :param args, kwargs: for ``pyplot.subplots``.
    """
    import io

    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot

    fig, axes = pyplot.subplots(*args, dpi=100, **kwargs)
    try:
        draw(fig, axes)
        fig.tight_layout()
        out = io.BytesIO()
        fig.savefig(out, format='png', metadata={'Software': None})
        return out.getvalue()
    finally:
        pyplot.close(fig)


def chart_png(timeline, title):
    """A chart of the timeline: VMs, utilisation and cache pressure."""
    return plot_png(lambda fig, axes: _draw_timeline(timeline, title, *axes),
                    2, 1, figsize=(9, 6.5), sharex=True)


def _draw_timeline(timeline, title, top, bottom):
    for column in [c for c in timeline if c.startswith('vms:')]:
        top.plot(timeline['day'], timeline[column],
                 label=column.split(':', 1)[1])
    top.plot(timeline['day'], timeline['vms'], label='all', color='k')
    top.set_ylabel('VMs running')
    top.set_title(title)
    top.legend(loc='lower right', fontsize='small')
    for column in timeline:
        if column.startswith(('memory_util:', 'vcpu_util:')) or \
                column in ('cache_pressure_mean', 'cache_pressure_max',
                           'fragmentation'):
            bottom.plot(timeline['day'], timeline[column], label=column)
    bottom.set_ylabel('share')
    bottom.set_xlabel('day')
    bottom.set_ylim(0, 1.05)
    bottom.legend(loc='lower right', fontsize='x-small', ncol=2)
