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
"""A real Nova with nova-pmem-filters enabled, for the functional tests.

API, conductor, scheduler, fake-driver computes and Placement run in one
process (Nova's ``ProviderUsageBaseTestCase``). The scheduler is configured
as README.rst tells operators, and the computes are sized like the nodes of
the field notes (section 1), one per memory mode::

    dram1  80 vCPU  384 GB DRAM                aggregate dram
                                               pmem_mode=dram
    mm1    80 vCPU  512 GB PMem (visible)      aggregate pmem-mm
                    192 GB DRAM cache          pmem_mode=memory_mode
                                               pmem_dram_cache_gb=192
    ad1    80 vCPU  192 GB DRAM                aggregate pmem-ad
                    (vPMEM: see test_vpmem)    pmem_mode=app_direct

Aggregates are created and labelled through the compute API, as an operator
would with ``openstack aggregate set --property``.
"""

import collections
import logging
import os
import sys
import time

import fixtures

import nova.conf
from nova import context as nova_context
from nova import objects
from nova.tests import fixtures as nova_fixtures
from nova.tests.functional import integrated_helpers
from nova.virt import fake

from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters.scheduler import ledger
from nova_pmem_filters.scheduler import logonce

LOG = logging.getLogger(__name__)
NOVA_CONF = nova.conf.CONF
# Longer than any test runs.
SERVICE_DOWN_TIME = 3600

# The image the Glance fixture always has.
IMAGE = '155d900f-4e14-4e4c-a73d-069cbf4541e6'

GB = profile.MB_PER_GB

DRAM_HOST = 'dram1'
MM_HOST = 'mm1'
AD_HOST = 'ad1'

# The DRAM cache of the Memory-Mode node: 12 x 16 GB DDR4.
MM_CACHE_GB = 192

# The [filter_scheduler] settings of README.rst, "Install into a Nova
# controller". test_config.ReadmeConfigTest checks that they still match.
AVAILABLE_FILTERS = [
    'nova.scheduler.filters.all_filters',
    'nova_pmem_filters.filters.all_filters',
]
ENABLED_FILTERS = [
    'ComputeFilter',
    'ComputeCapabilitiesFilter',
    'ImagePropertiesFilter',
    'ServerGroupAntiAffinityFilter',
    'ServerGroupAffinityFilter',
    'PmemModeFilter',
    'PmemCacheFilter',
]
WEIGHT_CLASSES = [
    'nova.scheduler.weights.all_weighers',
    'nova_pmem_filters.weighers.all_weighers',
]

Host = collections.namedtuple('Host', 'name vcpus memory_gb local_gb')
Aggregate = collections.namedtuple('Aggregate', 'name hosts metadata')

DRAM = Host(DRAM_HOST, vcpus=80, memory_gb=384, local_gb=2000)
MEMORY_MODE = Host(MM_HOST, vcpus=80, memory_gb=512, local_gb=2000)
APP_DIRECT = Host(AD_HOST, vcpus=80, memory_gb=192, local_gb=2000)

DRAM_AGGREGATE = Aggregate(
    'dram', [DRAM_HOST], {profile.MODE_KEY: kinds.DRAM})
MEMORY_MODE_AGGREGATE = Aggregate(
    'pmem-mm', [MM_HOST], {profile.MODE_KEY: kinds.MEMORY_MODE,
                           profile.DRAM_CACHE_KEY: str(MM_CACHE_GB)})
APP_DIRECT_AGGREGATE = Aggregate(
    'pmem-ad', [AD_HOST], {profile.MODE_KEY: kinds.APP_DIRECT})


def wait_for_status(test, server, states, max_retries):
    """Poll ``server`` until its status is one of ``states``.

    Nova's helper polls every 0.5 s; the drivers here build in milliseconds
    and the tests boot many servers. An ERROR counts once it has its fault.
    The wait between polls grows from 20 ms to 200 ms (:func:`pauses`).
    """
    for pause in pauses(max_retries):
        server = test.api.get_server(server['id'])
        if server['status'] in states and (
                server['status'] != 'ERROR' or 'fault' in server):
            return server
        time.sleep(pause)
    test.fail('server %s is %s, expected %s'
              % (server['id'], server['status'], states))


# The versioned notifications that end a server's build, and the field
# of their payload that names the server.
BUILD_ENDS = {'instance.create.end': 'uuid',
              'instance.create.error': 'uuid',
              'compute_task.build_instances.error': 'instance_uuid'}


