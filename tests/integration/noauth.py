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
"""Test-only stand-in for keystonemiddleware in nova-api's paste pipeline.

Nova 34 has no ``noauth2``. This filter takes the token ``user:project``
(``admin:admin`` for an admin) and sets the identity headers that
keystonemiddleware's auth_token would, so that Nova's own
``keystonecontext`` filter builds the request context as in production.
Never put it in front of a reachable API.
"""

import webob.dec
import webob.exc


ADMIN_ROLES = 'admin,member,reader'
MEMBER_ROLES = 'member,reader'


class TokenAsIdentity(object):
    """Turn ``X-Auth-Token: user:project`` into keystone identity headers."""

    def __init__(self, application):
        self.application = application

    @webob.dec.wsgify
    def __call__(self, req):
        token = req.headers.get('X-Auth-Token')
        if not token:
            return webob.exc.HTTPUnauthorized()
        user_id, _sep, project_id = token.partition(':')
        project_id = project_id or user_id
        for header in ('X-User-Id', 'X-User', 'X-Project-Id', 'X-Tenant-Id',
                       'X-Roles', 'X-Identity-Status', 'X-Service-Catalog'):
            req.headers.pop(header, None)
        req.headers['X-User-Id'] = user_id
        req.headers['X-User-Name'] = user_id
        req.headers['X-Project-Id'] = project_id
        req.headers['X-Project-Name'] = project_id
        req.headers['X-Roles'] = (ADMIN_ROLES if user_id == 'admin'
                                  else MEMBER_ROLES)
        req.headers['X-Identity-Status'] = 'Confirmed'
        return self.application


def filter_factory(global_conf, **local_conf):
    def _filter(app):
        return TokenAsIdentity(app)
    return _filter
