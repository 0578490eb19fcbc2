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
"""A process's working set and NUMA placement, from /proc and /sys.

Working set by reference bits (Documentation/admin-guide/mm/soft-dirty.rst
and proc.rst, "clear_refs"): writing ``1`` to ``/proc/PID/clear_refs``
clears the referenced bit of every page of the process; after the window,
``Referenced:`` of ``/proc/PID/smaps_rollup`` (Linux 4.14+; else the sum
over ``/proc/PID/smaps``) is the memory touched since. Writing clear_refs
needs the rights to ptrace the process (root on a compute host).

A process that exits during the window, or is replaced by another one with
the same pid (its start time in ``/proc/PID/stat`` changes), or whose files
we may not read or write, gets a :class:`Measurement` with a ``gap`` and no
number: never an exception for one bad pid, never a wrong number.

``numa_maps`` raises :class:`ReadError` on unreadable or truncated input:
its caller (the observer) turns that into the instance's gap.
"""

import collections
import glob
import os
import re
import time

from nova_pmem_filters.core.grammars import kernellist

Measurement = collections.namedtuple('Measurement', 'working_set_mb gap')

KIB_PER_MIB = 1024.0
_REFERENCED_RE = re.compile(r'^Referenced:\s+([0-9]+) kB$')
_NODE_RE = re.compile(r'^N([0-9]+)=([0-9]+)$')
_PAGESIZE_RE = re.compile(r'^kernelpagesize_kB=([0-9]+)$')
_NODE_DIR_RE = re.compile(r'^node([0-9]+)$')
# A node's meminfo: "Node 2 MemTotal:       67108864 kB".
_MEMTOTAL_RE = r'^Node\s+%d\s+MemTotal:\s+([0-9]+)\s+kB\s*$'


class ReadError(ValueError):
    """A file of /proc or /sys we cannot use, naming the file (and line)."""


def _path(proc, pid, name):
    return os.path.join(proc, str(pid), name)


def _text(path):
    """The whole text of a file; OSError as open and read raise it."""
    with open(path) as f:
        return f.read()


def _reason(pid, path, exc):
    if isinstance(exc, (FileNotFoundError, ProcessLookupError)):
        return 'pid %s: exited (%s: %s)' % (pid, path, exc.strerror)
    if isinstance(exc, PermissionError):
        return 'pid %s: %s: permission denied' % (pid, path)
    return 'pid %s: %s: %s' % (pid, path, exc.strerror or exc)


def start_time(pid, proc='/proc'):
    """The start time of pid (clock ticks after boot), or None if gone."""
    try:
        text = _text(_path(proc, pid, 'stat'))
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses.
    fields = text[text.rfind(')') + 2:].split()
    if len(fields) < 20:
        return None
    return fields[19]


def clear(pid, proc='/proc'):
    """Clear the referenced bits of pid's pages; None, or why not."""
    path = _path(proc, pid, 'clear_refs')
    try:
        with open(path, 'w') as f:
            f.write('1')
    except OSError as exc:
        return _reason(pid, path, exc)
    return None


def _sum_referenced(path, text, pid):
    total = 0
    found = False
    for number, line in enumerate(text.splitlines(), 1):
        if not line.startswith('Referenced:'):
            continue
        match = _REFERENCED_RE.match(line.strip())
        if not match:
            return None, 'pid %s: %s line %d: not "Referenced: <n> kB": %r' % (
                pid, path, number, line[:80])
        total += int(match.group(1))
        found = True
    if not found:
        # A zombie's (or a kernel thread's) smaps is empty.
        return None, ('pid %s: %s: no "Referenced:" line (exited, or a '
                      'truncated file)' % (pid, path))
    if text and not text.endswith('\n'):
        return None, 'pid %s: %s: truncated (no final newline)' % (pid, path)
    return total / KIB_PER_MIB, None


def referenced(pid, proc='/proc'):
    """The memory pid referenced since its bits were cleared."""
    path = _path(proc, pid, 'smaps_rollup')
    try:
        text = _text(path)
    except FileNotFoundError:
        if not os.path.isdir(os.path.join(proc, str(pid))):
            return Measurement(None, 'pid %s: exited (no %s)' % (
                pid, os.path.join(proc, str(pid))))
        # Before Linux 4.14: no smaps_rollup.
        path = _path(proc, pid, 'smaps')
        try:
            text = _text(path)
        except OSError as exc:
            return Measurement(None, _reason(pid, path, exc))
    except OSError as exc:
        return Measurement(None, _reason(pid, path, exc))
    mb, gap = _sum_referenced(path, text, pid)
    return Measurement(mb, gap)


def reference_bits(pids, window_s, sleep=time.sleep, proc='/proc'):
    """Working set of each pid over a window, by reference bits.

    Clear the referenced bits (write '1' to /proc/PID/clear_refs), wait
    window_s, sum 'Referenced:' of /proc/PID/smaps_rollup (fall back to
    summing /proc/PID/smaps).
    Returns {pid: Measurement}. A pid that exits during the window, or
    whose files cannot be read/written (permission denied), gets
    Measurement(None, '<clear reason>') -- never raises for one bad pid,
    never a wrong number.
    """
    result = {}
    started = {}
    for pid in pids:
        started[pid] = start_time(pid, proc)
        if started[pid] is None:
            result[pid] = Measurement(None, 'pid %s: not running' % pid)
            continue
        gap = clear(pid, proc)
        if gap:
            result[pid] = Measurement(None, gap)
    sleep(window_s)
    for pid in pids:
        if pid in result:
            continue
        measured = referenced(pid, proc)
        if measured.gap is None and start_time(pid, proc) != started[pid]:
            # The pid now names another process: its bits were never
            # cleared.
            measured = Measurement(None, 'pid %s: exited during the window'
                                   % pid)
        result[pid] = measured
    return result


