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
"""``/metrics`` over TLS, with client certificates, scraped by Prometheus.

The observer runs as the service does (``nova-pmem-observe --interval``
on a fake host) in a process of its own: the stestr worker is
monkey-patched by Nova's test modules, and eventlet hangs socketserver's
serve_forever in a thread (tests/unit/httpstub.py). Certificates are made
in the test (``tlsfiles``). Every wait is for a condition, under a
generous deadline: the tests pass with other processes on every CPU.
"""

import http.client
import io
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.parse
import urllib.request

import fixtures
import testtools
import yaml

from nova_pmem_filters.core.formats import observation
from nova_pmem_filters.observe import cli as observe_cli
from nova_pmem_filters.observe import prometheus
from tests.unit.observe import fakehost
from tests.unit.observe import test_prometheus
from tests.unit.observe import tlsfiles
from tests.unit import paths

MB = 1024 * 1024
# Deadlines, not expected times: a window takes a second, a Prometheus
# start and first scrape a few; on a loaded machine many times that.
DEADLINE = 180.0
POLL = 0.05
# The command as its console script runs it (under ``python -m`` its
# logger would be ``__main__``, and the log lines the tests read missing).
OBSERVER = 'import sys\nfrom nova_pmem_filters.observe import cli\n' \
           'sys.exit(cli.main())\n'
SERVING = re.compile(r'serving metrics on (https?)://127\.0\.0\.1:(\d+)/')
# What a refused client meets: an alert or a reset during the handshake
# or the first read, or (plain HTTP) an answer that is not HTTP.
REFUSED = (OSError, http.client.HTTPException)


def wait_for(test, what, condition, child=None, timeout=DEADLINE):
    """``condition()``'s first true value, polled until the deadline.

    Fails at once when ``child`` (a Popen) has exited.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if child is not None and child.poll() is not None:
            test.fail('%s: the process exited (%s) first' % (
                what, child.returncode))
        if time.monotonic() > deadline:
            test.fail('%s: not within %gs' % (what, timeout))
        time.sleep(POLL)


def stop(child):
    """SIGTERM, then SIGKILL when it does not end within 30 s."""
    if child.poll() is None:
        child.terminate()
        try:
            child.wait(30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(30)


def keep_log(test, name, path):
    """The log at ``path`` in the test's details.

    Read once its process has stopped (cleanups run last first) and before
    its directory goes.
    """
    test.addCleanup(lambda: test.addDetail(
        name, testtools.content.text_content(_read(path))))


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return ''


class Observer(object):
    """``nova-pmem-observe`` as a service on a fake one-guest host.

    ``port``: the port it bound (``--listen 127.0.0.1:0``); ``doc``: its
    first window, as ``--output`` wrote it (the metrics are updated
    before the file is written).
    """

    def __init__(self, test, root, *tls_argv):
        libvirt, proc, sysfs = fakehost.one_guest_host(
            os.path.join(root, 'host'))
        self.log = os.path.join(root, 'observer.log')
        output = os.path.join(root, 'last.json')
        with open(self.log, 'w') as log:
            self.child = subprocess.Popen(
                [sys.executable, '-c', OBSERVER, '--libvirt-dir', libvirt,
                 '--proc', proc, '--sysfs', sysfs, '--hostname',
                 'compute-01', '--method', 'reference_bits', '--window', '1',
                 '--interval', '3600', '--output', output, '--listen',
                 '127.0.0.1:0'] + list(tls_argv),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=log, cwd=paths.ROOT)
        keep_log(test, 'observer-log', self.log)
        test.addCleanup(stop, self.child)
        found = wait_for(test, 'the observer serving /metrics',
                         lambda: SERVING.search(_read(self.log)), self.child)
        self.scheme, self.port = found.group(1), int(found.group(2))
        wait_for(test, 'the first window', lambda: os.path.exists(output),
                 self.child)
        self.doc = observation.read(output)

    def url(self, scheme=None):
        return '%s://127.0.0.1:%d/metrics' % (scheme or self.scheme,
                                              self.port)

    def refusals(self):
        """OpenSSL's reason for each TLS connection the observer refused."""
        return re.findall(r'refused a TLS connection from 127\.0\.0\.1: '
                          r'\[SSL: (\w+)\]', _read(self.log))


