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
"""Operator scenarios: nova-pmem-doctor and the devstack plugin, for real.

Both talk to the deployment as an operator's tools would: the doctor
through openstacksdk, the plugin through the ``openstack`` client, with a
``clouds.yaml`` naming the deployment ``it``.

* **doctor**: on the cloud as set up, the doctor must report exactly the
  findings the suite's own setup has (``BASELINE``); then every finding the
  API lets an operator cause is planted through the real compute API and
  the doctor must report exactly those, with the right exit status; after
  the plants are removed it must report the baseline again.
* **devstack**: ``plugin.sh stack extra`` twice, then ``unstack`` twice,
  against this cloud: the aggregates and flavors it describes exist as
  described, an aggregate and a flavor it did not create are left alone,
  and unstack removes exactly what it created.
"""

import json
import os
import subprocess
import sys
import time

from nova_pmem_filters.core.formats import hostfile
from nova_pmem_filters.core.rules import extra_specs as pmem_specs
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import placement as pmem_placement
from nova_pmem_filters.core.rules import profile

from tests import devstack_plugin
from tests.integration import client as api
from tests.integration import keystonesetup

ERROR, WARNING, INFO = 'error', 'warning', 'info'
WORKERS = 'nova.conf [scheduler] workers'
ENABLED = 'nova.conf [filter_scheduler] enabled_filters'
AVAILABLE = 'nova.conf [filter_scheduler] available_filters'
WEIGHTS = 'nova.conf [filter_scheduler] weight_classes'

# What the suite's own setup has (see scenarios.Cloud.setup and deploy.sh):
# two scheduler workers, flavors it.cap and it.small (Memory-Mode-eligible)
# without near-memory requests while it.cap.placement has one.
BASELINE = {
    (WARNING, 'filter-only-cache-accounting', WORKERS),
    (WARNING, 'placement-accounting-partial', 'flavor it.cap'),
    (WARNING, 'placement-accounting-partial', 'flavor it.small'),
}

# The nova.conf the doctor audits after the plants: our filters listed in
# enabled_filters but not available, PmemCacheFilter left out, one of our
# weighers missing and Nova's weighers dropped.
DOCTOR_NOVA_CONF = '''[scheduler]
workers = 2
[filter_scheduler]
available_filters = nova.scheduler.filters.all_filters
enabled_filters = ComputeFilter,PmemModeFilter
weight_classes = nova_pmem_filters.weighers.PmemTierWeigher
[pmem]
default_hot_ratio = 0.5
'''

# Planted through the APIs, found with or without nova.conf and fleet.
PLANTED_IN_THE_CLOUD = {
    (WARNING, 'placement-accounting-partial', 'flavor it.cap'),
    (WARNING, 'placement-accounting-partial', 'flavor it.small'),
    (ERROR, 'invalid-pmem-mode', 'aggregate doc-bad-mode'),
    (ERROR, 'invalid-dram-cache', 'aggregate doc-bad-cache'),
    (WARNING, 'misspelt-key', 'aggregate doc-typo'),
    (WARNING, 'invalid-weight-multiplier', 'aggregate doc-typo'),
    (WARNING, 'memory-mode-without-cache', 'aggregate doc-mm-nocache'),
    (WARNING, 'dram-cache-without-memory-mode', 'aggregate doc-dram-cache'),
    (ERROR, 'aggregates-disagree', 'host ad1'),
    (ERROR, 'invalid-extra-spec', 'flavor doc.old'),
    (ERROR, 'vpmem-modes-conflict', 'flavor doc.vpmem'),
    (ERROR, 'near-memory-mismatch', 'flavor doc.near'),
    # pmem-mm's cache lowered to 16 GB under two 16-GB-hot instances.
    (ERROR, 'cache-overcommitted', 'host mm1'),
}

# With DOCTOR_NOVA_CONF and the fleet of write_fleet().
PLANTED = PLANTED_IN_THE_CLOUD | {
    (ERROR, 'filter-not-available', AVAILABLE),
    (ERROR, 'filter-not-enabled', ENABLED),
    (WARNING, 'weighers-not-configured', WEIGHTS),
    (WARNING, 'nova-weighers-dropped', WEIGHTS),
    # Discovery says mm1 has 192 GB of cache (more than the label now) and
    # mm2 is a dram host whose provider config says Memory Mode.
    (WARNING, 'profile-mismatch', 'host mm1'),
    (ERROR, 'profile-mismatch', 'host mm2'),
    (WARNING, 'mode-trait-mismatch', 'host mm2'),
    (ERROR, 'near-memory-inventory-mismatch', 'host mm2'),
    (INFO, 'fleet-host-unknown', 'host mm9'),
}

