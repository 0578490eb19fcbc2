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
"""The observation document as Prometheus metrics.

A custom collector over the latest document (an ``Observation`` of
``core.formats.observation``, read through its fields): each scrape, or each
node_exporter textfile, shows the last complete window, so an instance
that went away disappears with it instead of lingering as a stale labelled
Gauge. Units are base units (bytes, seconds) as Prometheus
names them; a ``null`` of the document is no sample, never a zero.

The far-memory numbers of the document are rates over its window, so they
are gauges named ``..._per_second``; counting them as ``_total`` counters
would need the raw counters, which the document does not keep.

The kernel's tiering (the document's ``tiering``): its state as a gauge (1
on, 0 off) labelled with the settings, the number of far nodes (so a rule
can tell a CXL host from a DRAM one), the vmstat tiering counters per
second host-wide and per node, and the ways it does not keep up
(:func:`~nova_pmem_filters.core.rules.tiering.lagging`, the core's rule, so
an alert needs no threshold of its own).

``/metrics`` is served over HTTP or, with a certificate and key, HTTPS,
optionally requiring client certificates signed by a given CA (what the
exporter toolkit of Prometheus's own exporters calls
``RequireAndVerifyClientCert``): :func:`tls_context` checks the files and
names the one that is wrong, :func:`serve` serves.
"""

import logging
import socket
import ssl
import threading
from wsgiref import simple_server

from nova_pmem_filters.core.formats import metrics as metric_names
from nova_pmem_filters.core.rules import tiering

import prometheus_client
from prometheus_client import core as prom_core
from prometheus_client import exposition

LOG = logging.getLogger(__name__)
MB = 1024 * 1024
# A client has this long to finish its TLS handshake, and then each read or
# write of its request this long: one that stalls cannot hold a thread
# forever (a Prometheus scrape times out after 10 s by default).
CLIENT_TIMEOUT = 30.0


def _gauge(name, documentation, labels=None):
    return prom_core.GaugeMetricFamily(metric_names.name(name), documentation,
                                       labels=labels)


def _window(doc):
    window = _gauge('observation_window_seconds',
                    'Length of the observation window.')
    window.add_metric([], doc.window_s)
    yield window
    started = _gauge('observation_start_time_seconds',
                     'Start of the observation window, Unix time.')
    started.add_metric([], doc.started_time)
    yield started
    gaps = _gauge('observation_gaps',
                  'Measurements that could not be made in the window: '
                  'host gaps plus instances without a working set.')
    gaps.add_metric([], len(doc.gaps)
                    + sum(1 for i in doc.instances if i.gap))
    yield gaps
    count = _gauge('observation_instances',
                   'Running Nova instances found on the host.')
    count.add_metric([], len(doc.instances))
    yield count


def _instances(doc):
    ws = _gauge(metric_names.INSTANCE_WORKING_SET,
                'Memory the instance touched in the window.',
                metric_names.INSTANCE_LABELS + ['method'])
    hot = _gauge('instance_hot_ratio',
                 'Working set over flavor RAM (what pmem:hot_ratio '
                 'declares).', metric_names.INSTANCE_LABELS + ['method'])
    declared = _gauge('instance_declared_hot_ratio',
                      "The flavor's pmem:hot_ratio, where Nova's libvirt "
                      'metadata carries it.', metric_names.INSTANCE_LABELS)
    ram = _gauge('instance_flavor_memory_bytes', "The flavor's RAM.",
                 metric_names.INSTANCE_LABELS)
    measured = _gauge('instance_measured',
                      '1 when the working set was measured, 0 on a gap.',
                      metric_names.INSTANCE_LABELS)
    numa = _gauge('instance_numa_memory_bytes',
                  "Resident memory of the instance's process per NUMA "
                  'node.', metric_names.INSTANCE_LABELS + ['node'])
    placed = [(field, _gauge(name, help_text, metric_names.INSTANCE_LABELS))
              for field, name, help_text in _RESIDENT]
    for inst in doc.instances:
        labels = [inst.uuid, inst.name or '', inst.flavor or '']
        method = inst.method or ''
        if inst.working_set_mb is not None:
            ws.add_metric(labels + [method], inst.working_set_mb * MB)
        if inst.hot_ratio is not None:
            hot.add_metric(labels + [method], inst.hot_ratio)
        if inst.declared_hot_ratio is not None:
            declared.add_metric(labels, inst.declared_hot_ratio)
        if inst.flavor_ram_mb is not None:
            ram.add_metric(labels, inst.flavor_ram_mb * MB)
        measured.add_metric(labels, 0 if inst.gap else 1)
        for node, mb in sorted(inst.numa_mb.items()):
            numa.add_metric(labels + [str(node)], mb * MB)
        for field, family in placed:
            if getattr(inst, field) is not None:
                family.add_metric(labels, getattr(inst, field) * MB)
    return [ws, hot, declared, ram, measured, numa] + [
        family for _field, family in placed]


