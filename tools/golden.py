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
"""Golden outputs of the command-line tools: record them, check them.

    python tools/golden.py record tests/golden/data
    python tools/golden.py check tests/golden/data [CASE...]

Each case is one invocation of a console script (setup.cfg
[entry_points] console_scripts) on the shipped scenarios, examples and
recorded hosts; its record is the exit status, stdout, stderr and every
file the command wrote, byte for byte. A refactor that changes no
behaviour leaves every record as it is (tests/unit/crosscut/test_golden.py).

A tool is reached through its console-script entry point, looked up by
name in the installed distribution's metadata, never through a module
path: modules may move while the scripts stay. The entry point runs in
this process with the repository root first on ``sys.path`` and as the
working directory, so this tree's code is what runs, and the paths the
cases name are relative (no absolute path of a checkout in any output).
"""

import contextlib
import difflib
import importlib.metadata
import io
import logging
import os
import shutil
import sys
import tempfile
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join('tests', 'golden', 'data')
PLANNER = 'nova-pmem-planner'
DISCOVER = 'nova-pmem-discover'
# Stands for the case's scratch directory in its argv and its records.
TMP = '<TMP>'
# Terminal widths change cliff's tables; a case runs as on a pipe.
UNSET = ('COLUMNS', 'CLIFF_MAX_TERM_WIDTH', 'CLIFF_FIT_WIDTH')

SCENARIOS = {
    # scenario: (aggregates of its plan, (platform, cpu, dimms) to search)
    'telco-cost-matched': (
        ('pmem-dram-384', 'pmem-mm-192-512'),
        ('cascade-lake-2s', 'xeon-gold-6230n', ())),
    # Every DIMM of this platform takes two minutes; two DIMMs a second.
    'cxl-cost-matched': (
        ('pmem-dram-2304', 'pmem-flat-1536-1536', 'pmem-kmem-1536-1536'),
        ('granite-rapids-ap-2s', 'xeon-6980p',
         ('ddr5-64', 'micron-cz120-256'))),
}
EXAMPLES = os.path.join('etc', 'examples')
FLEET = os.path.join(EXAMPLES, 'fleet')
OBSERVATIONS = os.path.join(EXAMPLES, 'observations')
# The recorded hosts of the discovery tests: folder, case prefix, CXL?
HOST_SETS = (('discover_data', 'pmem', False),
             ('discover_cxl_data', 'cxl', True),
             ('discover_tiering_data', 'tiering', True))
# A nova.conf for nova-conf --merge-into to merge into.
NOVA_CONF = '[DEFAULT]\ndebug = true\n\n[pmem]\ncache_overcommit_ratio = 2\n'


class Case(object):
    """One invocation: ``script argv``; ``seed`` files are put in TMP."""

    def __init__(self, name, script, argv, seed=None):
        self.name = name
        self.script = script
        self.argv = list(argv)
        self.seed = seed or {}

    def command(self):
        return ' '.join([self.script] + self.argv)