# Without nova.conf and fleet the labels are all there is, so both
# Memory-Mode hosts offer Placement more near memory than their (lowered)
# label says.
PLANTED_BARE = PLANTED_IN_THE_CLOUD | {
    (INFO, 'nova-conf-not-read', 'nova.conf'),
    (ERROR, 'near-memory-inventory-mismatch', 'host mm1'),
    (ERROR, 'near-memory-inventory-mismatch', 'host mm2'),
}

# Hosts of the deployment as nova-pmem-discover would describe them
# (deploy.sh COMPUTES): mode, DRAM GB.
HOSTS = {'dram1': (kinds.DRAM, 384), 'mm1': (kinds.MEMORY_MODE, 192),
         'mm2': (kinds.MEMORY_MODE, 192), 'ad1': (kinds.APP_DIRECT, 192)}


def write_clouds_yaml(path):
    """clouds.yaml with the deployment as cloud ``it``.

    Keystone's admin, password auth, the endpoints from the catalog.
    """
    keystonesetup.write_clouds_yaml(path)


def write_fleet(directory, overrides):
    os.makedirs(directory, exist_ok=True)
    for host, (mode, dram) in dict(HOSTS, **overrides).items():
        cache = float(dram) if mode == kinds.MEMORY_MODE else 0.0
        data = {'schema': hostfile.SCHEMA, 'hostname': host, 'mode': mode,
                'scheduler_mode': mode, 'dram_gb': float(dram),
                'visible_memory_gb': 512.0 if mode == kinds.MEMORY_MODE
                else float(dram), 'dram_cache_gb': cache}
        with open(os.path.join(directory, '%s.json' % host), 'w') as f:
            json.dump(data, f)


class Operator(object):
    """The doctor and the devstack plugin pointed at the deployment."""

    def __init__(self, cloud, work):
        self.cloud = cloud
        self.work = work
        os.makedirs(work, exist_ok=True)
        self.clouds_yaml = os.path.join(work, 'clouds.yaml')
        write_clouds_yaml(self.clouds_yaml)
        self.env = dict(os.environ, OS_CLIENT_CONFIG_FILE=self.clouds_yaml,
                        PATH='%s:%s' % (os.path.dirname(sys.executable),
                                        os.environ.get('PATH', '')))
        for name in [n for n in self.env if n.startswith('OS_')
                     and n != 'OS_CLIENT_CONFIG_FILE']:
            del self.env[name]

    def run_doctor(self, *argv):
        return subprocess.run(
            [sys.executable, '-m', 'nova_pmem_filters.doctor.cli',
             '--os-cloud', 'it'] + list(argv),
            env=self.env, capture_output=True, text=True, timeout=300)

    def doctor(self, *argv):
        """(exit status, {(severity, code, object)}, rows, stderr)."""
        proc = self.run_doctor('-f', 'json', *argv)
        try:
            rows = json.loads(proc.stdout or '[]')
        except ValueError:
            rows = []
        found = {(r['severity'], r['code'], r['object']) for r in rows}
        return proc.returncode, found, rows, proc.stderr.strip()


def _diff(expected, found):
    missing = sorted(expected - found)
    extra = sorted(found - expected)
    return 'missing %s; unexpected %s' % (missing, extra)


def _exit_for(findings):
    severities = {f[0] for f in findings}
    return 2 if ERROR in severities else 1 if WARNING in severities else 0


def check_doctor(results, name, got, expected):
    status, found, rows, err = got
    results.check(
        'doctor %s: exactly the expected findings, exit %d'
        % (name, _exit_for(expected)),
        found == expected and status == _exit_for(expected)
        and len(rows) == len(expected),
        'exit %s (%s); %s' % (status, err[:200], _diff(expected, found)))
    return rows


