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
"""Keystone's users and catalog for the integration deployment.

After ``keystone-manage bootstrap`` (deploy.sh) there is the admin, its
project, the default roles and the identity endpoints. This adds, through
Keystone's API as the admin, what a cloud installer adds:

* the ``service`` project, with users ``nova``, ``placement``,
  ``watcher`` and ``aetos`` holding the ``admin`` and ``service`` roles in
  it (as devstack gives its service users): Placement's default policy
  lets ``service`` through, Nova's [placement] user lists and changes
  every resource provider, and Aetos passes the queries of ``service``
  (Watcher's) to Prometheus unchanged;
* the ``compute`` (``nova``), ``placement``, ``infra-optim`` (``watcher``)
  and ``metric-storage`` (``aetos``) services with public and internal
  endpoints in the region (Watcher's API and Aetos run only while a
  scenario needs them: deploy.sh ``watcher start``);
* ``client.MEMBER``: a user with the ``member`` role only, in a project of
  its own, for the scenarios that need a user who is not an admin;

and writes a ``clouds.yaml`` whose cloud ``it`` is the admin. Each step
finds what a previous run made rather than making it twice.

    python -m tests.integration.keystonesetup SERVICE_PASSWORD CLOUDS_YAML
"""

import sys

import yaml

from nova_pmem_filters import fileutil
from tests.integration import client as api

SERVICE_USERS = ('nova', 'placement', 'watcher', 'aetos')
SERVICE_ROLES = ('admin', 'service')
CATALOG = (('compute', 'nova', api.COMPUTE_URL),
           ('placement', 'placement', api.PLACEMENT_URL),
           ('infra-optim', 'watcher', api.WATCHER_URL),
           ('metric-storage', 'aetos', api.AETOS_URL))
INTERFACES = ('public', 'internal')


class Identity(object):
    """Keystone's v3 API as the admin."""

    def __init__(self):
        self.api = api.Client(url=api.KEYSTONE_URL)

    def find(self, collection, **filters):
        query = '&'.join('%s=%s' % item for item in sorted(filters.items()))
        return self.api.get('/%s?%s' % (collection, query))[collection]

    def ensure(self, collection, body, **filters):
        """The one of ``collection`` matching ``filters``, made if none."""
        found = self.find(collection, **filters)
        if found:
            return found[0]
        member = collection[:-1]
        return self.api.post('/%s' % collection, {member: body})[member]

    def project(self, name):
        return self.ensure('projects', {'name': name, 'domain_id': 'default'},
                           name=name)

    def role(self, name):
        return self.find('roles', name=name)[0]

    def user(self, name, password, project, roles):
        user = self.find('users', name=name)
        if user:
            # A rerun with another password: the one given wins.
            user = self.api.request('PATCH', '/users/%s' % user[0]['id'],
                                    {'user': {'password': password}},
                                    ok=(200,))['user']
        else:
            user = self.api.post('/users', {'user': {
                'name': name, 'password': password, 'domain_id': 'default',
                'default_project_id': project['id']}})['user']
        for role in roles:
            self.api.put('/projects/%s/users/%s/roles/%s'
                         % (project['id'], user['id'],
                            self.role(role)['id']), None)
        return user

    def service(self, service_type, name, url):
        service = self.ensure('services', {'type': service_type,
                                           'name': name, 'enabled': True},
                              type=service_type)
        have = {e['interface'] for e in self.find(
            'endpoints', service_id=service['id'])}
        for interface in INTERFACES:
            if interface not in have:
                self.api.post('/endpoints', {'endpoint': {
                    'service_id': service['id'], 'interface': interface,
                    'url': url, 'region_id': api.REGION}})


def setup(service_password):
    identity = Identity()
    service = identity.project('service')
    for name in SERVICE_USERS:
        identity.user(name, service_password, service, SERVICE_ROLES)
    member = api.MEMBER
    identity.user(member.username, member.password,
                  identity.project(member.project), ('member',))
    for service_type, name, url in CATALOG:
        identity.service(service_type, name, url)


def write_clouds_yaml(path, clouds=None):
    """clouds.yaml with ``clouds`` ({name: credentials}; ``it``: admin)."""
    if clouds is None:
        clouds = {'it': api.ADMIN}
    fileutil.write_atomic(path, yaml.safe_dump({'clouds': {
        name: api.cloud_config(creds) for name, creds in clouds.items()}}))


def main(argv):
    service_password, clouds_yaml = argv[1:3]
    setup(service_password)
    write_clouds_yaml(clouds_yaml)
    print('Keystone: service users %s, catalog %s, user %s; %s'
          % (', '.join(SERVICE_USERS), ', '.join(c[0] for c in CATALOG),
             api.MEMBER.username, clouds_yaml))


if __name__ == '__main__':
    sys.exit(main(sys.argv))
