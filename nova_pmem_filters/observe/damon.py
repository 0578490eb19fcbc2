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
"""Working sets by DAMON's sysfs interface, and ``damo``'s outputs.

Facts of the interface we rely on (Documentation/admin-guide/mm/damon/
usage.rst, "sysfs Interface", and Documentation/ABI/testing/
sysfs-kernel-mm-damon; https://docs.kernel.org/6.18/admin-guide/mm/damon/
usage.html):

- ``admin/kdamonds/nr_kdamonds``: "Writing a number 'N' to this file
  creates the number of directories for controlling each DAMON worker
  thread (kdamond)", named ``0`` to ``N-1``. The kernel
  (``nr_kdamonds_store``) first removes every existing kdamond directory,
  and refuses (EBUSY) while one runs: writing it takes over every other
  user's configuration. So we use DAMON only when ``nr_kdamonds`` reads 0
  (:func:`usable`), and write it back to 0 when done, whatever happened.
- ``kdamonds/<K>/state``: writing ``on`` or ``off`` starts or stops the
  kdamond; writing ``update_schemes_tried_regions`` fills each scheme's
  ``tried_regions/<N>/{start,end,nr_accesses,age}`` with the regions the
  scheme's action was tried on at its next apply interval (the
  aggregation interval by default). The write returns once they are
  filled.
- A ``stat`` scheme does nothing to memory but count, so a ``stat`` scheme
  with ``nr_accesses`` min 1 gives the regions accessed in the last
  aggregation interval. We set that interval to the window.
- The tried regions do not say which target they belong to, so
  :func:`measure` creates one kdamond (one context, one ``vaddr`` target,
  one scheme) per pid: a pid that cannot be monitored (it exited: ``on``
  fails with ESRCH) is then a gap of its own. A kdamond stops when its
  target exits; its ``state`` then reads ``off``.

``damo`` (https://github.com/awslabs/damo) output we read: ``damo report
wss`` (per ``# target_id``, ``# avr:`` and the percentiles) and ``damo
show`` (region lines ``<index> addr [<start>, <end>) (<size>) access <rate>
age <age>``, record heads ``kdamond K / context C / scheme S / target id T
/ ...``, ``total size:`` tails), with human sizes or ``--raw_number``.
"""

import errno
import os
import re
import time

from nova_pmem_filters.observe import procfs

ADMIN = '/sys/kernel/mm/damon/admin'
ULONG_MAX = 2 ** 64 - 1
UINT_MAX = 2 ** 32 - 1
SAMPLE_US = 5000
MIB = 2.0 ** 20

_SIZE_RE = re.compile(r'^([0-9][0-9,]*(?:\.[0-9]+)?)\s*'
                      r'(B|KiB|MiB|GiB|TiB|PiB|EiB)?$')
_UNITS = {None: 1, 'B': 1, 'KiB': 2 ** 10, 'MiB': 2 ** 20, 'GiB': 2 ** 30,
          'TiB': 2 ** 40, 'PiB': 2 ** 50, 'EiB': 2 ** 60}
_REGION_RE = re.compile(r'^\s*[0-9]+\s+addr\s+\[(.+?),(.+?)\)\s+\((.+?)\)\s+'
                        r'access\s+([0-9.]+)\s*%?')
_RECORD_RE = re.compile(r'^kdamond\s+(\S+)\s*/\s*context\s+(\S+)\s*/\s*'
                        r'scheme\s+(\S+)\s*/\s*target id\s+(\S+)')
_TARGET_RE = re.compile(r'^#\s*target_id\s+(\S+)\s*$')
_AVR_RE = re.compile(r'^#\s*avr:\s+(.+?)\s*$')


class DamonError(procfs.ReadError):
    """DAMON cannot be used, or answered what we cannot read."""


def _read(path):
    with open(path) as f:
        return f.read().strip()


def _write(path, value):
    # Tests replace this with a fake kernel that reacts to the writes.
    with open(path, 'w') as f:
        f.write(str(value))


# Why DAMON is not usable on a kernel that has none: nothing to act on.
ABSENT = 'absent (a kernel without CONFIG_DAMON_SYSFS)'


