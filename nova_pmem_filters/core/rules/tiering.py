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
"""What the kernel does below Nova on hosts whose tiering it does.

On a ``cxl_kmem`` host the CXL memory is a NUMA node without CPUs and the
Linux kernel, not the hardware, decides where a page lives: NUMA balancing
in memory-tiering mode promotes hot pages to the DRAM nodes
(``/proc/sys/kernel/numa_balancing`` bit 2, Linux 5.18), reclaim demotes
cold ones to a lower memory tier (``/sys/kernel/mm/numa/demotion_enabled``,
5.15; the tiers in ``/sys/devices/virtual/memory_tiering``, 6.1). See the
kernel's ``Documentation/admin-guide/sysctl/kernel.rst`` (numa_balancing)
and ``Documentation/ABI/testing/sysfs-kernel-mm-numa``.

This module holds the rules every tool applies to that:

* the files' grammar (:func:`parse_numa_balancing`, :func:`parse_bool`,
  :func:`parse_nodelist`, :func:`parse_vmstat`) and what they say together
  (:func:`judge`: does the kernel promote, does it demote, and what to set
  where it does not);
* what an instance costs in near memory on such a host
  (:func:`instance_ratio`, :func:`charged`): a guest whose memory Nova
  binds strictly (``<numatune mode="strict">``, written for every guest
  with a NUMA topology) can be neither promoted nor demoted, so all its RAM
  sits in the DRAM node it is bound to; on a host whose kernel does not
  both promote and demote (``pmem_kernel_tiering=off``) no page first
  touched on the CXL node ever comes back, so every guest's whole RAM must
  fit the DRAM for its hot part to be served from it;
* which flavors Nova binds (:func:`binds_memory`);
* whether tiering keeps up, from the kernel's counters (:func:`rates`,
  :func:`lagging`);
* whether reclaim's demotion keeps the memory of a guest Nova binds in the
  nodes it is bound to (:func:`bound_demotion`): it depends on the kernel
  release and the cgroup hierarchy of the cpuset controller, and on a
  host where it does not, bound guests are still charged their whole RAM
  (admission stays safe) but their cold pages may sit on the far nodes.

This module imports nothing from Nova.
"""

import dataclasses
import re

from nova_pmem_filters.core.rules import kinds


# The aggregate value of a kernel-tiered host (profile.KERNEL_TIERING_KEY).
ON = 'on'


OFF = 'off'


STATES = (ON, OFF)


# A host of a kernel-tiered kind whose aggregates do not say: the kernel
# is taken to tier, as before the key existed.
DEFAULT_STATE = ON


# numa_balancing bits (include/linux/sched/sysctl.h, Linux 5.18 and
# later; before, the sysctl took 0 or 1).
NUMA_BALANCING_NORMAL = 1


NUMA_BALANCING_MEMORY_TIERING = 2


# The bits the kernel defines.
NUMA_BALANCING_BITS = NUMA_BALANCING_NORMAL | NUMA_BALANCING_MEMORY_TIERING


# What the sysctl accepts, and so can hold and print: 0 to 4 (its
# ctl_table's extra2 is SYSCTL_FOUR since 5.18, kernel/sched/core.c since
# 6.2). 4 sets no bit the kernel defines: neither balancing nor tiering.
NUMA_BALANCING_MAX = 4


# What a value the kernel would not print is told.
NUMA_BALANCING_ALLOWED = (
    '0 to 4: 0 off, 1 NUMA balancing, 2 memory tiering (promotion), 3 '
    'both, 4 neither (a value the sysctl accepts but defines no bit of)')


# The files, relative to the root of the host's file system.
NUMA_BALANCING_FILE = 'proc/sys/kernel/numa_balancing'


# The kernel's name (kernel/sched/fair.c), "promote", not "promotion".
RATE_LIMIT_FILE = 'proc/sys/kernel/numa_balancing_promote_rate_limit_MBps'


