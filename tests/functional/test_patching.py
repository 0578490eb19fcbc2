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
"""The services of a functional test keep their transactions apart.

Under eventlet, Nova's services run in greenthreads of one thread. oslo.db
keeps the open transaction of a context per thread: unless Nova's monkey
patching came before oslo.db was imported (``tests/functional/__init__.py``),
that is per real thread, and a greenthread writing with a context that
another one reads with fails ("Can't upgrade a READER transaction to a
WRITER mid-transaction"). In native threads (``tox -e functional-threads``)
each thread has its own.
"""

import threading

from nova import context as nova_context
from oslo_db.sqlalchemy import enginefacade
import testtools

from tests import functional


class TransactionPerGreenthreadTest(testtools.TestCase):

    def test_a_greenthread_does_not_see_another_ones_transaction(self):
        ctxt = nova_context.get_admin_context()
        mine = enginefacade._transaction_contexts_by_thread(ctxt)
        mine.current = 'a READER transaction of this greenthread'
        self.addCleanup(delattr, mine, 'current')

        def current():
            theirs = enginefacade._transaction_contexts_by_thread(ctxt)
            return getattr(theirs, 'current', None)

        if functional.native_threads():
            seen = []
            thread = threading.Thread(target=lambda: seen.append(current()))
            thread.start()
            thread.join()
            self.assertEqual([None], seen)
        else:
            # Nova imports no eventlet in native threads; here it patched.
            import eventlet
            self.assertIsNone(eventlet.spawn(current).wait())