class _Plants(object):
    """What scenario_doctor changes, and how to put it back."""

    def __init__(self, cloud):
        self.cloud = cloud
        self.aggregates = []
        self.flavors = []
        self.added = []

    def aggregate(self, name, meta, hosts=()):
        agg = self.cloud.admin.create_aggregate(name)['aggregate']
        self.aggregates.append(agg['id'])
        self.cloud.admin.set_metadata(agg['id'], meta)
        for host in hosts:
            self.add_host(agg['id'], host)

    def add_host(self, agg_id, host):
        self.cloud.admin.aggregate_host(agg_id, 'add_host', host)
        self.added.append((agg_id, host))

    def flavor(self, name, ram_mb, specs, microversion=api.MICROVERSION):
        flavor = self.cloud.admin.create_flavor({
            'name': name, 'ram': ram_mb, 'vcpus': 1, 'disk': 1})['flavor']
        self.flavors.append(flavor['id'])
        # Below 2.86 nova-api does not validate extra specs: flavors made
        # before the validators were installed look like this.
        client = api.Client(microversion=microversion)
        client.post('/flavors/%s/os-extra_specs' % flavor['id'],
                    {'extra_specs': specs}, idempotent=True)

    def remove(self):
        admin = self.cloud.admin
        for agg_id, host in reversed(self.added):
            admin.aggregate_host(agg_id, 'remove_host', host)
        for agg_id in self.aggregates:
            admin.request('DELETE', '/os-aggregates/%s' % agg_id,
                          ok=(200, 202, 204, 404))
        for flavor_id in self.flavors:
            admin.request('DELETE', '/flavors/%s' % flavor_id,
                          ok=(200, 202, 204, 404))


def _log_table(operator, *argv):
    """The doctor's own table of what it found, for the run's log."""
    from tests.integration import scenarios
    proc = operator.run_doctor('-f', 'table', '-c', 'severity', '-c',
                               'code', '-c', 'object', *argv)
    scenarios.log('nova-pmem-doctor %s -f table -c severity -c code -c '
                  'object, every finding planted (exit %d):\n%s',
                  ' '.join(argv), proc.returncode, proc.stdout.rstrip())


def scenario_doctor(cloud, results, work):
    from tests.integration import scenarios
    operator = Operator(cloud, work)
    nova_conf = os.path.join(os.environ.get('PMEM_IT_WORK',
                                            '/tmp/pmem-integration'),
                             'etc', 'nova.conf')
    check_doctor(results, 'on the cloud as set up',
                 operator.doctor('--config-file', nova_conf), BASELINE)

    plants = _Plants(cloud)
    try:
        plants.aggregate('doc-bad-mode', {profile.MODE_KEY: 'tiered'})
        plants.aggregate('doc-bad-cache', {
            profile.MODE_KEY: kinds.MEMORY_MODE,
            profile.DRAM_CACHE_KEY: 'banana'})
        plants.aggregate('doc-typo', {
            'pmem_dram_cache': '192',
            profile.TIER_WEIGHT_MULTIPLIER_KEY: 'heavy'})
        plants.aggregate('doc-mm-nocache',
                         {profile.MODE_KEY: kinds.MEMORY_MODE})
        plants.aggregate('doc-dram-cache', {profile.DRAM_CACHE_KEY: '384'},
                         hosts=['dram1'])
        plants.add_host(cloud.aggregates['dram'], 'ad1')
        plants.flavor('doc.old', 4096, {'pmem:hotratio': '0.3'},
                      microversion='2.85')
        plants.flavor('doc.vpmem', 4096, {'hw:pmem': 'SMALL',
                                          'pmem:modes': 'dram'})
        plants.flavor('doc.near', 32 * scenarios.GB, {
            'pmem:modes': kinds.MEMORY_MODE, 'pmem:hot_ratio': '0.5',
            pmem_placement.NEAR_MEMORY_KEY: '4096'})
        # Two instances with 16 GB hot each on mm1, then the cache of
        # pmem-mm lowered to 16 GB under them.
        records, errors = scenarios.probe(cloud, 'doctor', 'it.cap',
                                          host='mm1')
        placed = [r for r in records if r['status'] == 'ACTIVE'
                  and r['host'] == 'mm1']
        results.check('doctor: two capacity servers ACTIVE on mm1',
                      len(placed) == 2, scenarios.describe(records, errors))
        cloud.set_metadata(cloud.aggregates['pmem-mm'], {
            profile.MODE_KEY: kinds.MEMORY_MODE,
            profile.DRAM_CACHE_KEY: '16'})
        conf = os.path.join(work, 'doctor-nova.conf')
        with open(conf, 'w') as f:
            f.write(DOCTOR_NOVA_CONF)
        fleet = os.path.join(work, 'fleet')
        write_fleet(fleet, {'mm2': (kinds.DRAM, 192),
                            'mm9': (kinds.DRAM, 384)})
        rows = check_doctor(results, 'with every finding planted',
                            operator.doctor('--config-file', conf,
                                            '--fleet', fleet), PLANTED)
        check_doctor(results, 'planted, without nova.conf or fleet',
                     operator.doctor(), PLANTED_BARE)
        _log_table(operator, '--config-file', conf, '--fleet', fleet)
        over = [r for r in rows if r['code'] == 'cache-overcommitted']
        results.check(
            'doctor lists the instances of the overcommitted host',
            len(over) == 1 and all(r['id'] in over[0]['problem']
                                   for r in placed),
            over[0]['problem'][:300] if over else 'no such finding')
    finally:
        cloud.set_metadata(cloud.aggregates['pmem-mm'], {
            profile.MODE_KEY: kinds.MEMORY_MODE,
            profile.DRAM_CACHE_KEY: str(scenarios.CACHE_GB)})
        cloud.delete_all()
        plants.remove()
    check_doctor(results, 'after the plants are removed',
                 operator.doctor('--config-file', nova_conf), BASELINE)


