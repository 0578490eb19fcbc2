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
"""Load, race, fault and bad-input scenarios for the integration deployment.

Run by ``run.sh`` once ``deploy.sh up`` has finished. Prints the results
table and the checks, writes both as JSON (``--json``), and exits 1 when a
check failed.

A *row* measures a scenario: requests, ACTIVE, ERROR, stuck, over-admitted,
latency percentiles. A *check* states what must hold in every run (the race
with Placement accounting admits no more than the caches hold, nova-api
answers 400 to a bad extra spec, the scheduler rejects hosts with garbage
metadata and says why, the cloud serves again after each fault, no traceback
in our code); CI counts the checks as tests. What depends on timing (how many
the filter-only race over-admits, latencies) is reported, never checked.

Over-admission is counted from what Nova reports: for every
``memory_mode`` host, the hot RAM of the instances on it (flavor RAM x
``pmem:hot_ratio``, default ``[pmem] default_hot_ratio``) against the DRAM
cache of its aggregate. An instance is over-admitted when the host holds
more instances than fit in the cache.
"""

import argparse
import collections
import concurrent.futures
import json
import math
import os
import re
import subprocess
import sys
import threading
import time
import traceback
import uuid

from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import nearmem
from nova_pmem_filters.core.rules import placement as pmem_placement
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters import fileutil

from tests.integration import client as api
from tests.integration import identity
from tests.integration import operator
from tests.integration import rebalance
from tests.integration import tempest_suite

HERE = os.path.dirname(os.path.abspath(__file__))
DEPLOY = os.path.join(HERE, 'deploy.sh')
IMAGE = '155d900f-4e14-4e4c-a73d-069cbf4541e6'
GB = profile.MB_PER_GB
DEFAULT_HOT_RATIO = 0.5
CACHE_GB = 192
MM_HOSTS = ('mm1', 'mm2')
# Nova sends aggregate changes to the schedulers with a fanout cast.
AGGREGATE_PROPAGATION_S = 2

# Flavors: name -> (RAM GB, vCPU, extra specs)
CAP_SPECS = {'pmem:modes': 'memory_mode', 'pmem:priority': 'low',
             'pmem:hot_ratio': '0.5'}
FLAVORS = {
    # 16 GB hot: 12 fit in a 192 GB cache, RAM (512 GB) binds at 16.
    'it.cap': (32, 2, dict(CAP_SPECS)),
    'it.cap.placement': (32, 2, dict(
        CAP_SPECS, **pmem_placement.near_memory_spec(32 * GB, 0.5))),
    'it.small': (2, 1, {'pmem:priority': 'normal'}),
}

TERMINAL = ('ACTIVE', 'ERROR')


def log(msg, *args):
    sys.stderr.write('%s scenarios: %s\n'
                     % (time.strftime('%H:%M:%S'), msg % args))
    sys.stderr.flush()


def deploy(*args):
    out = subprocess.run(['bash', DEPLOY] + list(args), check=True,
                         stdout=subprocess.PIPE, universal_newlines=True)
    return out.stdout.strip()


def percentile(values, pct):
    if not values:
        return None
    values = sorted(values)
    k = (len(values) - 1) * pct / 100.0
    lo, hi = int(math.floor(k)), int(math.ceil(k))
    return round(values[lo] + (values[hi] - values[lo]) * (k - lo), 2)


