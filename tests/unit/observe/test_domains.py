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
"""The Nova instances of libvirt's status files."""

import os

import fixtures
import testtools

from nova_pmem_filters.observe import domains
from tests.unit.observe import fakehost


class DomainsTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path

    def test_a_nova_instance(self):
        fakehost.add_domain(self.dir, 'instance-0000002a', fakehost.UUID_A,
                            pid=4242, flavor='m1.redis', memory_mb=24576,
                            vcpus=4)
        found, gaps = domains.instances(self.dir)
        self.assertEqual([], gaps)
        self.assertEqual([domains.Instance(
            uuid=fakehost.UUID_A, name='instance-0000002a',
            flavor='m1.redis', flavor_ram_mb=24576, flavor_vcpus=4,
            pid=4242)], found)

    def test_the_declared_hot_ratio_from_nova_extra_specs(self):
        fakehost.add_domain(self.dir, 'instance-1', fakehost.UUID_A, pid=1,
                            extra_specs={'pmem:hot_ratio': '0.25',
                                         'pmem:modes': 'memory_mode'})
        fakehost.add_domain(self.dir, 'instance-2', fakehost.UUID_B, pid=2,
                            extra_specs={'pmem:hot_ratio': '1.5'})
        found, gaps = domains.instances(self.dir)
        self.assertEqual([fakehost.declared(0.25), None],
                         [i.declared_hot_ratio for i in found])
        self.assertEqual([], gaps)
        self.assertIsNone(found[0].declared_gap)
        if not fakehost.NOVA_WRITES_EXTRA_SPECS:
            # Nova 31.x: the domains say nothing, so nothing is wrong.
            self.assertIsNone(found[1].declared_gap)
            return
        # The value the scheduler refuses is named, not guessed.
        self.assertIn('domain instance-2', found[1].declared_gap)
        self.assertIn("pmem:hot_ratio", found[1].declared_gap)
        self.assertIn("'1.5'", found[1].declared_gap)

    def test_several_in_file_name_order(self):
        fakehost.add_domain(self.dir, 'instance-2', fakehost.UUID_B, pid=2)
        fakehost.add_domain(self.dir, 'instance-1', fakehost.UUID_A, pid=1)
        found, gaps = domains.instances(self.dir)
        self.assertEqual([], gaps)
        self.assertEqual([1, 2], [i.pid for i in found])

    def test_a_domain_without_nova_metadata_is_a_gap(self):
        fakehost.add_domain(self.dir, 'instance-1', fakehost.UUID_A, pid=1)
        fakehost.add_domain(self.dir, 'manual-vm', fakehost.UUID_B, pid=2,
                            nova=False)
        found, gaps = domains.instances(self.dir)
        self.assertEqual([fakehost.UUID_A], [i.uuid for i in found])
        self.assertEqual(1, len(gaps))
        self.assertIn(os.path.join(self.dir, 'manual-vm.xml'), gaps[0])
        self.assertIn('manual-vm has no Nova metadata', gaps[0])

    def test_a_domain_not_running_is_skipped(self):
        fakehost.add_domain(self.dir, 'instance-1', fakehost.UUID_A, pid=1,
                            state='paused')
        fakehost.add_domain(self.dir, 'instance-2', fakehost.UUID_B, pid=2,
                            state='shutoff')
        self.assertEqual(([], []), domains.instances(self.dir))

    def test_bad_xml_is_a_gap_naming_the_file(self):
        fakehost.add_domain(self.dir, 'instance-1', fakehost.UUID_A, pid=1)
        fakehost.write(os.path.join(self.dir, 'instance-2.xml'),
                       "<domstatus state='running' pid='2'><domain>")
        found, gaps = domains.instances(self.dir)
        self.assertEqual([fakehost.UUID_A], [i.uuid for i in found])
        self.assertEqual(1, len(gaps))
        self.assertTrue(gaps[0].startswith(
            os.path.join(self.dir, 'instance-2.xml') + ': not valid XML'),
            gaps[0])
        self.assertNotIn('\n', gaps[0])

    def test_a_domain_definition_is_not_a_status_file(self):
        fakehost.write(os.path.join(self.dir, 'instance-1.xml'),
                       fakehost.guest_xml(fakehost.UUID_A, 'instance-1'))
        found, gaps = domains.instances(self.dir)
        self.assertEqual([], found)
        self.assertIn('expected a libvirt status file', gaps[0])

    def test_a_bad_pid_is_a_gap(self):
        fakehost.write(os.path.join(self.dir, 'instance-1.xml'),
                       fakehost.status_xml(fakehost.guest_xml(
                           fakehost.UUID_A, 'instance-1'), pid=0))
        found, gaps = domains.instances(self.dir)
        self.assertEqual([], found)
        self.assertIn('pid of 1 or more', gaps[0])

    def test_other_files_are_ignored(self):
        fakehost.add_domain(self.dir, 'instance-1', fakehost.UUID_A, pid=1)
        os.mkdir(os.path.join(self.dir, 'domain-1-instance-1'))
        found, gaps = domains.instances(self.dir)
        self.assertEqual(1, len(found))
        self.assertEqual([], gaps)

    def test_a_missing_directory_raises_naming_it(self):
        missing = os.path.join(self.dir, 'nope')
        exc = self.assertRaises(domains.DomainError, domains.instances,
                                missing)
        self.assertIn(missing, str(exc))

    def test_an_endless_status_file_is_refused_bounded(self):
        # /dev/zero stands for a file that never ends: read up to the
        # bound, then refused naming the file and the bound.
        self.useFixture(fixtures.MonkeyPatch(
            'nova_pmem_filters.fileutil.READ_LIMIT', 1024 * 1024))
        exc = self.assertRaises(domains.DomainError, domains.read_status,
                                '/dev/zero')
        self.assertEqual('/dev/zero: cannot read the file: larger than the '
                         '1 MiB a file may hold', str(exc))
