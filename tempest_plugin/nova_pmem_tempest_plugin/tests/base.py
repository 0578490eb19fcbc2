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
"""Base classes of the plugin's tests, shaped like Tempest's compute ones.

As ``tempest.api.compute.base``: ``skip_checks`` (the plugin's switch, the
microversions the class needs), ``setup_clients`` (admin clients beside
the primary user's), ``resource_setup`` (the microversion fixture), and
``create_flavor`` / ``create_server`` helpers that register their own
cleanup. Only Tempest's stable interfaces are imported (``tempest.lib``,
``tempest.config``, ``tempest.test``).
"""

from oslo_concurrency.fixture import lockutils as lock_fixture
from oslo_log import log as logging
from tempest import config
from tempest.lib.common import api_version_utils
from tempest.lib.common.utils import data_utils
from tempest.lib.common.utils import test_utils
from tempest.lib import exceptions as lib_exc
from tempest import test

from nova_pmem_tempest_plugin import hosts

CONF = config.CONF
LOG = logging.getLogger(__name__)

# The fault message of a server the scheduler found no host for.
NO_VALID_HOST = 'No valid host'
# Tests that boot servers hold this (external) lock: each one reads the
# hosts' load and expects decisions from it, which a server of another of
# these tests, booted meanwhile, would change.
HOSTS_LOCK = 'nova-pmem-hosts'
TERMINAL = ('ACTIVE', 'ERROR')


def error_message(exc):
    """The message of an API error (Nova's ``{"badRequest": {...}}``)."""
    body = getattr(exc, 'resp_body', None)
    if isinstance(body, dict):
        for value in body.values():
            if isinstance(value, dict) and 'message' in value:
                return value['message']
        if 'message' in body:
            return body['message']
    return str(exc)


class BaseAdminTest(api_version_utils.BaseMicroversionTest,
                    test.BaseTestCase):
    """Admin and primary credentials, compute microversions, cleanups."""

    credentials = ['primary', 'admin']

    @classmethod
    def skip_checks(cls):
        super(BaseAdminTest, cls).skip_checks()
        if not CONF.service_available.nova:
            raise cls.skipException('Nova is not available')
        if not CONF.service_available.pmem_filters:
            raise cls.skipException(
                'nova-pmem-filters is not enabled in this cloud '
                '([service_available] pmem_filters = False)')
        api_version_utils.check_skip_with_microversion(
            cls.min_microversion, cls.max_microversion,
            CONF.compute.min_microversion, CONF.compute.max_microversion)

    @classmethod
    def setup_credentials(cls):
        # No network for anyone: the tests boot servers without ports.
        cls.set_network_resources()
        super(BaseAdminTest, cls).setup_credentials()

    @classmethod
    def setup_clients(cls):
        super(BaseAdminTest, cls).setup_clients()
        cls.flavors_client = cls.os_primary.flavors_client
        cls.admin_flavors_client = cls.os_admin.flavors_client
        cls.admin_servers_client = cls.os_admin.servers_client
        cls.admin_aggregates_client = cls.os_admin.aggregates_client
        cls.admin_services_client = cls.os_admin.services_client
        cls.admin_hypervisor_client = cls.os_admin.hypervisor_client
        cls.admin_providers_client = cls.os_admin.resource_providers_client

    @classmethod
    def resource_setup(cls):
        super(BaseAdminTest, cls).resource_setup()
        cls.request_microversion = (
            api_version_utils.select_request_microversion(
                cls.min_microversion, CONF.compute.min_microversion))
        cls.setup_api_microversion_fixture(
            compute_microversion=cls.request_microversion)

    @classmethod
    def flavor_name(cls, label):
        return data_utils.rand_name(
            prefix=CONF.resource_name_prefix,
            name='%s-%s' % (cls.__name__, label))

    def create_flavor(self, label, ram, specs=None, vcpus=1):
        """A public flavor with ``specs``, deleted when the test ends."""
        client = self.admin_flavors_client
        flavor = client.create_flavor(
            name=self.flavor_name(label), ram=ram, vcpus=vcpus,
            disk=CONF.pmem_filters.flavor_disk_gb,
            id=data_utils.rand_uuid())['flavor']
        self.addCleanup(client.wait_for_resource_deletion, flavor['id'])
        self.addCleanup(test_utils.call_and_ignore_notfound_exc,
                        client.delete_flavor, flavor['id'])
        if specs:
            client.set_flavor_extra_spec(flavor['id'], **specs)
        return flavor


