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
"""Scheduler filters for hosts with DRAM, Memory-Mode and App-Direct PMem.

Both filters parse the flavor once per request in ``filter_all`` and then
decide per host; a flavor or host that cannot be understood is rejected with
a log line, never with an exception.
"""

from oslo_log import log as logging

from nova.scheduler import filters
from nova.scheduler import utils as scheduler_utils

from nova_pmem_filters import decide
from nova_pmem_filters import extra_specs
from nova_pmem_filters import hostinfo
from nova_pmem_filters import profile

LOG = logging.getLogger(__name__)
CONF = hostinfo.CONF


class _PmemFilter(filters.BaseHostFilter):
    """Common request-level flow of the pmem filters.

    Subclasses implement ``_filter_hosts(hosts, spec_obj)``, which returns
    the passing hosts.
    """

    def filter_all(self, filter_obj_list, spec_obj):
        hosts = list(filter_obj_list)
        if (not self.RUN_ON_REBUILD
                and scheduler_utils.request_is_rebuild(spec_obj)):
            return hosts
        try:
            hostinfo.check_aggregate_view(spec_obj, hosts)
            return self._filter_hosts(hosts, spec_obj)
        except Exception as exc:
            LOG.warning("%(cls)s rejects all %(count)d hosts: unexpected "
                        "error %(error)r",
                        {'cls': self.__class__.__name__,
                         'count': len(hosts), 'error': exc})
            return []

    def host_passes(self, host_state, spec_obj):
        return bool(self.filter_all([host_state], spec_obj))


class PmemModeFilter(_PmemFilter):
    """Pass hosts whose memory mode is one the flavor allows."""

    # A rebuild keeps the flavor and the host, so the mode cannot stop
    # fitting; re-checking would only fail rebuilds on hosts whose aggregate
    # was relabelled after boot.
    RUN_ON_REBUILD = False

    def _filter_hosts(self, hosts, spec_obj):
        request, error = hostinfo.spec_request(spec_obj)
        if request is None:
            LOG.warning("PmemModeFilter rejects every host for instance "
                        "%(uuid)s: %(error)s",
                        {'uuid': hostinfo.loaded(spec_obj, 'instance_uuid'),
                         'error': error})
            return []
        if decide.flavor_conflict(request):
            LOG.warning("PmemModeFilter rejects every host for instance "
                        "%(uuid)s: flavor %(flavor)s is contradictory: "
                        "%(conflict)s",
                        {'uuid': hostinfo.loaded(spec_obj, 'instance_uuid'),
                         'flavor': hostinfo.loaded(spec_obj.flavor, 'name'),
                         'conflict': request.conflict})
            return []
        if not request.constrains_modes:
            return hosts
        allowed = ','.join(sorted(request.modes))
        passing = []
        for host_state in hosts:
            prof = hostinfo.host_profile(host_state)
            passes, reason = decide.mode_passes(request, prof)
            if passes:
                passing.append(host_state)
            elif reason == decide.REJECT_MODE:
                LOG.debug("%(host_state)s fails pmem mode check: host mode "
                          "%(mode)s is not in the flavor's modes %(allowed)s",
                          {'host_state': host_state, 'mode': prof.mode,
                           'allowed': allowed})
            else:
                LOG.debug("%(host_state)s fails pmem mode check: unknown "
                          "host profile (%(problem)s)",
                          {'host_state': host_state,
                           'problem': prof.problem})
        return passing


