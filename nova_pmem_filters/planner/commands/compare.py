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
"""compare and calibration commands."""

import sys

from nova_pmem_filters.planner.commands import base
from nova_pmem_filters.planner import tables


class _ScenarioTable(base.ShortTableLister):
    """A table of the scenario: --scenario, and short columns of its own."""

    SHORT_COLUMNS = ()

    def short_columns(self, column_names):
        return self.SHORT_COLUMNS

    def get_parser(self, prog_name):
        return base.add_scenario_argument(super().get_parser(prog_name))


class Compare(_ScenarioTable):
    """Compare the baseline configuration with its cost-matched candidates."""

    SHORT_COLUMNS = tables.COMPARISON_SHORT_COLUMNS

    _epilog = (
        'node_cost, memory_cost and cost_per_vm are in %s (the currency '
        'column; a scenario\'s own prices are taken to be in it too). '
        'cost_vs_baseline is the node cost against the baseline\'s as text '
        '("-14.9%%"); cost_vs_baseline_pct is the same as a number (-14.93). '
        'An empty cell has no value (null in json and yaml): fleet:<kind> '
        'rows have no price or power.' % tables.CURRENCY)

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--workload', action='append', default=None, metavar='NAME',
            help='plan for this workload only (repeatable; default: all), '
                 'as nova-config --workload: the densities are those Nova '
                 'admits with the settings nova-config prints for them')
        parser.add_argument(
            '--placement-accounting', action='store_true',
            help='count what Nova admits with nova-config '
                 '--placement-accounting (the CUSTOM_NEAR_MEMORY_MB '
                 'inventory and requests)')
        return base.add_fleet_argument(
            parser, required=False,
            purpose='also compare the node kinds of the current fleet '
                    '(rows named fleet:<kind>)')

    def take_action(self, parsed_args):
        scen = base.load_scenario(parsed_args)
        kinds = ()
        if parsed_args.fleet:
            # Imports pandas (for the fleet command's table).
            from nova_pmem_filters.planner import fleet

            kinds = fleet.load(parsed_args.fleet)
        # A refused --workload is one line: before the warnings.
        base.check_workloads(scen, parsed_args.workload)
        base.show_warnings(tables.findings_by_config(scen),
                           verbose_level=self.app.options.verbose_level,
                           full=parsed_args.long)
        rows = tables.comparison_rows(
            scen, fleet_kinds=kinds, workloads=parsed_args.workload,
            placement_accounting=parsed_args.placement_accounting)
        if self.app.options.verbose_level >= 1:
            base.show_messages(sys.stderr, tables.admission_notes(
                scen, parsed_args.workload,
                parsed_args.placement_accounting))
        return tables.listing(rows, tables.COMPARE_COMMAND_COLUMNS)


class Calibration(_ScenarioTable):
    """Show how the performance model is calibrated on node gains.

    Each workload's calibration.node_gain: published, or an assumption;
    the reference column says which.
    """

    SHORT_COLUMNS = tables.CALIBRATION_SHORT_COLUMNS

    def take_action(self, parsed_args):
        scen = base.load_scenario(parsed_args)
        columns, rows = tables.listing(tables.calibration_rows(scen),
                                       tables.CALIBRATION_COMMAND_COLUMNS)
        if not rows:
            # Not an error: the model then uses each workload's throughput
            # as the scenario gives it. Machine formats get an empty list.
            base.show_messages(sys.stderr, [
                '%s: no calibration points: no workload gives a '
                'Memory-Mode node gain (calibration:) with a memory_mode '
                'configuration to fit it on; the model uses each '
                'workload\'s throughput as given' % scen.name])
        return columns, rows


class Configs(_ScenarioTable):
    """List the scenario's node configurations and their population checks."""

    SHORT_COLUMNS = tables.CONFIGS_SHORT_COLUMNS

    def take_action(self, parsed_args):
        scen = base.load_scenario(parsed_args)
        return tables.listing(tables.configs_rows(scen),
                              tables.CONFIGS_COMMAND_COLUMNS)
