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
"""One exit-status convention for the four tools (doc/source/cli.rst).

0 success; 1 and 2 the doctor's findings (warnings, errors); 2 a usage
error of the planner, discover and observe; 3 could not run (an extra not
installed, a host tool or the cloud that fails, an unexpected error; the
doctor's usage errors, as a monitoring check's "unknown"). Each is one
line on stderr, never a traceback.
"""

import io
import os

import fixtures
import testtools

from nova_pmem_filters.cli import application
from nova_pmem_filters.discover import cli as discover_cli
from nova_pmem_filters.doctor import cli as doctor_cli
from nova_pmem_filters.observe import cli as observe_cli
from tests.unit.cli import test_startup
from tests.unit import clitools
from tests.unit.doctor import cases
from tests.unit.doctor import test_cli as doctor_tests
from tests.unit.observe import fakehost
from tests.unit import paths

USAGE = 2
CANNOT_RUN = 3
EXAMPLES = os.path.join(paths.ROOT, 'etc', 'examples', 'discover')


class ConventionTest(testtools.TestCase):

    def test_one_set_of_numbers(self):
        self.assertEqual((0, 2, 3), (application.EXIT_OK,
                                     application.EXIT_USAGE,
                                     application.EXIT_CANNOT_RUN))
        self.assertEqual(application.EXIT_CANNOT_RUN, doctor_cli.UNKNOWN)
        self.assertEqual(application.EXIT_CANNOT_RUN, observe_cli.EXIT_FAILED)
        self.assertEqual(application.EXIT_USAGE, observe_cli.EXIT_USAGE)


class ExitCase(testtools.TestCase):

    def assertOneLine(self, expected, status, out, err, *parts):
        self.assertEqual(expected, status, err)
        self.assertEqual('', out)
        self.assertEqual(1, len(err.splitlines()), err)
        self.assertNotIn('Traceback', err)
        for part in parts:
            self.assertIn(part, err)

    def assertMissingExtra(self, tool, argv, library):
        status, out, err, _mods = test_startup.run_tool(tool, argv,
                                                        blocked=[library])
        self.assertOneLine(CANNOT_RUN, status, out, err,
                           "nova-pmem-%s: needs the '%s' extra" % (tool,
                                                                   tool),
                           '(missing: %s)' % library)


class PlannerTest(ExitCase):

    def planner(self, *argv):
        return clitools.run_cli(self, argv)

    def test_usage_errors_exit_2(self):
        for argv, part in ((['compare', '--bogus'], '--bogus'),
                           (['comapre'], "'comapre'"),
                           (['--bogus'], '--bogus'),
                           (['compare', '--scenario', '/nonexistent.yaml'],
                            '/nonexistent.yaml')):
            status, out, err = self.planner(*argv)
            self.assertOneLine(USAGE, status, out, err, part)

    def test_an_unknown_column_is_a_usage_error(self):
        status, out, err = self.planner('configs', '-c', 'nosuchcolumn')
        self.assertOneLine(USAGE, status, out, err, "'nosuchcolumn'",
                           'node_cost', "see 'nova-pmem-planner help "
                           "configs'")
        self.assertTrue(err.startswith('nova-pmem-planner configs: error: '),
                        err)

    def test_an_unknown_sort_column_is_a_usage_error(self):
        # cliff sorts by the columns it knows and ignores the others.
        status, out, err = self.planner('configs', '--sort-column',
                                        'node_cots')
        self.assertOneLine(USAGE, status, out, err, "'node_cots'",
                           "did you mean 'node_cost'")
        status, out, err = self.planner('configs', '--sort-column',
                                        'node_cost')
        self.assertEqual((0, ''), (status, err))

    def test_a_missing_extra_could_not_run(self):
        self.assertMissingExtra('planner', ['--version'], 'cliff')
        # A library a command imports as it runs.
        self.assertMissingExtra('planner', ['compare'], 'jsonschema')

    def test_an_unexpected_error_could_not_run(self):
        from nova_pmem_filters.planner.commands import compare

        def broken(*_args):
            raise RuntimeError('a bug')
        self.patch(compare.Compare, 'take_action', broken)
        status, out, err = self.planner('compare')
        self.assertOneLine(CANNOT_RUN, status, out, err, 'a bug')

    def test_every_error_names_the_program(self):
        # PROG: error: (doc/source/cli.rst), for what a command refuses as
        # for what its parser does.
        for argv, prog in ((['compare', '--bogus'], 'nova-pmem-planner '
                            'compare'),
                           (['compare', '--scenario', '/nonexistent.yaml'],
                            'nova-pmem-planner compare'),
                           (['optimize', '--demand', 'x'],
                            'nova-pmem-planner optimize'),
                           (['nova-config', 'nova-conf', '--workload', 'x'],
                            'nova-pmem-planner nova-config nova-conf'),
                           (['--bogus'], 'nova-pmem-planner')):
            status, out, err = self.planner(*argv)
            self.assertOneLine(USAGE, status, out, err)
            self.assertTrue(err.startswith(prog + ': error: '), err)


