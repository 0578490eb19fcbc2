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
"""The observation file: what ``nova-pmem-observe`` measured on one host.

One JSON document per host and window, written by the observer and read by
the planner (``hot-ratios``, scenario workloads whose hot ratio is
observed) and the doctor (``--observations DIR``). Its format is public and
versioned like the host profile (``doc/source/observation-format.rst``)::

    {
      "schema": "nova-pmem-observation/1",
      "hostname": "compute-mm-01",
      "started": "2026-11-25T12:00:00Z",     # ISO 8601, UTC
      "window_s": 60.0,
      "profile": {                     # from nova-pmem-discover, or null
        "pmem_mode": "memory_mode",
        "near_memory_mb": 196608.0,           # DRAM cache or near memory
        "cells": [{"id": 0, "near_memory_mb": 98304.0}, ...]
      },
      "nodes": [{"id": 0, "cpus": true}, {"id": 2, "cpus": false}],
      "instances": [{
        "uuid": "...", "name": "instance-0000002a",
        "flavor": "m1.redis", "flavor_ram_mb": 24576, "flavor_vcpus": 4,
        "pid": 4242,
        "declared_hot_ratio": 0.25 | null,    # the flavor's pmem:hot_ratio
        "method": "damon" | "reference_bits" | null,
        "working_set_mb": 3900.5 | null,
        "hot_ratio": 0.159 | null,            # working set / flavor RAM
        "numa_mb": {"0": 20000.0, "2": 4000.0},
        "cell": 0 | null,              # the cell holding most of its pages
        "gap": null | "why nothing was measured"
      }, ...],
      "host": {
        "working_set_mb": 120000.0,
        "near_memory_mb": 196608.0 | null,
        "cells": [{"id": 0, "working_set_mb": 60000.0,
                   "near_memory_mb": 98304.0}, ...]
      },
      "far_memory": {
        "media_read_mb_per_s": 12.5 | null,   # ipmctl, Memory Mode
        "media_write_mb_per_s": 3.1 | null,
        "promote_pages_per_s": 100.0 | null,  # /proc/vmstat, kernel tiering
        "demote_pages_per_s": 80.0 | null
      },
      "gaps": ["ipmctl: permission denied", ...]
    }

A measurement that could not be made is a ``gap`` (per instance) or an
entry of ``gaps`` (per host) and its number is ``null``: never a guess.

The rules every reader shares live here too: which instances count, the
distribution of a flavor's observed hot ratios and the value to declare.
"""

import dataclasses
import glob
import json
import math
import os

SCHEMA = 'nova-pmem-observation/1'
METHODS = ('damon', 'reference_bits')
# The recommended pmem:hot_ratio covers this share of the observations ...
RECOMMEND_QUANTILE = 0.95
# ... rounded up to a multiple of this step.
RECOMMEND_STEP = 0.05


class ObservationError(ValueError):
    """A bad observation file, naming the file and the key."""

    def __init__(self, source, keys, message):
        self.source = source
        self.keys = list(keys)
        where = ''.join('[%s]' % json.dumps(k) for k in self.keys)
        super().__init__('%s%s: %s' % (source, where, message))


def _number(item, key, where, source, nullable=True, minimum=0.0):
    value = item.get(key)
    if value is None and nullable:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
            not math.isfinite(value)) or value < minimum:
        raise ObservationError(source, where + [key],
                               'expected a number %s or more%s, got %s'
                               % (minimum, ' or null' if nullable else '',
                                  json.dumps(value)))
    return float(value)


def _text(item, key, where, source, nullable=False):
    value = item.get(key)
    if value is None and nullable:
        return None
    if not isinstance(value, str) or not value:
        raise ObservationError(source, where + [key],
                               'expected a non-empty string, got %s'
                               % json.dumps(value))
    return value


