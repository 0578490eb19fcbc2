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
:func:`nova_pmem_filters.core.observation.under_declared`), hosts whose
measured working set exceeds their near memory, and NUMA-bound instances
whose memory sits on another node or on a CPU-less (slow-tier) node.
"""

import math

from nova_pmem_filters.core import extra_specs
from nova_pmem_filters.core import kinds
from nova_pmem_filters.core import observation
from nova_pmem_filters.core import placement
from nova_pmem_filters.doctor import findings

# Nova's flavor extra spec for a guest NUMA topology: the instance is bound
# to host NUMA nodes.
NUMA_NODES_KEY = 'hw:numa_nodes'
# A NUMA-bound instance whose memory is more than this share off its home
# nodes (or on CPU-less nodes) is reported.
MOSTLY = 0.5


def check(snap, view):
    if snap.observations is None:
        return []
    return (_hot_ratios(snap, view) + _working_sets(snap.observations)
            + _numa(snap))


def _hot_ratios(snap, view):
    found = []
    measured = observation.by_flavor(snap.observations)
    for flavor in snap.flavors:
        ratios = measured.get(flavor.name)
        request, _error = view.requests[flavor.name]
        # A flavor that cannot land on a tiered host uses no DRAM cache;
        # an invalid one is reported by the flavor checks.
        if (ratios is None or request is None
                or not kinds.TIERED & request.modes
                or not observation.under_declared(request.hot_ratio,
                                                  ratios.ratios)):
            continue
        value = ratios.recommended
        props = ['%s=%g' % (extra_specs.HOT_RATIO_KEY, value)]
        commands = []
        if placement.requested_near_memory(flavor.extra_specs) is not None:
            # Placement accounting follows the new ratio, or
            # near-memory-mismatch follows the fix: in the request group
            # that asks for it, as an unnumbered key beside
            # resources1:... would be a second request, summed with the
            # first; other groups that ask for it too are dropped.
            keys = placement.near_memory_keys(flavor.extra_specs)
            if len(keys) > 1:
                commands.append(findings.command(
                    'openstack', 'flavor', 'unset',
                    *[w for k in keys[1:] for w in ('--property', k)],
                    flavor.name))
            props.append('%s=%d' % (
                keys[0], placement.near_memory_mb(flavor.ram_mb, value)))
        commands.append(findings.command(
            'openstack', 'flavor', 'set',
            *[w for p in props for w in ('--property', p)], flavor.name))
        declared = ('declares %s=%g' % (extra_specs.HOT_RATIO_KEY,
                                        request.hot_ratio)
                    if extra_specs.HOT_RATIO_KEY in flavor.extra_specs else
                    'takes the default hot ratio %g ([pmem] '
                    'default_hot_ratio)' % request.hot_ratio)
        found.append(findings.Finding(
            findings.WARNING, 'hot-ratio-under-declared',
            'flavor %s' % flavor.name,
            '%s, but its instances were observed hotter: p95 %.3g, max %.3g '
            'of %d instances in %d windows; PmemCacheFilter counts too '
            'little of their RAM as hot and fills Memory-Mode hosts past '
            'their DRAM cache (recommended: %g)'
            % (declared, observation.quantile(
                ratios.ratios, observation.RECOMMEND_QUANTILE),
               max(ratios.ratios), ratios.instances, ratios.windows, value),
            ' && '.join(commands)))
    return found


def _mb(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _instances(insts):
    """The instances of a window by working set, largest first."""
    insts = sorted((i for i in insts if _mb(i.get('working_set_mb'))),
                   key=lambda i: -i['working_set_mb'])
    return findings.names('%s (%s, %d MB)' % (
        i.get('name') or i['uuid'], i.get('flavor') or 'flavor unknown',
        round(i['working_set_mb'])) for i in insts)


def _working_sets(docs):
    # (host, cell or None) -> [(excess MB, working set, near, doc, cell)]
    over = {}
    windows = {}
    for doc in docs:
        host = doc.get('host')
        if not isinstance(host, dict):
            continue
        windows[doc['hostname']] = windows.get(doc['hostname'], 0) + 1
        parts = [(None, host)] + [
            (c.get('id'), c) for c in host.get('cells') or ()
            if isinstance(c, dict)]
        for cell, part in parts:
            ws = _mb(part.get('working_set_mb'))
            near = _mb(part.get('near_memory_mb'))
            if ws is not None and near is not None and ws > near:
                over.setdefault((doc['hostname'], cell), []).append(
                    (ws - near, ws, near, doc))
    found = []
    for (hostname, cell), seen in sorted(
            over.items(), key=lambda kv: (kv[0][0], kv[0][1] is not None,
                                          str(kv[0][1]))):
        _excess, ws, near, doc = max(seen, key=lambda s: s[0])
        insts = doc['instances']
        where = 'host %s' % hostname
        if cell is not None:
            where += ' cell %s' % cell
            insts = [i for i in insts if i.get('cell') == cell]
        found.append(findings.Finding(
            findings.WARNING, 'working-set-over-near-memory', where,
            'measured working set %d MB exceeds its %d MB of near memory '
            '(DRAM cache) in %d of %d windows (worst: %s): hot pages are '
            'served from the slow tier. Instances: %s'
            % (round(ws), round(near), len(seen), windows[hostname],
               doc['started'], _instances(insts) or 'none measured'),
            'declare the observed hot ratios of its flavors '
            '(hot-ratio-under-declared) so PmemCacheFilter stops admitting '
            'more, and move instances off it (openstack server migrate)'))
    return found


def _home_nodes(inst, server):
    """The host NUMA nodes an instance is bound to, as strings, or None."""
    if server is not None and server.numa_nodes:
        return {str(n) for n in server.numa_nodes}
    if inst.get('cell') is not None:
        return {str(inst['cell'])}
    return None


def _numa(snap):
    servers = {s.id: s for s in snap.servers}
    flavors = {f.name: f for f in snap.flavors}
    # code -> host -> [instance text]
    bad = {}
    for doc in snap.observations:
        cpuless = {str(n.get('id')) for n in doc.get('nodes') or ()
                   if isinstance(n, dict) and n.get('cpus') is False}
        for inst in doc['instances']:
            numa = {str(k): float(v) for k, v in
                    (inst.get('numa_mb') or {}).items()}
            total = sum(numa.values())
            if total <= 0:
                continue
            server = servers.get(inst['uuid'])
            specs = (server.extra_specs if server is not None else
                     getattr(flavors.get(inst.get('flavor')),
                             'extra_specs', {}))
            home = _home_nodes(inst, server)
            if NUMA_NODES_KEY not in specs and home is None:
                continue
            slow = sum(mb for node, mb in numa.items() if node in cpuless)
            away = (None if home is None else
                    sum(mb for node, mb in numa.items() if node not in home))
            name = inst.get('name') or inst['uuid']
            if slow > MOSTLY * total:
                bad.setdefault('numa-memory-slow-tier', {}).setdefault(
                    doc['hostname'], set()).add(
                    '%s (%d%% on CPU-less node %s)' % (
                        name, round(100 * slow / total), ', '.join(
                            sorted(n for n in numa if n in cpuless))))
            elif away is not None and away > MOSTLY * total:
                bad.setdefault('numa-memory-remote', {}).setdefault(
                    doc['hostname'], set()).add(
                    '%s (%d%% off node %s)' % (
                        name, round(100 * away / total),
                        ', '.join(sorted(home))))
    texts = {
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
    found = []
    for code, by_host in sorted(bad.items()):
        problem, fix = texts[code]
        for host, insts in sorted(by_host.items()):
            found.append(findings.Finding(
                findings.WARNING, code, 'host %s' % host,
                problem % findings.names(sorted(insts)), fix))
    return found