def client_context(files, cert=None, key=None):
    """A client that checks the server against ``files.ca``, by IP."""
    ctx = ssl.create_default_context(cafile=files.ca)
    if cert is not None:
        ctx.load_cert_chain(cert, key)
    return ctx


def scrape(url, ctx=None):
    with urllib.request.urlopen(url, context=ctx, timeout=60) as response:
        return response.status, response.read().decode('utf-8')


class TLSFilesTestCase(testtools.TestCase):
    """Bad TLS options and files: one line naming the file, exit 2."""

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path
        self.files = tlsfiles.Files(self.root)
        self.libvirt = os.path.join(self.root, 'qemu')
        os.makedirs(self.libvirt)

    def observe(self, *argv):
        out = io.StringIO()
        err = io.StringIO()
        status = observe_cli.main(
            ['--libvirt-dir', self.libvirt, '--window', '1',
             '--listen', '127.0.0.1:0'] + list(argv),
            stdout=out, stderr=err, sleep=lambda _s: None)
        return status, out.getvalue(), err.getvalue()

    def assertUsage(self, argv, *parts):
        status, out, err = self.observe(*argv)
        self.assertEqual(2, status, err)
        self.assertEqual('', out)
        self.assertEqual(1, len(err.splitlines()), err)
        self.assertTrue(err.startswith('nova-pmem-observe: error: '), err)
        for part in parts:
            self.assertIn(part, err)

    def test_bad_files_are_named(self):
        f = self.files
        missing = os.path.join(self.root, 'missing.pem')
        unreadable = os.path.join(self.root, 'unreadable-dir')
        os.mkdir(unreadable)
        junk = os.path.join(self.root, 'junk.pem')
        with open(junk, 'w') as out:
            out.write('not a PEM file\n')
        for argv, parts in (
                (['--tls-cert-file', missing, '--tls-key-file',
                  f.server_key],
                 ['--tls-cert-file %s: cannot read: No such file' % missing]),
                (['--tls-cert-file', f.server, '--tls-key-file', unreadable],
                 ['--tls-key-file %s: cannot read: Is a directory'
                  % unreadable]),
                (['--tls-cert-file', f.server_key, '--tls-key-file',
                  f.server_key],
                 ['--tls-cert-file %s: no PEM certificate in it'
                  % f.server_key]),
                (['--tls-cert-file', f.server, '--tls-key-file', junk],
                 ['--tls-key-file %s: no PEM private key in it' % junk]),
                (['--tls-cert-file', f.server, '--tls-key-file',
                  f.wrong_key],
                 ['--tls-key-file %s: does not match the certificate %s'
                  % (f.wrong_key, f.server)]),
                (['--tls-cert-file', f.server, '--tls-key-file',
                  f.encrypted_key()],
                 ['server-key-encrypted.pem: encrypted with a passphrase']),
                (['--tls-cert-file', f.server, '--tls-key-file',
                  f.server_key, '--tls-client-ca-file', junk],
                 ['--tls-client-ca-file %s: no PEM CA certificate in it'
                  % junk]),
                (['--tls-cert-file', f.server, '--tls-key-file',
                  f.server_key, '--tls-client-ca-file', missing],
                 ['--tls-client-ca-file %s: cannot read' % missing])):
            self.assertUsage(argv, *parts)

    def test_options_that_need_others(self):
        f = self.files
        for argv, message in (
                (['--tls-cert-file', f.server],
                 '--tls-cert-file needs --tls-key-file'),
                (['--tls-key-file', f.server_key],
                 '--tls-key-file needs --tls-cert-file'),
                (['--tls-client-ca-file', f.ca],
                 '--tls-client-ca-file needs --tls-cert-file and '
                 '--tls-key-file: client certificates are checked only '
                 'over TLS')):
            self.assertUsage(argv, message)
        # No --listen: nothing to secure.
        out = io.StringIO()
        err = io.StringIO()
        status = observe_cli.main(
            ['--libvirt-dir', self.libvirt, '--tls-cert-file', f.server,
             '--tls-key-file', f.server_key], stdout=out, stderr=err)
        self.assertEqual(2, status)
        self.assertEqual('nova-pmem-observe: error: --tls-cert-file needs '
                         '--listen: TLS is for the /metrics endpoint (a '
                         '--textfile is read locally)\n', err.getvalue())

    def test_good_files_make_a_context(self):
        f = self.files
        ctx = prometheus.tls_context(f.server, f.server_key)
        self.assertEqual(ssl.CERT_NONE, ctx.verify_mode)
        ctx = prometheus.tls_context(f.server, f.server_key, f.ca)
        self.assertEqual(ssl.CERT_REQUIRED, ctx.verify_mode)
        self.assertEqual(ssl.TLSVersion.TLSv1_2, ctx.minimum_version)


