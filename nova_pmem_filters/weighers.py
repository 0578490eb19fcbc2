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
"""Weighers for hosts with DRAM, Memory-Mode, App-Direct PMem and CXL
memory tiers.

PmemTierWeigher steers flavors by ``pmem:priority``: ``high`` to DRAM-backed
hosts (``dram``, ``app_direct``, ``cxl_devdax``), ``low`` to tiered hosts
(``memory_mode``, ``cxl_flat``, ``cxl_kmem``), so that DRAM stays free for
the flavors that need it; ``normal`` gets no preference. A negative
multiplier inverts the preference.

PmemCacheHeadroomWeigher prefers the tiered host with the largest share of
its near memory still free after the new instance; other hosts score 0. A
negative multiplier packs hot RAM onto the fullest cache instead. On a host
with NUMA cells, for a NUMA-bound flavor or next to NUMA-bound instances,
the share is the smallest of the cells the instance charges.

PmemNumaCellWeigher gives ``pmem:priority=high`` flavors the host whose NUMA
cells (the ones Nova would give the instance) are least loaded.

All use fixed bounds (0 and 1) for Nova's normalisation, so a score means the
same whichever hosts are left after filtering. They score with the core's
rules (:mod:`nova_pmem_filters.core.rules.decide`) and reuse what the filters
of the same request computed (:mod:`nova_pmem_filters.scheduler.request_memo`).
"""

import threading

from oslo_log import log as logging

from nova.scheduler import utils as scheduler_utils
from nova.scheduler import weights

from nova_pmem_filters import conf
from nova_pmem_filters.core.rules import decide
from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters.scheduler import numa
from nova_pmem_filters.scheduler import request_memo

LOG = logging.getLogger(__name__)
CONF = conf.CONF


class _PmemWeigher(weights.BaseHostWeigher):
    minval = 0.0
    maxval = 1.0
    # The [pmem] option of the multiplier and its aggregate override key.
    multiplier_option = None
    multiplier_key = None

    def __init__(self):
        super(_PmemWeigher, self).__init__()
        # {host's aggregate objects: multiplier} of the pass this thread
        # (or greenthread) is weighing. Nova asks for the multiplier of
        # every host right after weigh_objects(), and hosts with the same
        # aggregates have the same one: it is read once per set of
        # aggregates, not once per host. Per thread, because
        # nova-scheduler weighs several requests at once with one weigher
        # object.
        self._pass = threading.local()

    def weight_multiplier(self, host_state):
        # As Nova's own weighers (nova/scheduler/weights/ram.py): the
        # host's aggregates override the option, the smallest value wins.
        known = getattr(self._pass, 'multipliers', None)
        key = None
        if known is not None:
            try:
                # Aggregate objects hash by identity, and the key keeps
                # them alive: within a pass an aggregate object does not
                # change.
                key = tuple(host_state.aggregates or ())
                return known[key]
            except KeyError:
                pass
            except Exception:
                key = None
        value = scheduler_utils.get_weight_multiplier(
            host_state, self.multiplier_key,
            getattr(CONF.pmem, self.multiplier_option))
        if key is not None:
            known[key] = value
        return value

    def weigh_objects(self, weighed_obj_list, weight_properties):
        # A new pass: the aggregates or the option may have changed since
        # the last.
        self._pass.multipliers = {}
        hosts = [obj.obj for obj in weighed_obj_list]
        try:
            memo = request_memo.of(weight_properties)
            request, _error = request_memo.request(weight_properties, memo)
            if request is None:
                return [0.0] * len(hosts)
            return self._weigh_hosts(hosts, weight_properties, memo,
                                     request)
        except Exception as exc:
            LOG.warning("%(cls)s gives no preference: unexpected error "
                        "%(error)r",
                        {'cls': self.__class__.__name__, 'error': exc})
            return [0.0] * len(hosts)

    def _weigh_object(self, host_state, weight_properties):
        return self.weigh_objects(
            [weights.WeighedHost(host_state, 0.0)], weight_properties)[0]


class PmemTierWeigher(_PmemWeigher):
    """Prefer the memory tier that matches the flavor's pmem:priority."""

    multiplier_option = 'tier_weight_multiplier'
    multiplier_key = profile.TIER_WEIGHT_MULTIPLIER_KEY

    def _weigh_hosts(self, hosts, spec_obj, memo, request):
        if request.priority == extra_specs.PRIORITY_NORMAL:
            return [0.0] * len(hosts)
        # Hosts of the same aggregates share one profile object: score each
        # profile once.
        scores = {}
        result = []
        for prof in request_memo.profiles(spec_obj, hosts, memo):
            score = scores.get(id(prof))
            if score is None:
                score = scores[id(prof)] = decide.tier_score(request, prof)
            result.append(score)
        return result


class PmemCacheHeadroomWeigher(_PmemWeigher):
    """Prefer tiered hosts with the most free near memory."""

    multiplier_option = 'cache_headroom_weight_multiplier'
    multiplier_key = profile.HEADROOM_WEIGHT_MULTIPLIER_KEY

    def _weigh_hosts(self, hosts, spec_obj, memo, request):
        groups = request_memo.host_groups(spec_obj, hosts, memo)
        bound = numa.requested_topology(spec_obj) is not None
        memory_mb = spec_obj.flavor.memory_mb
        ratio = CONF.pmem.cache_overcommit_ratio
        for group in request_memo.groups(memo):
            group.score = decide.headroom_rule(group.prof, ratio, request,
                                               memory_mb)
            group.fixed = group.score(None)
        inputs_ = request_memo.hot_ram(hosts, groups, spec_obj, request,
                                       memo, reuse=True)
        if bound:
            return [group.score(*inputs, fit=numa.fit_of(
                host_state, spec_obj, memo.fits)) if inputs else group.fixed
                for host_state, group, inputs in zip(hosts, groups, inputs_)]
        return [group.score(*inputs) if inputs else group.fixed
                for group, inputs in zip(groups, inputs_)]


class PmemNumaCellWeigher(_PmemWeigher):
    """Give pmem:priority=high flavors the least loaded NUMA cells."""

    multiplier_option = 'numa_cell_weight_multiplier'
    multiplier_key = profile.NUMA_CELL_WEIGHT_MULTIPLIER_KEY

    def _weigh_hosts(self, hosts, spec_obj, memo, request):
        if request.priority != extra_specs.PRIORITY_HIGH:
            return [0.0] * len(hosts)
        scores = []
        for host_state in hosts:
            cells = numa.host_cells(host_state)
            if cells is None:
                scores.append(0.0)
                continue
            sizes, used, new = numa.cell_memory_view(
                host_state, cells, spec_obj, memo.fits)
            scores.append(0.0 if new is None
                          else decide.cell_load_score(sizes, used, new))
        return scores


def all_weighers():
    """Return the weigher classes of nova-pmem-filters.

    For ``[filter_scheduler] weight_classes``, next to Nova's own
    ``nova.scheduler.weights.all_weighers``. The names are
    :data:`nova_pmem_filters.core.rules.classes.WEIGHERS`.
    """
    return [PmemTierWeigher, PmemCacheHeadroomWeigher, PmemNumaCellWeigher]
