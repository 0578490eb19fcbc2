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
"""The strategy through Watcher's own model, with recorded answers.

Each test builds a cloud as Watcher's ``ModelRoot`` holds it (compute
nodes and instances, :mod:`tests.unit.watcher.harness`), serves the
aggregates as Nova's API answers them and the working sets as Prometheus
answers ``/api/v1/query`` from a local server (read through Watcher's own
``prometheus`` or ``aetos`` datasource, or the deprecated
``prometheus_url``), runs the strategy as the decision engine does (in a
process of its own: Watcher and Nova cannot share one) and compares its
actions with what :func:`nova_pmem_filters.core.plans.rebalance.plan`
gives for the same cloud, translated here on its own.
"""

import atexit
import importlib.metadata
import json
import os
import select
import subprocess
import sys
import urllib.parse

import fixtures
import packaging.version
import testtools

from nova_pmem_filters.core.plans import rebalance
from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import profile
from tests.unit import httpstub
from tests.unit import paths

GB = 1024
MB = 1024 * 1024
NAME = 'tiered_memory_rebalance'
SECTION = 'watcher_strategies.' + NAME
# Generous: a loaded machine may take long to import Watcher.
TIMEOUT = 300
HARNESS = paths.of('tests', 'unit', 'watcher', 'harness.py')
# The observer's metric, as the strategy asks for it by default; spelled
# here on its own.
QUERY = 'max by (uuid) (nova_pmem_instance_working_set_bytes)'
# Aetos, Watcher's datasource since 16 (2026.1). Read from the installed
# distribution: this process does not import Watcher (see harness.py).
WATCHER_HAS_AETOS = (packaging.version.Version(
    importlib.metadata.version('python-watcher'))
    >= packaging.version.Version('16'))


class Harness(object):
    """harness.py --serve, started once per test process.

    By its path, so that the source tree is not on sys.path: the project
    is found where it is installed, with its entry points. A case that
    gets no answer within TIMEOUT ends the harness (the next case starts
    another) and fails its test.
    """

    def __init__(self):
        self.proc = None

    def _start(self):
        self.proc = subprocess.Popen(
            [sys.executable, HARNESS, '--serve'], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True, cwd='/')
        atexit.register(self.stop)

    def stop(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def run(self, case):
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        self.proc.stdin.write(json.dumps(case) + '\n')
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], TIMEOUT)
        line = self.proc.stdout.readline() if ready else ''
        if not line:
            self.stop()
            return {'harness_error': 'no answer within %d s' % TIMEOUT}
        return json.loads(line)


_HARNESS = Harness()


def node(hostname, memory_gb=64, vcpus=32, **fields):
    values = dict(uuid='node-' + hostname, hostname=hostname,
                  memory=memory_gb * GB, memory_mb_reserved=512, disk=500,
                  disk_gb_reserved=0, vcpus=vcpus, vcpu_reserved=0,
                  memory_ratio=1.0, vcpu_ratio=2.0, disk_ratio=1.0,
                  state='up', status='enabled')
    values.update(fields)
    return values


def instance(n, host, memory_mb, vcpus=2, specs=None, state='active',
             exclude=False):
    return dict(uuid='00000000-0000-4000-8000-%012d' % n, name='vm%d' % n,
                node=host, memory=memory_mb, disk=10, vcpus=vcpus,
                state=state, flavor_extra_specs=specs or {},
                watcher_exclude=exclude, metadata={},
                project_id='11111111-2222-4333-8444-555555555555')


def aggregate(n, name, hosts, metadata):
    return {'id': n, 'name': name, 'availability_zone': None,
            'hosts': hosts, 'metadata': metadata,
            'uuid': '00000000-0000-4000-9000-%012d' % n,
            'created_at': '2026-01-01T00:00:00.000000', 'updated_at': None,
            'deleted_at': None, 'deleted': False}


def memory_mode(gb):
    return {'pmem_mode': 'memory_mode', 'pmem_dram_cache_gb': str(gb)}


