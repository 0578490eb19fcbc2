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
"""One observation window of one host: an observation document.

:func:`observe` lists the running Nova instances (``domains``), measures
the working set of all of them in ONE window (DAMON or reference bits),
then reads where their pages sit (``numa_maps``) and brackets the window
with the far-memory counters of the host: ipmctl's media counters on a
Memory-Mode host, ``/proc/vmstat`` promotions and demotions on a host with
CPU-less (kernel-tiered) memory nodes.

It also records the kernel's tiering (``core.rules.tiering``): its settings
and verdict for the CPU-less nodes that hold memory (the far nodes), and
the vmstat tiering counters per second over the window, host-wide and per
node where the kernel counts per node; and per instance the memory
resident on nodes with and without CPUs, and the hot MB that must sit on
the far nodes.

Everything that touches the host is a parameter (paths, the measuring
modules, the clocks and ``sleep``), so a test runs a whole window on fake
trees in no time. Every failure is a gap string and its number ``null``.
"""

import collections
import dataclasses
import logging
import os
import socket
import time

from nova_pmem_filters.core.formats import observation
from nova_pmem_filters.core.grammars import sysfs
from nova_pmem_filters.core.rules import charging
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import profile as core_profile
from nova_pmem_filters.core.rules import tiering
from nova_pmem_filters.observe import counters
from nova_pmem_filters.observe import damon
from nova_pmem_filters.observe import domains
from nova_pmem_filters.observe import procfs

LOG = logging.getLogger(__name__)

AUTO = 'auto'
DAMON = observation.DAMON
REFERENCE_BITS = observation.REFERENCE_BITS
CHOICES = (AUTO, DAMON, REFERENCE_BITS)
# Hardware modes whose far memory ipmctl counts (a mixed host runs part of
# its PMem in Memory Mode).
IPMCTL_MODES = kinds.PMEM_FAR_MODES
MB = 1024.0 * 1024.0

# The host-touching modules; a test passes its own.
Backends = collections.namedtuple('Backends', 'procfs damon counters')
# ``root``: the directory whose proc/ and sys/ the kernel's tiering files
# are read from (core.grammars.sysfs); None when proc and sysfs are not
# those of one root.
Paths = collections.namedtuple('Paths', 'proc sysfs libvirt vmstat root')


def default_backends():
    return Backends(procfs=procfs, damon=damon, counters=counters)


def _root_of(proc, sysfs):
    """The directory holding ``proc`` and ``sysfs`` as proc/ and sys/."""
    proc = os.path.normpath(proc)
    parent = os.path.dirname(proc)
    if os.path.basename(proc) == 'proc' \
            and os.path.normpath(sysfs) == os.path.join(parent, 'sys'):
        return parent
    return None


def default_paths(proc='/proc', sysfs='/sys', libvirt=domains.DEFAULT_DIR,
                  root=None):
    return Paths(proc=proc, sysfs=sysfs, libvirt=libvirt,
                 vmstat=os.path.join(proc, 'vmstat'),
                 root=root if root is not None else _root_of(proc, sysfs))


def _one_line(exc):
    return ' '.join(str(exc).split()) or type(exc).__name__


def _damon_admin(paths):
    return os.path.join(paths.sysfs, 'kernel', 'mm', 'damon', 'admin')


def choose_method(method, backends, paths):
    """The measuring method to use: (method or None, gap or None).

    ``auto`` is DAMON where the kernel offers it unused, else reference
    bits; ``damon`` asked for and unusable is a gap (nothing measured)
    rather than a silent fall-back to the more intrusive method.
    """
    if method == REFERENCE_BITS:
        return REFERENCE_BITS, None
    try:
        usable, reason = backends.damon.usable(admin=_damon_admin(paths))
    except Exception as exc:
        usable, reason = False, _one_line(exc)
    if usable:
        return DAMON, None
    if method == DAMON:
        return None, 'damon: not usable: %s' % reason
    _fell_back(reason)
    return REFERENCE_BITS, None


# The reasons for measuring with reference bits already logged at INFO.
_TOLD = set()