class ExporterTLSTestCase(testtools.TestCase):
    """The observer's /metrics over TLS, against real TLS clients."""

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path
        self.files = tlsfiles.Files(self.root)

    def check_metrics(self, observer, text):
        found = test_prometheus.samples(text)
        self.assertEqual(observer.doc.host.working_set_mb * MB,
                         found[('nova_pmem_host_working_set_bytes', ())])
        self.assertEqual(512 * MB, observer.doc.host.working_set_mb * MB)

    def test_client_certificates_required(self):
        f = self.files
        observer = Observer(self, self.root, '--tls-cert-file', f.server,
                            '--tls-key-file', f.server_key,
                            '--tls-client-ca-file', f.ca)
        self.assertEqual('https', observer.scheme)
        good = client_context(f, f.client, f.client_key)
        status, text = scrape(observer.url(), good)
        self.assertEqual(200, status)
        self.check_metrics(observer, text)
        for what, reason, call in (
                ('no client certificate', 'PEER_DID_NOT_RETURN_A_CERTIFICATE',
                 lambda: scrape(observer.url(), client_context(f))),
                ("the other CA's client", 'CERTIFICATE_VERIFY_FAILED',
                 lambda: scrape(observer.url(), client_context(
                     f, f.stranger, f.stranger_key))),
                ('plain HTTP', 'HTTP_REQUEST',
                 lambda: scrape(observer.url('http')))):
            before = len(observer.refusals())
            self.assertRaises(REFUSED, call)
            # Refused by the exporter's check, which logs why.
            refused = wait_for(
                self, 'the refusal of %s logged' % what,
                lambda: observer.refusals()[before:], observer.child)
            self.assertEqual([reason], refused, what)
        # A client that does not trust the CA refuses the server.
        error = self.assertRaises(urllib.error.URLError, scrape,
                                  observer.url(),
                                  ssl.create_default_context())
        self.assertIsInstance(error.reason, ssl.SSLCertVerificationError)
        # Still serving the right client.
        self.assertEqual(200, scrape(observer.url(), good)[0])

    def test_a_stalled_client_stops_no_scrape(self):
        # prometheus_client's start_http_server(certfile=...) handshakes
        # in its accepting thread: one connection that sends nothing
        # stopped every later scrape.
        f = self.files
        observer = Observer(self, self.root, '--tls-cert-file', f.server,
                            '--tls-key-file', f.server_key)
        idle = socket.create_connection(('127.0.0.1', observer.port))
        self.addCleanup(idle.close)
        status, text = scrape(observer.url(), client_context(f))
        self.assertEqual(200, status)
        self.check_metrics(observer, text)
        # Served while the stalled one still waited (the observer gives it
        # prometheus.CLIENT_TIMEOUT): not after giving up on it.
        idle.setblocking(False)
        self.assertRaises(BlockingIOError, idle.recv, 1)

    def test_tls_without_client_certificates(self):
        f = self.files
        observer = Observer(self, self.root, '--tls-cert-file', f.server,
                            '--tls-key-file', f.server_key)
        status, text = scrape(observer.url(), client_context(f))
        self.assertEqual(200, status)
        self.check_metrics(observer, text)
        self.assertRaises(REFUSED, scrape, observer.url('http'))
        wait_for(self, 'the refusal of plain HTTP logged',
                 lambda: observer.refusals() == ['HTTP_REQUEST'],
                 observer.child)


