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
"""The strategy ``tiered_memory_rebalance``: the goal near_memory_balance.

Each audit: Watcher's compute model and the aggregates' metadata (through
Watcher's Nova helper) give the hosts and their profiles, Prometheus the
working sets the observers measured (through Watcher's own datasource,
Prometheus or Aetos, as :mod:`~nova_pmem_filters.watcher.datasource`
picks it), and
:func:`~nova_pmem_filters.core.plans.rebalance.plan` the moves: one ``migrate``
action each (live, with its destination), and the goal's efficacy
indicators. Every host over that the plan leaves, or could not judge, is
logged with the plan's reason.

Audit parameters (:meth:`TieredMemoryRebalance.get_schema`): ``act_above``,
``aim_below`` and ``max_migrations``, the plan's hysteresis and cap.
Options (``[watcher_strategies.tiered_memory_rebalance]``,
:meth:`TieredMemoryRebalance.get_config_opts`): the datasources (Watcher's
``[watcher_datasources] datasources`` by default), the query, and the
nova.conf files whose ``[pmem]`` settings the rules need
(:mod:`nova_pmem_filters.conf.schedulerconf`, read as nova-scheduler
reads them: set once, in nova.conf). The four ``[pmem]``
options this section used to repeat still win where set, deprecated, and
so does its own Prometheus client (``prometheus_url`` and the options
beside it, :mod:`~nova_pmem_filters.watcher.workingsets`), deprecated
for Watcher's datasource.

An instance Watcher must not move (not active, so no live migration; or
excluded by the audit's scope) is given to the plan as not movable: it
stays, and still counts on its host.
"""

import copy
import dataclasses
import os

from oslo_config import cfg
from oslo_log import log
from watcher.common import exception
from watcher.common import nova_helper
from watcher.decision_engine.strategy.strategies import base

from nova_pmem_filters.conf import pmem
from nova_pmem_filters.conf import schedulerconf
from nova_pmem_filters.core.plans import rebalance
from nova_pmem_filters.watcher import datasource
from nova_pmem_filters.watcher import goal
from nova_pmem_filters.watcher import inputs
from nova_pmem_filters.watcher import workingsets

LOG = log.getLogger(__name__)
NAME = 'tiered_memory_rebalance'
DISPLAY_NAME = 'Tiered memory rebalance'
# The scheduler's [pmem] options the rules read, under the same names.
PMEM_OPTIONS = ('default_host_mode', 'default_flavor_modes',
                'default_hot_ratio', 'cache_overcommit_ratio')
# Where nova-scheduler's settings are, by default.
NOVA_CONFIG_FILES = ['/etc/nova/nova.conf']


class WorkingSetsUnavailable(exception.DataSourceNotAvailable):
    msg_fmt = ('The working sets could not be read: %(reason)s. Check '
               'that the Prometheus of Watcher\'s datasource scrapes '
               'nova-pmem-observe.')


class NeedsFlavorExtraSpecs(exception.WatcherException):
    msg_fmt = ('Strategy ' + NAME + ' needs the flavors\' extra specs in '
               'the compute model: set [compute_model] '
               'enable_extended_attributes = true in watcher.conf.')


def _deprecated_pmem_opts():
    """The scheduler's [pmem] options this section once repeated.

    The same declarations (type, choices, bounds), without a default: None
    says the operator did not set it here, and nova.conf's value applies.
    """
    by_name = {opt.name: opt for opt in pmem.pmem_opts}
    found = []
    for name in PMEM_OPTIONS:
        opt = copy.deepcopy(by_name[name])
        opt.default = None
        opt.deprecated_for_removal = True
        opt.deprecated_reason = (
            'Set [pmem] %s once, in the nova.conf that nova_config_files '
            'names: the strategy reads it there.' % name)
        opt.help = ('Deprecated: overrides [pmem] %s of nova_config_files. '
                    % name + opt.help)
        found.append(opt)
    return found


# The strategy's own Prometheus client, before it read Watcher's datasource.
_PROMETHEUS_REASON = (
    'Configure Prometheus once, for every strategy, in Watcher\'s own '
    'sections: [watcher_datasources] datasources = aetos (Watcher 16, '
    '2026.1, and later) or prometheus, and [aetos_client] or '
    '[prometheus_client]. Where this option is set, the strategy still '
    'reads Prometheus with its own client.')


def _deprecated(opt):
    opt.deprecated_for_removal = True
    opt.deprecated_reason = _PROMETHEUS_REASON
    opt.help = 'Deprecated: ' + opt.help
    return opt


