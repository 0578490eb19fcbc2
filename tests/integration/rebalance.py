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
"""The Watcher scenario: a tiered host over its near memory, rebalanced.

The loop of issue 30 with real components: the observers' exporters
(:mod:`tests.integration.observers`) serve the working sets of the servers
really on each host, Prometheus scrapes them, Watcher's decision engine
reads them through Aetos (its ``aetos`` datasource, with Keystone) and
runs the strategy ``tiered_memory_rebalance`` (goal
``near_memory_balance``) on an audit, and Watcher's applier live-migrates
through Nova, whose scheduler runs the pmem filters on each migration.

Memory-Mode host mm1 gets servers whose flavors declare a small hot ratio
(admitted by PmemCacheFilter on it) but whose measured working sets add up
past its 192 GB DRAM cache; mm2 has room. Checks: the audit's action plan
is :func:`~nova_pmem_filters.core.plans.rebalance.plan` of the same inputs,
computed here from Nova, Placement and the working-set table; Aetos
answered the audit's query of the working sets; the applier
finishes; every server is where the plan said; each move is a completed
live migration that the scheduler ran the filters on (its request id in
the scheduler's log, PmemCacheFilter returning the host); Prometheus then
reports every tiered host under its near memory; a second audit proposes
nothing. The action plan and the working sets before and after go into the
scenario's row of the results.

Watcher, Aetos and Prometheus run only for this scenario (deploy.sh
``watcher start``/``stop``).
"""

import os
import re
import sys
import time
import urllib.parse

from nova_pmem_filters.core.plans import rebalance
from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import profile

from tests.integration import client as api
from tests.integration import observers

GB = profile.MB_PER_GB
FLAVOR = 'it.ws'
# Declared hot 8 GB of 32 GB: four fit any 192 GB cache many times over.
FLAVOR_SPEC = (32, 2, {'pmem:modes': kinds.MEMORY_MODE,
                       'pmem:hot_ratio': '0.25'})
# Measured working sets, GB, by host: mm1's 260 GB exceed its 192 GB DRAM
# cache; mm2's 40 GB leave room.
WORKING_SETS_GB = {'mm1': (80, 70, 60, 50), 'mm2': (40,)}
PARAMETERS = {'act_above': 1.0, 'aim_below': 0.9, 'max_migrations': 4}
# The scheduler's [pmem] (deploy.sh): default_hot_ratio 0.5, the rest
# Nova's defaults.
DEFAULTS = extra_specs.Defaults(hot_ratio=0.5)
CACHE_OVERCOMMIT_RATIO = 1.0
WATCHER_VERSION = 'infra-optim 1.7'
AUDIT_S = 180
APPLY_S = 600
SCRAPE_WAIT_S = 90
MODEL_WAIT_S = 120
QUERY_INSTANCES = 'nova_pmem_instance_working_set_bytes'


def log(msg, *args):
    text = msg % args if args else msg
    sys.stderr.write('%s watcher: %s\n' % (time.strftime('%H:%M:%S'), text))
    sys.stderr.flush()


def watcher_client():
    """Watcher's API as the admin, at the newest microversion we know."""
    watcher = api.Client(url=api.WATCHER_URL)
    watcher.headers = {'OpenStack-API-Version': WATCHER_VERSION}
    watcher.session.headers.pop('X-OpenStack-Nova-API-Version', None)
    watcher.session.headers['OpenStack-API-Version'] = WATCHER_VERSION
    return watcher


def wait_until(what, deadline_s, probe, poll_s=1.0):
    """Poll ``probe`` until it returns a true value; that value, or None."""
    deadline = time.time() + deadline_s
    while True:
        value = probe()
        if value or time.time() >= deadline:
            if not value:
                log('%s: not after %ds', what, deadline_s)
            return value
        time.sleep(poll_s)


# -- Prometheus --------------------------------------------------------------


