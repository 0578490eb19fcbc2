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
"""Checks of what ``nova-pmem-observe`` measured (``--observations DIR``).

Flavors that declare less hot RAM than their instances use (the core's rule,
:func:`nova_pmem_filters.core.plans.hotratio.under_declared`), hosts whose
measured working set exceeds their near memory (its fix: the core's
rebalancing plan, :func:`nova_pmem_filters.core.plans.rebalance.plan`, as live
migrations), and NUMA-bound instances whose memory sits on another node or
on a CPU-less (slow-tier) node.

From the kernel's tiering the observer records (the document's
``tiering``, judged by :mod:`nova_pmem_filters.core.rules.tiering`): a host
with far nodes whose kernel does not both promote and demote, tiering that does
not keep up (:func:`~nova_pmem_filters.core.rules.tiering.lagging`), and
instances whose hot pages must sit on the far node
(:func:`~nova_pmem_filters.core.rules.charging.hot_on_far_mb`), and
instances whose memory bound with ``MPOL_BIND`` left its nodes
(``bound_off_node_mb``), with what the kernel's release and cgroup
hierarchy say of it
(:func:`~nova_pmem_filters.core.rules.tiering.bound_demotion`).
"""

import math

from nova_pmem_filters.core.plans import flavorfix
from nova_pmem_filters.core.plans import hotratio
from nova_pmem_filters.core.plans import rebalance
from nova_pmem_filters.core.rules import charging
from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters.core.rules import tiering
from nova_pmem_filters.doctor.checks import kernel_tiering
from nova_pmem_filters.doctor import cloud
from nova_pmem_filters.doctor import findings

# A NUMA-bound instance whose memory is more than this share off its home
# nodes (or on CPU-less nodes) is reported.
MOSTLY = 0.5
# Memory bound with MPOL_BIND found off its nodes from this many MB on is
# reported (bound-memory-demoted): below, the rounding of the figure.
BOUND_OFF_NODE_MIN_MB = 1.0
# vmstat counts base pages: 4 KiB on x86-64 (a huge page promoted counts
# as its base pages).
PAGE_KB = 4
# What lagging() finds, as the doctor's codes.
_LAGGING_CODES = {'promotion-lags': 'tiering-promotion-lags',
                  'direct-demotion': 'tiering-direct-demotion'}
RATE_LIMIT_SYSCTL = 'kernel.numa_balancing_promote_rate_limit_MBps'
RATE_LIMIT_CONF = '/etc/sysctl.d/61-numa-promote-rate-limit.conf'
_MIGRATE = 'openstack server migrate --live-migration'
# The compute API microversion of a live migration to a named host that
# still goes through the scheduler's filters (2.30: without "force"); the
# client refuses --host with --live-migration below it.
LIVE_MIGRATE_HOST_MICROVERSION = '2.30'


def check(snap, view):
    if snap.observations is None:
        return []
    return (_hot_ratios(snap, view) + _working_sets(snap, view)
            + _numa(snap) + _tiering(snap))


def _hot_ratios(snap, view):
    found = []
    measured = hotratio.by_flavor(snap.observations)
    for flavor in snap.flavors:
        ratios = measured.get(flavor.name)
        request, _error = view.requests[flavor.name]
        # A flavor that cannot land on a tiered host uses no DRAM cache;
        # an invalid one is reported by the flavor checks.
        if (ratios is None or request is None
                or not kinds.TIERED & request.modes
                or not hotratio.under_declared(request.hot_ratio,
                                               ratios.ratios)):
            continue
        value = ratios.recommended
        # Placement accounting follows the new ratio, or
        # near-memory-mismatch follows the fix.
        fix = flavorfix.hot_ratio(flavor.name, flavor.extra_specs, value,
                                  memory_mb=flavor.ram_mb)
        declared = ('declares %s=%s' % (
            extra_specs.HOT_RATIO_KEY,
            extra_specs.format_hot_ratio(request.hot_ratio))
            if extra_specs.HOT_RATIO_KEY in flavor.extra_specs else
            'takes the default hot ratio %s ([pmem] default_hot_ratio)'
            % extra_specs.format_hot_ratio(request.hot_ratio))
        found.append(findings.Finding(
            findings.WARNING, 'hot-ratio-under-declared',
            'flavor %s' % flavor.name,
            '%s, but its instances were observed hotter: p95 %.3g, max %.3g '
            'of %d instances in %d windows; PmemCacheFilter counts too '
            'little of their RAM as hot and fills Memory-Mode hosts past '
            'their DRAM cache (recommended: %s)'
            % (declared, hotratio.quantile(
                ratios.ratios, hotratio.RECOMMEND_QUANTILE),
               max(ratios.ratios), ratios.instances, ratios.windows,
               extra_specs.format_hot_ratio(value)),
            fix.command()))
    return found


