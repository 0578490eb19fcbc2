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
"""nova-pmem-doctor end to end against a stub cloud on this machine.

The stub answers the compute and Placement APIs (version discovery,
microversions, paged listings) from a snapshot of test_doctor_checks, so
the doctor's reading through real openstacksdk, its exit statuses and its
one-line errors are tested without a cloud. The doctor against real Nova
is a scenario of tests/integration.
"""

import dataclasses
import json
import os
import subprocess
import sys
import urllib.parse

import fixtures
import openstack
import testtools
import yaml

from nova_pmem_filters.doctor import checks
from nova_pmem_filters.doctor import cli
from nova_pmem_filters.doctor import snapshot
from tests.unit.doctor import cases
from tests.unit import httpstub
from tests.unit import paths

PAGE = 2


def _paged(items, key, query, link_base):
    marker = (query.get('marker') or [None])[0]
    start = 0
    if marker is not None:
        start = [i['id'] for i in items].index(marker) + 1
    page = items[start:start + PAGE]
    body = {key: page}
    if start + PAGE < len(items):
        args = dict({k: v[0] for k, v in query.items()},
                    marker=page[-1]['id'])
        body['%s_links' % key] = [{
            'rel': 'next',
            'href': '%s?%s' % (link_base, urllib.parse.urlencode(args))}]
    return body


def _token(user, project, roles):
    """Keystone's v3 token body, without a catalog (endpoints overridden)."""
    domain = {'id': 'default', 'name': 'Default'}
    return {'token': {
        'methods': ['password'], 'expires_at': '2099-01-01T00:00:00.000000Z',
        'issued_at': '2026-01-01T00:00:00.000000Z',
        'user': {'id': user + '-id', 'name': user, 'domain': domain},
        'project': {'id': project + '-id', 'name': project,
                    'domain': domain},
        'roles': [{'id': r + '-id', 'name': r} for r in roles],
        'catalog': []}}


def cloud_app(snap, base, refuse=None, user=None):
    """The compute and Placement APIs of ``snap``, under ``base``.

    Keystone refuses every password, or, with ``user`` (name, project,
    roles), issues that user a token for the password ``right``.
    """
    compute = base + '/compute/v2.1'
    aggregates = [{'id': int(a.id), 'name': a.name, 'hosts': list(a.hosts),
                   'metadata': dict(a.metadata),
                   'availability_zone': a.metadata.get('availability_zone')}
                  for a in snap.aggregates]
    flavors = [{'id': f.id, 'name': f.name, 'ram': f.ram_mb, 'vcpus': 4,
                'disk': 1, 'extra_specs': dict(f.extra_specs)}
               for f in snap.flavors]
    hypervisors = [{'id': '%s-%s' % (c.host, n), 'hypervisor_hostname': n,
                    'service': {'host': c.host, 'id': c.host}}
                   for c in snap.computes for n in c.nodes]
    servers = [{'id': s.id, 'name': s.name, 'status': s.status,
                'OS-EXT-SRV-ATTR:host': s.host,
                'flavor': {'original_name': s.flavor_name, 'ram': s.ram_mb,
                           'vcpus': 4, 'disk': 1,
                           'extra_specs': dict(s.extra_specs)}}
               for s in snap.servers]
    providers = {p.uuid: p for p in snap.providers.values()}

    def app(method, path, headers, body):
        url = urllib.parse.urlsplit(path)
        query = urllib.parse.parse_qs(url.query)
        route = url.path.rstrip('/')
        if route == '/identity/v3':
            return 200, {'version': {
                'id': 'v3.14', 'status': 'stable',
                'links': [{'rel': 'self', 'href': base + '/identity/v3/'}],
                'media-types': [{
                    'base': 'application/json',
                    'type': 'application/vnd.openstack.identity-v3+json'}]}}
        if route == '/identity/v3/auth/tokens':
            identity = json.loads(body)['auth']['identity']
            if identity['methods'] == ['token']:
                # Keystone's answer to a revoked or expired token.
                return 404, {'error': {
                    'code': 404, 'title': 'Not Found',
                    'message': 'Failed to validate token'}}
            password = identity['password']
            if user and password['user']['password'] == 'right':
                return 201, _token(*user), {'X-Subject-Token': 'stub-token'}
            # Keystone refusing a password.
            return 401, {'error': {
                'code': 401, 'title': 'Unauthorized',
                'message': 'The request you have made requires '
                           'authentication.'}}
        if refuse and refuse[0] in route:
            return refuse[1], {'error': {'code': refuse[1]}}
        if route == '/compute':
            return 200, {'versions': [{
                'id': 'v2.1', 'status': 'CURRENT', 'version': '2.100',
                'min_version': '2.1', 'links': [{'rel': 'self',
                                                 'href': compute + '/'}]}]}
        if route == '/compute/v2.1':
            return 200, {'version': {
                'id': 'v2.1', 'status': 'CURRENT', 'version': '2.100',
                'min_version': '2.1', 'links': [{'rel': 'self',
                                                 'href': compute + '/'}]}}
        if route == '/compute/v2.1/os-aggregates':
            return 200, {'aggregates': aggregates}
        if route == '/compute/v2.1/flavors/detail':
            return 200, _paged(flavors, 'flavors', query,
                               compute + '/flavors/detail')
        if route == '/compute/v2.1/os-hypervisors/detail':
            return 200, {'hypervisors': hypervisors}
        if route == '/compute/v2.1/servers/detail':
            return 200, _paged(servers, 'servers', query,
                               compute + '/servers/detail')
        if route == '/placement':
            return 200, {'versions': [{
                'id': 'v1.0', 'max_version': '1.39', 'min_version': '1.0',
                'status': 'CURRENT', 'links': [{'rel': 'self',
                                                'href': ''}]}]}
        if route == '/placement/resource_providers':
            return 200, {'resource_providers': [
                {'uuid': p.uuid, 'name': p.name, 'generation': 1}
                for p in providers.values()]}
        parts = route.split('/')
        if parts[:3] == ['', 'placement', 'resource_providers']:
            rp = providers[parts[3]]
            if parts[4] == 'traits':
                return 200, {'traits': sorted(rp.traits),
                             'resource_provider_generation': 1}
            return 200, {'inventories': rp.inventories,
                         'resource_provider_generation': 1}
        return 404, {'error': 'no route %s' % route}
    return app


