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
"""Glance and Neutron stand-ins: the few calls made to them.

There is no Glance and no Neutron in the integration deployment. With
``networks: none`` Nova still reads the image and its schema, and lists
ports; this server answers those on 127.0.0.1 and logs every request, so
that a call it does not know shows up in ``stubs.log``. Keystone is real
(deploy.sh); the stand-ins check no token.

    python -m tests.integration.stubs PORT LOGFILE
"""

import http.server
import json
import re
import sys

IMAGE_ID = '155d900f-4e14-4e4c-a73d-069cbf4541e6'


_IMAGE = {
    'id': IMAGE_ID, 'name': 'cirros', 'status': 'active',
    'visibility': 'public', 'protected': False, 'os_hidden': False,
    'checksum': None, 'os_hash_algo': None, 'os_hash_value': None,
    'owner': 'admin', 'size': 25165824, 'virtual_size': None,
    'min_ram': 0, 'min_disk': 0, 'disk_format': 'raw',
    'container_format': 'bare', 'tags': [],
    'created_at': '2026-01-01T00:00:00Z',
    'updated_at': '2026-01-01T00:00:00Z',
    'self': '/v2/images/' + IMAGE_ID, 'file': '/v2/images/%s/file' % IMAGE_ID,
    'schema': '/v2/schemas/image',
}

# Glance's base image fields: glanceclient builds its image model from the
# schema and drops what it does not list.
_BASE_FIELDS = (
    'id', 'name', 'status', 'visibility', 'protected', 'os_hidden',
    'checksum', 'os_hash_algo', 'os_hash_value', 'owner', 'size',
    'virtual_size', 'min_ram', 'min_disk', 'disk_format',
    'container_format', 'tags', 'created_at', 'updated_at', 'self', 'file',
    'schema', 'locations', 'direct_url')

_SCHEMA = {
    'name': 'image',
    'properties': {field: {} for field in _BASE_FIELDS},
    'additionalProperties': {'type': 'string'},
    'links': [{'href': '{self}', 'rel': 'self'},
              {'href': '{file}', 'rel': 'enclosure'},
              {'href': '{schema}', 'rel': 'describedby'}],
}

_NEUTRON_LIST = re.compile(r'^/(?:v2\.0/)?([a-z_-]+?)(?:\.json)?$')


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    log_file = None

    def log_message(self, fmt, *args):
        if self.log_file:
            self.log_file.write('%s\n' % (fmt % args))
            self.log_file.flush()

    def _reply(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        path = self.path.split('?', 1)[0].rstrip('/')
        if path == '/v2/schemas/image':
            return self._reply(200, _SCHEMA)
        if path.startswith('/v2/images/'):
            if path.split('/')[3] == IMAGE_ID:
                return self._reply(200, _IMAGE)
            return self._reply(404, {'message': 'no such image'})
        if path == '/v2/images':
            return self._reply(200, {'images': [_IMAGE]})
        match = _NEUTRON_LIST.match(path)
        if match:
            resource = match.group(1).replace('-', '_')
            return self._reply(200, {resource: []})
        return self._reply(404, {'message': 'stub: unknown %s' % path})

    def do_DELETE(self):
        self.send_response(204)
        self.send_header('Content-Length', '0')
        self.end_headers()


def main(argv):
    port = int(argv[1])
    Handler.log_file = open(argv[2], 'a')
    server = http.server.ThreadingHTTPServer(('127.0.0.1', port), Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == '__main__':
    main(sys.argv)