def _instances(insts):
    """The instances of a window by working set, largest first."""
    insts = sorted((i for i in insts if i.working_set_mb),
                   key=lambda i: -i.working_set_mb)
    return findings.names('%s (%s, %d MB)' % (
        i.name or i.uuid, i.flavor or 'flavor unknown',
        round(i.working_set_mb)) for i in insts)


def _over_near_memory(docs, act_above):
    """{(host, cell or None): [(excess MB, working set, near, doc)]}.

    Over: the working set exceeds ``act_above`` x the near memory, the
    threshold the rebalancing plan acts above.
    """
    over = {}
    for doc in docs:
        parts = [(None, doc.host)] + [(c.id, c) for c in doc.host.cells]
        for cell, part in parts:
            ws, near = part.working_set_mb, part.near_memory_mb
            if ws is not None and near is not None and ws > act_above * near:
                over.setdefault((doc.hostname, cell), []).append(
                    (ws - near, ws, near, doc))
    return over


def _working_sets(snap, view):
    docs = snap.observations
    act_above = snap.thresholds.act_above
    windows = {}
    for doc in docs:
        windows[doc.hostname] = windows.get(doc.hostname, 0) + 1
    over = _over_near_memory(docs, act_above)
    plan = _plan(snap, view) if over else None
    nodes = {n: c.host for c in snap.computes for n in c.nodes}
    found = []
    # host -> the object of its first finding, which carries its moves.
    first = {}
    for (hostname, cell), seen in sorted(
            over.items(), key=lambda kv: (kv[0][0], kv[0][1] is not None,
                                          str(kv[0][1]))):
        _excess, ws, near, doc = max(seen, key=lambda s: s[0])
        insts = doc.instances
        where = 'host %s' % hostname
        if cell is not None:
            where += ' cell %s' % cell
            insts = [i for i in insts if i.cell == cell]
        host = nodes.get(hostname, hostname)
        if host in first:
            # Each move is printed once, to be run once.
            fix = ('# the rebalancing plan of host %s is the fix of %s'
                   % (host, first[host]))
        else:
            first[host] = where
            fix = plan_fix(plan, host, snap.thresholds)
        found.append(findings.Finding(
            findings.WARNING, 'working-set-over-near-memory', where,
            'measured working set %d MB exceeds %sits %d MB of near memory '
            '(DRAM cache) in %d of %d windows (worst: %s): hot pages are '
            'served from the slow tier. Instances: %s'
            % (round(ws), '' if act_above == 1.0 else '%g x ' % act_above,
               round(near), len(seen), windows[hostname], doc.started,
               _instances(insts) or 'none measured'), fix))
    return found


def _plan(snap, view):
    """The core's rebalancing plan of the cloud, or its error (one line)."""
    thresholds = snap.thresholds
    try:
        return rebalance.plan(
            cloud.rebalance_hosts(snap, view),
            act_above=thresholds.act_above, aim_below=thresholds.aim_below,
            max_moves=thresholds.max_moves,
            cache_overcommit_ratio=view.config.cache_overcommit_ratio,
            defaults=view.config.defaults)
    except rebalance.RebalanceError as exc:
        return ' '.join(str(exc).split())