# Made once: Watcher registers a strategy's options again at each audit,
# and oslo.config marks an option once it has logged its deprecation, so a
# fresh copy would differ from the registered one (DuplicateOptError).
DEPRECATED_PMEM_OPTS = _deprecated_pmem_opts()
DEPRECATED_PROMETHEUS_OPTS = [_deprecated(opt) for opt in (
    cfg.StrOpt('prometheus_url',
               help='URL of the Prometheus that scrapes nova-pmem-observe, '
               'e.g. https://prometheus:9090. Where set, the working sets '
               'are read there, not through Watcher\'s datasource.'),
    cfg.StrOpt('prometheus_ca_file',
               help='PEM CA certificates that sign Prometheus\'s '
               'certificate (default: the system\'s).'),
    cfg.StrOpt('prometheus_cert_file',
               help='Client certificate, for a Prometheus that requires '
               'one.'),
    cfg.StrOpt('prometheus_key_file',
               help='Private key of prometheus_cert_file.'),
    cfg.BoolOpt('prometheus_insecure', default=False,
                help='Do not verify Prometheus\'s certificate.'),
    cfg.FloatOpt('prometheus_timeout', default=workingsets.TIMEOUT,
                 min=0.1, help='Seconds to wait for Prometheus.'),
)]


def scheduler_settings(strategy_conf):
    """The scheduler's ``[pmem]`` settings, as the rules need them.

    From ``nova_config_files`` (later files override earlier ones); a
    deprecated option of the strategy's own section wins where set. Where
    the option is left at its default and that file is missing (a
    decision engine without nova.conf), the ``[pmem]`` defaults, as before
    the option existed, with a warning.

    :returns: a :class:`~nova_pmem_filters.conf.schedulerconf.NovaConfig`.
    :raises exception.Invalid: a file that is missing (named by the
        operator), cannot be read, or holds a value nova-scheduler would
        refuse: one line, naming it.
    """
    files = list(strategy_conf.nova_config_files)
    if files == NOVA_CONFIG_FILES and not os.path.exists(files[0]):
        LOG.warning('%s does not exist: the scheduler\'s [pmem] settings '
                    'are taken as their defaults. Set [watcher_strategies.'
                    '%s] nova_config_files to the nova.conf of '
                    'nova-scheduler.', files[0], NAME)
        files = []
    try:
        nova = schedulerconf.load(files)
    except schedulerconf.ConfigError as exc:
        raise exception.Invalid(
            message='[watcher_strategies.%s] nova_config_files: %s'
            % (NAME, exc))
    own = {name: strategy_conf[name] for name in PMEM_OPTIONS
           if strategy_conf[name] is not None}
    if 'default_flavor_modes' in own:
        own['default_flavor_modes'] = tuple(own['default_flavor_modes'])
    return dataclasses.replace(nova, **own)


