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
"""Fake compute hosts for the observer's tests: libvirt, /proc and /sys.

Domain XML comes from Nova's own ``nova.virt.libvirt.config`` classes,
wrapped in a ``<domstatus>`` element as libvirtd writes its status files.
"""

import os

from nova.virt.libvirt import config as vconfig
import testtools

from nova_pmem_filters.observe import host

# Whether the installed Nova copies the flavor's extra specs into the
# domain's metadata (<nova:extraSpecs>): Nova 32.0.0 (2025.2) and later do,
# 31.x (2025.1) does not, and the observer then declares no hot ratio
# (None), as documented. The one place the tests tell the two apart: see
# declared().
NOVA_WRITES_EXTRA_SPECS = hasattr(
    vconfig, 'LibvirtConfigGuestMetaNovaFlavorExtraSpecs')

UUID_A = 'a1b2c3d4-0000-4000-8000-00000000000a'
UUID_B = 'a1b2c3d4-0000-4000-8000-00000000000b'


def guest_xml(uuid, name, flavor='m1.redis', memory_mb=4096, vcpus=2,
              nova=True, extra_specs=None):
    """A libvirt domain definition as Nova's libvirt driver writes it.

    ``extra_specs``: the flavor's, which the installed Nova copies into the
    metadata (``<nova:extraSpecs>``) if it is 32.0.0 or later
    (:data:`NOVA_WRITES_EXTRA_SPECS`); None: none.
    """
    guest = vconfig.LibvirtConfigGuest()
    guest.virt_type = 'kvm'
    guest.name = name
    guest.uuid = uuid
    guest.memory = memory_mb * 1024
    guest.vcpus = vcpus
    if nova:
        meta = vconfig.LibvirtConfigGuestMetaNovaInstance()
        meta.package = '34.0.0'
        meta.name = 'vm-' + name
        meta.creationTime = 1700000000
        meta.flavor = vconfig.LibvirtConfigGuestMetaNovaFlavor()
        meta.flavor.name = flavor
        meta.flavor.id = '42'
        meta.flavor.memory = memory_mb
        meta.flavor.vcpus = vcpus
        meta.flavor.disk = 20
        meta.flavor.swap = 0
        meta.flavor.ephemeral = 0
        meta.flavor.extra_specs = extra_specs
        meta.owner = vconfig.LibvirtConfigGuestMetaNovaOwner()
        meta.owner.userid = 'u1'
        meta.owner.username = 'demo'
        meta.owner.projectid = 'p1'
        meta.owner.projectname = 'demo'
        guest.metadata.append(meta)
    return guest.to_xml()


# For the tests that compare with stored files the observer wrote from
# domains that declare pmem:hot_ratio: on Nova 31.x they would differ
# exactly by declared_hot_ratio (null there).
needs_nova_extra_specs = testtools.skipUnless(
    NOVA_WRITES_EXTRA_SPECS, 'the stored files come from domains whose Nova '
    '(32.0.0 or later) writes the flavor\'s extra specs')


def declared(value):
    """The hot ratio the observer reads from a flavor declaring ``value``.

    ``value`` itself where the installed Nova writes the flavor's extra
    specs into the domain (:data:`NOVA_WRITES_EXTRA_SPECS`), else None.
    """
    return value if NOVA_WRITES_EXTRA_SPECS else None


def status_xml(domain_xml, state='running', pid=4242):
    """``domain_xml`` in a libvirt status file (virDomainObjFormat)."""
    if isinstance(domain_xml, bytes):
        domain_xml = domain_xml.decode('utf-8')
    return ("<!--\nWARNING: THIS IS AN AUTO-GENERATED FILE. CHANGES TO IT "
            "ARE LIKELY TO BE\nOVERWRITTEN AND LOST.\n-->\n"
            "<domstatus state='%s' reason='booted' pid='%d'>\n"
            "  <monitor path='/var/lib/libvirt/qemu/domain-1/monitor.sock' "
            "type='unix'/>\n"
            "  <vcpus>\n    <vcpu id='0' pid='%d'/>\n  </vcpus>\n"
            "%s</domstatus>\n" % (state, pid, pid + 1, domain_xml))


def one_guest_host(root):
    """A host of one NUMA node with one running guest, under ``root``.

    instance-1 (``UUID_A``, flavor m1.small, 2048 MB), pid 7, 512 MB of it
    referenced.

    :returns: (libvirt directory, proc, sysfs).
    """
    libvirt = os.path.join(root, 'qemu')
    proc = os.path.join(root, 'proc')
    sysfs = os.path.join(root, 'sys')
    os.makedirs(libvirt)
    add_nodes(sysfs, {0: '0-7'})
    add_domain(libvirt, 'instance-1', UUID_A, pid=7, flavor='m1.small',
               memory_mb=2048)
    add_process(proc, 7, referenced_kb=524288, numa_pages={0: 262144})
    return libvirt, proc, sysfs


