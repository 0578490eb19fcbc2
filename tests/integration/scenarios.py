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

Run by ``run.sh`` once ``deploy.sh up`` has finished; prints the results
table and writes the same rows as JSON (``--json``).

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
import time
import uuid

from nova_pmem_filters import extra_specs as pmem_specs
from nova_pmem_filters import profile

from tests.integration import client as api

HERE = os.path.dirname(os.path.abspath(__file__))
DEPLOY = os.path.join(HERE, 'deploy.sh')
IMAGE = '155d900f-4e14-4e4c-a73d-069cbf4541e6'
GB = profile.MB_PER_GB
DEFAULT_HOT_RATIO = 0.5
CACHE_GB = 192
MM_HOSTS = ('mm1', 'mm2')

# Flavors: name -> (RAM GB, vCPU, extra specs)
CAP_SPECS = {'pmem:modes': 'memory_mode', 'pmem:priority': 'low',
             'pmem:hot_ratio': '0.5'}
FLAVORS = {
    # 16 GB hot: 12 fit in a 192 GB cache, RAM (512 GB) binds at 16.
    'it.cap': (32, 2, dict(CAP_SPECS)),
    'it.cap.placement': (32, 2, dict(
        CAP_SPECS, **pmem_specs.near_memory_spec(32 * GB, 0.5))),
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
                ('dram', ['dram1'], {profile.MODE_KEY: profile.DRAM}),
                ('pmem-mm', list(MM_HOSTS),
                 {profile.MODE_KEY: profile.MEMORY_MODE,
                  profile.DRAM_CACHE_KEY: str(CACHE_GB)}),
                ('pmem-ad', ['ad1'], {profile.MODE_KEY: profile.APP_DIRECT})):
            agg = self.admin.post('/os-aggregates',
                                  {'aggregate': {'name': name}})['aggregate']
            self.set_metadata(agg['id'], meta)
            for host in hosts:
                self.admin.post('/os-aggregates/%s/action' % agg['id'],
                                {'add_host': {'host': host}})
            self.aggregates[name] = agg['id']
        for name, (ram_gb, vcpus, specs) in FLAVORS.items():
            flavor = self.admin.post('/flavors', {'flavor': {
                'name': name, 'ram': ram_gb * GB, 'vcpus': vcpus,
                'disk': 1}})['flavor']
            self.admin.post('/flavors/%s/os-extra_specs' % flavor['id'],
                            {'extra_specs': specs})
            self.flavors[name] = flavor['id']

    def set_metadata(self, agg_id, meta):
        self.admin.post('/os-aggregates/%s/action' % agg_id,
                        {'set_metadata': {'metadata': meta}})

    # -- servers -------------------------------------------------------------

    def servers(self, prefix=None):
        path = '/servers/detail?all_tenants=1'
        if prefix:
            path += '&name=%s' % prefix
        return self.admin.get(path)['servers']

    def boot(self, scenario, flavor, count, concurrency=20, settle=150,
             during=None):
        """Boot ``count`` servers at once; wait until each is terminal.

        ``during(start_time)`` runs in this thread right after the POSTs
        were sent (a fault, a metadata change). Returns the records.
        """
        prefix = 'it-%s-%s' % (scenario, uuid.uuid4().hex[:6])
        records = {}
        errors = []

        def post(i):
            name = '%s-%03d' % (prefix, i)
            t0 = time.time()
            try:
                server = self.admin.post('/servers', {'server': {
                    'name': name, 'imageRef': IMAGE,
                    'flavorRef': self.flavors[flavor],
                    'networks': 'none'}})['server']
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
        return records, errors

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
            mb = profile.hot_mb(flavor['ram'], ratio)
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


def summarize(scenario, records, errors, over=None, notes='',
              must_hold=False):
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
        'must_hold': must_hold,
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


# -- scenarios ------------------------------------------------------------


def scenario_latency(cloud, count):
    rows = []
    for profile_name in ('pmem', 'plain'):
        deploy('scheduler', profile_name)
        time.sleep(3)
        records, errors = cloud.boot('lat-' + profile_name, 'it.small',
                                     count, concurrency=count)
        rows.append(summarize(
            'load %d, filters %s' % (count, 'on' if profile_name == 'pmem'
                                     else 'off'), records, errors,
            notes='[filter_scheduler] profile %s' % profile_name))
        cloud.delete_all()
    deploy('scheduler', 'pmem')
    time.sleep(3)
    return rows


