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
"""Watcher's cluster model as the input of the rebalancing plan.

:func:`hosts` turns Watcher's compute model (a ``ModelRoot``: compute
nodes and the instances mapped to them), the host aggregates' metadata and
the measured working sets into :class:`~nova_pmem_filters.core.plans.rebalance.
Host` records:

* A host's profile is the scheduler's: :func:`~nova_pmem_filters.core.
  profile.from_metadata` over the metadata of the aggregates that hold it,
  with the scheduler's ``default_host_mode``.
* Its free RAM and vCPUs are what Watcher counts
  (``ModelRoot.get_node_free_resources``: capacity x allocation ratio,
  less reserved, less the flavors of the instances in the model).
* Watcher's model has no NUMA topology: cells are not known, and the
  plan decides host-wide (Nova's NUMA fit and PmemCacheFilter still check
  each cell when the migration is scheduled).
* An instance's flavor is its RAM, vCPUs and ``flavor_extra_specs``; its
  working set, and whether it may move, are the core's rule for its
  state (:func:`~nova_pmem_filters.core.plans.rebalance.instance`, the doctor's
  too): the measured working set, else 0 MB for a guest that does not
  run (``stopped``, ``suspended``, ``shelved``), else unmeasured (its
  host is reported and not planned on); only ``active`` instances move,
  and not those the audit's scope excludes.
* Only hosts whose nova-compute is up and enabled take part: a disabled
  host admits no migration, a down one none either way.

This module imports nothing from Watcher or Nova: it reads the model's
elements by their fields.
"""

from nova_pmem_filters.core.plans import rebalance
from nova_pmem_filters.core.rules import profile

# Watcher's element.ServiceState values.
UP = 'up'
ENABLED = 'enabled'


def profiles(names, aggregates, default_mode):
    """{host: HostProfile} of ``names``, as the scheduler reads them.

    :param aggregates: objects with ``hosts`` and ``metadata`` (Watcher's
        ``nova_helper.Aggregate``).
    """
    return profile.host_profiles(
        names, ((a.hosts, a.metadata) for a in aggregates), default_mode)


def serving(node):
    """Whether a compute node takes part: nova-compute up and enabled."""
    return node.state == UP and node.status == ENABLED


def hosts(model, aggregates, measured, default_mode):
    """The plan's hosts of a Watcher compute model.

    :param model: a ``ModelRoot``.
    :param aggregates: see :func:`profiles`.
    :param measured: ``{instance uuid: working set MB}``.
    :param default_mode: the scheduler's ``[pmem] default_host_mode``.
    :returns: ``(hosts, left_out)``: :class:`rebalance.Host` records
        sorted by name, and ``[(hostname, why)]`` of the nodes that do not
        take part.
    """
    nodes = sorted(model.get_all_compute_nodes().values(),
                   key=lambda n: n.hostname)
    left_out = [(n.hostname, 'nova-compute is %s and %s'
                 % (n.state, n.status)) for n in nodes if not serving(n)]
    nodes = [n for n in nodes if serving(n)]
    known = profiles([n.hostname for n in nodes], aggregates, default_mode)
    found = []
    for node in nodes:
        free = model.get_node_free_resources(node)
        instances = tuple(
            rebalance.instance(
                i.uuid, i.state, measured.get(i.uuid),
                excluded=bool(i.watcher_exclude), name=i.name,
                memory_mb=i.memory, vcpus=i.vcpus,
                extra_specs=dict(i.flavor_extra_specs or {}))
            for i in sorted(model.get_node_instances(node),
                            key=lambda i: i.uuid))
        found.append(rebalance.Host(
            name=node.hostname, profile=known[node.hostname],
            free_ram_mb=float(free['memory']),
            free_vcpus=float(free['vcpu']), cells=None,
            instances=instances))
    return found, left_out
