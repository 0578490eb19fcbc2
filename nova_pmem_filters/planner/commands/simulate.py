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
"""simulate command."""

import io

from nova_pmem_filters.planner.commands import base
from nova_pmem_filters.planner import errors
from nova_pmem_filters.planner import progress

# The replay shows progress from this many events on
# (nova_pmem_filters.planner.progress), or on a fleet of this many nodes
# given with --nodes: a boot weighs groups of alike hosts, not each host,
# but building the fleet and sampling it read every host, so a few events
# on a large fleet take seconds.
PROGRESS_FROM = 20000
PROGRESS_FROM_NODES = 100000
# Events replayed between two progress updates.
EVENTS_PER_UPDATE = 1000


# The most nodes a simulation places VMs on (--nodes, in all): a fleet
# beyond it is refused before it is built. A million take seconds and a
# few hundred MB.
MAX_NODES = 1000000


def _pairs(option, values, convert, limit=None):
    result = {}
    for text in values or ():
        name, sep, raw = text.partition('=')
        try:
            value = convert(raw)
        except ValueError:
            value = None
        if not sep or not name or value is None or value < 0:
            raise errors.PlannerError(
                '%s %s: expected NAME=COUNT, a whole number 0 or more'
                % (option, text))
        if name in result:
            raise errors.PlannerError(
                '%s %s: %r given twice; give each name once'
                % (option, text, name))
        result[name] = value
        if limit is not None and sum(result.values()) > limit:
            raise errors.PlannerError(
                '%s %s: more than %d in all; at most %d'
                % (option, text, limit, limit))
    return result