def free_port():
    """A port free now on 127.0.0.1, the kernel's pick.

    It may be taken before it is used: the caller retries on "address
    already in use".
    """
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def documented_scrape_config():
    """The scrape_config of doc/source/observe.rst (its one yaml block)."""
    with open(paths.of('doc', 'source', 'observe.rst')) as f:
        blocks = re.findall(r'\.\. code-block:: yaml\n\n((?:   .*\n|\n)+)',
                            f.read())
    (block,) = blocks
    (scrape,) = yaml.safe_load(textwrap.dedent(block))['scrape_configs']
    return scrape


class Prometheus(object):
    """A real Prometheus scraping ``target`` over TLS with a client cert."""

    ATTEMPTS = 5

    def __init__(self, test, binary, root, files, target):
        self.test = test
        config = os.path.join(root, 'prometheus.yml')
        scrape = documented_scrape_config()
        # The documented scrape, with the test's files and target, every
        # second.
        scrape['tls_config'] = {'ca_file': files.ca,
                                'cert_file': files.client,
                                'key_file': files.client_key}
        scrape['static_configs'] = [{'targets': [target]}]
        with open(config, 'w') as f:
            yaml.safe_dump({
                'global': {'scrape_interval': '1s', 'scrape_timeout': '1s'},
                'scrape_configs': [scrape]}, f)
        for attempt in range(self.ATTEMPTS):
            self.port = free_port()
            self.log = os.path.join(root, 'prometheus-%d.log' % attempt)
            with open(self.log, 'w') as log:
                self.child = subprocess.Popen(
                    [binary, '--config.file', config,
                     '--storage.tsdb.path', os.path.join(
                         root, 'tsdb-%d' % attempt),
                     '--web.listen-address', '127.0.0.1:%d' % self.port],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                    cwd=root)
            keep_log(test, 'prometheus-log-%d' % attempt, self.log)
            test.addCleanup(stop, self.child)
            ready = wait_for(test, 'Prometheus ready or exited',
                             lambda: self.child.poll() is not None
                             or self._ready())
            if self.child.poll() is None and ready:
                return
            if 'address already in use' not in _read(self.log):
                test.fail('Prometheus exited (%s): %s' % (
                    self.child.returncode, _read(self.log)[-2000:]))
        test.fail('no free port for Prometheus in %d attempts'
                  % self.ATTEMPTS)

    def _ready(self):
        try:
            with urllib.request.urlopen(
                    'http://127.0.0.1:%d/-/ready' % self.port,
                    timeout=10) as response:
                return response.status == 200
        except REFUSED:
            return False

    def api(self, path, **params):
        url = 'http://127.0.0.1:%d/api/v1/%s' % (self.port, path)
        if params:
            url += '?' + urllib.parse.urlencode(params)
        with urllib.request.urlopen(url, timeout=30) as response:
            body = json.load(response)
        self.test.assertEqual('success', body['status'], body)
        return body['data']

    def target(self):
        """The target of the job once up, else None.

        None too before service discovery has given it.
        """
        active = self.api('targets', state='active')['activeTargets']
        if not active:
            return None
        self.test.assertEqual(1, len(active), active)
        self.last = active[0]
        return active[0] if active[0]['health'] == 'up' else None

    def value(self, query):
        """[the value of ``query``'s one sample]; None before it has one."""
        result = self.api('query', query=query)['result']
        if not result:
            return None
        self.test.assertEqual(1, len(result), result)
        return [float(result[0]['value'][1])]