DEMOTION_FILE = 'sys/kernel/mm/numa/demotion_enabled'


MEMORY_TIERING_DIR = 'sys/devices/virtual/memory_tiering'


OSRELEASE_FILE = 'proc/sys/kernel/osrelease'


# The mounts, where the cpuset controller's hierarchy shows (cgroup v1 or
# the unified v2).
MOUNTS_FILE = 'proc/mounts'


VMSTAT_FILE = 'proc/vmstat'


NODE_VMSTAT_FILE = 'sys/devices/system/node/node%d/vmstat'


# The tiering counters of /proc/vmstat (and of a node's vmstat).
PROMOTE_SUCCESS = 'pgpromote_success'


PROMOTE_CANDIDATE = 'pgpromote_candidate'


DEMOTE_KSWAPD = 'pgdemote_kswapd'


DEMOTE_DIRECT = 'pgdemote_direct'


DEMOTE_KHUGEPAGED = 'pgdemote_khugepaged'


DEMOTE_PROACTIVE = 'pgdemote_proactive'


HINT_FAULTS = 'numa_hint_faults'


COUNTERS = (PROMOTE_SUCCESS, PROMOTE_CANDIDATE, DEMOTE_KSWAPD,
            DEMOTE_DIRECT, DEMOTE_KHUGEPAGED, DEMOTE_PROACTIVE, HINT_FAULTS)


# The counters that only go to the far tier, and back.
DEMOTIONS = (DEMOTE_KSWAPD, DEMOTE_DIRECT, DEMOTE_KHUGEPAGED,
             DEMOTE_PROACTIVE)


# Why a kernel does not tier (Verdict.problems), each with its fix.
NO_BALANCING = 'numa-balancing-missing'


BALANCING_OFF = 'numa-balancing-not-tiering'


NO_DEMOTION = 'demotion-missing'


DEMOTION_OFF = 'demotion-disabled'


SAME_TIER = 'far-node-in-dram-tier'


# What reclaim's demotion does with memory Nova binds (Verdict.bound):
# the guest's cold pages may leave the nodes it is bound to.
BOUND_DEMOTION = 'demotes-bound-memory'


# The hierarchy of the cpuset controller (State.cgroup): libvirt sets the
# cpuset.mems of a strictly bound guest's cgroups there.
CGROUP_V1 = 'v1'


CGROUP_V2 = 'v2'


CGROUPS = (CGROUP_V1, CGROUP_V2)


# The releases of demotion's checks (doc/source/kernel-tiering.rst, "When
# reclaim demotes bound memory"). Before 6.16 demotion ignores cpuset and
# mempolicy ("Demotion ignores all cpuset and mempolicy settings",
# mm/vmscan.c, 26aa2d199d6f, 5.15); 6.16 checks a cgroup v2 cpuset for
# the next demotion node only (7d709f49babc); 7.0 checks every target
# (1aceed565ff1, backported to 6.19.y). No release honours MPOL_BIND, and
# cgroup v1's cpuset is never checked.
CPUSET_NEXT_NODE_SINCE = (6, 16)


CPUSET_KEPT_SINCE = (7, 0)


SYSCTL_CONF = '/etc/sysctl.d/60-memory-tiering.conf'


TMPFILES_CONF = '/etc/tmpfiles.d/memory-tiering.conf'


@dataclasses.dataclass(frozen=True)
class State:
    """The kernel's tiering settings, as read (None: the file is absent).

    ``tiers`` is ``((tier id, (node, ...)), ...)`` sorted by tier, None on
    a kernel without ``memory_tiering`` (before 6.1). ``cgroup`` is the
    hierarchy of the cpuset controller (:data:`CGROUPS`), None when not
    read or when no cpuset controller is mounted.
    """

    kernel: str = None
    numa_balancing: int = None
    demotion_enabled: bool = None
    promotion_rate_limit_mbps: int = None
    tiers: tuple = None
    cgroup: str = None

    def tier_of(self, node):
        """The tier of a NUMA node; None when unknown."""
        for tier, nodes in self.tiers or ():
            if node in nodes:
                return tier
        return None


