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

``kinds``
    the table of host kinds (``pmem_mode`` values): how each is scheduled,
    whether it is tiered, what its near memory is, its trait.
``profile``
    a host's profile from aggregate metadata and back (the key list, near
    memory GB, per-cell sizes).
``extra_specs``
    the ``pmem:`` flavor extra specs, their defaults and the request a
    flavor makes.
``cache``
    the near-memory arithmetic: hot RAM against its bound, host-wide and
    per NUMA cell.
``decide``
    the filters' and weighers' rules, the cache check among them.
``tiering``
    what the kernel does below Nova on the hosts it tiers: its settings'
    grammar and verdict, what an instance charges there, which flavors
    Nova binds, whether tiering keeps up.
``rebalance``
    the rebalancing plan: which instances to move where so that every
    tiered host's measured working set is back under its near memory.
``placement``
    near memory in Placement: inventories (a host's near memory in whole
    MB) and requests (an instance's hot MB).
``hostfile``
    the host-profile document: its version and keys, built by discovery,
    read back by every tool.
``providerconfig``
    Nova's provider config: built and read back.
``scenario``
    the planner's scenario file: its keys and schema, read (checked) and
    built.
``observation``
    the observer's document: its sections and keys, written and read back
    (checked as a whole), and hot ratios worked out of many.
``document``
    what the documents share: keys declared with their rules, read from a
    mapping and written back, errors that name the file and the key.
``flavorfix``
    the ``openstack flavor set`` fix of a flavor's hot ratio or near-memory
    request.
``vpmem``
    Nova's ``hw:pmem`` flavor extra spec.
``classes``
    the class names operators write in nova.conf.

The scheduler (``filters``, ``weighers``, ``scheduler``), discovery, the
doctor and the planner translate into and out of these modules and hold no
copy of their rules. Nothing here imports Nova.
"""
