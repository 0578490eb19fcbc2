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
"""The planner's loop closed in real Nova.

For each node kind of the built-in scenario and each workload, the output of
``nova-pmem-planner nova-config`` is applied to an in-process Nova whose one
compute is sized as the scenario's node (vCPUs and visible memory): the
aggregate metadata through the API, the compute's allocation options, the
scheduler's ``[pmem]`` options and the flavor with its extra specs. Then the
flavor is booted until NoValidHost, and Nova must have admitted exactly the
planner's ``vms_per_node``.
"""

import configparser
import dataclasses
import os
import re
import shlex
import time

import fixtures

from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import nearmem
from nova_pmem_filters.planner import model
from nova_pmem_filters.planner import realise
from nova_pmem_filters.planner import scenario
from nova_pmem_filters.planner import tables
from nova_pmem_filters.planner import vmsizing
from tests.functional import base
from tests.unit.crosscut import test_agreement

# nova.conf keys of nova-config's output -> (option, group) for self.flags.
COMPUTE_OPTIONS = {
    '[DEFAULT] reserved_host_memory_mb': ('reserved_host_memory_mb', None,
                                          int),
    '[DEFAULT] ram_allocation_ratio': ('ram_allocation_ratio', None, float),
    '[DEFAULT] cpu_allocation_ratio': ('cpu_allocation_ratio', None, float),
}
SCHEDULER_OPTIONS = {
    '[pmem] cache_overcommit_ratio': ('cache_overcommit_ratio', 'pmem',
                                      float),
}


def planned_aggregate(frame, agg):
    """The metadata nova-config prints for aggregate ``agg``."""
    return {key: value for scope, target, key, value in zip(
        frame.scope, frame.target, frame.key, frame.value)
        if scope == 'aggregate' and target == agg and key != 'create'}


def planned_flavor(frame, workload_name):
    """(vCPUs, RAM MB, extra specs) nova-config prints for a workload."""
    rows = frame[(frame.scope == 'flavor') & (frame.target == workload_name)]
    create = shlex.split(rows[rows.key == 'create'].command.iloc[0])
    specs = {key: value for key, value in zip(rows.key, rows.value)
             if key != 'create'}
    return (int(create[create.index('--vcpus') + 1]),
            int(create[create.index('--ram') + 1]), specs,
            int(create[create.index('--disk') + 1]))


def apply_options(test, frame, scope, target, options):
    """Set ``test``'s options from nova-config's rows for ``target``."""
    rows = frame[(frame.scope == scope) & (frame.target == target)]
    for key, value in zip(rows.key, rows.value):
        if key in options:
            name, group, cast = options[key]
            test.flags(**{name: cast(value), 'group': group})


# Servers per multi-create request while a test fills a host. Each build's
# claim reads every allocation on the host from Placement, those of the
# request's later servers too: the smaller, the fewer reads; the larger,
# the fewer requests.
CHUNK = 10


