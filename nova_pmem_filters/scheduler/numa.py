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
"""Nova's NUMA fitting of a request, and the cells of a host.

A NUMA-bound flavor's cells land where Nova's own
``numa_fit_instance_to_host`` puts them, with the inputs NUMATopologyFilter
and the compute claim use; the filter and the weighers of a request fit each
host once (the fits are kept in the request's memo, ``fits``).
"""

from nova import objects
from nova.virt import hardware

from nova_pmem_filters.core.rules import nearmem
from nova_pmem_filters.scheduler import ovo


def host_cells(host_state):
    """The NUMA cells Nova knows of the host, or None (no topology)."""
    topology = getattr(host_state, 'numa_topology', None)
    cells = getattr(topology, 'cells', None)
    return list(cells) if cells else None


def cell_ids(host_state):
    """Ids of the host's NUMA cells with CPUs; None without a topology.

    CPU-less cells (CXL memory onlined as NUMA nodes) hold no near memory
    of their own, and no instance cell lands on them.
    """
    cells = host_cells(host_state)
    if cells is None:
        return None
    return [cell.id for cell in cells if cell.cpuset or cell.pcpuset]


def requested_topology(spec_obj):
    """The request's InstanceNUMATopology, or None if the flavor floats."""
    topology = ovo.loaded(spec_obj, 'numa_topology')
    return topology if topology and topology.cells else None


def _fit(host_state, spec_obj):
    limits = objects.NUMATopologyLimits(
        cpu_allocation_ratio=host_state.cpu_allocation_ratio,
        ram_allocation_ratio=host_state.ram_allocation_ratio)
    if 'network_metadata' in spec_obj and spec_obj.network_metadata:
        limits.network_metadata = spec_obj.network_metadata
    pci_requests = ovo.loaded(spec_obj, 'pci_requests')
    if pci_requests:
        pci_requests = pci_requests.requests
    # The scheduler claims the host's first allocation candidate that fits;
    # without candidates, the mapping consume_from_request() uses.
    mappings = [candidate['mappings'] for candidate in
                getattr(host_state, 'allocation_candidates', None) or ()]
    if not mappings:
        mappings = [spec_obj.get_request_group_mapping()]
    for mapping in mappings:
        # numa_fit_instance_to_host() writes the host cell ids and CPU
        # pinning into the topology it is given: give it a copy.
        fitted = hardware.numa_fit_instance_to_host(
            host_state.numa_topology, spec_obj.numa_topology.obj_clone(),
            limits=limits, pci_requests=pci_requests,
            pci_stats=host_state.pci_stats, provider_mapping=mapping)
        if fitted is not None:
            return fitted
    return None


def fitted_cells(host_state, spec_obj, fits):
    """``{host cell: memory MB}`` Nova would claim for the request's cells.

    Nova's own fitting (``nova.virt.hardware.numa_fit_instance_to_host``)
    with the inputs NUMATopologyFilter and the compute claim use, so that
    ``[compute] packing_host_numa_cells_allocation_strategy`` chooses the
    cells here as it does there. None when no cells fit.

    :param fits: ``{(host, node): (host topology, cells)}`` of this request
        (``request_memo.Memo.fits``).
    """
    key = ovo.node_key(host_state)
    topology = host_state.numa_topology
    cached = fits.get(key)
    # Nova replaces the host's topology object when it consumes a request.
    if cached is not None and cached[0] is topology:
        return cached[1]
    fitted = _fit(host_state, spec_obj)
    cells = None
    if fitted is not None:
        cells = {}
        for cell in fitted.cells:
            cells[cell.id] = cells.get(cell.id, 0) + cell.memory
    fits[key] = (topology, cells)
    return cells


def fit_of(host_state, spec_obj, fits):
    """The core's ``fit`` callable for a NUMA-bound request on a host."""
    return lambda: fitted_cells(host_state, spec_obj, fits)


def cell_memory_view(host_state, cells, spec_obj, fits):
    """Memory in use and the new instance's memory on each NUMA cell.

    NUMA-bound instances are counted on their cells (the cells'
    ``memory_usage``); the rest of the host's memory use, on the cells in
    proportion to their size.

    :returns: (sizes, used, new) as ``{cell: MB}``; new None when Nova fits
        the flavor on no cells.
    """
    sizes = {cell.id: float(cell.memory) for cell in cells}
    bound = {cell.id: float(cell.memory_usage) for cell in cells}
    host_used = host_state.total_usable_ram_mb - host_state.free_ram_mb
    used = nearmem.cell_usage_mb(
        max(host_used - sum(bound.values()), 0.0), bound, sizes)
    if requested_topology(spec_obj) is not None:
        claimed = fitted_cells(host_state, spec_obj, fits)
        new = None if claimed is None else {
            cell: float(mb) for cell, mb in claimed.items()}
    else:
        new = nearmem.spread_mb(float(spec_obj.flavor.memory_mb), sizes)
    return sizes, used, new
