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
"""Solves side by side: the same answers as one after another."""

import threading
import time
from unittest import mock

import testtools

from nova_pmem_filters.planner import optimize
from nova_pmem_filters.planner.optimize import clock
from nova_pmem_filters.planner.optimize import colgen
from nova_pmem_filters.planner.optimize import master as master_mod
from nova_pmem_filters.planner.optimize import pricing
from tests.unit.planner.optimize import base
from tests.unit.planner.optimize import test_nodebound


class EachTestCase(testtools.TestCase):

    def test_answers_in_the_order_asked(self):
        # The first call ends last: the answers keep the order asked.
        def call(item):
            time.sleep(0.05 if item == 0 else 0.0)
            return item * 10, threading.current_thread().name

        with mock.patch.object(clock, 'threads', return_value=2):
            out = clock.each(call, range(4))
        self.assertEqual([0, 10, 20, 30], [value for value, _name in out])
        self.assertTrue(all(name.startswith('planner-solve')
                            for _value, name in out))

    def test_one_thread_runs_in_the_caller(self):
        with mock.patch.object(clock, 'threads', return_value=1):
            out = clock.each(lambda _i: threading.current_thread(), [1, 2])
        self.assertEqual([threading.current_thread()] * 2, out)

    def test_what_the_limit_cuts_is_the_callers(self):
        # A call on another thread records into the caller's watch.
        with mock.patch.object(clock, 'threads', return_value=2):
            with clock.watch() as cut:
                clock.each(lambda item: clock.cut('solve %d' % item),
                           [1, 2, 3])
        self.assertEqual(['solve 1', 'solve 2', 'solve 3'], sorted(cut))

    def test_an_error_is_raised_here(self):
        def call(item):
            if item == 2:
                raise ValueError('item 2')
            return item

        with mock.patch.object(clock, 'threads', return_value=2):
            self.assertRaisesRegex(ValueError, 'item 2', clock.each, call,
                                   [1, 2, 3])

    def test_threads_are_the_cpus_within_the_cap(self):
        with mock.patch('os.sched_getaffinity', return_value=set(range(64)),
                        create=True):
            self.assertEqual(clock.MAX_THREADS, clock.threads())
        with mock.patch('os.sched_getaffinity', return_value={0},
                        create=True):
            self.assertEqual(1, clock.threads())


class BesideTestCase(testtools.TestCase):
    """A stage beside another: its own thread, the caller's watch."""

    def test_it_runs_while_the_block_runs(self):
        # The call waits for the block, so it runs in another thread at
        # the same time; leaving the block waits for the call.
        started, go = threading.Event(), threading.Event()

        def call(value):
            started.set()
            self.assertTrue(go.wait(base.LONG))
            return value * 2, threading.current_thread().name

        with clock.beside(call, 21) as future:
            self.assertTrue(started.wait(base.LONG))
            self.assertFalse(future.done())
            go.set()
        self.assertTrue(future.done())
        value, name = future.result()
        self.assertEqual(42, value)
        self.assertTrue(name.startswith('planner-beside'))

    def test_it_keeps_a_cpu_while_it_runs(self):
        go = threading.Event()
        with mock.patch('os.sched_getaffinity', return_value={0, 1, 2},
                        create=True):
            self.assertEqual(3, clock.threads())
            with clock.beside(go.wait, base.LONG) as future:
                self.assertEqual(2, clock.threads())
                go.set()
                self.assertTrue(future.result())
                # Done: its CPU is the block's again.
                self.assertEqual(3, clock.threads())
            self.assertEqual(3, clock.threads())

    def test_what_the_limit_cuts_is_the_callers(self):
        with clock.watch() as cut:
            with clock.beside(clock.cut, 'the fleet') as future:
                pass
        self.assertIsNone(future.result())
        self.assertEqual(['the fleet'], cut)

    def test_its_error_is_raised_by_its_result(self):
        def call():
            raise ValueError('the fleet')

        with clock.beside(call) as future:
            pass
        self.assertRaisesRegex(ValueError, 'the fleet', future.result)


class PricingSideBySideTestCase(testtools.TestCase):
    """Column generation finds the same patterns on 1 thread as on 3."""

    def generate(self, threads, problem):
        master = master_mod.Master(problem)
        master.pricing_gap = pricing.pricing_gap(0.0)
        colgen.seed(problem, master)
        deadline = time.monotonic() + base.LONG
        with mock.patch.object(clock, 'threads', return_value=threads):
            generated = colgen.generate_columns(
                problem, master, deadline, deadline, 0.0, True, None)
        return master.columns, generated.res.fun, generated.bound

    def check(self, problem):
        alone = self.generate(1, problem)
        side = self.generate(3, problem)
        self.assertEqual(alone[0], side[0])
        self.assertAlmostEqual(alone[1], side[1], delta=1e-9 * abs(alone[1]))
        self.assertEqual(alone[2], side[2])

    def test_several_periods(self):
        # price_all: the periods of a configuration in turn, the
        # configurations side by side.
        scen = base.scenario_of(test_nodebound.WORKLOADS,
                                test_nodebound.CONFIGS,
                                demand=test_nodebound.GROWTH)
        self.check(optimize.build(scen))

    def test_one_period(self):
        # price_farley: the next configurations side by side, the answers
        # past where pricing stops left out.
        scen = base.scenario_of(test_nodebound.WORKLOADS,
                                test_nodebound.CONFIGS,
                                demand={'redis': 41, 'mysql': 13})
        self.check(optimize.build(scen))
