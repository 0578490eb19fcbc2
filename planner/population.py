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
"""DIMM population rules, with severities and sources.

``error``: the machine cannot be built or will not boot in that mode (PMem on
a CPU that cannot drive it, more modules than slots, a PMem channel without
DRAM, sockets populated differently, over the CPU's memory limit). A
configuration with an error is refused.

``warning``: legal, but outside vendor guidance (a Memory-Mode DRAM:PMem
ratio outside 1:4 to 1:16, a mix no OEM offers). Warnings are shown in every
report next to the numbers they qualify.

Sources are the sections of the project's field notes.
"""

import dataclasses

from nova_pmem_filters import profile

ERROR = 'error'
WARNING = 'warning'

# Memory Mode DRAM:PMem guidance (field notes 2 and 7): 1:4 to 1:16.
MM_RATIO_MIN = 4.0
MM_RATIO_MAX = 16.0

# Per-socket (PMem, DRAM) module mixes OEMs offer (field notes 7).
OEM_MIXES = {
    '100': {(2, 4), (2, 6), (4, 6), (6, 6)},
    '200': {(4, 4), (4, 8), (8, 8), (1, 8)},
}


@dataclasses.dataclass(frozen=True)
class Finding:
    severity: str
    code: str
    message: str
    source: str

    def __str__(self):
        return '%s %s: %s [%s]' % (self.severity, self.code, self.message,
                                   self.source)


def _socket_counts(socket):
    dram = sum(n for d, n in socket.items() if not d.is_pmem)
    pmem = sum(n for d, n in socket.items() if d.is_pmem)
    return dram, pmem


def _socket_gb(socket, pmem):
    return sum(d.capacity_gb * n for d, n in socket.items()
               if d.is_pmem == pmem)