def scenario_upgrade_check(cloud, results, deploy):
    """``nova-status upgrade check`` with the pmem filters enabled.

    What an operator runs before and after upgrading Nova: on the
    deployment's own nova.conf, whose [filter_scheduler] enables
    PmemModeFilter and PmemCacheFilter and the pmem weighers, it passes
    (exit 0: every check a success). The doctor's baseline before it
    (scenario_doctor) is the other half of the upgrade's test.
    """
    from tests.integration import scenarios
    output = deploy('nova-status').splitlines()
    rc = int(output[-1]) if output and output[-1].isdigit() else None
    report = '\n'.join(output[:-1])
    scenarios.log('nova-status upgrade check (exit %s):\n%s', rc, report)
    nova_conf = os.path.join(os.environ.get('PMEM_IT_WORK',
                                            '/tmp/pmem-integration'),
                             'etc', 'nova.conf')
    with open(nova_conf) as f:
        enabled = 'PmemCacheFilter' in f.read()
    results.check('nova-status upgrade check passes with the pmem filters '
                  'enabled (exit 0)', rc == 0 and enabled,
                  'exit %s, filters enabled %s: %s' % (
                      rc, enabled, ' '.join(report.split())[-600:]))


# Keys MariaDB's collation takes for pmem_dram_cache_gb: it compares
# metadata keys ignoring case and trailing spaces, so the doctor's fix must
# unset the misspelt key before it sets the right one.
MISSPELT_KEYS = ('PMEM_DRAM_CACHE_GB', profile.DRAM_CACHE_KEY + ' ')


def scenario_doctor_fixes(cloud, results, work):
    """The doctor's misspelt-key fix, run as printed against MariaDB.

    The functional tests run every fix on SQLite, which compares keys
    exactly; here the database is the one that made "unset before set"
    necessary. Each fix runs through the ``openstack`` client, as an
    operator would paste it.
    """
    operator = Operator(cloud, work)
    nova_conf = os.path.join(os.environ.get('PMEM_IT_WORK',
                                            '/tmp/pmem-integration'),
                             'etc', 'nova.conf')
    env = dict(operator.env, OS_CLOUD='it')
    name = 'doc-fix-case'
    before = operator.doctor('--config-file', nova_conf)[1]
    plants = _Plants(cloud)
    try:
        plants.aggregate(name, {profile.MODE_KEY: kinds.MEMORY_MODE})
        for wrong in MISSPELT_KEYS:
            cloud.set_metadata(plants.aggregates[0], {wrong: '192'})
            _status, found, rows, err = operator.doctor('--config-file',
                                                        nova_conf)
            fixes = [r['fix'] for r in rows if r['code'] == 'misspelt-key'
                     and r['object'] == 'aggregate %s' % name]
            proc = subprocess.run(['sh', '-c', fixes[0] if fixes else
                                   'exit 99'], env=env, capture_output=True,
                                  text=True, timeout=300)
            after = operator.doctor('--config-file', nova_conf)[1]
            meta = _aggregates(cloud)[name].get('metadata', {})
            results.check(
                'doctor misspelt-key fix for %r runs as printed on MariaDB'
                % wrong,
                len(fixes) == 1 and proc.returncode == 0 and after == before
                and meta == {profile.MODE_KEY: kinds.MEMORY_MODE,
                             profile.DRAM_CACHE_KEY: '192'},
                'fix %s: exit %d %s; metadata %s; %s'
                % (fixes, proc.returncode, proc.stderr.strip()[-300:], meta,
                   _diff(before, after)))
            # The next plant starts from the aggregate without the key.
            cloud.set_metadata(plants.aggregates[0],
                               {profile.DRAM_CACHE_KEY: None})
    finally:
        plants.remove()


