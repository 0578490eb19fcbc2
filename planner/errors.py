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

Every error of the planner is a :class:`PlannerError` with a one-line
message: the CLI prints it and exits with status 2.
"""


class PlannerError(ValueError):
    """A request the planner cannot answer; the message is one line."""


class ScenarioError(PlannerError):
    """A scenario or catalog that cannot be used; the message is one line."""

    def __init__(self, source, path, rule):
        self.source = source
        self.path = path
        self.rule = rule
        # A key is shown as written unless it holds a line break or another
        # unprintable character (a YAML key may end in a newline).
        where = '.'.join(str(p) if str(p).isprintable() else repr(p)
                         for p in path) or '(top level)'
        message = '%s: %s: %s' % (source, where, rule)
        super().__init__(' '.join(message.splitlines()))


class TraceError(PlannerError):
    """A trace that cannot be replayed; names the line."""


class Infeasible(PlannerError):
    """A demand no fleet of the candidates can carry; names the reason."""


class OutputError(PlannerError):
    """An output path that cannot be written; the message is one line."""
