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
"""How long the slow tests take, so that a fresh clone's workers share them.

stestr splits the tests among its workers by the durations its repository
recorded; a fresh clone (CI) has none, and a split by count gave one worker
of four 21 minutes of the functional suite and another 15. ``seed`` writes
the durations of ``tests/test-times.csv`` into a repository before its first
run, as stestr records them (``times.dbm``); it adds no run and no result,
so it cannot change what the runs report. ``save`` writes the file back from
a repository after a whole run, keeping the tests of at least
``--at-least`` seconds (the rest are shared round-robin, which balances
them well enough).

Usage: python tools/test_times.py seed [--repo-url DIR] [--file F]
       python tools/test_times.py save [--repo-url DIR ...] [--file F]
"""

import argparse
import csv
import dbm.dumb
import os
import sys

from stestr.repository import abstract
from stestr.repository import util as repo_util

HERE = os.path.dirname(os.path.abspath(__file__))
TIMES_FILE = os.path.join(HERE, '..', 'tests', 'test-times.csv')
# The file is small and written here; anything bigger is not it.
MAX_BYTES = 1 << 20


def read_times(path):
    """{test id: seconds} of a times file; ValueError names a bad row."""
    if os.path.getsize(path) > MAX_BYTES:
        raise ValueError('%s: over %d bytes' % (path, MAX_BYTES))
    times = {}
    with open(path, newline='') as f:
        for number, row in enumerate(csv.reader(f), 1):
            if number == 1 and row == ['test_id', 'seconds']:
                continue
            try:
                test_id, seconds = row
                value = float(seconds)
            except ValueError:
                raise ValueError('%s line %d: %r is not "test_id,seconds"'
                                 % (path, number, row))
            if not test_id.startswith('tests.') or not value >= 0:
                raise ValueError('%s line %d: %r is not a test id under '
                                 'tests. and seconds >= 0'
                                 % (path, number, row))
            times[test_id] = value
    return times


def _times_db(repo_url, create=False):
    """The path of the durations stestr keeps in ``repo_url``'s repository."""
    if create and not os.path.isdir(os.path.join(repo_url, '.stestr')):
        os.makedirs(repo_url, exist_ok=True)
        repo = repo_util.get_repo_initialise(repo_url=repo_url)
    else:
        repo = repo_util.get_repo_open(repo_url=repo_url)
    return os.path.join(repo.base, 'times.dbm')


def seed(repo_url, path):
    """Record ``path``'s durations where stestr keeps them; return count."""
    times = read_times(path)
    db = dbm.dumb.open(_times_db(repo_url, create=True), 'c')
    try:
        for test_id, seconds in times.items():
            db[test_id] = repr(seconds)
    finally:
        db.close()
    return len(times)


def save(repo_urls, path, at_least):
    """Write the repositories' durations of ``at_least`` s or more."""
    times = {}
    for repo_url in repo_urls:
        db = dbm.dumb.open(_times_db(repo_url), 'r')
        try:
            times.update({key.decode() if isinstance(key, bytes) else key:
                          float(db[key]) for key in db.keys()})
        finally:
            db.close()
    slow = sorted((test_id, seconds) for test_id, seconds in times.items()
                  if seconds >= at_least and test_id.startswith('tests.'))
    tmp = path + '.tmp'
    with open(tmp, 'w', newline='') as f:
        writer = csv.writer(f, lineterminator='\n')
        writer.writerow(['test_id', 'seconds'])
        for test_id, seconds in slow:
            writer.writerow([test_id, '%.1f' % seconds])
    os.replace(tmp, path)
    return len(slow)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('command', choices=('seed', 'save'))
    parser.add_argument('--repo-url', action='append',
                        help='the directory of the .stestr repository '
                        '(default: here); save reads every one given')
    parser.add_argument('--file', default=TIMES_FILE)
    parser.add_argument('--at-least', type=float, default=2.0,
                        help='save: the tests of at least this many '
                        'seconds (default 2)')
    args = parser.parse_args(argv)
    repos = args.repo_url or ['.']
    if args.command == 'seed' and len(repos) > 1:
        parser.error('seed writes one repository')
    try:
        if args.command == 'seed':
            count = seed(repos[0], args.file)
        else:
            count = save(repos, args.file, args.at_least)
    except (OSError, ValueError, abstract.RepositoryNotFound) as exc:
        print('test_times %s: %s' % (args.command, exc), file=sys.stderr)
        return 3
    print('test_times %s: %d tests' % (args.command, count))
    return 0


if __name__ == '__main__':
    sys.exit(main())