class Cloud(object):
    def __init__(self):
        self.admin = api.Client()
        self.flavors = {}
        self.aggregates = {}

    # -- setup ---------------------------------------------------------------

    def setup(self):
        for name, hosts, meta in (
                ('dram', ['dram1'], {profile.MODE_KEY: kinds.DRAM}),
                ('pmem-mm', list(MM_HOSTS),
                 {profile.MODE_KEY: kinds.MEMORY_MODE,
                  profile.DRAM_CACHE_KEY: str(CACHE_GB)}),
                ('pmem-ad', ['ad1'], {profile.MODE_KEY: kinds.APP_DIRECT})):
            agg = self.admin.create_aggregate(name)['aggregate']
            self.set_metadata(agg['id'], meta)
            for host in hosts:
                self.admin.aggregate_host(agg['id'], 'add_host', host)
            self.aggregates[name] = agg['id']
        for name, (ram_gb, vcpus, specs) in FLAVORS.items():
            flavor = self.admin.create_flavor({
                'name': name, 'ram': ram_gb * GB, 'vcpus': vcpus,
                'disk': 1})['flavor']
            self.admin.post('/flavors/%s/os-extra_specs' % flavor['id'],
                            {'extra_specs': specs}, idempotent=True)
            self.flavors[name] = flavor['id']

    def relabel_after_scheduler_start(self):
        """Put the Memory-Mode hosts in their aggregate after a restart.

        As operators label hosts while nova-scheduler runs: its parent
        process then holds aggregates older than the database, and so does
        any worker it forks again after a crash.
        """
        agg = self.aggregates['pmem-mm']
        for host in MM_HOSTS:
            self.admin.aggregate_host(agg, 'remove_host', host)
        deploy('scheduler', 'pmem')
        for host in MM_HOSTS:
            self.admin.aggregate_host(agg, 'add_host', host)
        time.sleep(AGGREGATE_PROPAGATION_S)

    def set_metadata(self, agg_id, meta):
        self.admin.set_metadata(agg_id, meta)

    # -- servers -------------------------------------------------------------

    def servers(self, prefix=None):
        path = '/servers/detail?all_tenants=1'
        if prefix:
            path += '&name=%s' % prefix
        return self.admin.get(path)['servers']

    def boot(self, scenario, flavor, count, concurrency=20, settle=150,
             during=None, host=None, spacing=0.0):
        """Boot ``count`` servers at once; wait until each is terminal.

        ``during(start_time)`` runs in this thread right after the POSTs
        were sent (a fault, a metadata change). ``host`` asks for that host
        (admin, microversion 2.74; the scheduler still runs the filters).
        ``spacing`` seconds between POSTs spread the load over time. A
        server not ACTIVE or ERROR ``settle`` seconds after the last POST
        is recorded as STUCK. Returns the records and the API errors.
        """
        prefix = 'it-%s-%s' % (scenario, uuid.uuid4().hex[:6])
        records = {}
        errors = []

        def post(i):
            name = '%s-%03d' % (prefix, i)
            if spacing:
                time.sleep(i * spacing)
            body = {'name': name, 'imageRef': IMAGE,
                    'flavorRef': self.flavors[flavor], 'networks': 'none'}
            if host:
                body['host'] = host
            t0 = time.time()
            try:
                server = self.admin.create_server(body)['server']
            except (api.APIError, api.requests.RequestException) as exc:
                errors.append(str(exc))
                return
            records[server['id']] = {'id': server['id'], 'name': name,
                                     't0': t0, 't1': None, 'status': 'BUILD',
                                     'host': None, 'fault': None}

        start = time.time()
        with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
            futures = [pool.submit(post, i) for i in range(count)]
            if during:
                time.sleep(0.5)
                during(start)
            concurrent.futures.wait(futures)
        deadline = time.time() + settle
        return self.wait(records, deadline, prefix), errors

    def wait(self, records, deadline, prefix):
        """Poll until every record is ACTIVE or ERROR, or the deadline."""
        while time.time() < deadline:
            try:
                listed = self.servers(prefix)
            except (api.APIError, api.requests.RequestException) as exc:
                log('listing servers failed (%s); retrying', exc)
                time.sleep(2)
                continue
            now = time.time()
            for server in listed:
                rec = records.get(server['id'])
                if rec is None or rec['t1'] is not None:
                    continue
                rec['status'] = server['status']
                rec['host'] = server.get('OS-EXT-SRV-ATTR:host')
                if server['status'] in TERMINAL:
                    rec['t1'] = now
                    rec['fault'] = (server.get('fault') or {}).get('message')
            if all(r['t1'] is not None for r in records.values()):
                break
            time.sleep(0.5)
        placement = api.Placement()
        for rec in records.values():
            if rec['t1'] is None:
                rec['status'] = 'STUCK'
                # Scheduled or not: the scheduler's claim is in Placement.
                try:
                    allocs = placement.get('/allocations/%s'
                                           % rec['id'])['allocations']
                    rec['claimed'] = bool(allocs)
                except (api.APIError, api.requests.RequestException):
                    rec['claimed'] = None
        return records

    def delete_all(self, timeout=180):
        for server in self.servers():
            try:
                self.admin.delete('/servers/%s' % server['id'])
            except (api.APIError, api.requests.RequestException) as exc:
                log('delete %s: %s', server['id'], exc)
        deadline = time.time() + timeout
        while time.time() < deadline:
            left = self.servers()
            if not left:
                return []
            time.sleep(1)
        return [s['id'] for s in left]

    # -- accounting ----------------------------------------------------------

    def over_admission(self):
        """Per memory_mode host: instances beyond the cache, hot MB beyond."""
        hot = collections.defaultdict(float)
        count = collections.Counter()
        unit = {}
        for server in self.servers():
            host = server.get('OS-EXT-SRV-ATTR:host')
            if host not in MM_HOSTS or server['status'] == 'ERROR':
                continue
            flavor = server['flavor']
            ratio = float(flavor.get('extra_specs', {}).get(
                'pmem:hot_ratio', DEFAULT_HOT_RATIO))
            mb = nearmem.hot_mb(flavor['ram'], ratio)
            hot[host] += mb
            count[host] += 1
            unit[host] = mb
        capacity = CACHE_GB * GB
        over_instances = 0
        over_mb = 0.0
        per_host = {}
        for host in MM_HOSTS:
            beyond = max(hot[host] - capacity, 0.0)
            n = int(math.ceil(beyond / unit[host])) if beyond else 0
            per_host[host] = {'instances': count[host],
                              'hot_mb': hot[host], 'beyond_mb': beyond}
            over_instances += n
            over_mb += beyond
        return over_instances, over_mb, per_host


