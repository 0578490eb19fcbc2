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
"""Parser for ``ndctl list --regions --namespaces --verbose`` JSON.

ndctl prints nothing when there is nothing to list, a bare object when
there is one item, a list when there are several of one kind, an object of
lists (``dimms``, ``regions``, ``namespaces``) when there are several kinds,
and a list of buses holding those lists with ``--buses``. All of these are
accepted, and so is what each ndctl version prints for a value:

* sizes: integers, or with ``-u`` strings such as
  ``"248.06 GiB (266.35 GB)"`` (a small size stays an integer);
* 64-bit hexadecimal fields (a region's ``iset_id``, a DIMM's ``handle``
  and ``phys_id``): with ``-u`` strings such as ``"0x7e387f48c4e42ccc"``;
  without it an integer, which ndctl before version 73 prints signed (a
  cookie at or above 2**63 is negative) and later versions unsigned.
  Every form gives the same unsigned value.

ndctl 73 to 78 print every ``iset_id`` at or above 2**63 as
``"0x7fffffffffffffff"`` with ``-u`` (fixed in ndctl 79); that value says
nothing about the region and is read as unknown (``None``).

``numa_node`` is printed with ``--verbose`` only.
"""

import collections
import json
import re

from nova_pmem_filters.core.grammars import errors

# What ndctl 73-78 print with -u for any 64-bit id at or above 2**63.
CLAMPED_ID = 2 ** 63 - 1
_U64 = 2 ** 64
# printf's "%#llx" prints zero as "0", without the prefix.
_HEX_RE = re.compile(r'^(0[xX][0-9a-fA-F]{1,16}|0)$')

Listing = collections.namedtuple('Listing', 'regions namespaces dimms')

_HUMAN_RE = re.compile(
    r'^([0-9]+(?:\.[0-9]+)?)\s*(B|KiB|MiB|GiB|TiB)(?:\s*\(.*\))?$')
_HUMAN_UNITS = {'B': 1, 'KiB': 2 ** 10, 'MiB': 2 ** 20, 'GiB': 2 ** 30,
                'TiB': 2 ** 40}


def _fail(source, what):
    raise errors.DiscoveryError('%s: %s' % (source, what))


def _bytes(source, obj, key, required=True):
    """A size in bytes: an integer, or a -u human string."""
    value = obj.get(key)
    if value is None:
        if required:
            _fail(source, '%s %s has no %s'
                  % (_what(obj), obj.get('dev'), key))
        return None
    if isinstance(value, bool):
        _fail(source, '%s of %s is not a size: %r'
              % (key, obj.get('dev'), value))
    if isinstance(value, int):
        if value < 0:
            _fail(source, '%s of %s is negative' % (key, obj.get('dev')))
        return value
    if isinstance(value, str):
        match = _HUMAN_RE.match(value.strip())
        if match:
            return int(round(float(match.group(1))
                             * _HUMAN_UNITS[match.group(2)]))
        if re.match(r'^(0x[0-9a-fA-F]+|[0-9]+)$', value.strip()):
            return int(value.strip(), 0)
    _fail(source, '%s of %s is not a size: %r'
          % (key, obj.get('dev'), str(value)[:40]))


def _what(obj):
    dev = str(obj.get('dev', ''))
    return 'namespace' if dev.startswith('namespace') else 'region'


def _int(source, obj, key):
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        _fail(source, '%s of %s is not an integer: %r'
              % (key, obj.get('dev'), str(value)[:40]))
    return value


def _u64(source, obj, key):
    """A 64-bit id in any form ndctl prints it, as an unsigned integer."""
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, str) and _HEX_RE.match(value.strip()):
        return int(value.strip(), 16)
    if (isinstance(value, int) and not isinstance(value, bool)
            and -2 ** 63 <= value < _U64):
        # A signed print of a cookie at or above 2**63 is negative.
        return value % _U64
    _fail(source, '%s of %s is not a 64-bit id (an integer or a 0x hex '
          'string): %r' % (key, obj.get('dev'), str(value)[:40]))


def _str(source, obj, key, required=False):
    value = obj.get(key)
    if value is None:
        if required:
            _fail(source, 'an entry has no %s' % key)
        return None
    if not isinstance(value, str) or not value:
        _fail(source, '%s is not a non-empty string: %r'
              % (key, str(value)[:40]))
    return value