# (field of observation.Instance, metric, help)
_RESIDENT = (
    ('near_resident_mb', 'instance_near_resident_bytes',
     "Resident memory of the instance's process on NUMA nodes with CPUs."),
    ('far_resident_mb', 'instance_far_resident_bytes',
     "Resident memory of the instance's process on NUMA nodes without "
     'CPUs (the far tier).'),
    ('hot_on_far_mb', 'instance_hot_on_far_bytes',
     'Working set the nodes with CPUs cannot hold: at least this much of '
     'it sits on the far nodes.'),
    ('bound_off_node_mb', 'instance_bound_off_node_bytes',
     "Memory the instance's process binds with MPOL_BIND (libvirt's strict "
     'numatune) resident on NUMA nodes outside its binding: moved there, '
     "as reclaim's demotion does on kernels before Linux 7.0."))


# (field of observation.Host, metric, unit, help)
_HOST = (
    ('working_set_mb', 'host_working_set_bytes', MB,
     'Sum of the measured working sets of the host.'),
    ('near_memory_mb', 'host_near_memory_bytes', MB,
     'Near memory of the host (DRAM cache or DRAM in front of the far '
     'tier) from its discovered profile.'))


def _scalars(section, table):
    """An unlabelled gauge per (field, metric, unit, help) of ``table``."""
    for field, name, unit, help_text in table:
        family = _gauge(name, help_text)
        value = getattr(section, field)
        if value is not None:
            family.add_metric([], value * unit)
        yield family


def _host(doc):
    host = doc.host
    yield from _scalars(host, _HOST)
    cell_ws = _gauge('cell_working_set_bytes',
                     'Working set of the instances whose pages sit mostly '
                     'on the cell.', ['cell'])
    cell_near = _gauge('cell_near_memory_bytes',
                       'Near memory of the cell from the host profile.',
                       ['cell'])
    for cell in host.cells:
        if cell.working_set_mb is not None:
            cell_ws.add_metric([str(cell.id)], cell.working_set_mb * MB)
        if cell.near_memory_mb is not None:
            cell_near.add_metric([str(cell.id)], cell.near_memory_mb * MB)
    yield cell_ws
    yield cell_near


# (field of observation.FarMemory, metric, unit, help)
_FAR_MEMORY = (
    ('media_read_mb_per_s', 'far_memory_media_read_bytes_per_second', MB,
     'PMem media reads over the window (ipmctl, Memory Mode).'),
    ('media_write_mb_per_s', 'far_memory_media_write_bytes_per_second', MB,
     'PMem media writes over the window (ipmctl, Memory Mode).'),
    ('promote_pages_per_s', 'tiering_promotions_per_second', 1,
     'Pages promoted to near memory over the window (/proc/vmstat).'),
    ('demote_pages_per_s', 'tiering_demotions_per_second', 1,
     'Pages demoted to far memory over the window (/proc/vmstat).'))


def _far_memory(doc):
    return _scalars(doc.far_memory, _FAR_MEMORY)


