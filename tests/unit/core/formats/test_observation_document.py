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
"""The observation document's module: all of it parsed, and written back.

Each section a reader uses (host, nodes, cells, profile, far memory,
instances) refuses a malformed value with the file and the key; a document
of an earlier version 1 is still read; what the tests' documents
(``tests/unit/obsdocs.py``) hold parses back to the same values. The
observer's own windows are in ``tests/unit/observe/test_roundtrip.py``.
"""

import copy
import json
import os

import fixtures
import hypothesis
from hypothesis import strategies as st
import testtools
import yaml

from nova_pmem_filters.core.formats import observation
from nova_pmem_filters.core.rules import kinds
from tests.unit import hypo
from tests.unit import obsdocs


def document():
    """A document with every section, as the observer writes it."""
    return {
        'schema': observation.SCHEMA, 'hostname': 'compute-mm-01',
        'started': '2026-11-25T12:00:00Z', 'window_s': 60.0,
        'profile': {'pmem_mode': 'memory_mode', 'near_memory_mb': 196608.0,
                    'cells': [{'id': 0, 'near_memory_mb': 98304.0},
                              {'id': 1, 'near_memory_mb': 98304.0}]},
        'nodes': [{'id': 0, 'cpus': True}, {'id': 1, 'cpus': True},
                  {'id': 2, 'cpus': False}],
        'instances': [{
            'uuid': 'u1', 'name': 'instance-00000001', 'flavor': 'm1.redis',
            'flavor_ram_mb': 4096, 'flavor_vcpus': 2, 'pid': 10,
            'declared_hot_ratio': 0.2, 'method': 'damon',
            'working_set_mb': 1024.0, 'hot_ratio': 0.25,
            'numa_mb': {'0': 3072.0, '2': 1024.0}, 'cell': 0, 'gap': None}],
        'host': {'working_set_mb': 1024.0, 'near_memory_mb': 196608.0,
                 'cells': [{'id': 0, 'working_set_mb': 1024.0,
                            'near_memory_mb': 98304.0},
                           {'id': 1, 'working_set_mb': 0,
                            'near_memory_mb': 98304.0}]},
        'far_memory': {'media_read_mb_per_s': 1.0,
                       'media_write_mb_per_s': 0.5,
                       'promote_pages_per_s': None,
                       'demote_pages_per_s': None},
        'gaps': []}


def changed(path, value):
    """document() with the value at ``path`` (keys, indexes) replaced.

    ``...`` as the value deletes the key.
    """
    doc = copy.deepcopy(document())
    item = doc
    for key in path[:-1]:
        item = item[key]
    if value is Ellipsis:
        del item[path[-1]]
    else:
        item[path[-1]] = value
    return doc


def _mb(nullable=True):
    values = st.one_of(st.integers(0, 2 ** 40),
                       st.floats(0.0, 1e9, allow_nan=False))
    return st.one_of(st.none(), values) if nullable else values


_ID = st.integers(0, 64)
_TEXT = st.text(min_size=1, max_size=12)


def _maybe(strategy):
    return st.one_of(st.none(), strategy)


# Any document the format allows: what a writer may build.
DOCUMENTS = st.builds(
    observation.Observation,
    hostname=_TEXT,
    started=st.integers(0, 2 ** 34).map(observation.format_started),
    window_s=_mb(False),
    profile=_maybe(st.builds(
        observation.Profile, pmem_mode=st.sampled_from(kinds.HARDWARE_MODES),
        near_memory_mb=_mb(),
        cells=st.lists(st.builds(observation.ProfileCell, id=_ID,
                                 near_memory_mb=_mb(False)),
                       max_size=3).map(tuple))),
    nodes=st.lists(st.builds(observation.Node, id=_ID, cpus=st.booleans()),
                   max_size=4).map(tuple),
    instances=st.lists(st.builds(
        observation.Instance, uuid=_TEXT, name=_maybe(_TEXT),
        flavor=_maybe(_TEXT), flavor_ram_mb=_mb(), flavor_vcpus=_maybe(_ID),
        pid=_maybe(_ID),
        declared_hot_ratio=_maybe(st.floats(0.0, 1.0, exclude_min=True)),
        method=st.sampled_from((None,) + observation.METHODS),
        working_set_mb=_mb(), hot_ratio=_mb(),
        numa_mb=st.dictionaries(_ID, _mb(False), max_size=3),
        cell=_maybe(_ID), gap=_maybe(_TEXT)), max_size=3).map(tuple),
    host=st.builds(observation.Host, working_set_mb=_mb(),
                   near_memory_mb=_mb(),
                   cells=st.lists(st.builds(
                       observation.HostCell, id=_ID, working_set_mb=_mb(),
                       near_memory_mb=_mb()), max_size=3).map(tuple)),
    far_memory=st.builds(observation.FarMemory, media_read_mb_per_s=_mb(),
                         media_write_mb_per_s=_mb(),
                         promote_pages_per_s=_mb(),
                         demote_pages_per_s=_mb()),
    gaps=st.lists(st.text(max_size=20), max_size=3).map(tuple))


