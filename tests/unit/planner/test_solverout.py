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
"""What a solver prints with C's printf stays off standard output."""

import subprocess
import sys
import textwrap
from unittest import mock

import numpy as np
import testtools

from nova_pmem_filters.planner.optimize import clock
from nova_pmem_filters.planner import patterns
from nova_pmem_filters.planner import solverout
from tests.unit.planner.optimize import test_column_generation

# HiGHS 1.12's line (ERGO-Code/HiGHS#2783), printed the way it prints it:
# printf into C's buffered stdout, which a pipe flushes only when full or
# at exit.
_SCRIPT = textwrap.dedent('''
    import ctypes
    import sys
    from nova_pmem_filters.planner import solverout
    libc = ctypes.CDLL(None)
    print('{"before": 1}', flush=True)
    with solverout.to_stderr():
        with solverout.to_stderr():
            libc.printf(b'HighsMipSolverData::transformNewIntegerFeasible'
                        b'Solution tmpSolver.run();\\n')
        libc.printf(b'still the solver\\n')
    print('{"after": 2}')
    sys.stdout.flush()
    libc.printf(b'{"c after": 3}\\n')
''')


class ToStderrTestCase(testtools.TestCase):

    def test_c_printf_goes_to_stderr_and_stdout_comes_back(self):
        out = subprocess.run([sys.executable, '-c', _SCRIPT],
                             capture_output=True, check=True, timeout=120)
        self.assertEqual(b'{"before": 1}\n{"after": 2}\n{"c after": 3}\n',
                         out.stdout)
        self.assertIn(b'tmpSolver.run();\nstill the solver\n', out.stderr)

    def test_closed_stdout_is_left_alone(self):
        script = textwrap.dedent('''
            import os
            from nova_pmem_filters.planner import solverout
            os.close(1)
            with solverout.to_stderr():
                pass
            print('ok', file=__import__('sys').stderr)
        ''')
        out = subprocess.run([sys.executable, '-c', script],
                             capture_output=True, timeout=120)
        self.assertEqual(b'ok\n', out.stderr)

    def test_every_mip_goes_through_it(self):
        entered = []
        real = solverout.to_stderr

        def counting():
            entered.append(1)
            return real()

        _scen, problem = test_column_generation._benchmark_problem()
        cand = problem.candidates[0]
        with mock.patch.object(solverout, 'to_stderr', counting):
            clock.milp('test', np.array([-1.0]), integrality=np.ones(1),
                       bounds=(0, 3))
            self.assertEqual(1, len(entered))
            # The pricing knapsack, which does not go through clock.
            value, _counts, _bound = patterns.best_pattern(
                cand.capacity, problem.demands,
                [1.0] * len(problem.demands), cand.limits)
        self.assertGreater(value, 0)
        self.assertEqual(2, len(entered))
