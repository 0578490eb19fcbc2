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
"""Scheduler filters for hosts with DRAM, Memory-Mode, App-Direct PMem and
CXL memory tiers.

Both filters parse the flavor once per request in ``filter_all`` and then
decide each host with the core's rules
(:mod:`nova_pmem_filters.core.rules.decide`); a flavor or host that cannot be
understood is rejected with a log line, never with an exception.
"""

import itertools

from oslo_log import log as logging

from nova.scheduler import filters
from nova.scheduler import utils as scheduler_utils

from nova_pmem_filters import conf
from nova_pmem_filters.core.rules import charging
from nova_pmem_filters.core.rules import decide
from nova_pmem_filters.core.rules import placement
from nova_pmem_filters.scheduler import aggregate_view
from nova_pmem_filters.scheduler import logonce
from nova_pmem_filters.scheduler import numa
from nova_pmem_filters.scheduler import ovo
from nova_pmem_filters.scheduler import request_memo

LOG = logging.getLogger(__name__)
CONF = conf.CONF


class _PmemFilter(filters.BaseHostFilter):
    """Common request-level flow of the pmem filters.

    Subclasses implement ``_filter_hosts(hosts, spec_obj, memo)``, which
    returns the passing hosts.
    """

    def filter_all(self, filter_obj_list, spec_obj):
        hosts = list(filter_obj_list)
        if (not self.RUN_ON_REBUILD
                and scheduler_utils.request_is_rebuild(spec_obj)):
            return hosts
        try:
            aggregate_view.check_aggregate_view(spec_obj, hosts)
            return self._filter_hosts(hosts, spec_obj,
                                      request_memo.of(spec_obj))
        except Exception as exc:
            LOG.warning("%(cls)s rejects all %(count)d hosts: unexpected "
                        "error %(error)r",
                        {'cls': self.__class__.__name__,
                         'count': len(hosts), 'error': exc})
            return []

    def host_passes(self, host_state, spec_obj):
        return bool(self.filter_all([host_state], spec_obj))

    def _request(self, spec_obj, memo):
        """The request's PmemRequest, or None after logging why not."""
        request, error = request_memo.request(spec_obj, memo)
        if request is None:
            LOG.warning("%(cls)s rejects every host for instance "
                        "%(uuid)s: %(error)s",
                        {'cls': self.__class__.__name__,
                         'uuid': ovo.loaded(spec_obj, 'instance_uuid'),
                         'error': error})
        return request


class PmemModeFilter(_PmemFilter):
    """Pass hosts whose memory mode is one the flavor allows."""

    # A rebuild keeps the flavor and the host, so the mode cannot stop
    # fitting; re-checking would only fail rebuilds on hosts whose aggregate
    # was relabelled after boot.
    RUN_ON_REBUILD = False

    def _filter_hosts(self, hosts, spec_obj, memo):
        request = self._request(spec_obj, memo)
        if request is None:
            return []
        if decide.flavor_conflict(request):
            LOG.warning("PmemModeFilter rejects every host for instance "
                        "%(uuid)s: flavor %(flavor)s is contradictory: "
                        "%(conflict)s",
                        {'uuid': ovo.loaded(spec_obj, 'instance_uuid'),
                         'flavor': ovo.loaded(spec_obj.flavor, 'name'),
                         'conflict': request.conflict})
            return []
        if not request.constrains_modes:
            return hosts
        groups = request_memo.host_groups(spec_obj, hosts, memo)
        for group in request_memo.groups(memo):
            group.mode = decide.mode_passes(request, group.prof)
        debug = LOG.isEnabledFor(logging.DEBUG)
        passing = []
        for host_state, group in zip(hosts, groups):
            passes, reason = group.mode
            prof = group.prof
            if passes:
                passing.append(host_state)
            elif not debug:
                continue
            elif reason == decide.REJECT_MODE:
                LOG.debug("%(host_state)s fails pmem mode check: host mode "
                          "%(mode)s is not in the flavor's modes %(allowed)s",
                          {'host_state': host_state, 'mode': prof.mode,
                           'allowed': ','.join(sorted(request.modes))})
            else:
                LOG.debug("%(host_state)s fails pmem mode check: unknown "
                          "host profile (%(problem)s)",
                          {'host_state': host_state,
                           'problem': prof.problem})
        return passing


