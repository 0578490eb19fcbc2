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
"""Every document the observer writes parses back to the same values.

Whole windows on fake hosts (:func:`windows`): with and without a host
profile, for every host kind, with cells from the profile or from the
nodes, measured with DAMON or reference bits, with gaps. Each is written
as ``nova-pmem-observe --output`` writes it and read back as the planner,
the doctor and the Prometheus export read it; the text is byte for byte
what the observer wrote before the format had a module of its own
(``data/observations/*.json``, written by the observer of commit
5d3eb3c): the format is public, it may grow, never change.
"""

import json
import os
import shutil
import types

import fixtures
import testtools

from nova_pmem_filters.core.formats import discoveredhost

from nova_pmem_filters.core.formats import hostfile
from nova_pmem_filters.core.formats import observation
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.observe import counters
from nova_pmem_filters.observe import host
from nova_pmem_filters.observe import procfs
from tests.unit.observe import fakehost

GOLDEN = os.path.join(os.path.dirname(__file__), 'data', 'observations')
# Stands for the fake host's directory in the golden files.
ROOT = '$ROOT'
# Keys version 1 grew after the golden files were written (version-1
# extensions): the document's and an instance's.
GROWN = ('tiering',)
GROWN_INSTANCE = ('near_resident_mb', 'far_resident_mb', 'hot_on_far_mb',
                  'bound_off_node_mb')


def profile(mode, cells=False):
    """The host profile of a host of ``mode`` (a hardware mode)."""
    tiered = kinds.scheduler_kind(mode) in kinds.TIERED
    data = {'schema': hostfile.SCHEMA, 'hostname': 'compute-%s' % mode,
            'mode': mode, 'scheduler_mode': kinds.scheduler_kind(mode),
            'visible_memory_gb': 1024.0, 'dram_gb': 192.0,
            'dram_cache_gb': 192.0 if tiered else 0.0}
    if cells:
        data['dram_cache_gb_per_cell'] = '0:96,1:96'
    return discoveredhost.parse(data, 'compute-%s.json' % mode)


class FakeHost(fakehost.TwoGuestHost):
    """Two instances; nodes 0 and 1 with CPUs, node 2 CPU-less."""

    def __init__(self, root):
        super().__init__(root, (
            {'pgpromote_success': 1000, 'pgdemote_kswapd': 500},
            {'pgpromote_success': 7000, 'pgdemote_kswapd': 2900}))

    def observe(self, on_sleep=None, **kwargs):
        def after():
            self.write_vmstat(1)
            if on_sleep:
                on_sleep()
        clock = fakehost.Clock(after)
        kwargs.setdefault('backends', host.default_backends())
        return host.observe(60.0, paths=self.paths, hostname='compute-01',
                            clock=lambda: 1795608000.0,
                            monotonic=clock.monotonic, sleep=clock.sleep,
                            **kwargs)


def _ipmctl():
    """Counters whose ipmctl reads 1 MiB/s of media reads, 0.5 written."""
    readings = iter(['before', 'after'])
    values = {'before': {'0x0001': {'media_reads': 1000,
                                    'media_writes': 10}},
              'after': {'0x0001': {'media_reads': 1000 + 983040,
                                   'media_writes': 10 + 491520}}}
    return types.SimpleNamespace(
        run_ipmctl_performance=lambda: next(readings),
        ipmctl_performance=values.__getitem__,
        media_rates=counters.media_rates, vmstat=counters.vmstat,
        tiering_rates=counters.tiering_rates)


def _damon(measurements):
    def measure(pids, window_s, admin, sleep):
        sleep(window_s)
        return measurements
    return types.SimpleNamespace(usable=lambda admin: (True, 'ok'),
                                 measure=measure)


def windows(root):
    """{name: the document of one window}, each on a fresh fake host."""
    found = {}

    def window(name, prepare=None, during=None, **kwargs):
        """``prepare(fake)`` before the window, ``during(fake)`` in it."""
        fake = FakeHost(os.path.join(root, name))
        if prepare:
            prepare(fake)
        if during:
            kwargs['on_sleep'] = lambda: during(fake)
        mods = kwargs.pop('mods', {})
        kwargs['backends'] = host.Backends(
            procfs=procfs, damon=mods.get('damon', host.damon),
            counters=mods.get('counters', counters))
        found[name] = fake.observe(**kwargs)

    window('kernel-tiered-reference-bits')
    window('damon', mods={'damon': _damon({
        101: procfs.Measurement(512.0, None),
        102: procfs.Measurement(None, 'pid 102: exited')})})
    window('damon-not-usable', method=host.DAMON)
    window('process-exits', during=lambda fake: shutil.rmtree(
        os.path.join(fake.proc, '102'), ignore_errors=True))
    for mode in kinds.HARDWARE_MODES:
        ipmctl = kinds.scheduler_kind(mode) == kinds.MEMORY_MODE
        mods = {'counters': _ipmctl()} if ipmctl else {}
        window('profile-%s' % mode, prof=profile(mode), mods=mods)
        if kinds.scheduler_kind(mode) in kinds.TIERED:
            window('profile-%s-cells' % mode, prof=profile(mode, True),
                   mods={'counters': _ipmctl()} if ipmctl else {})
    window('no-libvirt', prepare=lambda fake: shutil.rmtree(fake.libvirt))
    window('bad-numa-maps', prepare=lambda fake: fakehost.write(
        os.path.join(fake.proc, '101', 'numa_maps'), 'x'))
    return found


