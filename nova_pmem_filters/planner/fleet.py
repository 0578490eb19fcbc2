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
"""The current fleet: a directory of discovered host profiles.

Each ``*.json`` file is one host's profile as ``nova-pmem-discover`` prints
it (``doc/source/host-profile-format.rst``), read by the core's reader
(:mod:`nova_pmem_filters.core.formats.hostfile`). Hosts that are identical for
the model (kind, visible memory, near memory per host and per cell, vCPUs when
reported, App-Direct regions, number of sockets, the kernel's tiering where
it tiers) form one node kind, and
the node model counts the VMs of each scenario workload on each kind.

Every problem becomes a :class:`nova_pmem_filters.planner.errors.ScenarioError`
whose one line names the file and the key.
"""

import dataclasses
import math

import pandas as pd

from nova_pmem_filters.core.formats import discoveredhost

from nova_pmem_filters.core.formats import hostfile
from nova_pmem_filters.core.rules import kinds as host_kinds
from nova_pmem_filters.core.rules import tiering

from nova_pmem_filters.planner import errors
from nova_pmem_filters.planner import model
from nova_pmem_filters.planner import vmsizing

TOTAL = 'total'


def _kind_key(host):
    return (host.mode, host.visible_memory_gb, host.dram_cache_gb,
            host.vcpus, host.region_gb, host.sockets, host.cell_cache_gb,
            host.kernel_tiering)


@dataclasses.dataclass(frozen=True)
class Kind:
    """Identical hosts of the fleet."""

    name: str
    mode: str
    visible_memory_gb: float
    dram_cache_gb: float
    vcpus: int
    region_gb: tuple
    hosts: tuple
    sockets: int = None
    # ((NUMA node, GB), ...) of the near memory per cell, or None.
    cell_cache_gb: tuple = None
    # Installed DRAM; None when the profiles do not say.
    dram_gb: float = None
    # pmem_kernel_tiering of a kind the kernel tiers, as discovered ('on'
    # or 'off'); None when the profiles do not record it.
    kernel_tiering: str = None

    @property
    def count(self):
        return len(self.hosts)

    def node(self):
        """The model's :class:`~.model.Node` of a host of the kind."""
        return model.discovered_node(
            self.name, self.mode, self.visible_memory_gb, self.dram_cache_gb,
            vcpus=self.vcpus, region_gb=self.region_gb,
            sockets=self.sockets, cell_cache_gb=self.cell_cache_gb,
            kernel_tiering=self.kernel_tiering)


def _scenario_error(exc):
    return errors.ScenarioError(exc.source, exc.path, exc.rule)


def _gb(value):
    return '%g' % value


def kind_name(host):
    parts = [host.mode, '%sG' % _gb(host.visible_memory_gb)]
    if host.mode in host_kinds.TIERED:
        parts.append('%sG-cache' % _gb(host.dram_cache_gb))
    if host.vcpus is not None:
        parts.append('%dc' % host.vcpus)
    if host.kernel_tiering == tiering.OFF:
        # The same hardware holds fewer VMs: say why in the name.
        parts.append('tiering-off')
    return '-'.join(parts)


def group(hosts):
    """Group hosts into kinds: by kind (the table's order), then memory."""
    by_key = {}
    for host in hosts:
        by_key.setdefault(_kind_key(host), []).append(host)
    found = []
    names = {}
    for key in sorted(by_key, key=lambda k: (
            host_kinds.order(k[0]), k[1], k[2], k[3] or 0, k[4],
            k[5] or 0, k[6] or (), k[7] or '')):
        members = sorted(by_key[key], key=lambda h: h.hostname)
        first = members[0]
        name = kind_name(first)
        names[name] = names.get(name, 0) + 1
        if names[name] > 1:
            # Same figures but other App-Direct regions, sockets or cells.
            name = '%s-%d' % (name, names[name])
        found.append(Kind(name=name, mode=first.mode,
                          visible_memory_gb=first.visible_memory_gb,
                          dram_cache_gb=first.dram_cache_gb,
                          vcpus=first.vcpus, region_gb=first.region_gb,
                          hosts=tuple(h.hostname for h in members),
                          sockets=first.sockets,
                          cell_cache_gb=first.cell_cache_gb,
                          dram_gb=first.dram_gb,
                          kernel_tiering=first.kernel_tiering))
    return found


def load(directory):
    """The node kinds of the fleet described by ``directory/*.json``.

    :raises nova_pmem_filters.planner.errors.ScenarioError: on the first bad
    file, on a
        hostname given by two files and on a directory with no profile.
    """
    try:
        return group(discoveredhost.load(directory))
    except hostfile.ProfileError as exc:
        raise _scenario_error(exc)


# Columns the table of ``fleet`` shows only with --long: the rest (kind,
# mode, count and each workload's density, binding and fleet total) decide.
# Under --long: the kind's name already says its mode.
DETAIL_COLUMNS = ('hosts', 'mode', 'visible_memory_gb', 'dram_cache_gb',
                  'vcpus')


def short_columns(column_names):
    return [c for c in column_names if c not in DETAIL_COLUMNS]


def columns(scen):
    cols = ['kind', 'hosts', 'mode', 'visible_memory_gb', 'dram_cache_gb',
            'vcpus', 'count']
    for name in scen.workloads:
        cols += [name, '%s_binding' % name, '%s_fleet' % name]
    return cols


def table(fleet_kinds, scen):
    """One row per kind and a ``total`` row.

    For each workload: ``<workload>`` is VMs per node of the kind (the
    model's density), ``<workload>_binding`` the constraint that binds and
    ``<workload>_fleet`` VMs on all hosts of the kind; the total row sums
    the hosts and the fleet columns.
    """
    policies = scen.policies
    rows = []
    totals = {TOTAL: 0}
    for kind in fleet_kinds:
        node = kind.node()
        row = {'kind': kind.name, 'hosts': ','.join(kind.hosts),
               'mode': kind.mode,
               'visible_memory_gb': round(kind.visible_memory_gb, 1),
               'dram_cache_gb': round(kind.dram_cache_gb, 1),
               'vcpus': kind.vcpus, 'count': kind.count}
        totals[TOTAL] += kind.count
        for name, workload in scen.workloads.items():
            vms, binding = vmsizing.density(node, workload, policies)
            row[name] = vms
            row['%s_binding' % name] = binding
            row['%s_fleet' % name] = vms * kind.count
            totals[name] = totals.get(name, 0) + vms * kind.count
        rows.append(row)
    total = {'kind': TOTAL, 'count': totals[TOTAL]}
    for name in scen.workloads:
        total['%s_fleet' % name] = totals.get(name, 0)
    rows.append(total)
    # Objects: integers stay integers next to the empty cells of the total
    # row, which stay None.
    return pd.DataFrame(rows, columns=columns(scen),
                        dtype=object).replace({math.nan: None})