def _kernel_tiering(doc):
    kernel = doc.tiering
    state = _gauge('host_kernel_tiering',
                   '1 when the kernel promotes to and demotes from the far '
                   'nodes (pmem_kernel_tiering=on), else 0; labels: the '
                   'settings read and why it does not tier.',
                   ['kernel', 'numa_balancing', 'demotion_enabled',
                    'problems'])
    far = _gauge('host_far_nodes',
                 'NUMA nodes without CPUs that hold memory (CXL memory or '
                 'PMem as system RAM): the tier the kernel tiers to.')
    rates = _gauge('tiering_events_per_second',
                   'Tiering counters of /proc/vmstat per second over the '
                   'window (pages; numa_hint_faults: faults).', ['counter'])
    node_rates = _gauge('node_tiering_events_per_second',
                        "Tiering counters of the node's vmstat per second "
                        'over the window: promotions count on the node '
                        'promoted to, demotions on the node demoted from.',
                        ['node', 'counter'])
    lagging = _gauge('tiering_lagging',
                     '1 for each way the kernel\'s tiering did not keep up '
                     'in the window: promotion-lags (far fewer pages '
                     'promoted than candidates), direct-demotion '
                     '(allocations demoting for themselves).', ['code'])
    if kernel is not None:
        state.add_metric([kernel.kernel or '', _label(kernel.numa_balancing),
                          _label(kernel.demotion_enabled),
                          ','.join(kernel.problems)],
                         1 if kernel.state == tiering.ON else 0)
        far.add_metric([], len(kernel.far_nodes))
        for name, value in sorted((kernel.rates or {}).items()):
            rates.add_metric([name], value)
        for node, found in sorted(kernel.node_rates.items()):
            for name, value in sorted((found or {}).items()):
                node_rates.add_metric([str(node), name], value)
        for code, _line in kernel.lagging():
            lagging.add_metric([code], 1)
    return [state, far, rates, node_rates, lagging]


def _label(value):
    """A setting as a label value: '' for null, true/false as in JSON."""
    if value is None:
        return ''
    if isinstance(value, bool):
        return 'true' if value else 'false'
    return str(value)


def metrics(doc):
    """The metric families of one ``Observation``, in a fixed order."""
    yield from _window(doc)
    yield from _instances(doc)
    yield from _host(doc)
    yield from _far_memory(doc)
    yield from _kernel_tiering(doc)


class DocumentCollector(object):
    """The metrics of the latest document (none before the first)."""

    def __init__(self, doc=None):
        self._lock = threading.Lock()
        self._doc = doc

    def update(self, doc):
        with self._lock:
            self._doc = doc

    def collect(self):
        with self._lock:
            doc = self._doc
        if doc is None:
            return
        yield from metrics(doc)

    def describe(self):
        # Registering must not collect: there may be no document yet.
        return []


def registry(collector):
    """A registry of ``collector`` alone (no process or platform metrics)."""
    reg = prometheus_client.CollectorRegistry(auto_describe=False)
    reg.register(collector)
    return reg


def write_textfile(path, reg):
    """Write the node_exporter textfile ``path`` atomically.

    :raises OSError: when its directory cannot be written.
    """
    prometheus_client.write_to_textfile(path, reg)


class TLSError(ValueError):
    """A TLS file that cannot serve.

    ``role`` is ``cert``, ``key`` or ``client_ca`` and ``path`` the file,
    for the caller to name its option.
    """

    def __init__(self, role, path, why):
        self.role = role
        self.path = path
        self.why = why
        super().__init__('%s %s: %s' % (role, path, why))


class _Encrypted(Exception):
    """The key asks for a passphrase (OpenSSL would prompt on the tty)."""


def _no_passphrase():
    raise _Encrypted()


def _ssl_reason(exc):
    return exc.reason or ' '.join(str(exc).split())


