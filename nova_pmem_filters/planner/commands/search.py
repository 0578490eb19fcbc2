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
"""search command."""

from nova_pmem_filters.planner.commands import base
from nova_pmem_filters.planner import errors
from nova_pmem_filters.planner import progress


def _band(text):
    """--band's fraction: 0 or more and below 1."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        value = -1.0
    if not 0.0 <= value < 1.0:
        raise errors.PlannerError(
            '--band %s: expected a fraction of the budget, 0 or more and '
            'below 1 (0.1 for +-10%%)' % text)
    return value


class Search(base.ShortTableLister):
    """Rank every valid DIMM population of a platform and CPU in a budget."""

    def short_columns(self, column_names):
        from nova_pmem_filters.planner import ranking
        from nova_pmem_filters.planner import search

        # The measures of the objectives other than cost per VM, VMs per
        # node and the one ranked by are in --long: the table fits 120
        # columns.
        objective = getattr(self, '_objective', search.DEFAULT_OBJECTIVE)
        return [c for c in search.SHORT_COLUMNS
                if c not in ranking.OBJECTIVES
                or c in ('cost_per_vm', 'vms_per_node', objective)]

    def get_parser(self, prog_name):
        # numpy and pandas.
        from nova_pmem_filters.planner import ranking
        from nova_pmem_filters.planner import search

        parser = base.add_scenario_argument(super().get_parser(prog_name))
        parser.add_argument(
            '--platform', metavar='NAME',
            help='platform of the catalog to populate (required)')
        parser.add_argument(
            '--cpu', metavar='NAME',
            help='CPU of the catalog, on every socket (required)')
        parser.add_argument(
            '--workload', metavar='NAME',
            help='workload of the scenario to size for; default: the '
                 'first one')
        parser.add_argument(
            '--dimm', metavar='NAME', action='append',
            help='DIMM type that may be installed; repeat for several; '
                 'default: every DIMM of the catalog the platform and CPU '
                 'can take')
        parser.add_argument(
            '--modes', metavar='MODE[,MODE...]', action='append',
            help='memory modes to search (dram is searched with DRAM '
                 'only, memory_mode and app_direct with DRAM and PMem); '
                 'default: the modes the workload\'s flavor allows')
        parser.add_argument(
            '--budget', metavar='COST',
            help='node cost to search around; default: the cost of the '
                 'scenario\'s baseline node')
        parser.add_argument(
            '--band', metavar='FRACTION', default=search.DEFAULT_BAND,
            help='keep populations whose node cost is within budget '
                 'x (1 +- FRACTION); default: %(default)s')
        parser.add_argument(
            '--objective', metavar='NAME', default=search.DEFAULT_OBJECTIVE,
            help='rank by one of %s; default: %%(default)s'
                 % ', '.join(ranking.OBJECTIVES))
        parser.add_argument(
            '--limit', metavar='N', default=search.DEFAULT_LIMIT,
            help='show the best N rows, 0 for all; default: %(default)s')
        return progress.add_argument(parser)

    def take_action(self, parsed_args):
        from nova_pmem_filters.planner import search

        band = _band(parsed_args.band)
        scen = base.load_scenario(parsed_args)
        self._objective = parsed_args.objective
        with progress.for_command(self, parsed_args, 'search') as line:
            result = search.run(
                scen, parsed_args.platform, parsed_args.cpu,
                workload=parsed_args.workload, dimms=parsed_args.dimm,
                modes=parsed_args.modes, budget=parsed_args.budget,
                band=band, objective=parsed_args.objective,
                limit=parsed_args.limit, progress=line.update)
        return base.frame_rows(result.frame)
