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
"""Checks of instances with vPMEM: their namespaces' NUMA nodes.
"""

from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import vpmem
from nova_pmem_filters.doctor import findings
from nova_pmem_filters.doctor import snapshot


VPMEM_DOC = 'doc/source/numa-vpmem.rst'


def _vpmem_labels(server):
    return extra_specs.vpmem_labels(server.extra_specs)


def _label_nodes(label, prof, inventories):
    """NUMA nodes of the namespaces Nova may give for ``label``, or a reason.

    Labels are mapped to namespaces by [libvirt] pmem_namespaces on the
    compute host, which the doctor cannot read: it takes discovery's rule
    (nova-pmem-discover --libvirt) and trusts it only where Placement has
    as many CUSTOM_PMEM_NAMESPACE_<LABEL> as the rule finds namespaces.
    """
    named = [ns for ns in prof.namespaces
             if ns.mode == 'devdax' and ns.name
             and vpmem.label_for(ns.size_gb) == label]
    rc = vpmem.resource_class(label)
    totals = {inv[rc].get('total') for inv in inventories if rc in inv}
    if not named or totals != {len(named)}:
        return None, ('label %s: discovery (%s) finds %d namespace(s) of '
                      'that size, Placement has %s %s'
                      % (label, prof.source, len(named),
                         ' or '.join(str(t) for t in sorted(totals))
                         if totals else 'no', rc))
    if any(ns.numa_node is None for ns in named):
        return None, ('label %s: discovery (%s) has no NUMA node for its '
                      'namespaces' % (label, prof.source))
    return {ns.name: ns.numa_node for ns in named}, None


def _where(names):
    """'ns0, ns1 on node 1' from {name: node}."""
    by_node = {}
    for name, node in sorted(names.items()):
        by_node.setdefault(node, []).append(name)
    return '; '.join('%s on node %d' % (', '.join(ns), node)
                     for node, ns in sorted(by_node.items()))


def check(snap, view):
    """Instances whose vPMEM is not on the host node of their guest node 0.

    Nova's libvirt driver claims any free namespace of the label, whatever
    the instance's host NUMA cells, and attaches every vPMEM to guest NUMA
    node 0 (doc/source/numa-vpmem.rst).
    """
    found = []
    nodes = {c.host: c.nodes for c in snap.computes}
    by_host = {}
    for server in snap.servers:
        if server.host and _vpmem_labels(server):
            by_host.setdefault(server.host, []).append(server)
    for host in sorted(by_host):
        obj = 'host %s' % host
        servers = sorted(by_host[host], key=lambda s: (s.name, s.id))
        multi = [s for s in servers if s.numa_nodes
                 and len(s.numa_nodes) > 1]
        if multi:
            found.append(findings.Finding(
                findings.WARNING, 'vpmem-guest-numa-nodes', obj,
                'instances with vPMEM and several guest NUMA nodes see '
                'their vPMEM on guest node 0 only (Nova attaches every '
                'vPMEM there); the vCPUs of the other nodes reach it '
                'across sockets: %s' % findings.names(
                    '%s (%s, host nodes %s)' % (
                        s.name, s.id, ','.join(str(n) for n in s.numa_nodes))
                    for s in multi),
                'give vPMEM flavors hw:numa_nodes=1 (see %s); existing '
                'instances keep their layout until resized to such a '
                'flavor' % VPMEM_DOC))
        prof = view.discovered.get(host)
        inventories = [snap.providers[n].inventories
                       for n in nodes.get(host, ())
                       if n in snap.providers]
        remote = []
        unknown = []
        for server in servers:
            what = '%s (%s)' % (server.name, server.id)
            if not server.numa_nodes:
                unknown.append('%s: its host NUMA nodes are not visible '
                               '(GET /servers/%s/topology at microversion '
                               '%s gave no host_node)'
                               % (what, server.id,
                                  snapshot.TOPOLOGY_MICROVERSION))
                continue
            if prof is None:
                # Without --fleet the namespaces' nodes are unknown; the
                # doctor says nothing rather than guess.
                continue
            local = server.numa_nodes[0]
            for label in _vpmem_labels(server):
                names, reason = _label_nodes(label, prof, inventories)
                if names is None:
                    unknown.append('%s: %s' % (what, reason))
                elif local not in names.values():
                    remote.append('%s: guest node 0 on host node %d, %s '
                                  'namespaces %s' % (what, local, label,
                                                     _where(names)))
                elif set(names.values()) != {local}:
                    unknown.append(
                        '%s: guest node 0 on host node %d; Nova\'s API '
                        'does not say which %s namespace it holds (%s)'
                        % (what, local, label, _where(names)))
        if remote:
            found.append(findings.Finding(
                findings.WARNING, 'vpmem-numa-remote', obj,
                'instances whose vPMEM namespace is on another NUMA node '
                'than their guest node 0, so every access crosses sockets: '
                '%s' % findings.names(remote),
                'carve namespaces of each label on every socket '
                '(nova-pmem-discover --libvirt --plan spreads them), then '
                'cold-migrate these instances (openstack server migrate '
                'SERVER): Nova draws a namespace without regard to NUMA, '
                'so check again with the doctor (see %s)' % VPMEM_DOC))
        if unknown:
            found.append(findings.Finding(
                findings.INFO, 'vpmem-numa-unknown', obj,
                'cannot tell whether the vPMEM of these instances is on the '
                'NUMA node of their guest node 0: %s'
                % findings.names(unknown),
                'run nova-pmem-discover on the host into the --fleet '
                'directory; on the host, virsh dumpxml INSTANCE shows the '
                '/dev/daxX.Y each vPMEM uses and ndctl list -N -v its '
                'numa_node'))
    return found
