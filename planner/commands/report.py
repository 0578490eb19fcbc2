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

from planner.commands import base
from planner import errors
from planner import report
from planner import tables


class Report(lister.Lister):
    """Write an HTML capacity report with charts and list the files."""

    def get_parser(self, prog_name):
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
        return parser

    def _progress(self, step, total, label):
        # Progress goes to stderr: stdout is the listing of what was written.
        if self.app.options.verbose_level > 0:
            self.app.stderr.write('[%d/%d] %s\n' % (step, total, label))
            self.app.stderr.flush()

    def take_action(self, parsed_args):
        scen = base.load_scenario(parsed_args)
        out = parsed_args.output_dir
        problem = report.output_dir_problem(out)
        if problem:
            raise errors.OutputError('cannot write the report to %s: %s'
                                     % (out, problem))
        base.show_warnings(tables.findings_by_config(scen),
                           stream=self.app.stderr)
        extra = {}
        if parsed_args.simulate:
            from planner import simulate
            extra['simulation'] = simulate.run(scen)
        artifacts = report.build(scen, png=not parsed_args.no_png,
                                 progress=self._progress, **extra)
        self._progress(report.STEPS, report.STEPS,
                       'write: %d files to %s' % (len(artifacts), out))
        try:
            written = report.write(artifacts, out)
        except OSError as exc:
            raise errors.OutputError('cannot write the report to %s: %s'
                                     % (out, exc.strerror or exc)) from exc
        return ('path', 'kind', 'bytes'), written
