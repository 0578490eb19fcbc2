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
"""Every YAML snippet of the docs is a file that loads, or says which.

A snippet is a literal block of ``doc/source/*.rst`` (after ``::`` or
``.. code-block:: yaml``) whose text, up to its first ``$`` command line,
is a YAML mapping of plain keys. By its keys it is a scenario or Nova's
provider config (``meta``, ``providers``: read with
``core.formats.providerconfig``); any other kind fails here until this test
learns to check it.

A scenario snippet says what file it is by its first line:

``# NAME.yaml``
    the whole file NAME.yaml;
``# [NAME.yaml: ]... BASE ...``, BASE a ``.yaml`` of the source tree
    (``nova_pmem_filters/planner/data/telco-cost-matched.yaml``): the snippet's
    top-level keys replace those of BASE (the rest of BASE is kept), giving
    NAME.yaml;
no such line
    a whole file.

Each loads with the planner (``compare --scenario FILE``), in a directory
where a scenario's ``observations`` directory holds the example
observations (``etc/examples/observations``). A command of the page that
names a snippet's NAME.yaml is run there, and prints what the page shows
(as in :mod:`tests.unit.crosscut.test_doc_examples`, which lists it in its
``NOT_RUN``).
"""

import os
import re
import shlex

import fixtures
import testscenarios
import testtools
import yaml

from nova_pmem_filters.core.formats import providerconfig
from tests.unit import clitools
from tests.unit.crosscut import test_doc_examples
from tests.unit import paths

load_tests = testscenarios.load_tests_apply_scenarios

DOCS = os.path.join('doc', 'source')
PAGES = [os.path.join(DOCS, name) for name in sorted(
    os.listdir(paths.of(DOCS))) if name.endswith('.rst')]
EXAMPLE_OBSERVATIONS = paths.of('etc', 'examples', 'observations')
SCENARIO_KEYS = frozenset([
    'name', 'description', 'source', 'catalog', 'baseline', 'configs',
    'workloads', 'policies', 'performance', 'economics', 'demand',
    'observations'])
PROVIDER_CONFIG_KEYS = frozenset([providerconfig.META,
                                  providerconfig.PROVIDERS])
# prometheus.yml's part (observe.rst): a real Prometheus runs that very
# block in tests.unit.observe.test_prometheus_tls.
PROMETHEUS_CONFIG_KEYS = frozenset(['scrape_configs'])
WHOLE = re.compile(r'^# (?P<name>[\w.-]+\.yaml)$')
PART = re.compile(r'^# (?:(?P<name>[\w.-]+\.yaml): )?.*?'
                  r'(?P<base>\b(?:nova_pmem_filters/planner|etc)/'
                  r'[\w./-]+\.yaml)\b')
_KEY = re.compile(r'^[a-z_]+$')
_TOP_KEY = re.compile(r'^([A-Za-z_][\w-]*)\s*:')
_DIRECTIVE = re.compile(r'^\s*\.\. code-block:: *yaml\s*$')


def _literal_blocks(text):
    """(line number, lines) of each literal block, dedented."""
    lines = text.splitlines()
    found = []
    i = 0
    while i < len(lines):
        line = lines[i].rstrip()
        opens = line.endswith('::') or _DIRECTIVE.match(line)
        i += 1
        if not opens:
            continue
        while i < len(lines) and (not lines[i].strip() or re.match(
                r'^\s+:[\w-]+:', lines[i]) and _DIRECTIVE.match(line)):
            i += 1
        if i >= len(lines) or not lines[i].startswith(' '):
            continue
        start = i
        indent = len(lines[i]) - len(lines[i].lstrip())
        while i < len(lines) and (not lines[i].strip() or (
                len(lines[i]) - len(lines[i].lstrip()) >= indent)):
            i += 1
        found.append((start + 1, [ln[indent:] for ln in lines[start:i]]))
    return found


def snippets(page):
    """(line number, YAML text, mapping) of each snippet of ``page``."""
    with open(paths.of(page), encoding='utf-8') as f:
        text = f.read()
    found = []
    for number, block in _literal_blocks(text):
        head = []
        for line in block:
            if line.startswith('$ '):
                break
            head.append(line)
        snippet = '\n'.join(head).strip('\n') + '\n'
        if not snippet.strip() or snippet.lstrip().startswith('{'):
            # Empty, or a JSON document annotated with comments (the
            # format pages), which is not YAML to copy.
            continue
        try:
            data = yaml.safe_load(snippet)
        except yaml.YAMLError:
            continue
        if isinstance(data, dict) and all(
                isinstance(k, str) and _KEY.match(k) for k in data):
            found.append((number, snippet, data))
    return found


def merged(base_text, snippet, keys):
    """``base_text`` with its top-level ``keys`` replaced by ``snippet``."""
    kept = []
    dropping = False
    for line in base_text.splitlines():
        top = _TOP_KEY.match(line)
        if top:
            dropping = top.group(1) in keys
        elif line and not line[0].isspace():
            # A comment of the file's top level, before the next key.
            dropping = False
        if not dropping:
            kept.append(line)
    return '\n'.join(kept) + '\n' + snippet