class TieredMemoryRebalance(base.BaseStrategy):
    """Tiered memory rebalance

    *Description*

        Live-migrates instances off tiered hosts (PMem Memory Mode, CXL
        memory behind DRAM) whose measured working set exceeds their near
        memory, moving as little memory and as few instances as possible,
        to hosts that admit them by the pmem filters' rules, with room for
        their RAM and vCPUs and, if tiered, their working sets below
        aim_below x their near memory.

    *Requirements*

        * nova-pmem-observe on the compute hosts, scraped by Prometheus.
        * The pmem filters in nova-scheduler and the hosts' aggregates
          carrying pmem_mode and pmem_dram_cache_gb.
        * [compute_model] enable_extended_attributes = true.

    *Limitations*

        * Host-wide: Watcher's model has no NUMA cells (Nova's scheduler
          checks them when it migrates).
        * A host with an instance whose working set was not measured is
          not planned on.
    """

    def __init__(self, config, osc=None):
        super().__init__(config, osc)
        self.plan = None
        self.left_out = []
        self.moves = []
        self._nova = None
        self._datasource_name = None

    @classmethod
    def get_name(cls):
        return NAME

    @classmethod
    def get_display_name(cls):
        return DISPLAY_NAME

    @classmethod
    def get_translatable_display_name(cls):
        return DISPLAY_NAME

    @classmethod
    def get_goal_name(cls):
        return goal.NAME

    @classmethod
    def get_schema(cls):
        return {
            'properties': {
                'act_above': {
                    'description': 'A tiered host is over when its '
                    'measured working set exceeds this multiple of its '
                    'near memory.',
                    'type': 'number', 'minimum': 0,
                    'exclusiveMinimum': True,
                    'default': rebalance.ACT_ABOVE,
                },
                'aim_below': {
                    'description': 'After the plan, every host it fixes '
                    'and every destination is at or below this multiple '
                    'of its near memory (at most act_above: the gap keeps '
                    'audits from undoing each other).',
                    'type': 'number', 'minimum': 0,
                    'exclusiveMinimum': True,
                    'default': rebalance.AIM_BELOW,
                },
                'max_migrations': {
                    'description': 'The most live migrations one action '
                    'plan holds.',
                    'type': 'integer', 'minimum': 0,
                    'default': rebalance.MAX_MOVES,
                },
            },
        }

    @classmethod
    def get_config_opts(cls):
        return [
            cfg.ListOpt('datasources', default=None,
                        item_type=cfg.types.String(
                            choices=datasource.offered()),
                        help='The datasources to read the working sets '
                        'from, in the order to try: the first that '
                        'answers PromQL is used (default: '
                        '[watcher_datasources] datasources). Configure '
                        'it in [prometheus_client] or [aetos_client].'),
            cfg.StrOpt('working_set_query', default=workingsets.QUERY,
                       help='PromQL instant query of the working sets, in '
                       'bytes, one series per instance with its uuid '
                       'label.'),
            cfg.ListOpt('nova_config_files', default=NOVA_CONFIG_FILES,
                        help='The nova.conf files of nova-scheduler, in '
                        'the order it reads them: their [pmem] settings '
                        '(default_host_mode, default_flavor_modes, '
                        'default_hot_ratio, cache_overcommit_ratio) are '
                        'the rules the plan follows.'),
        ] + DEPRECATED_PROMETHEUS_OPTS + DEPRECATED_PMEM_OPTS

    @property
    def nova(self):
        if self._nova is None:
            self._nova = nova_helper.NovaHelper()
        return self._nova

    def pre_execute(self):
        self._pre_execute()
        if not self.compute_model.extended_attributes_enabled:
            raise NeedsFlavorExtraSpecs()
        params = self.input_parameters
        if params.aim_below > params.act_above:
            raise exception.Invalid(
                message='aim_below %g is above act_above %g: the plan must '
                'aim below the threshold it acts above'
                % (params.aim_below, params.act_above))

    def _datasources_conf(self):
        """The strategy's own datasources where set, else Watcher's."""
        if self.config.datasources:
            return self.config
        return cfg.CONF.watcher_datasources

    @property
    def datasource_backend(self):
        """The Watcher datasource the working sets come from.

        Watcher's ``strategy state`` reports its availability.
        """
        if self._datasource_backend is None:
            try:
                self._datasource_name, self._datasource_backend = (
                    datasource.backend(self._datasources_conf(), self.osc))
            except datasource.Unavailable as exc:
                raise WorkingSetsUnavailable(reason=str(exc))
        return self._datasource_backend

    def working_sets(self):
        """{uuid: MB}; raises WorkingSetsUnavailable.

        Through Watcher's datasource; through the strategy's own
        Prometheus client where the deprecated ``prometheus_url`` is set.
        """
        conf = self.config
        if conf.prometheus_url:
            return self._deprecated_working_sets()
        helper = self.datasource_backend
        try:
            return datasource.working_sets(
                self._datasource_name, helper, conf.working_set_query)
        except datasource.Unavailable as exc:
            raise WorkingSetsUnavailable(reason=str(exc))

    def _deprecated_working_sets(self):
        conf = self.config
        try:
            context = workingsets.tls_context(
                conf.prometheus_ca_file, conf.prometheus_cert_file,
                conf.prometheus_key_file, conf.prometheus_insecure)
            return workingsets.working_sets(
                conf.prometheus_url, conf.working_set_query,
                conf.prometheus_timeout, context)
        except workingsets.PrometheusError as exc:
            raise WorkingSetsUnavailable(reason=str(exc))
        except (OSError, ValueError) as exc:
            raise WorkingSetsUnavailable(reason='TLS files: %s' % exc)

    def do_execute(self, audit=None):
        params = self.input_parameters
        nova = scheduler_settings(self.config)
        measured = self.working_sets()
        hosts, self.left_out = inputs.hosts(
            self.compute_model, self.nova.get_aggregate_list(), measured,
            nova.default_host_mode)
        for name, why in self.left_out:
            LOG.info('%s: not planned on: %s', name, why)
        try:
            self.plan = rebalance.plan(
                hosts, act_above=params.act_above,
                aim_below=params.aim_below,
                max_moves=params.max_migrations,
                cache_overcommit_ratio=nova.cache_overcommit_ratio,
                defaults=nova.defaults)
        except rebalance.RebalanceError as exc:
            raise exception.Invalid(message=str(exc))
        for unfixed in self.plan.unfixed:
            LOG.warning('%s: left over its near memory (%s): %s',
                        unfixed.host, unfixed.reason, unfixed.detail)
        self.moves = self.plan.moves
        for move in self.moves:
            instance = self.compute_model.get_instance_by_uuid(move.instance)
            source = self.compute_model.get_node_by_name(move.source)
            destination = self.compute_model.get_node_by_name(
                move.destination)
            self.compute_model.migrate_instance(instance, source,
                                                destination)
            self.add_action_migrate(instance, 'live', source, destination)

    def post_execute(self):
        self.solution.model = self.compute_model
        plan, moves = self.plan, self.moves
        self.solution.set_efficacy_indicators(
            hosts_over_near_memory_before=plan.over_before,
            hosts_over_near_memory_after=plan.over_after,
            hosts_not_judged=sum(
                1 for u in plan.unfixed
                if u.reason in (rebalance.UNMEASURED,
                                rebalance.PROFILE_UNKNOWN)),
            memory_moved_mb=sum(m.memory_mb for m in moves),
            instance_migrations_count=len(moves))