class PlannerLoopBase(base.PmemTestBase):
    """Boot a planned flavor on a compute configured by nova-config."""

    # Each test starts the one compute it needs, configured by the plan.
    HOSTS = ()
    AGGREGATES = ()
    # The built-in scenario the tests plan with (None: the default).
    SCENARIO = None

    def setUp(self):
        super(PlannerLoopBase, self).setUp()
        self.scenario = scenario.load(self.SCENARIO)

    def _apply(self, frame, scope, target, options):
        apply_options(self, frame, scope, target, options)

    def _plan(self, config_name, workload_name):
        """Apply nova-config's output for one config and one workload."""
        frame = realise.settings(self.scenario,
                                 workloads=[workload_name])
        agg = realise.aggregate_name(config_name)
        self._apply(frame, 'compute', 'nova.conf of the hosts in %s' % agg,
                    COMPUTE_OPTIONS)
        self._apply(frame, 'scheduler', 'nova.conf of the schedulers',
                    SCHEDULER_OPTIONS)
        return self._start_planned(frame, config_name, workload_name)

    def _start_planned(self, frame, config_name, workload_name):
        """A compute sized as the config's node, its aggregate, the flavor.

        The aggregate's metadata and the flavor as ``frame`` (nova-config's
        rows) prints them.
        """
        agg = realise.aggregate_name(config_name)
        node = model.node(self.scenario.configs[config_name],
                          self.scenario.policies)
        host = base.Host('node1', vcpus=node.vcpus,
                         memory_gb=node.visible_memory_gb, local_gb=4000)
        self._start_sized_compute(host)
        self._run_periodics()

        self._create_pmem_aggregate(base.Aggregate(
            agg, ['node1'], planned_aggregate(frame, agg)))

        vcpus, ram_mb, specs, disk = planned_flavor(frame, workload_name)
        flavor = self._create_flavor(
            name=workload_name, memory_mb=ram_mb, vcpu=vcpus, disk=disk,
            extra_spec=specs)
        return node, flavor

    def _boot_until_full(self, flavor, limit, first=0):
        """Boot ``flavor`` one by one until NoValidHost: how many landed.

        ``first``: how many servers are on the host already.
        """
        admitted = first
        while admitted <= limit:
            server = self._boot(flavor, expected_state=None)
            if server['status'] == 'ERROR':
                self._assert_no_valid_host(server)
                return admitted
            admitted += 1
        self.fail('Nova admitted more than %d servers' % limit)

    def _create_many(self, flavor, count):
        """One multi-create request of ``count``: True if all landed.

        Nova schedules its instances one after the other, each counted
        against the host before the next (Placement's claims; the pmem
        filters' ledger, tests.functional.test_cache_bound.MultiCreateTest);
        where not all fit, none is built.
        """
        body = self._build_server(flavor_id=flavor, image_uuid=base.IMAGE,
                                  networks='none')
        body.update(min_count=count, max_count=count,
                    return_reservation_id=True)
        reservation = self.api.post_server({'server': body})[
            'reservation_id']
        try:
            # Where all land, nova-compute notifies each build's end: no
            # poll of the API takes CPU from the builds meanwhile.
            self.notifier.wait_for_versioned_notifications(
                'instance.create.end', n_events=self._builds + count)
        except AssertionError:
            pass  # Not all of them (yet): the API says.
        for pause in base.pauses(500):
            servers = self.api.get_servers(
                search_opts={'reservation_id': reservation})
            if len(servers) == count and all(
                    s['status'] == 'ACTIVE' or (
                        s['status'] == 'ERROR' and 'fault' in s)
                    for s in servers):
                break
            time.sleep(pause)
        else:
            self.fail('the servers of %s did not end building: %s' % (
                reservation, [s['status'] for s in servers]))
        for server in servers:
            base.scheduler_told_of_boot(self, server)
        return all(s['status'] == 'ACTIVE' for s in servers)

    def _admitted(self, flavor, promised):
        """How many servers of ``flavor`` Nova admits on the planned host.

        The first ``promised - 1`` in multi-create requests of CHUNK (a
        node holds up to 92: booted one by one, most of a test's time),
        then one by one until NoValidHost. Where a request does not land
        whole, the count goes on one by one from there, so that the
        failure says what Nova admits.
        """
        landed = 0
        while promised - 1 - landed > 0:
            count = min(CHUNK, promised - 1 - landed)
            if not self._create_many(flavor, count):
                break
            landed += count
        return self._boot_until_full(flavor, promised + 2, first=landed)

    def _check(self, config_name, workload_name):
        node, flavor = self._plan(config_name, workload_name)
        workload = self.scenario.workloads[workload_name]
        planned, binding = vmsizing.density(node, workload,
                                            self.scenario.policies)
        self.assertGreater(planned, 0)
        admitted = self._admitted(flavor, planned)
        self.assertEqual(
            planned, admitted,
            '%s on %s: the planner counted %d (%s binds), Nova admitted %d'
            % (workload_name, config_name, planned, binding, admitted))
        return planned, binding


