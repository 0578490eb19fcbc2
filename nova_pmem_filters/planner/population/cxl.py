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
"""Population rules of DDR5 platforms and CXL memory devices.

Same severities and style as :mod:`nova_pmem_filters.planner.population.pmem`
(the package runs both families): ``error`` for what cannot be built or will
not boot in that mode (a DIMM of the wrong DDR generation, CXL memory on a CPU
or platform without CXL lanes, more device lanes than the socket has, flat
memory mode off its fixed 1:1 DRAM:CXL ratio or on mixed DIMM sizes),
``warning`` for what is legal but outside guidance (a kmem DRAM:CXL ratio
outside a sensible band, CXL devices a mode does not use). Sources are URLs or
assumptions.
"""

from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.planner.population import common


# Intel Flat Memory Mode keeps near memory (DRAM) and far memory (CXL) at a
# fixed 1:1 capacity ratio per socket.
FLAT_RATIO = 1.0
FLAT_RATIO_SOURCE = ('https://www.intel.com/content/www/us/en/support/'
                     'articles/000102525/processors/intel-xeon-processors'
                     '.html (Flat Memory Mode maintains a 1:1 ratio between '
                     'near memory, DRAM, and far memory, CXL)')
# Kernel tiering (kmem): no ratio is required. Outside CXL:DRAM 1:4 to 2:1
# most hot pages cannot stay in DRAM (above) or the CXL tier adds little
# capacity for its lanes and cost (below).
KMEM_RATIO_MIN = 0.25
KMEM_RATIO_MAX = 2.0
KMEM_RATIO_SOURCE = (
    'assumption (no vendor band for kmem; a hypervisor\'s memory tiering '
    'defaulting to DRAM:tier 1:1, with active memory kept at or below half '
    'of DRAM, widened by 4x below and 2x above)')
CXL_MODES = frozenset(kinds.CXL_MODES)


def check(config):
    """The DDR5 and CXL findings for one NodeConfig."""
    cxl = sorted({d for sock in config.sockets for d in sock if d.is_cxl},
                 key=lambda d: d.name)
    return _parts(config, cxl) + _modes(config, cxl)


def _parts(config, cxl):
    """The modules against the board and the CPU: DIMM type, CXL lanes."""
    found = []

    def add(severity, code, message, source):
        found.append(common.Finding(severity, code, message, source))

    platform, cpu = config.platform, config.cpu
    for dimm in sorted({d for sock in config.sockets for d in sock
                        if d.is_dram and d.type != platform.memory_type},
                       key=lambda d: d.name):
        add(common.ERROR, 'dimm-type-unsupported',
            'platform %s takes %s DIMMs, not %s (%s)'
            % (platform.name, platform.memory_type.upper(),
               dimm.type.upper(), dimm.name),
            common.catalog_source('platform', platform.name, 'memory_type %s'
                                  % platform.memory_type, platform.source))
    if cxl and not cpu.cxl_lanes:
        add(common.ERROR, 'cxl-unsupported-cpu',
            'CPU %s has no CXL lanes and cannot drive CXL memory (%s)'
            % (cpu.name, ', '.join(d.name for d in cxl)),
            common.catalog_source('CPU', cpu.name, 'cxl_lanes 0', cpu.source))
    if cxl and not platform.cxl_lanes:
        add(common.ERROR, 'cxl-unsupported-platform',
            'platform %s wires no CXL lanes to device bays (%s)'
            % (platform.name, ', '.join(d.name for d in cxl)),
            common.catalog_source('platform', platform.name, 'cxl_lanes 0',
                                  platform.source))
    lanes_available = min(cpu.cxl_lanes, platform.cxl_lanes)
    for index, sock in enumerate(config.sockets):
        lanes = sum(d.lanes * n for d, n in sock.items() if d.is_cxl)
        if lanes and lanes_available and lanes > lanes_available:
            add(common.ERROR, 'cxl-lanes',
                'socket %d needs %d CXL lanes (%s) but has %d (CPU %s: %d, '
                'platform %s: %d per socket)'
                % (index, lanes, common.modules(sock, pmem='cxl'),
                   lanes_available, cpu.name, cpu.cxl_lanes, platform.name,
                   platform.cxl_lanes),
                common.catalog_source('CPU', cpu.name,
                                      'cxl_lanes %d' % cpu.cxl_lanes,
                                      cpu.source))
    return found


