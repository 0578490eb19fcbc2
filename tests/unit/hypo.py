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
"""Hypothesis settings of the unit tests: deterministic, with no deadline.

A property test that fails must fail on every run, and none may fail by
timing: examples are derived from the test (``derandomize``), no example
database is kept and no deadline applies. ``HYPOTHESIS_PROFILE=thorough``
draws many more, random, examples for a long run by hand.
"""

import os

import hypothesis


def settings(max_examples=100, **overrides):
    """Settings to decorate one test with (``@hypo.settings(200)``).

    Applied per test rather than loaded, so that test modules in the same
    process keep their own.
    """
    checks = [hypothesis.HealthCheck.too_slow,
              hypothesis.HealthCheck.filter_too_much]
    values = dict(derandomize=True, max_examples=max_examples,
                  deadline=None, database=None, print_blob=False,
                  suppress_health_check=checks)
    if os.environ.get('HYPOTHESIS_PROFILE') == 'thorough':
        values.update(derandomize=False, max_examples=5000)
    values.update(overrides)
    return hypothesis.settings(**values)
