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
"""Inputs the planner refuses: one line naming the input, exit 2 (issue 37).

Each is refused before anything is written, and the hostile ones (an
alias bomb, /dev/zero, a count that sizes the work) by a bound the
message names, not by running out of time or memory.
"""

import json
import os
import re
import sys

import fixtures
import testtools

from nova_pmem_filters.core.formats import scenario_schema as sch
from nova_pmem_filters.core.formats import scenario_yaml as syaml
from nova_pmem_filters import fileutil
from nova_pmem_filters.planner import scenario
from tests.unit import clitools
from tests.unit import paths

# A "billion laughs": nine levels of nine aliases, 10**9 values.
BOMB = 'a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n' + ''.join(
    '%s: &%s [%s]\n' % (name, name, ', '.join(['*' + previous] * 13))
    for previous, name in zip('abcdefgh', 'bcdefghi'))


class RefusedInputTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, 'w') as f:
            f.write(text)
        return path

    def scenario_text(self):
        return scenario.read_text()[0]

    def assert_refused(self, argv, *named):
        """One line on stderr naming ``named``, exit 2, nothing written."""
        out = os.path.join(self.dir, 'out')
        before = sorted(os.listdir(self.dir))
        status, stdout, stderr = clitools.run_cli(self, argv)
        self.assertEqual(2, status, stderr)
        self.assertEqual(1, len(stderr.splitlines()), stderr)
        # PROG: error:, PROG the command (doc/source/cli.rst).
        self.assertRegex(stderr, r'^nova-pmem-planner( [a-z-]+)*: error: ')
        for word in named:
            self.assertIn(word, stderr)
        self.assertEqual(before, sorted(os.listdir(self.dir)))
        self.assertFalse(os.path.exists(out))
        return stderr

    def test_duplicate_key(self):
        text = self.scenario_text()
        path = self.write('dup.yaml', text + '\nbaseline: anything\n')
        self.assert_refused(['compare', '--scenario', path],
                            path, "duplicate key 'baseline'")

    def test_alias_bomb_by_alias_count(self):
        self.assertLess(len(BOMB), 700)
        path = self.write('bomb.yaml', BOMB)
        self.assert_refused(['compare', '--scenario', path], path,
                            'more than %d aliases' % syaml.ALIAS_LIMIT)

    def test_alias_bomb_by_expanded_size(self):
        # Few aliases, each expanding many: the expanded size is bounded.
        text = 'a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n' + \
            ''.join('%s: &%s [%s]\n' % (n, n, ', '.join(['*' + p] * 9))
                    for p, n in zip('abcdefg', 'bcdefgh'))
        path = self.write('bomb.yaml', text)
        self.assert_refused(
            ['compare', '--scenario', path], path,
            'more than %d values' % syaml.EXPANDED_NODE_LIMIT)

    def test_dev_zero_by_size(self):
        self.useFixture(fixtures.MonkeyPatch(
            'nova_pmem_filters.fileutil.READ_LIMIT', 1024 * 1024))
        self.assert_refused(['compare', '--scenario', '/dev/zero'],
                            '/dev/zero', 'larger than the 1 MiB')


class ReadBoundedTest(testtools.TestCase):

    def test_reads_at_most_the_limit(self):
        path = self.useFixture(fixtures.TempDir()).join('ten')
        with open(path, 'wb') as f:
            f.write(b'x' * 10)
        self.assertEqual(b'x' * 10, fileutil.read_bytes(path, 10))
        self.assertRaises(fileutil.TooLarge, fileutil.read_bytes,
                          '/dev/zero', 10)


