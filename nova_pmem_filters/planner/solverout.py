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
"""The solver's own lines kept off standard output.

HiGHS 1.12 (in scipy 1.17) prints a debug line with C's ``printf`` when it
repairs a MIP solution, whatever its output options
(``HighsMipSolverData::transformNewIntegerFeasibleSolution tmpSolver.run();``,
ERGO-Code/HiGHS#2783). On standard output that line would land inside a
plan printed with ``-f json`` or ``-f csv``. While a MIP is solved, file
descriptor 1 points to standard error; C's buffers are flushed before it
points back, so that nothing the solver printed reaches standard output
later.
"""

import contextlib
import ctypes
import os
import sys
import threading

_LOCK = threading.Lock()
# [how many solves are in the block, the descriptor of the real stdout]
_STATE = [0, None]


def _flush_c():
    """Flush C's stdio buffers (HiGHS's printf)."""
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):
        pass


def _enter():
    with _LOCK:
        if _STATE[0] == 0:
            try:
                sys.stdout.flush()
            except (AttributeError, OSError, ValueError):
                pass
            try:
                saved = os.dup(1)
            except OSError:
                saved = None
            if saved is not None:
                try:
                    os.dup2(2, 1)
                except OSError:
                    os.close(saved)
                    saved = None
            _STATE[1] = saved
        _STATE[0] += 1


def _leave():
    with _LOCK:
        _STATE[0] -= 1
        if _STATE[0] == 0 and _STATE[1] is not None:
            _flush_c()
            os.dup2(_STATE[1], 1)
            os.close(_STATE[1])
            _STATE[1] = None


@contextlib.contextmanager
def to_stderr():
    """What C code prints to standard output goes to standard error.

    Nests, and is shared by threads: standard output points back when the
    last block open ends. Where a descriptor cannot be duplicated (a
    closed stdout or stderr), nothing is redirected.
    """
    _enter()
    try:
        yield
    finally:
        _leave()
