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
  :func:`lagging`).

This module imports nothing from Nova.
"""

import dataclasses
import os
import re

from nova_pmem_filters.core import kinds

# The aggregate value of a kernel-tiered host (profile.KERNEL_TIERING_KEY).
ON = 'on'
OFF = 'off'
STATES = (ON, OFF)
# A host of a kernel-tiered kind whose aggregates do not say: the kernel
# is taken to tier, as before the key existed.
DEFAULT_STATE = ON

# numa_balancing bits (include/linux/sched/sysctl.h).
NUMA_BALANCING_NORMAL = 1
NUMA_BALANCING_MEMORY_TIERING = 2
NUMA_BALANCING_MAX = NUMA_BALANCING_NORMAL | NUMA_BALANCING_MEMORY_TIERING

# The files, relative to the root of the host's file system.
NUMA_BALANCING_FILE = 'proc/sys/kernel/numa_balancing'
# The kernel's name (kernel/sched/fair.c), "promote", not "promotion".
RATE_LIMIT_FILE = 'proc/sys/kernel/numa_balancing_promote_rate_limit_MBps'
DEMOTION_FILE = 'sys/kernel/mm/numa/demotion_enabled'
MEMORY_TIERING_DIR = 'sys/devices/virtual/memory_tiering'
OSRELEASE_FILE = 'proc/sys/kernel/osrelease'
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

SYSCTL_CONF = '/etc/sysctl.d/60-memory-tiering.conf'
TMPFILES_CONF = '/etc/tmpfiles.d/memory-tiering.conf'

# Flavor extra specs that give a guest a NUMA topology, so strictly bound
# memory (nova.virt.hardware.numa_get_constraints).
_NUMA_KEY = 'hw:numa_nodes'
_PAGE_SIZE_KEY = 'hw:mem_page_size'
_CPU_POLICY_KEY = 'hw:cpu_policy'
_PCPU_KEY = 'resources:PCPU'
_VPMEM_KEY = 'hw:pmem'
_PINNED_POLICIES = ('dedicated', 'mixed')


class TieringError(ValueError):
    """A tiering file whose text is not what the kernel writes."""

    def __init__(self, source, message):
        self.source = source
        super().__init__('%s: %s' % (source, message))


# --- the files ---------------------------------------------------------

def _one_line(text, source):
    if text is None:
        return None
    value = text.strip()
    if not value:
        raise TieringError(source, 'empty (a truncated read?)')
    if '\n' in value:
        raise TieringError(source, 'more than one line: %r' % value[:40])
    return value


def parse_numa_balancing(text, source=NUMA_BALANCING_FILE):
    """The value of ``numa_balancing`` (0 to 3); None without the file."""
    value = _one_line(text, source)
    if value is None:
        return None
    if not (value.isascii() and value.isdigit()) \
            or int(value) > NUMA_BALANCING_MAX:
        raise TieringError(source, 'unknown value %r: the kernel writes 0 '
                           '(off), 1 (NUMA balancing), 2 (memory tiering) '
                           'or 3 (both)' % value[:40])
    return int(value)


def parse_bool(text, source=DEMOTION_FILE):
    """``demotion_enabled`` (``true``/``false``, older kernels ``1``/``0``).

    None without the file.
    """
    value = _one_line(text, source)
    if value is None:
        return None
    if value in ('true', '1', 'Y'):
        return True
    if value in ('false', '0', 'N'):
        return False
    raise TieringError(source, 'not true or false: %r' % value[:40])


def parse_whole(text, source=RATE_LIMIT_FILE):
    """A whole number (the promotion rate limit, MB/s); None without it."""
    value = _one_line(text, source)
    if value is None:
        return None
    if not (value.isascii() and value.isdigit()):
        raise TieringError(source, 'not a whole number: %r' % value[:40])
    return int(value)


def parse_nodelist(text, source):
    """A memory tier's ``nodelist`` (``0-1,3``) as a tuple of node ids."""
    value = _one_line(text, source)
    if value is None:
        return None
    if not re.fullmatch(r'[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*', value):
        raise TieringError(source, 'not a node list: %r' % value[:40])
    nodes = []
    for part in value.split(','):
        low, _sep, high = part.partition('-')
        if int(high or low) < int(low):
            raise TieringError(source, 'not a node list: %r' % value[:40])
        nodes.extend(range(int(low), int(high or low) + 1))
    return tuple(nodes)