def text(doc, root):
    """The file ``--output`` writes, with the fake host's root as $ROOT."""
    if isinstance(doc, dict):
        # The observer before the format had a module of its own.
        written = json.dumps(doc, indent=2) + '\n'
    else:
        written = observation.dumps(doc)
    return written.replace(root, ROOT)


def as_before(doc):
    """The file without the keys version 1 grew since the golden files."""
    data = doc.to_dict()
    for key in GROWN:
        data.pop(key, None)
    for inst in data['instances']:
        for key in GROWN_INSTANCE:
            inst.pop(key, None)
    return data


class RoundTripTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path
        self.windows = windows(self.root)

    def test_every_window_parses_back_to_the_same_values(self):
        self.assertGreater(len(self.windows), 12)
        for name, doc in sorted(self.windows.items()):
            written = observation.dumps(doc)
            back = observation.parse(json.loads(written), name)
            self.assertEqual(doc, back, name)
            # And writes the same bytes again.
            self.assertEqual(written, observation.dumps(back), name)

    def test_read_from_the_file_as_the_readers_read_it(self):
        out = os.path.join(self.root, 'out')
        os.mkdir(out)
        for name, doc in self.windows.items():
            with open(os.path.join(out, name + '.json'), 'w') as f:
                f.write(observation.dumps(doc))
        # load reads in file-name order.
        expected = [doc for _name, doc in sorted(
            self.windows.items(), key=lambda kv: kv[0] + '.json')]
        self.assertEqual(expected, observation.load(out))

    def test_the_windows_cover_what_the_format_holds(self):
        docs = self.windows
        methods = {i.method for d in docs.values() for i in d.instances}
        self.assertEqual({None, observation.DAMON,
                          observation.REFERENCE_BITS}, methods)
        self.assertEqual(set(kinds.HARDWARE_MODES) - {kinds.MIXED} | {
            kinds.MEMORY_MODE}, {d.profile.pmem_mode for d in docs.values()
                                 if d.profile is not None})
        self.assertIsNone(docs['damon'].profile)
        self.assertEqual((), docs['profile-dram'].profile.cells)
        self.assertEqual((0, 1), tuple(
            c.id for c in docs['profile-memory_mode-cells'].profile.cells))
        far = docs['profile-memory_mode'].far_memory
        self.assertEqual((1.0, 0.5), (far.media_read_mb_per_s,
                                      far.media_write_mb_per_s))
        self.assertEqual(100.0, docs['profile-cxl_kmem'].far_memory
                         .promote_pages_per_s)
        self.assertEqual({0: 3072.0, 2: 1024.0}, docs[
            'kernel-tiered-reference-bits'].instances[0].numa_mb)
        self.assertEqual(frozenset([2]), docs[
            'kernel-tiered-reference-bits'].cpuless_nodes)
        self.assertTrue(docs['no-libvirt'].gaps)
        self.assertEqual(0, docs['no-libvirt'].host.working_set_mb)

    @fakehost.needs_nova_extra_specs
    def test_same_bytes_as_the_observer_wrote_before(self):
        # The format may grow, never change: without the keys it grew, a
        # window is the bytes the observer wrote before.
        names = sorted(n[:-len('.json')] for n in os.listdir(GOLDEN))
        self.assertEqual(sorted(self.windows), names)
        for name in names:
            with open(os.path.join(GOLDEN, name + '.json')) as f:
                self.assertEqual(f.read(), text(
                    as_before(self.windows[name]), self.root), name)

    @fakehost.needs_nova_extra_specs
    def test_the_grown_keys_are_the_optional_ones(self):
        # Only keys a reader of an older file reads as null may grow.
        self.assertEqual(GROWN, observation.Observation.optional)
        self.assertEqual(GROWN_INSTANCE, observation.Instance.optional)
        doc = self.windows['kernel-tiered-reference-bits']
        self.assertIsNotNone(doc.tiering)
        for key in GROWN_INSTANCE:
            self.assertTrue(any(getattr(inst, key) is not None
                                for inst in doc.instances), key)
        # A golden file (no grown key) reads with them null.
        with open(os.path.join(GOLDEN, 'damon.json')) as f:
            old = observation.parse(json.loads(f.read().replace(
                ROOT, self.root)), 'damon.json')
        self.assertIsNone(old.tiering)
        for key in GROWN_INSTANCE:
            self.assertIsNone(getattr(old.instances[0], key), key)
        self.assertEqual(as_before(self.windows['damon']), old.to_dict())