def _as_list(source, value, what):
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list):
        for item in value:
            if not isinstance(item, dict):
                _fail(source, '%s entry is not an object: %r'
                      % (what, str(item)[:40]))
        return value
    _fail(source, '%s is not a list: %r' % (what, str(value)[:40]))


def _kind(item):
    dev = str(item.get('dev', ''))
    for prefix in ('region', 'namespace', 'nmem', 'ndbus'):
        if dev.startswith(prefix):
            return prefix
    return None


_LISTS = ('dimms', 'regions', 'namespaces')


def _collect(source, data, found):
    """Sort the listing's objects by kind, from any of ndctl's shapes."""
    if (isinstance(data, dict) and 'dev' not in data
            and set(data) & set(_LISTS)):
        # Several kinds: {"dimms": [...], "regions": [...], ...}.
        for key in _LISTS:
            _collect(source, _as_list(source, data.get(key, []), key),
                     found)
        return
    for item in _as_list(source, data, 'output'):
        kind = _kind(item)
        if kind == 'ndbus':
            # --buses: each bus holds its own lists, if it has any.
            for key in _LISTS:
                if key in item:
                    _collect(source, _as_list(source, item[key], key),
                             found)
        elif kind is None:
            _fail(source, 'an entry is not a region, namespace, DIMM or '
                  'bus: dev %r' % str(item.get('dev'))[:40])
        else:
            found[kind].append(item)


def parse_listing(output):
    """Regions, namespaces and DIMMs of one listing; sizes in bytes."""
    source = output.source
    if output.returncode != 0:
        _fail(source, 'exit status %d: %s'
              % (output.returncode,
                 output.text.strip().splitlines()[0][:200]
                 if output.text.strip() else 'no output'))
    text = output.text.strip()
    if not text:
        return Listing([], [], [])
    try:
        data = json.loads(text)
    except ValueError as exc:
        _fail(source, 'not valid JSON (%s)' % exc)
    found = collections.defaultdict(list)
    _collect(source, data, found)
    regions = []
    namespaces = []
    for raw in found['region']:
        dev = _str(source, raw, 'dev', required=True)
        iset_id = _u64(source, raw, 'iset_id')
        regions.append({
            'dev': dev,
            'size': _bytes(source, raw, 'size'),
            'available_size': _bytes(source, raw, 'available_size',
                                     required=False) or 0,
            'numa_node': _int(source, raw, 'numa_node'),
            'type': _str(source, raw, 'type'),
            'iset_id': None if iset_id == CLAMPED_ID else iset_id,
        })
        for ns in _as_list(source, raw.get('namespaces', []),
                           'namespaces of %s' % dev):
            namespaces.append(_namespace(source, ns, dev, regions[-1]))
    for ns in found['namespace']:
        namespaces.append(_namespace(source, ns, None, None))
    dimms = [{'dev': _str(source, raw, 'dev', required=True),
              'id': _str(source, raw, 'id'),
              'handle': _u64(source, raw, 'handle'),
              'phys_id': _u64(source, raw, 'phys_id'),
              'numa_node': _int(source, raw, 'numa_node')}
             for raw in found['nmem']]
    return Listing(regions, namespaces, dimms)


def parse(output):
    """(regions, namespaces) as lists of dicts, sizes in bytes."""
    listing = parse_listing(output)
    return listing.regions, listing.namespaces


def _namespace(source, raw, region_dev, region):
    dev = _str(source, raw, 'dev', required=True)
    if region_dev is None:
        # namespaceX.Y lives in regionX.
        match = re.match(r'^namespace([0-9]+)\.[0-9]+$', dev)
        region_dev = 'region%s' % match.group(1) if match else None
    numa = _int(source, raw, 'numa_node')
    if numa is None and region is not None:
        numa = region['numa_node']
    return {
        'name': _str(source, raw, 'name'),
        'dev': dev,
        'mode': _str(source, raw, 'mode') or 'raw',
        'region': region_dev,
        'numa_node': numa,
        'size': _bytes(source, raw, 'size'),
        'chardev': _str(source, raw, 'chardev'),
        'blockdev': _str(source, raw, 'blockdev'),
        'align': _bytes(source, raw, 'align', required=False),
        'uuid': _str(source, raw, 'uuid'),
    }
