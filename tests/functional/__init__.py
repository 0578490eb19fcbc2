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
"""Nova's monkey patching, before any module of these tests imports Nova.

As Nova's own ``nova/tests/functional/__init__.py`` does. Nova patches when
``nova.tests.functional`` is first imported, but the test modules import
``nova.conf`` and ``nova.context`` before that, and ``nova.context``
imports oslo.db's enginefacade: its per-thread store of a context's open
transaction was then a real thread's, shared by every greenthread of the
services. A greenthread reading with a context (a READER transaction) let
another one that writes with the same context fail with "Can't upgrade a
READER transaction to a WRITER mid-transaction": the compute's claim,
saving the compute node record with the context it was created with.
"""

# Nova 31 (2025.1) patches when the module is imported; from Nova 32
# (2025.2), which began the move to native threads, patching is a call.
from nova import monkey_patch  # noqa: E402
if hasattr(monkey_patch, 'patch'):  # noqa: E305
    monkey_patch.patch()


def native_threads():
    """Whether Nova runs its services in native threads, not eventlet.

    OS_NOVA_DISABLE_EVENTLET_PATCHING=true (Nova 32 and later; the default
    of the services from Nova 33) makes Nova's monkey patching start the
    threading backend; Nova 31 always patches.
    """
    from nova import utils
    mode = getattr(utils, 'concurrency_mode_threading', None)
    return bool(mode and mode())