def migrate_line(move):
    """The ``openstack`` line of one move of the plan, as printed.

    A live migration to a named host at 2.30, without ``--force``: Nova's
    scheduler checks the host with its filters (PmemModeFilter and
    PmemCacheFilter among them) and Placement claims its resources; a host
    they refuse fails the migration and the server stays where it is.
    """
    return findings.command(
        'openstack', '--os-compute-api-version',
        LIVE_MIGRATE_HOST_MICROVERSION, 'server', 'migrate',
        '--live-migration', '--host', move.destination, move.instance)


def _usage(plan, host, after=False):
    for usage in plan.after if after else plan.before:
        if usage.host == host:
            return usage
    return None


def plan_fix(plan, host, thresholds):
    """The fix of ``host``'s finding: its part of the plan, as printed.

    A comment that says what the moves do, then one ``openstack`` line per
    move off the host, in the plan's order; or one comment with the
    plan's reason where it leaves the host over.
    """
    if isinstance(plan, str):
        return '# no rebalancing plan: %s' % plan
    moves = [m for m in plan.moves if m.source == host]
    unfixed = [u for u in plan.unfixed if u.host == host]
    before = _usage(plan, host)
    if before is None:
        return ('# host %s is not a compute host of the cloud: no plan '
                'moves anything off it' % host)
    lines = []
    if moves:
        after = _usage(plan, host, after=True)
        lines.append(
            '# the rebalancing plan moves %d instance%s (%d MB of RAM) off '
            'host %s: its working set goes from %d to %d MB, at most %g x '
            'its %d MB of near memory%s' % (
                len(moves), '' if len(moves) == 1 else 's',
                round(sum(m.memory_mb for m in moves)), host,
                round(before.working_set_mb), round(after.working_set_mb),
                thresholds.aim_below, round(before.near_memory_mb),
                '' if plan.optimal else
                ' (the best plan the search found, not proven the least)'))
        lines.extend(migrate_line(m) for m in moves)
    lines.extend('# nothing moves off host %s (%s): %s'
                 % (u.host, u.reason, u.detail) for u in unfixed)
    if not lines and before.near_memory_mb is None:
        lines.append('# host %s is not tiered by its aggregates (%s=%s): '
                     'the plan moves nothing off it'
                     % (host, profile.MODE_KEY, before.mode))
    elif not lines:
        lines.append(
            '# the rebalancing plan does not find host %s over: %d MB '
            'measured in its latest window, %g x its %d MB of near memory '
            'is %d MB: nothing to move' % (
                host, round(before.working_set_mb), thresholds.act_above,
                round(before.near_memory_mb),
                round(thresholds.act_above * before.near_memory_mb)))
    return '\n'.join(lines)


def _home_nodes(inst, server):
    """The host NUMA nodes an instance is bound to, or None."""
    if server is not None and server.numa_nodes:
        return {int(n) for n in server.numa_nodes}
    if inst.cell is not None:
        return {inst.cell}
    return None


def _misplaced(doc, inst, servers, flavors):
    """(code, text) of a NUMA-bound instance whose memory is elsewhere."""
    total = sum(inst.numa_mb.values())
    if total <= 0:
        return None
    server = servers.get(inst.uuid)
    specs = (server.extra_specs if server is not None else
             getattr(flavors.get(inst.flavor), 'extra_specs', {}))
    home = _home_nodes(inst, server)
    if extra_specs.NUMA_NODES_KEY not in specs and home is None:
        return None
    cpuless = doc.cpuless_nodes
    slow = sum(mb for node, mb in inst.numa_mb.items() if node in cpuless)
    away = (None if home is None else
            sum(mb for node, mb in inst.numa_mb.items() if node not in home))
    name = inst.name or inst.uuid
    if slow > MOSTLY * total:
        return 'numa-memory-slow-tier', '%s (%d%% on CPU-less node %s)' % (
            name, round(100 * slow / total), ', '.join(
                str(n) for n in sorted(inst.numa_mb) if n in cpuless))
    if away is not None and away > MOSTLY * total:
        return 'numa-memory-remote', '%s (%d%% off node %s)' % (
            name, round(100 * away / total),
            ', '.join(str(n) for n in sorted(home)))
    return None