class RefusedOptionTest(RefusedInputTest):

    def test_band_beyond_a_fraction(self):
        self.assert_refused(['search', '--band', '5'], '--band 5',
                            'below 1')

    def test_repeated_demand(self):
        self.assert_refused(
            ['optimize', '--demand', 'redis=10', '--demand', 'redis=20'],
            "'redis' given twice")

    def test_host_vcpus_not_positive(self):
        for value in ('-4', '0'):
            self.assert_refused(['simulate', '--host-vcpus', value],
                                '--host-vcpus %s' % value, '1 or more')

    def test_nodes_bounded(self):
        self.assert_refused(
            ['simulate', '--nodes', 'mm-192-512=100000000'],
            '--nodes mm-192-512=100000000', 'at most 1000000')
        self.assert_refused(
            ['simulate', '--nodes', 'mm-192-512=600000', '--nodes',
             'dram-384=400001'],
            '--nodes dram-384=400001', 'more than 1000000 in all')

    def test_header_only_trace(self):
        path = self.write('trace.csv', 'time,event,instance,flavor\n')
        self.assert_refused(['simulate', '--trace', path], path,
                            'no events')

    def edited_scenario(self, old, new):
        text = self.scenario_text()
        self.assertIn(old, text)
        return self.write('scenario.yaml', text.replace(old, new, 1))

    def test_node_without_memory(self):
        text = self.scenario_text()
        first = text[text.index('per_socket: {'):].split('\n', 1)[0]
        path = self.edited_scenario(first, 'per_socket: {ddr4-16: 0}')
        self.assert_refused(['compare', '--scenario', path], path,
                            'a node needs memory')

    def test_workload_uses_more_than_its_flavor(self):
        path = self.edited_scenario('used_gb: 24', 'used_gb: 64')
        self.assert_refused(['compare', '--scenario', path], path,
                            'used_gb 64 is more than ram_gb 32')

    def test_host_reserve_larger_than_the_host(self):
        path = self.edited_scenario('host_reserve_gb: 0',
                                    'host_reserve_gb: 10000')
        stderr = self.assert_refused(['compare', '--scenario', path], path,
                                     'policies.host_reserve_gb',
                                     'less than 384')
        # As doc/source/planner.rst shows it.
        with open(os.path.join(paths.ROOT, 'doc', 'source',
                               'planner.rst')) as f:
            self.assertIn('\n    ' + stderr.strip().replace(
                path, 'reserve.yaml') + '\n', f.read())

    def test_too_many_configurations(self):
        lines = self.scenario_text().splitlines(True)
        start = lines.index('configs:\n') + 1
        end = start + 1
        while lines[end].startswith('    '):
            end += 1
        first = ''.join(lines[start:end])
        name = first.split(':')[0].strip()
        copies = ''.join(first.replace(name, '%s-%d' % (name, i), 1)
                         for i in range(sch.CONFIG_LIMIT))
        path = self.write('many.yaml', ''.join(lines[:start]) + copies
                          + ''.join(lines[start:]))
        self.assert_refused(['compare', '--scenario', path], path,
                            'configs: %d entries'
                            % (sch.CONFIG_LIMIT + 2),
                            'at most %d' % sch.CONFIG_LIMIT)


class RefusedMergeTest(RefusedInputTest):
    """A file to merge nova.conf settings into that is no ini file."""

    YAML = 'compute:\n  ram_allocation_ratio: 1.5\n'

    def test_nova_conf_merge_into_yaml(self):
        path = self.write('nova.yaml', self.YAML)
        stderr = self.assert_refused(
            ['nova-config', 'nova-conf', '--role',
             'compute:pmem-mm-192-512', '--merge-into', path],
            '--merge-into %s' % path, 'line 1', 'not a nova.conf',
            'allowed: [section] headers')
        self.assertNotIn('Traceback', stderr)
        with open(path) as f:
            self.assertEqual(self.YAML, f.read())

    def test_kolla_override_that_is_yaml(self):
        # The scheduler's override is a YAML file: nothing is written,
        # neither it nor any other file of the run.
        top = os.path.join(self.dir, 'config')
        os.makedirs(os.path.join(top, 'nova'))
        path = os.path.join(top, 'nova', 'nova-scheduler.conf')
        with open(path, 'w') as f:
            f.write(self.YAML)
        self.assert_refused(['nova-config', 'kolla', '--output-dir', top],
                            path, 'not a nova.conf')
        self.assertEqual(['nova-scheduler.conf'],
                         os.listdir(os.path.join(top, 'nova')))
        with open(path) as f:
            self.assertEqual(self.YAML, f.read())

    def test_ini_file_is_merged(self):
        path = self.write('nova.conf', '[DEFAULT]\n# kept\ndebug = true\n'
                          '[filter_scheduler]\nenabled_filters = A,\n  B\n')
        status, _, stderr = clitools.run_cli(self, [
            'nova-config', 'nova-conf', '--role', 'compute:pmem-mm-192-512',
            '--merge-into', path])
        self.assertEqual(0, status, stderr)
        with open(path) as f:
            self.assertIn('# kept\ndebug = true\n', f.read())


