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
"""The working sets through Watcher's own datasource layer.

The operator configures Prometheus once, in Watcher's sections, for every
strategy: ``[watcher_datasources] datasources`` names the datasources in
the order to try, ``[prometheus_client]`` (host, port, TLS, basic auth)
or ``[aetos_client]`` (Aetos, the Keystone-authenticated Prometheus
proxy, found in the catalog as ``metric-storage``) says how to reach it.
Of those datasources, the first that can answer PromQL is used:
``prometheus`` (Watcher 14, 2025.1, and later; deprecated since 16,
2026.1) or ``aetos`` (Watcher 16 and later). Gnocchi and Grafana cannot
answer the observer's metric and are passed over.

:func:`backend` picks it with Watcher's ``DataSourceManager`` (which
refuses ``prometheus`` and ``aetos`` together, and builds each helper
once); :func:`working_sets` sends the query with the helper's client and
Watcher's retries (``[watcher_datasources] query_max_retries`` and
``query_interval``). Every failure raises :class:`Unavailable`, one line
that names the datasource and what went wrong.
"""

from oslo_config import cfg
from watcher.decision_engine.datasources import manager

from nova_pmem_filters.watcher import workingsets

# Watcher's datasources that answer PromQL, by their names in
# [watcher_datasources] datasources.
PROMQL = ('prometheus', 'aetos')


class Unavailable(Exception):
    """No datasource could give the working sets; says why."""


def offered():
    """The PromQL datasources this Watcher has, in PROMQL's order."""
    return [name for name in PROMQL
            if name in manager.DataSourceManager.metric_map]


def configured(names):
    """The PromQL datasources among ``names``, in the operator's order."""
    return [name for name in names or () if name in offered()]


def backend(datasources_conf, osc=None):
    """``(name, helper)``: the first PromQL datasource configured.

    :param datasources_conf: an object with ``datasources`` (the strategy's
        own, or ``CONF.watcher_datasources``), as Watcher's
        ``DataSourceManager`` takes it.
    :raises Unavailable: none is configured, or Watcher could not build it
        (its ``[prometheus_client]`` or ``[aetos_client]`` is incomplete,
        or the server does not answer).
    """
    names = list(datasources_conf.datasources or ())
    usable = configured(names)
    if not usable:
        raise Unavailable(
            'none of the datasources configured (%s) answers PromQL: set '
            '[watcher_datasources] datasources to one of %s, this Watcher\'s'
            % (', '.join(names) or 'none', ', '.join(offered())))
    name = usable[0]
    try:
        found = manager.DataSourceManager(config=datasources_conf, osc=osc)
        return name, getattr(found, name)
    except Exception as exc:
        raise Unavailable('Watcher\'s %s datasource: %s'
                          % (name, _reason(exc)))


def working_sets(name, helper, query=workingsets.QUERY):
    """``{instance uuid: measured working set MB}`` from ``helper``.

    :param name: the datasource's name, for the messages.
    :param helper: a Watcher PromQL datasource (its ``prometheus`` client).
    :raises Unavailable: no answer after Watcher's retries (the last
        error is in the message; the decision engine's log has each), or
        an answer without the observer's ``uuid`` label.
    """
    errors = []

    def ask():
        try:
            return helper.prometheus.query(query)
        except Exception as exc:
            errors.append(exc)
            raise
    answer = helper.query_retry(ask)
    if answer is None:
        tries = cfg.CONF.watcher_datasources.query_max_retries
        raise Unavailable(
            'Watcher\'s %s datasource did not answer %r after %d tries '
            '([watcher_datasources] query_max_retries): %s'
            % (name, query, tries,
               _reason(errors[-1]) if errors else 'no answer'))
    try:
        return workingsets.megabytes(
            (sample.labels, sample.value) for sample in answer)
    except workingsets.PrometheusError as exc:
        raise Unavailable('Watcher\'s %s datasource: %s'
                          % (name, exc.reason))


def _reason(exc):
    return ' '.join(str(exc).split()) or type(exc).__name__