class StubCloud(fixtures.Fixture):
    """A stub cloud serving ``snap`` and a clouds.yaml naming it 'stub'."""

    def __init__(self, snap, refuse=None, url=None, password=False,
                 user=None, token=None, identity='/identity/v3'):
        """A stub cloud; Keystone refuses every password unless ``user``.

        :param user: (name, project, roles) Keystone issues a token to,
            for its password (implies password auth).
        :param token: a token for keystoneauth's token plugin (v3token),
            which Keystone refuses.
        :param identity: the path of the auth_url under ``url``.
        """
        super().__init__()
        self.snap = snap
        self.refuse = refuse
        self.url = url
        self.password = password or bool(user)
        self.user = user
        self.token = token
        self.identity = identity

    def _setUp(self):
        if self.url is None:
            holder = {}
            stub = self.useFixture(httpstub.StubServer(
                lambda *a: holder['app'](*a)))
            holder['app'] = cloud_app(self.snap, stub.url, self.refuse,
                                      self.user)
            self.stub = stub
            self.url = stub.url
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.clouds_yaml = os.path.join(self.dir, 'clouds.yaml')
        if self.token:
            auth = {'auth_type': 'v3token', 'auth': {
                'auth_url': self.url + '/identity/v3', 'token': self.token,
                'project_name': 'admin', 'project_domain_name': 'Default'}}
        elif self.password:
            name, project = self.user[:2] if self.user else ('admin',
                                                             'admin')
            auth = {'auth_type': 'password', 'auth': {
                'auth_url': self.url + self.identity, 'username': name,
                'password': 'right' if self.user else 'wrong',
                'project_name': project,
                'user_domain_name': 'Default',
                'project_domain_name': 'Default'}}
        else:
            auth = {'auth_type': 'admin_token', 'auth': {
                'token': 'admin:admin',
                'endpoint': self.url + '/compute/v2.1'}}
        with open(self.clouds_yaml, 'w') as f:
            yaml.safe_dump({'clouds': {'stub': dict(
                auth,
                compute_endpoint_override=self.url + '/compute/v2.1',
                placement_endpoint_override=self.url + '/placement')}}, f)
        # Only this clouds.yaml, and no OS_* of the environment.
        for name in [n for n in os.environ if n.startswith('OS_')]:
            self.useFixture(fixtures.EnvironmentVariable(name))
        self.useFixture(fixtures.EnvironmentVariable(
            'OS_CLIENT_CONFIG_FILE', self.clouds_yaml))

    def doctor(self, *argv):
        proc = subprocess.run(
            [sys.executable, '-m', 'nova_pmem_filters.doctor.cli',
             '--os-cloud', 'stub'] + list(argv),
            capture_output=True, text=True, timeout=120,
            cwd=paths.ROOT)
        return proc.returncode, proc.stdout, proc.stderr


