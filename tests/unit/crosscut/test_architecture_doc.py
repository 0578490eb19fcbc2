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
"""The architecture page names every module of the tree, and only those.

``doc/source/architecture.rst`` is where a reader learns where each idea
lives: a module it leaves out is one a reader cannot find, and a path it
names that is gone sends them nowhere.
"""

import os
import re

import testtools

from tests.unit import paths

PAGE = ('doc', 'source', 'architecture.rst')
PACKAGES = ('nova_pmem_filters',)
# A name in double backquotes.
_LITERAL = re.compile(r'``([^`]+)``')


def _modules():
    """Every package and module of the tree, as path parts."""
    found = []
    for top in PACKAGES:
        for dirpath, dirnames, filenames in os.walk(paths.of(top)):
            dirnames[:] = sorted(d for d in dirnames
                                 if os.path.exists(os.path.join(
                                     dirpath, d, '__init__.py')))
            rel = os.path.relpath(dirpath, paths.ROOT).split(os.sep)
            if rel != [top]:
                found.append(tuple(rel))
            for name in sorted(filenames):
                if name.endswith('.py') and name != '__init__.py':
                    found.append(tuple(rel) + (name[:-3],))
    return found


def _literals():
    with open(paths.of(*PAGE), encoding='utf-8') as f:
        text = f.read()
    names = set()
    for literal in _LITERAL.findall(text):
        # "a.py, b.py" and "a/b" are several names in one literal.
        for word in re.split(r'[,\s]+', literal.strip()):
            if word:
                names.add(word.rstrip('/'))
    return names


def _forms(parts):
    """How the page may name a module: by name, file or path."""
    name = parts[-1]
    forms = {name, name + '.py'}
    for start in range(len(parts) - 1):
        path = '/'.join(parts[start:])
        forms.update({path, path + '.py', '.'.join(parts[start:])})
    return forms


class ArchitecturePageTestCase(testtools.TestCase):

    def test_every_module_is_named(self):
        literals = _literals()
        missing = ['/'.join(parts) for parts in _modules()
                   if not _forms(parts) & literals]
        self.assertEqual([], missing,
                         'doc/source/architecture.rst does not name these '
                         'modules; say what each holds')

    def test_every_package_of_a_shared_name_is_named(self):
        # "cli" or "charts" named once would cover every module of that
        # name: the package of each must be named too.
        literals = _literals()
        modules = _modules()
        counts = {}
        for parts in modules:
            counts[parts[-1]] = counts.get(parts[-1], 0) + 1
        missing = ['/'.join(parts) for parts in modules
                   if counts[parts[-1]] > 1 and len(parts) > 2
                   and not _forms(parts[:-1]) & literals]
        self.assertEqual([], missing)

    def test_every_path_named_exists(self):
        gone = []
        for literal in _literals():
            if '/' not in literal or not literal.startswith(PACKAGES):
                continue
            if not (os.path.exists(paths.of(*literal.split('/')))
                    or os.path.exists(paths.of(
                        *(literal + '.py').split('/')))):
                gone.append(literal)
        self.assertEqual([], sorted(gone))

    def test_the_check_sees_modules(self):
        # The walk finds the tree: a broken walk would pass everything.
        modules = {'/'.join(parts) for parts in _modules()}
        self.assertIn('nova_pmem_filters/core/rules/kinds', modules)
        self.assertIn('nova_pmem_filters/planner/simulate/engine', modules)
        self.assertIn('nova_pmem_filters/scheduler', modules)
        self.assertGreater(len(modules), 80)
