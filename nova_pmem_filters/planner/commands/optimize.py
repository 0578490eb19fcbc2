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
"""optimize command."""

import math

from nova_pmem_filters.core.formats import scenario_schema as sch
from nova_pmem_filters.planner.commands import base
from nova_pmem_filters.planner import errors
from nova_pmem_filters.planner import progress


def _vm_count(text):
    """(workload, VMs) of one --demand; the count as a scenario's.

    A whole number, written with an exponent or not (``1e3`` is 1000, as
    in the scenario file), at most the scenario's bound on every number.
    """
    name, sep, count = text.partition('=')
    try:
        value = base.whole_count(count) if sep and name else None
    except base.CountTooLarge:
        raise errors.PlannerError('--demand %s: expected at most %s VMs' % (
            text, sch.short_number(sch.NUMBER_LIMIT))) from None
    except ValueError:
        value = None
    if value is None:
        raise errors.PlannerError('--demand %s: expected WORKLOAD=VMS, a '
                                  'whole number of VMs' % text)
    return name, value


def _demand(texts):
    """{workload: VMs} of the --demand options; a workload given once."""
    demand = {}
    for text in texts:
        name, value = _vm_count(text)
        if name in demand:
            raise errors.PlannerError(
                '--demand %s: workload %r given twice; give each workload '
                'once' % (text, name))
        demand[name] = value
    return demand


