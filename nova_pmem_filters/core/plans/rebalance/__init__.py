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
"""The rebalancing plan: which instances to move where, and why not more.

A tiered host whose measured working set has grown past its near memory
serves hot pages from the slow tier. :func:`plan` works out, from the
hosts, the instances on each with their flavors and measured working sets,
and the core's rules, which instances to move to which hosts so that the
hosts over their near memory are back under it. The doctor
(``working-set-over-near-memory``) and the Watcher strategy both call it;
it imports nothing from Nova or Watcher and changes nothing.

Input
    :class:`Host` per compute host: its name, its :class:`~nova_pmem_filters.
    core.rules.profile.HostProfile` (None when it could not be read), its free
    RAM MB and vCPUs as Placement counts them (capacity x allocation ratio,
    less reserved, less allocations), its NUMA cells with CPUs
    (:class:`Cell`, with each cell's free memory for NUMA-bound guests as
    Nova's NUMA fit counts it; None: no topology known) and its
    :class:`Instance` list: uuid, name, flavor RAM MB, vCPUs and extra
    specs, measured working set MB (None: not measured) and, for a
    NUMA-bound instance, the host cells it sits on
    (``((cell, MB), ...)``).

Options
    ``act_above``: a host (or one of its cells) is *over* when the working
    set it is charged exceeds ``act_above`` x its near memory (default 1.0,
    what the doctor calls over). ``aim_below``: after the plan every host
    it fixes and every destination is at or below ``aim_below`` x its near
    memory (default 0.9), so that the next audit finds nothing to do: the
    plan does not oscillate. ``max_moves``: at most this many migrations.
    ``cache_overcommit_ratio`` and ``defaults``: the scheduler's
    ``[pmem]`` settings, for the rules a destination must pass.

Rules
    * What a host is charged is the core's: the instances' measured working
      sets where the core charges hot RAM, their whole RAM where
      :func:`~nova_pmem_filters.core.rules.charging.whole_ram` says so
      (NUMA-bound guests on ``cxl_kmem``, every guest where its kernel does not
      tier); floating instances spread over the cells in proportion to their
      near memory, bound ones on their cells; over or not, host-wide or cell by
      cell, is :func:`~nova_pmem_filters.core.rules.decide.overcommitted` with
      the threshold as its ratio.
    * A destination admits an instance by every rule of the core:
      PmemModeFilter's
      (:func:`~nova_pmem_filters.core.rules.decide.mode_passes`),
      PmemCacheFilter's
      (:func:`~nova_pmem_filters.core.rules.decide.cache_check` on the declared
      hot RAM already there plus the plan's earlier moves to it, on the cells
      the plan gives a NUMA-bound guest), the RAM and vCPU room, each cell's
      free memory for a bound guest; and on a tiered destination the measured
      working sets stay at or below ``aim_below`` x its near memory.
    * A NUMA-bound guest keeps its cells' sizes and lands on as many
      distinct cells with CPUs; the plan names the cells it counted with
      (:attr:`Move.cells`), but Nova fits the cells itself when it
      migrates, and PmemCacheFilter checks those.
    * Working sets are never guessed: a tiered host with an instance whose
      working set was not measured is reported (:data:`UNMEASURED`) and
      neither a source nor a destination. A host whose profile is unknown
      is reported (:data:`PROFILE_UNKNOWN`) and left alone. A host that is
      not tiered has no near memory: its instances' working sets do not
      matter there, so it is a destination even with some unmeasured.
    * A host is a source or a destination, never both: every order of the
      moves is then valid (a destination only gains, a source only loses),
      and Watcher's applier may run them in any order. Only instances of
      hosts over ``act_above`` move, and a host either is fixed (at or
      below ``aim_below`` after) or moves nothing: a move that fixes
      nothing only costs.

Objective
    Lexicographic: fewest hosts left over; then the least memory moved (MB
    of the moved instances' RAM); then the fewest instances moved. Ties
    go to the first plan in the search's order (hosts, instances and
    destinations by name), so the same input gives the same plan.

Search
    Branch and bound, exact: over hosts one by one (fix it, or leave it),
    and within a host each instance (move it, or let it stay; of equal
    instances the first ones move). Which instances move decides the
    objective and where they go only whether they can, so the moved set
    keeps one assignment to destinations, packed again with backtracking
    only when a new instance fits nowhere next to the others. Lower
    bounds: a fractional knapsack of the working sets still movable (MB),
    the largest first (moves), and how many of the hosts left can still
    be fixed within the cap. A greedy plan starts it. Instances no host
    admits in the cloud as it is are never tried: the rules only tighten
    as moves land. It stops after ``max_nodes`` nodes (and does not start
    on more than :data:`MAX_DEPTH` instances of over hosts) and returns
    the best plan found; :attr:`Plan.optimal` says whether it is proven
    optimal.

Output
    :class:`Plan`: the moves (:class:`Move`), every host before and after
    (:class:`HostUsage`, host-wide and per cell), and for each host over
    the threshold that the plan leaves over or could not judge an
    :class:`Unfixed` with its reason (one of :data:`REASONS`).

Modules: :mod:`.records` (the input, the output, the reasons),
:mod:`.admission` (what each instance and host is, whether a host
admits a move), :mod:`.branch_and_bound` (the search) and
:mod:`.planning` (:func:`plan`). The names callers use are here.

This package imports nothing from Nova.
"""

from nova_pmem_filters.core.plans.rebalance import planning
from nova_pmem_filters.core.plans.rebalance import records

ACT_ABOVE = records.ACT_ABOVE
ACTIVE = records.ACTIVE
AIM_BELOW = records.AIM_BELOW
CAP_REACHED = records.CAP_REACHED
CELLS_UNKNOWN = records.CELLS_UNKNOWN
HOST_CELL = records.HOST_CELL
MAX_DEPTH = records.MAX_DEPTH
MAX_MOVES = records.MAX_MOVES
MAX_NODES = records.MAX_NODES
NO_DESTINATION = records.NO_DESTINATION
NO_ROOM = records.NO_ROOM
NOT_RUNNING = records.NOT_RUNNING
NUMA_BOUND = records.NUMA_BOUND
PROFILE_UNKNOWN = records.PROFILE_UNKNOWN
REASONS = records.REASONS
REJECT_CELL_MEMORY = records.REJECT_CELL_MEMORY
REJECT_FLAVOR = records.REJECT_FLAVOR
REJECT_HOST = records.REJECT_HOST
REJECT_NOT_MOVABLE = records.REJECT_NOT_MOVABLE
REJECT_RAM = records.REJECT_RAM
REJECT_VCPUS = records.REJECT_VCPUS
REJECT_WORKING_SET = records.REJECT_WORKING_SET
SEARCH_LIMIT = records.SEARCH_LIMIT
UNMEASURED = records.UNMEASURED
Cell = records.Cell
CellUsage = records.CellUsage
Host = records.Host
HostUsage = records.HostUsage
Instance = records.Instance
Move = records.Move
Plan = records.Plan
RebalanceError = records.RebalanceError
Unfixed = records.Unfixed
plan = planning.plan
instance = records.instance
vm_state = records.vm_state