class RefusedDirectoryTest(RefusedInputTest):
    """A fleet directory beyond the bounds on its files."""

    def fleet(self, count, size=2):
        fleet = os.path.join(self.dir, 'fleet')
        os.makedirs(fleet)
        for i in range(count):
            with open(os.path.join(fleet, 'h%d.json' % i), 'w') as f:
                f.write(' ' * size)
        return fleet

    def test_too_many_files(self):
        self.useFixture(fixtures.MonkeyPatch(
            'nova_pmem_filters.core.formats.document.FILE_COUNT_LIMIT', 3))
        fleet = self.fleet(4)
        self.assert_refused(['fleet', '--fleet', fleet], fleet,
                            'more than 3 *.json files',
                            'at most 3 host profiles')

    def test_too_many_bytes(self):
        self.useFixture(fixtures.MonkeyPatch(
            'nova_pmem_filters.core.formats.document.DIRECTORY_BYTES_LIMIT',
            1024 * 1024))
        fleet = self.fleet(2, size=600 * 1024)
        self.assert_refused(['fleet', '--fleet', fleet], fleet,
                            'more than 1 MiB')


class RefusedValueTest(RefusedInputTest):
    """Values refused with the option named, not a library's words."""

    def test_seed_out_of_range(self):
        for value in ('-1', '4294967296', 'x'):
            self.assert_refused(['simulate', '--seed', value],
                                'argument --seed', repr(value),
                                'from 0 to 4294967295 (2**32-1)')

    def test_mix_and_nodes_not_whole(self):
        for option, text in (('--mix', 'redis=1.5'),
                             ('--nodes', 'mm-192-512=-1')):
            self.assert_refused(['simulate', option, text],
                                '%s %s' % (option, text),
                                'a whole number 0 or more')

    def test_min_instances_not_a_count(self):
        for value in ('0', '1.5', 'x'):
            self.assert_refused(
                ['hot-ratios', '--observations',
                 os.path.join(paths.ROOT, 'etc', 'examples', 'observations'),
                 '--min-instances', value],
                '--min-instances %s' % value, '1 or more')

    def test_jobs_not_a_count_of_processes(self):
        # joblib would take 0 for an error of its own and -2 for "every CPU
        # but one": neither is what the help says.
        for value in ('0', '-2', 'x'):
            self.assert_refused(['sweep', '--jobs', value],
                                'argument --jobs', repr(value), '1 or more')

    def test_weight_multiplier_not_a_number(self):
        for option in ('--ram-weight-multiplier', '--cpu-weight-multiplier',
                       '--tier-weight-multiplier',
                       '--cache-headroom-weight-multiplier'):
            for value in ('abc', 'nan', 'inf'):
                self.assert_refused(['simulate', option, value],
                                    'argument %s' % option,
                                    "expected a number, got %r" % value)

    def test_log_file_that_cannot_be_written(self):
        path = os.path.join(self.dir, 'nonexistent', 'x.log')
        stderr = self.assert_refused(['--log-file', path, 'configs'])
        self.assertEqual('nova-pmem-planner: error: --log-file %s: cannot '
                         'write it: No such file or directory\n' % path,
                         stderr)
        stderr = self.assert_refused(['--log-file', self.dir, 'configs'])
        self.assertIn('--log-file %s: cannot write it: Is a directory'
                      % self.dir, stderr)

    def test_mix_of_no_vm(self):
        self.assert_refused(['simulate', '--mix', 'redis=0', '--mix',
                             'mysql=0'], '--mix redis=0 --mix mysql=0',
                            'no workload has a VM')

    def test_demand_not_a_whole_number(self):
        self.assert_refused(['optimize', '--demand', 'redis=1.5'],
                            '--demand redis=1.5', 'a whole number of VMs')
        for value in ('1e20', '1' + '0' * 400, '1e400'):
            self.assert_refused(['optimize', '--demand', 'redis=' + value],
                                '--demand redis=' + value,
                                'at most 1e+15 VMs')

    def test_unknown_workload(self):
        stderr = self.assert_refused(['compare', '--workload', 'x'])
        self.assertIn(": error: --workload: unknown workload 'x' (known: "
                      "mysql, redis)\n", stderr)
        self.assertNotIn('(top level)', stderr)

    def test_a_scenario_error_names_the_command(self):
        path = self.write('bad.yaml', self.scenario_text().replace(
            '  dram-384:', '  dram 384:', 1))
        stderr = self.assert_refused(['compare', '--scenario', path])
        self.assertTrue(stderr.startswith(
            'nova-pmem-planner compare: error: %s: configs: expected a '
            'name of' % path), stderr)


