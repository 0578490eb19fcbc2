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
"""discover --cxl: where /proc/meminfo and the NUMA nodes disagree, a note.

On a virtual machine ``dram_gb`` (MemTotal of /proc/meminfo) was 23.54 and
``cxl.near_memory_gb`` (the NUMA nodes' MemTotal) 7.59 for the same host,
with nothing to say why. The case ``cxl_vm_sources_disagree`` records it.
"""

import io
import json
import os
import re
import shutil

import fixtures
import testtools

from nova_pmem_filters.discover import cli
from tests.unit import paths

DATA = os.path.join(paths.of('tests', 'unit'), 'discover_cxl_data')
CASE = 'cxl_vm_sources_disagree'
KIB_PER_GIB = 2 ** 20


def discover(directory):
    out, err = io.StringIO(), io.StringIO()
    status = cli.main(['--from', directory, '--cxl', '--json'],
                      stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def memtotal_gib(directory):
    """(/proc/meminfo's MemTotal, the sum of the nodes') in GiB."""
    with open(os.path.join(directory, 'meminfo')) as f:
        total = int(re.search(r'^MemTotal:\s+(\d+) kB', f.read(),
                              re.M).group(1))
    nodes = 0
    for name in os.listdir(directory):
        if re.match(r'^node-\d+-meminfo\.txt$', name):
            with open(os.path.join(directory, name)) as f:
                nodes += int(re.search(r'MemTotal:\s+(\d+) kB',
                                       f.read()).group(1))
    return total / KIB_PER_GIB, nodes / KIB_PER_GIB


def disagreeing(notes):
    return [n for n in notes if 'disagree' in n]


class SourcesTestCase(testtools.TestCase):

    def profile(self, directory):
        status, out, err = discover(directory)
        self.assertEqual(0, status, err)
        self.assertEqual('', err)
        return json.loads(out)

    def test_disagreement_is_noted(self):
        directory = os.path.join(DATA, CASE)
        meminfo, nodes = memtotal_gib(directory)
        prof = self.profile(directory)
        # The two fields the issue saw, each from its source.
        self.assertEqual(round(meminfo, 2), prof['dram_gb'])
        self.assertEqual(round(nodes, 2), prof['cxl']['near_memory_gb'])
        [note] = disagreeing(prof['notes'])
        self.assertIn('MemTotal of /proc/meminfo is %.2f GiB' % meminfo,
                      note)
        self.assertIn('the NUMA nodes (%s) hold %.2f GiB' % (directory,
                                                             nodes), note)
        self.assertIn('cxl.near_memory_gb and cxl.numa_nodes are the '
                      'NUMA nodes\'', note)
        self.assertNotIn('so is dram_gb', note)

    def test_agreeing_sources_have_no_note(self):
        for name in sorted(os.listdir(DATA)):
            if name == CASE:
                continue
            meminfo, nodes = memtotal_gib(os.path.join(DATA, name))
            self.assertAlmostEqual(meminfo, nodes, 6, name)
            self.assertEqual(
                [], disagreeing(self.profile(os.path.join(DATA,
                                                          name))['notes']),
                name)

    def test_disagreement_on_a_cxl_host(self):
        # With CXL in use dram_gb is the nodes' too: the note says so.
        tmp = os.path.join(self.useFixture(fixtures.TempDir()).path, 'kmem')
        shutil.copytree(os.path.join(DATA, 'cxl_kmem'), tmp)
        with open(os.path.join(tmp, 'meminfo'), 'w') as f:
            f.write('MemTotal:       24683724 kB\n')
        meminfo, nodes = memtotal_gib(tmp)
        prof = self.profile(tmp)
        [note] = disagreeing(prof['notes'])
        self.assertIn('%.2f GiB' % meminfo, note)
        self.assertIn('%.2f GiB' % nodes, note)
        self.assertIn('so is dram_gb', note)
        self.assertEqual('cxl_kmem', prof['mode'])

    def test_a_small_difference_is_no_disagreement(self):
        # Within 1% of the larger: no note (SOURCES_TOLERANCE).
        tmp = os.path.join(self.useFixture(fixtures.TempDir()).path, 'none')
        shutil.copytree(os.path.join(DATA, 'cxl_none'), tmp)
        meminfo, nodes = memtotal_gib(tmp)
        with open(os.path.join(tmp, 'meminfo'), 'w') as f:
            f.write('MemTotal:       %d kB\n' % (nodes * KIB_PER_GIB * 1.005))
        self.assertEqual([], disagreeing(self.profile(tmp)['notes']))