class BasePlacementTest(BaseAdminTest):
    """Boots servers as admin and reads where the scheduler put them.

    ``resource_setup`` reads the compute hosts (nova-compute up and
    enabled) and the kind of each, from its aggregates' metadata as the
    docs say the scheduler reads it (:mod:`nova_pmem_tempest_plugin.contract`).
    """

    # 2.74: server create takes a host, which still goes through the
    # scheduler's filters (a forced host, "zone:host", would skip them).
    min_microversion = '2.74'

    @classmethod
    def resource_setup(cls):
        super(BasePlacementTest, cls).resource_setup()
        cls.default_hot_ratio = CONF.pmem_filters.default_hot_ratio
        cls.hosts = hosts.compute_hosts(cls.admin_services_client)
        cls.profiles = hosts.host_profiles(
            cls.admin_aggregates_client, cls.hosts,
            CONF.pmem_filters.default_host_mode)
        LOG.info('compute hosts and kinds: %s', ', '.join(
            '%s=%s' % (h, p.mode or 'unknown (%s)' % p.problem)
            for h, p in sorted(cls.profiles.items())))

    def setUp(self):
        super(BasePlacementTest, self).setUp()
        self.useFixture(lock_fixture.LockFixture(HOSTS_LOCK, 'tempest-'))

    def hosts_of(self, *modes):
        return [h for h in sorted(self.profiles)
                if self.profiles[h].mode in modes]

    def create_server(self, flavor, host=None):
        """Boot ``flavor`` (on ``host``, through the filters), as admin.

        The server is deleted, and its deletion waited for, when the test
        ends, whatever became of it.
        """
        client = self.admin_servers_client
        kwargs = {}
        if host:
            kwargs['host'] = host
        server = client.create_server(
            name=data_utils.rand_name(prefix=CONF.resource_name_prefix,
                                      name=self.__class__.__name__),
            imageRef=CONF.compute.image_ref, flavorRef=flavor['id'],
            networks=CONF.pmem_filters.server_networks, **kwargs)['server']
        self.addCleanup(self.wait_for_deletion, server['id'])
        self.addCleanup(test_utils.call_and_ignore_notfound_exc,
                        client.delete_server, server['id'])
        return server

    def wait_for_deletion(self, server_id):
        """Until the server is gone ([compute] build_timeout).

        Tempest's service client leaves servers' deletion to
        ``tempest.common.waiters``, which is not a plugin interface.
        """
        def gone():
            try:
                self.admin_servers_client.show_server(server_id)
            except lib_exc.NotFound:
                return True
            return False

        if not test_utils.call_until_true(gone, CONF.compute.build_timeout,
                                          CONF.compute.build_interval):
            raise lib_exc.TimeoutException(
                'server %s still there %s s after its deletion'
                % (server_id, CONF.compute.build_timeout))

    def wait_settled(self, server_id):
        """The server once ACTIVE or ERROR ([compute] build_timeout)."""
        found = {}

        def settled():
            found['server'] = self.admin_servers_client.show_server(
                server_id)['server']
            return found['server']['status'] in TERMINAL

        if not test_utils.call_until_true(settled,
                                          CONF.compute.build_timeout,
                                          CONF.compute.build_interval):
            raise lib_exc.TimeoutException(
                'server %s is %s, neither ACTIVE nor ERROR, after %s s'
                % (server_id, found['server']['status'],
                   CONF.compute.build_timeout))
        return found['server']

    def boot(self, flavor, host=None):
        return self.wait_settled(self.create_server(flavor, host)['id'])

    def assert_active(self, server, on=None):
        """ACTIVE, on one of the hosts ``on`` if given; returns the host."""
        fault = (server.get('fault') or {}).get('message')
        self.assertEqual('ACTIVE', server['status'],
                         'server %s: %s' % (server['id'], fault))
        host = server['OS-EXT-SRV-ATTR:host']
        if on is not None:
            prof = self.profiles.get(host)
            self.assertIn(host, on, 'server %s landed on %s (%s), not on '
                          'one of %s' % (server['id'], host,
                                         prof and prof.mode or 'unknown',
                                         ', '.join(on)))
        return host

    def assert_no_valid_host(self, server, why):
        """ERROR with the scheduler's NoValidHost fault."""
        fault = (server.get('fault') or {}).get('message') or ''
        self.assertEqual('ERROR', server['status'],
                         'server %s is %s on %s, but %s' % (
                             server['id'], server['status'],
                             server.get('OS-EXT-SRV-ATTR:host'), why))
        self.assertIn(NO_VALID_HOST, fault,
                      'server %s is ERROR but not for want of a host: %s'
                      % (server['id'], fault))