def scenario_race(cloud, count, upstream_retries=True):
    """Race to the cache bound; the last row shows a Placement bug.

    The deployment runs Placement with ``allocation_conflict_retry_count =
    1`` (see deploy.sh); with the upstream default of 10 Placement itself
    over-allocates under concurrent claims.
    """
    rows = []
    cases = [('it.cap', 'filter-only accounting', None, False),
             ('it.cap.placement', 'Placement accounting', None, True)]
    if upstream_retries:
        cases.append(('it.cap.placement',
                      'Placement accounting, Placement retries=10',
                      10, False))
    for flavor, label, retries, must_hold in cases:
        if retries:
            deploy('placement', str(retries))
        records, errors = cloud.boot('race', flavor, count,
                                     concurrency=count)
        over = cloud.over_admission()
        row = summarize('race %d to 2 MM hosts, %s' % (count, label),
                        records, errors, over,
                        notes='the caches admit %d' % (
                            len(MM_HOSTS) * (CACHE_GB // 16)))
        row['must_hold'] = must_hold
        rows.append(row)
        cloud.delete_all()
        if retries:
            deploy('placement', '1')
    return rows


def scenario_faults(cloud, count):
    rows = []

    def kill_worker(start):
        pid = deploy('kill-scheduler-worker')
        log('killed scheduler worker %s', pid)

    records, errors = cloud.boot('f-sched', 'it.small', count,
                                 concurrency=count, during=kill_worker,
                                 settle=180)
    rows.append(summarize('fault: kill -9 scheduler worker', records,
                          errors, cloud.over_admission(), must_hold=True))
    cloud.delete_all()

    def kill_compute(start):
        time.sleep(1)
        deploy('restart-compute', 'mm1')
        log('killed and restarted compute mm1')

    records, errors = cloud.boot('f-comp', 'it.cap.placement', count,
                                 concurrency=count, during=kill_compute,
                                 settle=180)
    # The old service record stays "up" for service_down_time: ask whether
    # the restarted process is still running after its start-up checks.
    time.sleep(15)
    alive = deploy('alive', 'compute-mm1')
    note = 'restarted mm1 %s' % alive
    rows.append(summarize('fault: kill -9 + restart compute mm1', records,
                          errors, cloud.over_admission(), notes=note,
                          must_hold=True))
    cloud.delete_all()

    def restart_rabbit(start):
        time.sleep(0.5)
        deploy('restart-rabbit')
        log('restarted RabbitMQ')

    records, errors = cloud.boot('f-rabbit', 'it.small', count,
                                 concurrency=count, during=restart_rabbit,
                                 settle=180)
    rows.append(summarize('fault: RabbitMQ restart', records, errors,
                          cloud.over_admission(), must_hold=True))
    cloud.delete_all()
    return rows


BAD_SPECS = [
    {'pmem:hot_ratio': '2'},
    {'pmem:hot_ratio': 'lots'},
    {'pmem:modes': 'dram,tape'},
    {'pmem:priority': 'urgent'},
    {'pmem:bogus': '1'},
]


def scenario_bad_specs(cloud):
    flavor = cloud.admin.post('/flavors', {'flavor': {
        'name': 'it.bad', 'ram': 1024, 'vcpus': 1, 'disk': 1}})['flavor']
    rejected = 0
    details = {}
    for spec in BAD_SPECS:
        try:
            cloud.admin.post('/flavors/%s/os-extra_specs' % flavor['id'],
                             {'extra_specs': spec}, ok=(400,))
            rejected += 1
            details[json.dumps(spec)] = 400
        except api.APIError as exc:
            details[json.dumps(spec)] = exc.status
    good = {'pmem:hot_ratio': '0.25', 'pmem:modes': 'dram,memory_mode'}
    cloud.admin.post('/flavors/%s/os-extra_specs' % flavor['id'],
                     {'extra_specs': good})
    row = {'scenario': 'bad pmem: extra specs via nova-api',
           'requests': len(BAD_SPECS), 'active': 0, 'error': 0,
           'stuck': 0, 'api_rejected': rejected, 'over_admitted': 0,
           'over_admitted_mb': 0, 'p50_s': None, 'p95_s': None,
           'stuck_ids': [], 'faults': {}, 'per_host': {},
           'attribution': {}, 'must_hold': False,
           'notes': 'HTTP status per spec: %s; valid spec accepted'
           % details}
    log('bad specs: %s', details)
    return row


def scenario_bad_aggregate(cloud, count, logs):
    agg = cloud.aggregates['pmem-mm']
    garbage = [{profile.DRAM_CACHE_KEY: 'banana'},
               {profile.MODE_KEY: 'tiered-ish'},
               {profile.DRAM_CACHE_KEY: '-5'}]
    pattern = r"'banana'|'tiered-ish'|'-5'"
    before = _count_lines(logs, 'nova-scheduler', pattern)

    def garble(start):
        for meta in garbage:
            cloud.set_metadata(agg, meta)
            time.sleep(1)
        cloud.set_metadata(agg, {profile.MODE_KEY: profile.MEMORY_MODE,
                                 profile.DRAM_CACHE_KEY: str(CACHE_GB)})

    records, errors = cloud.boot('badagg', 'it.cap', count,
                                 concurrency=count, during=garble)
    logged = _count_lines(logs, 'nova-scheduler', pattern) - before
    row = summarize('garbage aggregate metadata under load', records,
                    errors, cloud.over_admission(),
                    notes='scheduler log lines naming the garbage: %d'
                    % logged)
    row['garbage_log_lines'] = logged
    cloud.delete_all()
    return row


def _count_lines(logs, name, pattern):
    path = os.path.join(logs, name + '.log')
    if not os.path.exists(path):
        return 0
    regex = re.compile(pattern)
    with open(path, errors='replace') as f:
        return sum(1 for line in f
                   if 'WARNING' in line and regex.search(line))


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
    parser.add_argument('--load', type=int, default=20,
                        help='servers per latency and fault scenario')
    parser.add_argument('--race', type=int, default=36,
                        help='servers per race scenario (24 fit)')
    parser.add_argument('--no-upstream-retries', action='store_true',
                        help='skip the race with Placement retries=10')
    parser.add_argument('--only', default='latency,race,faults,bad',
                        help='comma list of latency, race, faults, bad')
    args = parser.parse_args(argv)
    only = set(args.only.split(','))
    started = time.time()

    cloud = Cloud()
    cloud.setup()
    rss_mb = deploy('rss')
    rows = []
    if 'latency' in only:
        rows.extend(scenario_latency(cloud, args.load))
    if 'race' in only:
        rows.extend(scenario_race(cloud, args.race,
                                  not args.no_upstream_retries))
    if 'bad' in only:
        rows.append(scenario_bad_specs(cloud))
        rows.append(scenario_bad_aggregate(cloud, args.load, args.logs))
    if 'faults' in only:
        rows.extend(scenario_faults(cloud, args.load))

    ours, tracebacks = scan_logs(args.logs)
    result = {
        'rows': rows,
        'tracebacks_in_nova_pmem_filters': ours,
        'tracebacks_per_log': tracebacks,
        'wall_time_s': round(time.time() - started, 1),
        'deployment_rss_mb_at_start': rss_mb,
    }
    print(table(rows))
    print('deployment RSS at start: %s MB' % rss_mb)
    print('traceback frames in nova_pmem_filters: %d' % len(ours))
    print('tracebacks per log (Nova and libraries; none in our code):')
    for name, info in sorted(tracebacks.items()):
        print('  %s: %d, %s' % (name, info['tracebacks'],
                                '; '.join('%dx %s' % (n, k) for k, n in
                                          info['errors'].items())))
    for row in rows:
        if row.get('attribution'):
            print('%s: %s' % (row['scenario'], '; '.join(
                '%d %s' % (n, k) for k, n in
                sorted(row['attribution'].items()))))
    for row in rows:
        if row.get('stuck_ids'):
            print('stuck in %s: %s' % (row['scenario'],
                                       ', '.join(row['stuck_ids'])))
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(result, f, indent=2, sort_keys=True)
    failed = bool(ours) or any(
        row['over_admitted'] for row in rows if row.get('must_hold'))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
