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
"""Start-up time of the command-line tools, against ``python -c pass``.

Each command runs as a fresh process, as a user starts it, ``--repeats``
times after one untimed run; its wall time, best and median, is printed
with the ratio of the best to the best of ``python -c pass`` measured in
the same run, by the same interpreter (``sys.executable``). The targets,
on the best time (the one least disturbed by the machine's other work):
``--help`` of every tool and ``nova-pmem-planner --version`` under 0.3 s,
``nova-pmem-planner compare`` (the built-in scenario) under 1 s. The
load average is printed with the table: on a busy machine every time,
the baseline's too, is longer.

The modules' bytecode is cached, as it is for an installed package: the
commands run with ``PYTHONPYCACHEPREFIX`` a temporary directory (the
untimed run fills it; the source tree is not written) even where
``PYTHONDONTWRITEBYTECODE`` is set; ``--no-bytecode-cache`` runs them in
the environment as it is.

The tools are the console scripts next to ``sys.executable`` (those of the
virtualenv the script runs in); where one is missing, the same entry point
is called through ``python -c`` (the table says so).

Run::

    .tox/py3/bin/python benchmarks/startup.py
    .tox/py3/bin/python benchmarks/startup.py --repeats 21 --no-fail

The exit status is 1 when a target is missed or a command fails, unless
``--no-fail``.
"""

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

# (label, console script, entrypoints function, arguments, target
# seconds).
COMMANDS = (
    ('nova-pmem-planner --version', 'nova-pmem-planner', 'planner',
     ['--version'], 0.3),
    ('nova-pmem-planner --help', 'nova-pmem-planner', 'planner',
     ['--help'], 0.3),
    ('nova-pmem-planner compare', 'nova-pmem-planner', 'planner',
     ['compare'], 1.0),
    ('nova-pmem-discover --help', 'nova-pmem-discover', 'discover',
     ['--help'], 0.3),
    ('nova-pmem-observe --help', 'nova-pmem-observe', 'observe',
     ['--help'], 0.3),
    ('nova-pmem-doctor --help', 'nova-pmem-doctor', 'doctor',
     ['--help'], 0.3),
)


def command_line(script, function, args):
    """(argv, how) of a tool: its console script, else ``python -c``."""
    path = os.path.join(os.path.dirname(sys.executable), script)
    if os.access(path, os.X_OK):
        return [path] + list(args), 'script'
    code = ('import sys; sys.argv[0] = %r; '
            'from nova_pmem_filters.cli import entrypoints; entrypoints.%s()'
            % (script, function))
    return [sys.executable, '-c', code] + list(args), 'python -c'


def _run(argv, env):
    """Wall seconds of one run; raises on a non-zero exit status."""
    start = time.perf_counter()
    proc = subprocess.run(argv, stdin=subprocess.DEVNULL, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seconds = time.perf_counter() - start
    if proc.returncode:
        raise RuntimeError('%s: exit status %d: %s' % (
            ' '.join(argv), proc.returncode,
            proc.stderr.decode(errors='replace').strip()[-500:]))
    return seconds


def measure(argv, repeats, env):
    """(best, median) wall seconds of ``repeats`` runs after a warm-up."""
    _run(argv, env)
    times = [_run(argv, env) for _ in range(repeats)]
    return min(times), statistics.median(times)


def _load():
    try:
        return '%.1f' % os.getloadavg()[0]
    except OSError:
        return 'unknown'


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--repeats', type=int, default=11,
                        help='timed runs of each command (default: '
                             '%(default)s)')
    parser.add_argument('--no-fail', action='store_true',
                        help='exit 0 even when a target is missed')
    parser.add_argument('--no-bytecode-cache', action='store_true',
                        help='run the commands in this environment as it '
                             'is (PYTHONDONTWRITEBYTECODE and all)')
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error('--repeats: expected 1 or more')
    with tempfile.TemporaryDirectory(prefix='startup-pycache-') as cache:
        # No pager, the same width for every run.
        env = dict(os.environ, COLUMNS='80')
        env.pop('PAGER', None)
        if not args.no_bytecode_cache:
            env.pop('PYTHONDONTWRITEBYTECODE', None)
            env['PYTHONPYCACHEPREFIX'] = cache
        return _table(args, env)


def _table(args, env):
    print('python %s (%s) on %s, %d CPUs, load average %s; %d runs each '
          'after one untimed; bytecode %s; targets on the best time' % (
              platform.python_version(), sys.executable, platform.node(),
              os.cpu_count() or 0, _load(), args.repeats,
              'as the environment says' if args.no_bytecode_cache
              else 'cached'))
    base_best, base_median = measure([sys.executable, '-c', 'pass'],
                                     args.repeats, env)
    print('%-30s %8s %8s %10s %8s  %s' % (
        'command', 'best s', 'median s', 'x baseline', 'target', 'result'))
    print('%-30s %8.3f %8.3f %10.1f %8s  %s' % (
        'python -c pass (baseline)', base_best, base_median, 1.0, '-', '-'))
    failures = []
    for label, script, function, cmd_args, target in COMMANDS:
        cmd, how = command_line(script, function, cmd_args)
        if how != 'script':
            label = '%s (%s)' % (label, how)
        try:
            best, median = measure(cmd, args.repeats, env)
        except RuntimeError as exc:
            failures.append(str(exc))
            print('%-30s %8s %8s %10s %8s  %s' % (
                label, '-', '-', '-', '< %g' % target, 'ERROR'))
            continue
        verdict = 'PASS' if best < target else 'FAIL'
        if verdict == 'FAIL':
            failures.append('%s: best %.3f s, target %g s'
                            % (label, best, target))
        print('%-30s %8.3f %8.3f %10.1f %8s  %s' % (
            label, best, median, best / base_best if base_best else 0,
            '< %g' % target, verdict))
    print('load average after the runs: %s' % _load())
    for failure in failures:
        print('missed: %s' % failure)
    return 1 if failures and not args.no_fail else 0


if __name__ == '__main__':
    sys.exit(main())
