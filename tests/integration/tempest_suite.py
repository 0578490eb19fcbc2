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
"""Tempest with the nova-pmem-filters plugin, against the deployment.

As an operator runs it on their cloud: ``tempest init`` of a workspace, a
``tempest.conf`` for this deployment (Keystone's admin, the Glance
stand-in's image, no Neutron, no validation, the compute microversions
the tests need, the ``[pmem_filters]`` section with nova.conf's ``[pmem]``
values), ``tempest list-plugins``, then ``tempest run --regex
'^nova_pmem_tempest_plugin\\.'``. The results are read back from the
workspace's stestr repository: every Tempest test is one check (a skip is
a check that is skipped, with Tempest's reason), so that CI counts each.

The deployment has a host of every kind (deploy.sh COMPUTES) but no vPMEM
namespaces: the vPMEM tests must skip, and only they (``EXPECTED_SKIPS``);
a test that skips anywhere else hides something and fails a check.
"""

import collections
import configparser
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import requests

from nova_pmem_filters import fileutil

from tests.integration import client as api
from tests.integration import stubs

PLUGIN = 'nova-pmem-filters'
PACKAGE = 'nova_pmem_tempest_plugin'
REGEX = r'^nova_pmem_tempest_plugin\.'
_PLACEMENT = PACKAGE + '.tests.scenario.test_placement.PmemPlacementTest.'
# Tests that skip here, and the words their reason must hold.
EXPECTED_SKIPS = {
    _PLACEMENT + 'test_vpmem_flavor_only_on_app_direct':
        'vpmem_label is not set',
    _PLACEMENT + 'test_vpmem_flavor_excluding_app_direct_refused':
        'vpmem_label is not set',
}
# The microversions the tests ask for: 2.74 (host in server create) and
# 2.86 (extra specs validated).
MAX_MICROVERSION = 'latest'
# Names Tempest gives what it creates (CONF.resource_name_prefix).
RESOURCE_PREFIX = 'tempest'
CONCURRENCY = 2
RUN_TIMEOUT_S = 1500
COMMAND_TIMEOUT_S = 300
# nova.conf [pmem] of the deployment (deploy.sh).
PMEM_OPTIONS = {'default_hot_ratio': '0.5', 'default_host_mode': 'dram',
                'cache_overcommit_ratio': '1.0'}


def log(msg, *args):
    sys.stderr.write('%s tempest: %s\n'
                     % (time.strftime('%H:%M:%S'), msg % args))
    sys.stderr.flush()


def conf_values(workspace, admin=None, auth_url=None, image=None,
                region=None):
    """{section: {option: value}} of the deployment's tempest.conf."""
    admin = admin or api.ADMIN
    return {
        'auth': {'use_dynamic_credentials': 'True',
                 'admin_username': admin.username,
                 'admin_password': admin.password,
                 'admin_project_name': admin.project,
                 'admin_domain_name': 'Default'},
        'identity': {'uri_v3': auth_url or api.KEYSTONE_URL,
                     'auth_version': 'v3',
                     'region': region or api.REGION},
        'identity-feature-enabled': {'api_v2': 'False'},
        'compute': {'image_ref': image or stubs.IMAGE_ID,
                    'image_ref_alt': image or stubs.IMAGE_ID,
                    'min_microversion': '2.1',
                    'max_microversion': MAX_MICROVERSION,
                    'build_timeout': '180', 'build_interval': '1'},
        'service_available': {'nova': 'True', 'neutron': 'False',
                              'glance': 'False', 'cinder': 'False',
                              'swift': 'False', 'horizon': 'False',
                              'pmem_filters': 'True'},
        'validation': {'run_validation': 'False'},
        'oslo_concurrency': {'lock_path': os.path.join(workspace,
                                                       'tempest_lock')},
        'pmem_filters': dict(PMEM_OPTIONS, api_validators='True',
                             server_networks='none'),
    }


