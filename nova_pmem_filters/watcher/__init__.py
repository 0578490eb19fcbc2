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
"""A Watcher goal and strategy that rebalance tiered hosts.

Installed with the ``watcher`` extra into the environment of Watcher's
decision engine, which loads them through the ``watcher_goals`` and
``watcher_strategies`` entry points:

- ``goal``: the goal ``near_memory_balance`` and its efficacy indicators.
- ``strategy``: the strategy ``tiered_memory_rebalance``: Watcher's model
  and the measured working sets in, :func:`nova_pmem_filters.core.
  rebalance.plan` called, its moves out as ``migrate`` actions.
- ``inputs``: Watcher's model, the aggregates' metadata and the working
  sets as the plan's input (no Watcher import: it reads the model's
  elements by their fields).
- ``datasource``: the observer's working sets through Watcher's own
  datasource layer (``prometheus`` or ``aetos``).
- ``workingsets``: the answer's series as MB per instance (no Watcher
  import), and the deprecated client of Prometheus's HTTP API with the
  strategy's own options.

This is the only package of the project that imports Watcher; nothing else
imports it, so the rest runs without Watcher installed. Watcher and Nova
register some of the same options, so they never share a process.
"""
