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
"""Traces: synthetic ones and CSV files."""

import os
import textwrap

import fixtures
import numpy as np
import testtools

from nova_pmem_filters.planner import errors
from nova_pmem_filters.planner import simulate
from tests.unit.planner.simulate import base


class TraceTestCase(testtools.TestCase):

    def test_synthetic_is_seeded_and_ordered(self):
        mix = {'redis': 50, 'mysql': 30}
        one = simulate.synthetic(mix, days=90, lifetime_days=10, seed=4)
        self.assertEqual(one, simulate.synthetic(mix, days=90,
                                                 lifetime_days=10, seed=4))
        self.assertNotEqual(one, simulate.synthetic(mix, days=90,
                                                    lifetime_days=10,
                                                    seed=5))
        times = [e.time for e in one]
        self.assertEqual(sorted(times), times)
        booted = set()
        for e in one:
            if e.kind == simulate.BOOT:
                booted.add(e.instance)
            else:
                self.assertIn(e.instance, booted)
        # Little's law: about 50 + 30 VMs alive once the fleet settles.
        alive = 0
        counts = []
        for e in one:
            alive += 1 if e.kind == simulate.BOOT else -1
            if e.time > 45 * simulate.SECONDS_PER_DAY:
                counts.append(alive)
        self.assertLess(abs(np.mean(counts) - 80) / 80, 0.2)

    def test_a_trace_too_long_is_refused_before_it_is_drawn(self):
        # Drawing it would allocate arrays of the events' size: the
        # refusal comes first.
        self.useFixture(fixtures.MockPatch(
            'numpy.random.default_rng',
            side_effect=AssertionError('a trace was drawn')))
        mix = {'redis': 600, 'mysql': 400}
        for days, lifetime in ((1e9, 30), (100000, 30), (10, 1e-9)):
            exc = self.assertRaises(errors.PlannerError, simulate.synthetic,
                                    mix, days=days, lifetime_days=lifetime)
            self.assertIn('more than the 1000000 events a simulation '
                          'replays', str(exc))
        # The bound is the expected count: a boot and a delete per VM.
        self.assertEqual(2 * 1000 * 10 / 2.0, simulate.expected_events(
            mix, days=10, lifetime_days=2))

    def test_samples_are_bounded_before_the_trace_is_drawn(self):
        self.useFixture(fixtures.MockPatch(
            'numpy.random.default_rng',
            side_effect=AssertionError('a trace was drawn')))
        exc = self.assertRaises(
            errors.PlannerError, simulate.check_synthetic, {'redis': 1},
            days=1e6, lifetime_days=1e6, sample_days=1)
        self.assertIn('more than the 100000 samples', str(exc))

    def test_a_csv_trace_too_long_is_refused_as_it_is_read(self):
        self.useFixture(fixtures.MockPatch(
            'nova_pmem_filters.planner.simulate.traces.MAX_EVENTS', 3))
        path = self._csv('''\
            time,event,instance,flavor
            0,boot,a,redis
            1,boot,b,redis
            2,delete,a,redis
            3,delete,b,redis
            ''')
        exc = self.assertRaises(errors.TraceError, simulate.read_csv, path,
                                simulate.flavors_of(base.BUILTIN))
        self.assertIn('line 5: more than the 3 events a simulation replays',
                      str(exc))

    def _csv(self, text):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'trace.csv')
        with open(path, 'w') as f:
            f.write(textwrap.dedent(text))
        return path

    def test_csv_round_trip(self):
        events = simulate.synthetic({'redis': 5}, days=20, seed=1)
        path = os.path.join(self.useFixture(fixtures.TempDir()).path, 't')
        with open(path, 'w') as f:
            simulate.write_csv(events, f)
        back = simulate.read_csv(path, simulate.flavors_of(base.BUILTIN))
        self.assertEqual([(e.kind, e.instance, e.flavor) for e in events],
                         [(e.kind, e.instance, e.flavor) for e in back])

    def test_malformed_lines_are_named(self):
        flavors = simulate.flavors_of(base.BUILTIN)
        for body, message in (
                ('0,boot,a,redis\n1,start,b,redis\n',
                 "line 3: event 'start' is not one of boot, delete"),
                ('0,boot,a,redis\nsoon,boot,b,redis\n',
                 "line 3: time 'soon' is not a number"),
                ('5,boot,a,redis\n1,boot,b,redis\n',
                 'line 3: time 1 is before the line above'),
                ('0,boot,a,nginx\n', "line 2: unknown flavor 'nginx'"),
                ('0,boot,a\n', 'line 2: expected 4 fields')):
            path = self._csv('time,event,instance,flavor\n' + body)
            exc = self.assertRaises(errors.TraceError, simulate.read_csv,
                                    path, flavors)
            self.assertIn(path, str(exc))
            self.assertIn(message, str(exc))

    def test_instances_boot_and_are_deleted_in_turn(self):
        flavors = simulate.flavors_of(base.BUILTIN)
        head = 'time,event,instance,flavor\n'
        for body, message in (
                ('0,boot,a,redis\n1,boot,a,redis\n',
                 'line 3: instance a boots again; it booted on line 2'),
                ('0,boot,a,redis\n1,delete,b,redis\n',
                 'line 3: instance b is deleted but is not running'),
                ('0,boot,a,redis\n1,delete,a,redis\n2,delete,a,redis\n',
                 'line 4: instance a is deleted but is not running')):
            path = self._csv(head + body)
            exc = self.assertRaises(errors.TraceError, simulate.read_csv,
                                    path, flavors)
            self.assertIn(path, str(exc))
            self.assertIn(message, str(exc))
        # Booting again after a delete is a new life of the instance.
        path = self._csv(head + '0,boot,a,redis\n1,delete,a,redis\n'
                         '2,boot,a,redis\n')
        self.assertEqual(3, len(simulate.read_csv(path, flavors)))

    def test_a_file_that_is_not_text_is_named_with_its_line(self):
        flavors = simulate.flavors_of(base.BUILTIN)
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'trace.bin')
        for data, message in (
                (b'time,event,instance,flavor\n0,boot,a,redis\n\xff\xfe\n',
                 'line 3: not UTF-8 text'),
                (b'\x89PNG\r\n\x1a\n\x00', 'line 1: not UTF-8 text'),
                (b'time,event,instance,flavor\n0,boot,a,re\x00dis\n',
                 'line 2: ')):
            with open(path, 'wb') as f:
                f.write(data)
            exc = self.assertRaises(errors.TraceError, simulate.read_csv,
                                    path, flavors)
            self.assertIn(path + ': ' + message, str(exc))
