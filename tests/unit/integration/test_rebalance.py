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
"""The pure parts of the integration deployment's Watcher scenario.

tests/integration/observers.py builds an observation document from what
Nova lists on a host and the scenario's working-set table, exported by the
observer's own code; tests/integration/rebalance.py reads Watcher's
actions and the scheduler's log. The scenario itself runs only against the
deployment (run.sh --only watcher).
"""

import os

import fixtures
from prometheus_client import parser
import testtools

from nova_pmem_filters.observe import prometheus
from tests.integration import observers
from tests.integration import rebalance


def server(uuid, ram=32768, hot_ratio='0.25'):
    return {'id': uuid, 'OS-EXT-SRV-ATTR:instance_name': 'instance-' + uuid,
            'flavor': {'original_name': 'it.ws', 'ram': ram, 'vcpus': 2,
                       'extra_specs': {'pmem:hot_ratio': hot_ratio}}}


class TestObserverDocument(testtools.TestCase):

    def test_measured_and_unmeasured_instances(self):
        doc = observers.document(
            'mm1', 'memory_mode', 196608.0,
            [server('a'), server('b'), server('c')],
            {'a': 81920.0, 'b': 71680.0})
        self.assertEqual('mm1', doc.hostname)
        self.assertEqual(153600.0, doc.host.working_set_mb)
        self.assertEqual(196608.0, doc.host.near_memory_mb)
        by_uuid = {i.uuid: i for i in doc.instances}
        self.assertEqual(2.5, by_uuid['a'].hot_ratio)
        self.assertEqual(0.25, by_uuid['a'].declared_hot_ratio)
        self.assertIsNone(by_uuid['c'].working_set_mb)
        self.assertEqual('not in the working-set table', by_uuid['c'].gap)
        self.assertEqual(('host working set counts 2 of 3 instances',),
                         doc.gaps)

    def test_exported_by_the_observers_code(self):
        doc = observers.document('mm2', 'memory_mode', 196608.0,
                                 [server('a')], {'a': 40960.0})
        text = prometheus.render(prometheus.registry(
            prometheus.DocumentCollector(doc)))
        # Parsed: how a float is printed differs between prometheus_client
        # releases (4.294967296e+10 or 42949672960.0).
        samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
                   for family in parser.text_string_to_metric_families(text)
                   for s in family.samples}
        self.assertEqual(40960 * 2 ** 20, samples[(
            'nova_pmem_instance_working_set_bytes',
            (('flavor', 'it.ws'), ('method', 'damon'),
             ('name', 'instance-a'), ('uuid', 'a')))])
        self.assertEqual(40960 * 2 ** 20, samples[(
            'nova_pmem_host_working_set_bytes', ())])

    def test_table_round_trip(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'ws.json')
        self.assertEqual({}, observers.read_table(path))
        observers.write_table(path, {'a': 1024})
        self.assertEqual({'a': 1024.0}, observers.read_table(path))


class TestScenarioReaders(testtools.TestCase):

    def test_action_moves(self):
        actions = [
            {'action_type': 'migrate', 'input_parameters': {
                'resource_id': 'b', 'source_node': 'mm1',
                'destination_node': 'mm2', 'migration_type': 'live'}},
            {'action_type': 'nop', 'input_parameters': {}},
            {'action_type': 'migrate', 'input_parameters': {
                'resource_id': 'a', 'source_node': 'mm1',
                'destination_node': 'mm2', 'migration_type': 'live'}}]
        self.assertEqual([('a', 'mm1', 'mm2'), ('b', 'mm1', 'mm2')],
                         rebalance.action_moves(actions))

    def test_scheduler_admitted(self):
        logs = self.useFixture(fixtures.TempDir()).path
        with open(os.path.join(logs, 'nova-scheduler.log'), 'w') as f:
            f.write(
                '... DEBUG nova.filters [req-1 u p] Filter PmemCacheFilter '
                'returned 1 host(s)\n'
                '... DEBUG nova.filters [req-2 u p] Filter PmemCacheFilter '
                'returned 0 host(s)\n'
                '... INFO nova.filters [req-2 u p] Filtering removed all '
                'hosts for the request\n')
        self.assertEqual((True, False),
                         rebalance.scheduler_admitted(logs, 'req-1'))
        self.assertEqual((False, True),
                         rebalance.scheduler_admitted(logs, 'req-2'))
        self.assertEqual((False, False),
                         rebalance.scheduler_admitted(logs, 'req-3'))
