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
"""The observation file and the rules its readers share."""

import json
import os

import fixtures
import hypothesis
from hypothesis import strategies as st
import testtools

from nova_pmem_filters.core.formats import observation

from nova_pmem_filters.core.plans import hotratio


def document(**changes):
    doc = {
        'schema': observation.SCHEMA, 'hostname': 'compute-mm-01',
        'started': '2026-11-25T12:00:00Z', 'window_s': 60.0,
        'profile': None, 'nodes': [{'id': 0, 'cpus': True}],
        'instances': [{
            'uuid': 'u1', 'name': 'instance-00000001', 'flavor': 'm1.redis',
            'flavor_ram_mb': 4096, 'flavor_vcpus': 2, 'pid': 10,
            'method': 'reference_bits', 'working_set_mb': 1024.0,
            'hot_ratio': 0.25, 'numa_mb': {'0': 4000.0}, 'cell': 0,
            'gap': None}],
        'host': {'working_set_mb': 1024.0, 'near_memory_mb': None,
                 'cells': []},
        'far_memory': {}, 'gaps': []}
    doc.update(changes)
    return doc


class ParseTestCase(testtools.TestCase):

    def test_a_document_passes(self):
        doc = document()
        found = observation.parse(doc, 'obs.json')
        self.assertIsInstance(found, observation.Observation)
        self.assertEqual('compute-mm-01', found.hostname)
        self.assertEqual({0: 4000.0}, found.instances[0].numa_mb)
        # Missing far-memory keys read as null.
        self.assertEqual(observation.FarMemory(), found.far_memory)

    def test_bad_input_names_file_and_key(self):
        inst = dict(document()['instances'][0])
        for doc, where in (
                (document(schema='nova-pmem-observation/9'), '["schema"]'),
                (document(window_s=-1), '["window_s"]'),
                (document(window_s=float('nan')), '["window_s"]'),
                (document(instances={}), '["instances"]'),
                (document(instances=[dict(inst, method='guess')]),
                 '["instances"][0]["method"]'),
                (document(instances=[dict(inst, hot_ratio='high')]),
                 '["instances"][0]["hot_ratio"]'),
                (document(instances=[dict(inst, numa_mb={'0': -5})]),
                 '["instances"][0]["numa_mb"]["0"]'),
                (document(instances=[dict(inst, declared_hot_ratio=1.5)]),
                 '["instances"][0]["declared_hot_ratio"]'),
                (document(gaps=[3]), '["gaps"]')):
            exc = self.assertRaises(observation.ObservationError,
                                    observation.parse, doc, 'obs.json')
            self.assertTrue(str(exc).startswith('obs.json' + where),
                            str(exc))

    def test_a_gap_has_no_number(self):
        inst = dict(document()['instances'][0], method=None,
                    working_set_mb=None, hot_ratio=None,
                    gap='the process exited during the window')
        doc = observation.parse(document(instances=[inst]), 'obs.json')
        self.assertEqual([], list(hotratio.measured([doc])))

    def test_load_reads_a_directory_in_name_order(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        for name, host in (('b.json', 'h2'), ('a.json', 'h1')):
            with open(os.path.join(tmp, name), 'w') as f:
                json.dump(document(hostname=host), f)
        self.assertEqual(['h1', 'h2'], [d.hostname for d in
                                        observation.load(tmp)])
        with open(os.path.join(tmp, 'c.json'), 'w') as f:
            f.write('{"schema": ')
        exc = self.assertRaises(observation.ObservationError,
                                observation.load, tmp)
        self.assertIn('c.json: not valid JSON', str(exc))
        empty = self.useFixture(fixtures.TempDir()).path
        exc = self.assertRaises(observation.ObservationError,
                                observation.load, empty)
        self.assertIn('no *.json observation', str(exc))


class RecommendTestCase(testtools.TestCase):

    def test_by_hand(self):
        # 20 instances: 19 at 0.3 and one at 0.9. The 95th percentile sits
        # at position 0.95 x 19 = 18.05, between 0.3 and 0.9:
        # 0.3 + 0.05 x 0.6 = 0.33, rounded up to 0.35.
        self.assertEqual(0.35, hotratio.recommend([0.3] * 19 + [0.9]))
        self.assertEqual(0.15, hotratio.recommend([0.1, 0.12, 0.149]))
        self.assertEqual(0.05, hotratio.recommend([0.0]))
        self.assertEqual(1.0, hotratio.recommend([1.3]))
        self.assertTrue(hotratio.under_declared(0.2, [0.1, 0.25]))
        self.assertFalse(hotratio.under_declared(0.35,
                                                 [0.3] * 19 + [0.9]))

    @hypothesis.settings(derandomize=True, deadline=None, database=None)
    @hypothesis.given(st.lists(st.floats(0.0, 1.0), min_size=1,
                               max_size=50))
    def test_covers_nineteen_in_twenty(self, ratios):
        value = hotratio.recommend(ratios)
        self.assertGreaterEqual(value + 1e-9,
                                hotratio.quantile(ratios, 0.95))
        # On the grid of 0.05 steps, and less than a step above the p95.
        self.assertAlmostEqual(0.0, (value / 0.05) - round(value / 0.05))
        self.assertLess(value - max(hotratio.quantile(ratios, 0.95),
                                    0.05), 0.05 + 1e-9)
        self.assertFalse(hotratio.under_declared(value, ratios))


class ByFlavorTestCase(testtools.TestCase):

    def test_instances_windows_and_ratios(self):
        def inst(uuid, flavor, ratio):
            return dict(document()['instances'][0], uuid=uuid,
                        flavor=flavor, hot_ratio=ratio)
        gap = dict(inst('u9', 'big', None), method=None, gap='exited')
        docs = [observation.parse(doc, 'obs.json') for doc in (
            document(instances=[inst('u1', 'small', 0.1),
                                inst('u2', 'small', 0.3),
                                inst('u3', 'big', 0.6), gap]),
            document(hostname='h2', instances=[inst('u1', 'small', 0.2),
                                               inst('u4', None, 0.9)]),
            document(hostname='h3', instances=[]))]
        found = hotratio.by_flavor(docs)
        self.assertEqual(['big', 'small'], list(found))
        small = found['small']
        # u1 twice (two windows) and u2 once: 3 ratios of 2 instances in
        # 2 documents; the instance of no flavor does not count.
        self.assertEqual((0.1, 0.3, 0.2), small.ratios)
        self.assertEqual((2, 2), (small.instances, small.windows))
        # p95 of 0.1, 0.2, 0.3: 0.2 + 0.9 x 0.1 = 0.29, up to 0.3.
        self.assertEqual(0.3, small.recommended)
        self.assertEqual(((0.6,), 1, 1), (found['big'].ratios,
                                          found['big'].instances,
                                          found['big'].windows))
        self.assertEqual({}, hotratio.by_flavor([]))
