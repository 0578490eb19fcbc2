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
"""The host-profile file: written by discovery, read by planner and doctor."""

import json
import os

import fixtures
import testtools

from nova_pmem_filters.core.formats import discoveredhost

from nova_pmem_filters.core.formats import hostfile
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import profile
from tests.unit import paths

EXAMPLE = paths.of('etc', 'examples', 'fleet',
                   'compute-mm-01.json')


def example():
    with open(EXAMPLE, encoding='utf-8') as f:
        return json.load(f)


class ReadTestCase(testtools.TestCase):

    def test_example(self):
        host = discoveredhost.read(EXAMPLE)
        self.assertEqual(('compute-mm-01', kinds.MEMORY_MODE,
                          kinds.MEMORY_MODE, 512.0, 192.0, 192.0, 2, None),
                         (host.hostname, host.hardware_mode, host.mode,
                          host.visible_memory_gb, host.dram_cache_gb,
                          host.dram_gb, host.sockets, host.cell_cache_gb))
        self.assertEqual(profile.build(kinds.MEMORY_MODE, 192.0),
                         host.profile())
        self.assertEqual({'pmem_mode': 'memory_mode',
                          'pmem_dram_cache_gb': '192'}, host.metadata())
        self.assertEqual(192.0, host.near_memory_gb)
        self.assertEqual(['CUSTOM_PMEM_MODE_MEMORY_MODE'], host.traits)

    def test_per_cell_near_memory(self):
        data = dict(example(), dram_cache_gb_per_cell='0:96,1:96')
        host = discoveredhost.parse(data, 'x.json')
        self.assertEqual(((0, 96.0), (1, 96.0)), host.cell_cache_gb)
        self.assertEqual(host.cell_cache_gb, host.profile().cell_cache_gb)

    def test_bad_per_cell_near_memory_names_the_key(self):
        for raw, rule in (('0:96', 'adds up to 96 GB'),
                          ('0:x', 'is not a list of cell:GB pairs')):
            data = dict(example(), dram_cache_gb_per_cell=raw)
            err = self.assertRaises(hostfile.ProfileError,
                                    discoveredhost.parse, data, 'x.json')
            self.assertIn('x.json: dram_cache_gb_per_cell: ', str(err))
            self.assertIn(rule, str(err))

    def test_near_memory_of_kinds_whose_guest_ram_is_dram(self):
        data = dict(example(), mode='cxl_devdax', scheduler_mode='cxl_devdax',
                    dram_gb=256.0, dram_cache_gb=0.0, visible_memory_gb=256.0)
        host = discoveredhost.parse(data, 'x.json')
        self.assertEqual(0.0, host.dram_cache_gb)
        self.assertEqual(256.0, host.near_memory_gb)
        self.assertEqual({'pmem_mode': 'cxl_devdax'}, host.metadata())

    def test_mixed_is_scheduled_as_memory_mode(self):
        data = dict(example(), mode='mixed')
        host = discoveredhost.parse(data, 'x.json')
        self.assertEqual(['CUSTOM_PMEM_MODE_MIXED',
                          'CUSTOM_PMEM_MODE_MEMORY_MODE'], host.traits)
        self.assertEqual(kinds.MEMORY_MODE, host.profile().mode)

    def test_cpus_are_optional(self):
        # Profiles written before discovery read lscpu have neither key.
        self.assertIsNone(discoveredhost.parse(example(), 'x.json').vcpus)
        cpus = {'sockets': 2, 'cores_per_socket': 24, 'threads_per_core': 2}
        host = discoveredhost.parse(dict(example(), cpus=cpus), 'x.json')
        self.assertEqual(96, host.vcpus)
        # vcpus (lscpu's online CPU count) wins over the product.
        host = discoveredhost.parse(dict(example(), cpus=cpus, vcpus=94),
                                    'x.json')
        self.assertEqual(94, host.vcpus)

    def test_bad_cpus_name_the_key(self):
        cpus = {'sockets': 2, 'cores_per_socket': 0, 'threads_per_core': 2}
        err = self.assertRaises(hostfile.ProfileError, discoveredhost.parse,
                                dict(example(), cpus=cpus), 'x.json')
        self.assertEqual('x.json: cpus.cores_per_socket: expected a positive '
                         'integer, got 0', str(err))

    def test_sockets_must_be_a_list(self):
        err = self.assertRaises(hostfile.ProfileError, discoveredhost.parse,
                                dict(example(), sockets={}), 'x.json')
        self.assertEqual('x.json: sockets: expected a list', str(err))


class WriteTestCase(testtools.TestCase):

    def test_written_file_reads_back(self):
        directory = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(directory, 'compute-mm-01.json')
        hostfile.write(path, example())
        self.assertEqual(discoveredhost.parse(example(), path),
                         discoveredhost.read(path))
        self.assertEqual(['compute-mm-01.json'], os.listdir(directory))
        with open(path, encoding='utf-8') as f:
            self.assertEqual(hostfile.dumps(example()) + '\n', f.read())

    def test_failed_write_names_the_file_and_leaves_nothing(self):
        directory = self.useFixture(fixtures.TempDir()).path
        # A directory where the file should go: the rename fails.
        path = os.path.join(directory, 'host.json')
        os.mkdir(path)
        err = self.assertRaises(hostfile.ProfileError, hostfile.write, path,
                                example())
        self.assertIn('%s: (top level): cannot write the file' % path,
                      str(err))
        self.assertEqual(['host.json'], os.listdir(directory))
        self.assertTrue(os.path.isdir(path))