def _planner_cases(scenario, aggregates, search):
    s = ['--scenario', scenario]
    name = scenario.split('-')[0]
    platform, cpu, dimms = search
    cases = []

    def add(suffix, argv, seed=None):
        cases.append(Case('planner-%s-%s' % (name, suffix), PLANNER,
                          list(argv), seed))

    for command in ('compare', 'configs', 'calibration'):
        add(command, [command] + s)
        add(command + '-json', [command] + s + ['-f', 'json'])
        add(command + '-long', [command] + s + ['--long'])
    add('compare-observed', ['compare'] + s + ['--observations',
                                               OBSERVATIONS])
    add('compare-accounting', ['compare'] + s + ['--placement-accounting',
                                                 '-f', 'json'])
    add('compare-fleet', ['compare'] + s + ['--fleet', FLEET, '-f', 'json'])
    argv = ['search'] + s + ['--platform', platform, '--cpu', cpu,
                             '--limit', '8', '--no-progress']
    for dimm in dimms:
        argv += ['--dimm', dimm]
    add('search', argv)
    add('search-json', argv + ['-f', 'json', '--objective', 'vms_per_node'])
    add('nova-config', ['nova-config'] + s)
    add('nova-config-json', ['nova-config'] + s + ['-f', 'json',
                                                   '--placement-accounting'])
    add('script', ['nova-config', 'script'] + s)
    add('script-accounting', ['nova-config', 'script'] + s +
        ['--placement-accounting', '-o', TMP + '/pmem.sh'])
    add('nova-conf', ['nova-config', 'nova-conf'] + s)
    add('nova-conf-merge', ['nova-config', 'nova-conf'] + s +
        ['--merge-into', TMP + '/nova.conf'], {'nova.conf': NOVA_CONF})
    add('kolla', ['nova-config', 'kolla'] + s +
        ['--output-dir', TMP + '/kolla'])
    add('osa', ['nova-config', 'osa'] + s)
    add('hot-ratios', ['hot-ratios'] + s + ['--observations', OBSERVATIONS,
                                            '--min-instances', '1'])
    add('hot-ratios-accounting', ['hot-ratios'] + s +
        ['--observations', OBSERVATIONS, '--placement-accounting', '-f',
         'json'])
    add('compare-redis', ['compare'] + s + ['--workload', 'redis'])
    add('script-redis', ['nova-config', 'script'] + s +
        ['--workload', 'redis', '--observations', OBSERVATIONS])
    # One process (--jobs 1): the grid is solved in this one, in order.
    add('sweep', ['sweep'] + s + ['--jobs', '1', '--power-price',
                                  '0.05,0.2', '--hot-ratio', '0.25',
                                  '--demand-scale', '0.1', '-f', 'json'])
    add('fleet', ['fleet'] + s + ['--fleet', FLEET])
    add('fleet-json', ['fleet'] + s + ['--fleet', FLEET, '-f', 'json'])
    for aggregate in aggregates:
        role = 'compute:' + aggregate
        add('nova-conf-' + aggregate, ['nova-config', 'nova-conf'] + s +
            ['--role', role])
        add('provider-config-' + aggregate,
            ['nova-config', 'provider-config'] + s +
            ['--placement-accounting', '--role', role])
        add('provider-config-file-' + aggregate,
            ['nova-config', 'provider-config'] + s +
            ['--role', role, '-o', TMP + '/provider.yaml'])
        add('kolla-' + aggregate, ['nova-config', 'kolla'] + s +
            ['--role', role, '--host', 'compute-01', '--host', 'compute-02',
             '--placement-accounting'])
        add('osa-' + aggregate, ['nova-config', 'osa'] + s +
            ['--role', role, '--pip-package', 'nova-pmem-filters==1.0.0'])
    return cases


def _model_cases():
    """The simulator's placements and the optimiser's fleets, small."""
    cases = []
    for scenario, demand in (('telco-cost-matched',
                              ['redis=40', 'mysql=20']),
                             ('cxl-cost-matched', ['redis=40', 'mysql=10',
                                                   'analytics=6'])):
        name = scenario.split('-')[0]
        s = ['--scenario', scenario, '--no-progress', '-f', 'json']
        argv = ['optimize'] + s
        for mix in demand:
            argv += ['--demand', mix]
        cases.append(Case('optimize-%s' % name, PLANNER, argv))
        argv = ['simulate'] + s + ['--days', '60', '--seed', '7',
                                   '--write-trace', TMP + '/trace.csv',
                                   '--timeline', TMP + '/timeline.csv']
        for mix in demand:
            argv += ['--mix', mix]
        cases.append(Case('simulate-%s' % name, PLANNER, argv))
        cases.append(Case('simulate-%s-near-memory' % name, PLANNER,
                          argv[:-2 * len(demand)] + ['--near-memory'] +
                          argv[-2 * len(demand):]))
    fixed = ['simulate', '--no-progress', '-f', 'json', '--nodes',
             'mm-192-512=3', '--nodes', 'dram-384=2', '--mix', 'redis=20',
             '--mix', 'mysql=10', '--days', '90', '--seed', '11',
             '--timeline', TMP + '/timeline.csv']
    cases.append(Case('simulate-telco-nodes', PLANNER, fixed))
    cases.append(Case('simulate-telco-nodes-weighed', PLANNER, fixed + [
        '--cache-overcommit-ratio', '1.5', '--ram-weight-multiplier', '2',
        '--cpu-weight-multiplier', '0.5', '--tier-weight-multiplier', '3',
        '--cache-headroom-weight-multiplier', '1']))
    cases.append(Case('simulate-telco-trace', PLANNER, [
        'simulate', '--no-progress', '-f', 'json', '--nodes', 'mm-192-512=2',
        '--nodes', 'dram-384=2', '--trace',
        os.path.join(EXAMPLES, 'trace.csv')]))
    cases.append(Case('simulate-telco-fleet', PLANNER, [
        'simulate', '--no-progress', '-f', 'json', '--fleet', FLEET,
        '--host-vcpus', '64', '--mix', 'redis=10', '--days', '30']))
    cases.append(Case('hot-ratios-bare', PLANNER, [
        'hot-ratios', '--observations', OBSERVATIONS, '-f', 'json']))
    return cases


