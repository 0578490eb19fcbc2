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
"""Checks of the kernel's tiering below Nova on ``cxl_kmem`` hosts.

From the discovered host profiles (``--fleet``): a host whose kernel does
not both promote and demote, judged by the core
(:func:`nova_pmem_filters.core.rules.tiering.judge`) from the settings its
profile records; a CXL node in the memory tier of the DRAM; an aggregate
whose ``pmem_kernel_tiering`` says otherwise than discovery. From the
flavors: those whose memory Nova binds that may land on kernel-tiered
hosts, where they charge their whole RAM. And the hosts whose kernel's
reclaim may demote the memory of guests Nova binds (its release and the
cpuset's cgroup hierarchy, :func:`tiering.bound_demotion`), with the
flavors that may land there.

A fix that runs on a compute host is printed as the ``ssh HOST sudo sh``
of the lines the core gives (a here-document, so that the lines are
exactly the core's); alternatives are on lines of their own after a
comment, so each runs as printed.
"""

import shlex

from nova_pmem_filters.core.formats import hostfile
from nova_pmem_filters.core.plans import flavorfix
from nova_pmem_filters.core.rules import charging
from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters.core.rules import tiering
from nova_pmem_filters.doctor import findings

# The here-document's delimiter: no line of the core's is this.
_EOF = 'EOF'
# What shows the memory tiers on a host: a line per tier, with its nodes.
_SHOW_TIERS = 'grep -H . /%s/memory_tier*/nodelist' % (
    tiering.MEMORY_TIERING_DIR)
_SHOW_SETTINGS = 'grep -H . /%s /%s' % (tiering.NUMA_BALANCING_FILE,
                                        tiering.DEMOTION_FILE)


def check(snap, view):
    found = []
    computes = {c.host for c in snap.computes}
    for host in sorted(view.discovered):
        prof = view.discovered[host]
        if host not in computes or prof.mode not in kinds.KERNEL_TIERED:
            continue
        found.extend(host_findings(host, prof))
        found.extend(bound_memory_findings(host, prof, snap, view))
        found.extend(_aggregate_findings(host, prof, view))
    found.extend(_bound_flavors(snap, view))
    return found


def verdict_of(prof):
    """The core's verdict on a discovered host's recorded settings.

    None for a profile without a ``kernel_tiering`` object.
    """
    entry = prof.tiering_entry
    if entry is None:
        return None
    return tiering.judge(entry.settings(), prof.cell_ids or (),
                         _far_nodes(prof))


def _far_nodes(prof):
    return tuple(hostfile.given(prof.tiering_entry.far_nodes, ()))


def on_host(hostname, lines):
    """Shell lines run as root on ``hostname``: ``ssh HOST sudo sh -e``.

    A here-document with a quoted delimiter: the lines reach the host's
    shell as they are written, quotes and redirections included.
    """
    if _EOF in lines:
        raise ValueError('a line is the here-document delimiter %s' % _EOF)
    return '\n'.join(["%s <<'%s'" % (findings.command(
        'ssh', hostname, 'sudo', 'sh', '-e'), _EOF)]
        + list(lines) + [_EOF])


def _remote(hostname, command):
    """One command run on ``hostname``, quoted for the local shell once."""
    return '%s %s' % (findings.command('ssh', hostname),
                      shlex.quote(command))


def _rediscover(prof):
    """The command that rewrites the host's profile with its tiering."""
    argv = ['sudo', 'nova-pmem-discover', '--cxl']
    if prof.cell_cache_gb is not None:
        argv.append('--numa')
    new = prof.source + '.new'
    return '%s > %s && %s' % (
        findings.command('ssh', prof.hostname, *argv), shlex.quote(new),
        findings.command('mv', new, prof.source))


