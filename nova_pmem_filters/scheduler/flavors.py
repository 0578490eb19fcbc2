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
"""A flavor's ``pmem:`` request, with the defaults nova.conf sets."""

from nova_pmem_filters import conf
from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.scheduler import ovo

CONF = conf.CONF

# (the option values, their Defaults): built again when the options change.
_DEFAULTS = (None, None)


def defaults():
    """The core's :class:`extra_specs.Defaults` of ``[pmem]``."""
    global _DEFAULTS
    key = (tuple(CONF.pmem.default_flavor_modes), CONF.pmem.default_hot_ratio)
    if _DEFAULTS[0] != key:
        _DEFAULTS = (key, extra_specs.Defaults.from_options(CONF.pmem))
    return _DEFAULTS[1]


def flavor_request(flavor, flavor_defaults=None):
    """Parse a flavor's ``pmem:`` extra specs with the configured defaults.

    :param flavor_defaults: :func:`defaults`, when the caller has it.

    :returns: (PmemRequest, None) or (None, error message).
    """
    try:
        return extra_specs.request_of(
            ovo.loaded(flavor, 'extra_specs') or {},
            flavor_defaults or defaults())
    except Exception as exc:
        return None, 'unreadable flavor: %s' % exc


def spec_request(spec_obj, flavor_defaults=None):
    """The PmemRequest of a RequestSpec's flavor: (request, error)."""
    try:
        flavor = spec_obj.flavor
    except Exception as exc:
        return None, 'request has no flavor: %s' % exc
    return flavor_request(flavor, flavor_defaults)