def _fell_back(reason):
    """Log why ``auto`` measures with reference bits.

    A kernel without DAMON is what it is: a debug line. Another reason (a
    kdamond of someone else, no root) is one the operator may act on: once
    at INFO per process, then debug lines, so that a service does not
    repeat it every window.
    """
    msg = 'DAMON not usable (%s): measuring with reference bits'
    if str(reason).endswith(damon.ABSENT) or reason in _TOLD:
        LOG.debug(msg, reason)
        return
    _TOLD.add(reason)
    LOG.info(msg, reason)


def _profile_section(prof):
    """The document's ``profile``: the near memory the profile gives."""
    if prof is None:
        return None
    cells = tuple(observation.ProfileCell(
        id=cell, near_memory_mb=core_profile.gb_to_mb(gb))
        for cell, gb in prof.cell_cache_gb or ())
    return observation.Profile(
        pmem_mode=prof.mode,
        near_memory_mb=core_profile.gb_to_mb(prof.near_memory_gb),
        cells=cells)


def _cell(numa_mb, nodes):
    """The node with CPUs holding most of an instance's pages, or None."""
    candidates = [(mb, -node) for node, mb in numa_mb.items()
                  if nodes.get(node) and mb > 0]
    if not candidates:
        return None
    return -max(candidates)[1]


class _FarMemory(object):
    """The far-memory counters read before and after the window."""

    def __init__(self, prof, nodes, backends, paths, gaps):
        self.backends = backends
        self.paths = paths
        self.gaps = gaps
        self.ipmctl = (prof is not None
                       and prof.hardware_mode in IPMCTL_MODES)
        # Kernel tiering demotes to CPU-less memory nodes (CXL memory or
        # PMem as system RAM); elsewhere vmstat's counters stay at zero.
        self.vmstat = not self.ipmctl and any(
            not cpus for cpus in nodes.values())
        self.before = {}

    def _read(self):
        found = {}
        if self.ipmctl:
            try:
                found['ipmctl'] = self.backends.counters.ipmctl_performance(
                    self.backends.counters.run_ipmctl_performance())
            except Exception as exc:
                self.gaps.append('ipmctl: %s' % _one_line(exc))
                self.ipmctl = False
        if self.vmstat:
            try:
                found['vmstat'] = self.backends.counters.vmstat(
                    self.paths.vmstat)
            except Exception as exc:
                self.gaps.append('%s: %s' % (self.paths.vmstat,
                                             _one_line(exc)))
                self.vmstat = False
        return found

    def start(self):
        self.before = self._read()

    def finish(self, seconds):
        """The document's ``far_memory`` over ``seconds``."""
        after = self._read()
        # Keyed by the fields of observation.FarMemory; None: not counted.
        rates = {}
        counters_mod = self.backends.counters
        if 'ipmctl' in self.before and 'ipmctl' in after:
            try:
                rates.update(counters_mod.media_rates(
                    self.before['ipmctl'], after['ipmctl'], seconds))
            except Exception as exc:
                self.gaps.append('ipmctl: %s' % _one_line(exc))
        if 'vmstat' in self.before and 'vmstat' in after:
            try:
                rates.update(counters_mod.tiering_rates(
                    self.before['vmstat'], after['vmstat'], seconds))
            except Exception as exc:
                self.gaps.append('%s: %s' % (self.paths.vmstat,
                                             _one_line(exc)))
        return observation.FarMemory(**rates)


