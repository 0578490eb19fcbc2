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

import functools
import html.parser
import io

from matplotlib import image

from planner import report
from planner import scenario


PNG_SIGNATURE = b'\x89PNG\r\n\x1a\n'
DATA_PNG = 'data:image/png;base64,'

# Field notes, section 1: VMs per node on (the DRAM node, the MM node).
PUBLISHED_VMS = {'redis': (14, 19), 'mysql': (15, 20)}
CHART_FILES = [spec.name for spec in report.CHARTS]


@functools.lru_cache(maxsize=None)
def builtin():
    """The built-in scenario and its rendered report (rendered once)."""
    scen = scenario.load()
    return scen, tuple(report.build(scen))


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