class PmemCacheFilter(_PmemFilter):
    """Keep the hot RAM of a Memory-Mode host within its DRAM cache."""

    # On a rebuild the instance is already on the host and counted in its
    # usage; checking again would count it twice and could refuse a rebuild
    # of an instance that fits.
    RUN_ON_REBUILD = False

    def _filter_hosts(self, hosts, spec_obj):
        request, error = hostinfo.spec_request(spec_obj)
        if request is None:
            LOG.warning("PmemCacheFilter rejects every host for instance "
                        "%(uuid)s: %(error)s",
                        {'uuid': hostinfo.loaded(spec_obj, 'instance_uuid'),
                         'error': error})
            return []
        profiles = [hostinfo.host_profile(hs) for hs in hosts]
        # A flavor that requests its hot RAM from Placement has had the
        # host-wide bound checked there, atomically; counting it here again
        # would count it twice. Placement has no NUMA cells, so the cells of
        # a NUMA-bound flavor are still checked here.
        accounted = extra_specs.requested_near_memory(
            hostinfo.loaded(spec_obj.flavor, 'extra_specs'))
        requested = hostinfo.requested_topology(spec_obj)
        usage = {}
        if not accounted or requested is not None:
            usage = hostinfo.memory_mode_hot_ram(
                hosts, profiles, spec_obj, request)
        new_hot_mb = request.hot_mb(spec_obj.flavor.memory_mb)
        ratio = CONF.pmem.cache_overcommit_ratio
        passing = []
        for host_state, prof in zip(hosts, profiles):
            hot = usage.get(hostinfo.node_key(host_state))
            cells = hostinfo.host_cells(host_state)
            if hostinfo.uses_cells(prof, cells, hot, requested):
                if self._cells_pass(host_state, prof, cells, hot, spec_obj,
                                    request, ratio):
                    passing.append(host_state)
                continue
            used = None if hot is None else hot.total
            passes, reason = decide.cache_passes(
                prof, used, new_hot_mb, ratio, accounted=bool(accounted))
            if passes:
                if accounted and prof.mode in profile.TIERED:
                    LOG.debug("%(host_state)s passes pmem cache check: "
                              "Placement accounts this flavor's hot RAM "
                              "(%(key)s=%(mb)d)",
                              {'host_state': host_state,
                               'key': extra_specs.NEAR_MEMORY_KEY,
                               'mb': accounted})
                passing.append(host_state)
            elif reason == decide.REJECT_UNKNOWN:
                LOG.debug("%(host_state)s fails pmem cache check: unknown "
                          "host profile (%(problem)s), so its DRAM-cache "
                          "bound cannot be checked",
                          {'host_state': host_state,
                           'problem': prof.problem})
            elif reason == decide.REJECT_UNREADABLE:
                LOG.debug("%(host_state)s fails pmem cache check: the "
                          "flavors of its instances could not be read",
                          {'host_state': host_state})
            else:
                LOG.debug("%(host_state)s fails pmem cache check: hot RAM "
                          "%(used).0f MB + %(new).0f MB requested exceeds "
                          "the DRAM-cache bound of %(capacity).0f MB "
                          "(%(cache)g GB x cache_overcommit_ratio %(ratio)s)",
                          {'host_state': host_state, 'used': used,
                           'new': new_hot_mb,
                           'capacity': prof.cache_capacity_mb(ratio),
                           'cache': prof.dram_cache_gb, 'ratio': ratio})
        return passing

    @staticmethod
    def _cells_pass(host_state, prof, cells, hot, spec_obj, request, ratio):
        """The per-cell check of a memory_mode host with NUMA cells."""
        capacities, used, new, problem = hostinfo.cell_view(
            host_state, prof, cells, hot, spec_obj, request, ratio)
        passes, reason, cell = decide.cell_cache_passes(capacities, used,
                                                        new)
        if passes:
            return True
        if reason == decide.REJECT_CELLS:
            hostinfo.warn_once(
                (host_state.host, host_state.nodename, problem),
                "PmemCacheFilter rejects host %(host)s (node %(node)s): "
                "%(problem)s. Fix its aggregate metadata.",
                {'host': host_state.host, 'node': host_state.nodename,
                 'problem': problem})
        elif reason == decide.REJECT_UNREADABLE:
            LOG.debug("%(host_state)s fails pmem cache check: the "
                      "flavors of its instances could not be read",
                      {'host_state': host_state})
        elif reason == decide.REJECT_NUMA_FIT:
            LOG.debug("%(host_state)s fails pmem cache check: Nova's NUMA "
                      "fitting places the instance's cells on none of the "
                      "host's cells", {'host_state': host_state})
        else:
            LOG.debug("%(host_state)s fails pmem cache check: hot RAM "
                      "%(used).0f MB + %(new).0f MB requested on NUMA cell "
                      "%(cell)d exceeds the cell's DRAM-cache bound of "
                      "%(capacity).0f MB (cache_overcommit_ratio "
                      "%(ratio)s)",
                      {'host_state': host_state, 'used': used[cell],
                       'new': new[cell], 'cell': cell,
                       'capacity': capacities[cell], 'ratio': ratio})
        return False


def all_filters():
    """Return the filter classes of nova-pmem-filters.

    For ``[filter_scheduler] available_filters``, next to Nova's own
    ``nova.scheduler.filters.all_filters``.
    """
    return [PmemModeFilter, PmemCacheFilter]
