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
"""Repair of the aggregates a re-forked nova-scheduler worker holds stale.

Nova's HostManager reads the aggregates in the parent nova-scheduler
process and hears of changes by fanout; a worker re-forked after a crash
starts from the parent's start-up copy. :func:`check_aggregate_view`
compares, once per process, what the hosts of a request carry with the
database and repairs the difference (``[pmem] check_aggregate_view``).
"""

import os
import time

from oslo_log import log as logging

from nova import objects

from nova_pmem_filters import conf

LOG = logging.getLogger(__name__)
CONF = conf.CONF

# The process whose aggregate view has been checked (see
# check_aggregate_view): a worker forked or re-forked after the check is a
# new process and checks again.
_VIEW_CHECKED_PID = None
# After a repair, until Nova's fanout has reached this worker's HostManager:
# (monotonic deadline, {host: [database aggregates]}).
_VIEW_REPAIR = None
VIEW_REPAIR_WINDOW_S = 10


def _aggregate_view(aggregates):
    """What a host's aggregates say, comparable between two copies."""
    return frozenset(
        (agg.id, key, value)
        for agg in aggregates or ()
        for key, value in (agg.metadata or {}).items())


def _describe_aggregates(aggregates):
    return '[%s]' % ', '.join(
        '%s %s' % (agg.id, dict(agg.metadata or {}))
        for agg in sorted(aggregates or (), key=lambda agg: agg.id))


def _use_database_view(by_host, host_states):
    """Give hosts whose aggregates differ the database's; describe them."""
    stale = []
    for host_state in host_states:
        aggs = by_host.get(host_state.host, [])
        if _aggregate_view(host_state.aggregates) != _aggregate_view(aggs):
            stale.append('%s held %s, database %s' % (
                host_state.host, _describe_aggregates(host_state.aggregates),
                _describe_aggregates(aggs)))
            host_state.aggregates = list(aggs)
    return stale


def _compare_with_database(context, host_states, pid):
    """Read the aggregates; repair and announce.

    :returns: (the repair for later requests or None, the stale hosts).
    """
    from nova.scheduler.client import query

    fresh = objects.AggregateList.get_all(context.elevated())
    by_host = {}
    for agg in fresh:
        for host in agg.hosts or ():
            by_host.setdefault(host, []).append(agg)
    held = {agg.id: agg for host_state in host_states
            for agg in host_state.aggregates or ()}
    stale = _use_database_view(by_host, host_states)
    if not stale:
        return None, []
    LOG.error("This nova-scheduler worker (pid %(pid)d) held aggregates "
              "that differ from the database (a worker started after a "
              "crash gets the parent process's start-up copy): %(hosts)s. "
              "Using the database's aggregates, and asking all scheduler "
              "workers to update theirs.",
              {'pid': pid, 'hosts': '; '.join(sorted(stale))})
    client = query.SchedulerQueryClient()
    client.update_aggregates(context, fresh)
    fresh_ids = {agg.id for agg in fresh}
    for agg_id, agg in held.items():
        if agg_id not in fresh_ids:
            client.delete_aggregate(context, agg)
    return ((time.monotonic() + VIEW_REPAIR_WINDOW_S, by_host),
            [line.split(' ', 1)[0] for line in stale])


def check_aggregate_view(spec_obj, host_states):
    """Repair aggregates the scheduler holds stale; once per process.

    Nova's HostManager reads the aggregates in the parent nova-scheduler
    process and hears of changes by fanout; a worker re-forked after a crash
    starts from the parent's start-up copy. Here, at the first request a
    process filters, the aggregates are read from the database and compared
    with what each host of the request carries. Where they differ, the hosts
    get the database's aggregates, and Nova's own ``update_aggregates`` /
    ``delete_aggregate`` fanout brings every worker's HostManager up to
    date. A request that starts during the read does its own; requests in
    the ``VIEW_REPAIR_WINDOW_S`` seconds after a repair, while the fanout is
    on its way, get the database's aggregates too. Never raises.

    :returns: the names of the hosts whose aggregates were replaced.
    """
    global _VIEW_CHECKED_PID, _VIEW_REPAIR
    if not CONF.pmem.check_aggregate_view:
        return []
    pid = os.getpid()
    try:
        if _VIEW_CHECKED_PID != pid:
            context = getattr(spec_obj, '_context', None)
            if context is None:
                return []
            # No lock: a request that starts while another one reads does
            # its own read and repairs its own hosts. The process is marked
            # checked only once the repair is in place for later requests.
            repair = None
            try:
                repair, stale = _compare_with_database(
                    context, host_states, pid)
                return stale
            finally:
                if _VIEW_CHECKED_PID != pid:
                    _VIEW_REPAIR = repair
                    _VIEW_CHECKED_PID = pid
        repair = _VIEW_REPAIR
        if repair is None:
            return []
        deadline, by_host = repair
        if time.monotonic() > deadline:
            _VIEW_REPAIR = None
            return []
        stale = _use_database_view(by_host, host_states)
        if stale:
            LOG.debug("Aggregates from the database until Nova's fanout "
                      "arrives: %s", '; '.join(stale))
        return [line.split(' ', 1)[0] for line in stale]
    except Exception as exc:
        LOG.warning("Could not compare the scheduler's aggregates with the "
                    "database (pid %(pid)d): %(error)r; keeping them.",
                    {'pid': pid, 'error': exc})
        return []
