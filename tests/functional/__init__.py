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
"""Nova's functional test package is imported before any test module.

Importing it monkey-patches the process for eventlet, and that must come
before urllib3, oslo.context and oslo.db's thread-locals are imported: a
test module that imports them first (requests, for one) leaves real
thread-locals that the services' greenthreads share. On Nova 31.x
(OpenStack 2025.1) a live migration then fails in the compute ("Can't
upgrade a READER transaction to a WRITER mid-transaction": the API's
database transaction seen from the compute's greenthread).
"""

import nova.tests.functional  # noqa: F401