def _without_local(snap):
    return dataclasses.replace(snap, config=None, fleet=None)


class GatherTestCase(testtools.TestCase):

    def test_reads_back_what_the_cloud_serves(self):
        snap = cases.replace(cases.clean(), servers=tuple(
            cases.server('c%d' % i, 'mm1', 32) for i in range(5)))
        cloud = self.useFixture(StubCloud(snap))
        conn = openstack.connect(cloud='stub')
        self.addCleanup(conn.close)
        got = snapshot.gather(conn)
        self.assertEqual(_without_local(snap), got)
        # Paged listings were followed; flavors with their extra specs and
        # servers with their flavor come at the microversions that have them.
        requests = cloud.stub.requests
        pages = [p for m, p, h in requests if 'servers/detail' in p]
        self.assertEqual(3, len(pages))
        versions = {p.split('?')[0].rsplit('/', 2)[-2]:
                    h.get('OpenStack-API-Version')
                    for m, p, h in requests if 'detail' in p}
        self.assertEqual({'flavors': 'compute 2.61',
                          'servers': 'compute 2.47',
                          'os-hypervisors': 'compute 2.53'}, versions)


class CliTestCase(testtools.TestCase):

    def test_clean_cloud_exits_0(self):
        cloud = self.useFixture(StubCloud(cases.clean()))
        conf = os.path.join(cloud.dir, 'nova.conf')
        with open(conf, 'w') as f:
            f.write('[filter_scheduler]\n'
                    'available_filters = nova.scheduler.filters.all_filters\n'
                    'available_filters = '
                    'nova_pmem_filters.filters.all_filters\n'
                    'enabled_filters = ComputeFilter,PmemModeFilter,'
                    'PmemCacheFilter\n'
                    'weight_classes = nova.scheduler.weights.all_weighers,'
                    'nova_pmem_filters.weighers.all_weighers\n'
                    '[scheduler]\nworkers = 2\n')
        status, out, err = cloud.doctor('--config-file', conf, '-f', 'json')
        self.assertEqual(0, status, err)
        self.assertEqual([], json.loads(out))
        self.assertEqual('', err)

    def test_findings_and_exit_statuses(self):
        # No nova.conf: one info finding, still clean.
        cloud = self.useFixture(StubCloud(cases.clean()))
        status, out, err = cloud.doctor('-f', 'json')
        self.assertEqual(0, status, err)
        rows = json.loads(out)
        self.assertEqual([{'severity': 'info', 'code': 'nova-conf-not-read',
                           'object': 'nova.conf'}],
                         [{k: r[k] for k in ('severity', 'code', 'object')}
                          for r in rows])
        self.assertEqual(list(cli.COLUMNS), list(rows[0]))
        # A warning: exit 1.
        warned = cases.with_aggregate(cases.clean(), 'pmem-mm',
                                      pmem_tier_weight_multiplier='x')
        status, out, err = self.useFixture(StubCloud(warned)).doctor(
            '-f', 'value', '-c', 'code')
        self.assertEqual(1, status, err)
        self.assertEqual(['invalid-weight-multiplier', 'nova-conf-not-read'],
                         sorted(out.split()))
        # An error: exit 2, and the table is printed all the same.
        broken = cases.with_aggregate(cases.clean(), 'pmem-mm',
                                      pmem_mode='tiered')
        status, out, err = self.useFixture(StubCloud(broken)).doctor()
        self.assertEqual(2, status, err)
        self.assertIn('invalid-pmem-mode', out)
        self.assertIn('| severity |', out)

    def test_the_check_command_can_be_named(self):
        cloud = self.useFixture(StubCloud(cases.clean()))
        named = cloud.doctor('check', '-f', 'json')
        default = cloud.doctor('-f', 'json')
        self.assertEqual(named, default)

    def assert_one_line(self, status, out, err, *parts):
        # Could not run: 3 ("unknown"), not 2 (the cloud has errors).
        self.assertEqual(cli.UNKNOWN, status, err)
        self.assertEqual(3, status, err)
        self.assertEqual('', out)
        self.assertEqual(1, len(err.splitlines()), err)
        self.assertNotIn('Traceback', err)
        for part in parts:
            self.assertIn(part, err)

    def test_unreachable_cloud(self):
        cloud = self.useFixture(StubCloud(
            None, url='http://127.0.0.1:%d' % httpstub.closed_port()))
        self.assert_one_line(*cloud.doctor(), 'cannot reach the cloud')

    def test_unreachable_keystone_is_one_line(self):
        # Password auth: keystoneauth discovers the identity API first, and
        # logs its own warning before it fails; the doctor prints one line.
        cloud = self.useFixture(StubCloud(
            None, url='http://127.0.0.1:%d' % httpstub.closed_port(),
            password=True))
        status, out, err = cloud.doctor()
        self.assertNotIn('Failed to discover', err)
        self.assert_one_line(status, out, err, 'cannot reach the cloud')

    def test_unreachable_keystone_logs_with_debug(self):
        # --debug still shows what the libraries say.
        cloud = self.useFixture(StubCloud(
            None, url='http://127.0.0.1:%d' % httpstub.closed_port(),
            password=True))
        _status, _out, err = cloud.doctor('--debug')
        self.assertIn('keystoneauth', err)

    def test_refused_credentials(self):
        cloud = self.useFixture(StubCloud(cases.clean(), password=True))
        self.assert_one_line(*cloud.doctor(), 'refused the credentials',
                             'HTTP 401')
        self.assertIn(('POST', '/identity/v3/auth/tokens'),
                      [(m, p) for m, p, _h in cloud.stub.requests])

    def test_revoked_token(self):
        cloud = self.useFixture(StubCloud(cases.clean(), token='gone'))
        self.assert_one_line(
            *cloud.doctor(), 'Keystone refused the token (HTTP 404 from %s'
            '/identity/v3/auth/tokens: Failed to validate token): it '
            'expired, was revoked' % cloud.url)

    def test_auth_url_that_is_not_keystone(self):
        # Password auth against a URL that answers 404 to everything: not
        # a token Keystone refused, but no Keystone there.
        stub = self.useFixture(httpstub.StubServer(
            lambda *_a: (404, {'error': 'not found'})))
        for path, posted in (('/v3', ' to POST %s/v3/auth/tokens'
                              % stub.url),
                             ('/identity', '')):
            cloud = self.useFixture(StubCloud(
                None, url=stub.url, password=True, identity=path))
            status, out, err = cloud.doctor()
            self.assert_one_line(
                status, out, err,
                'nova-pmem-doctor check: error: the auth_url %s%s answered '
                'HTTP 404%s: it is not a Keystone identity endpoint; give '
                "the URL of Keystone's identity API, which ends in /v3"
                % (stub.url, path, posted))
            self.assertNotIn('token', err.replace('auth/tokens', ''))

    def test_not_admin(self):
        # A token without a user (admin_token): what the doctor needs.
        cloud = self.useFixture(StubCloud(cases.clean(),
                                          refuse=('os-aggregates', 403)))
        self.assert_one_line(*cloud.doctor(), 'HTTP 403',
                             'os-aggregates', 'admin credentials')

    def test_not_admin_names_the_user_and_the_role(self):
        cloud = self.useFixture(StubCloud(
            cases.clean(), refuse=('os-aggregates', 403),
            user=('it-member', 'it-project', ('reader', 'member'))))
        self.assert_one_line(
            *cloud.doctor(), 'HTTP 403', 'os-aggregates',
            'user it-member in project it-project has role(s) member, '
            'reader but not admin', 'needs the admin role')

    def test_admin_refused_by_policy(self):
        cloud = self.useFixture(StubCloud(
            cases.clean(), refuse=('os-aggregates', 403),
            user=('ops', 'infra', ('admin', 'member', 'reader'))))
        self.assert_one_line(
            *cloud.doctor(), 'HTTP 403', 'user ops in project infra has the '
            'admin role, but the cloud\'s policy refuses it')

    def test_authenticated_user_audits(self):
        cloud = self.useFixture(StubCloud(
            cases.clean(), user=('ops', 'infra', ('admin',))))
        status, out, err = cloud.doctor('-f', 'value', '-c', 'code')
        self.assertEqual((0, 'nova-conf-not-read\n', ''), (status, out, err))
        tokens = {h.get('X-Auth-Token') for m, p, h in cloud.stub.requests
                  if p.startswith('/compute/v2.1/')}
        self.assertEqual({'stub-token'}, tokens)

    def test_unknown_cloud(self):
        cloud = self.useFixture(StubCloud(cases.clean()))
        self.assert_one_line(*cloud.doctor('--os-cloud', 'nosuch'),
                             'no usable cloud configuration', 'nosuch')

    def test_bad_local_files(self):
        cloud = self.useFixture(StubCloud(cases.clean()))
        conf = os.path.join(cloud.dir, 'nova.conf')
        with open(conf, 'w') as f:
            f.write('[scheduler]\nworkers = many\n')
        self.assert_one_line(*cloud.doctor('--config-file', conf),
                             conf, '[scheduler] workers')
        self.assert_one_line(*cloud.doctor('--config-file', conf + '.nope'),
                             'cannot read', conf + '.nope')
        fleet = os.path.join(cloud.dir, 'fleet')
        os.mkdir(fleet)
        with open(os.path.join(fleet, 'h.json'), 'w') as f:
            json.dump({'schema': 'nova-pmem-host-profile/1'}, f)
        self.assert_one_line(*cloud.doctor('--fleet', fleet), 'h.json',
                             'hostname: missing')

    def test_fleet_compared(self):
        snap = cases.clean()
        cloud = self.useFixture(StubCloud(snap))
        fleet = os.path.join(cloud.dir, 'fleet')
        os.mkdir(fleet)
        for prof in snap.fleet:
            data = dict(cases.discovery_output(prof),
                        schema='nova-pmem-host-profile/1',
                        visible_memory_gb=prof.visible_memory_gb)
            if prof.hostname == 'mm2':
                data.update(mode='dram', scheduler_mode='dram',
                            dram_cache_gb=0.0)
            with open(os.path.join(fleet, prof.hostname + '.json'),
                      'w') as f:
                json.dump(data, f)
        status, out, err = cloud.doctor('--fleet', fleet, '-f', 'json')
        self.assertEqual(2, status, err)
        found = sorted((r['code'], r['object']) for r in json.loads(out))
        self.assertEqual([('mode-trait-mismatch', 'host mm2'),
                          ('nova-conf-not-read', 'nova.conf'),
                          ('profile-mismatch', 'host mm2')], found)

    def test_exit_status_is_that_of_the_checks(self):
        # The CLI's status is checks.exit_status of what it listed.
        broken = cases.with_aggregate(cases.clean(), 'pmem-mm',
                                      pmem_mode='tiered')
        expected = checks.exit_status(checks.run(
            dataclasses.replace(broken, config=None)))
        status, _out, _err = self.useFixture(StubCloud(broken)).doctor()
        self.assertEqual(expected, status)