def tls_context(cert_file, key_file, client_ca_file=None):
    """A server TLS context for ``/metrics``; checks each file in turn.

    :param cert_file: PEM certificate of the server (its chain may follow).
    :param key_file: its unencrypted PEM private key (a service has no one
        to type a passphrase).
    :param client_ca_file: PEM CA certificates; given, a client must
        present a certificate signed by one of them, else the handshake
        fails (it is not asked for otherwise).
    :raises TLSError: naming the file that cannot be read or used.
    """
    files = (('cert', cert_file), ('key', key_file),
             ('client_ca', client_ca_file))
    for role, path in files:
        if path is None:
            continue
        try:
            with open(path, 'rb'):
                pass
        except OSError as exc:
            raise TLSError(role, path, 'cannot read: %s'
                           % (exc.strerror or exc))
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(
            cafile=cert_file)
    except ssl.SSLError as exc:
        raise TLSError('cert', cert_file, 'no PEM certificate in it (%s)'
                       % _ssl_reason(exc))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(cert_file, key_file, password=_no_passphrase)
    except _Encrypted:
        raise TLSError('key', key_file, 'encrypted with a passphrase; the '
                       'service cannot type it: give the key unencrypted, '
                       'readable by root only')
    except ssl.SSLError as exc:
        if exc.reason == 'KEY_VALUES_MISMATCH':
            raise TLSError('key', key_file, 'does not match the '
                           'certificate %s' % cert_file)
        raise TLSError('key', key_file, 'no PEM private key in it (%s)'
                       % _ssl_reason(exc))
    if client_ca_file is not None:
        try:
            ctx.load_verify_locations(cafile=client_ca_file)
        except ssl.SSLError as exc:
            raise TLSError('client_ca', client_ca_file, 'no PEM CA '
                           'certificate in it (%s)' % _ssl_reason(exc))
        ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


class _Handler(simple_server.WSGIRequestHandler):
    """Logs no request (one a scrape), and gives up on a stalled client."""

    timeout = CLIENT_TIMEOUT

    def log_message(self, format, *args):
        pass


class _Server(exposition.ThreadingWSGIServer):
    """prometheus_client's threading WSGI server, TLS in the threads.

    ``start_http_server(certfile=...)`` wraps the listening socket, so the
    TLS handshake runs inside ``accept()`` in the one thread that accepts:
    a client that connects and sends nothing (a port scan, a stuck
    scraper) stops every later scrape. Here the accepting thread only
    accepts; each connection's handshake runs in its own thread with a
    deadline, and a refused one (no client certificate, another CA, plain
    HTTP) is logged and closed.
    """

    def __init__(self, addr, port, tls=None):
        self.tls = tls
        # IPv6 or IPv4, as the address says (:: or 0.0.0.0 for every one).
        family, _type, _proto, _name, sockaddr = socket.getaddrinfo(
            addr, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        self.address_family = family
        super().__init__(sockaddr, _Handler)

    def get_request(self):
        sock, client = self.socket.accept()
        if self.tls is None:
            return sock, client
        sock.settimeout(CLIENT_TIMEOUT)
        return self.tls.wrap_socket(sock, server_side=True,
                                    do_handshake_on_connect=False), client

    def finish_request(self, request, client_address):
        if self.tls is not None:
            try:
                request.do_handshake()
            except OSError as exc:
                # ssl.SSLError and a timeout alike: this client only.
                LOG.info('refused a TLS connection from %s: %s',
                         client_address[0], ' '.join(str(exc).split()))
                return
        super().finish_request(request, client_address)


def serve(addr, port, reg, tls=None):
    """Serve ``/metrics`` on ``addr:port`` in a daemon thread.

    :param tls: an ``ssl.SSLContext`` from :func:`tls_context` to serve
        HTTPS, or None for HTTP.
    :returns: the server; ``server.server_address[1]`` is the port bound
        (port 0 binds an ephemeral one), ``server.shutdown()`` stops it.
    :raises OSError: when ``addr:port`` cannot be bound.
    """
    server = _Server(addr, port, tls)
    server.set_app(prometheus_client.make_wsgi_app(reg))
    thread = threading.Thread(target=server.serve_forever,
                              name='nova-pmem-observe-metrics', daemon=True)
    thread.start()
    return server


def render(reg):
    """The exposition text of ``reg``."""
    return prometheus_client.generate_latest(reg).decode('utf-8')
