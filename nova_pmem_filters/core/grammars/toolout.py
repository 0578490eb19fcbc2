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
"""A tool's output as the grammars read it: the command and what it printed.

Discovery runs the tools or reads them from a recorded directory, the
observer runs ipmctl; both hand the grammars (:mod:`.ipmctl`,
:mod:`.ndctl`) these records.
"""

import dataclasses

# The tools, by the names of their executables.
IPMCTL = 'ipmctl'
NDCTL = 'ndctl'
CXL = 'cxl'
DAXCTL = 'daxctl'
LSCPU = 'lscpu'


@dataclasses.dataclass(frozen=True)
class Command:
    """One tool invocation and the files that stand for it in --from DIR."""

    key: str
    argv: tuple
    # File names in --from DIR, tried in order; the suffix says the format.
    files: tuple

    def display(self):
        return ' '.join(self.argv)


@dataclasses.dataclass(frozen=True)
class Output:
    """What one command printed."""

    command: Command
    text: str
    returncode: int
    # 'xml', 'text' or 'json'.
    fmt: str
    source: str
