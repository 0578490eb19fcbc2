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
"""The grammar of the kernel's tiering files, and their reading."""

import os
import re

from nova_pmem_filters.core.grammars import kernellist
from nova_pmem_filters.core.rules import tiering


class TieringError(ValueError):
    """A tiering file whose text is not what the kernel writes."""

    def __init__(self, source, message):
        self.source = source
        super().__init__('%s: %s' % (source, message))


def _one_line(text, source):
    if text is None:
        return None
    value = text.strip()
    if not value:
        raise TieringError(source, 'empty (a truncated read?)')
    if '\n' in value:
        raise TieringError(source, 'more than one line: %r' % value[:40])
    return value


def parse_numa_balancing(text, source=tiering.NUMA_BALANCING_FILE):
    """The value of ``numa_balancing`` (0 to 4); None without the file.

    The sysctl holds what it accepted, 0 to 4 (0 or 1 before Linux 5.18).
    """
    value = _one_line(text, source)
    if value is None:
        return None
    if not (value.isascii() and value.isdigit()) \
            or int(value) > tiering.NUMA_BALANCING_MAX:
        raise TieringError(source, 'unknown value %r: the kernel holds %s'
                           % (value[:40], tiering.NUMA_BALANCING_ALLOWED))
    return int(value)


def parse_bool(text, source=tiering.DEMOTION_FILE):
    """``demotion_enabled``: ``true`` or ``false``; None without the file.

    The kernel prints nothing else, in every release that has the file
    (5.15 on: ``numa_demotion_enabled ? "true" : "false"``, later
    ``str_true_false()``), whatever was written to it (``1``, ``y``,
    ``on``): another value is not the kernel's.
    """
    value = _one_line(text, source)
    if value is None:
        return None
    if value == 'true':
        return True
    if value == 'false':
        return False
    raise TieringError(source, 'not true or false: %r (the kernel prints '
                       'one of them, whatever was written)' % value[:40])


def parse_whole(text, source=tiering.RATE_LIMIT_FILE):
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
    nodes = kernellist.parse(value)
    if nodes is None:
        raise TieringError(source, 'not a node list: %r (%s)'
                           % (value[:40], kernellist.ALLOWED))
    return tuple(nodes)


def parse_vmstat(text, source=tiering.VMSTAT_FILE):
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
        if parts[0] in tiering.COUNTERS:
            found[parts[0]] = int(parts[1])
    return found


def parse_cgroup(lines, source=tiering.MOUNTS_FILE):
    """The cpuset controller's hierarchy from the lines of ``/proc/mounts``.

    :data:`tiering.CGROUP_V1` where a ``cgroup`` file system carries the
    ``cpuset`` option (v1, or the hybrid layout: a controller lives in one
    hierarchy only), else :data:`tiering.CGROUP_V2` where ``cgroup2`` is
    mounted, else None (no cgroup file system at all).

    :param lines: an iterable of lines (``fstab(5)`` fields: device, mount
        point, type, options, ...).
    """
    v2 = False
    for number, line in enumerate(lines, 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) < 4:
            raise TieringError(source, 'line %d is not "device mount-point '
                               'type options ...": %r' % (number, line[:60]))
        kind, options = parts[2], parts[3].split(',')
        if kind == 'cgroup' and 'cpuset' in options:
            return tiering.CGROUP_V1
        v2 = v2 or kind == 'cgroup2'
    return tiering.CGROUP_V2 if v2 else None


# A line of /proc/mounts longer than this is read only this far: the type
# and the options of a cgroup mount come first, and are short.
_MOUNT_LINE_BYTES = 4096


# /proc/mounts larger than this is not a host's.
_MAX_MOUNTS_BYTES = 64 * 1024 * 1024


def _mount_lines(f, path):
    """The lines of an open mounts file, each cut at _MOUNT_LINE_BYTES."""
    total = 0
    while True:
        chunk = f.readline(_MOUNT_LINE_BYTES)
        if not chunk:
            return
        total += len(chunk)
        line = chunk
        while not chunk.endswith(b'\n') and len(chunk) == _MOUNT_LINE_BYTES:
            # The rest of a long line (an overlay's lowerdir list).
            chunk = f.readline(_MOUNT_LINE_BYTES)
            total += len(chunk)
            if total > _MAX_MOUNTS_BYTES:
                break
        if total > _MAX_MOUNTS_BYTES:
            raise TieringError(path, 'larger than %d bytes'
                               % _MAX_MOUNTS_BYTES)
        yield line.decode('utf-8', errors='replace')


def read_cgroup(root='/'):
    """:func:`parse_cgroup` of ``/proc/mounts`` under ``root``.

    None when the file is absent (a recording made before it was read).
    Memory stays bounded whatever the file holds.

    :raises TieringError: naming the file when it cannot be read or is
        not a mounts file.
    """
    path = os.path.join(root, tiering.MOUNTS_FILE)
    try:
        f = open(path, 'rb')
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise TieringError(path, 'cannot read: %s' % (exc.strerror or exc))
    with f:
        try:
            return parse_cgroup(_mount_lines(f, path), path)
        except OSError as exc:
            raise TieringError(path, 'cannot read: %s'
                               % (exc.strerror or exc))


def tier_id(name):
    """The tier number of a ``memory_tierN`` directory; None if not one."""
    match = re.fullmatch(r'memory_tier([0-9]+)', name)
    return int(match.group(1)) if match else None


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
    directory = os.path.join(root, tiering.MEMORY_TIERING_DIR)
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
        relative = os.path.join(tiering.MEMORY_TIERING_DIR, name, 'nodelist')
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

    kernel = read_text(root, tiering.OSRELEASE_FILE)
    return tiering.State(
        kernel=kernel.strip() or None if kernel is not None else None,
        numa_balancing=read(tiering.NUMA_BALANCING_FILE, parse_numa_balancing),
        demotion_enabled=read(tiering.DEMOTION_FILE, parse_bool),
        promotion_rate_limit_mbps=read(tiering.RATE_LIMIT_FILE, parse_whole),
        tiers=read_tiers(root), cgroup=read_cgroup(root))


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
        found = read(tiering.NODE_VMSTAT_FILE % node)
        if found:
            per_node[node] = found
    return read(tiering.VMSTAT_FILE), per_node
