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
"""nova-api's WSGI application, for gunicorn.

Nova parses ``sys.argv`` with its own config parser when the application is
built; under gunicorn that is gunicorn's command line, which Nova rejects.
The configuration comes from ``OS_NOVA_CONFIG_DIR`` instead.
"""

import sys

sys.argv = [sys.argv[0]]

from nova.wsgi import osapi_compute  # noqa: E402

application = osapi_compute.application
