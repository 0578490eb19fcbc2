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

``error``: the machine cannot be built or will not boot in that mode (a CPU
the platform cannot take, PMem on a CPU that cannot drive it, more modules
than slots, a PMem channel without DRAM, sockets populated differently, over
the CPU's memory limit). A configuration with an error is refused.

``warning``: legal, but outside vendor guidance (a Memory-Mode DRAM:PMem
ratio outside 1:4 to 1:16, a mix no OEM offers). Warnings are shown in every
report next to the numbers they qualify.

Every source is a public document of
:mod:`nova_pmem_filters.planner.population.sources` (title and URL), a catalog
entry's own source, or an ``assumption``.

One module per family: ``common`` (findings, severities and what a socket
holds), ``cpus`` (which CPUs a platform takes), ``pmem`` (the DIMM and PMem
rules) and ``cxl`` (the DDR5 and CXL rules); :func:`check` runs them all.
"""

from nova_pmem_filters.planner.population import common
from nova_pmem_filters.planner.population import cpus
from nova_pmem_filters.planner.population import cxl
from nova_pmem_filters.planner.population import pmem


def check(config):
    """All findings for one NodeConfig, errors first.

    Each finding names the parts involved (configuration, socket, CPU,
    platform, modules) and cites the source that applies to this case.
    """
    found = cpus.check(config) + pmem.check(config) + cxl.check(config)
    return sorted(found, key=lambda f: (f.severity != common.ERROR, f.code))