def turn_on(prof, verdict):
    """The lines that turn the host's tiering on, now and at boot.

    Comment lines, each a shell comment, say what no command sets (a
    kernel too old, the firmware's memory tiers) and how to check it.
    """
    problems = [p for p in verdict.problems if p.code != tiering.SAME_TIER]
    lines = [line for p in problems for line in p.fix + p.persist]
    text = []
    if lines:
        text.append('# on %s, as root: now, and at every boot'
                    % prof.hostname)
        text.append(on_host(prof.hostname, lines))
    newer = [p.what for p in problems if not p.fix]
    if newer:
        text.extend('# no setting turns it on: %s' % what for what in newer)
        text.append('# boot such a kernel, then check:')
        text.append(_remote(prof.hostname, _SHOW_SETTINGS))
    if len(problems) < len(verdict.problems):
        text.append('# %sthe firmware: see far-node-in-dram-tier'
                    % ('and ' if text else ''))
    text.append('# then describe the host again:')
    text.append(_rediscover(prof))
    return text


def host_findings(host, prof):
    """kernel-tiering-unknown, -off, -half-on and far-node-in-dram-tier."""
    obj = 'host %s' % host
    verdict = verdict_of(prof)
    if verdict is None:
        return [findings.Finding(
            findings.INFO, 'kernel-tiering-unknown', obj,
            'a cxl_kmem host whose profile (%s) does not record the '
            'kernel\'s tiering (discovered before this release): the '
            'doctor cannot tell whether the kernel promotes and demotes'
            % prof.source,
            '# describe the host again, with its tiering:\n'
            + _rediscover(prof))]
    if verdict.state == tiering.ON:
        return []
    found = []
    same = [p for p in verdict.problems if p.code == tiering.SAME_TIER]
    others = [p for p in verdict.problems if p.code != tiering.SAME_TIER]
    consequence = ('so it is pmem_kernel_tiering=off: every guest\'s whole '
                   'RAM counts against the DRAM and the CXL memory buys '
                   'no VM')
    if others or not same:
        code = ('kernel-tiering-half-on' if verdict.promotes
                or verdict.demotes else 'kernel-tiering-off')
        why = '; '.join(p.what for p in others) or (
            'its profile (%s) records no CPU-less NUMA node' % prof.source)
        found.append(findings.Finding(
            findings.WARNING, code, obj,
            'the kernel (%s) %s for CXL %s: %s; %s'
            % (_kernel(prof), verdict.summary, _nodes(prof), why,
               consequence),
            '\n'.join(turn_on(prof, verdict))))
    for p in same:
        found.append(findings.Finding(
            findings.WARNING, 'far-node-in-dram-tier', obj,
            '%s; %s' % (p.what, consequence),
            '# no command fixes it: enable HMAT in the firmware of %s (or '
            'boot a kernel that reads the CXL device\'s CDAT), then check '
            'that the CXL node left the DRAM\'s tier:\n%s\n%s'
            % (prof.hostname, _remote(prof.hostname, _SHOW_TIERS),
               _rediscover(prof))))
    return found


def _binding_flavors(snap, view, kind):
    """The names of the flavors Nova binds that ``kind`` hosts admit."""
    names = []
    for flavor in snap.flavors:
        request, _error = view.requests[flavor.name]
        if request is not None and request.allows(kind) \
                and charging.binds_memory(flavor.extra_specs) is not None:
            names.append(flavor.name)
    return sorted(names)


def _newer_kernel(prof):
    """What to boot so that demotion keeps bound memory in its cpuset."""
    found = tiering.release(hostfile.given(prof.tiering_entry.kernel))
    kept = '%d.%d' % tiering.CPUSET_KEPT_SINCE
    cgroup = verdict_cgroup(prof)
    lines = []
    if found is None or found < tiering.CPUSET_KEPT_SINCE:
        lines.append('# boot Linux %s or later (or a 6.19.y that carries '
                     '1aceed565ff1)%s' % (kept, '' if cgroup ==
                                          tiering.CGROUP_V2 else
                                          ', with the cpuset controller on '
                                          'cgroup v2'))
    if cgroup == tiering.CGROUP_V1:
        lines.append('# put the cpuset controller on cgroup v2: boot with '
                     'systemd.unified_cgroup_hierarchy=1')
    elif cgroup is None and found is not None \
            and found >= tiering.CPUSET_KEPT_SINCE:
        lines.append('# the profile does not record /%s (discovered '
                     'before it was read, or no cgroup file system is '
                     'mounted): describe the host again'
                     % tiering.MOUNTS_FILE)
    return lines


