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
"""The ``nova-pmem-observe`` command.

argparse, as ``nova-pmem-discover``: no subcommands, and no interactive
shell on a compute host. One window by default: the document is written
atomically (``--output``), exported (``--textfile``) and printed as a short
table or ``-f json``. With ``--interval`` it runs as a service: a window
every interval, a failed window logged and skipped, SIGTERM and SIGINT end
it cleanly between or inside a window (a window cut short is dropped).

Exit status (the convention of every tool, doc/source/cli.rst): 0
success; 2 bad options, profile or output path; 3 could not run: a window
could not be made or written. Every failure is one line on stderr.
"""

import argparse
import logging
import os
import signal
import sys
import threading
import time

from nova_pmem_filters.cli import application
from nova_pmem_filters.core.formats import discoveredhost
from nova_pmem_filters.core.formats import hostfile
from nova_pmem_filters.core.formats import observation
from nova_pmem_filters import fileutil
from nova_pmem_filters.observe import domains
from nova_pmem_filters.observe import host
from nova_pmem_filters.observe import prometheus

PROG = 'nova-pmem-observe'
HELP = '%s --help' % PROG
EXIT_FAILED = application.EXIT_CANNOT_RUN
EXIT_USAGE = application.EXIT_USAGE
# The columns of the table of instances (-f table, csv, value; -c).
COLUMNS = ('uuid', 'name', 'flavor', 'method', 'ws_mb', 'hot', 'cell')
LOG = logging.getLogger(__name__)
# The observer's modules log under this name; the command shows it on stderr.
LOG_ROOT = 'nova_pmem_filters.observe'


class ObserveError(Exception):
    """A failure with a one-line message and an exit status."""

    def __init__(self, message, exit_code=EXIT_FAILED):
        self.exit_code = exit_code
        super().__init__(' '.join(str(message).split()))


class UsageError(ObserveError):

    def __init__(self, message):
        super().__init__(message, EXIT_USAGE)


# A window or an interval: up to a day.
_seconds = application.seconds(86400)


def _listen(raw):
    """ADDR:PORT, [IPv6]:PORT or :PORT (every address)."""
    addr, sep, port = raw.rpartition(':')
    if not sep or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError('expected ADDR:PORT, got %r' % raw)
    addr = addr.strip('[]') or '0.0.0.0'
    return addr, int(port)


def build_parser():
    parser = application.HostToolParser(
        PROG, UsageError,
        description="Measure the working set of this compute host's Nova "
                    'instances (DAMON or page reference bits), where their '
                    'pages sit and the far-memory traffic, in one window; '
                    'write the observation JSON and Prometheus metrics.')
    parser.add_argument('--profile', metavar='FILE',
                        help='the host profile nova-pmem-discover wrote: '
                        'near memory of the host and its cells, and '
                        'whether ipmctl counts far-memory traffic')
    parser.add_argument('--window', type=_seconds, default=60.0,
                        metavar='SECONDS',
                        help='length of the measuring window (default 60)')
    parser.add_argument('--interval', type=_seconds, metavar='SECONDS',
                        help='run as a service: a window every SECONDS '
                        '(at least --window)')
    parser.add_argument('--method', choices=host.CHOICES, default=host.AUTO,
                        help='auto (default): DAMON where the kernel offers '
                        'it unused, else reference bits')
    parser.add_argument('--output', metavar='FILE_OR_DIR',
                        help='write the observation JSON atomically: to '
                        'FILE (replaced each window) or, for an existing '
                        'directory, to DIR/HOSTNAME-STARTED.json')
    parser.add_argument('--textfile', metavar='PATH',
                        help='write the metrics to this node_exporter '
                        'textfile (*.prom), atomically')
    parser.add_argument('--listen', type=_listen, metavar='ADDR:PORT',
                        help='serve the metrics on http://ADDR:PORT/metrics '
                        '(https with --tls-cert-file)')
    _add_tls_options(parser)
    parser.add_argument('--libvirt-dir', default=domains.DEFAULT_DIR,
                        metavar='DIR',
                        help="libvirt's status files of running domains "
                        '(default %s)' % domains.DEFAULT_DIR)
    parser.add_argument('--proc', default='/proc', help=argparse.SUPPRESS)
    parser.add_argument('--sysfs', default='/sys', help=argparse.SUPPRESS)
    parser.add_argument('--hostname', help='host name to report (default: '
                        "the profile's, else this host's)")
    application.add_format_options(
        parser, 'table', 'the table of instances (%s; -c names them), -f '
        'table followed by the host, far-memory, tiering and gap lines; a '
        'service prints nothing' % ', '.join(COLUMNS),
        'the observation document')
    parser.add_tool_options()
    return parser