def _scenarios():
    result = []
    for page in PAGES:
        for number, snippet, data in snippets(page):
            result.append(('%s:%d' % (page, number), {
                'page': page, 'line': number, 'snippet': snippet,
                'data': data}))
    return result


class DocScenarioTestCase(testtools.TestCase):

    scenarios = _scenarios()

    def run_planner(self, directory, argv):
        cwd = os.getcwd()
        os.chdir(directory)
        try:
            return clitools.run_cli(self, argv)
        finally:
            os.chdir(cwd)

    def where(self):
        return '%s:%d' % (self.page, self.line)

    def test_loads_as_the_file_it_says(self):
        keys = set(self.data)
        if keys <= PROVIDER_CONFIG_KEYS:
            providerconfig.parse(self.data, self.where())
            return
        if keys <= PROMETHEUS_CONFIG_KEYS:
            from tests.unit.observe import test_prometheus_tls
            self.assertEqual(self.data['scrape_configs'],
                             [test_prometheus_tls.documented_scrape_config()])
            return
        self.assertLessEqual(keys, SCENARIO_KEYS, '%s: a YAML snippet of '
                             'no kind this test checks' % self.where())
        directory = self.useFixture(fixtures.TempDir()).path
        os.symlink(EXAMPLE_OBSERVATIONS,
                   os.path.join(directory, 'observations'))
        first = self.snippet.splitlines()[0]
        whole, part = WHOLE.match(first), PART.match(first)
        name = ((whole or part).group('name') if whole or part else None)
        text = self.snippet
        if part and not whole:
            with open(paths.of(part.group('base')), encoding='utf-8') as f:
                text = merged(f.read(), self.snippet, keys)
        path = os.path.join(directory, name or 'snippet.yaml')
        with open(path, 'w', encoding='utf-8') as f:
            f.write(text)
        status, _out, err = self.run_planner(
            directory, ['compare', '--scenario', path, '-f', 'json'])
        self.assertEqual(0, status, '%s: the snippet%s does not load: %s'
                         % (self.where(), ' merged into %s' % part.group(
                             'base') if part and not whole else '', err))
        if name:
            self.check_commands(directory, name)

    def check_commands(self, directory, name):
        """The page's commands naming ``name`` print what it shows."""
        for command, comment, output in test_doc_examples.examples(
                self.page):
            argv = shlex.split(command)
            if name not in argv:
                continue
            self.assertIn((self.page, command), test_doc_examples.NOT_RUN)
            _status, out, err = self.run_planner(directory, argv[1:])
            got = [ln.rstrip() for ln in (err + out).splitlines()]
            self.assertTrue(
                test_doc_examples.matches(output, got,
                                          'abridged' in comment),
                '%s: $ %s\nthe page shows:\n%s\nthe command prints:\n%s'
                % (self.page, command, '\n'.join(output), '\n'.join(got)))


class CheckerTestCase(testtools.TestCase):
    """The finder and the merge themselves."""

    def test_finds_the_snippets(self):
        found = {page: [sorted(data) for _n, _s, data in snippets(page)]
                 for page in PAGES}
        self.assertIn(['economics', 'demand'][::-1],
                      found[os.path.join(DOCS, 'planner-fleet.rst')])
        self.assertIn(['meta', 'providers'],
                      found[os.path.join(DOCS, 'discovery.rst')])
        planner = found[os.path.join(DOCS, 'planner.rst')]
        self.assertTrue(any('workloads' in keys for keys in planner))
        # The format pages' annotated JSON and error lines are not.
        self.assertEqual([], found[os.path.join(DOCS,
                                                'observation-format.rst')])

    def test_merged(self):
        base = ('# head\nname: a\nworkloads:\n  x: 1\n\n  y: 2\n'
                '# about demand\ndemand:\n  x: 3\n')
        self.assertEqual('# head\nname: a\n# about demand\ndemand:\n'
                         '  x: 3\nworkloads:\n  z: 1\n',
                         merged(base, 'workloads:\n  z: 1\n',
                                {'workloads'}))

    def test_markers(self):
        self.assertEqual('numa.yaml', WHOLE.match('# numa.yaml')['name'])
        self.assertIsNone(WHOLE.match(
            '# numa.yaml: nova_pmem_filters/planner/x.yaml with'))
        found = PART.match('# measured.yaml: a copy of '
                           'nova_pmem_filters/planner/data/'
                           'telco-cost-matched.yaml with these')
        self.assertEqual(('measured.yaml',
                          'nova_pmem_filters/planner/data/'
                          'telco-cost-matched.yaml'),
                         (found['name'], found['base']))
        found = PART.match('# in a copy of nova_pmem_filters/planner/data/'
                           'x.yaml, replacing')
        self.assertEqual((None, 'nova_pmem_filters/planner/data/x.yaml'),
                         (found['name'], found['base']))