def verdict_cgroup(prof):
    """The cpuset's hierarchy the profile records; None if unknown."""
    return hostfile.given(prof.tiering_entry.cgroup)


def bound_memory_findings(host, prof, snap, view):
    """kernel-demotes-bound-memory: what reclaim does with bound guests.

    A warning where a flavor Nova binds may land on the host, else
    information: the host's kernel is named either way.
    """
    verdict = verdict_of(prof)
    if verdict is None or not verdict.demotes_bound_memory:
        return []
    flavors = _binding_flavors(snap, view, prof.mode)
    fix = ['# no setting keeps demotion and keeps bound guests in their '
           'cells (demotion_enabled false turns tiering off: '
           'pmem_kernel_tiering=off)']
    fix.extend(_newer_kernel(prof))
    fix.append('# then describe the host again:')
    fix.append(_rediscover(prof))
    if flavors:
        fix.append('# or keep those flavors off kernel-tiered hosts '
                   '(bound-flavor-whole-ram prints the command)')
    fix.append('# see which bound guests hold pages on the CXL nodes: '
               'nova-pmem-observe on %s, then nova-pmem-doctor '
               '--observations (bound-memory-demoted)' % prof.hostname)
    return [findings.Finding(
        findings.WARNING if flavors else findings.INFO,
        'kernel-demotes-bound-memory', 'host %s' % host,
        'reclaim on %s may demote the cold pages of guests Nova binds to '
        'CXL %s: %s; %s' % (
            host, _nodes(prof), verdict.bound.what,
            'flavors Nova binds may land there (%s): their whole RAM is '
            'charged against the DRAM, but part of it may be served from '
            'CXL memory' % findings.names(flavors) if flavors else
            'no flavor Nova binds lands there today'),
        '\n'.join(fix))]


def _kernel(prof):
    kernel = hostfile.given(prof.tiering_entry.kernel)
    return 'Linux %s' % kernel if kernel else 'release unknown'


def _nodes(prof):
    nodes = _far_nodes(prof)
    return '%s %s' % ('node' if len(nodes) == 1 else 'nodes',
                      ', '.join(str(n) for n in nodes) or 'none')


def _aggregates_to_set(host, view):
    """The host's aggregates that carry (or would carry) the tiering key.

    Those that set it; else those that set ``pmem_mode``: a value set on
    another aggregate would disagree with them.
    """
    aggs = view.aggregates_of.get(host, ())
    return ([a for a in aggs if profile.KERNEL_TIERING_KEY in a.metadata]
            or [a for a in aggs if profile.MODE_KEY in a.metadata])


def _set_line(aggs, state):
    return ' && '.join(findings.command(
        'openstack', 'aggregate', 'set', '--property',
        '%s=%s' % (profile.KERNEL_TIERING_KEY, state), a.name)
        for a in aggs)


