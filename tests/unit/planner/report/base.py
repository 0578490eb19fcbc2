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
"""What the report's tests share: the built-in report, its page, PNG checks.

The built-in scenario is the field notes' section 1 case: 14 and 19 Redis
VMs, 15 and 20 MySQL VMs per node, and a Memory-Mode configuration whose
DRAM:PMem ratio (1:2.7) draws a population warning.
"""

import collections
import functools
import html.parser
import io
import os
import tempfile

from matplotlib import image

from nova_pmem_filters.planner import report
from nova_pmem_filters.planner import scenario
from nova_pmem_filters.planner import simulate


PNG_SIGNATURE = b'\x89PNG\r\n\x1a\n'
DATA_PNG = 'data:image/png;base64,'

# Field notes, section 1: VMs per node on (the DRAM node, the MM node).
PUBLISHED_VMS = {'redis': (14, 19), 'mysql': (15, 20)}
CHART_FILES = [spec.name for spec in report.CHARTS]


# Every built-in scenario (its name, as --scenario takes it).
SCENARIOS = ('telco-cost-matched', 'cxl-cost-matched')


@functools.lru_cache(maxsize=None)
def builtin():
    """The built-in scenario and its rendered report (rendered once)."""
    scen = scenario.load()
    return scen, tuple(report.build(scen))


@functools.lru_cache(maxsize=None)
def written_html(name, simulated):
    """report.html of a built-in scenario as ``report`` writes it.

    :param simulated: with the simulation section (``report --simulate``).
    """
    scen = scenario.load(name)
    extra = {'simulation': simulate.run(scen)} if simulated else {}
    artifacts = report.build(scen, png=False, **extra)
    with tempfile.TemporaryDirectory() as out:
        report.write(artifacts, out)
        with open(os.path.join(out, report.HTML_NAME),
                  encoding='utf-8') as f:
            return f.read()


class Page(html.parser.HTMLParser):
    """What a test needs of a report page: links, images, tables, text."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.tags = []
        self.links = []
        self.images = []
        self.tables = {}
        self.sections = {}
        self._rows = None
        self._row = None
        self._cell = None
        self._section = None
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append(tag)
        for name in ('src', 'href', 'srcset', 'action', 'data', 'poster'):
            if name in attrs:
                self.links.append((tag, name, attrs[name] or ''))
        if tag == 'img':
            self.images.append(attrs.get('src') or '')
        elif tag == 'table':
            self._rows = self.tables.setdefault(attrs.get('id'), [])
        elif tag == 'tr' and self._rows is not None:
            self._row = []
            self._rows.append(self._row)
        elif tag in ('td', 'th') and self._row is not None:
            self._cell = []
        elif tag == 'section':
            self._section = attrs.get('id')
            self.sections[self._section] = []

    def handle_endtag(self, tag):
        if tag in ('td', 'th') and self._cell is not None:
            self._row.append(''.join(self._cell).strip())
            self._cell = None
        elif tag == 'table':
            self._rows = None
        elif tag == 'section':
            self._section = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if self._section is not None:
            self.sections[self._section].append(data)

    def text(self, section):
        return ' '.join(''.join(self.sections[section]).split())

    def rows(self, table_id):
        """Data rows of a table, without its heading row."""
        return self.tables[table_id][1:]


def assert_png(test, data):
    test.assertTrue(data.startswith(PNG_SIGNATURE), data[:16])
    pixels = image.imread(io.BytesIO(data), format='png')
    test.assertGreater(pixels.shape[0], 100)
    test.assertGreater(pixels.shape[1], 100)


# Elements with no end tag.
VOID = frozenset(['area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input',
                  'link', 'meta', 'source', 'track', 'wbr'])


class Structure(html.parser.HTMLParser):
    """Ids, in-page links and tag nesting of a page.

    Stricter than a browser: every element but the void ones needs its own
    end tag, in order, so an unclosed table or cell is a problem.
    """

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.ids = collections.Counter()
        self.anchors = []
        self.problems = []
        self._open = []
        self.feed(text)
        self.close()
        self.problems.extend('<%s> at line %d, column %d is not closed'
                             % (tag, line, column)
                             for tag, (line, column) in self._open)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if 'id' in attrs:
            self.ids[attrs['id']] += 1
        href = attrs.get('href') or ''
        if href.startswith('#'):
            self.anchors.append(href[1:])
        if tag not in VOID:
            self._open.append((tag, self.getpos()))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self._open.pop()

    def handle_endtag(self, tag):
        line, column = self.getpos()
        if not self._open or self._open[-1][0] != tag:
            self.problems.append(
                '</%s> at line %d, column %d closes %s'
                % (tag, line, column,
                   '<%s>' % self._open[-1][0] if self._open else 'nothing'))
            return
        self._open.pop()

    def duplicate_ids(self):
        return sorted(i for i, count in self.ids.items() if count > 1)

    def broken_anchors(self):
        return sorted(set(a for a in self.anchors if a not in self.ids))


def legends(fig):
    """Every legend of a figure: the figure's and its axes'."""
    return list(fig.legends) + [ax.get_legend() for ax in fig.axes
                                if ax.get_legend() is not None]


def assert_legends_outside(test, fig):
    """Each legend of the figure is on the figure and off every data area.

    The figure is drawn first: its layout places the legends and axes.
    """
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    page = fig.bbox
    for legend in legends(fig):
        box = legend.get_window_extent(renderer)
        names = [t.get_text() for t in legend.get_texts()]
        for ax in fig.axes:
            # The axes' own extent: its data area, without tick labels.
            area = ax.get_window_extent(renderer)
            test.assertFalse(
                bool(box.overlaps(area)),
                'legend %s at %s covers the axes %r at %s'
                % (names, _pixels(box), ax.get_title(), _pixels(area)))
        # Not cut off by the edge of the image either.
        test.assertTrue(
            page.x0 <= box.x0 and box.x1 <= page.x1
            and page.y0 <= box.y0 and box.y1 <= page.y1,
            'legend %s at %s is not all on the figure %s'
            % (names, _pixels(box), _pixels(page)))


def _pixels(box):
    """(x, y, width, height) of a box, in whole pixels."""
    return tuple(int(round(float(v))) for v in box.bounds)