class PrometheusScrapeTestCase(testtools.TestCase):
    """Prometheus (Debian's package) scrapes the observer over mutual TLS."""

    def test_prometheus_scrapes_over_tls(self):
        binary = shutil.which('prometheus')
        if binary is None:
            self.skipTest('prometheus is not installed (Debian package '
                          'prometheus)')
        root = self.useFixture(fixtures.TempDir()).path
        files = tlsfiles.Files(root)
        observer = Observer(self, root, '--tls-cert-file', files.server,
                            '--tls-key-file', files.server_key,
                            '--tls-client-ca-file', files.ca)
        target = '127.0.0.1:%d' % observer.port
        prom = Prometheus(self, binary, root, files, target)
        try:
            up = wait_for(self, 'the observer up in Prometheus',
                          prom.target, prom.child)
        except self.failureException:
            self.addDetail('last-target', testtools.content.json_content(
                getattr(prom, 'last', None)))
            raise
        self.assertEqual('https://%s/metrics' % target, up['scrapeUrl'])
        doc = observer.doc
        selector = '{job="nova-pmem-observe",instance="%s"}' % target
        for query, expected in (
                ('nova_pmem_host_working_set_bytes' + selector,
                 doc.host.working_set_mb * MB),
                ('nova_pmem_instance_hot_ratio' + selector[:-1]
                 + ',uuid="%s"}' % fakehost.UUID_A,
                 doc.instances[0].hot_ratio),
                ('nova_pmem_observation_start_time_seconds' + selector,
                 doc.started_time)):
            value = wait_for(self, 'a sample of %s' % query,
                             lambda: prom.value(query), prom.child)
            self.assertEqual([expected], value, query)
        # The scrape went through the exporter's client-certificate check:
        # a refused scrape would have left the target down.
        self.assertEqual([], observer.refusals())


def exec_start(path):
    """The argv of the last ``ExecStart=`` of a unit file or drop-in."""
    with open(path) as f:
        text = f.read().replace('\\\n', ' ')
    lines = [line for line in text.splitlines()
             if line.startswith('ExecStart=')]
    return lines[-1].split('=', 1)[1].split()


class DocumentedScrapeTestCase(testtools.TestCase):

    def test_the_documented_scrape_is_over_mutual_tls(self):
        # Prometheus runs it (PrometheusScrapeTestCase) with the test's
        # files in place of the documented ones.
        scrape = documented_scrape_config()
        self.assertEqual('https', scrape['scheme'])
        self.assertEqual({'ca_file', 'cert_file', 'key_file'},
                         set(scrape['tls_config']))
        self.assertEqual({'job_name', 'scheme', 'tls_config',
                          'static_configs'}, set(scrape))


class SystemdTestCase(testtools.TestCase):
    """The unit and its TLS drop-in: the same service, options that parse."""

    def test_the_drop_in_adds_tls_to_the_unit(self):
        unit = paths.of('etc', 'nova-pmem-filters', 'observe',
                        'nova-pmem-observe.service')
        plain = exec_start(unit)
        tls = exec_start(os.path.join(unit + '.d', 'tls.conf'))
        self.assertEqual(plain[0], tls[0])
        parser = observe_cli.build_parser()
        plain_args = parser.parse_args(plain[1:])
        tls_args = parser.parse_args(tls[1:])
        self.assertEqual(('127.0.0.1', 9810), plain_args.listen)
        self.assertEqual(('0.0.0.0', 9810), tls_args.listen)
        self.assertIsNone(plain_args.tls_cert_file)
        self.assertTrue(tls_args.tls_cert_file and tls_args.tls_key_file
                        and tls_args.tls_client_ca_file)
        # Nothing else differs: the drop-in replaces the command whole.
        for name in vars(plain_args):
            if name == 'listen' or name.startswith('tls_'):
                continue
            self.assertEqual(getattr(plain_args, name),
                             getattr(tls_args, name), name)
