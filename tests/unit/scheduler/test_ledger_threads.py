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
"""The ledger shared by requests that run at once.

Since Nova 33 (2026.1) nova-scheduler runs its requests in native threads:
two passes of the one ledger interleave anywhere. These tests put another
request's write at the worst place of a pass, deterministically, and show
that a variant written as the ledger was before fails there. The stress
test then runs eight threads of passes at once in a process without
eventlet: no pass may fail or count other than a serial pass (the ledger
as it was fails it with "dictionary changed size during iteration").
"""

import json
import os
import subprocess
import sys
import textwrap

from oslo_utils.fixture import uuidsentinel as uuids
import testtools

from nova_pmem_filters.scheduler import ledger
from tests.unit import fakes
from tests.unit import paths


class _Interleaving(dict):
    """The ledger's entries, where another request adds one mid-iteration."""

    def __init__(self, *args, write=None):
        super().__init__(*args)
        self.write = write

    def items(self):
        for n, item in enumerate(super().items()):
            if n == 0 and self.write is not None:
                write, self.write = self.write, None
                write(self)
            yield item


class _UnsafeLedger(ledger.HotRamLedger):
    """The ledger's prune as it was: it iterates the shared dicts."""

    def _prune(self, now, ttl):
        if now - self._last_prune < max(ttl, 60):
            return
        self._last_prune = now
        horizon = now - 2 * max(ttl, 60)
        self._entries = {uuid: entry for uuid, entry in self._entries.items()
                         if entry.time >= horizon}
        self._hosts = {host: record for host, record in self._hosts.items()
                       if record.oldest >= horizon}


class InterleavedPassesTestCase(fakes.PmemTestCase):

    def setUp(self):
        super().setUp()
        self.flags(instance_cache_ttl=60, group='pmem')

    def _prune_while_a_request_adds(self, book):
        book._entries = _Interleaving(
            {uuids.old: ledger.Entry('host1', 1.0, self.now, None, 1.0,
                                     None)},
            write=lambda entries: entries.__setitem__(
                uuids.new, ledger.Entry('host2', 2.0, self.now, None, 2.0,
                                        None)))
        self.now += 1000
        book._prune(self.now, 60)

    def test_prune_while_another_request_adds(self):
        self._prune_while_a_request_adds(self.ledger)
        # Both entries were older than the horizon: gone, and no error.
        self.assertEqual({}, self.ledger._entries)

    def test_the_unsafe_variant_fails_there(self):
        unsafe = _UnsafeLedger(clock=lambda: self.now)
        self.assertRaisesRegex(RuntimeError, 'changed size during iteration',
                               self._prune_while_a_request_adds, unsafe)

    def test_a_pass_reads_what_it_loaded_after_a_prune(self):
        # Another request prunes (replaces the ledger's dicts) while this
        # pass waits for the database: the pass still counts what it
        # loaded, instead of calling the host's usage unknown.
        host1 = fakes.host('host1', instances=[
            self.instance(uuids.a, 2048, {'pmem:hot_ratio': '0.5'})])
        real = self._get_by_filters

        def get_by_filters(*args, **kwargs):
            self.ledger._entries = {}
            self.ledger._hosts = {}
            return real(*args, **kwargs)

        self.get_by_filters.side_effect = get_by_filters
        (usage,) = self.ledger.usage_of([host1])
        self.assertEqual(1024.0, usage.total)

    def test_a_record_read_by_another_request_is_not_changed(self):
        # A renewed record is a new one: a request that holds the old one
        # sees the instances it summed, never half of a renewal.
        bare = [self.instance(uuids.a, 2048, {'pmem:hot_ratio': '0.5'})]
        self.ledger.usage_of([fakes.host('host1', instances=bare)])
        held = self.ledger._hosts['host1']
        before = (held.instances, held.objects)
        again = fakes.host('host1', instances=[
            self.instance(uuids.a, 2048, {'pmem:hot_ratio': '0.5'})])
        (usage,) = self.ledger.usage_of([again])
        self.assertEqual(1024.0, usage.total)
        self.assertIsNot(held, self.ledger._hosts['host1'])
        self.assertEqual(before, (held.instances, held.objects))
        self.assertIs(before[0], held.instances)
        self.assertIs(again.instances,
                      self.ledger._hosts['host1'].instances)


# Many passes of one ledger in native threads, in a process of its own (the
# unit tests' processes carry eventlet's patching, whose threads are
# greenthreads). Each pass must count what a serial pass counts.
_STRESS = textwrap.dedent('''
    import itertools, json, sys, threading
    from nova import context
    from nova import objects
    objects.register_all()
    from nova_pmem_filters.scheduler import ledger

    class Host:
        def __init__(self, name, instances):
            self.host, self.nodename = name, name + '-node'
            self.instances = instances

    ctxt = context.get_admin_context()
    hosts = []
    for h in range(40):
        instances = {}
        for i in range(10):
            uuid = '%08d-0000-0000-0000-%012d' % (h, i)
            flavor = objects.Flavor(
                name='f', flavorid='f', memory_mb=1024 * (1 + i % 4),
                vcpus=1, root_gb=1, ephemeral_gb=0, swap=0,
                extra_specs={'pmem:hot_ratio': '0.25'})
            instances[uuid] = objects.Instance(ctxt, uuid=uuid,
                                               flavor=flavor)
        hosts.append(Host('host%d' % h, instances))
    expected = [u.total for u in ledger.HotRamLedger().usage_of(hosts)]
    # Every pass prunes: the clock moves past the interval each call.
    clock = itertools.count(step=10000).__next__
    book = ledger.HotRamLedger(clock=clock)
    sys.setswitchinterval(1e-6)
    errors, wrong = [], []

    def passes(offset):
        try:
            for n in range(60):
                start = (offset + n) % 20
                some = hosts[start:start + 20]
                got = [u.total for u in book.usage_of(some)]
                if got != expected[start:start + 20]:
                    wrong.append((offset, n))
        except Exception as exc:
            errors.append(repr(exc))

    threads = [threading.Thread(target=passes, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps({'errors': errors, 'wrong': len(wrong),
                      'hosts': len(expected)}))
''')


class NativeThreadsStressTestCase(testtools.TestCase):

    def test_passes_at_once_count_what_a_serial_pass_counts(self):
        proc = subprocess.run(
            [sys.executable, '-c', _STRESS], capture_output=True, text=True,
            timeout=600, cwd=paths.of(),
            env=dict(os.environ, OS_NOVA_DISABLE_EVENTLET_PATCHING='true'))
        self.assertEqual(0, proc.returncode, proc.stderr[-3000:])
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        self.assertEqual({'errors': [], 'wrong': 0, 'hosts': 40}, result)
