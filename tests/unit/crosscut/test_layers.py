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
"""The layers of the tree: what each part may import, and the module sizes.

``doc/source/architecture.rst`` draws the house: the core (rules, tool
grammars, formats, plans) at the bottom, the Nova side and the tools above
it, the Watcher plugin on top. The import graph (read from the source,
function bodies included) must keep to that drawing, and the Tempest plugin,
which judges a deployed cloud from the documented contract, imports nothing
of the package it judges.
"""

import ast
import os
import statistics

import testtools

from tests.unit.crosscut import test_imports
from tests.unit import paths

NPF = 'nova_pmem_filters'
# Each part of the package and the other parts it may import (a part may
# always import itself). A part is the longest name of this table that a
# module's name starts with; 'core' allows every part of the core.
MAY_IMPORT = {
    # The core: Nova-free, each layer on the ones before it.
    'core': (),
    'core.rules': (),
    'core.grammars': ('core.rules',),
    'core.formats': ('core.rules', 'core.grammars', 'fileutil'),
    'core.plans': ('core.rules', 'core.formats'),
    'fileutil': (),
    # The Nova side: what nova-scheduler and nova-api load. Its hot path
    # reads no file: no formats, no grammars.
    'conf': ('core.rules',),
    'scheduler': ('core.rules', 'conf'),
    'filters': ('core.rules', 'conf', 'scheduler'),
    'weighers': ('core.rules', 'conf', 'scheduler'),
    'api_validators': ('core.rules',),
    # The tools, each on the core and what the tools share; none on
    # another tool.
    'cli': ('conf',),
    'discover': ('core', 'cli', 'fileutil'),
    'observe': ('core', 'cli', 'fileutil'),
    'doctor': ('core', 'cli', 'conf', 'fileutil'),
    'planner': ('core', 'cli', 'conf', 'fileutil'),
    # The Watcher plugin, in Watcher's decision engine.
    'watcher': ('core', 'conf'),
}
# The median module under this many lines, and none over the most.
MEDIAN_LINES = 200
MOST_LINES = 600


def part(name):
    """The part of the table a dotted module name belongs to, or None."""
    if name == NPF:
        return None
    rest = name[len(NPF) + 1:]
    best = None
    for key in MAY_IMPORT:
        if rest == key or rest.startswith(key + '.'):
            if best is None or len(key) > len(best):
                best = key
    return best


def allowed(source, target):
    if source == target:
        return True
    for may in MAY_IMPORT[source]:
        if target == may or target.startswith(may + '.'):
            return True
    return False


def violations(edges):
    """[(module, imported module)] that cross the layers the wrong way."""
    found = []
    for name, targets in sorted(edges.items()):
        source = part(name)
        if source is None:
            continue
        for target in sorted(targets):
            where = part(target)
            if where is not None and not allowed(source, where):
                found.append((name, target))
    return found


def _package_modules():
    for name, path in sorted(test_imports.modules().items()):
        with open(path, encoding='utf-8') as f:
            lines = f.read().count('\n')
        yield name, path, lines


class LayerTestCase(testtools.TestCase):

    def test_every_part_keeps_to_its_layer(self):
        edges = test_imports.graph(at_import=False)
        self.assertEqual([], violations(edges),
                         'imports across the layers of '
                         'doc/source/architecture.rst')

    def test_every_module_has_a_part(self):
        homeless = [name for name in test_imports.modules()
                    if name not in (NPF, NPF + '.core')
                    and part(name) is None]
        self.assertEqual([], homeless)

    def test_the_check_sees_a_crossing(self):
        # A check that finds nothing on a wrong graph proves nothing.
        edges = {
            NPF + '.core.rules.kinds': {NPF + '.core.formats.hostfile'},
            NPF + '.scheduler.ledger': {NPF + '.core.grammars.sysfs'},
            NPF + '.observe.counters': {NPF + '.discover.runner'},
            NPF + '.planner.model': {NPF + '.doctor.cloud'},
            NPF + '.core.formats.hostfile': {NPF + '.core.rules.kinds'},
            NPF + '.doctor.cloud': {NPF + '.core.plans.rebalance'},
        }
        self.assertEqual(
            [(NPF + '.core.rules.kinds', NPF + '.core.formats.hostfile'),
             (NPF + '.observe.counters', NPF + '.discover.runner'),
             (NPF + '.planner.model', NPF + '.doctor.cloud'),
             (NPF + '.scheduler.ledger', NPF + '.core.grammars.sysfs')],
            violations(edges))


class TempestPluginTestCase(testtools.TestCase):
    """The Tempest plugin judges from the docs, not with the code judged."""

    def test_imports_nothing_of_the_package(self):
        top = paths.of('tempest_plugin')
        found = []
        for dirpath, _dirs, files in os.walk(top):
            for name in sorted(files):
                if not name.endswith('.py'):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding='utf-8') as f:
                    tree = ast.parse(f.read(), path)
                for node in ast.walk(tree):
                    names = []
                    if isinstance(node, ast.Import):
                        names = [a.name for a in node.names]
                    elif isinstance(node, ast.ImportFrom) and node.module:
                        names = [node.module]
                    found.extend((os.path.relpath(path, top), n)
                                 for n in names
                                 if n.split('.')[0] == NPF)
        self.assertEqual([], found)


class ModuleSizeTestCase(testtools.TestCase):
    """Modules a reader can hold: the median small, none too long.

    Every module of the package counts, packages' ``__init__`` too unless
    empty.
    """

    def test_sizes(self):
        sizes = {path: lines for _n, path, lines in _package_modules()
                 if lines}
        self.assertLess(statistics.median(sizes.values()), MEDIAN_LINES)
        over = sorted(os.path.relpath(p, paths.ROOT)
                      for p, n in sizes.items() if n > MOST_LINES)
        self.assertEqual([], over, 'modules over %d lines: split them by '
                         'what each part holds' % MOST_LINES)
