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
"""sweep command."""

import argparse

from nova_pmem_filters.planner.commands import base
from nova_pmem_filters.planner import errors
from nova_pmem_filters.planner import sweep


def _jobs(text):
    """--jobs: a whole number of processes, 1 or more (argparse type)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(
            'expected a whole number of processes, 1 or more, got %r'
            % text)
    return value


def _values(option, text, low=0.0):
    values = []
    for part in (text or '').split(','):
        try:
            value = float(part)
        except ValueError:
            value = None
        if value is None or not value >= low:
            raise errors.PlannerError(
                '%s %s: expected numbers of %g or more, separated by commas'
                % (option, text, low))
        values.append(value)
    return values


class Sweep(base.ShortTableLister):
    """Optimise a grid of scenario variants in parallel; one row each."""

    def get_parser(self, prog_name):
        # Its points are parsed where they run: only the scenario's own
        # observations key reaches them.
        parser = base.add_scenario_argument(super().get_parser(prog_name),
                                            observations=False)
        parser.add_argument('--power-price', metavar='PRICES',
                            help='power prices per kWh, e.g. 0.05,0.1,0.2')
        parser.add_argument('--hot-ratio', metavar='RATIOS',
                            help='hot ratios given to every workload, e.g. '
                                 '0.1,0.3,0.5')
        parser.add_argument('--demand-scale', metavar='FACTORS',
                            help='factors on the scenario\'s demand, e.g. '
                                 '0.5,1,2')
        parser.add_argument('--jobs', type=_jobs, default=None,
                            help='processes on this machine, 1 or more '
                                 '(joblib; default: one per CPU)')
        parser.add_argument('--dask', metavar='ADDRESS',
                            help='run on the Dask cluster of this '
                                 'scheduler (tcp://host:8786) instead')
        parser.add_argument('--time-limit', metavar='SECONDS', default='60',
                            help='solver time per point '
                                 '(default: %(default)s)')
        parser.add_argument('--chart', metavar='PNG',
                            help='write a chart of TCO per VM over the grid')
        return parser

    def short_columns(self, column_names):
        return [c for c in column_names
                if c not in ('capex', 'energy', 'status')]

    def take_action(self, parsed_args):
        hot = _values('--hot-ratio', parsed_args.hot_ratio, 0.0) \
            if parsed_args.hot_ratio else ()
        if any(h <= 0 or h > 1 for h in hot):
            raise errors.PlannerError('--hot-ratio %s: each ratio must be '
                                      'above 0 and at most 1'
                                      % parsed_args.hot_ratio)
        points = sweep.grid(
            power_prices=_values('--power-price', parsed_args.power_price)
            if parsed_args.power_price else (),
            hot_ratios=hot,
            demand_scales=_values('--demand-scale', parsed_args.demand_scale)
            if parsed_args.demand_scale else ())
        time_limit = _values('--time-limit', parsed_args.time_limit)[0]
        rows = sweep.run(parsed_args.scenario, points,
                         jobs=parsed_args.jobs,
                         dask_address=parsed_args.dask,
                         time_limit=time_limit)
        if parsed_args.chart:
            base.write_file(self, parsed_args.chart, sweep.chart_png(
                rows, 'Sweep of %s' % (parsed_args.scenario or
                                       'the built-in scenario')))
        return sweep.COLUMNS, [tuple(r[c] for c in sweep.COLUMNS)
                               for r in rows]
