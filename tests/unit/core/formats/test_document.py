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

import copy
import dataclasses
import json
import os
import pickle
import tempfile

import testtools

from nova_pmem_filters.core.formats import document
from nova_pmem_filters.core.formats import hostfile
from nova_pmem_filters.core.formats import observation
from nova_pmem_filters.core.formats import providerconfig


class _Error(document.DocumentError):
    pass


class _Part(document.Document):
    error = _Error


@dataclasses.dataclass(frozen=True)
class Disk(_Part):
    name: str = document.key(document.text(), required=True)
    size_gb: float = document.key(document.number(
        'a number of GB >= 0', least=0, convert=float))


@dataclasses.dataclass(frozen=True)
class Machine(_Part):
    schema: str = document.key(document.exactly('machine/1'),
                               required=True, default='machine/1')
    hostname: str = document.key(document.text(), required=True)
    cores: int = document.key(document.nullable(document.whole(
        'a positive integer or null', least=1)))
    kind: str = document.key(document.choice(('big', 'small')))
    disks: tuple = document.key(document.objects(Disk))
    boot: Disk = document.key(document.object_of(Disk))
    tags: tuple = document.key(document.list_of(document.text()))


@dataclasses.dataclass(frozen=True)
class Reading(_Part):
    """A part whose missing keys read as null, as observations do."""

    missing = None

    value: float = document.key(document.nullable(document.number(
        'a number or null')))
    notes: tuple = document.key(document.list_of(document.text()),
                                default_factory=tuple, missing=[])


def machine(**changes):
    data = {'schema': 'machine/1', 'hostname': 'h1', 'cores': 8,
            'kind': 'big',
            'disks': [{'name': 'sda', 'size_gb': 100.0},
                      {'name': 'sdb', 'size_gb': 0.5}],
            'boot': {'name': 'sda'}, 'tags': ['a', 'b']}
    data.update(changes)
    return data


class ReadWriteTestCase(testtools.TestCase):

    def test_reads_every_key(self):
        found = Machine.from_document(machine(), 'm.json', 'machine/1')
        self.assertEqual(
            Machine(hostname='h1', cores=8, kind='big',
                    disks=(Disk(name='sda', size_gb=100.0),
                           Disk(name='sdb', size_gb=0.5)),
                    boot=Disk(name='sda'), tags=('a', 'b')), found)
        self.assertIsInstance(found.disks[0].size_gb, float)

    def test_writes_back_the_same_json_in_key_order(self):
        data = machine()
        found = Machine.from_dict(data, 'm.json')
        self.assertEqual(data, found.to_dict())
        self.assertEqual(json.dumps(data), json.dumps(found.to_dict()))

    def test_keys_in_order(self):
        self.assertEqual(('schema', 'hostname', 'cores', 'kind', 'disks',
                          'boot', 'tags'), document.keys(Machine))

    def test_unknown_keys_are_ignored(self):
        found = Machine.from_dict(machine(later=1), 'm.json')
        self.assertNotIn('later', found.to_dict())

    def test_lists_given_are_kept_as_tuples(self):
        self.assertEqual(('x',), Machine(hostname='h', tags=['x']).tags)


class AbsentTestCase(testtools.TestCase):

    def test_absent_stays_absent(self):
        data = machine()
        del data['cores'], data['boot']
        found = Machine.from_dict(data, 'm.json')
        self.assertIs(document.ABSENT, found.cores)
        self.assertIs(document.ABSENT, found.boot)
        self.assertEqual(data, found.to_dict())
        self.assertNotIn('cores', found.to_dict())

    def test_null_is_not_absent(self):
        found = Machine.from_dict(machine(cores=None), 'm.json')
        self.assertIsNone(found.cores)
        self.assertIsNone(found.to_dict()['cores'])

    def test_given(self):
        self.assertEqual(3, document.given(document.ABSENT, 3))
        self.assertIsNone(document.given(document.ABSENT))
        self.assertIsNone(document.given(None, 3))
        self.assertFalse(document.ABSENT)

    def test_absent_is_one(self):
        self.assertIs(document.ABSENT, copy.deepcopy(document.ABSENT))
        self.assertIs(document.ABSENT,
                      pickle.loads(pickle.dumps(document.ABSENT)))
        self.assertIs(hostfile.ABSENT, document.ABSENT)

    def test_missing_reads_as_null(self):
        found = Reading.from_dict({}, 'r.json')
        self.assertEqual(Reading(value=None, notes=()), found)
        self.assertEqual({'value': None, 'notes': []}, found.to_dict())

    def test_missing_per_key(self):
        self.assertRaisesRegex(_Error, r'^r\.json: notes: expected a list$',
                               Reading.from_dict, {'notes': None},
                               'r.json')


