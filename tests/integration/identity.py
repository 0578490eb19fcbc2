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
"""Identity scenarios: nova-pmem-doctor against the deployment's Keystone.

The doctor authenticates as an operator's would, through openstacksdk and
a ``clouds.yaml`` whose cloud ``it`` has password auth, and reads Nova and
Placement behind keystonemiddleware. Each way Keystone can stop it must
give exit status 3 and one line saying what is wrong:

* as the admin: the audit runs (exit 0, 1 or 2, nothing on stderr);
* as ``client.MEMBER``, a user without the admin role: the line names the
  user and the role it lacks;
* with a wrong password;
* with its token revoked in Keystone between two of its compute requests
  (``revoking.py`` revokes after the ``AFTER``-th): with password auth
  keystoneauth gets a new token and the audit completes, as it would
  have; with a token given to it (``--os-auth-type v3token``) there is no
  new token to get;
* with Keystone stopped (``deploy.sh keystone stop``); started again, the
  doctor audits and the cloud boots servers.

keystonemiddleware in nova-api caches no token (deploy.sh,
``token_cache_time = -1``), so a revoked token is refused at the next
compute request.
Each check's detail holds the exit status and the line the doctor printed.
"""

import json
import os
import subprocess
import sys

from tests.integration import client as api
from tests.integration import keystonesetup
from tests.integration import operator

TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
# The revocation follows the doctor's second compute request; an audit
# makes five (hypervisors, aggregates, flavors, servers, ...).
AFTER = 2
WRONG = api.Credentials(api.ADMIN.username, 'not-' + api.ADMIN.password,
                        api.ADMIN.project)
# What the doctor printed for each case: (exit status, stderr).
OUTCOMES = {}


class Doctor(object):
    """The doctor run with a clouds.yaml whose cloud ``it`` is one user."""

    def __init__(self, cloud, directory, credentials=api.ADMIN):
        """``credentials`` None: a clouds.yaml without a cloud."""
        self.operator = operator.Operator(cloud, directory)
        if credentials != api.ADMIN:
            keystonesetup.write_clouds_yaml(
                self.operator.clouds_yaml,
                {'it': credentials} if credentials else {})

    def run(self, *argv):
        return self.operator.run_doctor(*argv)

    def revoked(self, which, report, *argv):
        """The doctor under revoking.py; (process, report)."""
        env = dict(self.operator.env, PYTHONPATH=TOP)
        proc = subprocess.run(
            [sys.executable, '-m', 'tests.integration.revoking', str(AFTER),
             which, report] + list(argv), env=env, cwd=TOP,
            capture_output=True, text=True, timeout=300)
        try:
            with open(report) as f:
                return proc, json.load(f)
        except (OSError, ValueError):
            return proc, {}


def _findings(stdout):
    try:
        rows = json.loads(stdout or '[]')
    except ValueError:
        return None
    return sorted((r['severity'], r['code'], r['object']) for r in rows)


def check_one_line(results, case, proc, *parts):
    """Exit 3, nothing on stdout, one line on stderr holding ``parts``."""
    err = proc.stderr.strip()
    OUTCOMES[case] = (proc.returncode, err)
    return results.check(
        'doctor %s: exit 3, one line' % case,
        proc.returncode == 3 and not proc.stdout.strip()
        and len(err.splitlines()) == 1 and 'Traceback' not in err
        and all(part in err for part in parts),
        'exit %d: %s' % (proc.returncode, err[-600:]))


def _nova_conf():
    return os.path.join(os.environ.get('PMEM_IT_WORK',
                                       '/tmp/pmem-integration'),
                        'etc', 'nova.conf')