class RoundTripTestCase(testtools.TestCase):

    @hypo.settings(200)
    @hypothesis.given(DOCUMENTS)
    def test_any_document_reads_back(self, doc):
        written = observation.dumps(doc)
        back = observation.parse(json.loads(written), 'obs.json')
        self.assertEqual(doc, back)
        self.assertEqual(written, observation.dumps(back))
        # -f yaml: the same document, the same key order.
        data = yaml.safe_load(observation.dumps_yaml(doc))
        self.assertEqual(json.loads(written), data)
        self.assertEqual(list(json.loads(written)), list(data))

    def test_typed_fields(self):
        doc = observation.parse(document(), 'obs.json')
        self.assertEqual(98304.0, doc.profile.cells[1].near_memory_mb)
        self.assertEqual(frozenset([2]), doc.cpuless_nodes)
        self.assertEqual({0: 3072.0, 2: 1024.0}, doc.instances[0].numa_mb)
        self.assertEqual(0, doc.host.cells[1].working_set_mb)
        self.assertEqual(0.5, doc.far_memory.media_write_mb_per_s)
        self.assertEqual(1795608000.0, doc.started_time)
        self.assertEqual(doc.started,
                         observation.format_started(doc.started_time))

    def test_the_same_values_and_bytes(self):
        data = document()
        doc = observation.parse(data, 'obs.json')
        self.assertEqual(data, doc.to_dict())
        self.assertEqual(json.dumps(data, indent=2) + '\n',
                         observation.dumps(doc))
        self.assertEqual(doc, observation.checked(doc, 'obs.json'))

    def test_the_test_documents(self):
        # What obsdocs builds for the doctor's and the planner's tests.
        docs = [
            obsdocs.document('h1', [
                obsdocs.instance('a', 'm1.db', 8192, 0.2),
                obsdocs.instance('b', 'm1.db', 8192, 0.6, cell=None,
                                 numa_mb={})]),
            obsdocs.document('h2', [], near_memory_mb=16000.0, cells=[
                {'id': 0, 'working_set_mb': 0.0, 'near_memory_mb': 8000.0}],
                nodes=[{'id': 0, 'cpus': True}, {'id': 1, 'cpus': False}]),
        ]
        tmp = self.useFixture(fixtures.TempDir()).path
        obsdocs.write(tmp, docs)
        self.assertEqual(docs, observation.load(tmp))
        for doc in docs:
            self.assertEqual(doc, observation.parse(
                json.loads(observation.dumps(doc)), 'obs.json'))

    def test_an_earlier_version_1_is_read(self):
        # Before declared_hot_ratio, and a reader's minimum: the sections
        # a file lacks read as null (or empty).
        data = changed(['instances', 0, 'declared_hot_ratio'], Ellipsis)
        for key in ('profile', 'nodes', 'host', 'far_memory', 'gaps'):
            del data[key]
        doc = observation.parse(data, 'old.json')
        self.assertIsNone(doc.instances[0].declared_hot_ratio)
        self.assertIsNone(doc.profile)
        self.assertEqual((), doc.nodes)
        self.assertEqual(observation.Host(), doc.host)
        self.assertEqual(observation.FarMemory(), doc.far_memory)
        self.assertEqual((), doc.gaps)
        # Written back, it is the current form, and reads the same.
        self.assertEqual(doc, observation.parse(doc.to_dict(), 'new.json'))

    def test_unknown_keys_are_ignored(self):
        data = document()
        data['later'] = {'x': 1}
        data['host']['cells'][0]['later'] = 'y'
        self.assertEqual(observation.parse(document(), 'a.json'),
                         observation.parse(data, 'a.json'))


