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
"""Population rules of DIMM slots and Optane PMem, with their sources."""

from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.planner.population import common
from nova_pmem_filters.planner.population import cpus
from nova_pmem_filters.planner.population import sources


# Memory Mode DRAM:PMem guidance: Intel recommends 1:8; the planner warns
# outside 1:4 to 1:16.
MM_RATIO_MIN = 4.0
MM_RATIO_MAX = 16.0
MM_RATIO_SOURCE = '; '.join([
    sources.cite('intel-pmem-video', 'Intel recommends 1 GB of DRAM for '
                 'every 8 GB of PMem in Memory Mode'),
    sources.assumption('1:4 to 1:16 is the band around that 1:8 within '
                       'which the DRAM cache is neither too small for '
                       'most workloads nor wasted')])

# Per-socket (PMem, DRAM) module mixes OEMs offer.
OEM_MIXES = {
    '100': {(2, 4), (2, 6), (4, 6), (6, 6)},
    '200': {(4, 4), (4, 8), (8, 8), (1, 8)},
}
OEM_MIX_SOURCES = {
    '100': sources.cite('lenovo-sr630-pmem-mixes', 'PMem 100 mixes per '
                        'socket: 2 PMem + 4 DRAM, 2+6, 4+6, 6+6'),
    '200': sources.cite('lenovo-pmem200', 'supported PMem 200 and DRAM '
                        'combinations per socket'),
}


# CPU generations (one table, nova_pmem_filters.planner.population.cpus), by
# description.
CPU_GENERATIONS = {name: gen.description
                   for name, gen in cpus.GENERATIONS.items()}
SERIES_PAIRING = sources.cite_all(
    ('lenovo-pmem100', 'PMem 100 runs on 2nd-gen Xeon Scalable, Cascade '
     'Lake'),
    ('lenovo-pmem200', 'PMem 200 on 3rd-gen, Ice Lake'))
# What the modes are: DRAM caches PMem in Memory Mode; App Direct exposes
# PMem as persistent memory.
MODES_SOURCE = sources.cite('intel-pmem-video', 'in Memory Mode the DRAM is '
                            'a cache in front of PMem; App Direct exposes '
                            'PMem to software as persistent memory')
# Memory Mode population on PMem 100.
MM_POPULATION_SOURCE = sources.cite(
    'fujitsu-rx4770-m5', 'Memory Mode: DDR4 caches PMem on channels of the '
    'same memory controller only; at least 1 DDR4 DIMM and 1 PMem module '
    'per memory controller')


def _generation(cpu):
    generation = CPU_GENERATIONS.get(cpu.generation)
    return ('a %s part' % generation) if generation else 'a CPU'


def _series(generations):
    return ', '.join('PMem %s' % g for g in generations) or 'no PMem'


def _cpu_pmem(cpu, dimm):
    """pmem-unsupported-cpu: why this CPU cannot drive this module."""
    # The stem "CPU <name> cannot drive PMem <series>" is what this finding
    # has always said; the reason follows it.
    stem = 'CPU %s cannot drive PMem %s (%s)' % (
        cpu.name, dimm.generation, dimm.name)
    if cpu.pmem_generations:
        return ('%s: %s that drives %s'
                % (stem, _generation(cpu), _series(cpu.pmem_generations)),
                SERIES_PAIRING)
    message = '%s: %s that drives no PMem at all' % (stem, _generation(cpu))
    if cpu.generation == 'skylake':
        return message, sources.cite(
            'intel-pmem-platforms', 'PMem is supported on 2nd-gen Xeon '
            'Scalable Gold and Platinum parts; 1st-gen parts such as the '
            'Gold 6148 cannot drive it')
    return message, common.catalog_source('CPU', cpu.name, 'drives no PMem',
                                          cpu.source)


