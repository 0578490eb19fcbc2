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
"""The examples of doc/source/discovery.rst, run on etc/examples/discover.

Every ``$ nova-pmem-discover --from etc/examples/discover/...`` line of the
page runs from the root of the source tree; what follows it in the literal
block is what it must print (stdout, then the one line of stderr), so the
page cannot drift from the tool.
"""

import io
import os
import shlex

import testtools

from nova_pmem_filters.discover import cli
from tests.unit import paths

PAGE = paths.of('doc', 'source', 'discovery.rst')
PROMPT = '    $ nova-pmem-discover --from etc/examples/discover/'
EXAMPLES = paths.of('etc', 'examples', 'discover')


def documented():
    """[(argv, expected output)] of the page's example commands."""
    with open(PAGE, encoding='utf-8') as f:
        lines = f.read().splitlines()
    found = []
    for index, line in enumerate(lines):
        if not line.startswith(PROMPT):
            continue
        output = []
        for follow in lines[index + 1:]:
            if follow.startswith('    $ ') or (
                    follow and not follow.startswith('    ')):
                break
            output.append(follow[4:])
        while output and not output[-1]:
            output.pop()
        found.append((shlex.split(line[len('    $ '):])[1:],
                      '\n'.join(output)))
    return found


class TestDocumentedExamples(testtools.TestCase):

    def test_every_example_host_is_documented(self):
        hosts = {argv[1].split('/')[-1] for argv, _out in documented()}
        self.assertEqual(sorted(os.listdir(EXAMPLES)), sorted(hosts))

    def test_documented_output(self):
        examples = documented()
        self.assertGreaterEqual(len(examples), 4)
        for argv, want in examples:
            argv = [paths.of(a) if a.startswith('etc/') else a
                    for a in argv]
            out = io.StringIO()
            err = io.StringIO()
            cli.main(argv, stdout=out, stderr=err)
            # The page shows the host's relative path: so does the tool's
            # output, but for the absolute path the test gives it.
            got = (out.getvalue() + err.getvalue()).replace(
                paths.ROOT + os.sep, '').rstrip('\n')
            self.assertEqual(want, got, ' '.join(argv))
