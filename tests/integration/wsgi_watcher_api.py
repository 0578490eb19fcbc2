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
"""watcher-api's WSGI application, for gunicorn (see wsgi_nova_api).

Watcher parses ``sys.argv`` when the application is built; under gunicorn
that is gunicorn's command line. The configuration file comes from
``WATCHER_CONFIG_FILE`` instead. deploy.sh loads this module by its path
(gunicorn ``--pythonpath`` this directory), not as ``tests.integration``:
with the source tree on ``sys.path`` its stale ``*.egg-info`` would hide
the installed entry points of the goal and strategy, which the API loads to
check an audit's parameters.
"""

import os
import sys

sys.argv = [sys.argv[0], '--config-file', os.environ['WATCHER_CONFIG_FILE']]

from watcher.api import wsgi  # noqa: E402

application = wsgi.initialize_wsgi_app()