class ErrorTestCase(testtools.TestCase):

    def refused(self, data, source='m.json'):
        return self.assertRaises(_Error, Machine.from_dict, data, source)

    def test_names_the_file_and_the_key(self):
        exc = self.refused(machine(disks=[{'name': 'sda'},
                                          {'name': 'sdb', 'size_gb': -1}]))
        self.assertEqual('m.json', exc.source)
        self.assertEqual(['disks', 1, 'size_gb'], exc.path)
        self.assertEqual('expected a number of GB >= 0, got -1', exc.rule)
        self.assertEqual('m.json: disks.1.size_gb: expected a number of '
                         'GB >= 0, got -1', str(exc))

    def test_required(self):
        data = machine()
        del data['hostname']
        self.assertEqual('m.json: hostname: missing', str(self.refused(data)))

    def test_not_an_object(self):
        self.assertEqual('m.json: boot: expected an object',
                         str(self.refused(machine(boot=[]))))
        self.assertEqual('m.json: (top level): expected an object',
                         str(self.refused([])))

    def test_checks(self):
        for changes, message in (
                ({'cores': 0}, 'cores: expected a positive integer or null, '
                 'got 0'),
                ({'cores': True}, 'cores: expected a positive integer or '
                 'null, got true'),
                ({'kind': 'huge'}, 'kind: "huge" is not one of big, small'),
                ({'hostname': ''}, 'hostname: expected a non-empty string, '
                 'got ""'),
                ({'tags': ['a', 7]}, 'tags.1: expected a non-empty string, '
                 'got 7'),
                ({'tags': 'a'}, 'tags: expected a list'),
                ({'disks': [{'name': 'x', 'size_gb': float('nan')}]},
                 'disks.0.size_gb: expected a number of GB >= 0, got NaN'),
                ({'schema': 'machine/2'}, 'schema: expected "machine/1", '
                 'got "machine/2"')):
            self.assertEqual('m.json: ' + message,
                             str(self.refused(machine(**changes))))

    def test_whole_document(self):
        self.assertRaisesRegex(
            _Error, r'^m\.json: \(top level\): expected a JSON object$',
            Machine.from_document, [], 'm.json', 'machine/1')
        self.assertRaisesRegex(
            _Error, r'^m\.json: schema: expected "machine/1", got null$',
            Machine.from_document, {}, 'm.json', 'machine/1')

    def test_item_in_source(self):
        check = document.objects(Disk, item_in_source=True)
        with document.raised_as(_Error):
            exc = self.assertRaises(_Error, check, [{'name': 'a'}, {}],
                                    'm.json', ['disks'])
        self.assertEqual(('m.json: disks.1', ['name']),
                         (exc.source, exc.path))

    def test_raised_as_shows_values_as_the_error_does(self):
        class Short(document.DocumentError):
            @classmethod
            def shown(cls, value):
                return json.dumps(value)[:5]

        check = document.whole('an integer >= 0')
        with testtools.ExpectedException(
                Short, r'^f: n: expected an integer >= 0, got "abcd$'):
            with document.raised_as(Short):
                check('abcdefgh', 'f', ['n'])

    def test_one_line(self):
        self.assertEqual('f: a.0: two lines',
                         str(document.DocumentError('f', ['a', 0],
                                                    'two\nlines')))

    def test_documents_subclass_it(self):
        for error in (hostfile.ProfileError, observation.ObservationError,
                      providerconfig.ProviderConfigError):
            self.assertTrue(issubclass(error, document.DocumentError))
        exc = observation.ObservationError('o.json', ['instances', 0],
                                           'bad')
        self.assertEqual('o.json["instances"][0]: bad', str(exc))
        self.assertEqual(['instances', 0], exc.keys)


class FilesTestCase(testtools.TestCase):

    def test_read_json(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'a.json')
            with open(path, 'w') as f:
                f.write('{"x": 1}')
            self.assertEqual({'x': 1}, document.read_json(path, _Error))
            self.assertEqual([path], document.json_files(tmp, _Error, 'm'))
            with open(path, 'w') as f:
                f.write('{')
            self.assertRaisesRegex(_Error, 'not valid JSON',
                                   document.read_json, path, _Error)
            self.assertRaisesRegex(_Error, r'cannot read the file',
                                   document.read_json,
                                   os.path.join(tmp, 'b.json'), _Error)

    def test_json_files(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.assertRaisesRegex(
                _Error, r': \(top level\): no \*\.json machine in the '
                'directory$', document.json_files, tmp, _Error, 'machine')
            self.assertRaisesRegex(
                _Error, r': \(top level\): not a directory$',
                document.json_files, os.path.join(tmp, 'x'), _Error, 'm')
