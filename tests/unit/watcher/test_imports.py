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
"""Only ``nova_pmem_filters.watcher`` imports Watcher, and it not Nova.

Watcher is an optional extra, and Watcher and Nova cannot share a process
(they register some of the same options): the rest of the project must
work without Watcher, and the plugin must not pull Nova into the decision
engine.
"""

import ast

import testtools

from tests.unit.crosscut import test_imports

PACKAGE = 'nova_pmem_filters.watcher'


def _external(path):
    """The top-level names of every module ``path`` imports."""
    with open(path, encoding='utf-8') as f:
        tree = ast.parse(f.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name.split('.')[0]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            yield (node.module or '').split('.')[0]


class WatcherImportsTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.modules = test_imports.modules()

    def test_only_the_plugin_imports_watcher(self):
        found = sorted(name for name, path in self.modules.items()
                       if 'watcher' in set(_external(path))
                       and not test_imports._in(name, PACKAGE))
        self.assertEqual([], found)
        # The check sees the plugin's own imports.
        self.assertIn('watcher', set(_external(
            self.modules[PACKAGE + '.strategy'])))

    def test_nothing_imports_the_plugin(self):
        edges = test_imports.graph(at_import=False)
        found = sorted(name for name, targets in edges.items()
                       if not test_imports._in(name, PACKAGE)
                       and any(test_imports._in(t, PACKAGE)
                               for t in targets))
        self.assertEqual([], found)

    def test_the_plugin_imports_no_nova(self):
        found = {name: sorted({'nova'} & set(_external(path)))
                 for name, path in self.modules.items()
                 if test_imports._in(name, PACKAGE)}
        self.assertEqual({}, {k: v for k, v in found.items() if v})
        self.assertEqual(6, len(found))