# The TLS options, by the role prometheus.tls_context gives their file.
TLS_OPTIONS = {'cert': '--tls-cert-file', 'key': '--tls-key-file',
               'client_ca': '--tls-client-ca-file'}


def _add_tls_options(parser):
    group = parser.add_argument_group(
        'TLS of /metrics', 'Named after cert_file, key_file and '
        "client_ca_file of the web configuration of Prometheus's own "
        "exporters (node_exporter's --web.config.file, the exporter "
        "toolkit's tls_server_config), which the cert_file, key_file and "
        "ca_file of a scrape_config's tls_config answer.")
    group.add_argument('--tls-cert-file', metavar='FILE',
                       help='serve /metrics over HTTPS with this PEM '
                       'certificate (its chain may follow it); needs '
                       '--listen and --tls-key-file')
    group.add_argument('--tls-key-file', metavar='FILE',
                       help="the certificate's PEM private key, "
                       'unencrypted (a service cannot type a passphrase)')
    group.add_argument('--tls-client-ca-file', metavar='FILE',
                       help='require a client certificate signed by a CA '
                       'of this PEM file (client_auth_type '
                       'RequireAndVerifyClientCert); a client without one '
                       'is refused. Needs --tls-cert-file')


def _check_tls(args):
    """The TLS context of --listen, or None for HTTP: options, then files."""
    given = [TLS_OPTIONS[role] for role, value in (
        ('cert', args.tls_cert_file), ('key', args.tls_key_file),
        ('client_ca', args.tls_client_ca_file)) if value is not None]
    if not given:
        return None
    if args.listen is None:
        raise UsageError('%s needs --listen: TLS is for the /metrics '
                         'endpoint (a --textfile is read locally)'
                         % given[0])
    if args.tls_cert_file is None:
        if args.tls_client_ca_file is not None:
            raise UsageError('--tls-client-ca-file needs --tls-cert-file '
                             'and --tls-key-file: client certificates are '
                             'checked only over TLS')
        raise UsageError('--tls-key-file needs --tls-cert-file')
    if args.tls_key_file is None:
        raise UsageError('--tls-cert-file needs --tls-key-file')
    try:
        return prometheus.tls_context(args.tls_cert_file, args.tls_key_file,
                                      args.tls_client_ca_file)
    except prometheus.TLSError as exc:
        raise UsageError('%s %s: %s' % (TLS_OPTIONS[exc.role], exc.path,
                                        exc.why))


def _check(args):
    if args.columns and args.view not in application.COLUMN_FORMATS:
        raise UsageError(application.usage_error(
            '-c needs -f table, csv or value, not -f %s (which prints the '
            'whole observation document)' % args.view, HELP))
    for word in args.columns:
        if word not in COLUMNS:
            raise UsageError(application.unknown_column(word, COLUMNS, HELP))
    if args.interval is not None and args.interval < args.window:
        raise UsageError('--interval (%g) must be at least --window (%g)'
                         % (args.interval, args.window))
    if not os.path.isdir(args.libvirt_dir):
        raise UsageError('--libvirt-dir %s: not a directory'
                         % args.libvirt_dir)
    for option, path in (('--output', args.output),
                         ('--textfile', args.textfile)):
        if path is None or os.path.isdir(path) and option == '--output':
            continue
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent):
            raise UsageError('%s %s: no such directory %s'
                             % (option, path, parent))
    prof = None
    if args.profile:
        try:
            prof = discoveredhost.read(args.profile)
        except hostfile.ProfileError as exc:
            raise UsageError('--profile %s' % exc)
    return prof