def wait_for_build_end(test, server, max_retries=120):
    """Wait until Nova has notified the end of ``server``'s build.

    Reads the notifications the test's notifier holds, in memory, where a
    poll of the API would take the CPU the build needs. It returns within
    about 20 s even if none comes: the API, asked next, decides.
    """
    for pause in pauses(max_retries):
        for note in list(test.notifier.versioned_notifications):
            field = BUILD_ENDS.get(note.get('event_type'))
            if field and (note['payload'].get('nova_object.data') or {}).get(
                    field) == server['id']:
                return
        time.sleep(pause)


def pauses(count, first=0.02, most=0.2):
    """``count`` waits between polls: from ``first``, growing to ``most``.

    A poll is a request through Nova's API or its database, which takes
    the CPU that what it waits for needs.
    """
    pause = first
    for _ in range(count):
        yield pause
        pause = min(pause * 1.5, most)


def fresh_process_state(test):
    """Empty per-process state of the pmem classes for one test.

    One process-wide ledger and warning set serve every test that runs in a
    worker: each test starts with empty ones. Each test's scheduler is new,
    so it checks its aggregates once, as a new worker process would. Call
    before the services start.
    """
    test.useFixture(fixtures.MonkeyPatch(
        'nova_pmem_filters.scheduler.ledger.LEDGER', ledger.HotRamLedger()))
    logonce._WARNED.clear()
    test.addCleanup(logonce._WARNED.clear)
    test.useFixture(fixtures.MonkeyPatch(
        'nova_pmem_filters.scheduler.aggregate_view._VIEW_CHECKED_PID', None))
    test.useFixture(fixtures.MonkeyPatch(
        'nova_pmem_filters.scheduler.aggregate_view._VIEW_REPAIR', None))


def capture_pmem_logs(test):
    """Keep our DEBUG lines in ``test.pmem_log``; check them at cleanup.

    Call after Nova's setUp: its cleanup deletes test attributes.
    """
    if os.environ.get('OS_DEBUG') not in ('True', 'true', '1', 'yes'):
        # StandardLogging formats every DEBUG record of Nova, to catch
        # broken log calls, and throws it away: a quarter of the time of a
        # boot. Ours are kept below.
        root = logging.getLogger()
        test.addCleanup(root.setLevel, root.level)
        root.setLevel(logging.INFO)
    # Nova's StandardLogging keeps INFO and above unless OS_DEBUG is set;
    # the per-host reasons of the filters are DEBUG lines.
    test.pmem_log = test.useFixture(fixtures.FakeLogger(
        name='nova_pmem_filters', level=logging.DEBUG,
        format='%(levelname)s [%(name)s] %(message)s'))
    test.addCleanup(test._assert_pmem_code_never_failed)


def scheduler_told_of_boot(test, server):
    """``server``; if ACTIVE, once nova-compute has told the scheduler.

    nova-compute saves the server ACTIVE before it pushes it to the
    scheduler (track_instance_changes) and then notifies create.end: wait
    for the push, or the next boot may be scheduled without this server in
    the host's instances. ``test._builds`` counts the waits.
    """
    if server['status'] == 'ACTIVE':
        test._builds += 1
        test.notifier.wait_for_versioned_notifications(
            'instance.create.end', n_events=test._builds)
    return server


def delete_told_to_scheduler(test, server):
    """Delete ``server``; return once nova-compute has told the scheduler.

    nova-compute tells the scheduler before it notifies delete.end; a
    server that never left the API (NoValidHost) is deleted there, and
    notifies delete.end too: counted (``test._deletes``), so that the next
    wait is for the next delete.
    """
    test.api.delete_server(server['id'])
    test._deletes += 1
    test.notifier.wait_for_versioned_notifications(
        'instance.delete.end', n_events=test._deletes)


