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
"""Keystone's WSGI application, for gunicorn (see wsgi_nova_api).

``keystone.wsgi.api`` builds the same application, but Keystone's
configuration parser reads ``sys.argv`` too, which under gunicorn is
gunicorn's command line. The configuration comes from
``OS_KEYSTONE_CONFIG_DIR`` (``keystone.conf`` in it).
"""

import sys

sys.argv = [sys.argv[0]]

from keystone.server import wsgi  # noqa: E402

application = wsgi.initialize_public_application()
