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
"""hot-ratios command."""

from nova_pmem_filters.core.plans import hotratio
from nova_pmem_filters.planner.commands import base
from nova_pmem_filters.planner import errors
from nova_pmem_filters.planner import observed


class HotRatios(base.ShortTableLister):
    """Recommend each flavor's pmem:hot_ratio from observed working sets."""

    # Its command column is copied as it is printed.
    fitted = False

    def get_parser(self, prog_name):
        from nova_pmem_filters.planner import scenario

        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--observations', metavar='DIR', required=True,
            help='a directory of nova-pmem-observe documents (the .json '
                 'files, one per host and window)')
        parser.add_argument(
            '--scenario', metavar='FILE|NAME', default=None,
            help='scenario YAML file, or the name of a built-in scenario '
                 '(%s), whose workloads give the declared hot ratios: a '
                 'flavor matches the workload whose flavor (default: its '
                 'name) it is; default: none' % ', '.join(
                     scenario.builtin_names()))
        parser.add_argument(
            '--placement-accounting', action='store_true',
            help='the flavors request their hot RAM in Placement '
                 '(resources:CUSTOM_NEAR_MEMORY_MB, as nova-config '
                 '--placement-accounting writes them): the command of a '
                 'flavor of the scenario sets that request too, for the '
                 'recommended ratio')
        parser.add_argument(
            '--min-instances', metavar='N',
            default=str(hotratio.MIN_INSTANCES),
            help='recommend only for flavors observed in at least N '
                 'distinct instances; the others are listed with no '
                 'recommendation and held_back says why (default: %d)'
                 % hotratio.MIN_INSTANCES)
        return parser

    def short_columns(self, column_names):
        return observed.SHORT_COLUMNS

    def take_action(self, parsed_args):
        from nova_pmem_filters.planner import scenario

        try:
            min_instances = base.whole_count(parsed_args.min_instances)
        except ValueError:
            min_instances = 0
        if min_instances < 1:
            raise errors.PlannerError(
                '--min-instances %s: expected a whole number of instances, '
                '1 or more' % parsed_args.min_instances)
        docs = observed.read(parsed_args.observations)
        ratios = hotratio.by_flavor(docs)
        if not ratios:
            # Not an error (as calibration with no points): the documents
            # are good and hold nothing to recommend from. Machine formats
            # get an empty list.
            for line in observed.nothing_to_recommend(
                    docs, parsed_args.observations):
                self.app.stderr.write(line + '\n')
        scen = (scenario.load(parsed_args.scenario,
                              observations=parsed_args.observations)
                if parsed_args.scenario else None)
        columns = observed.COLUMNS
        found = observed.rows(ratios, scen, parsed_args.placement_accounting,
                              min_instances)
        for row in found:
            if row['held_back']:
                self.app.stderr.write(
                    '%s: no recommendation: %s (--min-instances)\n'
                    % (row['flavor'], row['held_back']))
        return columns, [tuple(r[c] for c in columns) for r in found]