class _KernelTiering(object):
    """The kernel's tiering, and its vmstat counters around the window."""

    def __init__(self, nodes, backends, paths, gaps):
        self.nodes = nodes
        self.root = paths.root
        self.gaps = gaps
        self.state = None
        self.far = ()
        self.before = None
        if not nodes:
            # Without the nodes there is nothing to judge (their gap says
            # why).
            return
        if self.root is None:
            gaps.append('kernel tiering: not read: %s and %s are not the '
                        'proc and sys of one root' % (paths.proc,
                                                      paths.sysfs))
            return
        try:
            self.far = self._far_nodes(backends, paths)
            self.state = sysfs.read_state(self.root)
        except (procfs.ReadError, sysfs.TieringError) as exc:
            gaps.append('kernel tiering: %s' % _one_line(exc))
            self.state = None

    def _far_nodes(self, backends, paths):
        """The CPU-less nodes that hold memory."""
        return tuple(node for node in sorted(self.nodes)
                     if not self.nodes[node]
                     and backends.procfs.node_memory_mb(
                         node, sysfs=paths.sysfs) > 0)

    @property
    def counting(self):
        return self.before is not None

    def _read(self):
        try:
            return sysfs.read_counters(self.root, sorted(self.nodes))
        except sysfs.TieringError as exc:
            self.gaps.append('kernel tiering counters: %s' % _one_line(exc))
            return None

    def start(self):
        if self.state is not None:
            self.before = self._read()

    def finish(self, seconds):
        """The document's ``tiering``; None when the kernel's is unknown."""
        if self.state is None:
            return None
        rates, node_rates = None, {}
        after = self._read() if self.before is not None else None
        if after is not None:
            rates = _rounded(tiering.rates(self.before[0], after[0],
                                           seconds))
            node_rates = {node: _rounded(tiering.rates(
                self.before[1][node], found, seconds))
                for node, found in sorted(after[1].items())
                if node in self.before[1]}
        cpu_nodes = [n for n, cpus in sorted(self.nodes.items()) if cpus]
        entry, _verdict = observation.Tiering.of(
            self.state, cpu_nodes, self.far, rates=rates,
            node_rates=node_rates)
        return entry


def _rounded(rates):
    return {name: round(value, 3) for name, value in sorted(rates.items())}


def _measure(method, pids, window_s, backends, paths, sleep):
    if method == DAMON:
        return backends.damon.measure(pids, window_s,
                                      admin=_damon_admin(paths), sleep=sleep)
    return backends.procfs.reference_bits(pids, window_s, sleep=sleep,
                                          proc=paths.proc)


def _measured(inst, method, measurement, window_gap):
    """What the window measured of ``inst``, as Instance fields."""
    if window_gap:
        return {'gap': window_gap}
    if measurement is None:
        return {'gap': 'process %d was not measured (it ended during the '
                       'window?)' % inst.pid}
    if measurement.gap or measurement.working_set_mb is None:
        return {'gap': measurement.gap or 'no working set measured'}
    ws = float(measurement.working_set_mb)
    return {'method': method, 'working_set_mb': round(ws, 3),
            'hot_ratio': round(ws / inst.flavor_ram_mb, 4)}


def _instance(inst, method, measurement, window_gap, nodes, backends,
              paths, gaps):
    found = observation.Instance(
        uuid=inst.uuid, name=inst.name, flavor=inst.flavor,
        flavor_ram_mb=inst.flavor_ram_mb, flavor_vcpus=inst.flavor_vcpus,
        pid=inst.pid, declared_hot_ratio=inst.declared_hot_ratio,
        **_measured(inst, method, measurement, window_gap))
    if inst.declared_gap:
        gaps.append(inst.declared_gap)
    if found.gap is not None and not window_gap:
        # A process that exited or that we may not read has no numa_maps
        # either: one gap is enough.
        return found
    try:
        placement = backends.procfs.numa_placement(inst.pid,
                                                   proc=paths.proc)
    except Exception as exc:
        gaps.append('instance %s: numa_maps of process %d: %s'
                    % (inst.uuid, inst.pid, _one_line(exc)))
        return found
    numa = placement.nodes
    fields = _resident(found, numa, nodes)
    if placement.bound_off_node is not None:
        fields['bound_off_node_mb'] = round(
            sum(placement.bound_off_node.values(), 0.0), 3)
    return dataclasses.replace(
        found, numa_mb={int(node): round(float(mb), 3)
                        for node, mb in sorted(numa.items())},
        cell=_cell(numa, nodes), **fields)


def _resident(found, numa, nodes):
    """Instance fields: its memory near and far, its hot MB on far nodes.

    Nothing when a node of its pages is not one sysfs lists. The hot MB
    on far nodes is the core's lower bound (the working set less what is
    resident near), at most what is resident far: pages touched in the
    window and freed since sit nowhere.
    """
    if any(int(node) not in nodes for node in numa):
        return {}
    near = sum((float(mb) for node, mb in numa.items()
                if nodes[int(node)]), 0.0)
    far = sum((float(mb) for node, mb in numa.items()
               if not nodes[int(node)]), 0.0)
    fields = {'near_resident_mb': round(near, 3),
              'far_resident_mb': round(far, 3)}
    hot = charging.hot_on_far_mb(found.working_set_mb, near)
    if hot is not None:
        fields['hot_on_far_mb'] = round(min(hot, far), 3)
    return fields


