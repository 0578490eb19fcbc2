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
"""The options every tool shares: no interactive shell, ``-`` is standard
output, ratios above 0, and cliff's ``-f`` and ``-c`` on the host tools."""

import csv
import io
import json
import os
import pty
import subprocess
import sys

import fixtures
import testtools
import yaml

from nova_pmem_filters.core.formats import hostfile
from nova_pmem_filters.core.formats import providerconfig
from nova_pmem_filters.discover import cli as discover_cli
from nova_pmem_filters.observe import cli as observe_cli
from tests.unit.observe import fakehost
from tests.unit import paths

EXAMPLES = os.path.join(paths.ROOT, 'etc', 'examples', 'discover')
MEMORY_MODE = os.path.join(EXAMPLES, 'memory-mode')
APP_DIRECT = os.path.join(EXAMPLES, 'app-direct')


class PlannerWithoutCommandTest(testtools.TestCase):

    def test_prints_the_usage_and_the_commands(self):
        # On a terminal cliff opened its "(Cmd)" shell (which the "quit"
        # written to the terminal ends); on a pipe it read commands from
        # standard input.
        master, slave = pty.openpty()
        self.addCleanup(os.close, master)
        for stdin in (slave, subprocess.DEVNULL):
            os.write(master, b'quit\n')
            proc = subprocess.run(
                [sys.executable, '-c', 'from nova_pmem_filters.cli import '
                 'entrypoints; entrypoints.planner()'], stdin=stdin,
                capture_output=True, text=True, timeout=300,
                cwd=paths.ROOT)
            self.assertEqual(2, proc.returncode, proc.stderr)
            self.assertNotIn('(Cmd)', proc.stdout)
            self.assertTrue(proc.stdout.startswith(
                'usage: nova-pmem-planner'), proc.stdout)
            self.assertIn('\nCommands:\n', proc.stdout)
            self.assertIn('  compare ', proc.stdout)
            self.assertEqual('', proc.stderr)
        os.close(slave)