_NUMA_TEXTS = {
    'numa-memory-slow-tier': (
        'NUMA-bound instances whose memory sits mostly on CPU-less '
        '(slow-tier) nodes, so they run at far-memory latency: %s',
        'keep latency-bound flavors off tiered hosts (pmem:modes '
        'without the tiered mode, pmem:priority=high) and check the '
        'host\'s demotion settings; migrate them (openstack server '
        'migrate)'),
    'numa-memory-remote': (
        'NUMA-bound instances whose memory sits mostly on another node '
        'than the one they are bound to, so most accesses cross '
        'sockets: %s',
        'migrate them (openstack server migrate) so Nova binds them '
        'afresh, and check that nothing (numad, a manual pin) moves '
        'their memory'),
}


def _numa(snap):
    servers = {s.id: s for s in snap.servers}
    flavors = {f.name: f for f in snap.flavors}
    # code -> host -> {instance text}
    bad = {}
    for doc in snap.observations:
        for inst in doc.instances:
            found = _misplaced(doc, inst, servers, flavors)
            if found is not None:
                code, text = found
                bad.setdefault(code, {}).setdefault(
                    doc.hostname, set()).add(text)
    found = []
    for code, by_host in sorted(bad.items()):
        problem, fix = _NUMA_TEXTS[code]
        for host, insts in sorted(by_host.items()):
            found.append(findings.Finding(
                findings.WARNING, code, 'host %s' % host,
                problem % findings.names(sorted(insts)), fix))
    return found


# --- the kernel's tiering -------------------------------------------------

def _latest(docs):
    """{hostname: its latest document}: the state the host is in now."""
    latest = {}
    for doc in docs:
        seen = latest.get(doc.hostname)
        if seen is None or doc.started_time >= seen.started_time:
            latest[doc.hostname] = doc
    return latest


def _tiering(snap):
    docs = snap.observations
    latest = _latest(docs)
    found = []
    for hostname in sorted(latest):
        doc = latest[hostname]
        kernel = doc.tiering
        if kernel is not None and kernel.far_nodes \
                and kernel.state == tiering.OFF:
            found.append(_tiering_off(doc, kernel))
    return (found + _lagging(docs) + _hot_on_far(snap, latest)
            + _bound_demoted(snap, latest))


def _far(kernel):
    nodes = kernel.far_nodes
    return '%s %s' % ('node' if len(nodes) == 1 else 'nodes',
                      ', '.join(str(n) for n in nodes))


def turn_on(hostname, verdict):
    """The lines of a fix that turns the kernel's tiering on, as printed.

    The core's shell lines (now, and at every boot) run on the host as
    root; what no setting changes is a comment.
    """
    lines = [line for p in verdict.problems for line in p.fix + p.persist]
    text = []
    if lines:
        text.append('# on %s, as root: now, and at every boot' % hostname)
        text.append(kernel_tiering.on_host(hostname, lines))
    text.extend('# no setting turns it on: %s' % p.what
                for p in verdict.problems if not p.fix)
    text.append('# then describe the host again (nova-pmem-discover --cxl) '
                'so its aggregate says %s=on' % profile.KERNEL_TIERING_KEY)
    return '\n'.join(text)


def _tiering_off(doc, kernel):
    verdict = kernel.verdict(sorted(doc.cpu_nodes))
    return findings.Finding(
        findings.WARNING, 'observed-tiering-off', 'host %s' % doc.hostname,
        'observed %s: the kernel (%s) %s for CXL %s: %s; so every guest\'s '
        'whole RAM counts against the DRAM (pmem_kernel_tiering=off) and '
        'the CXL memory buys no VM' % (
            doc.started, 'Linux %s' % kernel.kernel if kernel.kernel
            else 'release unknown', verdict.summary, _far(kernel),
            '; '.join(p.what for p in verdict.problems)),
        turn_on(doc.hostname, verdict))


