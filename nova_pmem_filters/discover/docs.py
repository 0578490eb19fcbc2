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
"""nova-pmem-discover for the documentation's CLI reference.

The command runs through :func:`nova_pmem_filters.discover.cli.main`
(argparse); cliff's Sphinx extension documents cliff applications, so this
module hands it the same parser. Only the docs build imports it: discovery
on a compute host needs no cliff.
"""

from cliff import app
from cliff import commandmanager

from nova_pmem_filters.discover import cli


class DiscoverApp(app.App):
    """nova-pmem-discover as cliff's Sphinx extension documents programs."""

    def __init__(self):
        super().__init__(
            description=cli.build_parser().description, version='',
            command_manager=commandmanager.CommandManager(
                'nova_pmem_discover.cli'))

    def build_option_parser(self, description, version,
                            argparse_kwargs=None):
        return cli.build_parser()