class PlannerLoopTest(PlannerLoopBase):
    """Nova admits what the planner counted, node kind by node kind."""

    def test_dram_node_redis(self):
        self._check('dram-384', 'redis')

    def test_dram_node_mysql(self):
        self._check('dram-384', 'mysql')

    def test_memory_mode_node_redis(self):
        self._check('mm-192-512', 'redis')

    def test_memory_mode_node_mysql(self):
        self._check('mm-192-512', 'mysql')

    def test_memory_mode_node_cache_binds(self):
        """A hotter Redis: the DRAM cache binds before memory.

        PmemCacheFilter enforces it, and Nova still admits exactly the plan.
        """
        raw = self.scenario.workloads['redis']
        specs = dict(raw.extra_specs, **{'pmem:hot_ratio': '0.45'})
        hot = scenario.Workload(
            name='redis', vcpus=raw.vcpus, ram_gb=raw.ram_gb,
            used_gb=raw.used_gb, extra_specs=specs,
            request=extra_specs.parse(specs))
        self.scenario = scenario.Scenario(
            name=self.scenario.name, source=self.scenario.source,
            catalog=self.scenario.catalog, configs=self.scenario.configs,
            baseline=self.scenario.baseline,
            workloads=dict(self.scenario.workloads, redis=hot),
            policies=self.scenario.policies,
            performance=self.scenario.performance)
        planned, binding = self._check('mm-192-512', 'redis')
        self.assertEqual('dram_cache', binding)
        self.assertEqual(
            nearmem.instances_in_cache(192 * base.GB, 0.45 * 32 * base.GB),
            planned)


class CxlPlannerLoopTest(PlannerLoopBase):
    """The same loop for the CXL scenario's nodes (cxl-cost-matched).

    The tiered CXL kinds are configured as nova-config prints them
    (``pmem_mode=cxl_flat`` or ``cxl_kmem`` with the DRAM as
    ``pmem_dram_cache_gb``) and their flavors say ``pmem:modes`` with the
    Optane values they pass as.
    """

    SCENARIO = 'cxl-cost-matched'

    def test_dram_node_analytics(self):
        self._check('dram-2304', 'analytics')

    def test_flat_node_analytics(self):
        self._check('flat-1536-1536', 'analytics')

    def test_kmem_node_analytics(self):
        self._check('kmem-1536-1536', 'analytics')

    def test_kmem_node_near_memory_binds(self):
        """All of the analytics RAM hot: the DRAM binds before memory."""
        raw = self.scenario.workloads['analytics']
        specs = dict(raw.extra_specs, **{'pmem:hot_ratio': '1'})
        self.scenario = dataclasses.replace(
            self.scenario, workloads=dict(
                self.scenario.workloads, analytics=dataclasses.replace(
                    raw, extra_specs=specs,
                    request=extra_specs.parse(specs))))
        planned, binding = self._check('kmem-1536-1536', 'analytics')
        self.assertEqual('dram_cache', binding)


class HotRatioLoopTest(PlannerLoopBase):
    """Planner, simulator and Nova agree with and without ``hot_ratio``.

    A workload that gives no hot ratio is planned with the core's default;
    nova-config writes it on the flavor, so Nova admits the planned count
    even where ``[pmem] default_hot_ratio`` says otherwise.
    """

    def _agree(self, hot_ratio, expected):
        self.scenario = test_agreement.hot_ratio_scenario(hot_ratio)
        planned, binding = self._check('mm-192-512', 'cache64')
        self.assertEqual((expected, 'dram_cache'), (planned, binding))
        self.assertEqual(planned, test_agreement.simulated_density(
            self.scenario, 'mm-192-512', 'cache64'))

    def test_without_hot_ratio(self):
        # The cloud's own default differs from the one the plan used.
        self.flags(default_hot_ratio=0.25, group='pmem')
        self._agree(None, 6)

    def test_with_hot_ratio(self):
        self._agree(0.25, 12)