# The devstack plugin's view of this cloud: one aggregate of its own with
# mm2 in it, one named like an aggregate of the suite (not created by it),
# and its example flavors plus one named like a flavor of the suite.
DEVSTACK_AGGREGATES = ('dev-mm:pmem_mode=memory_mode,pmem_dram_cache_gb=192'
                       ':mm2 pmem-ad:pmem_mode=dram')
DEVSTACK_EXTRA_FLAVOR = 'it.small;512;1;1;pmem:modes=dram'


def scenario_devstack(cloud, results, work):
    state = os.path.join(work, 'devstack-state')
    fixture = devstack_plugin.Devstack(
        PATH='%s:%s' % (os.path.dirname(sys.executable),
                        os.environ.get('PATH', '')),
        OS_CLIENT_CONFIG_FILE=os.path.join(work, 'clouds.yaml'),
        NOVA_PMEM_OS_CLOUD='it', NOVA_PMEM_STATE_DIR=state,
        NOVA_PMEM_AGGREGATES=DEVSTACK_AGGREGATES,
        NOVA_PMEM_PLACEMENT_ACCOUNTING='True')
    fixture.setUp()
    try:
        _devstack_phases(cloud, results, fixture)
    finally:
        fixture.cleanUp()


def _aggregates(cloud):
    return {a['name']: a for a in
            cloud.admin.get('/os-aggregates')['aggregates']}


def _flavors(cloud):
    flavors = cloud.admin.get('/flavors/detail?is_public=None')['flavors']
    return {f['name']: f for f in flavors}


def _devstack_phases(cloud, results, devstack):
    from tests.integration import scenarios
    default_flavors = devstack_plugin.default_flavors()
    before_aggs, before_flavors = _aggregates(cloud), _flavors(cloud)
    outputs = []
    for _ in range(2):
        # The suite's it.small exists already: the plugin must leave it.
        devstack.env['NOVA_PMEM_FLAVORS'] = ' '.join(
            default_flavors + [DEVSTACK_EXTRA_FLAVOR])
        outputs.append(devstack.run('stack', 'extra', expect=None))
    aggs, flavors = _aggregates(cloud), _flavors(cloud)
    ok = all(p.returncode == 0 for p in outputs)
    results.check('devstack stack extra runs, twice',
                  ok, '; '.join(p.stderr.strip()[-300:] for p in outputs))
    created = set(aggs) - set(before_aggs)
    dev_mm = aggs.get('dev-mm', {})
    results.check(
        'devstack stack extra: its aggregate, as described, host once',
        created == {'dev-mm'} and dev_mm.get('hosts') == ['mm2']
        and dev_mm.get('metadata', {}).get(profile.MODE_KEY) ==
        kinds.MEMORY_MODE
        and dev_mm['metadata'].get(profile.DRAM_CACHE_KEY) == '192',
        'created %s; dev-mm %s' % (sorted(created), dev_mm))
    results.check(
        'devstack stack extra: leaves an aggregate it did not create',
        aggs['pmem-ad'] == before_aggs['pmem-ad']
        and all('aggregate pmem-ad exists and was not created by this '
                'plugin' in p.stdout for p in outputs),
        'pmem-ad %s' % aggs.get('pmem-ad'))
    new_flavors = set(flavors) - set(before_flavors)
    names = {entry.split(';')[0] for entry in default_flavors}
    specs_ok = True
    details = []
    for name in sorted(names & new_flavors):
        specs = cloud.admin.get('/flavors/%s/os-extra_specs'
                                % flavors[name]['id'])['extra_specs']
        # The cloud's [pmem] default_hot_ratio, as the plugin applies it.
        request = pmem_specs.parse(specs, pmem_specs.Defaults(
            hot_ratio=scenarios.DEFAULT_HOT_RATIO))
        wanted = pmem_placement.near_memory_spec(flavors[name]['ram'],
                                                 request.hot_ratio)
        specs_ok &= all(specs.get(k) == v for k, v in wanted.items())
        details.append('%s %s' % (name, specs))
    results.check(
        'devstack stack extra: its flavors, with their near memory',
        new_flavors == names and specs_ok
        and flavors['it.small'] == before_flavors['it.small'],
        '; '.join(details) or 'created %s' % sorted(new_flavors))
    for i in range(2):
        proc = devstack.run('unstack', expect=None)
        after_aggs, after_flavors = _aggregates(cloud), _flavors(cloud)
        results.check(
            'devstack unstack (%s) removes what it created, nothing else'
            % ('first', 'again')[i],
            proc.returncode == 0 and set(after_aggs) == set(before_aggs)
            and set(after_flavors) == set(before_flavors)
            and after_aggs['pmem-ad'] == before_aggs['pmem-ad'],
            'exit %d %s; aggregates %s; flavors %s'
            % (proc.returncode, proc.stderr.strip()[-200:],
               sorted(set(after_aggs) ^ set(before_aggs)),
               sorted(set(after_flavors) ^ set(before_flavors))))


