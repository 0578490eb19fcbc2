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
"""The host-profile document: its keys, its version, older and later files.

The public contract (doc/source/host-profile-format.rst): the document is
only ever extended, so readers keep reading the files older versions of
``nova-pmem-discover`` wrote, and ignore the keys of later ones.
"""

import copy
import dataclasses
import glob
import json

import testtools

from nova_pmem_filters.core.formats import discoveredhost

from nova_pmem_filters.core.formats import hostfile
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import placement
from nova_pmem_filters.core.rules import profile
from tests.unit.crosscut import test_document_roundtrip
from tests.unit import paths

PAGE = paths.of('doc', 'source', 'host-profile-format.rst')
FLEET = paths.of('etc', 'examples', 'fleet')

# The keys of the first version 1, in order.
FIRST_KEYS = ('schema', 'hostname', 'mode', 'scheduler_mode',
              'memory_mode_percent', 'dram_gb', 'pmem_gb',
              'visible_memory_gb', 'dram_cache_gb', 'app_direct_gb',
              'sockets', 'dimms', 'regions', 'namespaces', 'notes')
# What version 1 gained since, at the top level and in its objects.
LATER_KEYS = ('near_memory_mb', 'cxl', 'vcpus', 'cpus', 'numa_nodes',
              'dram_cache_gb_per_cell', 'kernel_tiering')
LATER_NAMESPACE_KEYS = ('socket',)

ENTRIES = (hostfile.Document, hostfile.SocketEntry, hostfile.DimmEntry,
           hostfile.RegionEntry, hostfile.NamespaceEntry,
           hostfile.NumaNodeEntry, hostfile.Cpus, hostfile.Cxl,
           hostfile.CxlMemdev, hostfile.CxlRegion, hostfile.CxlDecoder,
           hostfile.CxlDaxDevice, hostfile.CxlNumaNode, hostfile.CxlTierNode,
           hostfile.KernelTiering, hostfile.MemoryTier)


def written():
    """(name, document) of each profile written of the recorded hosts."""
    found = []
    for name, directory, with_cxl in test_document_roundtrip.recorded():
        for numa in (False, True):
            found.append(('%s%s' % (name, ' --numa' if numa else ''),
                          json.loads(test_document_roundtrip.run(
                              directory, with_cxl, numa))))
    return found


def as_first_version(data):
    """``data`` as the first version 1 wrote it: without the later keys."""
    old = {key: copy.deepcopy(value) for key, value in data.items()
           if key not in LATER_KEYS}
    for ns in old['namespaces']:
        for key in LATER_NAMESPACE_KEYS:
            ns.pop(key, None)
    return old


class KeysTestCase(testtools.TestCase):

    def test_version(self):
        self.assertEqual('nova-pmem-host-profile/%d' % hostfile.VERSION,
                         hostfile.SCHEMA)
        with open(PAGE) as f:
            text = f.read()
        self.assertIn('version %d' % hostfile.VERSION, text.splitlines()[1])
        self.assertIn('"schema": "%s"' % hostfile.SCHEMA, text)

    def test_only_extended(self):
        # The first version's keys first, in their order; what came later
        # after them.
        self.assertEqual(FIRST_KEYS + LATER_KEYS,
                         hostfile.keys(hostfile.Document))

    def test_every_key_is_documented(self):
        with open(PAGE) as f:
            text = f.read()
        for entry in ENTRIES:
            for key in hostfile.keys(entry):
                self.assertIn('"%s"' % key, text, (entry.__name__, key))

    def test_writers_cannot_add_a_key(self):
        self.assertRaises(TypeError, hostfile.SocketEntry, cache_gb=1.0)


