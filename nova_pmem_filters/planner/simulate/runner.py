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
"""A simulation of a scenario: its fleet, its flavors and its trace."""

import dataclasses

from nova_pmem_filters.core.rules import profile
from nova_pmem_filters.planner import errors
from nova_pmem_filters.planner.simulate import engine
from nova_pmem_filters.planner.simulate import summary
from nova_pmem_filters.planner.simulate import traces


def flavors_of(scen):
    """A flavor per workload of the scenario, with its extra specs."""
    return {w.name: engine.Flavor(
        name=w.name, vcpus=int(w.vcpus), memory_mb=w.ram_mb,
        extra_specs=dict(w.extra_specs)) for w in scen.workloads.values()}


def kinds_of_configs(scen, nodes):
    """Host kinds of ``nodes`` ({configuration: count}) of the scenario.

    Each kind gets the Nova settings ``nova-config`` prints for its
    configuration: ``reserved_host_memory_mb``, ``ram_allocation_ratio``
    and ``cpu_allocation_ratio``.
    """
    # Imported here: nova-config's module reads the whole model.
    from nova_pmem_filters.planner import admission
    from nova_pmem_filters.planner import model
    found = []
    for name, count in nodes.items():
        if name not in scen.configs:
            raise errors.PlannerError('unknown configuration %r (known: %s)'
                                      % (name, ', '.join(scen.configs)))
        if count <= 0:
            continue
        config = scen.configs[name]
        node = model.node(config, scen.policies)
        reserved, ratio = admission.compute_memory(scen, name)
        found.append(engine.HostKind(
            name=name, profile=node.profile, vcpus=int(node.vcpus),
            memory_mb=int(round(node.visible_memory_gb * profile.MB_PER_GB)),
            dram_gb=float(config.dram_gb), reserved_host_memory_mb=reserved,
            ram_allocation_ratio=ratio,
            cpu_allocation_ratio=float(scen.policies.cpu_overcommit),
            count=int(count)))
    return found


def kinds_of_profiles(scen, directory, vcpus=None):
    """Host kinds of the discovered host profiles in ``directory``.

    Hosts get the scenario's policies as Nova settings (reserved memory,
    memory cap as ``ram_allocation_ratio``, CPU overcommit), and the
    profile the scheduler reads from their metadata (the core's).

    :param vcpus: vCPUs of every host (--host-vcpus), overriding the
        profiles'; needed for profiles that do not say.
    """
    from nova_pmem_filters.planner import fleet as fleet_mod
    found = []
    for kind in fleet_mod.load(directory):
        if kind.vcpus is None and vcpus is None:
            raise errors.PlannerError(
                '%s: host %s reports no vcpus: Placement\'s VCPU '
                'inventory cannot be simulated without them (give '
                '--host-vcpus N)' % (directory, kind.hosts[0]))
        # A profile without dram_gb: guest RAM is the DRAM where it is not
        # tiered, and tiered hosts' near memory is their cache.
        dram = (kind.dram_gb if kind.dram_gb is not None
                else kind.visible_memory_gb)
        found.append(engine.HostKind(
            name=kind.name, profile=kind.node().profile,
            vcpus=int(kind.vcpus if vcpus is None else vcpus),
            memory_mb=int(round(kind.visible_memory_gb * profile.MB_PER_GB)),
            dram_gb=float(dram),
            reserved_host_memory_mb=int(round(
                scen.policies.host_reserve_gb * profile.MB_PER_GB)),
            ram_allocation_ratio=float(scen.policies.memory_cap),
            cpu_allocation_ratio=float(scen.policies.cpu_overcommit),
            count=len(kind.hosts)))
    return found


@dataclasses.dataclass
class Run:
    """A simulation of a scenario, with what it is compared with."""

    result: engine.Result
    rows: list
    events: list
    nodes: dict
    planned: dict


def check_no_numa(scen, names):
    """Refuse NUMA-bound workloads: the simulator has no host cells.

    Its hosts are whole inventories, as Placement and PmemCacheFilter see
    them; NUMATopologyFilter's per-cell fit is not modelled, and a
    host-wide replay of ``hw:numa_nodes`` flavors would over-admit.
    """
    for name in dict.fromkeys(names):
        workload = scen.workloads.get(name)
        if workload is not None and workload.numa_nodes:
            raise errors.PlannerError(
                'workload %s has numa_nodes: %d: the simulator models hosts '
                'as a whole, not per NUMA cell, and cannot replay '
                'NUMA-bound VMs; leave it out of the mix and the trace'
                % (name, workload.numa_nodes))


def planned_fleet(scen, mix, time_limit=60.0):
    """The optimiser's fleet for ``mix``: ({config: nodes}, {config: VMs})."""
    from nova_pmem_filters.planner import optimize
    problem = optimize.build(scen, demand=mix)
    plan = optimize.solve(problem, scen=scen, time_limit=time_limit)
    nodes, vms = {}, {}
    for (config, _period), count in plan.nodes.items():
        if count:
            nodes[config] = nodes.get(config, 0) + count
            vms[config] = (vms.get(config, 0)
                           + sum(plan.vms[config, _period].values()))
    return nodes, vms


def run(scen, nodes=None, fleet_dir=None, events=None, mix=None, days=365.0,
        lifetime_days=30.0, seed=0, scheduler=None, sample_days=1.0,
        time_limit=60.0, progress=None, host_vcpus=None):
    """Simulate a scenario's fleet under a trace.

    :param nodes: {configuration: nodes}; default: the optimiser's fleet
        for the mix (whose VMs per configuration become ``planned_vms``).
    :param fleet_dir: discovered host profiles instead of ``nodes``.
    :param host_vcpus: vCPUs of every discovered host, overriding the
        profiles' (needed for profiles that do not report them).
    :param events: the trace; default a synthetic one of ``days`` for the
        mix (default: the scenario's first demand period), refused before
        anything is made when it would take more than
        :data:`traces.MAX_EVENTS` events or :data:`engine.MAX_SAMPLES`
        samples.
    """
    if mix is None:
        if not scen.demand:
            raise errors.PlannerError(
                'scenario %s gives no demand: add a demand section or give '
                '--mix WORKLOAD=VMS' % scen.name)
        mix = dict(scen.demand[0].vms)
    for name in mix:
        if name not in scen.workloads:
            raise errors.PlannerError('unknown workload %r (known: %s)'
                                      % (name, ', '.join(scen.workloads)))
    check_no_numa(scen, [name for name, wanted in mix.items() if wanted])
    if events is not None:
        check_no_numa(scen, [e.flavor for e in events])
    else:
        # Before the optimiser's fleet and the trace: both take time.
        traces.check_synthetic(mix, days, lifetime_days, sample_days)
    planned = None
    if fleet_dir is not None:
        host_kinds = kinds_of_profiles(scen, fleet_dir, vcpus=host_vcpus)
    else:
        if nodes is None:
            nodes, planned = planned_fleet(scen, mix, time_limit)
        host_kinds = kinds_of_configs(scen, nodes)
    fleet = engine.Fleet(host_kinds, scheduler)
    flavors = flavors_of(scen)
    if events is None:
        events = traces.synthetic(mix, days=days, lifetime_days=lifetime_days,
                                  seed=seed)
    result = engine.replay(fleet, flavors, events, sample_days=sample_days,
                           progress=progress)
    return Run(result=result, rows=summary.summary(result, scen, mix, planned),
               events=events, nodes=nodes, planned=planned)
