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
"""etc/examples/observations: what the observer writes, read by all."""

import json
import os

import fixtures
import testtools

from nova_pmem_filters.core.formats import observation
from tests.unit import clitools
from tests.unit.doctor import cases
from tests.unit.doctor import test_cli as doctor_cli
from tests.unit.observe import fakehost
from tests.unit.planner import example_observations as examples


class ExampleObservationsTestCase(testtools.TestCase):

    @fakehost.needs_nova_extra_specs
    def test_the_files_are_what_the_observer_writes(self):
        made = self.useFixture(fixtures.TempDir()).path
        examples.build(made)
        names = sorted(os.listdir(made))
        self.assertEqual(names, sorted(os.listdir(examples.DIRECTORY)),
                         'regenerate them: python -m %s' % examples.__name__)
        for name in names:
            with open(os.path.join(made, name), encoding='utf-8') as f:
                want = f.read()
            path = os.path.join(examples.DIRECTORY, name)
            with open(path, encoding='utf-8') as f:
                self.assertEqual(want, f.read(), 'regenerate %s: python -m '
                                 '%s' % (path, examples.__name__))
            # Every reader reads it back as written.
            self.assertEqual(want, observation.dumps(observation.read(path)))

    def test_hot_ratios_recommends_for_every_flavor(self):
        status, out, err = clitools.run_cli(self, (
            'hot-ratios', '--observations', examples.DIRECTORY,
            '--scenario', 'telco-cost-matched', '-f', 'json'))
        self.assertEqual((0, 'mysql: no recommendation: 2 instances, fewer '
                          'than 3 (--min-instances)\n'), (status, err))
        got = {r['flavor']: (r['instances'], r['windows'], r['declared'],
                             r['recommended'], r['under_declared'])
               for r in json.loads(out)}
        # The gap (a process that exited) is not an instance of redis;
        # mysql, seen in 2 instances, is below the default minimum of 3.
        self.assertEqual({'m1.web': (3, 2, None, 0.65, None),
                          'mysql': (2, 3, 0.25, None, None),
                          'redis': (4, 3, 0.25, 0.4, True)}, got)

    def test_the_doctor_reads_them(self):
        snap = cases.clean()
        for flavor in (cases.flavor('redis', 32, **{'pmem:hot_ratio': '0.25'}),
                       cases.flavor('mysql', 32, **{'pmem:hot_ratio': '0.25'}),
                       cases.flavor('m1.web', 8)):
            snap = cases.with_flavor(snap, flavor)
        cloud = self.useFixture(doctor_cli.StubCloud(snap))
        status, out, err = cloud.doctor('--observations', examples.DIRECTORY,
                                        '-f', 'json')
        # Warnings (1), not "could not run" (3); nothing on stderr.
        self.assertEqual((1, ''), (status, err))
        fixes = {r['object']: r['fix'] for r in json.loads(out)
                 if r['code'] == 'hot-ratio-under-declared'}
        # The planner's commands, for the flavors declared too low.
        _status, out, _err = clitools.run_cli(self, (
            'hot-ratios', '--observations', examples.DIRECTORY, '-f', 'json'))
        commands = {'flavor ' + r['flavor']: r['command']
                    for r in json.loads(out)}
        self.assertEqual({'flavor redis', 'flavor m1.web'}, set(fixes))
        for name, fix in fixes.items():
            self.assertEqual(commands[name], fix)