def _platform_pmem(platform, dimm):
    if platform.pmem_generations:
        return ('platform %s cannot take PMem %s (%s); it takes %s'
                % (platform.name, dimm.generation, dimm.name,
                   _series(platform.pmem_generations)), SERIES_PAIRING)
    return ('platform %s takes no PMem (%s)' % (platform.name, dimm.name),
            common.catalog_source('platform', platform.name, 'no PMem',
                                  platform.source))


def _symmetry_source(generations):
    if generations:
        return sources.assumption(
            'every socket populated alike, as balanced-memory guidance '
            'asks of each CPU socket (%s); applied to PMem %s'
            % (sources.cite('wwt-xeon-population'), ', '.join(generations)))
    return sources.assumption(
        'sockets of different sizes make NUMA nodes of different sizes; '
        'the planner sizes nodes with identical sockets')


def _limit(cpu, sock, mode, generations, where):
    """memory-limit: what counts against the CPU's limit, and why."""
    pmem_only = mode == kinds.MEMORY_MODE and '200' in generations
    counted = common.socket_gb(sock, pmem=True)
    if not pmem_only:
        counted += common.socket_gb(sock, pmem=False)
    if counted <= cpu.memory_limit_gb:
        return None
    if pmem_only:
        what = 'the PMem only: %s' % common.modules(sock, pmem=True)
        source = sources.assumption(
            'PMem 200 in Memory Mode: only the PMem counts toward the '
            'CPU\'s memory limit, since the DRAM is a cache')
    else:
        what = common.modules(sock)
        limit = common.catalog_source('CPU', cpu.name, 'memory_limit_gb %g'
                                      % cpu.memory_limit_gb, cpu.source)
        source = limit
        if generations:
            source = sources.assumption(
                'the CPU\'s per-socket memory limit counts PMem as well as '
                'DRAM; %s' % limit)
    return ('%s holds %g GB against the %g GB limit of CPU %s; counted: %s'
            % (where, counted, cpu.memory_limit_gb, cpu.name, what), source)


def check(config):
    """The DIMM and PMem findings for one NodeConfig.

    Each finding names the parts involved (configuration, socket, CPU,
    platform, modules) and cites the source that applies to this case.
    """
    pmem_dimms = sorted({d for sock in config.sockets for d in sock
                         if d.is_pmem}, key=lambda d: d.name)
    generations = sorted({d.generation for d in pmem_dimms})
    found = _sockets_alike(config, generations)
    found += _pmem_parts(config, pmem_dimms, generations)
    for index, sock in enumerate(config.sockets):
        found += _socket(config, index, sock, generations)
    found += _mode_needs(config)
    found += _mixes(config, generations)
    return found


def _sockets_alike(config, generations):
    """asymmetric-sockets: every socket carries socket 0's DIMMs."""
    per = config.per_socket
    return [common.Finding(
        common.ERROR, 'asymmetric-sockets',
        'sockets are populated differently: socket %d carries %s but '
        'socket 0 carries %s; every socket must carry the same DIMMs'
        % (index, common.modules(sock), common.modules(per)),
        _symmetry_source(generations))
        for index, sock in enumerate(config.sockets[1:], 1) if sock != per]