def summarize(scenario, records, errors, over=None, notes=''):
    recs = list(records.values())
    latencies = [r['t1'] - r['t0'] for r in recs if r['status'] == 'ACTIVE']
    faults = collections.Counter(
        _short_fault(r['fault']) for r in recs if r['status'] == 'ERROR')
    row = {
        'scenario': scenario,
        'requests': len(recs) + len(errors),
        'active': sum(r['status'] == 'ACTIVE' for r in recs),
        'error': sum(r['status'] == 'ERROR' for r in recs),
        'stuck': sum(r['status'] == 'STUCK' for r in recs),
        'api_rejected': len(errors),
        'over_admitted': over[0] if over else 0,
        'over_admitted_mb': round(over[1]) if over else 0,
        'p50_s': percentile(latencies, 50),
        'p95_s': percentile(latencies, 95),
        'stuck_ids': sorted(r['id'] for r in recs if r['status'] == 'STUCK'),
        'stuck_detail': {r['id']: {'host': r['host'],
                                   'claimed_in_placement': r.get('claimed')}
                         for r in recs if r['status'] == 'STUCK'},
        'faults': dict(faults),
        'attribution': dict(collections.Counter(
            attribute(r, scenario) for r in recs
            if r['status'] != 'ACTIVE')),
        'per_host': over[2] if over else {},
        'notes': notes,
    }
    log('%s: %s', scenario, {k: row[k] for k in (
        'requests', 'active', 'error', 'stuck', 'over_admitted', 'p50_s',
        'p95_s', 'faults')})
    return row


def attribute(rec, scenario):
    """Who ended a request that did not become ACTIVE: a decision or a fault.

    * ``scheduler decision``: NoValidHost, the filters and Placement said no;
    * ``Nova: RPC lost``: an RPC call timed out (a killed scheduler worker,
      a broker restart); Nova puts the instance in ERROR;
    * ``Nova: compute restart``: ERROR without a fault on the restarted
      host; nova-compute does this to instances that were building when it
      died;
    * ``Nova: build failed during the fault``: any other fault during a
      fault scenario, raised after scheduling (seen during a broker
      restart: "Failed to allocate the network(s)");
    * ``Nova: ... lost``: still BUILD after a broker restart, either
      claimed in Placement but never on a host (the conductor's cast to the
      compute was lost) or never scheduled (the API's cast to the conductor
      was lost);
    * ``unexplained``: anything else, to be read in the logs.

    A traceback in nova_pmem_filters would be ours; scan_logs looks for
    those separately.
    """
    fault = rec['fault'] or ''
    if rec['status'] == 'ERROR':
        if 'No valid host' in fault:
            return 'scheduler decision (NoValidHost)'
        if 'MessagingTimeout' in fault or 'Timed out' in fault:
            return 'Nova: RPC lost (MessagingTimeout)'
        if not fault and 'compute' in scenario:
            return 'Nova: compute restart'
        if fault and scenario.startswith('fault:'):
            # A build that failed on the compute (network allocation, an
            # RPC to the conductor) after scheduling: our code runs in the
            # scheduler only.
            return 'Nova: build failed during the fault: %s' % (
                _short_fault(fault))
    if rec['status'] == 'STUCK':
        if rec['host']:
            return 'Nova: stuck on host %s' % rec['host']
        if rec.get('claimed'):
            return ('Nova: scheduled and claimed, build cast to the compute '
                    'lost (no host)')
        return 'Nova: build request lost before scheduling'
    return 'unexplained: %s' % (_short_fault(fault))


