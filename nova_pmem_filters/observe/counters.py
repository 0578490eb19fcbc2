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
"""Host counters of far-memory traffic: /proc/vmstat and ipmctl.

Kernel tiering (CXL or PMem onlined as kmem, with NUMA balancing's memory
tiering mode): ``pgpromote_success`` counts pages promoted to a near node,
``pgdemote_kswapd``, ``pgdemote_direct``, ``pgdemote_khugepaged`` (and
newer ``pgdemote_proactive``) pages demoted; a kernel without tiering has
none of them and its rates are None.

Memory Mode: ``ipmctl show -dimm -performance`` prints per module
``MediaReads`` and ``MediaWrites``, the 64-byte reads and writes of the
PMem media since the last AC power cycle (ipmctl-show-performance(1)),
each as ``0x`` and 32 hex digits (DcpmPkg/cli/ShowPerformanceCommand.c);
older releases printed decimal. Text form::

    ---DimmID=0x0001---
       MediaReads=0x000000000000000000000000cc3bb004
       ...

nvmxml form: ``<DimmPerformanceList><DimmPerformance><DimmID>`` ... .
MB are MiB, as everywhere in the observation file.
"""

import os
import re
import subprocess
from xml.etree import ElementTree

from nova_pmem_filters.cli import procutil
from nova_pmem_filters.core.grammars import errors
from nova_pmem_filters.core.grammars import ipmctl
from nova_pmem_filters.core.grammars import toolout
from nova_pmem_filters.observe import procfs

MEDIA_UNIT_BYTES = 64
MIB = 2.0 ** 20
PROMOTE = 'pgpromote_success'
DEMOTE_PREFIX = 'pgdemote_'
IPMCTL_ARGV = (toolout.IPMCTL, 'show', '-o', 'nvmxml', '-dimm',
               '-performance')
# ipmctl's metric names and ours.
METRICS = {
    'MediaReads': 'media_reads',
    'MediaWrites': 'media_writes',
    'ReadRequests': 'read_requests',
    'WriteRequests': 'write_requests',
    'TotalMediaReads': 'total_media_reads',
    'TotalMediaWrites': 'total_media_writes',
    'TotalReadRequests': 'total_read_requests',
    'TotalWriteRequests': 'total_write_requests',
}
_VMSTAT_RE = re.compile(r'^([a-z0-9_]+) ([0-9]+)$')
_COUNTER_RE = re.compile(r'^(0x[0-9a-fA-F]+|[0-9]+)$')
_TIMEOUT = 30.0

ReadError = procfs.ReadError


def vmstat(path='/proc/vmstat'):
    """{name: int} of /proc/vmstat.

    :raises ReadError: naming the file (and line) when it cannot be read, is
        empty, truncated (no final newline) or has a garbled line.
    """
    text = procfs.read_text(path)
    if not text.strip():
        raise ReadError('%s: empty' % path)
    lines = text.split('\n')
    if lines[-1]:
        raise ReadError('%s line %d: truncated (no final newline): %r'
                        % (path, len(lines), lines[-1][:80]))
    found = {}
    for number, line in enumerate(lines[:-1], 1):
        match = _VMSTAT_RE.match(line)
        if not match:
            raise ReadError('%s line %d: expected "<name> <count>", got %r'
                            % (path, number, line[:80]))
        found[match.group(1)] = int(match.group(2))
    return found


def _rate(before, after, keys, seconds):
    if not keys or any(k not in before for k in keys):
        return None
    delta = sum(after[k] for k in keys) - sum(before[k] for k in keys)
    if delta < 0:
        # A counter went backwards: not the same boot.
        return None
    return delta / float(seconds)


def tiering_rates(before, after, seconds):
    """Pages promoted and demoted per second between two vmstat readings.

    None where the kernel lacks the counters (or they went backwards).
    """
    if not seconds > 0:
        raise ValueError('seconds must be more than 0, got %r' % seconds)
    demote = sorted(k for k in after if k.startswith(DEMOTE_PREFIX))
    promote = [PROMOTE] if PROMOTE in after else []
    return {'promote_pages_per_s': _rate(before, after, promote, seconds),
            'demote_pages_per_s': _rate(before, after, demote, seconds)}


def _counter(source, dimm, key, raw):
    raw = (raw or '').strip()
    if not _COUNTER_RE.match(raw):
        raise ReadError('%s: DIMM %s: %s is not a counter: %r'
                        % (source, dimm, key, raw[:40]))
    return int(raw, 16) if raw.lower().startswith('0x') else int(raw)


def _xml_records(text, source):
    try:
        root = ElementTree.fromstring(text.strip())
    except ElementTree.ParseError as exc:
        raise ReadError('%s: not valid XML (%s)' % (source, exc))
    records = []
    for elem in root.iter():
        if elem.find('DimmID') is not None:
            records.append({c.tag: c.text for c in elem})
    if not records:
        # ipmctl's errors: <Results><Result>message</Result></Results>.
        message = ' '.join(''.join(root.itertext()).split())
        raise ReadError('%s: no DimmPerformance element%s' % (
            source, ': %s' % message[:200] if message else ''))
    return records


