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
"""Traces of boots and deletes: synthetic ones and CSV files."""

import csv
import io
import math

import numpy as np

from nova_pmem_filters import fileutil
from nova_pmem_filters.planner import errors
from nova_pmem_filters.planner.simulate import engine

# The most events a simulation replays (about a minute and a few hundred
# MB): a longer trace is refused before it is drawn or read, not replayed
# for hours or out of memory.
MAX_EVENTS = 1000000


def expected_events(mix, days, lifetime_days):
    """Events of a synthetic trace, on average: a boot and a delete per VM.

    Boots arrive at ``VMs / lifetime`` per day (Little's law); each has at
    most one delete.
    """
    vms = sum(max(float(n), 0.0) for n in mix.values())
    return 2.0 * vms * float(days) / float(lifetime_days)


def check_synthetic(mix, days, lifetime_days, sample_days=None):
    """Refuse a synthetic trace a simulation cannot finish; one line.

    From the arguments alone, before anything is allocated: more than
    :data:`MAX_EVENTS` events on average, or (with ``sample_days``) more
    than :data:`engine.MAX_SAMPLES` samples.
    """
    if not days > 0 or not lifetime_days > 0:
        raise errors.PlannerError('a synthetic trace needs days and '
                                  'lifetime above 0')
    events = expected_events(mix, days, lifetime_days)
    if events > MAX_EVENTS:
        raise errors.PlannerError(
            '--days %s: a synthetic trace of about %.3g events (a boot and '
            'a delete per VM: %s VMs of the mix living %s days on average), '
            'more than the %d events a simulation replays; shorten --days, '
            'lengthen --lifetime-days or lower --mix'
            % (_num(days), events, _num(sum(mix.values())),
               _num(lifetime_days), MAX_EVENTS))
    if sample_days is not None and days / sample_days > engine.MAX_SAMPLES:
        raise errors.PlannerError(
            '--days %s at --sample-days %s: %s samples, more than the %d '
            'samples a simulation takes; shorten --days or sample less '
            'often' % (_num(days), _num(sample_days),
                       _num(math.ceil(days / sample_days)),
                       engine.MAX_SAMPLES))


def _num(value):
    return '%d' % value if float(value).is_integer() else '%g' % value


def synthetic(mix, days=365.0, lifetime_days=30.0, seed=0, burst=None):
    """A seeded trace of boots and deletes.

    :param mix: {flavor name: VMs wanted in steady state}; each flavor's
        boots arrive as a Poisson process at ``VMs / lifetime`` per day
        (Little's law) and each VM lives an exponential time of mean
        ``lifetime_days``.
    :returns: events ordered by time (seconds), deletes before boots at the
        same time.
    :raises errors.PlannerError: for more than :data:`MAX_EVENTS` events
        on average (:func:`check_synthetic`), before drawing any.
    """
    check_synthetic(mix, days, lifetime_days)
    rng = np.random.default_rng(seed)
    events = []
    serial = 0
    for name in sorted(mix):
        wanted = mix[name]
        if wanted <= 0:
            continue
        rate = wanted / lifetime_days
        count = rng.poisson(rate * days)
        starts = np.sort(rng.uniform(0.0, days, count))
        lives = rng.exponential(lifetime_days, count)
        for start, life in zip(starts, lives):
            serial += 1
            uuid = 'vm-%06d' % serial
            events.append(engine.Event(start * engine.SECONDS_PER_DAY,
                                       engine.BOOT, uuid, name))
            if start + life < days:
                events.append(
                    engine.Event((start + life) * engine.SECONDS_PER_DAY,
                                 engine.DELETE, uuid, name))
    events.sort(key=lambda e: (e.time, e.kind != engine.DELETE, e.instance))
    return events


CSV_FIELDS = ('time', 'event', 'instance', 'flavor')


def read_csv(path, flavors):
    """Events from a CSV file with the columns of ``CSV_FIELDS``.

    ``time`` is in seconds; ``event`` boot or delete. An instance boots
    while it is not running and is deleted while it is (a boot Nova refused
    still counts as its boot). A line that cannot be read is named with its
    number, and so is the first beyond :data:`MAX_EVENTS` events.
    """
    try:
        data = fileutil.read_bytes(path)
    except OSError as exc:
        raise errors.TraceError('%s: cannot read the trace: %s'
                                % (path, exc.strerror or exc))
    try:
        text = data.decode('utf-8')
    except UnicodeDecodeError as exc:
        raise errors.TraceError('%s: line %d: not UTF-8 text'
                                % (path, data.count(b'\n', 0, exc.start) + 1))
    reader = csv.reader(io.StringIO(text, newline=''))
    try:
        return _read_events(path, reader, flavors)
    except csv.Error as exc:
        raise errors.TraceError('%s: line %d: %s'
                                % (path, reader.line_num, exc))


def _read_events(path, reader, flavors):
    events = []
    header = next(reader, None)
    if header is None or [h.strip() for h in header] != list(CSV_FIELDS):
        raise errors.TraceError('%s: line 1: expected the header %s'
                                % (path, ','.join(CSV_FIELDS)))
    last = -math.inf
    # The instances running, with the line of their boot.
    running = {}
    for row in reader:
        line = reader.line_num
        if not row or not ''.join(row).strip():
            continue
        if len(events) >= MAX_EVENTS:
            raise errors.TraceError(
                '%s: line %d: more than the %d events a simulation replays; '
                'replay a shorter trace' % (path, line, MAX_EVENTS))
        if len(row) != len(CSV_FIELDS):
            raise errors.TraceError(
                '%s: line %d: expected %d fields (%s), '
                'got %d' % (path, line, len(CSV_FIELDS),
                            ','.join(CSV_FIELDS), len(row)))
        text, kind, uuid, flavor = (v.strip() for v in row)
        try:
            when = float(text)
        except ValueError:
            when = math.nan
        if not math.isfinite(when) or when < 0:
            raise errors.TraceError(
                '%s: line %d: time %r is not a number of '
                'seconds, 0 or more' % (path, line, text))
        if when < last:
            raise errors.TraceError(
                '%s: line %d: time %s is before the line '
                'above' % (path, line, text))
        if kind not in engine.EVENTS:
            raise errors.TraceError(
                '%s: line %d: event %r is not one of %s'
                % (path, line, kind, ', '.join(engine.EVENTS)))
        if not uuid:
            raise errors.TraceError(
                '%s: line %d: no instance' % (path, line))
        if flavor not in flavors:
            raise errors.TraceError(
                '%s: line %d: unknown flavor %r (known: '
                '%s)' % (path, line, flavor,
                         ', '.join(sorted(flavors))))
        if kind == engine.BOOT:
            if uuid in running:
                raise errors.TraceError(
                    '%s: line %d: instance %s boots again; it booted on '
                    'line %d and was not deleted'
                    % (path, line, uuid, running[uuid]))
            running[uuid] = line
        elif running.pop(uuid, None) is None:
            raise errors.TraceError(
                '%s: line %d: instance %s is deleted but is not running '
                '(no boot above, or deleted already)' % (path, line, uuid))
        last = when
        events.append(engine.Event(when, kind, uuid, flavor))
    if not events:
        raise errors.TraceError(
            '%s: no events after the header; a trace needs one boot at '
            'least' % path)
    return events


def write_csv(events, handle):
    writer = csv.writer(handle, lineterminator='\n')
    writer.writerow(CSV_FIELDS)
    for e in events:
        writer.writerow(('%.3f' % e.time, e.kind, e.instance, e.flavor))
