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
"""The checks of instances with vPMEM and their NUMA nodes."""


from nova_pmem_filters.doctor import checks
from tests.unit.doctor import cases


class VpmemNumaTestCase(cases.DoctorTestCase):

    def snap(self, *servers, base=None):
        base = base or cases.ad_with_namespaces()
        return cases.replace(base, servers=base.servers + servers)

    def test_local_namespace_is_clean(self):
        self.assertFindings(self.snap(cases.vpmem_server('v', '256GB', (1,))))

    def test_remote_namespace(self):
        found = self.assertFindings(
            self.snap(cases.vpmem_server('far', '256GB', (0,)),
                      cases.vpmem_server('near', '256GB', (1,))),
            (checks.WARNING, 'vpmem-numa-remote', 'host ad1'))
        problem = found[('vpmem-numa-remote', 'host ad1')].problem
        self.assertIn('far (id-far): guest node 0 on host node 0, 256GB '
                      'namespaces ns2 on node 1', problem)
        self.assertNotIn('near', problem)

    def test_label_on_both_nodes_is_unknown(self):
        found = self.assertFindings(
            self.snap(cases.vpmem_server('v', '128GB', (0,))),
            (checks.INFO, 'vpmem-numa-unknown', 'host ad1'))
        problem = found[('vpmem-numa-unknown', 'host ad1')].problem
        self.assertIn('ns0 on node 0; ns1 on node 1', problem)
        self.assertEqual(0, checks.exit_status(checks.run(
            self.snap(cases.vpmem_server('v', '128GB', (0,))))))

    def test_every_label_of_a_server(self):
        found = self.assertFindings(
            self.snap(cases.vpmem_server('v', '128GB,256GB', (0,))),
            (checks.WARNING, 'vpmem-numa-remote', 'host ad1'),
            (checks.INFO, 'vpmem-numa-unknown', 'host ad1'))
        self.assertIn('256GB', found[('vpmem-numa-remote',
                                      'host ad1')].problem)
        self.assertIn('128GB', found[('vpmem-numa-unknown',
                                      'host ad1')].problem)

    def test_multi_node_guest(self):
        found = self.assertFindings(
            self.snap(cases.vpmem_server('wide', '256GB', (1, 0))),
            (checks.WARNING, 'vpmem-guest-numa-nodes', 'host ad1'))
        finding = found[('vpmem-guest-numa-nodes', 'host ad1')]
        self.assertIn('wide (id-wide, host nodes 1,0)', finding.problem)
        self.assertIn('hw:numa_nodes=1', finding.fix)
        # Guest node 0 on host node 0: remote as well.
        self.assertFindings(
            self.snap(cases.vpmem_server('wide', '256GB', (0, 1))),
            (checks.WARNING, 'vpmem-guest-numa-nodes', 'host ad1'),
            (checks.WARNING, 'vpmem-numa-remote', 'host ad1'))

    def test_hidden_topology_is_said(self):
        found = self.assertFindings(
            self.snap(cases.vpmem_server('v', '256GB', None)),
            (checks.INFO, 'vpmem-numa-unknown', 'host ad1'))
        self.assertIn('no host_node',
                      found[('vpmem-numa-unknown', 'host ad1')].problem)

    def test_labels_discovery_cannot_map(self):
        # Placement counts another number of 256GB namespaces than
        # discovery's size rule finds: the host uses labels of its own.
        snap = cases.ad_with_namespaces()
        inventories = dict(snap.providers['ad1'].inventories)
        inventories['CUSTOM_PMEM_NAMESPACE_256GB'] = {'total': 3}
        snap = cases.with_provider(snap, 'ad1', inventories=inventories)
        for label, why in (('256GB', 'Placement has 3'),
                           ('FAST', 'finds 0 namespace(s)')):
            found = self.assertFindings(
                self.snap(cases.vpmem_server('v', label, (0,)), base=snap),
                (checks.INFO, 'vpmem-numa-unknown', 'host ad1'))
            self.assertIn(why, found[('vpmem-numa-unknown',
                                      'host ad1')].problem)

    def test_without_fleet_only_what_nova_says(self):
        snap = cases.replace(cases.ad_with_namespaces(), fleet=None)
        self.assertFindings(self.snap(cases.vpmem_server('v', '256GB', (0,)),
                                      base=snap))
        self.assertFindings(
            self.snap(cases.vpmem_server('w', '256GB', (0, 1)), base=snap),
            (checks.WARNING, 'vpmem-guest-numa-nodes', 'host ad1'))