def _short_fault(message):
    message = message or '(no fault)'
    return re.sub(r'[0-9a-f]{8}-[0-9a-f-]{27}', '<uuid>', message)[:120]


# -- checks -----------------------------------------------------------------


class Results(object):
    """The rows and the checks of a run."""

    def __init__(self):
        self.rows = []
        self.checks = []

    def row(self, row):
        self.rows.append(row)
        return row

    def check(self, name, passed, detail=''):
        passed = bool(passed)
        self.checks.append({'name': name, 'passed': passed,
                            'detail': detail})
        log('%s %s%s', 'PASS' if passed else 'FAIL', name,
            ' (%s)' % detail if detail else '')
        return passed

    def check_settled(self, row):
        """Without a fault, every request ends ACTIVE or ERROR."""
        return self.check(
            '%s: every request ends ACTIVE or ERROR' % row['scenario'],
            not row['stuck'] and not row['api_rejected'],
            'stuck %s, API errors %d' % (row['stuck_ids'],
                                         row['api_rejected']))

    def check_all_active(self, row):
        return self.check(
            '%s: every request ACTIVE' % row['scenario'],
            row['requests'] and row['active'] == row['requests'],
            '%d of %d ACTIVE; faults %s' % (row['active'], row['requests'],
                                            row['faults']))

    def check_bound(self, row):
        return self.check(
            '%s: no instance beyond a DRAM cache' % row['scenario'],
            row['over_admitted'] == 0,
            'over-admitted %d (%d MB); per host %s' % (
                row['over_admitted'], row['over_admitted_mb'],
                {h: v['instances'] for h, v in row['per_host'].items()}))


def describe(records, errors):
    parts = ['%s %s%s%s' % (r['id'][:8], r['status'],
                            ' on %s' % r['host'] if r['host'] else '',
                            ' (%s)' % _short_fault(r['fault'])
                            if r['status'] == 'ERROR' else '')
             for r in records]
    return ', '.join(parts + ['API: %s' % e[:100] for e in errors])


def parse_queues(text):
    """``deploy.sh rpc-queues`` as {queue: consumers}."""
    queues = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[1].isdigit():
            queues[fields[0]] = int(fields[1])
    return queues


def rpc_queues():
    """The consumed queues now; none while the broker does not answer."""
    try:
        return parse_queues(deploy('rpc-queues'))
    except subprocess.CalledProcessError:
        return {}


def missing_consumers(before, now):
    """The queues of ``before`` that have fewer consumers ``now``."""
    return sorted(q for q, n in before.items() if now.get(q, 0) < n)


def wait_consumed(before, limit=180, read=rpc_queues, sleep=time.sleep,
                  clock=time.time):
    """Wait until every queue of ``before`` has its consumers again.

    Each service declares its queues again when it has reconnected to the
    broker; a request sent before its queue is back is dropped by the
    broker and times out (MessagingTimeout). Returns the seconds waited
    and the queues still missing consumers at ``limit``.
    """
    start = clock()
    while True:
        missing = missing_consumers(before, read())
        waited = clock() - start
        if not missing or waited >= limit:
            return waited, missing
        sleep(1)


def probe(cloud, label, flavor, count=2, host=None, settle=120):
    """A few servers booted now; the records as a list, and API errors."""
    records, errors = cloud.boot(label, flavor, count, concurrency=count,
                                 settle=settle, host=host)
    return list(records.values()), errors


def check_serves(results, cloud, after, flavor='it.small', host=None,
                 count=2, on=None, what='new servers'):
    """After a fault: new servers go ACTIVE (on ``host`` or ``on``)."""
    recs, errors = probe(cloud, 'recover', flavor, count=count, host=host)
    on = on or ((host,) if host else None)
    ok = (recs and not errors and
          all(r['status'] == 'ACTIVE' and (on is None or r['host'] in on)
              for r in recs))
    return results.check(
        'after %s: %s go ACTIVE%s' % (
            after, what, ' on %s' % ', '.join(on) if on else ''), ok,
        describe(recs, errors))


# -- scenarios ------------------------------------------------------------


def scenario_latency(cloud, results, count):
    rows = []
    for profile_name in ('pmem', 'plain'):
        deploy('scheduler', profile_name)
        records, errors = cloud.boot('lat-' + profile_name, 'it.small',
                                     count, concurrency=count)
        row = results.row(summarize(
            'load %d, filters %s' % (count, 'on' if profile_name == 'pmem'
                                     else 'off'), records, errors,
            notes='[filter_scheduler] profile %s' % profile_name))
        results.check_all_active(row)
        rows.append(row)
        cloud.delete_all()
    deploy('scheduler', 'pmem')
    on, off = rows
    if on['p50_s'] and off['p50_s']:
        on['notes'] += '; p50 %.2fx, p95 %.2fx of filters off' % (
            on['p50_s'] / off['p50_s'], on['p95_s'] / off['p95_s'])