@dataclasses.dataclass(frozen=True)
class Problem:
    """One reason the kernel does not tier, and what to set.

    Also what the kernel does otherwise than the model takes it to
    (:data:`BOUND_DEMOTION`), with no setting that fixes it.
    """

    code: str
    what: str
    # Shell lines that fix it now, run as printed as root (empty: nothing
    # to run), and the lines that keep it so across reboots.
    fix: tuple = ()
    persist: tuple = ()


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What the kernel does with the far nodes of a host."""

    promotes: bool
    demotes: bool
    problems: tuple = ()
    # A Problem (BOUND_DEMOTION) when reclaim may demote the memory of a
    # guest Nova binds; None when it keeps it, or does not demote.
    bound: Problem = None

    @property
    def demotes_bound_memory(self):
        """Whether reclaim may move a bound guest's pages to far nodes."""
        return self.bound is not None

    @property
    def state(self):
        """``pmem_kernel_tiering``: on only when it promotes and demotes."""
        return state_of(self.promotes, self.demotes)

    @property
    def summary(self):
        if self.promotes and self.demotes:
            return 'promotes and demotes'
        if self.promotes:
            return 'promotes but does not demote'
        if self.demotes:
            return 'demotes but does not promote'
        return 'neither promotes nor demotes'

    def note(self):
        """One line: what the kernel does and what to set; None if on."""
        if self.state == ON:
            return None
        fixes = [line for problem in self.problems for line in problem.fix]
        return ('kernel tiering is off (the kernel %s: %s): pmem_kernel_'
                'tiering=off, every guest\'s whole RAM counts against the '
                'DRAM%s' % (self.summary, '; '.join(
                    p.what for p in self.problems),
                    '; set: %s' % '; '.join(fixes) if fixes else ''))

    def bound_note(self):
        """One line: what demotion does with bound guests; None if kept."""
        if self.bound is None:
            return None
        return ('reclaim may demote the memory of guests Nova binds: %s; '
                'their whole RAM still counts against the DRAM, but their '
                'cold pages may be served from the far nodes (the '
                'observer\'s far_resident_mb per guest shows it)'
                % self.bound.what)


def state_of(promotes, demotes):
    """``on`` only for a kernel that both promotes and demotes."""
    return ON if promotes and demotes else OFF


def state_problem(state, promotes, demotes):
    """Why a recorded ``state`` contradicts its verdict, or None.

    The documents that record a verdict (host profile, observation) refuse
    a state that is not :func:`state_of` its ``promotes`` and ``demotes``.
    """
    expected = state_of(promotes, demotes)
    if state == expected:
        return None
    return ('is "%s" but promotes is %s and demotes is %s: expected %s'
            % (state, str(bool(promotes)).lower(),
               str(bool(demotes)).lower(), expected))


def _balancing_problems(state):
    value = state.numa_balancing
    if value is None:
        return [Problem(NO_BALANCING, 'no %s (kernel %s: promotion needs '
                        'Linux 5.18 or later built with '
                        'CONFIG_NUMA_BALANCING)' % (
                            '/' + NUMA_BALANCING_FILE,
                            state.kernel or 'unknown'))]
    if value & NUMA_BALANCING_MEMORY_TIERING:
        return []
    what = 'numa_balancing is %d' % value
    if value & ~NUMA_BALANCING_BITS:
        what += ', which sets no bit the kernel defines'
    if release(state.kernel) is not None \
            and release(state.kernel) < PROMOTION_SINCE:
        return [Problem(BALANCING_OFF, '%s and kernel %s '
                        'has no memory-tiering mode (bit 2 needs Linux '
                        '5.18 or later): upgrade the kernel'
                        % (what, state.kernel))]
    # The bits it has that the kernel defines, and tiering's.
    wanted = (value & NUMA_BALANCING_BITS) | NUMA_BALANCING_MEMORY_TIERING
    return [Problem(BALANCING_OFF, '%s, not in memory-'
                    'tiering mode (bit 2)' % what,
                    ('sysctl -w kernel.numa_balancing=%d' % wanted,),
                    ("echo 'kernel.numa_balancing = %d' > %s"
                     % (wanted, SYSCTL_CONF),))]