class DoctorTest(ExitCase):

    def test_findings(self):
        for snap, expected in (
                (cases.clean(), 0),
                (cases.with_aggregate(cases.clean(), 'pmem-mm',
                                      pmem_tier_weight_multiplier='x'), 1),
                (cases.with_aggregate(cases.clean(), 'pmem-mm',
                                      pmem_mode='tiered'), 2)):
            cloud = self.useFixture(doctor_tests.StubCloud(snap))
            status, out, err = cloud.doctor('-f', 'value', '-c', 'code')
            self.assertEqual(expected, status, err)
            self.assertIn('nova-conf-not-read', out)

    def test_usage_errors_are_unknown(self):
        # 2 is the cloud's errors: a monitoring check tells them apart.
        cloud = self.useFixture(doctor_tests.StubCloud(cases.clean()))
        for argv, part in ((['--bogus'], '--bogus'),
                           (['-c', 'nosuchcolumn'], "'nosuchcolumn'"),
                           (['--fleet', '/nonexistent'], '/nonexistent'),
                           (['--act-above', '-1'], '--act-above')):
            status, out, err = cloud.doctor(*argv)
            self.assertOneLine(CANNOT_RUN, status, out, err, part)
            # PROG: error:, as cli.rst says of every tool.
            self.assertTrue(err.startswith(
                'nova-pmem-doctor check: error: '), err)
        status, out, err = cloud.doctor('--os-cloud', 'nosuch')
        self.assertOneLine(CANNOT_RUN, status, out, err,
                           'nova-pmem-doctor: error: no usable cloud')

    def test_log_file_that_cannot_be_written(self):
        cloud = self.useFixture(doctor_tests.StubCloud(cases.clean()))
        path = os.path.join(cloud.dir, 'nonexistent', 'x.log')
        status, out, err = cloud.doctor('--log-file', path)
        self.assertOneLine(CANNOT_RUN, status, out, err)
        self.assertEqual('nova-pmem-doctor: error: --log-file %s: cannot '
                         'write it: No such file or directory\n' % path, err)

    def test_could_not_run(self):
        self.assertMissingExtra('doctor', ['check'], 'openstack')
        cloud = self.useFixture(doctor_tests.StubCloud(
            cases.clean(), url='http://127.0.0.1:9'))
        status, out, err = cloud.doctor()
        self.assertOneLine(CANNOT_RUN, status, out, err,
                           'cannot reach the cloud')


class DiscoverTest(ExitCase):

    def discover(self, *argv):
        out = io.StringIO()
        err = io.StringIO()
        status = discover_cli.main(list(argv), stdout=out, stderr=err)
        return status, out.getvalue(), err.getvalue()

    def test_usage_errors_exit_2(self):
        example = os.path.join(EXAMPLES, 'memory-mode')
        for argv, part in ((['--bogus'], '--bogus'),
                           (['--from', '/nonexistent'], '/nonexistent'),
                           (['--from', example, '--plan', '4x32G'],
                            '--plan needs --libvirt'),
                           (['--from', example, '-f', 'csv', '-c',
                             'nosuchcolumn'], "'nosuchcolumn'")):
            status, out, err = self.discover(*argv)
            self.assertOneLine(USAGE, status, out, err, part)

    def test_a_missing_extra_could_not_run(self):
        # The YAML it writes needs the extra; reading a host does not.
        example = os.path.join(EXAMPLES, 'memory-mode')
        self.assertMissingExtra('discover', ['--from', example, '-f',
                                             'yaml'], 'yaml')
        self.assertMissingExtra('discover', ['--from', example,
                                             '--provider-config', '-'],
                                'yaml')
        status, out, err, _mods = test_startup.run_tool(
            'discover', ['--from', example, '--json'], blocked=['yaml'])
        self.assertEqual(0, status, err)
        self.assertIn('"mode": "memory_mode"', out)

    def test_a_missing_tool_could_not_run(self):
        empty = self.useFixture(fixtures.TempDir()).path
        self.useFixture(fixtures.EnvironmentVariable('PATH', empty))
        status, out, err = self.discover('--json')
        self.assertOneLine(CANNOT_RUN, status, out, err,
                           'command not found')

    def test_what_the_host_cannot_give_could_not_run(self):
        status, out, err = self.discover(
            '--from', os.path.join(EXAMPLES, 'memory-mode'), '--libvirt')
        self.assertOneLine(CANNOT_RUN, status, out, err, 'App Direct')


class ObserveTest(ExitCase):

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path
        self.libvirt = os.path.join(self.root, 'qemu')
        os.makedirs(self.libvirt)
        self.sysfs = os.path.join(self.root, 'sys')
        fakehost.add_nodes(self.sysfs, {0: '0-7'})

    def observe(self, *argv):
        out = io.StringIO()
        err = io.StringIO()
        status = observe_cli.main(
            ['--libvirt-dir', self.libvirt, '--proc',
             os.path.join(self.root, 'proc'), '--sysfs', self.sysfs,
             '--hostname', 'compute-01', '--window', '1',
             '--method', 'reference_bits'] + list(argv),
            stdout=out, stderr=err, sleep=lambda _s: None)
        return status, out.getvalue(), err.getvalue()

    def test_usage_errors_exit_2(self):
        for argv, part in ((['--window', 'soon'], "'soon'"),
                           (['--profile', '/nonexistent.json'],
                            '/nonexistent.json'),
                           (['-f', 'csv', '-c', 'nosuchcolumn'],
                            "'nosuchcolumn'")):
            status, out, err = self.observe(*argv)
            self.assertOneLine(USAGE, status, out, err, part)

    def test_a_missing_extra_could_not_run(self):
        self.assertMissingExtra('observe', ['--window', '1'],
                                'prometheus_client')

    def test_a_window_that_cannot_be_written_could_not_run(self):
        # A directory where the textfile goes: the rename fails.
        textfile = os.path.join(self.root, 'nova_pmem.prom')
        os.mkdir(textfile)
        status, out, err = self.observe('--textfile', textfile)
        self.assertOneLine(CANNOT_RUN, status, out, err, textfile,
                           'cannot write')
