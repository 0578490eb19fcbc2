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
"""Child processes of the host tools: what discovery and the observer share.

Both run a tool (``ipmctl``, ``ndctl``, ...) in a session of its own
(``start_new_session=True``), so that a tool that does not answer in time
is ended with every process it started.
"""

import os
import signal


def kill_group(proc):
    """Kill the process group of ``proc`` and reap it; best effort.

    :param proc: a ``subprocess.Popen`` started with
        ``start_new_session=True`` (its pid is its group's id).
    """
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        proc.communicate(timeout=5)
    except Exception:
        # Best effort; under eventlet's monkey patching (a process that
        # also loaded Nova) the timeout is green subprocess's own class.
        pass
