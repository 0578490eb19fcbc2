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
"""Parsers for ``ipmctl show`` output: nvmxml (preferred) and text.

Both forms become a list of records (dicts of attribute name to string),
then typed values. Anything that does not have the expected shape raises
:class:`~nova_pmem_filters.core.grammars.errors.DiscoveryError` with one line
that names the command.
"""

import re
from xml.etree import ElementTree

from nova_pmem_filters.core.grammars import errors

OK = 'ok'
NO_MODULES = 'no_modules'
NO_ACCESS = 'no_access'

# What ipmctl says on a host without PMem, by version (its string tables,
# DcpmPkg/common/NvmStatus.uni): "No AEPs in the system." (01.00.00.3072
# to 3091), "No DIMMs in the system." (3102 to 02.00.00.3722), "No PMem
# modules in the system." (3728 on), "Initialization failed. No PMem
# modules in the system." (02.00.00.3866 on, no ACPI tables: a virtual
# machine), "No PMem modules found."; and to a user without the rights to
# ask.
_NO_MODULES_RE = re.compile(
    r'no (?:pmem|dcpmm|dimm|aep|intel\(r\) optane)[\w() ]*?'
    r'(?:found|in the system|detected|installed)', re.I)
# ipmctl 02.00.00.3847 to 3852 say only this where later ones say
# "Initialization failed. No PMem modules in the system." (intel/ipmctl
# issue 164): it does not tell why, so it is not taken for "no PMem".
_NOT_RUN_RE = re.compile(r'^\s*command not run\.?\s*$', re.I | re.M)
_NO_ACCESS_RE = re.compile(
    r'requires? (?:root|admin\w*) privileges|permission denied|'
    r'access denied|insufficient privileges|operation not permitted', re.I)

_UNITS = {'B': 1.0 / 2 ** 30, 'KIB': 1.0 / 2 ** 20, 'MIB': 1.0 / 2 ** 10,
          'GIB': 1.0, 'TIB': 2.0 ** 10,
          'KB': 1e3 / 2 ** 30, 'MB': 1e6 / 2 ** 30, 'GB': 1e9 / 2 ** 30,
          'TB': 1e12 / 2 ** 30}
_CAPACITY_RE = re.compile(r'^([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?i?B)$', re.I)
_HEX_RE = re.compile(r'^0x[0-9a-f]{1,16}$', re.I)
# Memory Mode and unprovisioned hosts: "There are no Regions defined in the
# system."
_NO_REGIONS_RE = re.compile(r'\bno regions\b', re.I)
_NOT_AVAILABLE = ('N/A', '-', '')


def classify(output):
    """Whether ipmctl answered, found no modules, or refused us.

    :raises DiscoveryError: on a failure that is neither of the last two.
    """
    text = output.text
    if _NO_MODULES_RE.search(text):
        return NO_MODULES
    if _NO_ACCESS_RE.search(text):
        return NO_ACCESS
    if _NOT_RUN_RE.search(text):
        _fail(output, '"Command not run": ipmctl 02.00.00.3847 to 3852 say '
              'only this when they find no PMem module or no ACPI NFIT '
              'table; a later ipmctl says which')
    if output.returncode != 0:
        raise errors.DiscoveryError(
            '%s: exit status %d: %s' % (output.source, output.returncode,
                                        _first_line(text) or 'no output'))
    return OK


def _first_line(text):
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:200]
    return ''


def _fail(output, what):
    raise errors.DiscoveryError('%s: %s' % (output.source, what))


def records(output):
    """The output's records, each a dict of attribute name to string."""
    if not output.text.strip():
        _fail(output, 'empty output')
    if output.fmt == 'xml' or output.text.lstrip().startswith('<'):
        return _xml_records(output)
    return _text_records(output)


def _xml_records(output):
    try:
        root = ElementTree.fromstring(output.text.strip())
    except ElementTree.ParseError as exc:
        _fail(output, 'not valid XML (%s)' % exc)
    found = []
    for elem in root.iter():
        children = list(elem)
        if children and all(len(c) == 0 for c in children):
            found.append({c.tag: (c.text or '').strip() for c in children})
    return found


def _split_row(line):
    return [cell.strip() for cell in line.strip().strip('|').split('|')]


def _text_records(output):
    lines = [line.rstrip() for line in output.text.splitlines()
             if line.strip()]
    if any(line.lstrip().startswith('---') for line in lines):
        return _list_records(output, lines)
    sep = [i for i, line in enumerate(lines) if set(line.strip()) == {'='}]
    if sep and (sep[0] == 0 or '|' not in lines[sep[0] - 1]):
        _fail(output, 'table without a header line')
    if sep or '|' in lines[0]:
        # The ===== line under the header, or none: ipmctl prints it, and
        # a table pasted from a post or a ticket often comes without it.
        start = sep[0] if sep else 0
        header = _split_row(lines[start - 1] if sep else lines[0])
        found = []
        for line in lines[start + 1:]:
            cells = _split_row(line)
            if len(cells) != len(header):
                _fail(output, 'table row has %d cells, header has %d: %r'
                      % (len(cells), len(header), line.strip()[:80]))
            found.append(dict(zip(header, cells)))
        return found
    # Key=Value lines (ipmctl 01.x memoryresources).
    record = {}
    for line in lines:
        key, eq, value = line.partition('=')
        if not eq or not key.strip():
            _fail(output, 'unrecognised line: %r' % line.strip()[:80])
        record[key.strip()] = value.strip()
    return [record]


