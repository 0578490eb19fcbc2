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
"""The plan's records: its input, its output, its reasons and limits.

See :mod:`nova_pmem_filters.core.plans.rebalance` for what they mean together.
"""

import dataclasses
import math

ACT_ABOVE = 1.0
AIM_BELOW = 0.9
MAX_MOVES = 10
# Search nodes after which the best plan found is returned unproven.
MAX_NODES = 200000
# Instances of over hosts beyond which the exact search is not tried (its
# depth): the greedy plan is returned, unproven.
MAX_DEPTH = 250
# The cell a NUMA-bound guest is counted on where the host's cells are not
# known: the rules then decide host-wide (as the simulator counts).
HOST_CELL = 0
# Slack of the lower bounds, MB: they must never exceed the truth.
SLACK_MB = 1e-3

# Why a host over the threshold is left over, or was not judged.
UNMEASURED = 'unmeasured'
PROFILE_UNKNOWN = 'profile-unknown'
CELLS_UNKNOWN = 'cells-unknown'
NO_DESTINATION = 'no-destination'
NUMA_BOUND = 'numa-bound'
NO_ROOM = 'no-room'
CAP_REACHED = 'cap-reached'
SEARCH_LIMIT = 'search-limit'
REASONS = (UNMEASURED, PROFILE_UNKNOWN, CELLS_UNKNOWN, NO_DESTINATION,
           NUMA_BOUND, NO_ROOM, CAP_REACHED, SEARCH_LIMIT)

# Why a destination does not admit an instance, besides decide's REJECT_*.
REJECT_FLAVOR = 'flavor_invalid'
REJECT_HOST = 'not_a_destination'
REJECT_RAM = 'ram'
REJECT_VCPUS = 'vcpus'
REJECT_CELL_MEMORY = 'cell_memory'
REJECT_WORKING_SET = 'working_set'
REJECT_NOT_MOVABLE = 'not_movable'


class RebalanceError(ValueError):
    """An input :func:`plan` cannot work with, naming it."""


# --- input ---------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Instance:
    """One instance on a host.

    ``cells`` is ``((host cell, MB), ...)`` for an instance Nova placed
    with a NUMA topology, None for one that floats. An instance is
    NUMA-bound when it has cells or its flavor binds memory
    (:func:`~nova_pmem_filters.core.rules.charging.binds_memory`).
    """

    uuid: str
    name: str = None
    memory_mb: float = 0.0
    vcpus: float = 0
    extra_specs: dict = dataclasses.field(default_factory=dict, hash=False)
    working_set_mb: float = None
    cells: tuple = None
    # False: the caller may not move it (not running, outside an audit's
    # scope); it stays and still counts where it is.
    movable: bool = True


# Nova's vm_state of an instance (Watcher's InstanceState). Only an active
# one is moved: a live migration moves a running guest.
ACTIVE = 'active'
# No guest runs (stopped, suspended to disk, shelved): it touches no
# memory, so it has no working set, whatever its RAM in Placement.
NOT_RUNNING = frozenset(('stopped', 'suspended', 'shelved'))
# The compute API's server status where it is not the vm_state in capitals.
_API_STATES = {'shutoff': 'stopped'}


def vm_state(status):
    """Nova's vm_state of a server, from it or from the API's status."""
    state = str(status or '').strip().lower()
    return _API_STATES.get(state, state)


def instance(uuid, state, measured_mb, excluded=False, **fields):
    """The :class:`Instance` of a Nova instance: the doctor's and Watcher's.

    One rule for both, so that they plan alike. Its working set is the
    measured one; without one, 0 MB if no guest runs (:data:`NOT_RUNNING`:
    it holds RAM in Placement but touches none), else None (not measured:
    its host is not judged). It may move only if it is active (a live
    migration needs a running guest, and one mid-task waits) and the
    caller does not exclude it.

    :param state: Nova's vm_state (``active``, ``stopped``, ...) or the
        compute API's status (``ACTIVE``, ``SHUTOFF``, ...).
    :param measured_mb: its measured working set MB, None if not measured.
    :param fields: the other fields of :class:`Instance`.
    """
    state = vm_state(state)
    working_set = measured_mb
    if working_set is None and state in NOT_RUNNING:
        working_set = 0.0
    return Instance(uuid=uuid, working_set_mb=working_set,
                    movable=state == ACTIVE and not excluded, **fields)


@dataclasses.dataclass(frozen=True)
class Cell:
    """A NUMA cell of a host, with CPUs.

    ``free_memory_mb``: memory a NUMA-bound guest may still claim on it
    (its size x the RAM allocation ratio, less the memory of the NUMA-bound
    instances on it, as Nova's NUMA fit counts); None: not checked here.
    """

    id: int
    free_memory_mb: float = None


@dataclasses.dataclass(frozen=True)
class Host:
    """One compute host and what runs on it.

    ``free_ram_mb`` and ``free_vcpus``: what Placement still offers
    (capacity x allocation ratio, less reserved, less allocations).
    ``cells``: its :class:`Cell` list, None when its NUMA topology is not
    known (the rules then decide host-wide).
    """

    name: str
    profile: object = None
    free_ram_mb: float = 0.0
    free_vcpus: float = 0
    cells: tuple = None
    instances: tuple = ()


# --- output --------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Move:
    """One live migration of the plan.

    ``cells``: ``((cell, MB), ...)`` the plan counted a NUMA-bound guest on
    at the destination; None for a floating one, or where the
    destination's cells are not known.
    """

    instance: str
    name: str
    source: str
    destination: str
    memory_mb: float
    working_set_mb: float
    vcpus: float = 0
    cells: tuple = None


@dataclasses.dataclass(frozen=True)
class CellUsage:
    """A cell's charged working set against its near memory, MB."""

    id: int
    working_set_mb: float
    near_memory_mb: float


@dataclasses.dataclass(frozen=True)
class HostUsage:
    """A host's charged working set against its near memory, MB.

    ``working_set_mb`` is None when an instance's was not measured;
    ``near_memory_mb`` None on a host that is not tiered. ``over``: beyond
    ``act_above`` host-wide or on a cell; None when not known.
    """

    host: str
    mode: str
    working_set_mb: float
    near_memory_mb: float
    cells: tuple = ()
    over: bool = False


@dataclasses.dataclass(frozen=True)
class Unfixed:
    """A host over the threshold the plan leaves over, or could not judge.

    ``over`` is None when it is not known whether it is over (a profile or
    measurements missing).
    """

    host: str
    reason: str
    detail: str
    over: bool = True


@dataclasses.dataclass(frozen=True)
class Plan:
    """What :func:`plan` returns.

    ``over_before``: the hosts judged over ``act_above``; ``over_after``:
    those of them the moves do not bring to ``aim_below`` (hosts not
    judged are in ``unfixed`` and in neither). ``optimal``: the plan is
    proven best for the objective; ``nodes``: search nodes visited.
    """

    moves: tuple
    before: tuple
    after: tuple
    unfixed: tuple
    over_before: int
    over_after: int
    optimal: bool
    nodes: int
    act_above: float
    aim_below: float
    max_moves: int

    @property
    def memory_moved_mb(self):
        return math.fsum(m.memory_mb for m in self.moves)

    @property
    def objective(self):
        """(hosts left over, memory moved MB, instances moved)."""
        return (self.over_after, self.memory_moved_mb, len(self.moves))