def discover(*argv):
    out = io.StringIO()
    err = io.StringIO()
    status = discover_cli.main(list(argv), stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


class InTempDir(testtools.TestCase):
    """In an empty working directory, where a file '-' would be seen."""

    def setUp(self):
        super().setUp()
        self.cwd = self.useFixture(fixtures.TempDir()).path
        self.addCleanup(os.chdir, os.getcwd())
        os.chdir(self.cwd)


class ProviderConfigTest(InTempDir):

    def test_dash_is_standard_output(self):
        cwd = self.cwd
        status, out, err = discover('--from', MEMORY_MODE,
                                    '--provider-config', '-')
        self.assertEqual(0, status, err)
        self.assertEqual([], os.listdir(cwd))
        # Only the provider config, as Nova reads it.
        parsed = providerconfig.parse(yaml.safe_load(out), 'stdout')
        self.assertEqual(1, len(parsed.providers))
        self.assertIn('CUSTOM_PMEM_MODE_MEMORY_MODE', out)

    def test_dash_takes_no_view(self):
        for view in (['--json'], ['-f', 'table'], ['--aggregate']):
            status, out, err = discover('--from', MEMORY_MODE,
                                        '--provider-config', '-', *view)
            self.assertEqual(2, status, err)
            self.assertEqual('', out)
            self.assertIn('--provider-config -', err)


class RatioTest(InTempDir):

    def test_non_positive_ratios_are_usage_errors(self):
        target = os.path.join(self.useFixture(fixtures.TempDir()).path,
                              'pmem.yaml')
        for host in (MEMORY_MODE, APP_DIRECT):
            for option in ('--ram-allocation-ratio',
                           '--cache-overcommit-ratio'):
                for raw in ('-2', '0', 'nan', 'inf', 'x'):
                    status, out, err = discover(
                        '--from', host, '--provider-config', target,
                        option, raw)
                    self.assertEqual(2, status, (host, option, raw, err))
                    self.assertEqual('', out)
                    self.assertEqual(1, len(err.splitlines()), err)
                    self.assertIn('argument %s' % option, err)
                    self.assertIn(repr(raw), err)
                    self.assertFalse(os.path.exists(target))

    def test_a_positive_ratio_is_the_allocation_ratio(self):
        status, out, err = discover('--from', APP_DIRECT,
                                    '--provider-config', '-',
                                    '--ram-allocation-ratio', '1.5')
        self.assertEqual(0, status, err)
        self.assertIn('allocation_ratio: 1.5', out)
        self.assertEqual([], os.listdir(self.cwd))


class DiscoverFormatsTest(testtools.TestCase):

    def test_csv_and_value_are_the_summary_rows(self):
        status, table, err = discover('--from', MEMORY_MODE, '-f', 'table')
        self.assertEqual(0, status, err)
        prof = json.loads(discover('--from', MEMORY_MODE)[1])
        status, out, err = discover('--from', MEMORY_MODE, '-f', 'csv')
        self.assertEqual(0, status, err)
        header, row = list(csv.reader(io.StringIO(out)))
        self.assertIn('| mode ', table)
        for field, value in zip(header, row):
            self.assertIn('| %s ' % field, table)
            self.assertEqual(str(prof[field]), value)
        status, out, err = discover('--from', MEMORY_MODE, '-f', 'value',
                                    '-c', 'mode', '-c', 'dram_cache_gb')
        self.assertEqual(0, status, err)
        self.assertEqual('memory_mode\n384.0\n', out)

    def test_columns_of_the_table(self):
        status, out, err = discover('--from', MEMORY_MODE, '-f', 'table',
                                    '-c', 'hostname')
        self.assertEqual(0, status, err)
        self.assertEqual(['| Field    | Value         |',
                          '| hostname | memory-mode-1 |'],
                         [line for line in out.splitlines()
                          if line.startswith('|')])

    def test_bad_columns_are_usage_errors(self):
        for argv, part in ((['-f', 'csv', '-c', 'mod'], "'mode'"),
                           (['-c', 'mode'], '-f json'),
                           (['-f', 'yaml', '-c', 'mode'], '-f yaml'),
                           (['--aggregate', '-c', 'mode'], '--aggregate')):
            status, out, err = discover('--from', MEMORY_MODE, *argv)
            self.assertEqual(2, status, err)
            self.assertEqual('', out)
            self.assertIn(part, err)

    def test_json_and_yaml_are_still_the_profile(self):
        _status, out, _err = discover('--from', MEMORY_MODE, '-f', 'json')
        _status, text, _err = discover('--from', MEMORY_MODE, '-f', 'yaml')
        self.assertEqual(json.loads(out), yaml.safe_load(text))
        self.assertEqual(hostfile.SCHEMA, json.loads(out)['schema'])


class ObserveFormatsTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.libvirt, self.proc, self.sysfs = fakehost.one_guest_host(
            self.useFixture(fixtures.TempDir()).path)

    def observe(self, *argv):
        out = io.StringIO()
        err = io.StringIO()
        status = observe_cli.main(
            ['--libvirt-dir', self.libvirt, '--proc', self.proc, '--sysfs',
             self.sysfs, '--hostname', 'compute-01', '--window', '1',
             '--method', 'reference_bits'] + list(argv),
            stdout=out, stderr=err, sleep=lambda _s: None)
        return status, out.getvalue(), err.getvalue()

    def test_csv_and_value_are_the_instance_rows(self):
        status, out, err = self.observe('-f', 'csv')
        self.assertEqual(0, status, err)
        self.assertEqual([list(observe_cli.COLUMNS),
                          [fakehost.UUID_A, 'instance-1', 'm1.small',
                           'reference_bits', '512.0', '0.25', '0']],
                         list(csv.reader(io.StringIO(out))))
        status, out, err = self.observe('-f', 'value', '-c', 'hot',
                                        '-c', 'uuid')
        self.assertEqual(0, status, err)
        self.assertEqual('0.25 %s\n' % fakehost.UUID_A, out)

    def test_columns_of_the_table(self):
        status, out, err = self.observe('-c', 'uuid', '-c', 'ws_mb')
        self.assertEqual(0, status, err)
        lines = out.splitlines()
        self.assertEqual(['uuid', 'ws_mb'], lines[0].split())
        self.assertEqual([fakehost.UUID_A, '512.0'], lines[1].split())
        self.assertTrue(lines[2].startswith('host compute-01: '), lines)

    def test_yaml_is_the_document(self):
        status, text, err = self.observe('-f', 'yaml')
        self.assertEqual(0, status, err)
        status, out, err = self.observe('-f', 'json')
        doc = json.loads(out)
        self.assertEqual(doc['instances'], yaml.safe_load(text)['instances'])

    def test_bad_columns_are_usage_errors(self):
        for argv, part in ((['-f', 'csv', '-c', 'hot_ratio'],
                            "'hot_ratio' (columns: uuid,"),
                           (['-f', 'json', '-c', 'uuid'], '-f json')):
            status, out, err = self.observe(*argv)
            self.assertEqual(2, status, err)
            self.assertEqual('', out)
            self.assertIn(part, err)
