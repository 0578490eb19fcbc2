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
"""The observer's working sets, as ``{instance uuid: MB}``.

``nova-pmem-observe`` exports each instance's measured working set as
``nova_pmem_instance_working_set_bytes{uuid=...}`` (no sample where the
window had a gap). The strategy asks Prometheus for them in one instant
query, :data:`QUERY`, through Watcher's datasource
(:mod:`~nova_pmem_filters.watcher.datasource`), and :func:`megabytes`
turns the answer's series into ``{uuid: MB}``: an instance without a
sample is absent, so the caller knows it was not measured; it is never
guessed. Where two series carry one uuid (an instance seen by two
observers while it migrates), the larger counts.

:func:`working_sets` is the deprecated way, Prometheus's HTTP API read
here with the strategy's own ``prometheus_*`` options. Its failures
raise :class:`PrometheusError` with the URL and the reason: Prometheus
unreachable or slow, an answer that is not Prometheus's JSON, a query it
refuses.

Either way, a series without a ``uuid`` label raises
:class:`PrometheusError`. This module imports nothing from Watcher or
Nova.
"""

import json
import math
import ssl
import urllib.error
import urllib.parse
import urllib.request

from nova_pmem_filters.core.formats import metrics

MB = 1024 * 1024
# The larger of two series of one instance: measured by two observers
# while it migrates, the one that charges more.
QUERY = 'max by (%s) (%s)' % (metrics.UUID_LABEL,
                              metrics.name(metrics.INSTANCE_WORKING_SET))
TIMEOUT = 10.0
PATH = '/api/v1/query'


class PrometheusError(Exception):
    """Prometheus could not give the working sets; says why."""

    def __init__(self, url, reason):
        super().__init__('Prometheus at %s: %s' % (url, reason))
        self.url = url
        self.reason = reason


def tls_context(ca_file=None, cert_file=None, key_file=None, insecure=False):
    """A client TLS context, or None to use the defaults.

    :param ca_file: PEM CA certificates that sign Prometheus's certificate
        (the system's when None).
    :param cert_file: a client certificate (with ``key_file``) for a
        Prometheus that requires one.
    :param insecure: do not verify Prometheus's certificate.
    """
    if not (ca_file or cert_file or insecure):
        return None
    ctx = ssl.create_default_context(cafile=ca_file)
    if insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if cert_file:
        ctx.load_cert_chain(cert_file, key_file)
    return ctx


def query_url(base_url, query=QUERY):
    """The instant query URL of ``query`` at Prometheus's ``base_url``."""
    return '%s%s?%s' % (base_url.rstrip('/'), PATH,
                        urllib.parse.urlencode({'query': query}))


# The most bytes of one answer of Prometheus that are read: an instant
# query of the working sets of every instance of a cloud is far smaller,
# and the decision engine's memory stays bounded whatever answers.
ANSWER_LIMIT = 64 * 1024 * 1024


def _read(answer):
    body = answer.read(ANSWER_LIMIT + 1)
    if len(body) > ANSWER_LIMIT:
        _raise('answered more than the %d bytes an answer may hold'
               % ANSWER_LIMIT)
    return body


def _fetch(url, timeout, context):
    try:
        with urllib.request.urlopen(url, timeout=timeout,
                                    context=context) as answer:
            return _read(answer)
    except urllib.error.HTTPError as exc:
        body = exc.read(ANSWER_LIMIT)
        try:
            error = json.loads(body.decode('utf-8')).get('error')
        except (ValueError, UnicodeDecodeError, AttributeError):
            error = None
        return _raise('HTTP %d%s' % (exc.code, ': %s' % error if error
                                     else ''))
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, 'reason', None) or exc
        return _raise('cannot be reached (%s)' % reason)


def _raise(reason):
    raise PrometheusError(None, reason)


def _vector(body):
    """The samples of an instant query's JSON answer."""
    try:
        doc = json.loads(body.decode('utf-8'))
    except (ValueError, UnicodeDecodeError):
        _raise('the answer is not JSON')
    if not isinstance(doc, dict) or doc.get('status') != 'success':
        _raise('the query failed: %s' % (
            doc.get('error') if isinstance(doc, dict) else doc))
    data = doc.get('data') or {}
    if data.get('resultType') != 'vector':
        _raise('expected an instant vector, got %r'
               % (data.get('resultType'),))
    return data.get('result') or []


def megabytes(series):
    """{uuid: MB} of an instant query's series.

    NaN and infinities are no measurement; of two series of one uuid, the
    larger counts.

    :param series: ``(labels, value)`` pairs: the labels of a series as a
        dict and its sample's value in bytes (a number or Prometheus's
        text of one).
    :raises PrometheusError: a series without a ``uuid`` label or without
        a value (its URL None: the caller knows where it asked).
    """
    found = {}
    for labels, value in series:
        uuid = (labels or {}).get(metrics.UUID_LABEL)
        if not uuid:
            _raise('a series has no %s label: %s (the query must keep '
                   'the observer\'s %s label)'
                   % (metrics.UUID_LABEL, labels, metrics.UUID_LABEL))
        try:
            value = float(value)
        except (TypeError, ValueError):
            _raise('a sample of %s has no value' % uuid)
        if not math.isfinite(value) or value < 0:
            continue
        mb = value / MB
        found[uuid] = max(mb, found.get(uuid, mb))
    return found


def _samples(result):
    """The (labels, value) pairs of an instant vector's JSON samples."""
    for sample in result:
        try:
            value = sample['value'][1]
        except (KeyError, IndexError, TypeError):
            value = None
        yield sample.get('metric'), value


def working_sets(base_url, query=QUERY, timeout=TIMEOUT, context=None):
    """``{instance uuid: measured working set MB}`` from Prometheus.

    Deprecated with the options that give its arguments: the strategy reads
    Prometheus through Watcher's datasource.

    :param base_url: Prometheus's URL, e.g. ``https://prometheus:9090``.
    :param query: the PromQL instant query; its series carry ``uuid`` and
        are in bytes.
    :param timeout: seconds to wait for the answer.
    :param context: an ``ssl.SSLContext`` for HTTPS (:func:`tls_context`).
    :raises PrometheusError: naming the URL and what went wrong.
    """
    if not base_url:
        raise PrometheusError(base_url, 'no URL is configured')
    url = query_url(base_url, query)
    try:
        answer = _fetch(url, timeout, context)
        return megabytes(_samples(_vector(answer)))
    except PrometheusError as exc:
        raise PrometheusError(base_url, exc.reason) from None
