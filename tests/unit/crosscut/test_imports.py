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
"""Which module may import which: no cycles, and each part in its place.

Read from the source with ``ast``, so that nothing is imported: a module's
imports at import time are those outside function bodies (in ``if``,
``try`` and class bodies too). ``from a.b import c`` is an edge to the
module ``a.b.c`` when there is one, else to ``a.b``; the packages a module
sits in, which Python imports first, are not counted as its imports.
"""

import ast
import os

import testtools

from tests.unit import paths

PACKAGES = ('nova_pmem_filters',)
DOCTOR = 'nova_pmem_filters.doctor'
PLANNER = 'nova_pmem_filters.planner'
CORE = 'nova_pmem_filters.core'
# What the core may import of this tree: itself and these modules.
CORE_MAY_IMPORT = ('nova_pmem_filters.fileutil',)


def modules():
    """{dotted name: path} of every module and package of the tree."""
    found = {}
    for top in PACKAGES:
        for dirpath, dirnames, filenames in os.walk(paths.of(top)):
            dirnames[:] = sorted(d for d in dirnames if os.path.exists(
                os.path.join(dirpath, d, '__init__.py')))
            package = os.path.relpath(dirpath, paths.ROOT).replace(
                os.sep, '.')
            for name in sorted(filenames):
                if not name.endswith('.py'):
                    continue
                dotted = (package if name == '__init__.py'
                          else '%s.%s' % (package, name[:-3]))
                found[dotted] = os.path.join(dirpath, name)
    return found


def _statements(tree, at_import):
    """The import statements of a module.

    ``at_import``: only those that run when it is imported, outside
    function bodies.
    """
    todo = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif at_import and isinstance(node, (ast.FunctionDef,
                                             ast.AsyncFunctionDef,
                                             ast.Lambda)):
            continue
        todo.extend(ast.iter_child_nodes(node))


def _targets(node, name, is_package, known):
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name in known:
                yield alias.name
        return
    base = node.module or ''
    if node.level:
        package = name if is_package else name.rpartition('.')[0]
        for _ in range(node.level - 1):
            package = package.rpartition('.')[0]
        base = '.'.join(p for p in (package, node.module) if p)
    for alias in node.names:
        full = '%s.%s' % (base, alias.name)
        if full in known:
            yield full
        elif base in known:
            yield base


def graph(at_import=True):
    """{module: set of the tree's modules it imports}."""
    known = modules()
    edges = {}
    for name, path in known.items():
        with open(path, encoding='utf-8') as f:
            tree = ast.parse(f.read(), path)
        is_package = path.endswith('__init__.py')
        edges[name] = {target for node in _statements(tree, at_import)
                       for target in _targets(node, name, is_package,
                                              known)}
    return edges


def cycles(edges):
    """The modules that import each other, by Tarjan's algorithm.

    Each strongly connected component of more than one module, or of one
    that imports itself, sorted.
    """
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in edges[node]:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)


def reachable(edges, start):
    """The modules ``start`` imports, directly or through others."""
    seen, todo = set(), [start]
    while todo:
        for target in edges[todo.pop()]:
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def _in(name, package):
    return name == package or name.startswith(package + '.')


class ImportGraphTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.edges = graph()

    def test_no_import_cycles(self):
        self.assertEqual([], cycles(self.edges),
                         'modules that import each other, directly or '
                         'through others: move what they share to a module '
                         'both import')

    def test_planner_does_not_import_the_doctor(self):
        # Not at import time, through any chain of imports ...
        reached = {name: sorted(t for t in reachable(self.edges, name)
                                if _in(t, DOCTOR))
                   for name in self.edges if _in(name, PLANNER)}
        self.assertEqual({}, {k: v for k, v in reached.items() if v})
        # ... nor in a function.
        anywhere = graph(at_import=False)
        direct = {name: sorted(t for t in targets if _in(t, DOCTOR))
                  for name, targets in anywhere.items()
                  if _in(name, PLANNER)}
        self.assertEqual({}, {k: v for k, v in direct.items() if v})

    def test_core_imports_only_the_core(self):
        anywhere = graph(at_import=False)
        outside = {name: sorted(t for t in targets
                                if not _in(t, CORE)
                                and t not in CORE_MAY_IMPORT)
                   for name, targets in anywhere.items() if _in(name, CORE)}
        self.assertEqual({}, {k: v for k, v in outside.items() if v})

    def test_the_graph_sees_imports(self):
        # A graph without edges would pass every test above.
        self.assertIn('nova_pmem_filters.core.rules.kinds',
                      self.edges['nova_pmem_filters.core.rules.profile'])
        self.assertIn('nova_pmem_filters.planner.scenario.loading',
                      self.edges['nova_pmem_filters.planner.scenario'])
        self.assertGreater(len(self.edges), 80)

    def test_cycles_are_found(self):
        self.assertEqual([['a', 'b', 'c']],
                         cycles({'a': {'b'}, 'b': {'c'}, 'c': {'a', 'd'},
                                 'd': set()}))
        self.assertEqual([['a']], cycles({'a': {'a'}}))
        self.assertEqual([], cycles({'a': {'b'}, 'b': set()}))
