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
"""nova-pmem-doctor with its token revoked in the middle of the audit.

Runs the doctor in this process, as its console script would, with a hook
on every HTTP request the process sends (``requests.Session.send``, which
keystoneauth's sessions call): once the doctor has had answers to AFTER
requests to the compute API, a token is revoked through Keystone's API
(``DELETE /v3/auth/tokens``, as the admin), before the doctor sends
anything more. Which request the revocation follows is so fixed, not left
to timing. WHICH token:

* ``sent``: the one the AFTER-th request carried. With password auth it
  is the token Keystone issued for the password;
* ``given``: the one given with ``--os-token``. keystoneauth's token
  plugin sends none of it to Nova: it exchanges it for a token of its own
  first. Keystone revokes a token and every token exchanged from it (the
  audit chain), so the one in use goes too, and so does the doctor's way
  to another.

    python -m tests.integration.revoking AFTER WHICH REPORT DOCTOR-ARGS...

The doctor's exit status is this process's; its stdout and stderr are
untouched. REPORT gets, as JSON, every compute request (status, token
number: 1 for the first token seen, 2 for the next...), the revoked token's
number, Keystone's answer to the revocation and whether a request after it
was answered with a token the doctor got afterwards.
"""

import json
import sys
import urllib.error
import urllib.request

import requests

from nova_pmem_filters.doctor import cli
from nova_pmem_filters import fileutil
from tests.integration import client as api

COMPUTE = api.COMPUTE_URL.rsplit('/', 1)[0] + '/'


def revoke(token, admin_token):
    """Keystone's status for revoking ``token`` (204 when it did)."""
    request = urllib.request.Request(
        api.KEYSTONE_URL + '/auth/tokens', method='DELETE',
        headers={'X-Auth-Token': admin_token, 'X-Subject-Token': token})
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


class Revoker(object):
    """The hook: counts compute requests, revokes after the AFTER-th."""

    def __init__(self, after, admin_token, given=None):
        """Revoke ``given``, or the token sent, after ``after`` requests."""
        self.after = after
        self.admin_token = admin_token
        self.given = given
        self.tokens = []
        self.requests = []
        self.revoked = None
        self.revoke_status = None

    def number(self, token):
        if token not in self.tokens:
            self.tokens.append(token)
        return self.tokens.index(token) + 1

    def seen(self, request, response):
        if not request.url.startswith(COMPUTE):
            return
        token = request.headers.get('X-Auth-Token')
        self.requests.append({
            'method': request.method, 'url': request.url,
            'status': response.status_code,
            'token': self.number(token) if token else None,
            'after_revocation': self.revoked is not None})
        if len(self.requests) == self.after and token:
            self.revoked = self.number(token)
            self.revoke_status = revoke(self.given or token,
                                        self.admin_token)

    def report(self):
        later = [r for r in self.requests if r['after_revocation']]
        return {
            'after': self.after,
            'revoked': 'given' if self.given else 'sent',
            'compute_requests': len(self.requests),
            'revoked_token': self.revoked,
            'revoke_status': self.revoke_status,
            'refused_after_revocation': sum(r['status'] == 401
                                            for r in later),
            'answered_with_a_new_token': any(
                r['status'] < 400 and r['token'] != self.revoked
                for r in later),
            'requests': self.requests,
        }


def main(argv):
    after, which, report = int(argv[1]), argv[2], argv[3]
    doctor_argv = argv[4:]
    given = None
    if which == 'given':
        given = doctor_argv[doctor_argv.index('--os-token') + 1]
    elif which != 'sent':
        return 'WHICH must be sent or given, not %r' % which
    # The admin's token, before the hook is in place.
    revoker = Revoker(after, api.issue_token(api.ADMIN)[0], given)
    send = requests.Session.send

    def hooked(session, request, **kwargs):
        response = send(session, request, **kwargs)
        revoker.seen(request, response)
        return response

    requests.Session.send = hooked
    try:
        status = cli.main(doctor_argv)
    finally:
        requests.Session.send = send
        fileutil.write_atomic(report, json.dumps(revoker.report(),
                                                 indent=2) + '\n')
    return status


if __name__ == '__main__':
    sys.exit(main(sys.argv))
