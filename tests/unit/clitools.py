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
"""Running the planner's CLI in-process, for the tests."""

import io
import logging

import fixtures

from planner import cli


def run_cli(test, argv):
    """Run the planner in-process; returns (exit status, stdout, stderr).

    cliff adds a console handler to the root logger on every run and sets
    its level; both are put back when the test ends.
    """
    root = logging.getLogger()
    test.addCleanup(setattr, root, 'handlers', list(root.handlers))
    test.addCleanup(root.setLevel, root.level)
    out = io.StringIO()
    err = io.StringIO()
    with fixtures.MonkeyPatch('sys.stdout', out), \
            fixtures.MonkeyPatch('sys.stderr', err):
        status = cli.main(list(argv))
    return status, out.getvalue(), err.getvalue()