class AcceptedValueTest(testtools.TestCase):

    def test_demand_with_an_exponent(self):
        # As in the scenario file: 1e3 is the whole number 1000.
        status, out, err = clitools.run_cli(self, [
            'optimize', '--demand', 'redis=1e3', '--demand', 'mysql=2.0e1',
            '--no-single', '--no-progress', '-f', 'json'])
        self.assertEqual(0, status, err)
        total = [r for r in json.loads(out) if r['config'] == 'total'][0]
        self.assertEqual((1000, 20), (total['redis'], total['mysql']))

    def test_mix_and_nodes_with_an_exponent(self):
        # The same counts as --demand's: 2e0 nodes are 2.
        status, out, err = clitools.run_cli(self, [
            'simulate', '--mix', 'redis=1e1', '--nodes', 'mm-192-512=2e0',
            '--days', '5', '--no-progress', '-f', 'json'])
        self.assertEqual(0, status, err)
        rows = {r['kind']: r for r in json.loads(out)}
        self.assertEqual(2, rows['mm-192-512']['nodes'])

    def test_seed_at_the_ends_of_its_range(self):
        for seed in ('0', '4294967295'):
            status, out, err = clitools.run_cli(self, [
                'simulate', '--seed', seed, '--mix', 'redis=5', '--nodes',
                'mm-192-512=1', '--days', '5', '--no-progress',
                '--ram-weight-multiplier', '-1.5', '-f', 'json'])
            self.assertEqual(0, status, err)
            self.assertTrue(json.loads(out))


class CouldNotRunTest(testtools.TestCase):
    """A library an option needs is missing: exit 3, not the user's fault."""

    def test_sweep_dask_without_dask(self):
        # None in sys.modules: the import fails as if it was not installed.
        self.useFixture(fixtures.MonkeyPatch('sys.modules', dict(
            sys.modules, dask=None)))
        status, out, err = clitools.run_cli(self, [
            'sweep', '--power-price', '0.1', '--dask', 'tcp://127.0.0.1:1'])
        self.assertEqual((3, ''), (status, out), err)
        self.assertEqual(
            "nova-pmem-planner sweep: error: --dask needs dask.distributed, "
            "which is not installed: pip install 'dask[distributed]'\n", err)

    def test_an_unexpected_error_names_the_command(self):
        from nova_pmem_filters.planner.commands import compare

        def broken(*_args):
            raise RuntimeError('a bug')
        self.patch(compare.Compare, 'take_action', broken)
        status, out, err = clitools.run_cli(self, ['compare'])
        self.assertEqual((3, ''), (status, out), err)
        self.assertEqual('nova-pmem-planner compare: error: unexpected '
                         'RuntimeError: a bug (use --debug)\n', err)


class PluralTest(testtools.TestCase):

    def test_counted(self):
        from nova_pmem_filters.planner import tables

        self.assertEqual(['0 files', '1 file', '2 files', '1 rack unit',
                          '1.5 rack units'],
                         [tables.counted(0, 'file'),
                          tables.counted(1, 'file'),
                          tables.counted(2, 'file'),
                          tables.counted(1.0, 'rack unit', '1'),
                          tables.counted(1.5, 'rack unit', '1.5')])

    def test_a_cap_of_one_rack_unit(self):
        status, out, err = clitools.run_cli(self, [
            'optimize', '--rack-units', '1', '--no-progress'])
        self.assertEqual(2, status, err)
        self.assertIn('the cap of 1 rack unit is too small', err)
        self.assertRegex(err, r'needs at least \d+ rack units')
        self.assertIsNone(re.search(r'\b1 rack units', err), err)