class Optimize(base.ShortTableLister):
    """Choose the fleet that carries the demand at the lowest cost."""

    def get_parser(self, prog_name):
        # scipy (its MILP solver).
        from nova_pmem_filters.planner import optimize

        parser = base.add_scenario_argument(super().get_parser(prog_name))
        parser.add_argument(
            '--objective', default=optimize.DEFAULT_OBJECTIVE,
            choices=optimize.OBJECTIVES,
            help='tco: the cheapest fleet (capex and energy over the '
                 'service life) that serves the whole demand; vms: the most '
                 'VMs served under the caps; throughput: the most VM '
                 'throughput under the caps (default: %(default)s)')
        parser.add_argument(
            '--demand', action='append', metavar='WORKLOAD=VMS',
            help='VMs of a workload to carry, in place of the scenario\'s '
                 'demand (repeatable; workloads not named get 0)')
        parser.add_argument('--config', action='append', metavar='NAME',
                            help='a candidate configuration (repeatable; '
                                 'default: every configuration)')
        for option, what in (('--budget', 'capex of all nodes'),
                             ('--power-kw', 'facility power in kW, PUE '
                                            'included, in every period'),
                             ('--rack-units', 'rack units of all nodes')):
            parser.add_argument(option, metavar='LIMIT',
                                help='cap on %s (replaces the scenario\'s)'
                                     % what)
        parser.add_argument(
            '--time-limit', metavar='SECONDS', default='60',
            help='time for the search of a fleet, and as much for each '
                 'configuration of the best single-configuration fleet; '
                 'when it cuts a search short, stderr says so and '
                 'time_limited is true (default: %(default)s)')
        parser.add_argument(
            '--gap', metavar='SHARE', default='0.001',
            help='stop once the answer is proven within this share of the '
                 'optimum (default: %(default)s)')
        parser.add_argument(
            '--no-single', action='store_true',
            help='skip the best single-configuration fleet')
        return progress.add_argument(parser)

    def short_columns(self, column_names):
        from nova_pmem_filters.planner import optimize

        return optimize.short_columns(column_names, self._periods)

    def _shown(self, value):
        """A value of the minimised objective, as the objective reads.

        The solver minimises the TCO, or minus the VMs (or throughput)
        served: those read positive, their lower bound an upper one.
        """
        # + 0.0: no "-0".
        return (value if self._objective == 'tco' else -value) + 0.0

    def _progress(self, rounds, columns, value, bound):
        value, bound = self._shown(value), self._shown(bound)
        if self.app.options.verbose_level > 1:
            self.app.stderr.write('[round %d] %d patterns, LP %.6g, bound '
                                  '%.6g\n' % (rounds, columns, value, bound))
        # Counted by rounds: off a terminal, a line per ten of them.
        self._line.update('column generation: %d patterns, LP %.6g, bound '
                          '%.6g' % (columns, value, bound), rounds)

    def _stage(self, what, incumbent, bound):
        # The figures first: a terminal line too long is cut at its end.
        text = what
        if incumbent is not None:
            text = 'best fleet %.6g' % self._shown(incumbent)
            if math.isfinite(bound):
                text += ', bound %.6g, gap %s' % (
                    self._shown(bound), _gap(incumbent, bound))
            text += ' (%s)' % what
        if self.app.options.verbose_level > 1:
            self.app.stderr.write('[stage] %s\n' % text)
        self._line.update(text)

    def _single(self, index, count, config):
        self._line.update('best single configuration: %s' % config, index,
                          count)

    def take_action(self, parsed_args):
        from nova_pmem_filters.planner import optimize

        self._objective = parsed_args.objective
        scen = base.load_scenario(parsed_args)
        demand = (_demand(parsed_args.demand)
                  if parsed_args.demand else None)
        caps = {k: base.number('--' + k.replace('_', '-'), v) for k, v in (
            ('budget', parsed_args.budget),
            ('power_kw', parsed_args.power_kw),
            ('rack_units', parsed_args.rack_units)) if v is not None}
        time_limit = base.number('--time-limit', parsed_args.time_limit)
        gap = base.number('--gap', parsed_args.gap)
        problem = optimize.build(scen, objective=parsed_args.objective,
                                 demand=demand, configs=parsed_args.config,
                                 **caps)
        self._periods = len(problem.periods)
        self._line = progress.for_command(self, parsed_args, 'optimize')
        # With -vv the rounds and stages are logged a line each instead.
        self._line.enabled &= self.app.options.verbose_level < 2
        with self._line:
            plan = optimize.solve(problem, scen=scen, time_limit=time_limit,
                                  gap=gap, progress=self._progress,
                                  stage=self._stage)
            plans = [plan]
            if not parsed_args.no_single:
                plans.append(optimize.best_single(
                    problem, scen=scen, time_limit=time_limit, gap=gap,
                    progress=self._single))
        for each in plans:
            if each is not None:
                self._tell(problem, each, gap, time_limit)
        columns = optimize.columns(problem)
        return columns, [tuple(r.get(c) for c in columns)
                         for r in optimize.rows(problem, plans)]

    def _tell(self, problem, plan, gap, time_limit):
        """What the table alone does not say of a fleet: a line each."""
        from nova_pmem_filters.planner import optimize

        if plan.status != 'optimal':
            self.app.stderr.write(
                "optimize: fleet '%s' is not proven optimal: %s\n"
                % (plan.name, _unproven(plan, gap)))
        if plan.time_limited:
            self.app.stderr.write(
                "optimize: --time-limit %g s cut the search for fleet '%s' "
                "short: the same inputs may give another fleet or gap on "
                "another machine; give it more time\n"
                % (time_limit, plan.name))
        short = _unmet(problem, optimize.unmet(problem, plan))
        if short:
            self.app.stderr.write(
                "optimize: fleet '%s' does not meet the demand: %s\n"
                % (plan.name, short))


def _unmet(problem, unmet):
    """The demand not served, in words ('' when all of it is)."""
    parts = []
    for period in problem.periods:
        words = ', '.join(
            '%d of %d %s VMs (%d unmet)' % (period.vms.get(w, 0) - n,
                                            period.vms.get(w, 0), w, n)
            for w, n in unmet[period.name].items() if n)
        if words:
            parts.append(words if len(problem.periods) == 1
                         else 'in period %s, %s' % (period.name, words))
    return ('it serves ' + '; '.join(parts)) if parts else ''


def _gap(incumbent, bound):
    """The relative gap between a fleet and the bound, in percent."""
    return '%.3g%%' % (100.0 * max(incumbent - bound, 0.0)
                       / max(abs(incumbent), 1e-9))


def _unproven(plan, gap):
    """Why a plan is not proven optimal (within --gap), in words."""
    if plan.gap is None:
        return 'no finite gap is proven'
    return 'its gap is %.4g, not within --gap %g (%.1f s)' % (
        plan.gap, gap, plan.seconds)