# The plan whose Nova side nova-config script creates: the built-in
# example, with Placement accounting (its flavors request near memory).
NOVA_CONFIG_ARGS = ('--scenario', 'telco-cost-matched',
                    '--placement-accounting')


def _planned(plan_rows):
    """({aggregate: metadata}, {flavor: (vcpus, ram, disk, specs)})."""
    aggs, flavors = {}, {}
    for row in plan_rows:
        if row['scope'] == 'aggregate':
            meta = aggs.setdefault(row['object'], {})
            if row['key'] != 'create':
                meta[row['key']] = row['value']
        elif row['scope'] == 'flavor':
            entry = flavors.setdefault(row['object'], [None, {}])
            if row['key'] == 'create':
                entry[0] = row['flavor']
            else:
                entry[1][row['key']] = row['value']
    return aggs, {name: tuple(size) + (specs,)
                  for name, (size, specs) in flavors.items()}


def _state(cloud, aggregates, flavors):
    """What the cloud has of the named aggregates and flavors."""
    found_aggs = {name: agg.get('metadata', {})
                  for name, agg in _aggregates(cloud).items()
                  if name in aggregates}
    found_flavors = {}
    for name, flavor in _flavors(cloud).items():
        if name in flavors:
            specs = cloud.admin.get('/flavors/%s/os-extra_specs'
                                    % flavor['id'])['extra_specs']
            found_flavors[name] = (flavor['vcpus'], flavor['ram'],
                                   flavor['disk'], specs)
    # Nova adds availability_zone only when one is set; the plan sets none.
    return found_aggs, found_flavors


def _member_boots(results, cloud, flavor_name):
    """Keystone's member user may boot a flavor the script created.

    Nova's policy ``os_compute_api:servers:create:zero_disk_flavor`` lets
    only admins boot a zero-disk flavor from an image: nova-api would
    answer 403. Whether the server then finds a host is not the question
    here; it is deleted at once.
    """
    from tests.integration import scenarios
    member = api.Client(auth=api.MEMBER)
    flavor = _flavors(cloud)[flavor_name]
    try:
        created = member.create_server({
            'name': 'it-member-%s' % flavor_name,
            'imageRef': scenarios.IMAGE, 'flavorRef': flavor['id'],
            'networks': 'none'})
    except Exception as exc:  # the refusal is what the check reports
        created = {'refused': str(exc)}
    server = (created or {}).get('server') or {}
    results.check(
        'a member user boots a flavor of nova-config script (disk %s GB)'
        % flavor.get('disk'), bool(server.get('id')), str(created)[:300])
    if server.get('id'):
        member.delete('/servers/%s' % server['id'])
        # Gone before the next scenario counts what the hosts hold.
        for _ in range(300):
            if not (member.request('GET', '/servers/%s' % server['id'],
                                   ok=(200, 404)) or {}).get('server'):
                break
            time.sleep(0.2)