def _lagging(docs):
    """tiering-promotion-lags, tiering-direct-demotion: per host."""
    seen = {}
    windows = {}
    for doc in docs:
        kernel = doc.tiering
        if kernel is None or not kernel.rates:
            continue
        windows[doc.hostname] = windows.get(doc.hostname, 0) + 1
        for code, line in kernel.lagging():
            seen.setdefault((doc.hostname, _LAGGING_CODES[code]),
                            []).append((doc, line))
    found = []
    for (hostname, code), lagged in sorted(seen.items()):
        if code == 'tiering-promotion-lags':
            doc, line = max(lagged, key=lambda s: _candidates(s[0]))
            fix = _raise_rate_limit(doc)
        else:
            doc, line = max(lagged, key=lambda s: s[0].tiering.rates.get(
                tiering.DEMOTE_DIRECT, 0.0))
            fix = ('# the DRAM nodes of %s have no free memory: move '
                   'instances off it (%s SERVER), and check its flavors\' '
                   'pmem:hot_ratio (hot-ratio-under-declared)'
                   % (hostname, _MIGRATE))
        found.append(findings.Finding(
            findings.WARNING, code, 'host %s' % hostname,
            'in %d of %d windows (worst: %s): %s'
            % (len(lagged), windows[hostname], doc.started, line), fix))
    return found


def _candidates(doc):
    """Promotion candidates per second of the busiest DRAM node.

    The kernel's rate limit holds each node promoted to; a kernel without
    per-node counters gives the host's, a bound from above.
    """
    kernel = doc.tiering
    per_node = [rates.get(tiering.PROMOTE_CANDIDATE)
                for node, rates in kernel.node_rates.items()
                if node in doc.cpu_nodes and rates]
    per_node = [r for r in per_node if r is not None]
    if per_node:
        return max(per_node)
    return kernel.rates.get(tiering.PROMOTE_CANDIDATE, 0.0)


def _raise_rate_limit(doc):
    """The fix of promotion-lags: the rate limit the candidates need."""
    hostname = doc.hostname
    limit = doc.tiering.promotion_rate_limit_mbps
    candidates = _candidates(doc)
    mbps = candidates * PAGE_KB / 1024.0
    wanted = max(1, int(math.ceil(mbps)))
    if limit is None or wanted <= limit:
        return ('# the promotion rate limit (%s) does not hold them back '
                '(candidates: %.0f pages/s = %.1f MB/s): the DRAM nodes of '
                '%s have no free memory to promote into; move instances '
                'off it (%s SERVER)' % (
                    '%d MB/s' % limit if limit is not None
                    else 'none on this kernel', candidates, mbps, hostname,
                    _MIGRATE))
    return '\n'.join([
        '# %d MB/s: the promotion candidates of the busiest DRAM node in '
        'the worst window, %.0f pages/s of %d KiB = %.1f MB/s, rounded up, '
        'so the limit (now %d MB/s) no longer holds them back; promotion '
        'costs copy bandwidth: raise it no further than the doctor asks'
        % (wanted, candidates, PAGE_KB, mbps, limit),
        '# on %s, as root: now, and at every boot' % hostname,
        kernel_tiering.on_host(hostname, [
            'sysctl -w %s=%d' % (RATE_LIMIT_SYSCTL, wanted),
            "echo '%s = %d' > %s" % (RATE_LIMIT_SYSCTL, wanted,
                                     RATE_LIMIT_CONF)])])


def _hot_on_far(snap, latest):
    """hot-pages-on-far-node: one finding per instance, latest window."""
    servers = {s.id: s for s in snap.servers}
    flavors = {f.name: f for f in snap.flavors}
    found = []
    for hostname in sorted(latest):
        doc = latest[hostname]
        for inst in doc.instances:
            if not inst.hot_on_far_mb:
                continue
            found.append(_hot_instance(doc, inst, servers.get(inst.uuid),
                                       flavors.get(inst.flavor)))
    return found