def parse(data, source):
    """Check a document; returns it (a dict) unchanged.

    :raises ObservationError: naming the file and the key.
    """
    if not isinstance(data, dict):
        raise ObservationError(source, [], 'expected a JSON object')
    if data.get('schema') != SCHEMA:
        raise ObservationError(source, ['schema'], 'expected %s, got %s'
                               % (json.dumps(SCHEMA),
                                  json.dumps(data.get('schema'))))
    _text(data, 'hostname', [], source)
    _text(data, 'started', [], source)
    _number(data, 'window_s', [], source, nullable=False)
    instances = data.get('instances')
    if not isinstance(instances, list):
        raise ObservationError(source, ['instances'], 'expected a list')
    for i, inst in enumerate(instances):
        where = ['instances', i]
        if not isinstance(inst, dict):
            raise ObservationError(source, where, 'expected an object')
        _text(inst, 'uuid', where, source)
        _text(inst, 'flavor', where, source, nullable=True)
        _number(inst, 'flavor_ram_mb', where, source)
        method = inst.get('method')
        if method is not None and method not in METHODS:
            raise ObservationError(source, where + ['method'],
                                   'expected one of %s or null, got %s'
                                   % (', '.join(METHODS),
                                      json.dumps(method)))
        _number(inst, 'working_set_mb', where, source)
        _number(inst, 'hot_ratio', where, source)
        declared = _number(inst, 'declared_hot_ratio', where, source)
        if declared is not None and not 0.0 < declared <= 1.0:
            raise ObservationError(source, where + ['declared_hot_ratio'],
                                   'expected a number above 0 and at most '
                                   '1, or null, got %s' % declared)
        numa = inst.get('numa_mb', {})
        if not isinstance(numa, dict):
            raise ObservationError(source, where + ['numa_mb'],
                                   'expected an object of MB per node')
        for node in numa:
            _number(numa, node, where + ['numa_mb'], source,
                    nullable=False)
    gaps = data.get('gaps', [])
    if not isinstance(gaps, list) or not all(isinstance(g, str)
                                             for g in gaps):
        raise ObservationError(source, ['gaps'], 'expected a list of '
                               'strings')
    return data


def read(path):
    """Read and check one observation file."""
    try:
        with open(path, encoding='utf-8') as f:
            text = f.read()
    except OSError as exc:
        raise ObservationError(path, [], 'cannot read the file: %s'
                               % exc.strerror)
    except UnicodeDecodeError:
        raise ObservationError(path, [], 'not UTF-8 text')
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ObservationError(path, [], 'not valid JSON: %s' % exc)
    return parse(data, path)


def load(directory):
    """Every ``*.json`` observation of ``directory``, in file-name order.

    :raises ObservationError: on the first bad file, or when the directory
        holds none.
    """
    if not os.path.isdir(directory):
        raise ObservationError(directory, [], 'not a directory')
    paths = sorted(glob.glob(os.path.join(directory, '*.json')))
    if not paths:
        raise ObservationError(directory, [], 'no *.json observation in the '
                               'directory')
    return [read(path) for path in paths]


def measured(docs):
    """(document, instance) of every instance with a measured hot ratio."""
    for doc in docs:
        for inst in doc['instances']:
            if inst.get('hot_ratio') is not None and inst.get('flavor'):
                yield doc, inst


@dataclasses.dataclass(frozen=True)
class FlavorRatios:
    """The observed hot ratios of one flavor."""

    flavor: str
    # One per measured instance and window, in the order read.
    ratios: tuple
    # Distinct instances (by uuid) measured at least once.
    instances: int
    # Documents (host and window) holding at least one measurement.
    windows: int

    @property
    def recommended(self):
        return recommend(self.ratios)


def by_flavor(docs):
    """{flavor name: FlavorRatios} of every flavor with a measured instance.

    Each (document, instance) that :func:`measured` yields is one ratio: an
    instance observed in three windows counts three times, as its working
    set may change from one window to the next.
    """
    ratios = {}
    uuids = {}
    windows = {}
    for number, doc in enumerate(docs):
        for _doc, inst in measured([doc]):
            flavor = inst['flavor']
            ratios.setdefault(flavor, []).append(float(inst['hot_ratio']))
            uuids.setdefault(flavor, set()).add(inst['uuid'])
            windows.setdefault(flavor, set()).add(number)
    return {flavor: FlavorRatios(flavor=flavor, ratios=tuple(values),
                                 instances=len(uuids[flavor]),
                                 windows=len(windows[flavor]))
            for flavor, values in sorted(ratios.items())}


def quantile(values, q):
    """The q-quantile of values, linear between order statistics."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError('no values')
    pos = q * (len(ordered) - 1)
    low = int(math.floor(pos))
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def recommend(ratios):
    """The pmem:hot_ratio to declare for a flavor observed at ``ratios``.

    The 95th percentile rounded up to the next 0.05, within (0, 1]: a
    flavor so declared counts at least the hot RAM of 19 in 20 of its
    observed instances.
    """
    top = quantile(ratios, RECOMMEND_QUANTILE)
    steps = math.ceil(top / RECOMMEND_STEP - 1e-9)
    return min(1.0, max(RECOMMEND_STEP, round(steps * RECOMMEND_STEP, 6)))


def under_declared(declared, ratios):
    """Whether a flavor declares less hot RAM than it was observed to use.

    True when the recommended value is above the declared one: more than
    one in twenty of its instances were hotter than it says.
    """
    return recommend(ratios) > declared + 1e-9
