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
"""Every command-line tool's output is the one recorded, byte for byte.

The cases and their records are those of tools/golden.py (tests/golden/
data): the planner's commands on each built-in scenario and the shipped
examples, the optimiser's fleets, the simulator's placements and
nova-pmem-discover on every recorded host. One test a case, so that the
runner spreads them over its workers.
"""

import importlib.util
import os

import testtools

from tests.unit import paths

_SPEC = importlib.util.spec_from_file_location(
    'golden', paths.of('tools', 'golden.py'))
golden = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(golden)

DATA = paths.of('tests', 'golden', 'data')


class TestGolden(testtools.TestCase):
    """Each case against its record."""

    def check(self, case):
        with open(golden.path_of(DATA, case), 'rb') as f:
            expected = f.read()
        actual = golden.run(case)
        if actual != expected:
            self.fail('%s changed:\n%s%s' % (
                case.command(), golden.diff(expected, actual, case),
                golden.rerecord()))

    def test_every_record_is_of_a_case(self):
        names = sorted(os.path.basename(golden.path_of(DATA, case))
                       for case in golden.cases())
        self.assertEqual(names, sorted(os.listdir(DATA)))


def _test(case):
    def test(self):
        self.check(case)
    test.__name__ = 'test_' + case.name.replace('-', '_')
    test.__doc__ = case.command()
    return test


for _case in golden.cases():
    _method = _test(_case)
    setattr(TestGolden, _method.__name__, _method)
del _case, _method