def _demotion_problems(state):
    if state.demotion_enabled is None:
        return [Problem(NO_DEMOTION, 'no %s (kernel %s: demotion needs '
                        'Linux 5.15 or later)'
                        % ('/' + DEMOTION_FILE, state.kernel or 'unknown'))]
    if state.demotion_enabled:
        return []
    return [Problem(DEMOTION_OFF, 'demotion_enabled is false',
                    ('echo true > /%s' % DEMOTION_FILE,),
                    ("echo 'w /%s - - - - true' > %s"
                     % (DEMOTION_FILE, TMPFILES_CONF),))]


# The first release with NUMA balancing's memory-tiering mode.
PROMOTION_SINCE = (5, 18)


def release(kernel):
    """``(major, minor)`` of a kernel release (``6.8.0-49-generic``).

    None when it does not start with two numbers.
    """
    match = re.match(r'([0-9]+)\.([0-9]+)', kernel or '')
    return (int(match.group(1)), int(match.group(2))) if match else None


def same_tier_nodes(state, cpu_nodes, far_nodes):
    """The far nodes in the tier of a node with CPUs (never demoted to)."""
    if state.tiers is None:
        return ()
    top = {state.tier_of(node) for node in cpu_nodes} - {None}
    return tuple(node for node in sorted(far_nodes)
                 if state.tier_of(node) is None
                 or (top and state.tier_of(node) <= max(top)))


def judge(state, cpu_nodes, far_nodes):
    """What the kernel does with ``far_nodes`` (the CPU-less nodes).

    It promotes with numa_balancing bit 2 and demotes with
    demotion_enabled, both only between tiers: a far node in the tier of
    the DRAM (firmware without HMAT or CDAT data) is neither demoted to nor
    promoted from. A kernel older than the memory tiers (6.1) orders nodes
    by CPUs: the nodes without CPUs are the lower tier.

    :returns: a :class:`Verdict`.
    """
    problems = _balancing_problems(state)
    balancing_ok = not problems
    demotion = _demotion_problems(state)
    problems += demotion
    same = same_tier_nodes(state, cpu_nodes, far_nodes)
    if same:
        tiers = ', '.join(
            'node %d in no memory tier' % n if state.tier_of(n) is None
            else 'node %d in memory_tier%d' % (n, state.tier_of(n))
            for n in same)
        problems.append(Problem(SAME_TIER, '%s, the tier of the DRAM: no '
                                'HMAT or CDAT data gave the CXL memory its '
                                'distance, so the kernel never demotes to '
                                'it (enable HMAT in the firmware, or a '
                                'kernel that reads CDAT)' % tiers))
    tiered = bool(far_nodes) and not same
    demotes = not demotion and tiered
    return Verdict(promotes=balancing_ok and tiered,
                   demotes=demotes, problems=tuple(problems),
                   bound=bound_demotion(state) if demotes else None)


