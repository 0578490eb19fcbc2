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

from nova_pmem_filters.core import extra_specs
from nova_pmem_filters.core import flavorfix
from nova_pmem_filters.core import kinds
from nova_pmem_filters.core import observation
from nova_pmem_filters.doctor import findings

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
            % (declared, observation.quantile(
                ratios.ratios, observation.RECOMMEND_QUANTILE),
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


def _over_near_memory(docs):
    """{(host, cell or None): [(excess MB, working set, near, doc)]}."""
    over = {}
    for doc in docs:
        parts = [(None, doc.host)] + [(c.id, c) for c in doc.host.cells]
        for cell, part in parts:
            ws, near = part.working_set_mb, part.near_memory_mb
            if ws is not None and near is not None and ws > near:
                over.setdefault((doc.hostname, cell), []).append(
                    (ws - near, ws, near, doc))
    return over


def _working_sets(docs):
    windows = {}
    for doc in docs:
        windows[doc.hostname] = windows.get(doc.hostname, 0) + 1
    found = []
    for (hostname, cell), seen in sorted(
            _over_near_memory(docs).items(),
            key=lambda kv: (kv[0][0], kv[0][1] is not None,
                            str(kv[0][1]))):
        _excess, ws, near, doc = max(seen, key=lambda s: s[0])
        insts = doc.instances
        where = 'host %s' % hostname
        if cell is not None:
            where += ' cell %s' % cell
            insts = [i for i in insts if i.cell == cell]
        found.append(findings.Finding(
            findings.WARNING, 'working-set-over-near-memory', where,
            'measured working set %d MB exceeds its %d MB of near memory '
            '(DRAM cache) in %d of %d windows (worst: %s): hot pages are '
            'served from the slow tier. Instances: %s'
            % (round(ws), round(near), len(seen), windows[hostname],
               doc.started, _instances(insts) or 'none measured'),
            'declare the observed hot ratios of its flavors '
            '(hot-ratio-under-declared) so PmemCacheFilter stops admitting '
            'more, and move instances off it (openstack server migrate)'))
    return found


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