class GatherTopologyTestCase(testtools.TestCase):
    """Servers with vPMEM or on tiered hosts: their host NUMA nodes."""

    def serve(self, snap, topology):
        """StubCloud of ``snap`` that also answers /servers/ID/topology."""
        cloud = self.useFixture(StubCloud(snap))
        # The handler calls server.app; StubCloud's routes stay as they are.
        inner = cloud.stub.server.app

        def app(method, path, headers, body):
            parts = urllib.parse.urlsplit(path).path.rstrip('/').split('/')
            if parts[-1] == 'topology' and parts[-3] == 'servers':
                if parts[-2] not in topology:
                    return 404, {'itemNotFound': {'code': 404}}
                return 200, {'nodes': topology[parts[-2]],
                             'pagesize_kb': None}
            return inner(method, path, headers, body)

        cloud.stub.server.app = app
        return cloud

    def test_host_nodes_of_vpmem_servers(self):
        servers = (
            cases.vpmem_server('v1', '256GB', (1,)),
            cases.vpmem_server('v2', '128GB', (0, 1)),
            # Policy hides host_node: unknown, not guessed.
            cases.vpmem_server('v3', '128GB', None),
            # Gone between the listing and the topology call.
            cases.vpmem_server('v4', '128GB', None),
            cases.server('plain', 'mm1', 4))
        snap = cases.replace(cases.clean(), servers=servers)
        topology = {
            'id-v1': [{'vcpu_set': [0, 1], 'siblings': [], 'memory_mb': 8192,
                       'host_node': 1, 'cpu_pinning': {}}],
            'id-v2': [{'vcpu_set': [0], 'siblings': [], 'memory_mb': 4096,
                       'host_node': 0, 'cpu_pinning': {}},
                      {'vcpu_set': [1], 'siblings': [], 'memory_mb': 4096,
                       'host_node': 1, 'cpu_pinning': {}}],
            'id-v3': [{'vcpu_set': [0], 'siblings': [], 'memory_mb': 8192}],
        }
        cloud = self.serve(snap, topology)
        conn = openstack.connect(cloud='stub')
        self.addCleanup(conn.close)
        got = snapshot.gather(conn)
        self.assertEqual(_without_local(snap), got)
        asked = {p.split('/')[-2]: h.get('OpenStack-API-Version')
                 for m, p, h in cloud.stub.requests
                 if p.endswith('/topology')}
        # Only servers with hw:pmem or on a tiered host (plain is on mm1),
        # at the microversion with host_node.
        self.assertEqual(dict.fromkeys(['id-v1', 'id-v2', 'id-v3', 'id-v4',
                                        'id-plain'], 'compute 2.78'), asked)