MM_ONLY = {'pmem:modes': 'memory_mode'}


def cloud():
    """mm1 over its near memory, mm2 with room, a DRAM host, mm3 unmeasured.

    ``(nodes, instances, aggregates, working sets MB by uuid)``.
    """
    nodes = [node('mm1'), node('mm2'), node('dram1', memory_gb=16),
             node('mm3')]
    instances = [
        instance(1, 'mm1', 4096), instance(2, 'mm1', 4096, specs=MM_ONLY),
        instance(3, 'mm1', 2048, specs=MM_ONLY),
        instance(4, 'mm2', 4096), instance(5, 'mm3', 4096),
        instance(6, 'dram1', 2048)]
    aggregates = [aggregate(1, 'memory-mode', ['mm1', 'mm2'], memory_mode(8)),
                  aggregate(2, 'small-cache', ['mm3'], memory_mode(4))]
    measured = {instances[0]['uuid']: 3000.0, instances[1]['uuid']: 3500.0,
                instances[2]['uuid']: 2500.0, instances[3]['uuid']: 2000.0,
                instances[5]['uuid']: 1500.0}
    return nodes, instances, aggregates, measured


def prometheus_answer(measured):
    """/api/v1/query's answer, as Prometheus gives the default query."""
    return {'status': 'success', 'data': {'resultType': 'vector', 'result': [
        {'metric': {'uuid': uuid}, 'value': [1767225600.0, repr(mb * MB)]}
        for uuid, mb in sorted(measured.items())]}}


def expected_plan(nodes, instances, aggregates, measured, default_mode='dram',
                  defaults=extra_specs.DEFAULTS, **options):
    """rebalance.plan of the cloud, translated here on its own."""
    hosts = []
    for n in nodes:
        if (n['state'], n['status']) != ('up', 'enabled'):
            continue
        mine = [i for i in instances if i['node'] == n['hostname']]
        metas = [a['metadata'] for a in aggregates
                 if n['hostname'] in a['hosts']]
        free_ram = ((n['memory'] - n['memory_mb_reserved'])
                    * n['memory_ratio'] - sum(i['memory'] for i in mine))
        free_vcpus = ((n['vcpus'] - n['vcpu_reserved']) * n['vcpu_ratio']
                      - sum(i['vcpus'] for i in mine))
        hosts.append(rebalance.Host(
            name=n['hostname'],
            profile=profile.from_metadata(metas, default_mode=default_mode),
            free_ram_mb=free_ram, free_vcpus=free_vcpus,
            instances=tuple(rebalance.Instance(
                uuid=i['uuid'], name=i['name'], memory_mb=i['memory'],
                vcpus=i['vcpus'], extra_specs=i['flavor_extra_specs'],
                working_set_mb=measured.get(i['uuid']),
                movable=(i['state'] == 'active'
                         and not i.get('watcher_exclude')))
                for i in mine)))
    return rebalance.plan(hosts, defaults=defaults, **options)


def action(move):
    return {'action_type': 'migrate', 'input_parameters': {
        'migration_type': 'live', 'source_node': move.source,
        'destination_node': move.destination, 'resource_name': move.name,
        'resource_id': move.instance}}


class StrategyTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.answers = {}
        self.api = self.useFixture(httpstub.StubServer(self._app))

    def _app(self, method, path, headers, body):
        url = urllib.parse.urlsplit(path)
        # Prometheus's API: at the root for [prometheus_client], under
        # /aetos where Aetos is, under /prometheus for the deprecated
        # prometheus_url.
        prefix, api, call = url.path.rpartition('/api/v1/')
        if api and call == 'query':
            query = urllib.parse.parse_qs(url.query).get('query')
            self.answers.setdefault('queries', []).append(query)
            self.answers.setdefault('prefixes', []).append(prefix)
            return self.answers['prometheus']
        if api and call == 'targets':
            # What Watcher's Prometheus helpers ask first: the scrape
            # targets' fqdn labels.
            return 200, {'status': 'success', 'data': {'activeTargets': [
                {'labels': {'fqdn': n['hostname'], 'job': 'observe'}}
                for n in self.answers['nodes']]}}
        if url.path.rstrip('/') == '/compute/v2.1/os-aggregates':
            return 200, {'aggregates': self.answers['aggregates']}
        if url.path.rstrip('/') in ('/compute', '/compute/v2.1'):
            return 200, {'versions': [{
                'id': 'v2.1', 'status': 'CURRENT', 'version': '2.96',
                'min_version': '2.1', 'links': [{
                    'rel': 'self', 'href': self.api.url + '/compute/v2.1/'}]}]}
        return 404, {'error': 'not recorded: %s' % path}

    def nova_conf(self, text):
        """A nova.conf of nova-scheduler holding ``text``: its path."""
        tmp = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(tmp, 'nova.conf')
        with open(path, 'w') as f:
            f.write(text)
        return path

    def run_strategy(self, nodes, instances, aggregates, measured=None,
                     parameters=None, audits=1, extended=True, conf=None,
                     prometheus=None, pmem=None, source='prometheus',
                     watcher_conf=None):
        """Run audits; ``pmem``: the [pmem] of the scheduler's nova.conf.

        ``source``: where the working sets come from. ``prometheus`` or
        ``aetos``: Watcher's datasource of that name ([prometheus_client],
        or Keystone's endpoint); ``deprecated``: the strategy's own
        ``prometheus_url``. ``watcher_conf``: more watcher.conf sections.
        """
        self.answers['aggregates'] = aggregates
        self.answers['nodes'] = nodes
        self.answers['prometheus'] = prometheus or (
            200, prometheus_answer(measured))
        nova_conf = self.nova_conf('[pmem]\n' + ''.join(
            '%s = %s\n' % item for item in sorted((pmem or {}).items())))
        options = {'nova_config_files': nova_conf}
        compute = self.api.url + '/compute'
        sections = {
            # Watcher 15 on: the [nova] adapter, which discovers the
            # version; Watcher 14 (2025.1): novaclient on the session of
            # [watcher_clients_auth], at the catalog's v2.1 endpoint.
            'nova': {'auth_type': 'none', 'endpoint_override': compute},
            'watcher_clients_auth': {'auth_type': 'none',
                                     'endpoint': compute + '/v2.1'},
            # One try: a test of a failure does not wait for retries.
            'watcher_datasources': {'datasources': source,
                                    'query_max_retries': 1,
                                    'query_interval': 0},
            'prometheus_client': {'host': '127.0.0.1',
                                  'port': self.api.url.rpartition(':')[2]}}
        if source == 'aetos':
            # Aetos is found in Keystone's catalog; without Keystone, the
            # session's one endpoint. (Aetos is Watcher 16 and later, where
            # Nova is reached through [nova].)
            sections['watcher_clients_auth']['endpoint'] = (
                self.api.url + '/aetos')
        elif source == 'deprecated':
            del sections['watcher_datasources']['datasources']
            options.update({'prometheus_url': self.api.url + '/prometheus',
                            'prometheus_timeout': 60})
        options.update(conf or {})
        sections[SECTION] = options
        for section, values in (watcher_conf or {}).items():
            sections.setdefault(section, {}).update(values)
        case = {'conf': sections, 'nodes': nodes, 'instances': instances,
                'extended': extended, 'parameters': parameters or {},
                'audits': audits}
        answer = _HARNESS.run(case)
        self.assertNotIn('harness_error', answer)
        return answer['audits']

    def test_actions_are_the_plan(self):
        nodes, instances, aggregates, measured = cloud()
        audit, = self.run_strategy(nodes, instances, aggregates, measured)
        plan = expected_plan(nodes, instances, aggregates, measured)
        self.assertNotIn('error', audit, audit.get('traceback'))
        self.assertTrue(plan.moves, 'the cloud must need a move')
        self.assertEqual([action(m) for m in plan.moves], audit['actions'])
        self.assertEqual([], audit['invalid_actions'])
        self.assertEqual('near_memory_balance', audit['goal'])
        self.assertEqual({
            'hosts_over_near_memory_before': 1,
            'hosts_over_near_memory_after': 0,
            'hosts_not_judged': 1,
            'memory_moved_mb': plan.memory_moved_mb,
            'instance_migrations_count': len(plan.moves)},
            audit['indicators'])
        self.assertEqual({'hosts_brought_under_ratio': 100.0},
                         audit['global'])
        # One instant query, the observer's metric, through Watcher's
        # Prometheus datasource ([prometheus_client]: at the root).
        self.assertEqual([[QUERY]], self.answers['queries'])
        self.assertEqual([''], self.answers['prefixes'])

    def test_the_move_is_the_cheapest(self):
        # mm1 holds 9000 MB of working set on 8 GB: vm3 (2048 MB, 2500 MB
        # hot, memory_mode only) to mm2 is the least memory that fixes it.
        nodes, instances, aggregates, measured = cloud()
        audit, = self.run_strategy(nodes, instances, aggregates, measured)
        self.assertEqual([('vm3', 'mm1', 'mm2')], [
            (a['input_parameters']['resource_name'],
             a['input_parameters']['source_node'],
             a['input_parameters']['destination_node'])
            for a in audit['actions']])

    def test_audit_parameters(self):
        nodes, instances, aggregates, measured = cloud()
        # act_above 1.2: mm1 (9000 MB on 8192) is not over.
        audit, = self.run_strategy(nodes, instances, aggregates, measured,
                                   parameters={'act_above': 1.2})
        self.assertEqual([], audit['actions'])
        self.assertEqual(0, audit['indicators'][
            'hosts_over_near_memory_before'])
        # No migration allowed: mm1 stays over, for the cap.
        audit, = self.run_strategy(nodes, instances, aggregates, measured,
                                   parameters={'max_migrations': 0})
        self.assertEqual([], audit['actions'])
        self.assertEqual(1, audit['indicators'][
            'hosts_over_near_memory_after'])
        self.assertIn('mm1: left over its near memory (cap-reached)',
                      '\n'.join(audit['warnings']))

    def test_audit_parameters_are_validated(self):
        nodes, instances, aggregates, measured = cloud()
        refused = (({'act_above': 'high'}, 'ValidationError'),
                   ({'act_above': 0}, 'ValidationError'),
                   ({'max_migrations': 1.5}, 'ValidationError'),
                   ({'max_migrations': -1}, 'ValidationError'),
                   ({'threshold': 1.0}, 'AuditParameterNotAllowed'))
        # One audit each, in one decision engine.
        audits = self.run_strategy(
            nodes, instances, aggregates, measured,
            parameters=[p for p, _ in refused] + [
                {'act_above': 1.0, 'aim_below': 1.1}])
        for audit, (parameters, error) in zip(audits, refused):
            self.assertIn(error, audit.get('error', []), parameters)
        self.assertIn('Invalid', audits[-1]['error'])
        self.assertEqual('aim_below 1.1 is above act_above 1: the plan must '
                         'aim below the threshold it acts above',
                         audits[-1]['message'])

    def test_unmeasured_host_is_not_planned_on(self):
        nodes, instances, aggregates, measured = cloud()
        # vm2 of the over host mm1 has no sample; mm2 has the room.
        del measured[instances[1]['uuid']]
        audit, = self.run_strategy(nodes, instances, aggregates, measured)
        plan = expected_plan(nodes, instances, aggregates, measured)
        self.assertEqual([], audit['actions'])
        self.assertEqual([], [action(m) for m in plan.moves])
        self.assertEqual(2, audit['indicators']['hosts_not_judged'])
        self.assertIn('mm1: left over its near memory (unmeasured): the '
                      'working set of 1 of its 3 instances was not measured '
                      '(vm2): it is not planned on',
                      audit['warnings'])

    def test_unmeasured_host_is_no_destination(self):
        nodes, instances, aggregates, measured = cloud()
        # mm2's only instance unmeasured: mm1's memory_mode-only
        # instances have nowhere to go.
        del measured[instances[3]['uuid']]
        audit, = self.run_strategy(nodes, instances, aggregates, measured)
        plan = expected_plan(nodes, instances, aggregates, measured)
        self.assertEqual([action(m) for m in plan.moves], audit['actions'])
        self.assertNotIn('mm2', [a['input_parameters']['destination_node']
                                 for a in audit['actions']])

    def test_stopped_instance_counts_nothing(self):
        nodes, instances, aggregates, measured = cloud()
        # A stopped guest on mm2 has no sample and touches nothing: mm2
        # is still judged, and a destination.
        instances.append(instance(7, 'mm2', 1024, state='stopped'))
        audit, = self.run_strategy(nodes, instances, aggregates, measured)
        self.assertEqual(1, audit['indicators']['hosts_not_judged'])
        self.assertEqual(['mm2'], [a['input_parameters']['destination_node']
                                   for a in audit['actions']])

    def test_an_instance_watcher_may_not_move_stays(self):
        nodes, instances, aggregates, measured = cloud()
        first, = self.run_strategy(nodes, instances, aggregates, measured)
        # The plan's move (vm3) excluded by the audit's scope: the plan
        # moves another instance instead, and never vm3.
        instances[2]['watcher_exclude'] = True
        audit, = self.run_strategy(nodes, instances, aggregates, measured)
        plan = expected_plan(nodes, instances, aggregates, measured)
        self.assertIn(instances[2]['uuid'], json.dumps(first['actions']))
        self.assertNotIn(instances[2]['uuid'], json.dumps(audit['actions']))
        self.assertTrue(audit['actions'])
        self.assertEqual([action(m) for m in plan.moves], audit['actions'])
        self.assertEqual(plan.over_after, audit['indicators'][
            'hosts_over_near_memory_after'])

    def test_disabled_host_takes_no_part(self):
        nodes, instances, aggregates, measured = cloud()
        nodes[1]['status'] = 'disabled'
        audit, = self.run_strategy(nodes, instances, aggregates, measured)
        plan = expected_plan(nodes, instances, aggregates, measured)
        self.assertEqual([action(m) for m in plan.moves], audit['actions'])
        self.assertNotIn('mm2', json.dumps(audit['actions']))

    def test_second_audit_proposes_nothing(self):
        nodes, instances, aggregates, measured = cloud()
        first, second = self.run_strategy(nodes, instances, aggregates,
                                          measured, audits=2)
        self.assertTrue(first['actions'])
        self.assertEqual([], second['actions'])
        self.assertEqual(0, second['indicators'][
            'hosts_over_near_memory_before'])

    def test_prometheus_down(self):
        nodes, instances, aggregates, measured = cloud()
        port = httpstub.closed_port()
        audit, = self.run_strategy(
            nodes, instances, aggregates, measured,
            watcher_conf={'prometheus_client': {'port': port}})
        self.assertIn('DataSourceNotAvailable', audit['error'])
        self.assertIn('The working sets could not be read: Watcher\'s '
                      'prometheus datasource: ', audit['message'])
        self.assertIn('port=%d' % port, audit['message'])
        self.assertEqual(1, len(audit['message'].splitlines()))

    def test_prometheus_refuses_the_query(self):
        nodes, instances, aggregates, measured = cloud()
        audit, = self.run_strategy(
            nodes, instances, aggregates, measured,
            conf={'working_set_query': 'max(('},
            prometheus=(400, {'status': 'error', 'errorType': 'bad_data',
                              'error': 'parse error'}))
        self.assertIn('DataSourceNotAvailable', audit['error'])
        self.assertIn('Watcher\'s prometheus datasource did not answer '
                      '\'max((\' after 1 tries ([watcher_datasources] '
                      'query_max_retries): [400] parse error.',
                      audit['message'])
        self.assertEqual([['max((']], self.answers['queries'])

    def test_series_without_uuid(self):
        nodes, instances, aggregates, measured = cloud()
        answer = prometheus_answer(measured)
        answer['data']['result'][0]['metric'] = {'instance': 'x'}
        audit, = self.run_strategy(nodes, instances, aggregates, measured,
                                   prometheus=(200, answer))
        self.assertIn('DataSourceNotAvailable', audit['error'])
        self.assertIn('a series has no uuid label', audit['message'])

    def test_no_promql_datasource(self):
        nodes, instances, aggregates, measured = cloud()
        audit, = self.run_strategy(nodes, instances, aggregates, measured,
                                   source='gnocchi')
        self.assertIn('DataSourceNotAvailable', audit['error'])
        self.assertIn('none of the datasources configured (gnocchi) '
                      'answers PromQL: set [watcher_datasources] '
                      'datasources to one of prometheus', audit['message'])
        self.assertNotIn('queries', self.answers)

    def test_the_strategy_may_name_its_datasource(self):
        nodes, instances, aggregates, measured = cloud()
        audit, = self.run_strategy(nodes, instances, aggregates, measured,
                                   source='gnocchi',
                                   conf={'datasources': 'prometheus'})
        plan = expected_plan(nodes, instances, aggregates, measured)
        self.assertEqual([action(m) for m in plan.moves], audit['actions'])
        self.assertEqual([''], self.answers['prefixes'])

    @testtools.skipUnless(WATCHER_HAS_AETOS, 'Aetos: Watcher 16 and later')
    def test_aetos(self):
        nodes, instances, aggregates, measured = cloud()
        audit, = self.run_strategy(nodes, instances, aggregates, measured,
                                   source='aetos')
        plan = expected_plan(nodes, instances, aggregates, measured)
        self.assertNotIn('error', audit, audit.get('traceback'))
        self.assertEqual([action(m) for m in plan.moves], audit['actions'])
        self.assertEqual(['/aetos'], self.answers['prefixes'])
        self.assertEqual([[QUERY]], self.answers['queries'])

    @testtools.skipUnless(WATCHER_HAS_AETOS, 'Aetos: Watcher 16 and later')
    def test_prometheus_and_aetos_are_refused_together(self):
        # Watcher's own rule (DataSourceManager), its message kept.
        nodes, instances, aggregates, measured = cloud()
        audit, = self.run_strategy(nodes, instances, aggregates, measured,
                                   source='prometheus,aetos')
        self.assertIn('DataSourceNotAvailable', audit['error'])
        self.assertIn('Watcher\'s prometheus datasource: ', audit['message'])
        self.assertIn('aetos', audit['message'].partition(': ')[2])

    def test_deprecated_prometheus_url(self):
        # The strategy's own client where its prometheus_url is set, with
        # oslo.config's deprecation warning, which says what to set.
        nodes, instances, aggregates, measured = cloud()
        audit, = self.run_strategy(nodes, instances, aggregates, measured,
                                   source='deprecated')
        plan = expected_plan(nodes, instances, aggregates, measured)
        self.assertEqual([action(m) for m in plan.moves], audit['actions'])
        self.assertEqual(['/prometheus'], self.answers['prefixes'])
        self.assertIn('[watcher_datasources] datasources = aetos',
                      '\n'.join(audit['warnings']))

    def test_deprecated_prometheus_down(self):
        nodes, instances, aggregates, measured = cloud()
        url = 'http://127.0.0.1:%d' % httpstub.closed_port()
        audit, = self.run_strategy(nodes, instances, aggregates, measured,
                                   source='deprecated',
                                   conf={'prometheus_url': url})
        self.assertIn('DataSourceNotAvailable', audit['error'])
        self.assertIn('The working sets could not be read: Prometheus at '
                      '%s: cannot be reached (' % url, audit['message'])

    def test_needs_flavor_extra_specs(self):
        nodes, instances, aggregates, measured = cloud()
        audit, = self.run_strategy(nodes, instances, aggregates, measured,
                                   extended=False)
        self.assertIn('NeedsFlavorExtraSpecs', audit['error'])
        self.assertIn('enable_extended_attributes = true', audit['message'])

    def test_scheduler_settings_are_nova_confs(self):
        nodes, instances, aggregates, measured = cloud()
        # As the scheduler's [pmem] default_host_mode = memory_mode would:
        # dram1, in no aggregate, becomes a Memory-Mode host without a
        # cache size, its profile unknown.
        audit, = self.run_strategy(
            nodes, instances, aggregates, measured,
            pmem={'default_host_mode': 'memory_mode'})
        plan = expected_plan(nodes, instances, aggregates, measured,
                             default_mode='memory_mode')
        self.assertEqual([action(m) for m in plan.moves], audit['actions'])
        self.assertEqual(['dram1', 'mm3'], sorted(
            u.host for u in plan.unfixed))
        self.assertEqual(2, audit['indicators']['hosts_not_judged'])
        self.assertIn('dram1: left over its near memory (profile-unknown): '
                      'its host profile is unknown: pmem_mode=memory_mode '
                      'needs pmem_dram_cache_gb to bound the DRAM cache',
                      audit['warnings'])
        # PmemCacheFilter's cache_overcommit_ratio 0.3: mm2 (2457 MB for
        # declared hot RAM, 2048 MB of vm4's) cannot take vm3's 1024 MB;
        # vm1 goes to the DRAM host instead.
        audit, = self.run_strategy(nodes, instances, aggregates, measured,
                                   pmem={'cache_overcommit_ratio': 0.3})
        plan = expected_plan(nodes, instances, aggregates, measured,
                             cache_overcommit_ratio=0.3)
        self.assertEqual([action(m) for m in plan.moves], audit['actions'])
        self.assertEqual([('vm1', 'dram1')], [
            (m.name, m.destination) for m in plan.moves])
        # From the defaults, vm1 goes elsewhere: the file was read.
        default, = self.run_strategy(nodes, instances, aggregates, measured)
        self.assertNotEqual(audit['actions'], default['actions'])

    def test_deprecated_options_win_over_nova_conf(self):
        nodes, instances, aggregates, measured = cloud()
        # Two audits: Watcher registers the options again for the second,
        # after the first logged the override's deprecation.
        first, second = self.run_strategy(
            nodes, instances, aggregates, measured, audits=2,
            pmem={'cache_overcommit_ratio': 1.0},
            conf={'cache_overcommit_ratio': 0.3})
        plan = expected_plan(nodes, instances, aggregates, measured,
                             cache_overcommit_ratio=0.3)
        self.assertEqual([action(m) for m in plan.moves], first['actions'])
        self.assertEqual([('vm1', 'dram1')], [
            (m.name, m.destination) for m in plan.moves])
        self.assertNotIn('error', second)

    def test_nova_conf_refused(self):
        nodes, instances, aggregates, measured = cloud()
        audit, = self.run_strategy(nodes, instances, aggregates, measured,
                                   pmem={'default_hot_ratio': 'half'})
        self.assertIn('Invalid', audit['error'])
        self.assertIn('nova_config_files: ', audit['message'])
        self.assertIn('[pmem] default_hot_ratio', audit['message'])
        missing = os.path.join(os.path.dirname(self.nova_conf('')),
                               'missing.conf')
        audit, = self.run_strategy(nodes, instances, aggregates, measured,
                                   conf={'nova_config_files': missing})
        self.assertIn('Invalid', audit['error'])
        self.assertIn('cannot read %s' % missing, audit['message'])