class PmemTestBase(integrated_helpers.ProviderUsageBaseTestCase):
    """Nova with the pmem filters and weighers, and one host per mode.

    Subclasses pick their hosts and aggregates with ``HOSTS`` and
    ``AGGREGATES``, and whether computes push their instances to the
    scheduler with ``TRACK_INSTANCE_CHANGES``.
    """

    compute_driver = 'fake.MediumFakeDriver'
    microversion = 'latest'

    HOSTS = (DRAM, MEMORY_MODE, APP_DIRECT)
    AGGREGATES = (DRAM_AGGREGATE, MEMORY_MODE_AGGREGATE, APP_DIRECT_AGGREGATE)
    TRACK_INSTANCE_CHANGES = True
    # Whether a test makes the scheduler's aggregates stale on purpose.
    EXPECT_STALE_VIEW = False

    def scheduler_flags(self):
        """[filter_scheduler] options of the scheduler: README.rst's."""
        return dict(available_filters=AVAILABLE_FILTERS,
                    enabled_filters=ENABLED_FILTERS,
                    weight_classes=WEIGHT_CLASSES)

    def setUp(self):
        # The scheduler reads these when it starts, in super().setUp().
        self.flags(track_instance_changes=self.TRACK_INSTANCE_CHANGES,
                   group='filter_scheduler', **self.scheduler_flags())
        # pip installs api-paste.ini under the environment's prefix, not
        # under Nova's default state_path.
        self.flags(api_paste_config=os.path.join(
            sys.prefix, 'etc', 'nova', 'api-paste.ini'), group='wsgi')
        # A compute whose heartbeat is older than service_down_time (60 s)
        # is down: ComputeFilter drops it and the API deletes its servers
        # itself, leaving the compute's usage as it was. On a busy machine
        # a test can go that long between heartbeats; these tests are about
        # placement, not liveness.
        self.flags(service_down_time=SERVICE_DOWN_TIME)
        fresh_process_state(self)

        super(PmemTestBase, self).setUp()

        capture_pmem_logs(self)

        self.useFixture(nova_fixtures.CastAsCallFixture(self))
        self.flags(instances=-1, cores=-1, ram=-1, group='quota')

        self._builds = 0
        self._deletes = 0
        for host in self.HOSTS:
            self._start_sized_compute(host)
        self._run_periodics()
        self.aggregates = {}
        for aggregate in self.AGGREGATES:
            self._create_pmem_aggregate(aggregate)

    # -- hosts and aggregates ------------------------------------------------

    def _start_sized_compute(self, host):
        """Start a fake compute and give it the size of ``host``.

        The fake driver reports what it is told; the next periodic update
        writes it to the compute node and to Placement.
        """
        compute = self._start_compute(host.name)
        driver = compute.manager.driver
        driver.vcpus = host.vcpus
        driver.memory_mb = host.memory_gb * GB
        driver.local_gb = host.local_gb
        driver.resources = fake.Resources(
            vcpus=driver.vcpus, memory_mb=driver.memory_mb,
            local_gb=driver.local_gb)
        return compute

    def _create_pmem_aggregate(self, aggregate):
        agg = self.admin_api.post_aggregate(
            {'aggregate': {'name': aggregate.name}})
        self.admin_api.post_aggregate_action(
            agg['id'],
            {'set_metadata': {'metadata': dict(aggregate.metadata)}})
        for host in aggregate.hosts:
            self.admin_api.add_host_to_aggregate(agg['id'], host)
        self.aggregates[aggregate.name] = agg['id']
        return agg['id']

    # -- flavors and servers -------------------------------------------------

    def _create_pmem_flavor(self, name, memory_gb, vcpus=4, extra_specs=None):
        return self._create_flavor(
            name=name, memory_mb=memory_gb * GB, vcpu=vcpus, disk=10,
            ephemeral=0, extra_spec=extra_specs)

    def _boot(self, flavor_id, expected_state='ACTIVE', az=None):
        """Boot a server and wait until it is ``expected_state``.

        ``expected_state=None`` waits for ACTIVE or ERROR, whichever comes.
        """
        server = self.api.post_server({'server': self._build_server(
            flavor_id=flavor_id, image_uuid=IMAGE, networks='none', az=az)})
        wait_for_build_end(self, server)
        server = self._wait_for_state_change(
            server, expected_state or ('ACTIVE', 'ERROR'))
        return scheduler_told_of_boot(self, server)

    def _delete(self, server):
        delete_told_to_scheduler(self, server)
        self._wait_until_deleted(server)

    # -- what the scheduler sees ----------------------------------------------

    def _settle(self, max_retries=500):
        """Wait until the scheduler's view is what the database says.

        Nova promises this only eventually: nova-compute writes its usage to
        the compute node record, and casts its instances to the scheduler
        (``track_instance_changes``), after the API has answered. A test
        that compares Nova's choices with a model of them waits for both
        before the next request: each compute node record holds the RAM and
        vCPUs of the instances the database has on the host, and the
        scheduler's pushed instances of each host are the database's. (Nova
        34 builds its HostStates anew for every request, from these.)

        What a lost or late update leaves wrong, Nova mends with its
        periodic tasks (``update_available_resource`` rewrites the record
        from the host's instances, ``_sync_scheduler_instance_info`` sends
        the scheduler their UUIDs): if waiting is not enough, they run
        once, as they would within a minute or two on a cloud, and the view
        must then be right.
        """
        problems = self._wait_for_view(max_retries)
        if not problems:
            return
        LOG.warning('Running the periodic tasks of the computes: %s',
                    '; '.join(problems))
        ctxt = nova_context.get_admin_context()
        for compute in self.computes.values():
            compute.manager.update_available_resource(ctxt)
            compute.manager._sync_scheduler_instance_info(ctxt)
        still = self._wait_for_view(max_retries)
        if still:
            self.fail('the scheduler does not see what the database says, '
                      'after the periodic tasks too: %s' % '; '.join(still))

    def _wait_for_view(self, max_retries):
        problems = None
        for pause in pauses(max_retries):
            problems = self._view_problems()
            if not problems:
                return None
            time.sleep(pause)
        return problems

    def _view_problems(self):
        ctxt = nova_context.get_admin_context()
        host_manager = self.scheduler_service.manager.host_manager
        problems = []
        for host in self.computes:
            node = objects.ComputeNode.get_by_nodename(ctxt, host)
            instances = objects.InstanceList.get_by_host(
                ctxt, host, expected_attrs=['flavor'])
            # memory_mb_used counts reserved_host_memory_mb too.
            ram = node.memory_mb_used - NOVA_CONF.reserved_host_memory_mb
            want_ram = sum(i.flavor.memory_mb for i in instances)
            want_vcpus = sum(i.flavor.vcpus for i in instances)
            if (ram, node.vcpus_used) != (want_ram, want_vcpus):
                problems.append(
                    '%s: compute node record %d MB, %d vCPUs used, its '
                    'instances %d MB, %d vCPUs (%s)' % (
                        host, ram, node.vcpus_used, want_ram, want_vcpus,
                        ', '.join('%s %s %s/%s' % (
                            i.uuid, i.flavor.name, i.vm_state, i.task_state)
                            for i in instances)))
                continue
            info = host_manager._instance_info.get(host)
            if info and info.get('updated'):
                pushed = set(info['instances'])
                if pushed != {i.uuid for i in instances}:
                    problems.append(
                        '%s: the scheduler has %d pushed instances, the '
                        'database %d' % (host, len(pushed), len(instances)))
                    continue
        return problems

    def _wait_for_state_change(self, server, expected_status,
                               max_retries=500):
        # Nova's helper polls every 0.5 s; the fake driver builds in a few
        # milliseconds, and these tests boot many servers.
        if isinstance(expected_status, str):
            expected_status = (expected_status,)
        return wait_for_status(self, server, expected_status, max_retries)

    def _host_of(self, server):
        return server['OS-EXT-SRV-ATTR:host']

    def _assert_no_valid_host(self, server):
        self.assertEqual('ERROR', server['status'])
        self.assertIsNone(self._host_of(server))
        self.assertIn('No valid host was found', server['fault']['message'])

    def _capacity(self, host, resource_class, amount):
        """How many times ``amount`` of a resource class fits ``host``.

        From its Placement inventory: (total - reserved) x allocation ratio.
        """
        rp_uuid = self._get_provider_uuid_by_host(host)
        inventory = self._get_provider_inventory(rp_uuid)[resource_class]
        usable = ((inventory['total'] - inventory['reserved'])
                  * inventory['allocation_ratio'])
        return int(usable // amount)

    # -- logs ----------------------------------------------------------------

    def _assert_pmem_code_never_failed(self):
        # Every test: the filters and weighers catch their own exceptions and
        # log "unexpected error"; such a line, or a traceback through our
        # code, is a bug even when the test's placements came out right.
        self.assertNotIn('unexpected error', self.pmem_log.output)
        if not self.EXPECT_STALE_VIEW:
            # The aggregate check must not see a difference where none is.
            self.assertNotIn('differ from the database', self.pmem_log.output)
        self.assertNotIn('Could not compare', self.pmem_log.output)
        self.assertNotRegex(self.stdlog.logger.output,
                            r'File "[^"]*nova_pmem_filters[/\\]')