def output_path(target, doc):
    """Where a document goes: ``target`` or a file named for it in it."""
    if not os.path.isdir(target):
        return target
    stamp = doc.started.replace('-', '').replace(':', '')
    return os.path.join(target, '%s-%s.json' % (doc.hostname, stamp))


def _write(args, doc, collector, reg):
    collector.update(doc)
    if args.output:
        path = output_path(args.output, doc)
        try:
            fileutil.write_atomic(path, observation.dumps(doc))
        except OSError as exc:
            raise ObserveError('--output %s: cannot write: %s'
                               % (path, exc.strerror or exc))
    if args.textfile:
        try:
            prometheus.write_textfile(args.textfile, reg)
        except OSError as exc:
            raise ObserveError('--textfile %s: cannot write: %s'
                               % (args.textfile, exc.strerror or exc))


def _fmt(value, digits=1):
    return '-' if value is None else '%.*f' % (digits, value)


def instance_rows(doc):
    """The rows of the table of instances: values, None where unknown."""
    return [(inst.uuid, inst.name, inst.flavor, inst.method,
             inst.working_set_mb, inst.hot_ratio, inst.cell)
            for inst in doc.instances]


def _cell_text(column, value):
    if column == 'ws_mb':
        return _fmt(value)
    if column == 'hot':
        return _fmt(value, 3)
    return '-' if value in (None, '') else str(value)


def _near_text(near_mb, doc, what):
    """``of near memory N MB``, or why the near memory is not known."""
    if near_mb is not None:
        return 'of near memory %s MB' % _fmt(near_mb)
    if doc.profile is None:
        why = 'no --profile'
    elif what == 'cell':
        why = 'the profile gives no size per cell'
    else:
        why = 'the profile gives none'
    return '(near memory unknown: %s)' % why


def table_lines(doc, columns=COLUMNS):
    """A short table of the instances, the host and the gaps.

    :param columns: the columns of the instances shown (-c).
    """
    keep = [COLUMNS.index(c) for c in columns]
    rows = [tuple(columns)]
    for row in instance_rows(doc):
        rows.append(tuple(_cell_text(COLUMNS[i], row[i]) for i in keep))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ['  '.join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
             for r in rows]
    h = doc.host
    lines.append('host %s: working set %s MB %s, window %gs' % (
        doc.hostname, _fmt(h.working_set_mb),
        _near_text(h.near_memory_mb, doc, 'host'), doc.window_s))
    for cell in h.cells:
        lines.append('cell %s: working set %s MB %s'
                     % (cell.id, _fmt(cell.working_set_mb),
                        _near_text(cell.near_memory_mb, doc, 'cell')))
    far = doc.far_memory.to_dict()
    shown = ['%s %s' % (k, _fmt(v)) for k, v in sorted(far.items())
             if v is not None]
    if shown:
        lines.append('far memory: ' + ', '.join(shown))
    lines.extend(_tiering_lines(doc))
    for inst in doc.instances:
        if inst.gap:
            lines.append('gap: instance %s: %s' % (inst.uuid, inst.gap))
    lines.extend('gap: %s' % gap for gap in doc.gaps)
    return lines


def _tiering_lines(doc):
    """The kernel's tiering, its hot instances on far nodes, its lags."""
    kernel = doc.tiering
    if kernel is None:
        return []
    lines = ['kernel tiering: %s (far nodes: %s%s)' % (
        kernel.state, ', '.join(str(n) for n in kernel.far_nodes)
        or 'none, nothing to tier',
        '; ' + ', '.join(kernel.problems) if kernel.problems else '')]
    lines.extend('kernel tiering: %s' % line
                 for _code, line in kernel.lagging())
    for inst in doc.instances:
        if inst.hot_on_far_mb:
            lines.append('instance %s: at least %s MB of its working set on '
                         'far nodes' % (inst.uuid, _fmt(inst.hot_on_far_mb)))
    return lines


