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
"""One warning per problem per scheduler process.

A mislabelled host or an invalid old flavor would otherwise warn on every
request; the first time is a warning, the repeats are debug lines.
"""

# Problems already warned about; cleared when it grows past the limit.
_WARNED = set()
_WARNED_MAX = 10000


def warn_once(log, key, msg, args):
    """``log.warning`` the first time ``key`` is seen, else ``log.debug``."""
    if key in _WARNED:
        log.debug(msg, args)
        return
    if len(_WARNED) >= _WARNED_MAX:
        _WARNED.clear()
    _WARNED.add(key)
    log.warning(msg, args)
