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
"""The two kinds of failure of ``nova-pmem-discover`` and their exit codes.

Every error carries a one-line message; the command prints it on stderr and
exits with the class's ``exit_code``.
"""

# The tools' one convention (nova_pmem_filters.cli.application,
# doc/source/cli.rst). What the user gave us is wrong: options, --from
# directory, --plan, output path.
EXIT_USAGE = 2
# Could not run: a tool is missing, fails, hangs or prints what we cannot
# read.
EXIT_TOOL = 3


class DiscoveryError(Exception):
    """A tool failed or printed something we cannot read (exit 3)."""

    exit_code = EXIT_TOOL

    def __init__(self, message):
        # One line, whatever the tool printed.
        super().__init__(' '.join(str(message).split()))


class UsageError(DiscoveryError):
    """Bad options, input directory or output path (exit 2)."""

    exit_code = EXIT_USAGE


class ToolNotFound(DiscoveryError):
    """A tool is not installed (exit 3, unless the caller can do without)."""

    def __init__(self, message, tool):
        super().__init__(message)
        self.tool = tool