class Clock(object):
    """time.monotonic and sleep; sleeping moves the clock on.

    ``on_sleep`` runs at each sleep: what changes on the host during the
    observer's window.
    """

    def __init__(self, on_sleep=None):
        self.now = 1000.0
        self.on_sleep = on_sleep

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds
        if self.on_sleep:
            self.on_sleep()


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)


def add_domain(libvirt_dir, name, uuid, pid, state='running', **kwargs):
    write(os.path.join(libvirt_dir, name + '.xml'),
          status_xml(guest_xml(uuid, name, **kwargs), state=state, pid=pid))
    write(os.path.join(libvirt_dir, name + '.pid'), '%d' % pid)


def add_process(proc, pid, referenced_kb, numa_pages, page_kb=4,
                policy='default'):
    """A qemu process of /proc: stat, clear_refs, smaps_rollup, numa_maps.

    ``numa_pages`` is {node: pages of page_kb}, in one mapping of memory
    policy ``policy`` (``bind:1``: bound with MPOL_BIND to node 1).
    """
    base = os.path.join(proc, str(pid))
    write(os.path.join(base, 'stat'),
          '%d (qemu-kvm) S 1 %d %d 0 -1 4194560 1 0 0 0 10 5 0 0 20 0 4 0 '
          '12345 100000 2000 18446744073709551615\n' % (pid, pid, pid))
    write(os.path.join(base, 'clear_refs'), '')
    write(os.path.join(base, 'smaps_rollup'),
          '00400000-7ffd00000000 ---p 00000000 00:00 0 [rollup]\n'
          'Rss:             9999999 kB\n'
          'Referenced:      %d kB\n'
          'Anonymous:       9999999 kB\n' % referenced_kb)
    fields = ' '.join('N%d=%d' % (n, p) for n, p in sorted(numa_pages.items()))
    write(os.path.join(base, 'numa_maps'),
          '7f0000000000 %s anon=%d dirty=%d %s kernelpagesize_kB=%d\n'
          % (policy, sum(numa_pages.values()), sum(numa_pages.values()),
             fields, page_kb))


def add_nodes(sysfs, cpus, memory_kb=16777216):
    """NUMA nodes of sysfs; ``cpus`` is {node: cpulist ('' for none)}.

    Each node's ``meminfo`` gives it ``memory_kb`` (MemTotal).
    """
    for node, cpulist in cpus.items():
        directory = os.path.join(sysfs, 'devices', 'system', 'node',
                                 'node%d' % node)
        write(os.path.join(directory, 'cpulist'), cpulist + '\n')
        write(os.path.join(directory, 'meminfo'),
              'Node %d MemTotal:       %d kB\n'
              'Node %d MemFree:        %d kB\n'
              % (node, memory_kb, node, memory_kb // 2))


# Pages of 4 KiB in a GiB.
GIB_PAGES = 262144


class TwoGuestHost(object):
    """A host tree under ``root``: nodes 0 and 1 with CPUs, node 2 CPU-less.

    Guest A: a 4 GiB flavor, 1 GiB touched, 3 GiB on node 0 and 1 GiB on
    node 2. Guest B: an 8 GiB flavor, 2 GiB touched, its memory bound to
    node 1 (MPOL_BIND): 2 GiB there and 2 MiB on node 0, off its binding.
    ``vmstat`` holds /proc/vmstat before and after the window.
    """

    def __init__(self, root, vmstat):
        self.root = root
        self.libvirt = os.path.join(root, 'run', 'libvirt', 'qemu')
        self.proc = os.path.join(root, 'proc')
        self.sysfs = os.path.join(root, 'sys')
        os.makedirs(self.libvirt)
        self.paths = host.default_paths(proc=self.proc, sysfs=self.sysfs,
                                        libvirt=self.libvirt)
        add_nodes(self.sysfs, {0: '0-15', 1: '16-31', 2: ''})
        add_domain(self.libvirt, 'instance-0000000a', UUID_A, pid=101,
                   flavor='m1.small', memory_mb=4096, vcpus=2,
                   extra_specs={'pmem:hot_ratio': '0.2'})
        add_process(self.proc, 101, referenced_kb=1048576,
                    numa_pages={0: 3 * GIB_PAGES, 2: GIB_PAGES})
        add_domain(self.libvirt, 'instance-0000000b', UUID_B, pid=102,
                   flavor='m1.large', memory_mb=8192, vcpus=4)
        add_process(self.proc, 102, referenced_kb=2097152,
                    numa_pages={0: 512, 1: 2 * GIB_PAGES}, policy='bind:1')
        self.vmstat = vmstat
        self.write_vmstat(0)

    def write_vmstat(self, i):
        write(self.paths.vmstat, ''.join(
            '%s %d\n' % kv for kv in sorted(self.vmstat[i].items())))
