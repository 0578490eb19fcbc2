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
"""Boots that the scheduler runs at once, as a busy cloud sends them.

The servers of test_placement_accounting, booted by eight clients at once
instead of one after another: the scheduler runs their select_destinations
side by side, in greenthreads under eventlet (``tox -e functional``) and in
native threads, Nova's default since 2026.1 (``tox -e functional-threads``,
which sets OS_NOVA_DISABLE_EVENTLET_PATCHING). The filters and weighers
share the ledger and the request memos between those requests.

What the design promises, checked against the serial run of the same cloud
(the inherited test, in the same mode):

* Placement claims each server's near memory atomically: the concurrent
  boots admit exactly as many servers as the serial ones, and no host holds
  more near memory than its inventory, whatever the interleaving.
* Nothing of ours fails: no "unexpected error" of a filter or weigher, no
  traceback through nova_pmem_filters in any service's log.

In native threads the concurrent boots are skipped: Nova's in-process cell
database fixture (``CellDatabases``, Nova 34) deadlocks when two API
requests check quotas at once, one waiting for its write lock while
holding a read lock the others wait behind, before any scheduling. There
the ledger's interleavings are proven in
tests/unit/scheduler/test_ledger_threads.py, and nova-scheduler runs in
native threads under the integration suite's concurrent load.
"""

import concurrent.futures

from tests import functional
from tests.functional import base
from tests.functional import test_placement_accounting as accounting

RC = accounting.RC
CLIENTS = 8


class ConcurrentBootsTest(accounting.PlacementAccountingWithFilterTest):

    def test_concurrent_boots_admit_what_serial_boots_admit(self):
        if functional.native_threads():
            self.skipTest("Nova's CellDatabases fixture deadlocks on "
                          'concurrent API requests in native threads')
        capacity = {host: self._capacity(host, RC, self.request_mb)
                    for host in accounting.DRAM_GB}
        # The serial test (inherited, same mode) admits exactly these.
        expected = sum(capacity.values())
        attempts = expected + CLIENTS

        def post(_n):
            return self.api.post_server({'server': self._build_server(
                flavor_id=self.flavor, image_uuid=base.IMAGE,
                networks='none')})

        with concurrent.futures.ThreadPoolExecutor(CLIENTS) as clients:
            posted = list(clients.map(post, range(attempts)))
        servers = [self._wait_for_state_change(s, ('ACTIVE', 'ERROR'))
                   for s in posted]
        active = [s for s in servers if s['status'] == 'ACTIVE']
        self.assertEqual(expected, len(active))
        for server in servers:
            if server['status'] == 'ERROR':
                self._assert_no_valid_host(server)
        for host, fits in capacity.items():
            on_host = [s for s in active if self._host_of(s) == host]
            self.assertEqual(fits, len(on_host), host)
            self.assertEqual(fits * self.request_mb,
                             self._near_memory_used(host), host)
        self.assertNotIn('fails pmem cache check', self.pmem_log.output)
        self._assert_no_traceback_through_us()

    def _assert_no_traceback_through_us(self):
        output = self.stdlog.logger.output
        for block in output.split('Traceback (most recent call last):')[1:]:
            self.assertNotIn('nova_pmem_filters', block.split('\n\n')[0])
