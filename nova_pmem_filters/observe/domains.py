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
"""The Nova instances running on this host, read from libvirt's status files.

libvirt-python is not needed: for every running domain, libvirtd keeps a
status file, ``/run/libvirt/qemu/<name>.xml``, written by
``virDomainObjFormat`` (``src/conf/domain_conf.c``)::

    <!-- WARNING: THIS IS AN AUTO-GENERATED FILE. ... -->
    <domstatus state='running' reason='booted' pid='4242'>
      <monitor path='...' type='unix'/>
      ...
      <domain type='kvm' id='7'>
        <name>instance-0000002a</name>
        <uuid>...</uuid>
        <metadata>
          <nova:instance
              xmlns:nova="http://openstack.org/xmlns/libvirt/nova/1.1">
            <nova:flavor name="m1.redis">
              <nova:memory>24576</nova:memory>
              <nova:vcpus>4</nova:vcpus>
              ...

The domain inside is the live definition Nova's libvirt driver wrote
(``nova.virt.libvirt.config.LibvirtConfigGuest``) with the metadata of
``LibvirtConfigGuestMetaNovaInstance``. Reading the files needs read access
to the directory (root, or the libvirt group on some distributions) and no
connection to libvirtd, so the observer never waits on a busy daemon.

A domain that is not Nova's, or a file that cannot be read, is reported as
a gap naming the file: never a crash, never silently dropped.
"""

import collections
import os
import xml.etree.ElementTree as etree

from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters import fileutil

DEFAULT_DIR = '/run/libvirt/qemu'
# Nova's metadata namespace (nova/virt/libvirt/config.py NOVA_NS); 1.0 is
# what Nova wrote before the Ocata-era 1.1 and is read the same way.
NOVA_NAMESPACES = ('http://openstack.org/xmlns/libvirt/nova/1.1',
                   'http://openstack.org/xmlns/libvirt/nova/1.0')
# virDomainState names of a domain whose guest runs (or waits for a host
# resource): the ones whose memory can be measured. A paused or crashed
# guest touches nothing, and its zero working set would be misread.
RUNNING = frozenset(['running', 'blocked'])

Instance = collections.namedtuple(
    'Instance', 'uuid name flavor flavor_ram_mb flavor_vcpus pid '
    'declared_hot_ratio declared_gap', defaults=(None, None))


class DomainError(ValueError):
    """A status file or directory we cannot use; the message names it."""

    def __init__(self, source, message):
        self.source = source
        super().__init__(' '.join(('%s: %s' % (source, message)).split()))


def _integer(text, source, what, minimum=0):
    try:
        value = int((text or '').strip())
    except ValueError:
        raise DomainError(source, 'expected an integer %s, got %r'
                          % (what, text))
    if value < minimum:
        raise DomainError(source, 'expected %s of %d or more, got %d'
                          % (what, minimum, value))
    return value


def _nova(domain):
    """The domain's ``<nova:instance>`` element and its namespace."""
    for ns in NOVA_NAMESPACES:
        found = domain.find('metadata/{%s}instance' % ns)
        if found is not None:
            return found, ns
    return None, None


def parse_status(text, source):
    """One status file's Nova instance; None for a domain not running.

    :raises DomainError: naming ``source`` on bad XML, a file that is not a
        status file, or a domain without Nova's metadata.
    """
    try:
        root = etree.fromstring(text)
    except etree.ParseError as exc:
        raise DomainError(source, 'not valid XML: %s' % exc)
    if root.tag != 'domstatus':
        raise DomainError(source, 'expected a libvirt status file (root '
                          'element domstatus), got <%s>' % root.tag)
    state = root.get('state')
    if state not in RUNNING:
        return None
    pid = _integer(root.get('pid'), source, 'pid', minimum=1)
    domain = root.find('domain')
    if domain is None:
        raise DomainError(source, 'no <domain> in <domstatus>')
    name = (domain.findtext('name') or '').strip() or None
    uuid = (domain.findtext('uuid') or '').strip() or None
    meta, ns = _nova(domain)
    if meta is None:
        raise DomainError(source, 'domain %s has no Nova metadata '
                          '(<nova:instance>): not a Nova instance'
                          % (name or '(unnamed)'))
    if not uuid:
        raise DomainError(source, 'domain %s has no <uuid>' % name)
    flavor = meta.find('{%s}flavor' % ns)
    if flavor is None:
        raise DomainError(source, 'domain %s has no <nova:flavor>' % name)
    ram = _integer(flavor.findtext('{%s}memory' % ns), source,
                   'nova:flavor/nova:memory (MB)', minimum=1)
    vcpus = flavor.findtext('{%s}vcpus' % ns)
    vcpus = (None if vcpus is None else
             _integer(vcpus, source, 'nova:flavor/nova:vcpus', minimum=1))
    declared, gap = _declared(flavor, ns, name)
    return Instance(uuid=uuid, name=name, flavor=flavor.get('name') or None,
                    flavor_ram_mb=ram, flavor_vcpus=vcpus, pid=pid,
                    declared_hot_ratio=declared, declared_gap=gap)


def _declared(flavor, ns, name):
    """(pmem:hot_ratio the flavor declares, or None; a gap, or None).

    Nova's libvirt driver copies the flavor's extra specs into the metadata
    (``<nova:extraSpecs><nova:extraSpec name=...>``, in recent releases,
    34.0.0 among them); older releases do not, and a flavor without the
    key leaves the scheduler's default (nova.conf), which the observer does
    not know: both are None. A value the core refuses is None with a gap
    naming it (the scheduler counts such a flavor's RAM all hot).
    """
    for spec in flavor.findall('{%s}extraSpecs/{%s}extraSpec' % (ns, ns)):
        if spec.get('name') != extra_specs.HOT_RATIO_KEY:
            continue
        value = (spec.text or '').strip()
        try:
            return extra_specs.parse_hot_ratio(value), None
        except extra_specs.InvalidExtraSpec as exc:
            return None, 'domain %s: %s' % (name, exc)
    return None, None


def read_status(path):
    """The Nova instance of one status file (see :func:`parse_status`)."""
    try:
        text = fileutil.read_bytes(path)
    except OSError as exc:
        raise DomainError(path, 'cannot read the file: %s'
                          % (exc.strerror or exc))
    return parse_status(text, path)


def instances(directory=DEFAULT_DIR):
    """The running Nova instances of ``directory``'s status files.

    :returns: ([Instance, ...] in file-name order, [gap, ...]) where each
        gap is one line naming a file that was not understood.
    :raises DomainError: when the directory cannot be listed.
    """
    try:
        names = sorted(os.listdir(directory))
    except OSError as exc:
        raise DomainError(directory, 'cannot list the libvirt status '
                          'directory: %s' % (exc.strerror or exc))
    found = []
    gaps = []
    for name in names:
        # libvirt keeps <name>.pid, monitor sockets and per-domain
        # directories beside the status files.
        if not name.endswith('.xml'):
            continue
        path = os.path.join(directory, name)
        try:
            inst = read_status(path)
        except DomainError as exc:
            gaps.append(str(exc))
            continue
        if inst is not None:
            found.append(inst)
    return found, gaps
