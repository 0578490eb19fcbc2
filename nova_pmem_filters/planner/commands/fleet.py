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
"""fleet command."""

from nova_pmem_filters.planner.commands import base


class Fleet(base.ShortTableLister):
    """List the node kinds of the current fleet and the VMs they hold."""

    def short_columns(self, column_names):
        from nova_pmem_filters.planner import fleet

        return fleet.short_columns(column_names)

    def get_parser(self, prog_name):
        parser = base.add_scenario_argument(super().get_parser(prog_name))
        return base.add_fleet_argument(parser, required=True,
                                       purpose='the current fleet')

    def take_action(self, parsed_args):
        from nova_pmem_filters.planner import fleet

        scen = base.load_scenario(parsed_args)
        kinds = fleet.load(parsed_args.fleet)
        return base.frame_rows(fleet.table(kinds, scen))