def usable(admin=ADMIN):
    """(bool, reason): whether we may use DAMON without disturbing others.

    Yes only when the sysfs interface is present and writable and no
    kdamond exists (nr_kdamonds reads 0): contexts we did not create.
    """
    path = os.path.join(admin, 'kdamonds', 'nr_kdamonds')
    if not os.path.isdir(admin):
        return False, '%s: %s' % (admin, ABSENT)
    try:
        raw = _read(path)
    except OSError as exc:
        return False, '%s: cannot read: %s' % (path, exc.strerror)
    try:
        count = int(raw)
    except ValueError:
        return False, '%s: not a number: %r' % (path, raw[:40])
    if count != 0:
        return False, ('%s: %d kdamond(s) exist; writing nr_kdamonds would '
                       'remove them: DAMON is left to their owner'
                       % (path, count))
    if not os.access(path, os.W_OK):
        return False, '%s: not writable (run as root)' % path
    return True, 'DAMON sysfs interface unused'


def _setup(kdamond, pid, window_s):
    ctx = os.path.join(kdamond, 'contexts', '0')
    _write(os.path.join(kdamond, 'contexts', 'nr_contexts'), 1)
    _write(os.path.join(ctx, 'operations'), 'vaddr')
    intervals = os.path.join(ctx, 'monitoring_attrs', 'intervals')
    aggr_us = max(SAMPLE_US * 2, int(window_s * 1e6))
    _write(os.path.join(intervals, 'sample_us'), SAMPLE_US)
    _write(os.path.join(intervals, 'aggr_us'), aggr_us)
    _write(os.path.join(intervals, 'update_us'), aggr_us)
    _write(os.path.join(ctx, 'targets', 'nr_targets'), 1)
    _write(os.path.join(ctx, 'targets', '0', 'pid_target'), pid)
    _write(os.path.join(ctx, 'schemes', 'nr_schemes'), 1)
    scheme = os.path.join(ctx, 'schemes', '0')
    _write(os.path.join(scheme, 'action'), 'stat')
    pattern = os.path.join(scheme, 'access_pattern')
    for name, low, high in (('sz', 0, ULONG_MAX),
                            ('nr_accesses', 1, UINT_MAX),
                            ('age', 0, UINT_MAX)):
        _write(os.path.join(pattern, name, 'min'), low)
        _write(os.path.join(pattern, name, 'max'), high)
    return os.path.join(scheme, 'tried_regions')


def _tried_mb(directory):
    total = 0
    try:
        names = [n for n in os.listdir(directory) if n.isdigit()]
    except OSError as exc:
        raise DamonError('%s: cannot list: %s' % (directory, exc.strerror))
    for name in names:
        region = os.path.join(directory, name)
        try:
            start = int(_read(os.path.join(region, 'start')))
            end = int(_read(os.path.join(region, 'end')))
            accesses = int(_read(os.path.join(region, 'nr_accesses')))
        except (OSError, ValueError) as exc:
            raise DamonError('%s: unreadable region: %s' % (region, exc))
        if end < start:
            raise DamonError('%s: end %d before start %d' % (region, end,
                                                             start))
        if accesses > 0:
            total += end - start
    return total / MIB