class MalformedTestCase(testtools.TestCase):
    """A bad value of each section is refused naming the file and key."""

    def assertRefused(self, path, value, words=()):
        exc = self.assertRaises(observation.ObservationError,
                                observation.parse, changed(path, value),
                                'obs.json')
        where = 'obs.json' + ''.join('[%s]' % json.dumps(k) for k in path)
        self.assertTrue(str(exc).startswith(where + ': '), str(exc))
        self.assertEqual(list(path), exc.keys)
        for word in words:
            self.assertIn(word, str(exc))

    def test_host(self):
        self.assertRefused(['host', 'working_set_mb'], 'lots',
                           ['expected a number'])
        self.assertRefused(['host', 'near_memory_mb'], -1.0)
        self.assertRefused(['host', 'near_memory_mb'], True)
        self.assertRefused(['host'], [], ['expected an object'])
        self.assertRefused(['host', 'cells'], {}, ['expected a list'])

    def test_host_cells(self):
        self.assertRefused(['host', 'cells', 0, 'near_memory_mb'], 'a lot',
                           ['expected a number 0.0 or more or null',
                            '"a lot"'])
        self.assertRefused(['host', 'cells', 1, 'working_set_mb'],
                           float('inf'))
        self.assertRefused(['host', 'cells', 0, 'id'], None,
                           ['expected a whole number'])
        self.assertRefused(['host', 'cells', 0, 'id'], 0.5)
        self.assertRefused(['host', 'cells', 1], 'cell 1',
                           ['expected an object'])

    def test_nodes(self):
        self.assertRefused(['nodes', 2, 'cpus'], 'no',
                           ['expected true or false'])
        self.assertRefused(['nodes', 2, 'cpus'], Ellipsis)
        self.assertRefused(['nodes', 0, 'id'], '0',
                           ['expected a whole number'])
        self.assertRefused(['nodes', 0, 'id'], -1)
        self.assertRefused(['nodes'], {'0': True}, ['expected a list'])

    def test_profile_and_its_cells(self):
        self.assertRefused(['profile', 'pmem_mode'], 'turbo',
                           ['expected one of dram, memory_mode'])
        self.assertRefused(['profile', 'near_memory_mb'], '192G')
        self.assertRefused(['profile', 'cells', 0, 'near_memory_mb'], None)
        self.assertRefused(['profile', 'cells', 1, 'id'], 'one')
        self.assertRefused(['profile'], 'memory_mode', ['expected an object'])

    def test_far_memory(self):
        self.assertRefused(['far_memory', 'promote_pages_per_s'], '100/s')
        self.assertRefused(['far_memory', 'media_read_mb_per_s'], -2.0)
        self.assertRefused(['far_memory'], 12.5, ['expected an object'])

    def test_instances(self):
        for key, value in (('uuid', ''), ('name', 3), ('flavor', []),
                           ('flavor_vcpus', 2.5), ('pid', '10'),
                           ('cell', -1), ('gap', False),
                           ('method', 'guess'), ('working_set_mb', 'x'),
                           ('declared_hot_ratio', 0.0)):
            self.assertRefused(['instances', 0, key], value)
        self.assertRefused(['instances', 0, 'numa_mb'], {'node0': 1.0},
                           ['NUMA node ids'])
        self.assertRefused(['instances', 0, 'numa_mb', '2'], 'x')

    def test_top_level(self):
        self.assertRefused(['started'], '25/11/2026 12:00',
                           ['expected a UTC time'])
        self.assertRefused(['hostname'], None)
        self.assertRefused(['window_s'], Ellipsis)
        self.assertRefused(['instances'], Ellipsis, ['expected a list'])
        self.assertRefused(['gaps'], 'none', ['expected a list of strings'])

    def test_a_file_names_itself(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(tmp, 'mm1.json')
        with open(path, 'w') as f:
            json.dump(changed(['host', 'cells', 0, 'near_memory_mb'], 'x'),
                      f)
        exc = self.assertRaises(observation.ObservationError,
                                observation.load, tmp)
        self.assertTrue(str(exc).startswith(
            path + '["host"]["cells"][0]["near_memory_mb"]: expected a '
            'number'), str(exc))