def _text_records(text, source):
    lines = text.splitlines()
    if not text.endswith('\n'):
        raise ReadError('%s line %d: truncated (no final newline): %r'
                        % (source, len(lines), lines[-1].strip()[:80]))
    records = []
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith('---'):
            key, eq, value = stripped.strip('-').partition('=')
            if not eq or key.strip() != 'DimmID':
                raise ReadError('%s line %d: expected ---DimmID=<id>---, '
                                'got %r' % (source, number, stripped[:80]))
            records.append({'DimmID': value.strip()})
            continue
        key, eq, value = stripped.partition('=')
        if not records or not eq or not key.strip():
            raise ReadError('%s line %d: unrecognised line: %r'
                            % (source, number, stripped[:80]))
        records[-1][key.strip()] = value.strip()
    if not records:
        raise ReadError('%s: no ---DimmID=...--- section' % source)
    return records


def ipmctl_performance(text, source='ipmctl show -dimm -performance'):
    """{dimm_id: {'media_reads': int, 'media_writes': int, ...}}.

    Reads the text and the nvmxml forms; counters are hex or decimal, as
    ipmctl prints them; MediaReads/MediaWrites are in 64-byte units.

    :raises ReadError: naming the source on anything else.
    """
    if not text or not text.strip():
        raise ReadError('%s: empty output' % source)
    if text.lstrip().startswith('<'):
        records = _xml_records(text, source)
    else:
        records = _text_records(text, source)
    found = {}
    for record in records:
        dimm = (record.get('DimmID') or '').strip()
        if not dimm:
            raise ReadError('%s: a module without DimmID' % source)
        counters = {}
        for key, name in METRICS.items():
            if key in record:
                counters[name] = _counter(source, dimm, key, record[key])
        for key in ('MediaReads', 'MediaWrites'):
            if key not in record:
                raise ReadError('%s: DIMM %s: missing %s (truncated?)'
                                % (source, dimm, key))
        if dimm in found:
            raise ReadError('%s: DIMM %s listed twice' % (source, dimm))
        found[dimm] = counters
    return found


def media_rates(before, after, seconds):
    """MiB per second read from and written to the PMem media.

    :raises ValueError: when the two readings list other modules, or a
        counter went backwards (an AC power cycle between them).
    """
    if not seconds > 0:
        raise ValueError('seconds must be more than 0, got %r' % seconds)
    if set(before) != set(after):
        raise ValueError('the modules changed between the readings: %s '
                         'then %s' % (', '.join(sorted(before)),
                                      ', '.join(sorted(after))))
    rates = {}
    for key, name in (('media_reads', 'media_read_mb_per_s'),
                      ('media_writes', 'media_write_mb_per_s')):
        delta = 0
        for dimm in sorted(after):
            step = after[dimm][key] - before[dimm][key]
            if step < 0:
                raise ValueError('DIMM %s: %s went backwards (%d then %d)'
                                 % (dimm, key, before[dimm][key],
                                    after[dimm][key]))
            delta += step
        rates[name] = delta * MEDIA_UNIT_BYTES / MIB / seconds
    return rates


def _run(argv):
    env = dict(os.environ, LC_ALL='C', LANG='C')
    try:
        proc = subprocess.Popen(
            list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env=env, start_new_session=True)
    except FileNotFoundError:
        raise ReadError('%s: command not found (install the ipmctl package)'
                        % argv[0])
    except OSError as exc:
        raise ReadError('%s: cannot run: %s' % (' '.join(argv),
                                                exc.strerror))
    try:
        out, err = proc.communicate(timeout=_TIMEOUT)
    except subprocess.TimeoutExpired:
        procutil.kill_group(proc)
        raise ReadError('%s: no answer after %gs' % (' '.join(argv),
                                                     _TIMEOUT))
    return (proc.returncode, out.decode('utf-8', errors='replace'),
            err.decode('utf-8', errors='replace'))


def run_ipmctl_performance(runner=None):
    """The nvmxml output of ``ipmctl show -dimm -performance``.

    ``runner(argv)`` returns (exit status, stdout, stderr); by default the
    tool runs as discovery runs its tools (no shell, LC_ALL=C, a timeout).

    :raises ReadError: 'ipmctl: permission denied', 'ipmctl: no PMem
        modules', 'ipmctl: command not found ...' or the tool's first line.
    """
    returncode, out, err = (runner or _run)(IPMCTL_ARGV)
    text = out if out.strip() or returncode == 0 else err
    output = _output(text, returncode)
    try:
        kind = ipmctl.classify(output)
    except errors.DiscoveryError as exc:
        raise ReadError(str(exc))
    if kind == ipmctl.NO_ACCESS:
        raise ReadError('ipmctl: permission denied')
    if kind == ipmctl.NO_MODULES:
        raise ReadError('ipmctl: no PMem modules')
    return text


def _output(text, returncode):
    command = toolout.Command('performance', IPMCTL_ARGV,
                              ('ipmctl-performance.xml',
                               'ipmctl-performance.txt'))
    return toolout.Output(command, text, returncode, 'xml',
                          ' '.join(IPMCTL_ARGV))