def _snippet_options(text):
    """{(section, option): value} of a nova.conf snippet, as printed."""
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str
    parser.read_string(text)
    found = {('DEFAULT', k): v for k, v in parser.defaults().items()}
    for section in parser.sections():
        for key in parser.options(section):
            if key not in parser.defaults():
                found[(section, key)] = parser.get(section, key)
    return found


class PrintedPlanLoopTest(PlannerLoopBase):
    """What ``compare`` prints is what the printed configuration admits.

    For every built-in scenario, compute role and workload, with and
    without Placement accounting: the in-process Nova is configured from
    ``nova-config``'s default outputs for the whole scenario (the role's
    nova.conf snippet, the script's aggregate and flavor, the provider
    config file), the flavor is booted until NoValidHost, and the count
    must be ``compare``'s ``vms_per_node`` for the same options.
    """

    # The CXL nodes hold up to 92 VMs, booted one by one: about 90 s on an
    # idle machine, three times that with every CPU busy.
    TIMEOUT_SCALING_FACTOR = 6

    def _printed(self, config_name, workload_name, accounting):
        rows = realise.rows(self.scenario,
                            placement_accounting=accounting)
        agg = realise.aggregate_name(config_name)
        role = realise.compute_role(agg)
        options = _snippet_options(realise.nova_conf(rows, role))
        options.update(_snippet_options(realise.nova_conf(
            rows, realise.SCHEDULER_ROLE)))
        for (section, key), value in options.items():
            name = '[%s] %s' % (section, key)
            if name in COMPUTE_OPTIONS or name in SCHEDULER_OPTIONS:
                opt, group, cast = dict(COMPUTE_OPTIONS,
                                        **SCHEDULER_OPTIONS)[name]
                self.flags(**{opt: cast(value), 'group': group})
        if accounting:
            conf_dir = self.useFixture(fixtures.TempDir()).path
            with open(os.path.join(conf_dir, 'near.yaml'), 'w') as f:
                f.write(realise.provider_config(rows, role))
            self.flags(provider_config_location=conf_dir, group='compute')
        return realise.frame(rows)

    def _check_printed(self, scenario_name, config_name, workload_name,
                       accounting):
        self.scenario = scenario.load(scenario_name)
        frame = self._printed(config_name, workload_name, accounting)
        _node, flavor = self._start_planned(frame, config_name,
                                            workload_name)
        printed = {(r['config'], r['workload']): r['vms_per_node']
                   for r in tables.comparison_rows(
                       self.scenario, placement_accounting=accounting)}
        promised = printed[(config_name, workload_name)]
        what = '%s, %s on %s (placement accounting %s): compare prints %d' % (
            scenario_name, workload_name, config_name, accounting, promised)
        self.assertGreater(promised, 0, what)
        admitted = self._admitted(flavor, promised)
        self.assertEqual(promised, admitted,
                         '%s, Nova admitted %d' % (what, admitted))


def _printed_case(scenario_name, config_name, workload_name, accounting):
    def test(self):
        self._check_printed(scenario_name, config_name, workload_name,
                            accounting)
    return test


def _add_printed_cases():
    for scenario_name in scenario.builtin_names():
        scen = scenario.load(scenario_name)
        for config_name in scen.configs:
            for workload_name in scen.workloads:
                for accounting in (False, True):
                    name = 'test_%s_%s_%s%s' % (
                        scenario_name, config_name, workload_name,
                        '_accounted' if accounting else '')
                    setattr(PrintedPlanLoopTest,
                            re.sub(r'[^0-9a-zA-Z_]', '_', name),
                            _printed_case(scenario_name, config_name,
                                          workload_name, accounting))


_add_printed_cases()
