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
"""Which CPUs a platform can take: the one rule search and scenarios share.

A platform's board is built for one CPU socket. A catalog platform lists
the CPU generations it takes (``cpu_generations``; a CPU gives its
``generation``), and a CPU of another generation does not fit. A platform
that lists none is judged by its memory interface: a CPU generation fixes
its socket and its memory interface (DIMM type and channels per socket),
so such a platform takes the generations of :data:`GENERATIONS` whose
interface it wires. There, a CPU of a generation the table does not know,
or a platform whose interface matches no generation here, is not judged
(nothing says it cannot be built); generations that share an interface on
different sockets (Xeon 6900P and EPYC 9005 both wire 12 DDR5 channels)
are told apart only by a platform that lists its generations.
"""

import collections

from nova_pmem_filters.planner.population import common
from nova_pmem_filters.planner.population import sources


Generation = collections.namedtuple(
    'Generation', 'description socket memory_type channels source')

# (source id of nova_pmem_filters.planner.population.sources, what it says)
_LGA3647 = ('ice-lake-socket', 'Skylake and Cascade Lake: LGA3647, six DDR4 '
            'channels')

GENERATIONS = {
    'skylake': Generation('1st-gen Xeon Scalable, Skylake-SP', 'LGA3647',
                          'ddr4', 6, _LGA3647),
    'cascade_lake': Generation('2nd-gen Xeon Scalable, Cascade Lake',
                               'LGA3647', 'ddr4', 6, _LGA3647),
    'ice_lake': Generation('3rd-gen Xeon Scalable, Ice Lake', 'LGA4189',
                           'ddr4', 8, ('ice-lake-socket', 'Ice Lake: '
                                       'LGA4189, eight DDR4 channels')),
    'sapphire_rapids': Generation(
        '4th-gen Xeon Scalable, Sapphire Rapids', None, 'ddr5', 8,
        ('wwt-xeon-population', 'four controllers and eight channels, '
         'DDR5')),
}


def _interface(memory_type, channels):
    return '%d %s channels per socket' % (channels, memory_type.upper())


def _describe(generation):
    gen = GENERATIONS.get(generation)
    if gen is None:
        return 'generation %s' % generation
    return '%s%s' % (gen.description,
                     ' (socket %s)' % gen.socket if gen.socket else '')


def platform_generations(platform):
    """The CPU generations the platform takes.

    Those it lists, else those of the table whose memory interface it
    wires.
    """
    if platform.cpu_generations:
        return list(platform.cpu_generations)
    return [name for name, gen in GENERATIONS.items()
            if gen.memory_type == platform.memory_type
            and gen.channels == platform.channels_per_socket]


def cpu_problem(platform, cpu, catalog=None):
    """The error Finding when ``platform`` cannot take ``cpu``, or None.

    :param catalog: when given, the message also lists the catalog's CPUs
        the platform takes.
    """
    takes = platform_generations(platform)
    listed = bool(platform.cpu_generations)
    gen = GENERATIONS.get(cpu.generation)
    if not takes or cpu.generation in takes or (gen is None and not listed):
        return None
    if listed:
        message = ('CPU %s, %s, does not fit platform %s, whose board takes '
                   'only CPUs of: %s' % (
                       cpu.name, _describe(cpu.generation), platform.name,
                       '; '.join(_describe(g) for g in takes)))
    else:
        message = ('CPU %s, %s with %s, does not fit platform %s, whose %s '
                   'take only CPUs of: %s' % (
                       cpu.name, _describe(cpu.generation),
                       _interface(gen.memory_type, gen.channels),
                       platform.name,
                       _interface(platform.memory_type,
                                  platform.channels_per_socket),
                       '; '.join(_describe(g) for g in takes)))
    if catalog is not None:
        names = sorted(c.name for c in catalog.cpus.values()
                       if c.generation in takes)
        message += ('; CPUs of the catalog it takes: %s'
                    % (', '.join(names) or 'none'))
    said = collections.OrderedDict()
    for name in [cpu.generation] + takes:
        if name not in GENERATIONS:
            continue
        source_id, detail = GENERATIONS[name].source
        said.setdefault(source_id, [])
        if detail not in said[source_id]:
            said[source_id].append(detail)
    cited = [sources.cite_all(*[(source_id, '; '.join(details))
                                for source_id, details in said.items()])
             ] if said else []
    if listed:
        cited.append(sources.assumption(
            'the catalog entry of platform %s lists the CPU generations its '
            'board takes (%s)' % (platform.name, ', '.join(takes))))
    return common.Finding(common.ERROR, 'cpu-unsupported-platform', message,
                          '; '.join(cited))


def check(config):
    """The CPU-platform finding of one NodeConfig, as a list."""
    problem = cpu_problem(config.platform, config.cpu)
    return [problem] if problem else []
