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
"""The observer (``nova-pmem-observe``): each VM's working set on its host.

- :mod:`~nova_pmem_filters.observe.procfs`: reference bits
  (``clear_refs`` / ``smaps_rollup``), ``numa_maps`` and the NUMA nodes
  (their CPUs and memory).
- :mod:`~nova_pmem_filters.observe.damon`: DAMON's sysfs interface, used
  only when no one else uses it, and ``damo`` outputs.
- :mod:`~nova_pmem_filters.observe.counters`: ``/proc/vmstat`` tiering
  counters and ``ipmctl show -dimm -performance`` media traffic.
- ``domains``, ``host``, ``cli`` and ``prometheus``: the instances, one
  window of the host as an observation document (with the kernel's
  tiering, read by ``core.rules.tiering``), the command and its metrics.

This package imports nothing from Nova: it runs on compute hosts, on its own.
"""