def write_conf(path, values):
    """Merge ``values`` into the tempest.conf ``tempest init`` wrote."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str
    parser.read(path)
    for section, options in values.items():
        if not parser.has_section(section):
            parser.add_section(section)
        for key, value in options.items():
            parser.set(section, key, value)
    out = io.StringIO()
    parser.write(out)
    fileutil.write_atomic(path, out.getvalue())


def _bin(name):
    return os.path.join(os.path.dirname(sys.executable), name)


def command(argv, cwd, timeout=COMMAND_TIMEOUT_S):
    """Run a Tempest or stestr command: (rc, stdout, stderr); no raise.

    In a process group of its own, which is killed, test workers and all,
    when the command outlives ``timeout`` (rc None).
    """
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return None, out, err + b'\ntimed out after %d s' % timeout
    return proc.returncode, out, err


def test_name(test_id):
    """A test's id without Tempest's ``[id-...,attrs]`` tag."""
    return re.sub(r'\[[^]]*\]$', '', test_id)


def parse_subunit(stream):
    """[{'id', 'status', 'reason'}] of a subunit v2 stream, in order.

    ``reason``: the skip reason, or the last line of a failure's
    traceback.
    """
    import subunit
    import testtools

    found = []

    def on_test(test):
        details = test.get('details') or {}
        reason = ''
        if 'reason' in details:
            reason = details['reason'].as_text()
        elif 'traceback' in details:
            lines = details['traceback'].as_text().strip().splitlines()
            reason = lines[-1] if lines else ''
        found.append({'id': test_name(test['id']), 'status': test['status'],
                      'reason': reason.strip()})

    result = testtools.StreamToDict(on_test)
    result.startTestRun()
    try:
        subunit.ByteStreamToStreamResult(
            io.BytesIO(stream), non_subunit_name='stdout').run(result)
    finally:
        result.stopTestRun()
    return [t for t in found if t['status'] != 'exists']


def totals_line(output):
    """Tempest's closing ``Totals`` as one line ('' if it printed none)."""
    text = output.decode('utf-8', 'replace')
    block = text.rpartition('Totals')[2]
    ran = re.search(r'Ran: (\d+) tests? in ([\d.]+) sec', block)
    if not ran:
        return ''
    parts = ['Totals: Ran: %s tests in %s sec' % ran.groups()]
    for label in ('Passed', 'Skipped', 'Expected Fail',
                  'Unexpected Success', 'Failed'):
        found = re.search(r'- %s: (\d+)' % label, block)
        if found:
            parts.append('%s: %s' % (label, found.group(1)))
    return '; '.join(parts)


def check_tests(results, tests, listed):
    """One check per Tempest test; then what must hold of them all."""
    for test in tests:
        name = 'tempest: %s' % test['id']
        if test['status'] == 'skip':
            results.checks.append({'name': name, 'passed': True,
                                   'skipped': True,
                                   'detail': test['reason']})
            log('SKIP %s (%s)', test['id'], test['reason'])
        else:
            results.check(name, test['status'] == 'success',
                          '' if test['status'] == 'success'
                          else '%s: %s' % (test['status'], test['reason']))
    seen = {t['id'] for t in tests}
    results.check('tempest ran every test it lists for the plugin',
                  listed and set(listed) <= seen,
                  'listed %d, results for %d; missing: %s'
                  % (len(listed), len(seen),
                     ', '.join(sorted(set(listed) - seen))[:400]))
    skipped = {t['id']: t['reason'] for t in tests
               if t['status'] == 'skip'}
    wrong = ['%s (%s)' % (i, r) for i, r in sorted(skipped.items())
             if EXPECTED_SKIPS.get(i) is None or EXPECTED_SKIPS[i] not in r]
    absent = sorted(set(EXPECTED_SKIPS) - set(skipped))
    results.check(
        'tempest skips only the vPMEM tests, for want of a vPMEM label',
        not wrong and not absent,
        'unexpected skips: %s; expected skips that ran: %s'
        % ('; '.join(wrong) or 'none', ', '.join(absent) or 'none'))


def leftovers(cloud):
    """What Tempest created and left in the cloud (names ``tempest-*``)."""
    prefix = RESOURCE_PREFIX + '-'
    left = ['server %s' % s['name'] for s in cloud.servers()
            if s['name'].startswith(prefix)]
    flavors = cloud.admin.get('/flavors/detail?is_public=None')['flavors']
    left += ['flavor %s' % f['name'] for f in flavors
             if f['name'].startswith(prefix)]
    token, _body = api.issue_token(api.ADMIN)
    for kind in ('projects', 'users'):
        resp = requests.get('%s/%s' % (api.KEYSTONE_URL, kind),
                            headers={'X-Auth-Token': token}, timeout=30)
        resp.raise_for_status()
        left += ['%s %s' % (kind[:-1], p['name']) for p in resp.json()[kind]
                 if p['name'].startswith(prefix)]
    return left


