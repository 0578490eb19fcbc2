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
"""A local HTTP server for tests, in a thread of the test process.

It waits in ``accept()`` rather than socketserver's ``serve_forever``:
Nova's test modules, loaded by the same stestr worker, monkey-patch the
process with eventlet, and ``serve_forever`` then blocks the one OS thread
in the ``selectors`` module (the test hangs). ``accept()`` yields under
eventlet and blocks only its own thread without it.
"""

import http.server
import json
import socket
import threading

import fixtures


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, *args):
        pass

    def _serve(self):
        length = int(self.headers.get('Content-Length') or 0)
        body = self.rfile.read(length) if length else b''
        with self.server.lock:
            self.server.requests.append((self.command, self.path,
                                         dict(self.headers)))
        status, answer, *extra = self.server.app(
            self.command, self.path, dict(self.headers), body)
        data = json.dumps(answer).encode() if answer is not None else b''
        self.send_response(status)
        for name, value in (extra[0] if extra else {}).items():
            self.send_header(name, value)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = _serve


class AcceptLoop(object):
    """serve() and stop() for a socketserver server, without selectors."""

    stopping = False

    def serve(self):
        """Accept connections until stop(), handing each to the server."""
        while True:
            try:
                request, address = self.socket.accept()
            except OSError:
                return
            if self.stopping:
                request.close()
                return
            self.process_request(request, address)

    def stop(self):
        self.stopping = True
        # Wake the accept() with a connection of our own.
        try:
            socket.create_connection(self.server_address, timeout=5).close()
        except OSError:
            pass
        self.server_close()


class _Server(AcceptLoop, http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, app):
        super().__init__(('127.0.0.1', 0), _Handler)
        self.app = app
        self.lock = threading.Lock()
        self.requests = []


class StubServer(fixtures.Fixture):
    """Serve ``app(method, path, headers, body) -> (status, json)``.

    ``app`` may return ``(status, json, headers)`` to send headers too.
    """

    def __init__(self, app):
        super().__init__()
        self.app = app

    def _setUp(self):
        self.server = _Server(self.app)
        thread = threading.Thread(target=self.server.serve, daemon=True)
        thread.start()
        self.addCleanup(thread.join, 10)
        self.addCleanup(self.server.stop)
        self.url = 'http://127.0.0.1:%d' % self.server.server_address[1]

    @property
    def requests(self):
        with self.server.lock:
            return list(self.server.requests)


def closed_port():
    """A local port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]