def _host(instances, prof, nodes, gaps):
    """The document's ``host``: the working set against near memory."""
    measured = [i for i in instances if i.working_set_mb is not None]
    if len(measured) < len(instances):
        gaps.append('host working set counts %d of %d instances'
                    % (len(measured), len(instances)))
    near_cells = {c.id: c.near_memory_mb
                  for c in (prof.cells if prof is not None else ())}
    cell_ids = sorted(near_cells) or sorted(n for n, c in nodes.items()
                                            if c)
    cells = tuple(observation.HostCell(
        id=cell, working_set_mb=round(sum(
            i.working_set_mb for i in measured if i.cell == cell), 3),
        near_memory_mb=near_cells.get(cell)) for cell in cell_ids)
    return observation.Host(
        working_set_mb=round(sum(i.working_set_mb for i in measured), 3),
        near_memory_mb=prof.near_memory_mb if prof is not None else None,
        cells=cells)


def observe(window_s, method=AUTO, prof=None, hostname=None, paths=None,
            backends=None, clock=time.time, monotonic=time.monotonic,
            sleep=time.sleep):
    """Measure one window; returns its ``observation.Observation``.

    :param prof: the host's ``discoveredhost.DiscoveredHost`` or None.
    :param sleep: how the window is waited; a service passes one that
        returns early on SIGTERM.
    """
    if method not in CHOICES:
        raise ValueError('method: expected one of %s, got %r'
                         % (', '.join(CHOICES), method))
    paths = paths or default_paths()
    backends = backends or default_backends()
    gaps = []
    started = clock()

    try:
        insts, domain_gaps = domains.instances(paths.libvirt)
        gaps.extend(domain_gaps)
    except domains.DomainError as exc:
        insts = []
        gaps.append(str(exc))
    try:
        nodes = {int(n): bool(c) for n, c in
                 backends.procfs.node_cpus(sysfs=paths.sysfs).items()}
    except Exception as exc:
        nodes = {}
        gaps.append('NUMA nodes: %s' % _one_line(exc))

    used, window_gap = choose_method(method, backends, paths)
    if window_gap:
        gaps.append(window_gap)
    far = _FarMemory(prof, nodes, backends, paths, gaps)
    kernel = _KernelTiering(nodes, backends, paths, gaps)
    far.start()
    kernel.start()
    begin = monotonic()
    results = {}
    if used and insts:
        try:
            results = _measure(used, [i.pid for i in insts], window_s,
                               backends, paths, sleep)
        except Exception as exc:
            window_gap = '%s: %s' % (used, _one_line(exc))
            gaps.append(window_gap)
    elif far.ipmctl or far.vmstat or kernel.counting:
        # The far-memory rates still need a window.
        sleep(window_s)
    seconds = monotonic() - begin
    seconds = seconds if seconds > 0 else window_s
    far_memory = far.finish(seconds)
    kernel_tiering = kernel.finish(seconds)

    instances = tuple(_instance(inst, used, results.get(inst.pid),
                                window_gap, nodes, backends, paths, gaps)
                      for inst in insts)
    prof_section = _profile_section(prof)
    hostname = hostname or (prof.hostname if prof is not None
                            else socket.gethostname())
    doc = observation.Observation(
        hostname=hostname, started=observation.format_started(started),
        window_s=float(window_s), profile=prof_section,
        nodes=tuple(observation.Node(id=n, cpus=nodes[n])
                    for n in sorted(nodes)),
        instances=instances,
        host=_host(instances, prof_section, nodes, gaps),
        far_memory=far_memory, tiering=kernel_tiering, gaps=tuple(gaps))
    # What we write must be what every reader accepts.
    return observation.checked(doc, '(observation of %s)' % hostname)
