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
"""The example hosts of etc/examples/discover are all on discovery.rst.

What each documented command prints is checked with every other example
of the docs by tests/unit/crosscut/test_doc_examples.py.
"""

import os
import shlex

import testtools

from tests.unit.crosscut import test_doc_examples
from tests.unit import paths

PAGE = os.path.join('doc', 'source', 'discovery.rst')
EXAMPLES = paths.of('etc', 'examples', 'discover')


class TestDocumentedExamples(testtools.TestCase):

    def test_every_example_host_is_documented(self):
        hosts = set()
        for command, _comment, _output in test_doc_examples.examples(PAGE):
            argv = shlex.split(command)
            if '--from' in argv:
                hosts.add(argv[argv.index('--from') + 1].split('/')[-1])
        self.assertEqual(sorted(os.listdir(EXAMPLES)), sorted(hosts))