def _observe(args, prof, sleep=time.sleep, **kwargs):
    paths = host.default_paths(proc=args.proc, sysfs=args.sysfs,
                               libvirt=args.libvirt_dir)
    return host.observe(args.window, method=args.method, prof=prof,
                        hostname=args.hostname, paths=paths, sleep=sleep,
                        **kwargs)


def _service(args, prof, collector, reg, stop, monotonic=time.monotonic,
             **kwargs):
    """Windows until ``stop`` is set; a failed window is logged, skipped."""
    # A window waits on ``stop``, so SIGTERM ends it at once.
    kwargs.pop('sleep', None)
    windows = 0
    while not stop.is_set():
        begin = monotonic()
        try:
            doc = _observe(args, prof, sleep=stop.wait, **kwargs)
            if stop.is_set():
                LOG.info('stopping: the window cut short is dropped')
                break
            _write(args, doc, collector, reg)
            windows += 1
            LOG.info('window %d: %d instances, %d gaps', windows,
                     len(doc.instances), len(doc.gaps))
        except Exception as exc:
            LOG.error('window failed: %s: %s', type(exc).__name__,
                      ' '.join(str(exc).split())[:300])
        stop.wait(max(0.0, args.interval - (monotonic() - begin)))
    return 0


def _run(args, stdout, stop=None, **kwargs):
    prof = _check(args)
    collector = prometheus.DocumentCollector()
    reg = prometheus.registry(collector)
    tls = _check_tls(args)
    server = None
    if args.listen:
        try:
            server = prometheus.serve(args.listen[0], args.listen[1], reg,
                                      tls=tls)
        except OSError as exc:
            raise UsageError('--listen %s:%d: %s' % (
                args.listen[0], args.listen[1], exc.strerror or exc))
        LOG.info('serving metrics on %s://%s:%d/metrics%s',
                 'http' if tls is None else 'https', args.listen[0],
                 server.server_address[1],
                 ', client certificates signed by %s required'
                 % args.tls_client_ca_file if args.tls_client_ca_file
                 else '')
    try:
        if args.interval is not None:
            stop = stop or threading.Event()
            _install_signals(stop)
            return _service(args, prof, collector, reg, stop, **kwargs)
        doc = _observe(args, prof, **kwargs)
        _write(args, doc, collector, reg)
        stdout.write(_view(doc, args))
        return 0
    finally:
        if server is not None:
            server.shutdown()
            server.server_close()


def _view(doc, args):
    """The text of one window in the format of -f, with the -c columns."""
    columns = args.columns or COLUMNS
    keep = [COLUMNS.index(c) for c in columns]
    rows = [[row[i] for i in keep] for row in instance_rows(doc)]
    if args.view == 'json':
        return observation.dumps(doc)
    if args.view == 'yaml':
        return observation.dumps_yaml(doc)
    if args.view == 'csv':
        return application.csv_text(columns, rows)
    if args.view == 'value':
        return application.value_text(rows)
    return '\n'.join(table_lines(doc, columns)) + '\n'


def _install_signals(stop):
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda _signum, _frame: stop.set())


def main(argv=None, stdout=None, stderr=None, **kwargs):
    """Run the command; ``kwargs`` go to ``host.observe`` (tests)."""
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    argv = sys.argv[1:] if argv is None else list(argv)
    debug = '--debug' in argv
    handler = logging.StreamHandler(stderr)
    handler.setFormatter(logging.Formatter(
        '%(asctime)s ' + PROG + ' %(levelname)s %(message)s'))
    logger = logging.getLogger(LOG_ROOT)
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if debug else logging.INFO)
    try:
        return application.run(
            PROG, stderr, debug,
            lambda: _run(build_parser().parse_args(argv), stdout, **kwargs),
            ((ObserveError, None),
             (observation.ObservationError, EXIT_FAILED)), EXIT_FAILED)
    finally:
        logger.removeHandler(handler)


if __name__ == '__main__':
    sys.exit(main())