def parse_vmstat(text, source=VMSTAT_FILE):
    """The tiering counters of a vmstat file: ``{name: count}``.

    Only the counters in :data:`COUNTERS` the kernel has; an empty dict
    from a kernel older than them.
    """
    found = {}
    for number, line in enumerate((text or '').splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 2 or not parts[1].isdigit():
            raise TieringError(source, 'line %d is not "name count": %r'
                               % (number, line[:60]))
        if parts[0] in COUNTERS:
            found[parts[0]] = int(parts[1])
    return found


def tier_id(name):
    """The tier number of a ``memory_tierN`` directory; None if not one."""
    match = re.fullmatch(r'memory_tier([0-9]+)', name)
    return int(match.group(1)) if match else None


# --- reading them ------------------------------------------------------
#
# ``root`` is ``/`` on the host itself, or a directory holding the same
# paths as recorded (``DIR/proc/sys/kernel/numa_balancing``, ...).

# More than this is not one of the kernel's small files.
_MAX_BYTES = 1024 * 1024


def read_text(root, relative):
    """A file's text, None when it does not exist.

    :raises TieringError: naming the file when it cannot be read.
    """
    path = os.path.join(root, relative)
    try:
        with open(path, 'rb') as f:
            raw = f.read(_MAX_BYTES + 1)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise TieringError(path, 'cannot read: %s' % (exc.strerror or exc))
    if len(raw) > _MAX_BYTES:
        raise TieringError(path, 'larger than %d bytes' % _MAX_BYTES)
    return raw.decode('utf-8', errors='replace')


def read_tiers(root):
    """``((tier, (node, ...)), ...)`` of the memory tiers; None without."""
    directory = os.path.join(root, MEMORY_TIERING_DIR)
    try:
        names = os.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise TieringError(directory, 'cannot list: %s'
                           % (exc.strerror or exc))
    tiers = []
    for name in names:
        tier = tier_id(name)
        if tier is None:
            continue
        relative = os.path.join(MEMORY_TIERING_DIR, name, 'nodelist')
        nodes = parse_nodelist(read_text(root, relative),
                               os.path.join(root, relative))
        if nodes is None:
            raise TieringError(os.path.join(root, relative), 'missing: a '
                               'memory tier without its nodelist')
        tiers.append((tier, nodes))
    return tuple(sorted(tiers))


def read_state(root='/'):
    """The kernel's tiering settings under ``root`` (:class:`State`).

    :raises TieringError: naming the file that cannot be read or holds
        what the kernel does not write.
    """
    def read(relative, parse):
        return parse(read_text(root, relative), os.path.join(root, relative))

    kernel = read_text(root, OSRELEASE_FILE)
    return State(
        kernel=kernel.strip() or None if kernel is not None else None,
        numa_balancing=read(NUMA_BALANCING_FILE, parse_numa_balancing),
        demotion_enabled=read(DEMOTION_FILE, parse_bool),
        promotion_rate_limit_mbps=read(RATE_LIMIT_FILE, parse_whole),
        tiers=read_tiers(root))


def read_counters(root='/', nodes=()):
    """The tiering counters: host-wide, and per node where the kernel has.

    :returns: ``({name: count}, {node: {name: count}})``; a node whose
        vmstat has no tiering counter (a kernel before about 6.9) is left
        out.
    """
    def read(relative):
        return parse_vmstat(read_text(root, relative),
                            os.path.join(root, relative))

    per_node = {}
    for node in nodes:
        found = read(NODE_VMSTAT_FILE % node)
        if found:
            per_node[node] = found
    return read(VMSTAT_FILE), per_node


# --- what the kernel does ---------------------------------------------

@dataclasses.dataclass(frozen=True)
class State:
    """The kernel's tiering settings, as read (None: the file is absent).

    ``tiers`` is ``((tier id, (node, ...)), ...)`` sorted by tier, None on
    a kernel without ``memory_tiering`` (before 6.1).
    """

    kernel: str = None
    numa_balancing: int = None
    demotion_enabled: bool = None
    promotion_rate_limit_mbps: int = None
    tiers: tuple = None

    def tier_of(self, node):
        """The tier of a NUMA node; None when unknown."""
        for tier, nodes in self.tiers or ():
            if node in nodes:
                return tier
        return None


@dataclasses.dataclass(frozen=True)
class Problem:
    """One reason the kernel does not tier, and what to set."""

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
    if release(state.kernel) is not None \
            and release(state.kernel) < PROMOTION_SINCE:
        return [Problem(BALANCING_OFF, 'numa_balancing is %d and kernel %s '
                        'has no memory-tiering mode (bit 2 needs Linux '
                        '5.18 or later): upgrade the kernel'
                        % (value, state.kernel))]
    wanted = value | NUMA_BALANCING_MEMORY_TIERING
    return [Problem(BALANCING_OFF, 'numa_balancing is %d, not in memory-'
                    'tiering mode (bit 2)' % value,
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
    return Verdict(promotes=balancing_ok and tiered,
                   demotes=not demotion and tiered,
                   problems=tuple(problems))


# --- what an instance costs -------------------------------------------

def kernel_tiered(prof):
    """Whether the kernel does the tiering of a host of profile ``prof``."""
    kind = prof.kind
    return kind is not None and kind.tiered_by == kinds.KERNEL


def promotes(prof):
    """Whether hot RAM alone needs near memory on a kernel-tiered host."""
    return (prof.kernel_tiering or DEFAULT_STATE) == ON


def whole_ram(prof, bound):
    """Whether an instance's whole RAM counts against near memory.

    On a kernel-tiered host, an instance whose memory Nova binds
    (``bound``), and every instance where the kernel does not tier.
    """
    return kernel_tiered(prof) and (bound or not promotes(prof))


def instance_ratio(prof, hot_ratio, bound):
    """The share of an instance's RAM it charges to a host's near memory."""
    return 1.0 if whole_ram(prof, bound) else hot_ratio


def instance_mb(prof, request, memory_mb, bound):
    """Near-memory MB an instance of ``memory_mb`` charges on ``prof``."""
    return memory_mb * instance_ratio(prof, request.hot_ratio, bound)


def charged(prof, used):
    """A host's :class:`~nova_pmem_filters.core.cache.HotRam` as charged.

    Hot RAM everywhere but on kernel-tiered hosts, where the NUMA-bound
    instances charge their whole RAM (per cell) and, where the kernel does
    not tier, every instance does.
    """
    charge = charger(prof)
    return used if charge is None or used is None else charge(used)


def charger(prof):
    """:func:`charged` for the hosts of profile ``prof``, chosen once.

    None where the charge is the hot RAM as counted, so that the rules
    that judge thousands of hosts a request call nothing for them; else a
    function of a HotRam.
    """
    if not kernel_tiered(prof):
        return None
    if not promotes(prof):
        return lambda used: used.as_ram()
    return lambda used: used.bound_as_ram()


def binds_memory(extra_specs):
    """Why Nova binds a flavor's guest memory to host cells, or None.

    Nova gives a guest a NUMA topology, and libvirt ``<numatune
    mode="strict">``, for ``hw:numa_nodes``, ``hw:mem_page_size`` (huge
    pages are not moved by NUMA balancing either), a dedicated or mixed
    CPU policy (``hw:cpu_policy``, ``resources:PCPU``) and ``hw:pmem``
    (``nova.virt.hardware.numa_get_constraints``). Image properties can
    too; the scheduler reads the request's topology itself.

    :returns: the first such extra spec as ``key=value``, or None.
    """
    specs = extra_specs or {}
    for key in (_NUMA_KEY, _PAGE_SIZE_KEY, _VPMEM_KEY):
        if specs.get(key):
            return '%s=%s' % (key, specs[key])
    if str(specs.get(_CPU_POLICY_KEY, '')).lower() in _PINNED_POLICIES:
        return '%s=%s' % (_CPU_POLICY_KEY, specs[_CPU_POLICY_KEY])
    pcpus = str(specs.get(_PCPU_KEY, '')).strip()
    if pcpus.isdigit() and int(pcpus) > 0:
        return '%s=%s' % (_PCPU_KEY, pcpus)
    return None


# --- whether it keeps up ----------------------------------------------

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


def hot_on_far_mb(hot_mb, near_resident_mb):
    """Hot MB of a guest that must sit on far nodes.

    A guest whose working set is larger than what it has resident on the
    DRAM nodes has at least the difference on the far nodes.
    """
    if hot_mb is None or near_resident_mb is None:
        return None
    return max(float(hot_mb) - float(near_resident_mb), 0.0)