def prometheus(query):
    """The samples of an instant query: [(labels, value)]."""
    resp = api.requests.get(api.PROMETHEUS_URL + '/api/v1/query',
                            params={'query': query}, timeout=30)
    resp.raise_for_status()
    return [(s['metric'], float(s['value'][1]))
            for s in resp.json()['data']['result']]


def scraped_instances():
    """[(uuid, host label, MB)] of the instance series Prometheus has."""
    return sorted((labels['uuid'], labels.get('host'), value / (1024 * 1024))
                  for labels, value in prometheus(QUERY_INSTANCES))


def host_usage():
    """{host: (working set MB, near memory MB)} as Prometheus has them."""
    ws = {labels['host']: value / (1024 * 1024) for labels, value in
          prometheus('nova_pmem_host_working_set_bytes')}
    near = {labels['host']: value / (1024 * 1024) for labels, value in
            prometheus('nova_pmem_host_near_memory_bytes')}
    return {host: (ws.get(host), near.get(host)) for host in near}


def scraped_as(expected):
    """Whether Prometheus has each uuid once, on its host, with its MB.

    Once so, every host has been scraped since the servers last moved: a
    series of a host not scraped since would still show a server there.
    """
    have = scraped_instances()
    uuids = [uuid for uuid, _host, _mb in have]
    return len(uuids) == len(set(uuids)) and all(
        uuid in expected and expected[uuid][0] == host
        and abs(expected[uuid][1] - mb) < 1 for uuid, host, mb in have) \
        and set(uuids) == set(expected)


# -- the independent plan ----------------------------------------------------


def _free(placement, provider):
    inventories = placement.get('/resource_providers/%s/inventories'
                                % provider)['inventories']
    usages = placement.get('/resource_providers/%s/usages'
                           % provider)['usages']

    def free(rc):
        inv = inventories[rc]
        return ((inv['total'] - inv['reserved']) * inv['allocation_ratio']
                - usages.get(rc, 0))
    return free('MEMORY_MB'), free('VCPU')


def plan_inputs(cloud, table):
    """rebalance.Host records of the cloud as Nova and Placement see it."""
    metas = {}
    for agg in cloud.admin.get('/os-aggregates')['aggregates']:
        for host in agg['hosts']:
            metas.setdefault(host, []).append(agg.get('metadata') or {})
    by_host = {}
    for server in cloud.servers():
        by_host.setdefault(server['OS-EXT-SRV-ATTR:host'], []).append(server)
    placement = api.Placement()
    hosts = []
    for hyp in cloud.admin.get('/os-hypervisors/detail')['hypervisors']:
        name = hyp['service']['host']
        if hyp['state'] != 'up' or hyp['status'] != 'enabled':
            continue
        free_ram, free_vcpus = _free(placement, hyp['id'])
        instances = tuple(
            rebalance.Instance(
                uuid=s['id'], name=s['name'],
                memory_mb=s['flavor']['ram'], vcpus=s['flavor']['vcpus'],
                extra_specs=dict(s['flavor'].get('extra_specs') or {}),
                working_set_mb=table.get(s['id']))
            for s in sorted(by_host.get(name, []), key=lambda s: s['id']))
        hosts.append(rebalance.Host(
            name=name, profile=profile.from_metadata(metas.get(name, [])),
            free_ram_mb=free_ram, free_vcpus=free_vcpus, cells=None,
            instances=instances))
    return hosts


def expected_plan(cloud, table):
    return rebalance.plan(
        plan_inputs(cloud, table), act_above=PARAMETERS['act_above'],
        aim_below=PARAMETERS['aim_below'],
        max_moves=PARAMETERS['max_migrations'],
        cache_overcommit_ratio=CACHE_OVERCOMMIT_RATIO, defaults=DEFAULTS)


# -- Watcher -----------------------------------------------------------------


def model_matches(watcher, placed):
    """Whether Watcher's compute model has each server on its host."""
    context = watcher.get('/v1/data_model?data_model_type=compute')
    model = {e.get('server_uuid'): e.get('node_hostname')
             for e in context.get('context', []) if e.get('server_uuid')}
    return all(model.get(uuid) == host for uuid, host in placed.items())