def _modes(config, cxl):
    """What each mode needs of the DRAM and CXL tiers, and their ratio."""
    found = []

    def add(severity, code, message, source):
        found.append(common.Finding(severity, code, message, source))

    cpu, mode, per = config.cpu, config.mode, config.per_socket
    dram_gb = common.socket_gb(per, pmem=False)
    cxl_gb = common.socket_gb(per, pmem='cxl')
    if mode in CXL_MODES and not cxl_gb:
        add(common.ERROR, 'mode-without-cxl',
            'mode %s needs CXL memory devices; configuration %s has none (%s '
            'per socket)' % (mode, config.name, common.modules(per)),
            'assumption (planner design: the cxl_* host kinds are modes of '
            'CXL memory)')
    kind = kinds.get(mode)
    if kind.far_memory == kinds.CXL_MEDIUM and not dram_gb:
        add(common.ERROR, 'mode-without-dram',
            'mode %s needs DRAM as the near tier in front of CXL memory; '
            'configuration %s has no DRAM (%s per socket)'
            % (mode, config.name, common.modules(per)),
            FLAT_RATIO_SOURCE if mode == kinds.CXL_FLAT else
            'assumption (planner design: pmem_dram_cache_gb of a cxl_kmem '
            'host is its DRAM)')
    if mode == kinds.CXL_FLAT and cxl and not cpu.flat_memory_mode:
        add(common.ERROR, 'flat-unsupported-cpu',
            'CPU %s offers no flat memory mode (hardware-managed CXL '
            'tiering); run its CXL memory as cxl_kmem' % cpu.name,
            common.catalog_source('CPU', cpu.name, 'flat_memory_mode false',
                                  cpu.source))
    if mode == kinds.CXL_FLAT and dram_gb and cxl_gb:
        if abs(cxl_gb / dram_gb - FLAT_RATIO) > 1e-9:
            add(common.ERROR, 'flat-ratio',
                'DRAM:CXL is 1:%.2f per socket (%g GB of %s : %g GB of %s); '
                'flat memory mode needs exactly 1:1'
                % (cxl_gb / dram_gb, dram_gb, common.modules(per, pmem=False),
                   cxl_gb, common.modules(per, pmem='cxl')), FLAT_RATIO_SOURCE)
        sizes = sorted({d.capacity_gb for d in per if d.is_dram})
        if len(sizes) > 1:
            add(common.ERROR, 'flat-mixed-dimm-sizes',
                'DRAM DIMMs of different sizes on one socket (%s); flat '
                'memory mode needs one DIMM size'
                % common.modules(per, pmem=False),
                'https://wwt.com/article/memory-population-guidelines-for-'
                'intel-4th-gen-xeon-scalable-processors (each DIMM must '
                'have an identical size, speed and rank)')
    if mode == kinds.CXL_KMEM and dram_gb and cxl_gb:
        ratio = cxl_gb / dram_gb
        if not KMEM_RATIO_MIN <= ratio <= KMEM_RATIO_MAX:
            add(common.WARNING, 'kmem-ratio',
                'DRAM:CXL is 1:%.2f per socket (%g GB : %g GB), outside '
                '1:%g to 1:%g, where kernel tiering keeps the hot pages in '
                'DRAM and the CXL tier pays for itself'
                % (ratio, dram_gb, cxl_gb, KMEM_RATIO_MIN, KMEM_RATIO_MAX),
                KMEM_RATIO_SOURCE)
    if cxl and kinds.CXL_MEDIUM not in kind.media:
        add(common.WARNING, 'cxl-unused',
            'CXL memory devices are installed (%s per socket) but '
            'configuration %s runs in %s mode, where they add cost and '
            'power but no memory' % (common.modules(per, pmem='cxl'),
                                     config.name, mode),
            'assumption (planner design: CXL memory serves the cxl_* host '
            'kinds only)')
    return found