def scenario_identity(cloud, results, work):
    admin = Doctor(cloud, os.path.join(work, 'admin'))
    conf = ('--config-file', _nova_conf(), '-f', 'json')
    proc = admin.run(*conf)
    audit = (proc.returncode, _findings(proc.stdout))
    OUTCOMES['as admin'] = (proc.returncode, proc.stderr.strip())
    results.check('doctor as Keystone\'s admin (password auth): audits',
                  proc.returncode in (0, 1, 2) and audit[1]
                  and not proc.stderr.strip(),
                  'exit %d, %d findings: %s'
                  % (proc.returncode, len(audit[1] or ()),
                     proc.stderr.strip()[-300:]))
    _member_api(results)
    member = Doctor(cloud, os.path.join(work, 'member'), api.MEMBER)
    check_one_line(results, 'as a user without the admin role',
                   member.run(), 'HTTP 403',
                   'user %s in project %s' % (api.MEMBER.username,
                                              api.MEMBER.project),
                   'not admin', 'needs the admin role')
    wrong = Doctor(cloud, os.path.join(work, 'wrong-password'), WRONG)
    check_one_line(results, 'with a wrong password', wrong.run(),
                   'refused the credentials (HTTP 401 from %s/auth/tokens)'
                   % api.KEYSTONE_URL)
    _revoked(results, admin, work, conf, audit)
    _keystone_down(cloud, results, admin, conf, audit)
    for case, (status, err) in OUTCOMES.items():
        from tests.integration import scenarios
        scenarios.log('doctor %s: exit %d%s', case, status,
                      ': %s' % err if err else '')


def _member_api(results):
    """Nova's policy sees Keystone's roles: a member is not an admin."""
    member = api.Client(auth=api.MEMBER)
    servers = member.request('GET', '/servers', ok=(200,))
    refused = member.request('GET', '/os-aggregates', ok=(403,))
    results.check(
        'Keystone\'s member user: lists its servers, aggregates refused',
        servers is not None and 'servers' in servers and refused,
        'servers %s; aggregates %s' % (servers, refused))


def _revoked(results, admin, work, conf, audit):
    """The token revoked after the doctor's AFTER-th compute request."""
    report = os.path.join(work, 'revoked-password.json')
    proc, seen = admin.revoked('sent', report, '--os-cloud', 'it', *conf)
    err = proc.stderr.strip()
    OUTCOMES['token revoked mid-audit, password auth'] = (proc.returncode,
                                                          err)
    results.check(
        'doctor with its token revoked mid-audit, password auth: '
        're-authenticates and the audit completes as without',
        seen.get('revoke_status') == 204
        and seen.get('compute_requests', 0) > AFTER
        and seen.get('refused_after_revocation', 0) >= 1
        and seen.get('answered_with_a_new_token')
        and (proc.returncode, _findings(proc.stdout)) == audit and not err,
        'exit %d (without revocation %d): %s; %s'
        % (proc.returncode, audit[0], err[-300:],
           {k: v for k, v in seen.items() if k != 'requests'}))
    # Everything on the command line: openstacksdk would take a cloud of
    # clouds.yaml, the only one there, and give its password to the token
    # plugin.
    given = Doctor(None, os.path.join(work, 'token'), None)
    token = api.issue_token(api.ADMIN)[0]
    report = os.path.join(work, 'revoked-token.json')
    proc, seen = given.revoked(
        'given', report, '--os-auth-type', 'v3token', '--os-auth-url',
        api.KEYSTONE_URL, '--os-token', token, '--os-project-name',
        api.ADMIN.project, '--os-project-domain-name', 'Default',
        '--os-region-name', api.REGION, *conf)
    check_one_line(results, 'with its token revoked mid-audit, '
                   '--os-auth-type v3token', proc, 'Keystone refused the '
                   'token (HTTP 404', 'revoked')
    results.check(
        'the v3token audit was refused after the revocation, not before',
        seen.get('revoke_status') == 204
        and seen.get('compute_requests', 0) > AFTER
        and seen.get('refused_after_revocation', 0) >= 1
        and not seen.get('answered_with_a_new_token'),
        str({k: v for k, v in seen.items() if k != 'requests'}))


def _keystone_down(cloud, results, admin, conf, audit):
    from tests.integration import scenarios
    scenarios.deploy('keystone', 'stop')
    try:
        check_one_line(results, 'with Keystone down', admin.run(),
                       'cannot reach the cloud')
    finally:
        scenarios.deploy('keystone', 'start')
    proc = admin.run(*conf)
    results.check('doctor after Keystone is started again: audits as before',
                  (proc.returncode, _findings(proc.stdout)) == audit,
                  'exit %d: %s' % (proc.returncode,
                                   proc.stderr.strip()[-300:]))
    try:
        scenarios.check_serves(results, cloud, 'Keystone was stopped and '
                               'started again')
    finally:
        cloud.delete_all()