def aetos_queries(logs):
    """(PromQL, HTTP status) of each instant query Aetos answered.

    From aetos-api's access log (gunicorn's, deploy.sh start_aetos).
    """
    found = []
    try:
        with open(os.path.join(logs, 'aetos.out')) as f:
            lines = f.readlines()
    except OSError:
        return found
    for line in lines:
        match = re.search(r'"GET /api/v1/query\?(\S+) HTTP/[0-9.]+" (\d+)',
                          line)
        if match:
            query = urllib.parse.parse_qs(match.group(1)).get('query', [''])
            found.append((query[0], match.group(2)))
    return found


def audit(watcher, name):
    """Run a ONESHOT audit; (audit, action plan or None, its actions)."""
    created = watcher.post('/v1/audits', {
        'name': name, 'audit_type': 'ONESHOT',
        'goal': 'near_memory_balance',
        'strategy': 'tiered_memory_rebalance',
        'parameters': dict(PARAMETERS), 'auto_trigger': False})
    uuid = created['uuid']

    def finished():
        found = watcher.get('/v1/audits/%s' % uuid)
        return found if found['state'] in ('SUCCEEDED', 'FAILED',
                                           'CANCELLED') else None
    done = wait_until('audit %s' % name, AUDIT_S, finished) or \
        watcher.get('/v1/audits/%s' % uuid)
    plans = watcher.get('/v1/action_plans/detail?audit_uuid=%s'
                        % uuid)['action_plans']
    if not plans:
        return done, None, []
    action_plan = plans[0]
    actions = watcher.get('/v1/actions/detail?action_plan_uuid=%s'
                          % action_plan['uuid'])['actions']
    return done, action_plan, actions


def action_moves(actions):
    """(uuid, source, destination) of each migrate action, sorted."""
    return sorted((a['input_parameters'].get('resource_id'),
                   a['input_parameters'].get('source_node'),
                   a['input_parameters'].get('destination_node'))
                  for a in actions if a['action_type'] == 'migrate')


def apply_plan(watcher, action_plan):
    """Start the action plan; its final state."""
    watcher.request('PATCH', '/v1/action_plans/%s' % action_plan['uuid'],
                    [{'op': 'replace', 'path': '/state',
                      'value': 'PENDING'}], ok=(200,))

    def finished():
        found = watcher.get('/v1/action_plans/%s' % action_plan['uuid'])
        return found['state'] if found['state'] in (
            'SUCCEEDED', 'FAILED', 'CANCELLED', 'SUPERSEDED') else None
    return wait_until('action plan', APPLY_S, finished, poll_s=2.0)


# -- Nova's side of the moves ------------------------------------------------


def migration_of(cloud, uuid):
    """The instance's live migrations (Nova's migration records)."""
    return [m for m in cloud.admin.get(
        '/os-migrations?instance_uuid=%s&migration_type=live-migration'
        % uuid)['migrations']]


def request_ids(cloud, uuid):
    """Request ids of the instance's live-migration actions."""
    return [a['request_id'] for a in cloud.admin.get(
        '/servers/%s/os-instance-actions' % uuid)['instanceActions']
        if a['action'] == 'live-migration']


def scheduler_admitted(logs, request_id):
    """The scheduler's lines of a request: (filters passed, all removed)."""
    path = os.path.join(logs, 'nova-scheduler.log')
    with open(path, errors='replace') as f:
        lines = [line for line in f if request_id in line]
    passed = any(re.search(r'Filter PmemCacheFilter returned [1-9]', line)
                 for line in lines)
    removed = any('Filtering removed all hosts' in line or
                  'NoValidHost' in line for line in lines)
    return passed, removed


# -- the scenario ------------------------------------------------------------


