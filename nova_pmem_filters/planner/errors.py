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
"""Errors in what the user asked the planner for.

Every error in what the user asked for is a :class:`PlannerError` with a
one-line message: the CLI prints it and exits with status 2. A library an
option needs that is not installed is a :class:`MissingLibrary`: the
planner could not run (exit 3).
"""

from nova_pmem_filters.core.formats import scenario_schema as sch


class PlannerError(ValueError):
    """A request the planner cannot answer; the message is one line."""


class ScenarioError(PlannerError, sch.ScenarioError):
    """A scenario or catalog that cannot be used; the message is one line.

    The file format's error (:class:`nova_pmem_filters.core.formats.
    scenario_schema.ScenarioError`: the file, the key path and the rule), as
    the planner's.
    """


class TraceError(PlannerError):
    """A trace that cannot be replayed; names the line."""


class Infeasible(PlannerError):
    """A demand no fleet of the candidates can carry; names the reason."""


class OutputError(PlannerError):
    """An output path that cannot be written; the message is one line."""


class MissingLibrary(Exception):
    """A library an option needs is not installed; names what to install.

    Not the user's error: the planner could not run (exit status 3).
    """
