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
"""Progress on stderr: one rewritten line on a terminal, lines elsewhere.

A fake terminal (a StringIO whose isatty() is true) stands for stderr, a
StringIO for a pipe; the tests count updates and lines, never time.
"""

import io
import json
import logging
import os
import re

import fixtures
import testtools

from nova_pmem_filters.planner import cli
from nova_pmem_filters.planner import progress
from nova_pmem_filters.planner import report
from tests.unit import clitools


class FakeTerminal(io.StringIO):
    """A captured stream that says it is a terminal."""

    def isatty(self):
        return True


def run_on_terminal(test, argv):
    """Run the planner with stderr a fake terminal: (status, out, err)."""
    root = logging.getLogger()
    test.addCleanup(setattr, root, 'handlers', list(root.handlers))
    test.addCleanup(root.setLevel, root.level)
    out = io.StringIO()
    err = FakeTerminal()
    with fixtures.MonkeyPatch('sys.stdout', out), \
            fixtures.MonkeyPatch('sys.stderr', err):
        status = cli.main(list(argv))
    return status, out.getvalue(), err.getvalue()


def shown(err, label):
    """The progress texts written, in order (the \\r-separated pieces)."""
    return [piece.rstrip() for piece in err.split('\r')
            if piece.startswith(label + ': ')]


class ProgressTestCase(testtools.TestCase):

    def test_rewrites_one_line(self):
        stream = FakeTerminal()
        with progress.Progress(stream, 'search') as line:
            line.update('enumerating a longer text')
            line.update('judged', 200, 400)
            line.update('sized', 3)
        first = 'search: enumerating a longer text'
        second = 'search: [200/400] judged'
        third = 'search: [3] sized'
        # Each line covers what the longer one before it left.
        self.assertEqual(
            '\r' + first + '\r' + second.ljust(len(first))
            + '\r' + third.ljust(len(second))
            + '\r%s\r' % (' ' * len(third)),
            stream.getvalue())
        self.assertNotIn('\n', stream.getvalue())

    def test_a_line_per_stage_off_a_terminal(self):
        stream = io.StringIO()
        with progress.Progress(stream, 'search') as line:
            line.update('enumerating')
            line.update('sizing')
        # Plain lines, nothing rewritten and nothing erased.
        self.assertEqual('search: enumerating\nsearch: sizing\n',
                         stream.getvalue())

    def test_a_line_per_tenth_of_a_count_off_a_terminal(self):
        stream = io.StringIO()
        line = progress.Progress(stream, 'search')
        for done in range(1, 1001):
            line.update('judged', done, 1000)
        # A second counted stage starts again from its first update.
        for done in range(1, 4):
            line.update('sized', done, 3)
        self.assertEqual(
            ['search: [1/1000] judged']
            + ['search: [%d/1000] judged' % (100 * k) for k in range(1, 11)]
            + ['search: [%d/3] sized' % k for k in (1, 2, 3)],
            stream.getvalue().splitlines())

    def test_one_line_per_rounds_off_a_terminal(self):
        stream = io.StringIO()
        line = progress.Progress(stream, 'optimize')
        for done in range(1, 36):
            line.update('column generation', done)
            if done == 12:
                line.update('a stage')
        self.assertEqual(
            ['optimize: [1] column generation',
             'optimize: [10] column generation',
             'optimize: a stage',
             # After a stage, the rounds' next update is a line again.
             'optimize: [13] column generation',
             'optimize: [20] column generation',
             'optimize: [30] column generation'],
            stream.getvalue().splitlines())

    def test_disabled_on_a_terminal(self):
        stream = FakeTerminal()
        with progress.Progress(stream, 'search', enabled=False) as line:
            line.update('judged', 1, 2)
        self.assertEqual('', stream.getvalue())

    def test_terminal_forced_on_any_stream(self):
        stream = io.StringIO()
        progress.Progress(stream, 'x', terminal=True).update('y')
        self.assertEqual('\rx: y', stream.getvalue())

    def test_disabled_off_a_terminal(self):
        stream = io.StringIO()
        with progress.Progress(stream, 'search', enabled=False) as line:
            line.update('judged', 1, 2)
            line.update('sizing')
        self.assertEqual('', stream.getvalue())

    def test_line_fits_the_terminal(self):
        stream = FakeTerminal()
        progress.Progress(stream, 'x').update('y' * 500)
        # A stream without a terminal size is taken as 80 columns; the
        # last column stays empty.
        self.assertEqual(1 + progress.DEFAULT_WIDTH - 1,
                         len(stream.getvalue()))