def bound_demotion(state):
    """Why a kernel that demotes may move a bound guest's memory, or None.

    Libvirt binds a guest Nova gives a NUMA topology with ``MPOL_BIND``
    and with the ``cpuset.mems`` of its cgroups. Reclaim's demotion honours
    no ``MPOL_BIND`` in any release, and the cpuset only on cgroup v2 from
    Linux 7.0 (6.16 checks the next demotion node only). A release that
    cannot be read is taken to be older. For a kernel that demotes.

    :returns: a :class:`Problem` (:data:`BOUND_DEMOTION`) or None.
    """
    kernel = state.kernel or 'release unknown'
    found = release(state.kernel)
    kept = '%d.%d' % CPUSET_KEPT_SINCE
    if found is None:
        what = ('kernel %s: before Linux %s demotion does not keep memory '
                'in its cpuset' % (kernel, kept))
    elif found < CPUSET_NEXT_NODE_SINCE:
        what = ('Linux %s demotes regardless of cpuset and memory policy '
                '(until %d.%d)' % ((kernel,) + CPUSET_NEXT_NODE_SINCE))
    elif found < CPUSET_KEPT_SINCE:
        what = ('Linux %s checks a cgroup v2 cpuset for the next demotion '
                'node only (from %d.%d; every target from %s, and in a '
                '6.19.y that took 1aceed565ff1)'
                % ((kernel,) + CPUSET_NEXT_NODE_SINCE + (kept,)))
    elif state.cgroup == CGROUP_V2:
        return None
    elif state.cgroup == CGROUP_V1:
        what = ('Linux %s keeps demoted memory in its cpuset on cgroup v2 '
                'only, and the cpuset controller is on cgroup v1 here'
                % kernel)
    else:
        what = ('Linux %s keeps demoted memory in its cpuset on cgroup v2 '
                'only, and no cgroup v2 cpuset controller was found (%s '
                'not read, or no cpuset mounted)'
                % (kernel, '/' + MOUNTS_FILE))
    return Problem(BOUND_DEMOTION, what)


def kernel_tiered(prof):
    """Whether the kernel does the tiering of a host of profile ``prof``."""
    kind = prof.kind
    return kind is not None and kind.tiered_by == kinds.KERNEL


def promotes(prof):
    """Whether hot RAM alone needs near memory on a kernel-tiered host."""
    return (prof.kernel_tiering or DEFAULT_STATE) == ON


# Promotions below this share of candidates, with at least
# LAG_MIN_CANDIDATES_PER_S candidates a second, mean the kernel leaves hot
# pages on the far node (rate-limited, or no free DRAM to promote into).
LAG_PROMOTED_SHARE = 0.5


LAG_MIN_CANDIDATES_PER_S = 256.0


def rates(before, after, seconds):
    """Counters per second between two :func:`parse_vmstat` snapshots.

    Counters only one snapshot has, and any that went down (a reboot), are
    left out. Empty when ``seconds`` is not positive.
    """
    if not seconds or seconds <= 0:
        return {}
    return {name: (after[name] - before[name]) / float(seconds)
            for name in COUNTERS
            if name in before and name in after
            and after[name] >= before[name]}


def lagging(per_second):
    """What the rates say of a kernel that tiers; [] when it keeps up.

    :returns: ``[(code, line)]``: ``promotion-lags`` when far fewer pages
        are promoted than are candidates, ``direct-demotion`` when
        allocations demote for themselves (the DRAM node has no free
        memory left).
    """
    found = []
    candidates = per_second.get(PROMOTE_CANDIDATE)
    success = per_second.get(PROMOTE_SUCCESS)
    if candidates is not None and success is not None \
            and candidates >= LAG_MIN_CANDIDATES_PER_S \
            and success < LAG_PROMOTED_SHARE * candidates:
        found.append(('promotion-lags', '%.0f pages/s promoted of %.0f '
                      'candidates/s: hot pages stay on the far node (see '
                      'numa_balancing_promote_rate_limit_MBps)'
                      % (success, candidates)))
    direct = per_second.get(DEMOTE_DIRECT)
    if direct:
        found.append(('direct-demotion', '%.0f pages/s demoted by '
                      'allocations themselves (pgdemote_direct): the DRAM '
                      'node has no free memory, kswapd does not keep up'
                      % direct))
    return found