# The policy of a numa_maps line bound with MPOL_BIND, as mpol_to_str()
# (mm/mempolicy.c) prints it: "bind", its flags after "=" ("static",
# "relative", "balancing", joined by "|"), then ":" and the node list.
_BIND_RE = re.compile(r'^bind(?:=[a-z|]+)?:([0-9,\-]+)$')

# Where a process's pages sit: {node: MB} of all of them, and of those in
# memory bound with MPOL_BIND, {node: MB} on nodes outside its binding
# (None when the process binds no memory).
Placement = collections.namedtuple('Placement', 'nodes bound_off_node')


def numa_maps(pid, proc='/proc'):
    """{node_id (int): MB} of the process's pages, from /proc/PID/numa_maps.

    :func:`numa_placement`'s ``nodes``.
    """
    return numa_placement(pid, proc).nodes


def _bind_nodes(policy):
    """The nodes of an MPOL_BIND policy field; None for other policies."""
    match = _BIND_RE.match(policy)
    if match is None:
        return None
    return kernellist.parse(match.group(1))


def numa_placement(pid, proc='/proc'):
    """Where the process's pages sit, from /proc/PID/numa_maps.

    Each line's N<node>=<pages> fields times its kernelpagesize_kB
    (hugetlb lines count in huge pages). Lines whose policy is MPOL_BIND
    (``bind:0``, the guest RAM libvirt binds for a NUMA-bound instance)
    also count the pages on nodes outside their binding: no allocation
    puts them there, so something moved them (reclaim's demotion, or
    ``migratepages``).

    :returns: a :class:`Placement`.
    :raises ReadError: naming the file (and line) when it cannot be read,
        is truncated (no final newline, or a line with pages but no
        kernelpagesize_kB) or garbled.
    """
    path = _path(proc, pid, 'numa_maps')
    text = read_text(path)
    if text and not text.endswith('\n'):
        raise ReadError('%s: truncated (no final newline)' % path)
    total = collections.defaultdict(float)
    off = None
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if len(fields) < 2:
            raise ReadError('%s line %d: expected "<address> <policy> ...", '
                            'got %r' % (path, number, line[:80]))
        pages = {}
        page_kb = None
        for field in fields[2:]:
            node = _NODE_RE.match(field)
            if node:
                pages[int(node.group(1))] = int(node.group(2))
                continue
            size = _PAGESIZE_RE.match(field)
            if size:
                page_kb = int(size.group(1))
        if pages and page_kb is None:
            raise ReadError('%s line %d: N<node>= fields without '
                            'kernelpagesize_kB (truncated?): %r'
                            % (path, number, line[:80]))
        # A policy this does not know (a later kernel's flag) binds
        # nothing here: its pages still count in ``nodes``.
        bound = _bind_nodes(fields[1])
        if bound is not None:
            off = off if off is not None else collections.defaultdict(float)
        for node, count in pages.items():
            total[node] += count * page_kb / KIB_PER_MIB
            if bound is not None and node not in bound:
                off[node] += count * page_kb / KIB_PER_MIB
    return Placement(dict(total), None if off is None else dict(off))


def node_cpus(sysfs='/sys'):
    """{node_id: True if the NUMA node has CPUs}, from sysfs.

    Read from /sys/devices/system/node/node*/cpulist. CPU-less nodes are
    the far tier (CXL or PMem onlined as kmem).

    :raises ReadError: when a cpulist cannot be read or no node is found.
    """
    directory = os.path.join(sysfs, 'devices', 'system', 'node')
    found = {}
    for path in glob.glob(os.path.join(directory, 'node[0-9]*')):
        match = _NODE_DIR_RE.match(os.path.basename(path))
        if not match:
            continue
        found[int(match.group(1))] = bool(
            read_text(os.path.join(path, 'cpulist')).strip())
    if not found:
        raise ReadError('%s: no node<N> directory (a kernel without NUMA '
                        'support?)' % directory)
    return found


def read_text(path):
    """The text of a file of /proc or /sys.

    :raises ReadError: naming the file when it cannot be read or is not
        text.
    """
    try:
        return _text(path)
    except OSError as exc:
        raise ReadError('%s: cannot read: %s' % (path, exc.strerror))
    except UnicodeDecodeError:
        raise ReadError('%s: not text' % path)


def node_memory_mb(node, sysfs='/sys'):
    """MemTotal of a NUMA node in MB, from its sysfs ``meminfo``.

    A node without CPUs that holds memory is a far node (CXL memory or
    PMem onlined as system RAM); one without memory is not.

    :raises ReadError: when the file cannot be read or has no MemTotal line
        for the node.
    """
    source = os.path.join(sysfs, 'devices', 'system', 'node',
                          'node%d' % node, 'meminfo')
    text = read_text(source)
    match = re.search(_MEMTOTAL_RE % node, text, re.M)
    if not match:
        raise ReadError('%s: no "Node %d MemTotal: <n> kB" line (truncated?)'
                        % (source, node))
    return int(match.group(1)) / KIB_PER_MIB
