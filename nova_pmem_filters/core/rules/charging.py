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
"""What an instance charges to near memory where the kernel tiers."""

from nova_pmem_filters.core.rules import tiering


# Flavor extra specs that give a guest a NUMA topology, so strictly bound
# memory (nova.virt.hardware.numa_get_constraints).
_NUMA_KEY = 'hw:numa_nodes'


_PAGE_SIZE_KEY = 'hw:mem_page_size'


_CPU_POLICY_KEY = 'hw:cpu_policy'


_PCPU_KEY = 'resources:PCPU'


_VPMEM_KEY = 'hw:pmem'


_PINNED_POLICIES = ('dedicated', 'mixed')


def whole_ram(prof, bound):
    """Whether an instance's whole RAM counts against near memory.

    On a kernel-tiered host, an instance whose memory Nova binds
    (``bound``), and every instance where the kernel does not tier.
    """
    return tiering.kernel_tiered(prof) and (bound
                                            or not tiering.promotes(prof))


def instance_ratio(prof, hot_ratio, bound):
    """The share of an instance's RAM it charges to a host's near memory."""
    return 1.0 if whole_ram(prof, bound) else hot_ratio


def instance_mb(prof, request, memory_mb, bound):
    """Near-memory MB an instance of ``memory_mb`` charges on ``prof``."""
    return memory_mb * instance_ratio(prof, request.hot_ratio, bound)


def charged(prof, used):
    """A host's hot RAM (:class:`~.nearmem.HotRam`) as charged.

    Hot RAM everywhere but on kernel-tiered hosts, where the NUMA-bound
    instances charge their whole RAM (per cell) and, where the kernel does
    not tier, every instance does.
    """
    charge = charger(prof)
    return used if charge is None or used is None else charge(used)


def charger(prof):
    """:func:`charged` for the hosts of profile ``prof``, chosen once.

    None where the charge is the hot RAM as counted, so that the rules
    that judge thousands of hosts a request call nothing for them; else a
    function of a HotRam.
    """
    if not tiering.kernel_tiered(prof):
        return None
    if not tiering.promotes(prof):
        return lambda used: used.as_ram()
    return lambda used: used.bound_as_ram()


def binds_memory(extra_specs):
    """Why Nova binds a flavor's guest memory to host cells, or None.

    Nova gives a guest a NUMA topology, and libvirt ``<numatune
    mode="strict">``, for ``hw:numa_nodes``, ``hw:mem_page_size`` (huge
    pages are not moved by NUMA balancing either), a dedicated or mixed
    CPU policy (``hw:cpu_policy``, ``resources:PCPU``) and ``hw:pmem``
    (``nova.virt.hardware.numa_get_constraints``). Image properties can
    too; the scheduler reads the request's topology itself.

    :returns: the first such extra spec as ``key=value``, or None.
    """
    specs = extra_specs or {}
    for key in (_NUMA_KEY, _PAGE_SIZE_KEY, _VPMEM_KEY):
        if specs.get(key):
            return '%s=%s' % (key, specs[key])
    if str(specs.get(_CPU_POLICY_KEY, '')).lower() in _PINNED_POLICIES:
        return '%s=%s' % (_CPU_POLICY_KEY, specs[_CPU_POLICY_KEY])
    pcpus = str(specs.get(_PCPU_KEY, '')).strip()
    if pcpus.isdigit() and int(pcpus) > 0:
        return '%s=%s' % (_PCPU_KEY, pcpus)
    return None


def hot_on_far_mb(hot_mb, near_resident_mb):
    """Hot MB of a guest that must sit on far nodes.

    A guest whose working set is larger than what it has resident on the
    DRAM nodes has at least the difference on the far nodes.
    """
    if hot_mb is None or near_resident_mb is None:
        return None
    return max(float(hot_mb) - float(near_resident_mb), 0.0)
