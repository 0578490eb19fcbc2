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
"""Nova's databases and cells for the integration deployment, in one process.

The same steps as ``nova-manage api_db sync``, ``cell_v2 map_cell0``,
``cell_v2 create_cell --name cell1`` and ``db sync``, through the command
classes of ``nova.cmd.manage``: importing Nova takes seconds on a small
machine, and four ``nova-manage`` runs would pay it four times.

    python -m tests.integration.dbsetup NOVA_CONF CELL0_DB_URL
"""

import sys

from nova.cmd import manage
from nova import config
from nova import objects


def main(argv):
    conf_file, cell0_url = argv[1:3]
    config.parse_args(['dbsetup', '--config-file', conf_file])
    objects.register_all()
    cells = manage.CellV2Commands()
    manage.ApiDbCommands().sync()
    if cells.map_cell0(database_connection=cell0_url) != 0:
        return 'map_cell0 failed'
    # 2: a cell with this transport URL and database exists (a rerun).
    if cells.create_cell(name='cell1') not in (0, 2):
        return 'create_cell failed'
    return manage.DbCommands().sync()


if __name__ == '__main__':
    sys.exit(main(sys.argv))