# The outputs of nova-pmem-discover; --cxl is added for hosts with CXL.
DISCOVER_FORMS = (
    ('json', []),
    ('table', ['--table']),
    ('csv', ['-f', 'csv']),
    ('numa', ['--numa']),
    ('numa-table', ['--numa', '--table']),
    ('aggregate', ['--aggregate']),
    ('aggregate-numa', ['--aggregate', '--numa', '--aggregate-name', 'agg']),
    ('provider-config', ['--provider-config', '-']),
    ('provider-config-ratios', ['--provider-config', TMP + '/provider.yaml',
                                '--ram-allocation-ratio', '1.5',
                                '--cache-overcommit-ratio', '2']),
    ('libvirt', ['--libvirt']),
    ('libvirt-plan', ['--libvirt', '--plan', '4x32G']),
)


def _hosts():
    """(case prefix, directory, CXL?) of every recorded host."""
    hosts = []
    for folder, prefix, cxl in HOST_SETS:
        base = os.path.join('tests', 'unit', folder)
        for host in sorted(os.listdir(os.path.join(ROOT, base))):
            if os.path.isdir(os.path.join(ROOT, base, host)):
                hosts.append(('%s-%s' % (prefix, host),
                              os.path.join(base, host), cxl))
    base = os.path.join(EXAMPLES, 'discover')
    for host in sorted(os.listdir(os.path.join(ROOT, base))):
        hosts.append(('example-' + host, os.path.join(base, host),
                      host.startswith('cxl')))
    return hosts


def _discover_cases():
    cases = []
    for prefix, directory, cxl in _hosts():
        for form, argv in DISCOVER_FORMS:
            argv = ['--from', directory] + argv
            cases.append(Case('discover-%s-%s' % (prefix, form), DISCOVER,
                              argv + ['--cxl'] if cxl else argv))
        # Every host read for CXL and without, whatever it has.
        cases.append(Case('discover-%s-%s' % (prefix, 'cxl-off' if cxl
                                              else 'cxl'), DISCOVER,
                          ['--from', directory] + ([] if cxl else ['--cxl'])))
    return cases


def cases():
    """Every case, in a fixed order."""
    found = []
    for scenario, (aggregates, search) in SCENARIOS.items():
        found += _planner_cases(scenario, aggregates, search)
    found += _model_cases()
    found += _discover_cases()
    names = [case.name for case in found]
    assert len(names) == len(set(names)), 'case names repeat'
    return found


def entry_point(script):
    """The function of console script ``script``, from the metadata."""
    (point,) = importlib.metadata.entry_points(group='console_scripts',
                                               name=script)
    return point.load()


@contextlib.contextmanager
def _process(argv, stdout, stderr, cwd):
    """The state a console script sees as a process of its own.

    The root logger's handlers and level are put back (cliff adds a
    handler on each run). Warnings are not shown: a warning is printed
    once per process, so in one process it would show in the first case
    only; none of the tools report anything through warnings.
    """
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    saved_env = {name: os.environ.pop(name, None) for name in UNSET}
    saved = sys.argv, sys.stdout, sys.stderr, os.getcwd()
    sys.argv, sys.stdout, sys.stderr = argv, stdout, stderr
    os.chdir(cwd)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            yield
    finally:
        sys.argv, sys.stdout, sys.stderr = saved[:3]
        os.chdir(saved[3])
        root.handlers[:], root.level = handlers, level
        for name, value in saved_env.items():
            if value is not None:
                os.environ[name] = value