class Simulate(base.ShortTableLister):
    """Replay VM boots and deletes on a fleet as Nova would place them."""

    def get_parser(self, prog_name):
        # numpy and pandas.
        from nova_pmem_filters.planner import simulate

        parser = base.add_scenario_argument(super().get_parser(prog_name))
        group = parser.add_mutually_exclusive_group()
        group.add_argument(
            '--nodes', action='append', metavar='CONFIG=N',
            help='nodes of a configuration (repeatable); default: the '
                 'fleet optimize chooses for the mix')
        base.add_fleet_argument(group, False, 'the fleet to simulate')
        parser.add_argument(
            '--host-vcpus', type=int, metavar='N',
            help='with --fleet: vCPUs of every host, overriding what the '
                 'profiles report (needed where a profile reports none: '
                 'written before nova-pmem-discover read lscpu)')
        parser.add_argument(
            '--trace', metavar='CSV',
            help='events to replay (columns %s; time in seconds); default: '
                 'a synthetic trace' % ','.join(simulate.CSV_FIELDS))
        parser.add_argument(
            '--mix', action='append', metavar='WORKLOAD=VMS',
            help='VMs of a workload running in steady state, for the '
                 'synthetic trace and the optimiser (repeatable); default: '
                 'the scenario\'s demand')
        parser.add_argument(
            '--days', default='365', metavar='DAYS',
            help='length of the synthetic trace (default: %%(default)s); '
                 'a trace of more than %d events on average (a boot and a '
                 'delete per VM: VMs of the mix / --lifetime-days x --days) '
                 'or of more than %d samples (--days / --sample-days) is '
                 'refused before it is drawn'
                 % (simulate.MAX_EVENTS, simulate.MAX_SAMPLES))
        parser.add_argument('--lifetime-days', default='30', metavar='DAYS',
                            help='mean VM lifetime of the synthetic trace '
                                 '(default: %(default)s)')
        parser.add_argument('--seed', default=0, type=base.seed,
                            help='seed of the synthetic trace, a whole '
                                 'number from 0 to 2**32-1 '
                                 '(default: %(default)s)')
        parser.add_argument('--write-trace', metavar='CSV',
                            help='also write the replayed trace as CSV')
        parser.add_argument('--timeline', metavar='CSV',
                            help='write the sampled state over time as CSV')
        parser.add_argument('--chart', metavar='PNG',
                            help='write a chart of the state over time')
        parser.add_argument('--sample-days', default='1', metavar='DAYS',
                            help='sampling interval (default: %(default)s)')
        parser.add_argument(
            '--near-memory', action='store_true',
            help='flavors request their hot RAM from Placement as '
                 'CUSTOM_NEAR_MEMORY_MB')
        progress.add_argument(parser)
        defaults = simulate.Scheduler()
        # The ratio is checked where it is used (above 0); a multiplier
        # may be any number, negative too, as Nova's.
        for option, field, kind in (
                ('--cache-overcommit-ratio', 'cache_overcommit_ratio', str),
                ('--ram-weight-multiplier', 'ram_weight_multiplier',
                 base.finite),
                ('--cpu-weight-multiplier', 'cpu_weight_multiplier',
                 base.finite),
                ('--tier-weight-multiplier', 'tier_weight_multiplier',
                 base.finite),
                ('--cache-headroom-weight-multiplier',
                 'cache_headroom_weight_multiplier', base.finite)):
            parser.add_argument(option, metavar='VALUE', type=kind,
                                default=str(getattr(defaults, field)),
                                help='as the Nova option of that name '
                                     '(default: %(default)s)')
        return parser

    def short_columns(self, column_names):
        from nova_pmem_filters.planner import simulate

        return [c for c in column_names if c in simulate.SHORT_COLUMNS]

    def take_action(self, parsed_args):
        from nova_pmem_filters.planner import simulate

        scen = base.load_scenario(parsed_args)
        number = base.number
        scheduler = simulate.Scheduler(
            cache_overcommit_ratio=number(
                '--cache-overcommit-ratio',
                parsed_args.cache_overcommit_ratio, positive=True),
            ram_weight_multiplier=parsed_args.ram_weight_multiplier,
            cpu_weight_multiplier=parsed_args.cpu_weight_multiplier,
            tier_weight_multiplier=parsed_args.tier_weight_multiplier,
            cache_headroom_weight_multiplier=(
                parsed_args.cache_headroom_weight_multiplier),
            near_memory=parsed_args.near_memory)
        mix = (_pairs('--mix', parsed_args.mix, base.whole_count)
               if parsed_args.mix else None)
        if mix is not None and not any(mix.values()):
            # Nothing to boot: no trace to draw and no fleet to choose.
            raise errors.PlannerError(
                '--mix %s: no workload has a VM; give at least one workload '
                'a count above 0' % ' --mix '.join(parsed_args.mix))
        nodes = (_pairs('--nodes', parsed_args.nodes, base.whole_count,
                        MAX_NODES)
                 if parsed_args.nodes else None)
        if parsed_args.host_vcpus is not None and parsed_args.host_vcpus < 1:
            raise errors.PlannerError(
                '--host-vcpus %d: expected a whole number of vCPUs, 1 or '
                'more' % parsed_args.host_vcpus)
        events = None
        if parsed_args.trace:
            events = simulate.read_csv(parsed_args.trace,
                                       simulate.flavors_of(scen))
        days = number('--days', parsed_args.days, positive=True)
        lifetime = number('--lifetime-days', parsed_args.lifetime_days,
                          positive=True)
        sample = number('--sample-days', parsed_args.sample_days,
                        positive=True)
        if events is None:
            # The trace is drawn first, to count the events; a trace the
            # simulation cannot finish is refused before anything is made.
            the_mix = mix if mix is not None else (
                dict(scen.demand[0].vms) if scen.demand else None)
            if the_mix is not None:
                simulate.check_synthetic(the_mix, days, lifetime, sample)
                events = simulate.synthetic(the_mix, days=days,
                                            lifetime_days=lifetime,
                                            seed=parsed_args.seed)
        line = progress.for_command(self, parsed_args, 'simulate')
        total = len(events) if events else 0
        hosts = sum(nodes.values()) if nodes else 0
        if total < PROGRESS_FROM and hosts < PROGRESS_FROM_NODES:
            line.enabled = False

        def replayed(count):
            if count % EVENTS_PER_UPDATE == 0 or count == total:
                line.update('events replayed', count, total)

        with line:
            if nodes is None and parsed_args.fleet is None:
                line.update('the optimiser\'s fleet for the mix')
            elif hosts >= PROGRESS_FROM_NODES:
                line.update('the fleet of %d hosts' % hosts)
            run = simulate.run(scen, nodes=nodes,
                               fleet_dir=parsed_args.fleet, events=events,
                               mix=mix, days=days, lifetime_days=lifetime,
                               seed=parsed_args.seed, scheduler=scheduler,
                               sample_days=sample, progress=replayed,
                               host_vcpus=parsed_args.host_vcpus)
        if parsed_args.write_trace:
            out = io.StringIO()
            simulate.write_csv(run.events, out)
            base.write_file(self, parsed_args.write_trace,
                            out.getvalue())
        if parsed_args.timeline:
            base.write_file(self, parsed_args.timeline,
                            run.result.timeline.to_csv(index=False))
        if parsed_args.chart:
            base.write_file(self, parsed_args.chart, simulate.chart_png(
                run.result.timeline, 'Simulated fleet of scenario %s'
                % scen.name))
        columns = simulate.SUMMARY_COLUMNS
        return columns, [tuple(r[c] for c in columns) for r in run.rows]
