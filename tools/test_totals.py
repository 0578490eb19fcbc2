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
"""Add up the results of every run in a stestr repository.

tox runs the unit and the functional suites as two stestr runs in one
repository; CI wants one closing line for both. Prints a line per run and
then ``N passed, N failed``. ``--check NAME=RC`` counts a check that is not a
test run (pep8) as one passed or failed item. ``--integration FILE`` counts
the checks of the integration suite's JSON results, each as a test (a
check marked ``skipped``, such as a skipped Tempest test, as a skipped
one); a missing or unreadable file counts as one failure. Exits 1 when
anything failed.

Usage: python tools/test_totals.py [--repo-url DIR] [--check pep8=0]
                                   [--integration results.json]
"""

import argparse
import json
import sys

from stestr.repository import util as repo_util
import testtools


def run_counts(repo_url):
    """Yield (run id, passed, failed, skipped) for each run in the repo."""
    repo = repo_util.get_repo_open(repo_url=repo_url)
    for run_id in sorted(repo.get_run_ids(), key=int):
        summary = testtools.StreamSummary()
        case = repo.get_test_run(run_id).get_test()
        summary.startTestRun()
        case.run(summary)
        summary.stopTestRun()
        failed = len(summary.errors) + len(summary.failures)
        skipped = len(summary.skipped)
        yield run_id, summary.testsRun - failed - skipped, failed, skipped


def integration_counts(path):
    """(passed, failed, skipped, lines) of an integration run's checks."""
    try:
        with open(path) as f:
            checks = json.load(f)['checks']
        results = [(str(c['name']), bool(c['passed']), c.get('detail', ''))
                   for c in checks]
        skipped = sum(bool(c.get('skipped')) and bool(c['passed'])
                      for c in checks)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return 0, 1, 0, ['integration: no results in %s (%s): the '
                         'deployment did not come up or the run broke off'
                         % (path, exc)]
    if not results:
        return 0, 1, 0, ['integration: %s holds no checks' % path]
    passed = sum(ok for _name, ok, _detail in results) - skipped
    failed = len(results) - passed - skipped
    lines = ['integration: %d passed, %d failed, %d skipped'
             % (passed, failed, skipped)]
    lines.extend('integration FAILED: %s (%s)' % (name, detail)
                 for name, ok, detail in results if not ok)
    return passed, failed, skipped, lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--repo-url', default=None,
                        help='directory holding .stestr (default: here)')
    parser.add_argument('--check', action='append', default=[],
                        metavar='NAME=RC')
    parser.add_argument('--integration', metavar='FILE',
                        help='JSON results of tests/integration')
    args = parser.parse_args(argv)
    passed = failed = skipped = 0
    try:
        for run_id, ok, bad, skip in run_counts(args.repo_url):
            print('stestr run %s: %d passed, %d failed, %d skipped'
                  % (run_id, ok, bad, skip))
            passed, failed, skipped = passed + ok, failed + bad, skipped + skip
    except Exception as exc:
        print('no stestr results in %s: %s'
              % (args.repo_url or 'this directory', exc))
        failed += 1
    for check in args.check:
        name, _sep, rc = check.partition('=')
        good = rc.strip() == '0'
        print('%s: %s' % (name, 'passed' if good else 'failed (rc %s)' % rc))
        passed, failed = passed + good, failed + (not good)
    if args.integration:
        ok, bad, skip, lines = integration_counts(args.integration)
        print('\n'.join(lines))
        passed, failed, skipped = passed + ok, failed + bad, skipped + skip
    print('%d passed, %d failed, %d skipped' % (passed, failed, skipped))
    return 1 if failed or not passed else 0


if __name__ == '__main__':
    sys.exit(main())
