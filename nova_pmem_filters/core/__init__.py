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
"""The rules of nova-pmem-filters, without Nova: the only home of each.

Four layers, each importing only those before it:

``rules``
    host kinds, profiles, flavor requests, near memory, Placement's
    arithmetic, the kernel's tiering verdict and what an instance charges.
``grammars``
    the kernel's tiering files and the tools' outputs (ipmctl, ndctl),
    read into values.
``formats``
    every document the tools read or write: host profile, observation,
    provider config, scenario, and what they share.
``plans``
    what to do: the rebalancing plan and the fix of a flavor.

The scheduler, discovery, the observer, the doctor, the planner and the
Watcher plugin translate into and out of these modules and hold no copy of
their rules. Nothing here imports Nova (doc/source/architecture.rst).
"""