def _stream():
    return io.TextIOWrapper(io.BytesIO(), encoding='utf-8',
                            write_through=True)


def _call(case, tmp):
    """(exit status, stdout bytes, stderr bytes) of ``case``."""
    main = entry_point(case.script)
    argv = [arg.replace(TMP, tmp) for arg in case.argv]
    out, err = _stream(), _stream()
    with _process([case.script] + argv, out, err, ROOT):
        try:
            status = main()
        except SystemExit as exc:
            status = exc.code
    out.flush()
    err.flush()
    if status is None:
        status = 0
    return status, out.buffer.getvalue(), err.buffer.getvalue()


def _written(tmp, seed):
    """The files under ``tmp``: [(relative path, mode, bytes)], sorted."""
    found = []
    for top, dirs, files in os.walk(tmp):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(top, name)
            relative = os.path.relpath(path, tmp)
            with open(path, 'rb') as f:
                content = f.read()
            if seed.get(relative, '').encode() == content:
                continue
            # Only whether it is executable: the other bits follow the
            # umask of whoever runs the case.
            mode = 'executable' if os.access(path, os.X_OK) else 'file'
            found.append((relative, mode, content))
    return found


def run(case):
    """The record of ``case``: bytes, the same on every run."""
    tmp = tempfile.mkdtemp(prefix='golden-')
    try:
        for relative, text in case.seed.items():
            with open(os.path.join(tmp, relative), 'w') as f:
                f.write(text)
        status, out, err = _call(case, tmp)
        files = _written(tmp, case.seed)
    finally:
        shutil.rmtree(tmp)
    parts = [b'$ ' + case.command().encode() + b'\n',
             b'exit: %d\n' % status,
             b'--- stdout\n', out, b'--- stderr\n', err]
    for relative, mode, content in files:
        parts += [b'--- file %s (%s)\n' % (relative.encode(), mode.encode()),
                  content]
    # The scratch directory is new on every run; where a command names it
    # (a message, a path in a written file) it reads <TMP>, which is what
    # the case's argv said. Nothing else of a record holds a path of this
    # machine.
    return b''.join(parts).replace(tmp.encode(), TMP.encode())


def path_of(directory, case):
    return os.path.join(directory, case.name + '.txt')


def diff(expected, actual, case):
    """A unified diff of two records of ``case``, as text."""
    lines = difflib.unified_diff(
        expected.decode('utf-8', 'replace').splitlines(True),
        actual.decode('utf-8', 'replace').splitlines(True),
        'recorded/' + case.name, 'now/' + case.name)
    return ''.join(lines) or '(the records differ in bytes only)\n'


def rerecord(directory=DATA):
    return 'to re-record: python tools/golden.py record %s' % directory


def record(directory):
    os.makedirs(directory, exist_ok=True)
    known = set()
    for case in cases():
        known.add(os.path.basename(path_of(directory, case)))
        with open(path_of(directory, case), 'wb') as f:
            f.write(run(case))
    for name in sorted(os.listdir(directory)):
        if name.endswith('.txt') and name not in known:
            os.unlink(os.path.join(directory, name))
    return 0


def check(directory, names=()):
    failed = []
    for case in cases():
        if names and case.name not in names:
            continue
        with open(path_of(directory, case), 'rb') as f:
            expected = f.read()
        actual = run(case)
        if actual != expected:
            if not failed:
                sys.stdout.write(diff(expected, actual, case))
            failed.append(case.name)
    for name in failed:
        sys.stdout.write('differs: %s\n' % name)
    if failed:
        sys.stdout.write(rerecord(directory) + '\n')
    return 1 if failed else 0


def main(argv):
    if len(argv) < 2 or argv[0] not in ('record', 'check'):
        sys.stderr.write('usage: golden.py record DIR | check DIR [CASE...]'
                         '\n')
        return 2
    if ROOT not in sys.path[:1]:
        sys.path.insert(0, ROOT)
    directory = os.path.abspath(argv[1])
    if argv[0] == 'record':
        return record(directory)
    return check(directory, set(argv[2:]))


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
