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
"""report command: an HTML capacity report with PNG charts."""

import os

from cliff import lister

from nova_pmem_filters.planner.commands import base
from nova_pmem_filters.planner import errors
from nova_pmem_filters.planner import progress
from nova_pmem_filters.planner import tables

# Steps of --simulate before the report's own: the optimiser's fleet and
# the trace, then the replay.
SIMULATION_STEPS = 2
# Events replayed between two progress updates.
EVENTS_PER_UPDATE = 1000


class Report(lister.Lister):
    """Write an HTML capacity report with charts and list the files."""

    def get_parser(self, prog_name):
        # matplotlib, pandas and scipy (the charts and the optimiser).
        from nova_pmem_filters.planner import report

        parser = base.add_scenario_argument(super().get_parser(prog_name))
        parser.add_argument(
            '--output-dir', metavar='DIR',
            default=os.path.join('.', report.DEFAULT_OUTPUT_DIR),
            help='directory for %s and the charts, created if missing; '
                 'files of an earlier report are replaced only once the '
                 'new ones are complete (default: %%(default)s)'
                 % report.HTML_NAME)
        parser.add_argument(
            '--no-png', action='store_true',
            help='write only the HTML file (its charts are embedded in it)')
        parser.add_argument(
            '--simulate', action='store_true',
            help='add a simulated year of placements on the optimiser\'s '
                 'fleet for the scenario\'s demand, with its chart')
        return progress.add_argument(parser)

    def _progress(self, step, total, label):
        # Progress goes to stderr: stdout is the listing of what was written.
        # On a terminal one line is rewritten; elsewhere a line per step
        # (nova_pmem_filters.planner.progress).
        self._line.update(label, step, total)

    def _simulate(self, scen, total):
        from nova_pmem_filters.planner import simulate
        self._progress(1, total, 'simulate: the optimiser\'s fleet and '
                       'the trace')
        replaying = []

        def replayed(count):
            if not replaying:
                replaying.append(True)
                self._progress(2, total, 'simulate: replaying the trace')
            if count % EVENTS_PER_UPDATE == 0:
                # The same step: only the terminal line shows the count.
                self._line.update('simulate: replaying the trace, %d '
                                  'events' % count, 2, total)

        return simulate.run(scen, progress=replayed)

    def take_action(self, parsed_args):
        from nova_pmem_filters.planner import report

        scen = base.load_scenario(parsed_args)
        out = parsed_args.output_dir
        problem = report.output_dir_problem(out)
        if problem:
            raise errors.OutputError('cannot write the report to %s: %s'
                                     % (out, problem))
        base.show_warnings(tables.findings_by_config(scen),
                           stream=self.app.stderr,
                           verbose_level=self.app.options.verbose_level)
        self._line = progress.for_command(self, parsed_args, 'report')
        # The simulation's steps come first and count in the total.
        offset = SIMULATION_STEPS if parsed_args.simulate else 0
        total = report.STEPS + offset

        def build_step(step, _steps, label):
            self._progress(step + offset, total, label)

        with self._line:
            extra = {}
            if parsed_args.simulate:
                extra['simulation'] = self._simulate(scen, total)
            artifacts = report.build(scen, png=not parsed_args.no_png,
                                     progress=build_step, **extra)
            self._progress(total, total, 'write: %s to %s'
                           % (tables.counted(len(artifacts), 'file'), out))
            try:
                written = report.write(artifacts, out)
            except OSError as exc:
                raise errors.OutputError(
                    'cannot write the report to %s: %s'
                    % (out, exc.strerror or exc)) from exc
        return ('path', 'kind', 'bytes'), written
