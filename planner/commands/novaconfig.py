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
"""nova-config command."""

from cliff import lister

from planner.commands import base
from planner import errors
from planner import novaconfig


class NovaConfig(lister.Lister):
    """Show the Nova settings (aggregates, flavors, nova.conf) of the plan."""

    def get_parser(self, prog_name):
        parser = base.add_scenario_argument(super().get_parser(prog_name))
        parser.add_argument(
            '--workload', action='append', default=None, metavar='NAME',
            help='plan for this workload only (repeatable; default: all)')
        parser.add_argument(
            '--placement-accounting', action='store_true',
            help='also emit the CUSTOM_NEAR_MEMORY_MB provider-config '
                 'inventory of each configuration and the flavor extra '
                 'spec resources:CUSTOM_NEAR_MEMORY_MB, so that Placement '
                 'enforces the DRAM-cache bound atomically')
        return parser

    def take_action(self, parsed_args):
        scen = base.load_scenario(parsed_args)
        for name in parsed_args.workload or ():
            if name not in scen.workloads:
                raise errors.ScenarioError(
                    '--workload', [], 'unknown workload %r (known: %s)'
                    % (name, ', '.join(sorted(scen.workloads))))
        return base.frame_rows(novaconfig.settings(
            scen, workloads=parsed_args.workload,
            placement_accounting=parsed_args.placement_accounting))