class PmemCacheFilter(_PmemFilter):
    """Keep the hot RAM of a tiered host within its near memory."""

    # On a rebuild the instance is already on the host and counted in its
    # usage; checking again would count it twice and could refuse a rebuild
    # of an instance that fits.
    RUN_ON_REBUILD = False

    def _filter_hosts(self, hosts, spec_obj, memo):
        # What an earlier pass kept is not this pass's.
        memo.kept = None
        request = self._request(spec_obj, memo)
        if request is None:
            return []
        groups = request_memo.host_groups(spec_obj, hosts, memo)
        # A flavor that requests its hot RAM from Placement has had the
        # host-wide bound checked there, atomically; counting it here again
        # would count it twice. Placement has no NUMA cells, so the cells of
        # a NUMA-bound flavor are still checked here.
        accounted_mb = placement.requested_near_memory(
            ovo.loaded(spec_obj.flavor, 'extra_specs'))
        accounted = bool(accounted_mb)
        bound = numa.requested_topology(spec_obj) is not None
        memory_mb = spec_obj.flavor.memory_mb
        ratio = CONF.pmem.cache_overcommit_ratio
        # The rule for each profile, once; the hosts whose usage it reads
        # brought up to date in one batch.
        # The verdict on the hosts of a profile whose usage is not read is
        # the same for all of them: worked out once.
        reads = set()
        verdicts = {}
        for group in request_memo.groups(memo):
            group.check = decide.cache_rule(group.prof, ratio, request,
                                            memory_mb, accounted, bound)
            if decide.reads_usage(group.prof, accounted, bound):
                reads.add(group)
            else:
                verdicts[group] = group.check(None)
        read_at = request_memo.positions(groups, reads)
        inputs_ = request_memo.hot_ram(hosts, groups, spec_obj, request,
                                       memo, reads, keep=True,
                                       read_at=read_at)
        # Whether each host passes: its group's verdict where its usage is
        # not read (most hosts of a cloud, in C), its own where it is.
        fixed = {group: verdict[0] for group, verdict in verdicts.items()}
        passes = list(map(fixed.get, groups))
        cells_rejected = False
        for index in read_at:
            hot, cells = inputs_[index]
            passes[index], reason, _view = groups[index].check(
                hot, cells, numa.fit_of(hosts[index], spec_obj, memo.fits)
                if bound else None)
            if reason == decide.REJECT_CELLS:
                cells_rejected = True
        # Rejections are logged at debug level, a bad cell label once as a
        # warning: the rest of a production scheduler's time is not spent
        # formatting lines that are dropped.
        if cells_rejected or LOG.isEnabledFor(logging.DEBUG):
            self._log_hosts(hosts, groups, inputs_, verdicts, spec_obj,
                            memo.fits if bound else None, request,
                            memory_mb, ratio, accounted_mb)
        passing = list(itertools.compress(hosts, passes))
        # The weighers of the pass weigh these hosts, if this filter is
        # the last: their inputs in their order.
        memo.kept.passing = passing
        memo.kept.passing_result = list(itertools.compress(inputs_, passes))
        return passing

    @classmethod
    def _log_hosts(cls, hosts, groups, inputs_, verdicts, spec_obj, fits,
                   request, memory_mb, ratio, accounted_mb):
        """Log the hosts' verdicts, worked out again (it is rare).

        :param fits: the request's NUMA fits if the flavor is NUMA-bound,
            else None.
        """
        debug = LOG.isEnabledFor(logging.DEBUG)
        for host_state, group, inputs in zip(hosts, groups, inputs_):
            prof = group.prof
            if inputs is None:
                hot = None
                passes, reason, view = verdicts[group]
            else:
                hot, cells = inputs
                passes, reason, view = group.check(
                    hot, cells, None if fits is None
                    else numa.fit_of(host_state, spec_obj, fits))
            if passes:
                if debug and accounted_mb and prof.tiered and not view:
                    LOG.debug("%(host_state)s passes pmem cache check: "
                              "Placement accounts this flavor's hot RAM "
                              "(%(key)s=%(mb)d)",
                              {'host_state': host_state,
                               'key': placement.NEAR_MEMORY_KEY,
                               'mb': accounted_mb})
            elif debug or reason == decide.REJECT_CELLS:
                cls._log_reject(host_state, prof, reason, view, hot,
                                request, memory_mb, ratio)

    @staticmethod
    def _log_reject(host_state, prof, reason, view, hot, request, memory_mb,
                    ratio):
        if reason == decide.REJECT_UNKNOWN:
            LOG.debug("%(host_state)s fails pmem cache check: unknown "
                      "host profile (%(problem)s), so its DRAM-cache "
                      "bound cannot be checked",
                      {'host_state': host_state, 'problem': prof.problem})
        elif reason == decide.REJECT_UNREADABLE:
            LOG.debug("%(host_state)s fails pmem cache check: the "
                      "flavors of its instances could not be read",
                      {'host_state': host_state})
        elif reason == decide.REJECT_CELLS:
            logonce.warn_once(
                LOG, (host_state.host, host_state.nodename, view.problem),
                "PmemCacheFilter rejects host %(host)s (node %(node)s): "
                "%(problem)s. Fix its aggregate metadata.",
                {'host': host_state.host, 'node': host_state.nodename,
                 'problem': view.problem})
        elif reason == decide.REJECT_NUMA_FIT:
            LOG.debug("%(host_state)s fails pmem cache check: Nova's NUMA "
                      "fitting places the instance's cells on none of the "
                      "host's cells", {'host_state': host_state})
        elif view is not None:
            cell = view.full
            LOG.debug("%(host_state)s fails pmem cache check: hot RAM "
                      "%(used).0f MB + %(new).0f MB requested on NUMA cell "
                      "%(cell)d exceeds the cell's DRAM-cache bound of "
                      "%(capacity).0f MB (cache_overcommit_ratio "
                      "%(ratio)s)",
                      {'host_state': host_state, 'used': view.used[cell],
                       'new': view.new[cell], 'cell': cell,
                       'capacity': view.capacities[cell], 'ratio': ratio})
        else:
            LOG.debug("%(host_state)s fails pmem cache check: hot RAM "
                      "%(used).0f MB + %(new).0f MB requested exceeds "
                      "the DRAM-cache bound of %(capacity).0f MB "
                      "(%(cache)g GB x cache_overcommit_ratio %(ratio)s)",
                      {'host_state': host_state,
                       'used': charging.charged(prof, hot).total,
                       'new': charging.instance_mb(prof, request, memory_mb,
                                                   False),
                       'capacity': prof.cache_capacity_mb(ratio),
                       'cache': prof.dram_cache_gb, 'ratio': ratio})


def all_filters():
    """Return the filter classes of nova-pmem-filters.

    For ``[filter_scheduler] available_filters``, next to Nova's own
    ``nova.scheduler.filters.all_filters``. The names are
    :data:`nova_pmem_filters.core.rules.classes.FILTERS`.
    """
    return [PmemModeFilter, PmemCacheFilter]
