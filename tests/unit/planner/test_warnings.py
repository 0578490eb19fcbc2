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
"""Population warnings on stderr: one short line each, hidden by -q.

The source is a short reference (:func:`sources.short`) that the docs'
table of sources resolves; ``compare --long``, the docs and the HTML
report give the whole citation.
"""

import os

import fixtures
import testtools

from nova_pmem_filters.planner import population
from nova_pmem_filters.planner.population import sources
from nova_pmem_filters.planner import scenario
from tests.unit import clitools
from tests.unit.planner import test_citations

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
# A warning line: the configuration, the finding's message and its short
# reference; the message is the longest part.
MAX_LINE = 240


def _ids(reference):
    return [part.strip() for part in reference.split(',')]


class ShortReferenceTestCase(testtools.TestCase):

    def test_mm_ratio(self):
        config = scenario.load(None).configs['mm-192-512']
        finding = [f for f in population.check(config)
                   if f.code == 'mm-ratio'][0]
        self.assertEqual('intel-pmem-video, assumption',
                         sources.short(finding.source))

    def test_each_form(self):
        self.assertEqual('assumption', sources.short(
            sources.assumption('channels alike')))
        self.assertEqual('lenovo-pmem200, fast20-optane', sources.short(
            sources.cite_all(('lenovo-pmem200', 'x'),
                             ('fast20-optane', None))))
        self.assertEqual('CPU catalog: xeon-6980p', sources.short(
            'CPU catalog (xeon-6980p: cxl_lanes 0); https://example.com/a'))
        # A URL the table does not know is kept whole: it stays
        # unambiguous.
        self.assertEqual('https://example.com/a', sources.short(
            'Vendor sheet, https://example.com/a'))

    def test_docs_table_resolves_every_reference(self):
        with open(os.path.join(TOP, 'doc', 'source', 'planner.rst')) as f:
            page = f.read()
        for source_id, source in sources.SOURCES.items():
            # (assertIn would print the whole page.)
            self.assertGreater(page.count('``%s``' % source_id), 0,
                               source_id)
            self.assertGreater(page.count(source.url), 0, source.url)


class WarningLinesTestCase(testtools.TestCase):

    def run_ok(self, *argv):
        status, out, err = clitools.run_cli(self, argv)
        self.assertEqual(0, status, err)
        return out, err

    def assert_short(self, err):
        lines = [line for line in clitools.messages(err)
                 if ': note ' not in line]
        self.assertEqual(1, len(lines), err)
        line = lines[0]
        self.assertLessEqual(len(line), MAX_LINE, line)
        self.assertNotIn('http', line)
        self.assertTrue(line.startswith('mm-192-512: warning mm-ratio: '),
                        line)
        reference = line[line.rindex('[') + 1:-1]
        for part in _ids(reference):
            self.assertTrue(part in sources.SOURCES
                            or part == sources.ASSUMPTION, part)

    def test_compare_short(self):
        for argv in (['compare'], ['compare', '-c', 'config'],
                     ['compare', '-f', 'json']):
            self.assert_short(self.run_ok(*argv)[1])

    def test_compare_long_cites_in_full(self):
        _out, err = self.run_ok('compare', '--long')
        lines = [line for line in clitools.messages(err)
                 if ': note ' not in line]
        self.assertEqual(1, len(lines), err)
        cited = test_citations._CITATION.search(lines[0]).group(1)
        self.assertIn(sources.SOURCES['intel-pmem-video'].url, cited)
        self.assertIsNone(test_citations.citation_problem(cited))

    def test_quiet_hides_them(self):
        self.assertEqual('', self.run_ok('-q', 'compare')[1])
        self.assertEqual('', self.run_ok('-q', 'compare', '--long')[1])

    def test_report_short_and_quiet(self):
        out_dir = self.useFixture(fixtures.TempDir()).path
        _out, err = self.run_ok('report', '--no-png', '--no-progress',
                                '--output-dir', out_dir, '-f', 'value')
        self.assert_short(err)
        _out, err = self.run_ok('-q', 'report', '--no-png', '--output-dir',
                                out_dir, '-f', 'value')
        self.assertEqual('', err)
