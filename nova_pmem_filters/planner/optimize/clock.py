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
"""The time limit: what it cut short.

Each stage of the optimiser works to a share of the time limit. A stage
the clock stopped (a HiGHS call that reached its time limit, or a deadline
passed before the stage could do its work) found what the machine's speed
allowed: on a faster or less loaded machine the same inputs can give
another fleet, or prove more. Where the clock stopped nothing, the answer
depends on the inputs and the limits alone. A solve records what the clock
cut (:func:`watch`), so that its plan can say which of the two it is.

Independent solves (the pricing problems of a round) run side by side
(:func:`each`); their answers are taken in the order they were asked, so
the threads change how long a round takes, not what it finds. A stage may
also run beside another (:func:`beside`): a fleet sought while the bound
rises.
"""

from concurrent import futures
import contextlib
import contextvars
import os
import time

from scipy import optimize as sp_optimize

from nova_pmem_filters.planner import solverout

# scipy.optimize.milp's status when HiGHS stops at a limit: the optimiser
# sets no other limit than time.
_LIMIT_REACHED = 1

# Threads :func:`each` runs at most, whatever the CPUs.
MAX_THREADS = 8

# The lists of the watches open, innermost last.
_WATCHES = contextvars.ContextVar('planner_optimize_watches', default=())
# The calls running beside the caller (:func:`beside`): each keeps a CPU.
_BESIDE = contextvars.ContextVar('planner_optimize_beside', default=())


@contextlib.contextmanager
def watch():
    """A list of what the time limit cut short while in the block.

    Watches nest: what is cut in an inner one is cut in the outer ones.
    """
    cut = []
    token = _WATCHES.set(_WATCHES.get() + (cut,))
    try:
        yield cut
    finally:
        _WATCHES.reset(token)


def cut(what):
    """Record that the time limit cut ``what`` short."""
    for record in _WATCHES.get():
        record.append(what)


def milp(what, *args, **kwargs):
    """``scipy.optimize.milp``, recording when it stopped at its limit.

    HiGHS's own lines go to standard error (``planner.solverout``).
    """
    with solverout.to_stderr():
        res = sp_optimize.milp(*args, **kwargs)
    if res.status == _LIMIT_REACHED:
        cut(what)
    return res


def timed(what, seconds, call, *args, **kwargs):
    """``call(*args, **kwargs)``, given ``seconds`` to run.

    For a call that does not say whether it stopped at its limit: one that
    ran that long is taken as stopped (it may have finished just then).
    """
    started = time.monotonic()
    result = call(*args, **kwargs)
    if seconds is not None and time.monotonic() - started >= seconds:
        cut(what)
    return result


def threads():
    """How many solves :func:`each` runs side by side: the CPUs it may use.

    Less one for each call still running beside the caller
    (:func:`beside`), which keeps a CPU of its own.
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    running = sum(1 for future in _BESIDE.get() if not future.done())
    return max(1, min(cpus, MAX_THREADS) - running)


def each(call, items):
    """``[call(item) for item in items]``, the calls side by side.

    HiGHS releases the GIL while it solves, and each thread that calls it
    gets its own HiGHS workers (its task executor is per thread), so
    independent solves run on as many CPUs as the process may use
    (:func:`threads`). Each call runs in the caller's context (what the
    time limit cuts short is recorded in the caller's :func:`watch`); the
    results come in the order of ``items``, whatever order the calls end
    in, and the first exception raised is raised here.
    """
    items = list(items)
    workers = min(len(items), threads())
    if workers <= 1:
        return [call(item) for item in items]
    with futures.ThreadPoolExecutor(
            max_workers=workers,
            thread_name_prefix='planner-solve') as pool:
        jobs = [pool.submit(contextvars.copy_context().run, call, item)
                for item in items]
        return [job.result() for job in jobs]


@contextlib.contextmanager
def beside(call, *args):
    """``call(*args)`` in another thread while the block runs: its future.

    The call runs in the caller's context (what the time limit cuts short
    is recorded in the caller's :func:`watch`); while it runs, the block's
    solves side by side (:func:`each`) leave it a CPU. Leaving the block
    waits for it, so it must end by a deadline of its own.
    ``future.result()`` gives its answer, or raises what it raised. It
    must not touch what the block changes: give it its own copy
    (``Master.copy``).
    """
    with futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix='planner-beside') as pool:
        future = pool.submit(contextvars.copy_context().run, call, *args)
        token = _BESIDE.set(_BESIDE.get() + (future,))
        try:
            yield future
        finally:
            _BESIDE.reset(token)