def _list_records(output, lines):
    found = []
    for line in lines:
        stripped = line.strip()
        if stripped.startswith('---'):
            key, eq, value = stripped.strip('-').partition('=')
            if not eq:
                _fail(output, 'unrecognised line: %r' % stripped[:80])
            found.append({key.strip(): value.strip()})
            continue
        key, eq, value = stripped.partition('=')
        if not found or not eq or not key.strip():
            _fail(output, 'unrecognised line: %r' % stripped[:80])
        found[-1][key.strip()] = value.strip()
    return found


def _available(output, record, key, required):
    """An attribute's text; None if not available (refused if required)."""
    raw = record.get(key)
    if raw is None or raw.strip() in _NOT_AVAILABLE:
        if required:
            _fail(output, 'missing %s' % key)
        return None
    return raw


def capacity_gib(output, record, key, required=True):
    """A capacity attribute ('126.422 GiB') in GiB; None if not available."""
    raw = _available(output, record, key, required)
    if raw is None:
        return None
    match = _CAPACITY_RE.match(raw.strip())
    if not match:
        _fail(output, '%s is not a capacity: %r' % (key, raw[:40]))
    unit = match.group(2).upper()
    if unit not in _UNITS:
        _fail(output, '%s has an unknown unit: %r' % (key, raw[:40]))
    return float(match.group(1)) * _UNITS[unit]


def hex_id(output, record, key, required=True):
    raw = _available(output, record, key, required)
    if raw is None:
        return None
    if not _HEX_RE.match(raw.strip()):
        _fail(output, '%s is not a hex id: %r' % (key, raw[:40]))
    return int(raw.strip(), 16)


def dimms(output):
    """PMem modules: id, socket, capacity and, if shown, their split."""
    found = []
    for record in records(output):
        dimm_id = hex_id(output, record, 'DimmID')
        socket = hex_id(output, record, 'SocketID', required=False)
        if socket is None:
            # NFIT device handle: bits 12-15 are the socket.
            socket = (dimm_id >> 12) & 0xF
        found.append({
            'id': '0x%04x' % dimm_id,
            'socket': socket,
            'capacity_gb': capacity_gib(output, record, 'Capacity'),
            'memory_gb': capacity_gib(output, record, 'MemoryCapacity',
                                      required=False),
            'app_direct_gb': capacity_gib(output, record,
                                          'AppDirectCapacity',
                                          required=False),
        })
    if not found:
        _fail(output, 'no PMem modules listed')
    return found


# Row names of the 02.x/03.x table and the column that holds PMem numbers.
_PMEM_COLUMNS = ('PMemModule', 'DCPMM', 'PMem module')


def memory_resources(output):
    """Capacities in GiB: keys '<row>_ddr' and '<row>_pmem'.

    Rows are volatile, appdirect, cache, inaccessible and physical.
    Values the output does not have are None.
    """
    recs = records(output)
    result = {}
    rows = [r for r in recs if 'MemoryType' in r]
    if rows:
        for rec in rows:
            row = rec['MemoryType'].strip().lower()
            pmem_key = next((k for k in _PMEM_COLUMNS if k in rec), None)
            if 'DDR' not in rec or pmem_key is None:
                _fail(output, 'row %r lacks the DDR or PMem column'
                      % rec['MemoryType'][:40])
            result[row + '_ddr'] = capacity_gib(output, rec, 'DDR',
                                                required=False)
            result[row + '_pmem'] = capacity_gib(output, rec, pmem_key,
                                                 required=False)
    elif len(recs) == 1 and 'MemoryCapacity' in recs[0]:
        # 01.x: PMem only, no DDR numbers.
        rec = recs[0]
        result['volatile_pmem'] = capacity_gib(output, rec, 'MemoryCapacity')
        result['appdirect_pmem'] = capacity_gib(output, rec,
                                                'AppDirectCapacity')
        result['physical_pmem'] = capacity_gib(output, rec, 'Capacity',
                                               required=False)
    else:
        _fail(output, 'no memory resources table')
    for key in ('volatile_pmem', 'appdirect_pmem'):
        if result.get(key) is None:
            _fail(output, 'missing the %s capacity'
                  % key.replace('_pmem', ' PMem'))
    return result


def regions(output):
    """App Direct regions as ipmctl sees them (socket, capacity, free)."""
    if _NO_REGIONS_RE.search(output.text):
        return []
    found = []
    for record in records(output):
        found.append({
            'socket': hex_id(output, record, 'SocketID'),
            'iset_id': hex_id(output, record, 'ISetID', required=False),
            'type': record.get('PersistentMemoryType', ''),
            'capacity_gb': capacity_gib(output, record, 'Capacity'),
            'free_gb': capacity_gib(output, record, 'FreeCapacity',
                                    required=False),
        })
    return found


def sockets(output):
    """Socket ids, sorted."""
    found = sorted({hex_id(output, record, 'SocketID')
                    for record in records(output)})
    if not found:
        _fail(output, 'no sockets listed')
    return found