def scenario_nova_config(cloud, results, work):
    """``nova-config script`` applied to this cloud, four times.

    The first run creates exactly the plan's aggregates and flavors, with
    their properties; the second changes nothing and says so; after an
    operator changes a planned property, the third sets it back and
    nothing else; a flavor of a planned name but another size stops the
    fourth with a message.
    """
    from nova_pmem_filters.planner import realise
    from nova_pmem_filters.planner import scenario as planner_scenario
    operator = Operator(cloud, work)
    path = os.path.join(work, 'nova-config.sh')
    gen = subprocess.run(
        [sys.executable, '-m', 'nova_pmem_filters.planner.cli', 'nova-config',
         'script',
         '-o', path] + list(NOVA_CONFIG_ARGS),
        env=operator.env, capture_output=True, text=True, timeout=300)
    results.check('nova-config script writes the script',
                  gen.returncode == 0 and os.path.exists(path),
                  gen.stderr.strip()[-300:])
    plan = realise.rows(planner_scenario.load('telco-cost-matched'),
                        placement_accounting=True)
    aggs, flavors = _planned(plan)
    before_aggs, before_flavors = _aggregates(cloud), _flavors(cloud)
    env = dict(operator.env, OS_CLOUD='it')

    def apply():
        return subprocess.run(['sh', path], env=env, capture_output=True,
                              text=True, timeout=600)

    try:
        runs = [apply()]
        first = _state(cloud, aggs, flavors)
        created_aggs = set(_aggregates(cloud)) - set(before_aggs)
        created_flavors = set(_flavors(cloud)) - set(before_flavors)
        results.check(
            'nova-config script creates exactly the plan\'s aggregates and '
            'flavors',
            runs[0].returncode == 0 and created_aggs == set(aggs)
            and created_flavors == set(flavors)
            and first == (aggs, flavors),
            'exit %d %s; created %s %s; found %s; planned %s'
            % (runs[0].returncode, runs[0].stderr.strip()[-300:],
               sorted(created_aggs), sorted(created_flavors), first,
               (aggs, flavors)))
        _member_boots(results, cloud, sorted(flavors)[0])
        runs.append(apply())
        results.check(
            'nova-config script run again changes nothing',
            runs[1].returncode == 0
            and runs[1].stdout.rstrip().endswith('\n0 change(s)')
            and 'created' not in runs[1].stdout
            and _state(cloud, aggs, flavors) == first,
            'exit %d %s; %s' % (runs[1].returncode,
                                runs[1].stderr.strip()[-300:],
                                runs[1].stdout.strip()[-300:]))
        # An operator changes one planned property by hand.
        name = sorted(aggs)[0]
        cloud.set_metadata(_aggregates(cloud)[name]['id'],
                           {profile.MODE_KEY: kinds.APP_DIRECT})
        runs.append(apply())
        results.check(
            'nova-config script sets back what differs, only that',
            runs[2].returncode == 0
            and runs[2].stdout.rstrip().endswith('\n1 change(s)')
            and _state(cloud, aggs, flavors) == first,
            'exit %d %s; %s' % (runs[2].returncode,
                                runs[2].stderr.strip()[-300:],
                                runs[2].stdout.strip()[-300:]))
        # A flavor of a planned name but another size: Nova cannot change
        # it, so the script stops there, says why, and creates nothing.
        flavor = sorted(flavors)[0]
        cloud.admin.request('DELETE', '/flavors/%s'
                            % _flavors(cloud)[flavor]['id'],
                            ok=(200, 202, 204))
        cloud.admin.create_flavor({'name': flavor, 'ram': 512, 'vcpus': 1,
                                   'disk': 1})
        runs.append(apply())
        results.check(
            'nova-config script stops at a flavor it cannot change',
            runs[3].returncode == 1
            and 'flavors cannot change' in runs[3].stderr
            and 'flavor %s exists with other' % flavor in runs[3].stderr
            and set(_flavors(cloud)) - set(before_flavors) == set(flavors),
            'exit %d %s' % (runs[3].returncode,
                            runs[3].stderr.strip()[-300:]))
        for i, proc in enumerate(runs):
            from tests.integration import scenarios
            scenarios.log('nova-config script, run %d (exit %d):\n%s',
                          i + 1, proc.returncode, proc.stdout.rstrip())
    finally:
        admin = cloud.admin
        for agg_name, agg in _aggregates(cloud).items():
            if agg_name in aggs and agg_name not in before_aggs:
                admin.request('DELETE', '/os-aggregates/%s' % agg['id'],
                              ok=(200, 202, 204, 404))
        for flavor_name, flavor in _flavors(cloud).items():
            if flavor_name in flavors and flavor_name not in before_flavors:
                admin.request('DELETE', '/flavors/%s' % flavor['id'],
                              ok=(200, 202, 204, 404))
