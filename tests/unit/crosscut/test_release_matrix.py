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
"""The install page's table of releases is what tox, CI and setup.cfg say.

doc/source/install.rst ("Supported releases") names, per OpenStack
release, the Nova, Python, Placement and Watcher the tests run and what CI
runs of them. Each cell is read back from where it is made true:
constraints/RELEASE-openstack.txt, tox.ini, .ci/run and setup.cfg.
"""

import configparser
import os
import re
import shlex

from packaging import requirements
import testtools

from tests.unit import paths

TOP = paths.of()
INSTALL = os.path.join(TOP, 'doc', 'source', 'install.rst')
CI_RUN = os.path.join(TOP, '.ci', 'run')
# tox's environments without a release factor are the newest release's.
NEWEST = '2026.2'
OLDEST = '2025.1'
SUITES = {'py3': 'unit', 'functional': 'functional',
          'integration': 'integration', 'threads': 'threads'}


def release_table():
    """{release: {column: text}} of the install page's table."""
    with open(INSTALL) as f:
        text = f.read()
    section = text.split('Supported releases\n', 1)[1]
    lines = section.splitlines()
    rules = [i for i, line in enumerate(lines) if line.startswith('====')]
    header, body = lines[rules[0] + 1], lines[rules[1] + 1:rules[2]]
    starts = [m.start() for m in re.finditer(r'=+', lines[rules[0]])]
    ends = starts[1:] + [None]

    def cells(line):
        return [line[a:b].strip() for a, b in zip(starts, ends)]

    names = cells(header)
    table, last = {}, None
    for line in body:
        row = dict(zip(names, cells(line)))
        if not row['release']:
            # A continuation line: its cells go on the row above's.
            for name, text in row.items():
                if text:
                    last[name] = ' '.join((last[name], text))
            continue
        table[row['release'].split()[0]] = last = row
    return table


def openstack_pins(release):
    """{project: version} of constraints/RELEASE-openstack.txt."""
    pins = {}
    with open(os.path.join(TOP, 'constraints',
                           '%s-openstack.txt' % release)) as f:
        for line in f:
            line = line.split('#')[0].strip()
            if line:
                req = requirements.Requirement(line)
                pins[req.name] = str(req.specifier).lstrip('=')
    return pins


def constraint_pins(*names):
    """{name: version} the oldest release's environment pins."""
    pins = {}
    for name in names:
        with open(os.path.join(TOP, 'constraints', name)) as f:
            for line in f:
                line = line.split('#')[0].strip()
                if not line:
                    continue
                req = requirements.Requirement(line.replace('===', '=='))
                if req.marker and not req.marker.evaluate(
                        {'python_version': '3.11'}):
                    continue
                pins[req.name.lower().replace('_', '-')] = str(
                    req.specifier).lstrip('=')
    return pins


def ci_runs():
    """{release: {suite: 'all' or 'scheduling'}} of .ci/run's tox lines."""
    with open(CI_RUN) as f:
        text = f.read()
    runs = {}
    for line in text.splitlines():
        if not re.match(r'\s*(bounded [0-9]+ |timeout .* )?tox -e ', line):
            continue
        words = shlex.split(line, comments=True)
        envs = words[words.index('-e') + 1].split(',')
        subset = '$scheduling_tests' in words
        for env in envs:
            suite, *factors = env.split('-')
            if suite not in SUITES:
                continue
            if 'threads' in factors:
                # Nova's services in native threads.
                suite = 'threads'
                factors.remove('threads')
            release = factors[0] if factors else NEWEST
            runs.setdefault(release, {})[SUITES[suite]] = (
                'scheduling' if subset else 'all')
    return runs


def setup_cfg():
    parser = configparser.ConfigParser()
    parser.read(os.path.join(TOP, 'setup.cfg'))
    return parser


class ReleaseTableTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.table = release_table()

    def test_every_release_of_tox(self):
        with open(os.path.join(TOP, 'tox.ini')) as f:
            tox = f.read()
        labels = re.search(r'^labels =\n((?:    .*\n)+)', tox, re.M).group(1)
        released = {line.split('=')[0].strip()
                    for line in labels.splitlines()} - {'matrix'}
        self.assertEqual(released, set(self.table))
        self.assertIn(OLDEST, self.table)
        self.assertIn(NEWEST, self.table)

    def test_versions_are_the_pinned_ones(self):
        for release, row in self.table.items():
            pins = openstack_pins(release)
            self.assertEqual(
                (pins['nova'], pins['openstack-placement'],
                 pins['python-watcher']),
                (row['Nova'], row['Placement'], row['Watcher']), release)

    def test_ci_runs_what_the_table_says(self):
        runs = ci_runs()
        for release, row in self.table.items():
            said = {}
            for item in row['tested in CI'].split(', '):
                suite, _sep, part = item.partition(' (')
                said[suite] = part.rstrip(')') or 'all'
            self.assertEqual(said, runs.get(release, {}), release)

    def test_python_is_setup_cfgs(self):
        meta = setup_cfg()['metadata']
        pythons = {row['Python'] for row in self.table.values()}
        classifiers = meta['classifier'].split('\n')
        for python in pythons:
            self.assertIn('Programming Language :: Python :: %s' % python,
                          classifiers)
        self.assertEqual('>=%s' % min(pythons, key=lambda v: tuple(
            int(p) for p in v.split('.'))), meta['python_requires'])

    def test_extras_lower_bounds_are_tested(self):
        # Each lower bound is the version the oldest release's
        # environment installs: its upper-constraints, its OpenStack pins
        # and the pins of what those leave free.
        pins = constraint_pins('%s.txt' % OLDEST, '%s-extras.txt' % OLDEST)
        pins.update(openstack_pins(OLDEST))
        bounds = {}
        for extra, text in setup_cfg()['extras'].items():
            for line in text.splitlines():
                line = line.split('#')[0].strip()
                if not line:
                    continue
                req = requirements.Requirement(line)
                (spec,) = req.specifier
                self.assertEqual('>=', spec.operator, line)
                bounds[req.name.lower().replace('_', '-')] = spec.version
        self.assertEqual(self.table[OLDEST]['Watcher'],
                         bounds['python-watcher'])
        for name, version in sorted(bounds.items()):
            self.assertEqual(pins.get(name), version, name)