def _hot_instance(doc, inst, server, flavor):
    specs = (server.extra_specs if server is not None
             else getattr(flavor, 'extra_specs', None)) or {}
    bound = charging.binds_memory(specs)
    kernel = doc.tiering
    migrate = findings.command('openstack', 'server', 'migrate',
                               '--live-migration', inst.uuid)
    if bound:
        why = ('Nova binds its memory (%s): the kernel moves none of its '
               'pages' % bound)
        fix = ('# move it to a host whose DRAM cell holds its RAM:\n%s'
               % migrate)
    elif kernel is not None and kernel.state == tiering.OFF:
        why = 'the kernel does not tier (observed-tiering-off)'
        fix = turn_on(doc.hostname, kernel.verdict(sorted(doc.cpu_nodes)))
    elif kernel is not None and any(
            code == 'promotion-lags' for code, _line in kernel.lagging()):
        why = 'promotion lags (tiering-promotion-lags)'
        fix = _raise_rate_limit(doc)
    else:
        why = 'the DRAM nodes hold no more of it'
        fix = ('# move it to a host with free DRAM:\n%s' % migrate)
    return findings.Finding(
        findings.WARNING, 'hot-pages-on-far-node',
        'instance %s' % inst.uuid,
        '%s (%s, host %s, observed %s) touched %d MB in the window but '
        'holds %d MB on the DRAM nodes: at least %d MB of its hot pages '
        'sit on the far node (%d MB resident there), served at far-memory '
        'latency; %s' % (
            inst.name or inst.uuid, inst.flavor or 'flavor unknown',
            doc.hostname, doc.started, round(inst.working_set_mb or 0),
            round(inst.near_resident_mb or 0), round(inst.hot_on_far_mb),
            round(inst.far_resident_mb or 0), why), fix)


def _bound_demoted(snap, latest):
    """bound-memory-demoted: one finding per instance, latest window."""
    servers = {s.id: s for s in snap.servers}
    found = []
    for hostname in sorted(latest):
        doc = latest[hostname]
        for inst in doc.instances:
            if (inst.bound_off_node_mb or 0.0) < BOUND_OFF_NODE_MIN_MB:
                continue
            found.append(_bound_instance(doc, inst, servers.get(inst.uuid)))
    return found


def _why_bound_moved(doc):
    """What the observed kernel says of bound memory leaving its nodes."""
    kernel = doc.tiering
    if kernel is None:
        return ('the kernel\'s tiering was not recorded in this window: '
                'run nova-pmem-observe as root on the host')
    verdict = kernel.verdict(sorted(doc.cpu_nodes))
    if verdict.bound is not None:
        return 'reclaim demoted it: %s' % verdict.bound.what
    if verdict.demotes:
        return ('Linux %s keeps demoted memory in a cgroup v2 cpuset: a '
                'guest whose cgroup has no cpuset.mems, or shared memory '
                'charged to another cgroup, is still demoted'
                % (kernel.kernel or 'release unknown'))
    return ('the kernel does not demote here: something else moved it '
            '(migratepages, numad, or a memory policy set from outside)')


def _bound_instance(doc, inst, server):
    home = _home_nodes(inst, server)
    cpuless = doc.cpuless_nodes
    far = sorted(n for n in inst.numa_mb if n in cpuless and
                 inst.numa_mb[n] > 0)
    lines = []
    if home and far:
        lines.append('# move its pages back to its cell now (migratepages, '
                     'of the numactl package); reclaim may move them again')
        lines.append(kernel_tiering.on_host(doc.hostname, [
            "pid=$(pgrep -f -- '-uuid %s')" % inst.uuid,
            'migratepages "$pid" %s %s' % (
                ','.join(str(n) for n in far),
                ','.join(str(n) for n in sorted(home)))]))
    lines.append('# keep it so: a kernel that keeps bound memory in its '
                 'cpuset, or the flavor off kernel-tiered hosts (see '
                 'kernel-demotes-bound-memory in nova-pmem-doctor --fleet)')
    return findings.Finding(
        findings.WARNING, 'bound-memory-demoted', 'instance %s' % inst.uuid,
        '%s (%s, host %s, observed %s): %d MB of the memory Nova binds to '
        'its cell%s sits on other NUMA nodes%s, served at far-memory '
        'latency; %s' % (
            inst.name or inst.uuid, inst.flavor or 'flavor unknown',
            doc.hostname, doc.started, round(inst.bound_off_node_mb),
            ' (node %s)' % ', '.join(str(n) for n in sorted(home))
            if home else '',
            ' (CPU-less node %s)' % ', '.join(str(n) for n in far)
            if far else '', _why_bound_moved(doc)),
        '\n'.join(lines))