class SearchProgressTestCase(testtools.TestCase):

    ARGS = ['search', '--platform', 'cascade-lake-2s', '--cpu',
            'xeon-gold-6230n', '--dimm', 'ddr4-16', '--dimm', 'ddr4-32',
            '--dimm', 'pmem100-128', '--limit', '3', '-f', 'json']

    def test_terminal(self):
        status, out, err = run_on_terminal(self, self.ARGS)
        self.assertEqual(0, status, err)
        json.loads(out)
        self.assertNotIn('\r', out)
        texts = shown(err, 'search')
        self.assertIn('enumerating populations', texts[0])
        judged = [t for t in texts if 'populations judged' in t]
        self.assertTrue(judged)
        # The last batch reports every population judged.
        self.assertRegex(judged[-1], r'\[(\d+)/\1\]')
        self.assertIn('sizing for workload redis', texts[-1])
        # The line is erased before the command ends.
        self.assertTrue(err.endswith('\r'))

    def test_no_progress_option_and_quiet(self):
        for option, argv in clitools.without_progress(self.ARGS):
            status, out, err = run_on_terminal(self, argv)
            self.assertEqual(0, status, err)
            self.assertNotIn('\r', err, option)

    def test_not_a_terminal(self):
        status, out, err = clitools.run_cli(self, self.ARGS)
        self.assertEqual(0, status, err)
        json.loads(out)
        self.assertNotIn('\r', err)
        lines = err.splitlines()
        self.assertTrue(lines[0].startswith(
            'search: enumerating populations'), lines)
        judged = [ln for ln in lines if 'populations judged' in ln]
        # A line per tenth at most, and the last says all are judged.
        self.assertLessEqual(len(judged), progress.TENTHS + 1)
        self.assertRegex(judged[-1], r'\[(\d+)/\1\]')

    def test_not_a_terminal_quiet(self):
        clitools.assert_silent(self, self.ARGS)


class OptimizeProgressTestCase(testtools.TestCase):

    def test_terminal(self):
        status, out, err = run_on_terminal(
            self, ['optimize', '-f', 'json'])
        self.assertEqual(0, status, err)
        json.loads(out)
        texts = shown(err, 'optimize')
        # Few workloads: every pattern is listed, no column generated.
        self.assertTrue(texts[0].startswith(
            'optimize: every pattern listed: '), texts)
        self.assertTrue([t for t in texts if t.startswith(
            'optimize: best fleet ') and 'bound' in t and 'gap' in t],
            texts)
        self.assertTrue([t for t in texts if t.startswith(
            'optimize: [1/2] best single configuration: ')], texts)
        self.assertTrue(err.endswith('\r'))

    def _generate(self):
        # As on a problem with too many patterns to list.
        self.useFixture(fixtures.MockPatch(
            'nova_pmem_filters.planner.optimize.complete.MAX_PATTERNS', 0))

    def test_not_a_terminal(self):
        self._generate()
        status, out, err = clitools.run_cli(self, ['optimize', '-f', 'json'])
        self.assertEqual(0, status, err)
        self.assertNotIn('\r', err)
        lines = err.splitlines()
        self.assertTrue(lines[0].startswith(
            'optimize: [1] column generation: '), lines)
        self.assertTrue([ln for ln in lines if ln.startswith(
            'optimize: best fleet ') and ln.endswith(
                ' (integer program with free nodes)')], lines)
        self.assertIn('optimize: [1/2] best single configuration: dram-384',
                      lines)
        self.assertIn('optimize: [2/2] best single configuration: '
                      'mm-192-512', lines)
        # Every line is progress: a stage, or a tenth or ten rounds.
        self.assertEqual([], [ln for ln in lines
                              if not ln.startswith('optimize: ')])
        # The same answer as on a terminal.
        status, on_terminal, _err = run_on_terminal(
            self, ['optimize', '-f', 'json'])
        self.assertEqual(0, status, _err)
        self.assertEqual(json.loads(on_terminal), json.loads(out))

    def test_not_a_terminal_quiet(self):
        clitools.assert_silent(self, ['optimize', '-f', 'json'])

    def test_a_maximised_objective_reads_positive(self):
        # The solver minimises minus the VMs served: its figures are shown
        # as the VMs they are, the best fleet's the VMs it serves.
        self._generate()
        status, out, err = clitools.run_cli(self, [
            '-vv', 'optimize', '--objective', 'vms', '--budget', '90000',
            '--no-single', '-f', 'json'])
        self.assertEqual(0, status, err)
        lines = [ln for ln in err.splitlines()
                 if ln.startswith(('[round ', '[stage] best fleet '))]
        self.assertTrue(lines, err)
        figures = [float(f) for ln in lines
                   for f in re.findall(r'(?:LP|bound|fleet) (-?[0-9.e+]+)',
                                       ln)]
        self.assertTrue(figures)
        self.assertEqual([], [f for f in figures if f < 0], lines)
        total = [r for r in json.loads(out) if r['config'] == 'total'][0]
        best = [ln for ln in lines if ln.startswith('[stage] best fleet ')]
        self.assertEqual(total['redis'] + total['mysql'],
                         float(best[-1].split()[3].rstrip(',')), best)

    def test_very_verbose_logs_lines_instead(self):
        self._generate()
        status, out, err = run_on_terminal(
            self, ['-vv', 'optimize', '--no-single', '-f', 'json'])
        self.assertEqual(0, status, err)
        self.assertIn('[round 1] ', err)
        self.assertIn(' (integer program with free nodes)\n', err)
        self.assertEqual([], shown(err, 'optimize'))


class ReportProgressTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.out = os.path.join(self.useFixture(fixtures.TempDir()).path,
                                'report')

    def test_simulation_counts_in_the_total(self):
        total = report.STEPS + 2
        status, out, err = clitools.run_cli(
            self, ['report', '--simulate', '--no-png', '--output-dir',
                   self.out, '-f', 'value'])
        self.assertEqual(0, status, err)
        self.assertIn('[1/%d] simulate: ' % total, err)
        self.assertIn('[2/%d] simulate: replaying the trace' % total, err)
        self.assertIn('[3/%d] tables' % total, err)
        self.assertIn('[%d/%d] write' % (total, total), err)
        self.assertNotIn('\r', err)
        # Plain lines of the one policy: a line per step, labelled, and
        # the count of events replayed only on a terminal.
        lines = err.splitlines()
        self.assertIn('report: [3/%d] tables: comparison, calibration, '
                      'configs' % total, lines)
        self.assertEqual(total, len([ln for ln in lines
                                     if ln.startswith('report: [')]))
        self.assertNotIn('replaying the trace, ', err)

    def test_terminal(self):
        total = report.STEPS + 2
        status, out, err = run_on_terminal(
            self, ['report', '--simulate', '--no-png', '--output-dir',
                   self.out, '-f', 'value'])
        self.assertEqual(0, status, err)
        self.assertNotIn('\r', out)
        texts = shown(err, 'report')
        self.assertEqual('report: [1/%d] simulate: the optimiser\'s fleet '
                         'and the trace' % total, texts[0])
        self.assertTrue([t for t in texts if t.startswith(
            'report: [2/%d] simulate: replaying the trace, ' % total)])
        self.assertTrue(texts[-1].startswith(
            'report: [%d/%d] write: 1 file to ' % (total, total)))
        # No line per step on a terminal.
        self.assertNotIn('[3/%d] tables' % total, err.replace('\r', '\n')
                         .split('\n')[0])

    def test_no_progress(self):
        for argv in (['report', '--no-progress'], ['-q', 'report']):
            status, out, err = clitools.run_cli(
                self, argv + ['--no-png', '--output-dir', self.out])
            self.assertEqual(0, status, err)
            self.assertNotIn('[1/', err)
            self.assertNotIn('report: ', err)


class SimulateProgressTestCase(testtools.TestCase):
    """simulate's replay shows progress by its events or its fleet's size."""

    ARGV = ['simulate', '--nodes', 'mm-192-512=40', '--mix', 'redis=50',
            '--days', '20', '--lifetime-days', '2', '-f', 'value', '-c',
            'nodes']

    def replay_lines(self):
        status, out, err = clitools.run_cli(self, self.ARGV)
        self.assertEqual(0, status, err)
        return [line for line in err.splitlines()
                if line.startswith('simulate: [')
                and line.endswith('events replayed')]

    def test_few_events_on_few_nodes_quiet(self):
        self.assertEqual([], self.replay_lines())

    def test_few_events_on_many_nodes_shown(self):
        # The same few events on a fleet large enough to take seconds to
        # build and sample: lowering the bound to the 40 nodes stands for a
        # fleet of 100000.
        self.useFixture(fixtures.MonkeyPatch(
            'nova_pmem_filters.planner.commands.simulate.'
            'PROGRESS_FROM_NODES', 40))
        status, out, err = clitools.run_cli(self, self.ARGV)
        self.assertEqual(0, status, err)
        lines = err.splitlines()
        self.assertEqual('simulate: the fleet of 40 hosts', lines[0])
        total = lines[-1].split('/')[1].split(']')[0]
        self.assertEqual('simulate: [%s/%s] events replayed' % (total, total),
                         lines[-1])