def measure(pids, window_s, admin=ADMIN, sleep=time.sleep):
    """{pid: procfs.Measurement} via kdamonds this call creates and removes.

    Working set = the size of the regions accessed (nr_accesses > 0) in
    the window. One kdamond per pid (see the module docstring), all
    removed on return.

    :raises DamonError: when :func:`usable` says no, or the kdamonds cannot
        be created or removed.
    """
    pids = list(pids)
    ok, reason = usable(admin)
    if not ok:
        raise DamonError(reason)
    if not pids:
        return {}
    kdamonds = os.path.join(admin, 'kdamonds')
    nr_path = os.path.join(kdamonds, 'nr_kdamonds')
    result = {}
    running = []
    try:
        try:
            _write(nr_path, len(pids))
        except OSError as exc:
            raise DamonError('%s: cannot write: %s' % (nr_path,
                                                       exc.strerror))
        tried = {}
        for index, pid in enumerate(pids):
            kdamond = os.path.join(kdamonds, str(index))
            try:
                tried[pid] = _setup(kdamond, pid, window_s)
            except OSError as exc:
                raise DamonError('%s: cannot configure: %s: %s'
                                 % (kdamond, exc.filename, exc.strerror))
            try:
                _write(os.path.join(kdamond, 'state'), 'on')
            except OSError as exc:
                why = ('exited' if exc.errno == errno.ESRCH else
                       exc.strerror)
                result[pid] = procfs.Measurement(
                    None, 'pid %s: DAMON cannot monitor it: %s' % (pid, why))
                continue
            running.append((pid, kdamond))
        sleep(window_s)
        for pid, kdamond in running:
            state = os.path.join(kdamond, 'state')
            try:
                if _read(state) != 'on':
                    result[pid] = procfs.Measurement(
                        None, 'pid %s: exited during the window' % pid)
                    continue
                _write(state, 'update_schemes_tried_regions')
            except OSError as exc:
                result[pid] = procfs.Measurement(
                    None, 'pid %s: %s: %s' % (pid, state, exc.strerror))
                continue
            result[pid] = procfs.Measurement(_tried_mb(tried[pid]), None)
    finally:
        _remove(kdamonds, nr_path, running)
    return result


def _remove(kdamonds, nr_path, running):
    for _pid, kdamond in running:
        state = os.path.join(kdamond, 'state')
        try:
            if _read(state) == 'on':
                _write(state, 'off')
        except OSError:
            # Stopped on its own (its target exited) in between.
            pass
    try:
        _write(nr_path, 0)
    except OSError as exc:
        raise DamonError('%s: cannot write 0 to remove our kdamonds: %s'
                         % (nr_path, exc.strerror))


def _bytes(raw, what):
    match = _SIZE_RE.match(raw.strip())
    if not match:
        raise ValueError('%s: not a size: %r' % (what, raw.strip()[:40]))
    return float(match.group(1).replace(',', '')) * _UNITS[match.group(2)]


def parse_damo(text, source='damo'):
    """Working-set size (MiB) per target from ``damo`` output.

    ``damo report wss``: the ``# avr:`` of each ``# target_id`` (None when
    it reports ``# no snapshot``). ``damo show``: the summed size of the
    regions whose access rate is above 0, per ``target id`` of the record
    heads (target 0 when there is a single record and so no head). Target
    ids are strings, as damo prints them.

    :raises DamonError: naming the source and line on anything else.
    """
    lines = (text or '').splitlines()
    if any(_TARGET_RE.match(line.strip()) for line in lines):
        return _parse_wss(lines, source)
    return _parse_show(lines, source)


def _parse_wss(lines, source):
    found = {}
    target = None
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        match = _TARGET_RE.match(stripped)
        if match:
            target = match.group(1)
            found[target] = None
            continue
        match = _AVR_RE.match(stripped)
        if match:
            if target is None:
                raise DamonError('%s line %d: "# avr:" before "# target_id"'
                                 % (source, number))
            try:
                found[target] = _bytes(match.group(1), 'avr') / MIB
            except ValueError as exc:
                raise DamonError('%s line %d: %s' % (source, number, exc))
    if not found:
        raise DamonError('%s: no "# target_id" line' % source)
    return found


def _parse_show(lines, source):
    found = {}
    target = None
    regions = 0
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped:
            continue
        head = _RECORD_RE.match(stripped)
        if head:
            target = head.group(4)
            found.setdefault(target, 0.0)
            continue
        region = _REGION_RE.match(line)
        if region:
            if target is None:
                target = '0'
                found.setdefault(target, 0.0)
            try:
                size = _bytes(region.group(3), 'region size')
                rate = float(region.group(4))
            except ValueError as exc:
                raise DamonError('%s line %d: %s' % (source, number, exc))
            if rate > 0:
                found[target] += size / MIB
            regions += 1
            continue
        if stripped.startswith(('total size:', 'monitored time:')):
            continue
        raise DamonError('%s line %d: not damo report wss or damo show '
                         'output: %r' % (source, number, stripped[:80]))
    if not regions:
        raise DamonError('%s: no region line (expected damo show or damo '
                         'report wss output)' % source)
    return found