def _flavor(cloud):
    ram_gb, vcpus, specs = FLAVOR_SPEC
    flavor = cloud.admin.create_flavor({'name': FLAVOR, 'ram': ram_gb * GB,
                                        'vcpus': vcpus, 'disk': 1})['flavor']
    cloud.admin.post('/flavors/%s/os-extra_specs' % flavor['id'],
                     {'extra_specs': specs}, idempotent=True)
    cloud.flavors[FLAVOR] = flavor['id']


def _boot(cloud, results):
    """Servers on their hosts; the working-set table {uuid: MB}."""
    table = {}
    placed = {}
    for host, sets in sorted(WORKING_SETS_GB.items()):
        records, errors = cloud.boot('ws-' + host, FLAVOR, len(sets),
                                     concurrency=len(sets), host=host)
        recs = sorted(records.values(), key=lambda r: r['name'])
        ok = (not errors and len(recs) == len(sets) and all(
            r['status'] == 'ACTIVE' and r['host'] == host for r in recs))
        results.check('watcher: %d servers declaring hot ratio 0.25 admitted '
                      'on %s' % (len(sets), host), ok,
                      '; '.join('%s %s on %s' % (r['id'][:8], r['status'],
                                                 r['host']) for r in recs)
                      + ('; API: %s' % errors if errors else ''))
        for rec, gb in zip(recs, sets):
            table[rec['id']] = float(gb * GB)
            placed[rec['id']] = rec['host']
    return table, placed


def _describe_actions(actions):
    return [dict(a['input_parameters'], action_type=a['action_type'],
                 state=a['state']) for a in actions]


def _usage_gb(usage):
    return {h: {'working_set_gb': round((ws or 0) / GB, 1),
                'near_memory_gb': round(near / GB, 1)}
            for h, (ws, near) in sorted(usage.items())}


def scenario_watcher(cloud, results, logs, deploy):
    """See the module docstring; ``deploy`` runs deploy.sh commands."""
    work = os.environ.get('PMEM_IT_WORK', '/tmp/pmem-integration')
    table_path = os.path.join(work, 'observers', 'working-sets.json')
    row = {'scenario': 'watcher rebalance', 'requests': 0}
    results.row(row)
    cloud.delete_all()
    _flavor(cloud)
    table, placed = _boot(cloud, results)
    row['requests'] = len(table)
    t0 = time.time()
    deploy('watcher', 'start')
    row['watcher_start_s'] = round(time.time() - t0, 1)
    try:
        _rebalance(cloud, results, logs, table, placed, table_path, row)
    finally:
        deploy('watcher', 'stop')
        cloud.delete_all()


def _rebalance(cloud, results, logs, table, placed, table_path, row):
    observers.write_table(table_path, table)
    watcher = watcher_client()
    expected = {u: (placed[u], mb) for u, mb in table.items()}
    results.check('watcher: Prometheus has every working set from the '
                  'observers', wait_until('Prometheus series', SCRAPE_WAIT_S,
                                          lambda: scraped_as(expected)),
                  str(scraped_instances()))
    before = host_usage()
    row['working_sets_before'] = _usage_gb(before)
    log('working sets before: %s', row['working_sets_before'])
    wait_until('Watcher model', MODEL_WAIT_S,
               lambda: model_matches(watcher, placed))

    want = expected_plan(cloud, table)
    want_moves = sorted((m.instance, m.source, m.destination)
                        for m in want.moves)
    done, action_plan, actions = audit(watcher, 'it-rebalance-1')
    got = action_moves(actions)
    row['action_plan'] = {
        'uuid': action_plan and action_plan['uuid'],
        'efficacy_indicators': action_plan and action_plan.get(
            'efficacy_indicators'),
        'actions': _describe_actions(actions)}
    log('action plan: %s', row['action_plan'])
    results.check(
        'watcher: the audit\'s action plan is rebalance.plan of the same '
        'inputs', done['state'] == 'SUCCEEDED' and action_plan and want_moves
        and got == want_moves,
        'audit %s; actions %s; rebalance.plan %s (unfixed %s)'
        % (done['state'], got, want_moves,
           [(u.host, u.reason) for u in want.unfixed]))
    queries = aetos_queries(logs)
    results.check(
        'watcher: the audit read the working sets through Aetos, with '
        'Keystone (its aetos datasource)',
        any(status == '200' and 'nova_pmem_instance_working_set_bytes' in q
            for q, status in queries), '; '.join(
                '%s %s' % item for item in queries)[:600])
    if not (action_plan and got):
        return
    state = apply_plan(watcher, action_plan)
    results.check('watcher: the applier runs the action plan to SUCCEEDED',
                  state == 'SUCCEEDED', 'state %s' % state)
    _check_moves(cloud, results, logs, want, placed)
    _check_after(cloud, results, watcher, table, want, row)


