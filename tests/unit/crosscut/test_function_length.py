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
"""No function so long that it holds several rules.

A function of more than :data:`LIMIT` lines (from its ``def`` to its last
line, nested functions included) is split by the rules it holds: one
function each, named for its rule, that a reader and a test can find.
"""

import ast
import os

import testtools

from tests.unit import paths

PACKAGES = ('nova_pmem_filters',)
LIMIT = 100
# (path, qualified name) of a function allowed to be longer for now, with
# its length: none. An entry is for a function being split; it goes once
# the function is split.
ALLOWED = {}


def lengths():
    """{(path, qualified name): lines} of every function of the tree."""
    found = {}
    for top in PACKAGES:
        for dirpath, dirnames, filenames in os.walk(paths.of(top)):
            dirnames.sort()
            for name in sorted(filenames):
                if name.endswith('.py'):
                    path = os.path.join(dirpath, name)
                    with open(path, encoding='utf-8') as f:
                        tree = ast.parse(f.read(), path)
                    rel = os.path.relpath(path, paths.ROOT).replace(
                        os.sep, '/')
                    _collect(tree, rel, '', found)
    return found


def _collect(node, path, prefix, found):
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                              ast.ClassDef)):
            name = prefix + child.name
            if not isinstance(child, ast.ClassDef):
                found[path, name] = child.end_lineno - child.lineno + 1
            _collect(child, path, name + '.', found)
        else:
            _collect(child, path, prefix, found)


class FunctionLengthTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.lengths = lengths()

    def test_no_function_is_too_long(self):
        long = {key: n for key, n in self.lengths.items()
                if n > LIMIT and key not in ALLOWED}
        self.assertEqual({}, long,
                         '(path, function): lines of functions over %d '
                         'lines: split each by the rules it holds' % LIMIT)

    def test_allowed_ones_do_not_grow(self):
        grown = {key: (self.lengths.get(key), allowed)
                 for key, allowed in ALLOWED.items()
                 if self.lengths.get(key, 0) > allowed}
        self.assertEqual({}, grown)

    def test_allowed_ones_are_still_long(self):
        # Once split, a function leaves the list.
        short = sorted(key for key in ALLOWED
                       if self.lengths.get(key, 0) <= LIMIT)
        self.assertEqual([], short)

    def test_the_count_sees_functions(self):
        self.assertIn(('nova_pmem_filters/planner/optimize/solver.py',
                       'solve'), self.lengths)
        self.assertIn(('nova_pmem_filters/core/formats/scenario_sections.py',
                       'Workload.extra_specs'), self.lengths)
        self.assertGreater(len(self.lengths), 500)
