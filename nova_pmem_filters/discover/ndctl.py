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
"""Parser for ``ndctl list --regions --namespaces`` (and ``-RNu``) JSON.

ndctl prints nothing when there is nothing to list, a bare object when
there is one item and a list otherwise; with ``-u`` sizes are strings such
as ``"248.06 GiB (266.35 GB)"``. All of these are accepted.
"""

import json
import re

from nova_pmem_filters.discover import errors

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


def parse(output):
    """(regions, namespaces) as lists of dicts, sizes in bytes."""
    source = output.source
    if output.returncode != 0:
        _fail(source, 'exit status %d: %s'
              % (output.returncode,
                 output.text.strip().splitlines()[0][:200]
                 if output.text.strip() else 'no output'))
    text = output.text.strip()
    if not text:
        return [], []
    try:
        data = json.loads(text)
    except ValueError as exc:
        _fail(source, 'not valid JSON (%s)' % exc)
    if isinstance(data, dict) and 'dev' not in data and (
            'regions' in data or 'namespaces' in data):
        top_regions = _as_list(source, data.get('regions', []), 'regions')
        loose = _as_list(source, data.get('namespaces', []), 'namespaces')
    else:
        items = _as_list(source, data, 'output')
        top_regions = [i for i in items
                       if str(i.get('dev', '')).startswith('region')]
        loose = [i for i in items if i not in top_regions]
    regions = []
    namespaces = []
    for raw in top_regions:
        dev = _str(source, raw, 'dev', required=True)
        regions.append({
            'dev': dev,
            'size': _bytes(source, raw, 'size'),
            'available_size': _bytes(source, raw, 'available_size',
                                     required=False) or 0,
            'numa_node': _int(source, raw, 'numa_node'),
            'type': _str(source, raw, 'type'),
            'iset_id': _int(source, raw, 'iset_id'),
        })
        for ns in _as_list(source, raw.get('namespaces', []),
                           'namespaces of %s' % dev):
            namespaces.append(_namespace(source, ns, dev, regions[-1]))
    for ns in loose:
        namespaces.append(_namespace(source, ns, None, None))
    return regions, namespaces


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