class OlderFilesTestCase(testtools.TestCase):
    """Files of older versions of nova-pmem-discover keep reading."""

    def test_fleet_examples(self):
        paths_ = sorted(glob.glob(FLEET + '/*.json'))
        self.assertTrue(paths_)
        for path in paths_:
            with open(path) as f:
                data = json.load(f)
            self.assertTrue(set(data) <= set(FIRST_KEYS), path)
            doc = hostfile.parse_document(data, path)
            self.assertEqual(data, hostfile.to_dict(doc))
            host = discoveredhost.read(path)
            self.assertIsNone(host.recorded_near_memory_mb)
            self.assertEqual(placement.host_near_memory_mb(
                host.near_memory_gb), host.host_near_memory_mb)

    def test_smallest_file(self):
        # What the planner's tests and the integration deployment write.
        data = {'schema': hostfile.SCHEMA, 'hostname': 'mm1',
                'mode': kinds.MEMORY_MODE,
                'scheduler_mode': kinds.MEMORY_MODE,
                'visible_memory_gb': 512.0, 'dram_cache_gb': 192.0}
        doc = hostfile.parse_document(data, 'mm1.json')
        self.assertEqual(data, hostfile.to_dict(doc))
        self.assertIs(hostfile.ABSENT, doc.sockets)
        host = discoveredhost.parse(data, 'mm1.json')
        self.assertEqual((None, None, None, 196608),
                         (host.dram_gb, host.sockets, host.vcpus,
                          host.host_near_memory_mb))

    def test_every_written_profile_as_the_first_version_wrote_it(self):
        for name, data in written():
            with self.subTest(host=name):
                self._first_version(name, data)

    def _first_version(self, name, data):
        now = discoveredhost.parse(data, name)
        old_data = as_first_version(data)
        doc = hostfile.parse_document(old_data, name)
        self.assertEqual(old_data, hostfile.to_dict(doc))
        old = discoveredhost.parse(old_data, name)
        # The same host, but what only the later keys say.
        self.assertEqual(
            dataclasses.replace(now, vcpus=None, cell_cache_gb=None,
                                recorded_near_memory_mb=None,
                                cell_ids=old.cell_ids, sockets=old.sockets,
                                kernel_tiering=None, tiering_entry=None),
            old)
        # Placement is told of the same near memory, to the rounding of
        # the GB figures (0.005 GB).
        self.assertLessEqual(
            abs(old.host_near_memory_mb - now.host_near_memory_mb),
            0.005 * profile.MB_PER_GB + 1)
        self.assertEqual(now.metadata()[profile.MODE_KEY],
                         old.metadata()[profile.MODE_KEY])
        if now.mode in kinds.TIERED:
            self.assertEqual(now.metadata()[profile.DRAM_CACHE_KEY],
                             old.metadata()[profile.DRAM_CACHE_KEY])


class LaterFilesTestCase(testtools.TestCase):
    """Keys a later version adds are ignored, wherever they are."""

    def test_unknown_keys_are_ignored(self):
        for name, data in written():
            with self.subTest(host=name):
                later = copy.deepcopy(data)
                later['cooling'] = {'liquid': True}
                for entry in (later['sockets'] + later['namespaces']
                              + later.get('numa_nodes', [])):
                    entry['bandwidth_gbps'] = 100.0
                if 'cxl' in later:
                    later['cxl']['switches'] = []
                    for node in later['cxl']['numa_nodes']:
                        node['distance'] = [10, 20]
                self.assertEqual(hostfile.parse_document(data, name),
                                 hostfile.parse_document(later, name))
                self.assertEqual(discoveredhost.parse(data, name),
                                 discoveredhost.parse(later, name))


class ErrorsTestCase(testtools.TestCase):
    """Every key is checked; the message names the file and the key."""

    def test_errors_name_the_key(self):
        data = dict(written())['cxl_kmem --numa']
        cases = [
            (lambda d: d['cxl']['memdevs'][0].update(ram_gb='256'),
             'x.json: cxl.memdevs.0: ram_gb: expected a non-negative '
             'number of GB, got "256"'),
            (lambda d: d['cxl'].update(kind='cxl'),
             'x.json: cxl.kind: "cxl" is not one of cxl_flat, cxl_kmem, '
             'cxl_devdax'),
            (lambda d: d['numa_nodes'][0].update(sockets=['0']),
             'x.json: numa_nodes.0: sockets.0: expected an integer >= 0, '
             'got "0"'),
            (lambda d: d.update(near_memory_mb=521472.5),
             'x.json: near_memory_mb: expected an integer >= 0, got '
             '521472.5'),
            (lambda d: d.update(notes='none'),
             'x.json: notes: expected a list'),
            (lambda d: d['cxl']['numa_nodes'][2].update(tier='yes'),
             'x.json: cxl.numa_nodes.2: tier: expected true or false, got '
             '"yes"'),
        ]
        for change, message in cases:
            bad = copy.deepcopy(data)
            change(bad)
            err = self.assertRaises(hostfile.ProfileError,
                                    discoveredhost.parse, bad, 'x.json')
            self.assertEqual(message, str(err))


class ProviderConfigOfOlderFilesTestCase(testtools.TestCase):

    def test_host_without_exact_near_memory(self):
        host = discoveredhost.read(FLEET + '/compute-mm-01.json')
        inventory = placement.near_memory_inventory(
            host.mode, total_mb=host.host_near_memory_mb)
        self.assertEqual(192 * 1024, inventory[placement.TOTAL])
