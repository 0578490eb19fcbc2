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
"""Every source the planner prints is one a user can open, or an assumption.

The commands run on the built-in scenarios, in the table and JSON formats;
a citation is the ``[...]`` that ends a finding line on stderr with
``--long``, or the ``source`` of a calibration row. Each must start with
``assumption`` or name URLs that are all in
:mod:`nova_pmem_filters.planner.population.sources` or in the scenario's own
catalog (the catalog entry's source). Without ``--long`` a finding line ends
with a short reference instead, each of whose parts the table of sources (or
the catalog) resolves.
"""

import json
import re

import testscenarios
import testtools

from nova_pmem_filters.planner import population
from nova_pmem_filters.planner.population import sources
from nova_pmem_filters.planner import scenario
from tests.unit import clitools
from tests.unit.planner.population import test_pmem

load_tests = testscenarios.load_tests_apply_scenarios

SCENARIOS = ('telco-cost-matched', 'cxl-cost-matched')
# A small search of each scenario's hardware (the full ones take long).
SEARCH = {
    'telco-cost-matched': ('--platform', 'cascade-lake-2s', '--cpu',
                           'xeon-gold-6230n', '--dimm', 'ddr4-16',
                           '--dimm', 'pmem100-128', '--limit', '5'),
    'cxl-cost-matched': ('--platform', 'granite-rapids-ap-2s', '--cpu',
                         'xeon-6980p', '--modes', 'cxl_flat', '--dimm',
                         'ddr5-64', '--dimm', 'samsung-cmmd-256',
                         '--limit', '5'),
}
_CITATION = re.compile(r'\[([^\[\]]+)\]\s*$')


def _package_texts(name):
    return (scenario.read_text(name)[0]
            + scenario.read_text(scenario.BUILTIN_SCENARIO)[0]
            + _catalog_text())


def _catalog_text():
    import importlib.resources
    return importlib.resources.files('nova_pmem_filters.planner').joinpath(
        'data', 'catalog.yaml').read_text()


def citation_problem(text, catalog_text=''):
    """Why ``text`` is not a citation a user can follow, or None."""
    if 'field notes' in text.lower():
        return 'cites the internal field notes'
    if text.startswith(sources.ASSUMPTION):
        return None
    found = sources.urls(text)
    if not found:
        return 'names no URL and is not an assumption'
    unknown = [u for u in found
               if u not in sources.known_urls() and u not in catalog_text]
    if unknown:
        return 'URLs neither in the sources table nor the catalog: %s' % (
            ', '.join(unknown))
    return None


class SourcesTableTestCase(testtools.TestCase):

    def test_every_source_has_a_title_and_url(self):
        for source_id, source in sources.SOURCES.items():
            self.assertTrue(source.title, source_id)
            self.assertEqual([source.url], sources.urls(source.url))

    def test_catalog_urls_are_in_the_table(self):
        # The built-in catalog cites the same documents the rules do.
        self.assertEqual(
            set(), set(sources.urls(_catalog_text())) - sources.known_urls())

    def test_every_rule_cites_a_public_source_or_an_assumption(self):
        catalog = _catalog_text()
        builtin = scenario.builtin_catalog()
        for case, make, code, _parts, _says, _never in (
                test_pmem.MESSAGE_CASES):
            config = make()
            if config.cpu not in builtin.cpus.values():
                # A CPU of the test's own making cites its own entry.
                continue
            for finding in population.check(config):
                self.assertIsNone(citation_problem(finding.source, catalog),
                                  '%s: %s: %s' % (case, finding.code,
                                                  finding.source))


def reference_problem(reference, catalog_text=''):
    """Why a short reference does not resolve, or None."""
    for part in reference.split(', '):
        if part in sources.SOURCES or part == sources.ASSUMPTION:
            continue
        kind, _, name = part.partition(' catalog: ')
        if name and re.search(r'(?m)^\s*%s:' % re.escape(name),
                              catalog_text):
            continue
        if sources.urls(part) and not citation_problem(part, catalog_text):
            continue
        return '%r: neither a source id, an assumption nor a catalog entry' % (
            part)
    return None


class OutputCitationsTestCase(testtools.TestCase):

    scenarios = [
        ('%s %s %s%s' % (name, command, fmt, ' long' if long else ''),
         {'scen': name, 'command': command, 'fmt': fmt, 'long': long})
        for name in SCENARIOS
        for command in ('compare', 'configs', 'calibration', 'search')
        for fmt in ('table', 'json')
        for long in (False, True)]

    def test_citations(self):
        argv = [self.command, '--scenario', self.scen, '-f', self.fmt]
        if self.long:
            argv.append('--long')
        if self.command == 'search':
            argv += list(SEARCH[self.scen])
        status, out, err = clitools.run_cli(self, argv)
        self.assertEqual(0, status, err)
        self.assertNotIn('field notes', (out + err).lower())
        cited = [m.group(1) for m in map(_CITATION.search, err.splitlines())
                 if m]
        if not self.long:
            texts = _package_texts(self.scen)
            for reference in cited:
                self.assertIsNone(reference_problem(reference, texts))
            cited = []
        if self.fmt == 'json':
            cited += [row['source'] for row in json.loads(out)
                      if row.get('source')]
        if (self.command, self.fmt, self.scen) == (
                'calibration', 'json', 'telco-cost-matched'):
            # The published gains are cited.
            self.assertEqual(2, len(cited))
        texts = _package_texts(self.scen)
        for text in cited:
            self.assertIsNone(citation_problem(text, texts), text)