def _pmem_parts(config, pmem_dimms, generations):
    """The PMem modules against the CPU and the platform: series, sizes."""
    platform, cpu = config.platform, config.cpu
    found = [common.Finding(common.ERROR, 'pmem-unsupported-cpu',
                            *_cpu_pmem(cpu, dimm))
             for dimm in pmem_dimms
             if dimm.generation not in cpu.pmem_generations]
    found += [common.Finding(common.ERROR, 'pmem-unsupported-platform',
                             *_platform_pmem(platform, dimm))
              for dimm in pmem_dimms
              if dimm.generation not in platform.pmem_generations]
    if len({d.capacity_gb for d in pmem_dimms}) > 1:
        found.append(common.Finding(
            common.ERROR, 'mixed-pmem-sizes',
            'PMem modules of different sizes in one node (%s); all PMem '
            'must be one size' % ', '.join(
                '%s: %g GB' % (d.name, d.capacity_gb) for d in pmem_dimms),
            sources.assumption(
                'every supported PMem combination uses one module size '
                '(%s); applied to PMem %s'
                % (sources.cite('lenovo-pmem200' if '200' in generations
                                else 'lenovo-sr630-pmem-mixes'),
                   ', '.join(generations)))))
    for d in pmem_dimms:
        if (d.generation in cpu.pmem_generations
                and d.capacity_gb > cpu.pmem_max_module_gb):
            found.append(common.Finding(
                common.ERROR, 'pmem-module-too-large',
                'CPU %s takes PMem modules of at most %g GB, not %s (%g GB)'
                % (cpu.name, cpu.pmem_max_module_gb, d.name,
                   d.capacity_gb),
                sources.cite('lenovo-sr630-pmem-mixes', 'PMem 100 sizes by '
                             'processor family: base parts 128 GB only; M '
                             'and L parts larger') if d.generation == '100'
                else common.catalog_source(
                    'CPU', cpu.name,
                    'pmem_max_module_gb %g' % cpu.pmem_max_module_gb,
                    cpu.source)))
    return found


def _socket(config, index, sock, generations):
    """One socket's modules against its slots, channels and controllers."""
    platform = config.platform
    dram, pmem = common.socket_counts(sock)
    where = 'socket %d' % index
    found = []
    if dram + pmem > platform.slots_per_socket:
        found.append(common.Finding(
            common.ERROR, 'too-many-modules',
            '%s has %d modules (%s) for %d slots (%d channels x %d) of '
            'platform %s' % (where, dram + pmem, common.modules(sock),
                             platform.slots_per_socket,
                             platform.channels_per_socket,
                             platform.slots_per_channel, platform.name),
            common.catalog_source(
                'platform', platform.name,
                '%d channels x %d slots per socket'
                % (platform.channels_per_socket,
                   platform.slots_per_channel), platform.source)))
    found += _pmem_channels(platform, where, sock, generations)
    found += _mm_controllers(config, where, sock, generations)
    limit = _limit(config.cpu, sock, config.mode, generations, where)
    if limit:
        found.append(common.Finding(common.ERROR, 'memory-limit', *limit))
    return found


def _pmem_channels(platform, where, sock, generations):
    """pmem-per-channel, pmem-without-dram: a PMem module per channel."""
    dram, pmem = common.socket_counts(sock)
    if pmem > platform.channels_per_socket:
        return [common.Finding(
            common.ERROR, 'pmem-per-channel',
            '%s has %d PMem modules (%s) on the %d channels of platform '
            '%s; at most one per channel'
            % (where, pmem, common.modules(sock, pmem=True),
               platform.channels_per_socket, platform.name),
            sources.cite('lenovo-sr630-pmem-mixes', 'at most one PMem '
                         'module per channel: no PMem 100 mix has more '
                         'PMem modules than channels')
            if generations == ['100'] else sources.cite(
                'lenovo-pmem200', 'no PMem 200 combination has more '
                'PMem modules than channels'))]
    if pmem > dram:
        # Each PMem channel needs a DRAM module beside it.
        return [common.Finding(
            common.ERROR, 'pmem-without-dram',
            '%s has %d PMem modules (%s) but %s; a channel would carry '
            'PMem with no DRAM'
            % (where, pmem, common.modules(sock, pmem=True),
               'only %d DRAM (%s)'
               % (dram, common.modules(sock, pmem=False))
               if dram else 'no DRAM'),
            sources.cite('lenovo-sr630-pmem-mixes', 'every mix has at '
                         'least as many DRAM as PMem modules per '
                         'socket: each PMem module has a DRAM module '
                         'on its channel'))]
    return []