def prepare(results, workspace):
    """tempest init, tempest.conf, list-plugins; the listed test ids."""
    tempest = _bin('tempest')
    base = os.path.dirname(workspace)
    # A workspace of an earlier run is not this one's.
    shutil.rmtree(base, ignore_errors=True)
    # An empty global config dir: nothing from /etc/tempest or ~ is
    # copied in, and nothing is written to ~/.tempest.
    os.makedirs(os.path.join(base, 'global-etc'))
    rc, out, err = command(
        [tempest, 'init', '--config-dir', os.path.join(base, 'global-etc'),
         '--workspace-path', os.path.join(base, 'workspace.yaml'),
         '--name', 'pmem-it-%d' % os.getpid(), workspace], cwd=base)
    if not results.check('tempest init makes a workspace', rc == 0,
                         err.decode('utf-8', 'replace')[-300:]):
        return None
    conf = os.path.join(workspace, 'etc', 'tempest.conf')
    write_conf(conf, conf_values(workspace))
    rc, out, err = command([tempest, 'list-plugins'], cwd=workspace)
    text = (out if rc == 0 else err).decode('utf-8', 'replace')
    row = re.search(r'^\|\s*%s\s*\|.*$' % re.escape(PLUGIN), text, re.M)
    results.check('tempest list-plugins shows %s' % PLUGIN,
                  rc == 0 and row, row.group(0) if row else text[-300:])
    rc, out, err = command([tempest, 'run', '--config-file', conf,
                            '--regex', REGEX, '--list-tests'], cwd=workspace)
    listed = sorted({test_name(line.strip()) for line in
                     out.decode('utf-8', 'replace').splitlines()
                     if line.strip().startswith(PACKAGE + '.')})
    results.check('tempest run --list-tests lists the plugin\'s tests',
                  rc == 0 and listed, '%d tests; %s' % (
                      len(listed), err.decode('utf-8', 'replace')[-300:]))
    return conf, listed


def scenario_tempest(cloud, results, work):
    """Run the plugin's tests with Tempest; a check per test, and a row."""
    cloud.delete_all()
    workspace = os.path.join(work, 'tempest', 'workspace')
    prepared = prepare(results, workspace)
    if prepared is None:
        return
    conf, listed = prepared
    started = time.time()
    rc, out, err = command([_bin('tempest'), 'run', '--config-file', conf,
                            '--regex', REGEX, '--concurrency',
                            str(CONCURRENCY)], cwd=workspace,
                           timeout=RUN_TIMEOUT_S)
    wall = time.time() - started
    totals = totals_line(out)
    log('tempest run: rc %s in %.0f s; %s', rc, wall, totals)
    fileutil.write_atomic(os.path.join(work, 'tempest', 'run.out'),
                          out.decode('utf-8', 'replace'))
    _rc, stream, _err = command([_bin('stestr'), 'last', '--subunit'],
                                cwd=workspace)
    tests = parse_subunit(stream)
    check_tests(results, tests, listed)
    left = leftovers(cloud)
    results.check('Tempest leaves no server, flavor, project or user',
                  not left, ', '.join(left)[:400])
    status = collections.Counter(t['status'] for t in tests)
    results.row({
        'scenario': 'tempest plugin (%d tests)' % len(tests),
        'requests': len(tests), 'active': status['success'],
        'error': len(tests) - status['success'] - status['skip'],
        'stuck': 0, 'api_rejected': 0, 'over_admitted': 0,
        'over_admitted_mb': 0, 'p50_s': None, 'p95_s': None,
        'stuck_ids': [], 'faults': {}, 'per_host': {}, 'attribution': {},
        'skipped': status['skip'], 'wall_s': round(wall, 1),
        'notes': totals or 'tempest run rc %s: %s' % (
            rc, err.decode('utf-8', 'replace')[-200:])})