def _check_moves(cloud, results, logs, want, placed):
    where = {s['id']: s['OS-EXT-SRV-ATTR:host'] for s in cloud.servers()}
    planned = dict(placed, **{m.instance: m.destination
                              for m in want.moves})
    results.check('watcher: every server is where the plan put it',
                  all(where.get(u) == h for u, h in planned.items()),
                  ', '.join('%s on %s (plan %s)' % (u[:8], where.get(u), h)
                            for u, h in sorted(planned.items())))
    details = []
    live_ok = admitted_ok = True
    for move in want.moves:
        migrations = migration_of(cloud, move.instance)
        done = [m for m in migrations if m['status'] == 'completed'
                and m['source_compute'] == move.source
                and m['dest_compute'] == move.destination]
        live_ok = live_ok and len(done) == 1
        passed = removed = False
        for request_id in request_ids(cloud, move.instance):
            p, r = scheduler_admitted(logs, request_id)
            passed, removed = passed or p, removed or r
        admitted_ok = admitted_ok and passed and not removed
        details.append('%s %s->%s: %s; scheduler %s%s' % (
            move.instance[:8], move.source, move.destination,
            [(m['migration_type'], m['status'], m['dest_compute'])
             for m in migrations],
            'PmemCacheFilter passed' if passed else 'no filter line',
            ', removed all hosts' if removed else ''))
    results.check('watcher: each move is a completed live migration',
                  live_ok, '; '.join(details))
    results.check('watcher: the scheduler ran the pmem filters on each live '
                  'migration and admitted it', admitted_ok,
                  '; '.join(details))


def _check_after(cloud, results, watcher, table, want, row):
    where = {s['id']: s['OS-EXT-SRV-ATTR:host'] for s in cloud.servers()}
    expected = {u: (where[u], mb) for u, mb in table.items()}
    scraped = wait_until('Prometheus after the moves', SCRAPE_WAIT_S,
                         lambda: scraped_as(expected))
    after = host_usage()
    row['working_sets_after'] = _usage_gb(after)
    log('working sets after: %s', row['working_sets_after'])
    tiered = [u.host for u in want.before if u.near_memory_mb]
    under = [h for h in tiered if after.get(h, (None, None))[0] is not None
             and after[h][0] <= after[h][1]]
    results.check('watcher: Prometheus reports every tiered host under its '
                  'near memory after the moves',
                  scraped and tiered and sorted(under) == sorted(tiered),
                  str(row['working_sets_after']))
    # The decision engine's model must have seen the migrations first.
    synced = wait_until('Watcher model after the moves', MODEL_WAIT_S,
                        lambda: model_matches(watcher, where))
    done, action_plan, actions = audit(watcher, 'it-rebalance-2')
    row['second_audit'] = {'state': done['state'],
                           'actions': _describe_actions(actions)}
    results.check('watcher: a second audit proposes no action (no '
                  'oscillation)', synced and done['state'] == 'SUCCEEDED'
                  and not actions,
                  'model synced %s; audit %s; actions %s'
                  % (bool(synced), done['state'], action_moves(actions)))