def _mm_controllers(config, where, sock, generations):
    """mm-controller: Memory Mode's DRAM and PMem on every controller."""
    platform = config.platform
    dram, pmem = common.socket_counts(sock)
    ctrl = platform.controllers_per_socket
    if not (config.mode == kinds.MEMORY_MODE
            and (0 < pmem < ctrl or 0 < dram < ctrl)):
        return []
    return [common.Finding(
        common.ERROR, 'mm-controller',
        '%s has %d DRAM and %d PMem modules for %d memory '
        'controllers of platform %s (%s); Memory Mode needs DRAM '
        'and PMem on every controller'
        % (where, dram, pmem, ctrl, platform.name, common.modules(sock)),
        MM_POPULATION_SOURCE if generations == ['100']
        else sources.assumption(
            'the PMem 100 rule (%s) holds for PMem 200, whose '
            'single-module mix, 8 DRAM + 1 PMem, is App Direct '
            'only' % sources.cite('fujitsu-rx4770-m5')))]


def _mode_needs(config):
    """The modules the mode needs, and PMem that dram mode leaves unused."""
    mode, per = config.mode, config.per_socket
    dram, pmem = common.socket_counts(per)
    found = []
    kind = kinds.get(mode)
    if kinds.PMEM_MEDIUM in kind.media and not pmem:
        found.append(common.Finding(
            common.ERROR, 'mode-without-pmem',
            'mode %s needs PMem modules; configuration %s has none (%s per '
            'socket)' % (mode, config.name, common.modules(per)),
            MODES_SOURCE))
    if kind.far_memory == kinds.PMEM_MEDIUM and not dram:
        found.append(common.Finding(
            common.ERROR, 'mode-without-dram',
            'Memory Mode needs DRAM as the cache in front of PMem; '
            'configuration %s has no DRAM (%s per socket)'
            % (config.name, common.modules(per)),
            MODES_SOURCE))
    if mode == kinds.DRAM and pmem:
        found.append(common.Finding(
            common.WARNING, 'pmem-unused',
            'PMem modules are installed (%s per socket) but configuration '
            '%s runs in dram mode, where they add cost and power but no '
            'memory' % (common.modules(per, pmem=True), config.name),
            MODES_SOURCE))
    return found


def _mixes(config, generations):
    """A socket's mix: the Memory Mode ratio, OEM mixes, even channels."""
    mode, per, platform = config.mode, config.per_socket, config.platform
    dram, pmem = common.socket_counts(per)
    found = []
    if mode == kinds.MEMORY_MODE and dram and pmem:
        dram_gb = common.socket_gb(per, pmem=False)
        pmem_gb = common.socket_gb(per, pmem=True)
        ratio = pmem_gb / dram_gb
        if not MM_RATIO_MIN <= ratio <= MM_RATIO_MAX:
            found.append(common.Finding(
                common.WARNING, 'mm-ratio',
                'DRAM:PMem is 1:%.1f per socket (%g GB of %s : %g GB of %s), '
                'outside the 1:%g to 1:%g Memory Mode guidance (1:8 '
                'recommended)'
                % (ratio, dram_gb, common.modules(per, pmem=False), pmem_gb,
                   common.modules(per, pmem=True), MM_RATIO_MIN,
                   MM_RATIO_MAX),
                MM_RATIO_SOURCE))
    if pmem and generations and (pmem, dram) not in OEM_MIXES.get(
            generations[0], set()):
        found.append(common.Finding(
            common.WARNING, 'not-oem-mix',
            '%d PMem + %d DRAM per socket (%s) is not a mix OEMs offer for '
            'PMem %s (PMem + DRAM: %s)'
            % (pmem, dram, common.modules(per), generations[0], ', '.join(
                '%d+%d' % m for m in sorted(OEM_MIXES[generations[0]]))),
            OEM_MIX_SOURCES[generations[0]]))
    if dram and dram % platform.channels_per_socket and not pmem:
        found.append(common.Finding(
            common.WARNING, 'unbalanced-channels',
            '%d DRAM modules (%s) on the %d channels of platform %s leave '
            'channels uneven, which lowers memory bandwidth'
            % (dram, common.modules(per), platform.channels_per_socket,
               platform.name),
            sources.assumption('channels populated alike, as balanced-'
                               'memory guidance asks (%s)'
                               % sources.cite('wwt-xeon-population'))))
    return found