def check(config):
    """All findings for one NodeConfig, errors first."""
    found = []

    def add(severity, code, message, source):
        found.append(Finding(severity, code, message, source))

    platform, cpu, mode = config.platform, config.cpu, config.mode
    per = config.per_socket
    pmem_dimms = sorted({d for sock in config.sockets for d in sock
                         if d.is_pmem}, key=lambda d: d.name)
    generations = sorted({d.generation for d in pmem_dimms})

    if any(sock != per for sock in config.sockets[1:]):
        add(ERROR, 'asymmetric-sockets',
            'sockets are populated differently; both sockets must carry '
            'the same DIMMs', 'field notes 7 (both sockets populated alike)')

    for gen in generations:
        if gen not in cpu.pmem_generations:
            add(ERROR, 'pmem-unsupported-cpu',
                'CPU %s cannot drive PMem %s (it supports: %s)'
                % (cpu.name, gen, ', '.join(cpu.pmem_generations) or 'none'),
                'field notes 1 (1st-gen Xeon Scalable cannot drive PMem)')
        if gen not in platform.pmem_generations:
            add(ERROR, 'pmem-unsupported-platform',
                'platform %s has no PMem %s support' % (platform.name, gen),
                'field notes 2 (PMem 100 on 2nd gen, 200 on 3rd gen)')
    if len({d.capacity_gb for d in pmem_dimms}) > 1:
        add(ERROR, 'mixed-pmem-sizes',
            'PMem modules of different sizes in one node (%s)'
            % ', '.join(d.name for d in pmem_dimms),
            'field notes 7 (all PMem one size)')
    for d in pmem_dimms:
        if d.capacity_gb > cpu.pmem_max_module_gb and cpu.pmem_generations:
            add(ERROR, 'pmem-module-too-large',
                'CPU %s takes PMem modules of at most %g GB, not %s'
                % (cpu.name, cpu.pmem_max_module_gb, d.name),
                'field notes 7 (base parts 128 GB only; M and L parts '
                'larger)')

    for index, sock in enumerate(config.sockets):
        dram, pmem = _socket_counts(sock)
        where = 'socket %d' % index
        if dram + pmem > platform.slots_per_socket:
            add(ERROR, 'too-many-modules',
                '%s has %d modules for %d slots (%d channels x %d)'
                % (where, dram + pmem, platform.slots_per_socket,
                   platform.channels_per_socket, platform.slots_per_channel),
                'platform catalog')
        if pmem > platform.channels_per_socket:
            add(ERROR, 'pmem-per-channel',
                '%s has %d PMem modules on %d channels; at most one per '
                'channel' % (where, pmem, platform.channels_per_socket),
                'field notes 7 (at most one PMem module per channel)')
        elif pmem > dram:
            # Each PMem channel needs a DRAM module beside it.
            add(ERROR, 'pmem-without-dram',
                '%s has %d PMem modules but only %d DRAM; a channel would '
                'carry PMem with no DRAM' % (where, pmem, dram),
                'field notes 7 (DRAM caches only PMem of its own '
                'controller)')
        ctrl = platform.controllers_per_socket
        if mode == profile.MEMORY_MODE and (0 < pmem < ctrl
                                            or 0 < dram < ctrl):
            add(ERROR, 'mm-controller',
                '%s has %d DRAM and %d PMem modules for %d memory '
                'controllers; Memory Mode needs DRAM and PMem on every '
                'controller' % (where, dram, pmem, ctrl),
                'field notes 7 (at least one DRAM and one PMem per '
                'controller)')
        counted = _socket_gb(sock, pmem=True)
        if not (mode == profile.MEMORY_MODE and '200' in generations):
            counted += _socket_gb(sock, pmem=False)
        if counted > cpu.memory_limit_gb:
            add(ERROR, 'memory-limit',
                '%s holds %g GB against the %g GB limit of CPU %s'
                % (where, counted, cpu.memory_limit_gb, cpu.name),
                'field notes 7 (the per-socket limit counts PMem; in Memory '
                'Mode on PMem 200 only the PMem)')

    dram, pmem = _socket_counts(per)
    if mode in (profile.MEMORY_MODE, profile.APP_DIRECT) and not pmem:
        add(ERROR, 'mode-without-pmem',
            'mode %s needs PMem modules; this configuration has none'
            % mode, 'field notes 2')
    if mode == profile.MEMORY_MODE and not dram:
        add(ERROR, 'mode-without-dram',
            'Memory Mode needs DRAM as the cache in front of PMem',
            'field notes 2')
    if mode == profile.DRAM and pmem:
        add(WARNING, 'pmem-unused',
            'PMem modules are installed but the node runs in dram mode',
            'field notes 2')
    if mode == profile.MEMORY_MODE and dram and pmem:
        ratio = _socket_gb(per, pmem=True) / _socket_gb(per, pmem=False)
        if not MM_RATIO_MIN <= ratio <= MM_RATIO_MAX:
            add(WARNING, 'mm-ratio',
                'DRAM:PMem is 1:%.1f per socket, outside the 1:%g to 1:%g '
                'Memory Mode guidance (1:8 recommended)'
                % (ratio, MM_RATIO_MIN, MM_RATIO_MAX),
                'field notes 1 and 7')
    if pmem and generations and (pmem, dram) not in OEM_MIXES.get(
            generations[0], set()):
        add(WARNING, 'not-oem-mix',
            '%d PMem + %d DRAM per socket is not a mix OEMs offer (%s)'
            % (pmem, dram, ', '.join('%d+%d' % m for m in sorted(
                OEM_MIXES[generations[0]]))),
            'field notes 7')
    if dram and dram % platform.channels_per_socket and not pmem:
        add(WARNING, 'unbalanced-channels',
            '%d DRAM modules on %d channels leave channels uneven, which '
            'lowers memory bandwidth' % (dram, platform.channels_per_socket),
            'assumption (common vendor population guidance)')
    return sorted(found, key=lambda f: (f.severity != ERROR, f.code))


def errors(findings):
    return [f for f in findings if f.severity == ERROR]


def warnings(findings):
    return [f for f in findings if f.severity == WARNING]