def _aggregate_findings(host, prof, view):
    """kernel-tiering-mismatch: the aggregates against discovery."""
    label = view.profiles[host]
    found_state = prof.kernel_tiering
    if (not label.known or label.mode not in kinds.KERNEL_TIERED
            or found_state is None):
        return []
    said = label.kernel_tiering or tiering.DEFAULT_STATE
    if said == found_state:
        return []
    obj = 'host %s' % host
    aggs = _aggregates_to_set(host, view)
    others = sorted({h for a in aggs for h in a.hosts} - {host})
    told = ('its aggregates say %s=%s' % (profile.KERNEL_TIERING_KEY, said)
            if label.kernel_tiering else 'its aggregates do not set %s, '
            'which means on' % profile.KERNEL_TIERING_KEY)
    if found_state == tiering.OFF:
        verdict = verdict_of(prof)
        problem = (
            '%s, but discovery (%s) found that the kernel %s: '
            'PmemCacheFilter charges only hot RAM while the kernel leaves '
            'pages where first touch put them, so hot pages land on the '
            'CXL node once the DRAM is full' % (told, prof.source,
                                                verdict.summary))
        fix = ['# count every guest\'s whole RAM, as the kernel leaves it%s:'
               % (' (on %s too)' % findings.names(others) if others else '')]
        fix.append(_set_line(aggs, tiering.OFF) if aggs else
                   '# (no aggregate sets pmem_mode: put the host in one '
                   'with nova-pmem-discover --aggregate)')
        fix.append('# or turn tiering on:')
        fix.extend(turn_on(prof, verdict))
        return [findings.Finding(findings.ERROR, 'kernel-tiering-mismatch',
                                 obj, problem, '\n'.join(fix))]
    unsure = sorted(h for h in others
                    if view.discovered.get(h) is None
                    or view.discovered[h].kernel_tiering != tiering.ON)
    if unsure or not aggs:
        fix = ('# %s: move %s to a cxl_kmem aggregate with %s=on '
               '(nova-pmem-discover --aggregate prints its metadata)'
               % ('its aggregate also holds %s, whose tiering is off or not '
                  'discovered' % findings.names(unsure) if unsure
                  else 'no aggregate sets pmem_mode', host,
                  profile.KERNEL_TIERING_KEY))
    else:
        fix = _set_line(aggs, tiering.ON)
    return [findings.Finding(
        findings.WARNING, 'kernel-tiering-mismatch', obj,
        '%s, but discovery (%s) found that the kernel promotes and demotes: '
        'every guest is charged its whole RAM where its hot RAM would do, '
        'so the CXL memory buys no VM' % (told, prof.source), fix)]


def _hot_ratio_text(flavor, request):
    if extra_specs.HOT_RATIO_KEY in flavor.extra_specs:
        return '%s %s' % (extra_specs.HOT_RATIO_KEY,
                          extra_specs.format_hot_ratio(request.hot_ratio))
    return 'default hot ratio %s' % extra_specs.format_hot_ratio(
        request.hot_ratio)


def _bound_flavors(snap, view):
    """bound-flavor-whole-ram: flavors Nova binds, on kernel-tiered hosts."""
    found = []
    for kind in sorted(kinds.KERNEL_TIERED, key=kinds.order):
        hosts = sorted(h for h, p in view.profiles.items()
                       if p.mode == kind)
        if hosts:
            found.extend(_bound_on(snap, view, kind, hosts))
    return found


def _bound_on(snap, view, kind, hosts):
    """bound-flavor-whole-ram on the ``hosts`` of one kernel-tiered kind."""
    found = []
    for flavor in snap.flavors:
        request, _error = view.requests[flavor.name]
        why = charging.binds_memory(flavor.extra_specs)
        if (request is None or why is None
                or not request.allows(kind)):
            continue
        hot = request.hot_mb(flavor.ram_mb)
        if hot >= flavor.ram_mb:
            continue
        change, lost = flavorfix.modes_without(flavor.name, request, kind)
        fix = []
        if change is not None:
            fix.append('# keep it off kernel-tiered hosts%s:' % (
                ' (and off %s hosts: no pmem:modes value admits them '
                'without %s)' % (', '.join(lost), kind) if lost else ''))
            fix.append(change.command())
        fix.append('# %saccept the cost: PmemCacheFilter and the planner '
                   'already charge its whole RAM there'
                   % ('or ' if change is not None else ''))
        found.append(findings.Finding(
            findings.WARNING, 'bound-flavor-whole-ram',
            'flavor %s' % flavor.name,
            '%s (%s, %d MB, %s) charges %d MB of DRAM on %s hosts (%s), '
            'not %d MB: Nova binds its memory strictly to the DRAM cells, '
            'where all of it is allocated and the kernel never promotes it'
            % (flavor.name, why, flavor.ram_mb,
               _hot_ratio_text(flavor, request), flavor.ram_mb,
               kind, findings.names(hosts), round(hot)),
            '\n'.join(fix)))
    return found
