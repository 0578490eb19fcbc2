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
"""The ``nova-pmem-planner`` command-line application (cliff)."""

import sys

from cliff import app
from cliff import commandmanager

import planner
from planner import errors


# Errors in what the user gave us: one line on stderr, exit status 2.
USAGE_ERRORS = (errors.PlannerError,)


class PlannerApp(app.App):
    """Capacity planning for DRAM, Memory-Mode and App-Direct PMem nodes."""

    def __init__(self):
        super().__init__(
            description=__doc__,
            version=planner.version_string(),
            command_manager=commandmanager.CommandManager(
                'nova_pmem_planner.cli'),
            deferred_help=True)
        self._last_error = None

    def clean_up(self, cmd, result, err):
        self._last_error = err

    def run_subcommand(self, argv):
        result = super().run_subcommand(argv)
        if isinstance(self._last_error, USAGE_ERRORS):
            return 2
        return result


def main(argv=None):
    if argv is None:
        argv = sys.argv[1:]
    return PlannerApp().run(argv)


if __name__ == '__main__':
    sys.exit(main())