def scenario_race(cloud, results, count, upstream_retries=True):
    """Race to the cache bound; the last row shows a Placement bug.

    The deployment runs Placement with ``allocation_conflict_retry_count =
    1`` (see deploy.sh); with the upstream default of 10 Placement itself
    over-allocates under concurrent claims.
    """
    cases = [('it.cap', 'filter-only accounting', None),
             ('it.cap.placement', 'Placement accounting', None)]
    if upstream_retries:
        cases.append(('it.cap.placement',
                      'Placement accounting, Placement retries=10', 10))
    for flavor, label, retries in cases:
        if retries:
            deploy('placement', str(retries))
        records, errors = cloud.boot('race', flavor, count,
                                     concurrency=count)
        row = results.row(summarize(
            'race %d to 2 MM hosts, %s' % (count, label), records, errors,
            cloud.over_admission(), notes='the caches admit %d' % (
                len(MM_HOSTS) * (CACHE_GB // 16))))
        results.check_settled(row)
        if flavor == 'it.cap.placement' and not retries:
            results.check_bound(row)
        cloud.delete_all()
        if retries:
            deploy('placement', '1')


def scenario_faults(cloud, results, count, logs):
    cloud.relabel_after_scheduler_start()
    repaired_before = _count_lines(logs, 'nova-scheduler',
                                   'differ from the database', 'ERROR')

    def kill_worker(start):
        # The POSTs take about 2 s; then the workers are scheduling them.
        time.sleep(max(0.0, start + 3 - time.time()))
        pid = deploy('kill-scheduler-worker')
        log('killed scheduler worker %s', pid)

    records, errors = cloud.boot('f-sched', 'it.small', count,
                                 concurrency=count, during=kill_worker,
                                 settle=150)
    row = results.row(summarize('fault: kill -9 scheduler worker', records,
                                errors, cloud.over_admission()))
    results.check_bound(row)
    # Capacity servers, which only Memory-Mode hosts take, and enough of
    # them that both workers, the new one too, schedule some: a worker with
    # stale aggregates takes the Memory-Mode hosts for DRAM hosts.
    check_serves(results, cloud, 'kill -9 of a scheduler worker',
                 flavor='it.cap.placement', count=4, on=MM_HOSTS,
                 what='capacity servers')
    row['notes'] = ('scheduler workers afterwards: %s; stale aggregates '
                    'repaired: %d time(s)' % (
                        deploy('scheduler-workers'),
                        _count_lines(logs, 'nova-scheduler',
                                     'differ from the database', 'ERROR')
                        - repaired_before))
    cloud.delete_all()

    def kill_compute(start):
        # About when the first builds reach mm1.
        time.sleep(max(0.0, start + 4 - time.time()))
        deploy('restart-compute', 'mm1')
        log('killed and restarted compute mm1')

    # All to mm1 (its cache holds 12), so that builds are on their way to
    # the compute or on it when it dies.
    records, errors = cloud.boot('f-comp', 'it.cap.placement',
                                 min(count, CACHE_GB // 16),
                                 concurrency=count, during=kill_compute,
                                 settle=150, host='mm1')
    row = results.row(summarize('fault: kill -9 + restart compute mm1',
                                records, errors, cloud.over_admission()))
    results.check_bound(row)
    cloud.delete_all()
    # The restarted nova-compute builds what the scheduler sends it.
    check_serves(results, cloud, 'kill -9 and restart of compute mm1',
                 flavor='it.cap.placement', host='mm1')
    cloud.delete_all()

    def restart_rabbit(start):
        time.sleep(0.5)
        deploy('restart-rabbit')
        log('restarted RabbitMQ')

    # Every service's queues with their consumers before the broker goes.
    queues = rpc_queues()
    # Calls lost with the broker time out after long_rpc_timeout (60 s);
    # what is still BUILD 100 s after the last POST is reported stuck.
    records, errors = cloud.boot('f-rabbit', 'it.small', count,
                                 concurrency=count, during=restart_rabbit,
                                 settle=100)
    row = results.row(summarize('fault: RabbitMQ restart', records, errors,
                                cloud.over_admission()))
    results.check_bound(row)
    # The boots may all have ended before the services reconnected; a
    # server requested then is lost with its message (Nova's, not ours).
    waited, missing = wait_consumed(queues)
    results.check('after a RabbitMQ restart: every service consumes its '
                  'queues again', queues and not missing,
                  '%d queues, %.0f s after the boots; missing consumers: %s'
                  % (len(queues), waited, ', '.join(missing) or 'none'))
    check_serves(results, cloud, 'a RabbitMQ restart')
    cloud.delete_all()


BAD_SPECS = [
    {'pmem:hot_ratio': '2'},
    {'pmem:hot_ratio': 'lots'},
    {'pmem:modes': 'dram,tape'},
    {'pmem:priority': 'urgent'},
    {'pmem:bogus': '1'},
]
GOOD_SPEC = {'pmem:hot_ratio': '0.25', 'pmem:modes': 'dram,memory_mode'}


def scenario_bad_specs(cloud, results):
    flavor = cloud.admin.create_flavor({
        'name': 'it.bad', 'ram': 1024, 'vcpus': 1, 'disk': 1})['flavor']
    path = '/flavors/%s/os-extra_specs' % flavor['id']
    rejected = 0
    for spec in BAD_SPECS:
        (key, value), = spec.items()
        try:
            # A refused spec changes nothing: sending it twice is safe.
            cloud.admin.post(path, {'extra_specs': spec}, ok=(400,),
                             idempotent=True)
            status, body = 400, ''
        except api.APIError as exc:
            status, body = exc.status, exc.body
        rejected += status == 400
        results.check('nova-api answers 400 to %s=%s' % (key, value),
                      status == 400, 'HTTP %s %s' % (status, body[:120]))
    try:
        cloud.admin.post(path, {'extra_specs': GOOD_SPEC}, idempotent=True)
        status = 200
    except api.APIError as exc:
        status = exc.status
    results.check('nova-api accepts %s'
                  % json.dumps(GOOD_SPEC, sort_keys=True),
                  status == 200, 'HTTP %s' % status)
    results.row({
        'scenario': 'bad pmem: extra specs via nova-api',
        'requests': len(BAD_SPECS), 'active': 0, 'error': 0, 'stuck': 0,
        'api_rejected': rejected, 'over_admitted': 0, 'over_admitted_mb': 0,
        'p50_s': None, 'p95_s': None, 'stuck_ids': [], 'faults': {},
        'per_host': {}, 'attribution': {},
        'notes': 'HTTP 400 for %d of %d; a valid spec accepted'
        % (rejected, len(BAD_SPECS))})


# Each phase sets the whole pmem metadata of the Memory-Mode aggregate, so
# that exactly one value is garbage; the scheduler must log that value.
GARBAGE = [
    ({profile.MODE_KEY: kinds.MEMORY_MODE,
      profile.DRAM_CACHE_KEY: 'banana'}, 'banana'),
    ({profile.MODE_KEY: 'tiered-ish',
      profile.DRAM_CACHE_KEY: str(CACHE_GB)}, 'tiered-ish'),
    ({profile.MODE_KEY: kinds.MEMORY_MODE,
      profile.DRAM_CACHE_KEY: '-5'}, '-5'),
]


def scenario_bad_aggregate(cloud, results, count, logs):
    """Garbage in the Memory-Mode aggregate while a steady load runs.

    Per garbage value: capacity servers (memory_mode only) are refused with
    NoValidHost and the scheduler logs a warning naming the value; then the
    metadata is restored and capacity servers land on the Memory-Mode hosts
    again. The load (small flavor) runs through all of it and must end
    ACTIVE: the scheduler kept working.
    """
    agg = cloud.aggregates['pmem-mm']
    good = {profile.MODE_KEY: kinds.MEMORY_MODE,
            profile.DRAM_CACHE_KEY: str(CACHE_GB)}
    load = {}
    phase_s = 10
    spacing = float(phase_s * (len(GARBAGE) + 1)) / max(count, 1)

    def run_load():
        load['records'], load['errors'] = cloud.boot(
            'badagg-load', 'it.small', count, concurrency=count,
            spacing=spacing)

    thread = threading.Thread(target=run_load)
    thread.start()
    try:
        for meta, value in GARBAGE:
            pattern = "'%s'" % re.escape(value)
            before = _count_lines(logs, 'nova-scheduler', pattern)
            cloud.set_metadata(agg, meta)
            time.sleep(AGGREGATE_PROPAGATION_S)
            recs, errors = probe(cloud, 'badagg-probe', 'it.cap')
            logged = _count_lines(logs, 'nova-scheduler', pattern) - before
            refused = recs and not errors and all(
                r['status'] == 'ERROR' and
                'No valid host' in (r['fault'] or '') for r in recs)
            results.check(
                'garbage aggregate metadata %r: hosts refused, value logged'
                % value, refused and logged > 0,
                '%s; scheduler warnings naming it: %d'
                % (describe(recs, errors), logged))
    finally:
        cloud.set_metadata(agg, good)
    time.sleep(AGGREGATE_PROPAGATION_S)
    recs, errors = probe(cloud, 'badagg-fixed', 'it.cap')
    results.check(
        'garbage aggregate metadata restored: capacity servers on the '
        'Memory-Mode hosts again',
        recs and not errors and all(r['status'] == 'ACTIVE' and
                                    r['host'] in MM_HOSTS for r in recs),
        describe(recs, errors))
    thread.join()
    row = results.row(summarize(
        'load during garbage aggregate metadata', load.get('records', {}),
        load.get('errors', ['the load did not run']),
        cloud.over_admission(),
        notes='%d garbage values, each refused by the scheduler'
        % len(GARBAGE)))
    results.check_all_active(row)
    cloud.delete_all()


def _count_lines(logs, name, pattern, level='WARNING'):
    path = os.path.join(logs, name + '.log')
    if not os.path.exists(path):
        return 0
    regex = re.compile(pattern)
    with open(path, errors='replace') as f:
        return sum(1 for line in f
                   if level in line and regex.search(line))


def scan_logs(logs):
    """Traceback frames in our code, and tracebacks per service."""
    ours = []
    tracebacks = {}
    for name in sorted(os.listdir(logs)):
        if not (name.endswith('.log') or name.endswith('.out')):
            continue
        with open(os.path.join(logs, name), errors='replace') as f:
            text = f.read()
        frames = re.findall(r'File "[^"]*nova_pmem_filters[^"]*", line \d+',
                            text)
        ours.extend('%s: %s' % (name, frame) for frame in frames)
        n = text.count('Traceback (most recent call last)')
        if n:
            found = re.findall(
                r' ERROR \S+ \[[^]]*\] ([^\n]*?(?:Remote\.\w+|'
                r'MessagingTimeout|Error|Exception)\w*)', text)
            kinds = collections.Counter(
                re.sub(r'\d+(\.\d+)?', 'N', _short_fault(m)) for m in found)
            tracebacks[name] = {'tracebacks': n,
                                'errors': dict(kinds.most_common(5))}
    return ours, tracebacks


COLUMNS = [('scenario', 'scenario', 44), ('requests', 'req', 4),
           ('active', 'ACTIVE', 6), ('error', 'ERROR', 5),
           ('stuck', 'stuck', 5), ('api_rejected', 'APIerr', 6),
           ('over_admitted', 'over', 4), ('p50_s', 'p50 s', 6),
           ('p95_s', 'p95 s', 6)]


def table(rows):
    lines = ['  '.join(title.ljust(width) for _k, title, width in COLUMNS)]
    lines.append('  '.join('-' * width for _k, _t, width in COLUMNS))
    for row in rows:
        cells = []
        for key, _title, width in COLUMNS:
            value = row.get(key)
            cells.append(('-' if value is None else str(value))[:width]
                         .ljust(width))
        lines.append('  '.join(cells))
    return '\n'.join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--json', help='write the results here')
    parser.add_argument('--logs', default=os.path.join(
        os.environ.get('PMEM_IT_WORK', '/tmp/pmem-integration'), 'logs'))
    parser.add_argument('--quick', action='store_true',
                        help='what CI runs: 10 servers per load and fault '
                        'scenario, no race with Placement retries=10')
    parser.add_argument('--load', type=int,
                        help='servers per load and fault scenario '
                        '(20; 10 with --quick)')
    parser.add_argument('--race', type=int, default=36,
                        help='servers per race scenario (24 fit)')
    parser.add_argument('--no-upstream-retries', action='store_true',
                        help='skip the race with Placement retries=10')
    parser.add_argument('--only',
                        default='operator,tempest,identity,watcher,latency,'
                        'race,bad,faults',
                        help='comma list of operator, tempest, identity, '
                        'watcher, latency, race, bad, faults')
    parser.add_argument('--teardown', action='store_true',
                        help='stop the deployment at the end and check '
                        'that nothing is left running')
    args = parser.parse_args(argv)
    load = args.load or (10 if args.quick else 20)
    upstream = not (args.no_upstream_retries or args.quick)
    only = set(args.only.split(','))
    started = time.time()
    results = Results()

    cloud = Cloud()
    cloud.setup()
    rss_mb = deploy('rss')
    shared = []

    def sample_shared_connections(when):
        found = deploy('shared-connections')
        if found != 'none':
            shared.append('%s: %s' % (when, found.replace('\n', '; ')))

    sample_shared_connections('after setup')
    operator_work = os.path.join(
        os.environ.get('PMEM_IT_WORK', '/tmp/pmem-integration'), 'operator')
    # First, on the cloud as set up: the doctor knows exactly what to find.
    plan = [('operator', operator.scenario_doctor,
             (cloud, results, operator_work)),
            ('operator', operator.scenario_upgrade_check,
             (cloud, results, deploy)),
            ('operator', operator.scenario_doctor_fixes,
             (cloud, results, operator_work)),
            ('operator', operator.scenario_devstack,
             (cloud, results, operator_work)),
            ('operator', operator.scenario_nova_config,
             (cloud, results, operator_work)),
            ('tempest', tempest_suite.scenario_tempest,
             (cloud, results, operator_work)),
            ('identity', identity.scenario_identity,
             (cloud, results, os.path.join(operator_work, 'identity'))),
            ('watcher', rebalance.scenario_watcher,
             (cloud, results, args.logs, deploy)),
            ('latency', scenario_latency, (cloud, results, load)),
            ('race', scenario_race, (cloud, results, args.race, upstream)),
            ('bad', scenario_bad_specs, (cloud, results)),
            ('bad', scenario_bad_aggregate,
             (cloud, results, load, args.logs)),
            ('faults', scenario_faults, (cloud, results, load, args.logs))]
    for name, func, func_args in plan:
        if name not in only:
            continue
        # A scenario that breaks off is a failed check; the next one runs
        # on a cleaned-up cloud.
        try:
            func(*func_args)
            completed = ''
        except Exception:
            completed = traceback.format_exc(limit=3)
            log('%s broke off:\n%s', func.__name__, completed)
            try:
                cloud.delete_all()
            except Exception as exc:
                log('cleanup after %s failed: %s', func.__name__, exc)
        results.check('%s ran to the end' % func.__name__, not completed,
                      completed.strip().splitlines()[-1] if completed else '')
        sample_shared_connections('after %s' % func.__name__)

    # Every scenario restarts nova-scheduler, whose parent process talks to
    # Placement before it forks the workers (see deploy.sh).
    results.check('no connection to Placement or nova-api is shared by two '
                  'processes', not shared, '; '.join(shared)[:600])

    ours, tracebacks = scan_logs(args.logs)
    client_stats = api.STATS.snapshot()
    results.check('no traceback in nova_pmem_filters in any service log',
                  not ours, '; '.join(ours[:5]))
    if args.teardown:
        deploy('down')
        left = deploy('leftovers')
        results.check('teardown leaves no process and no listener',
                      left == 'none', left)
    result = {
        'rows': results.rows,
        'checks': results.checks,
        'tracebacks_in_nova_pmem_filters': ours,
        'tracebacks_per_log': tracebacks,
        'wall_time_s': round(time.time() - started, 1),
        'deployment_rss_mb_at_start': rss_mb,
        'client': client_stats,
    }
    print(table(results.rows))
    print('deployment RSS at start: %s MB' % rss_mb)
    print('API client: %d retries of idempotent requests, %d POSTs sent '
          'again, %d creates reconciled by name (a lost answer)'
          % (client_stats.get('retried', 0), client_stats.get('resent', 0),
             client_stats.get('reconciled', 0)))
    print('tracebacks per log (Nova and libraries):')
    for name, info in sorted(tracebacks.items()):
        print('  %s: %d, %s' % (name, info['tracebacks'],
                                '; '.join('%dx %s' % (n, k) for k, n in
                                          info['errors'].items())))
    for row in results.rows:
        if row.get('attribution'):
            print('%s: %s' % (row['scenario'], '; '.join(
                '%d %s' % (n, k) for k, n in
                sorted(row['attribution'].items()))))
    for row in results.rows:
        if row.get('stuck_ids'):
            print('stuck in %s: %s' % (row['scenario'],
                                       ', '.join(row['stuck_ids'])))
    failed = [c for c in results.checks if not c['passed']]
    print('checks: %d passed, %d failed'
          % (len(results.checks) - len(failed), len(failed)))
    for check in failed:
        print('FAILED: %s (%s)' % (check['name'], check['detail']))
    if args.json:
        fileutil.write_atomic(args.json, json.dumps(
            result, indent=2, sort_keys=True) + '\n')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
