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
"""Validators for ``pmem`` namespaced extra specs.

Registered on the ``nova.api.extra_spec_validators`` entry point, so nova-api
refuses bad ``pmem:`` extra specs with HTTP 400 at microversion 2.86 and
later. Every validator delegates to
:func:`nova_pmem_filters.core.rules.extra_specs. validate`, the check the
scheduler applies, so the API accepts exactly what the filters understand. The
``value`` dictionaries describe the same rules for Nova's generated extra-spec
documentation.
"""

import dataclasses

from nova.api.validation.extra_specs import base
from nova import exception

from nova_pmem_filters.core.rules import extra_specs


@dataclasses.dataclass
class PmemExtraSpecValidator(base.ExtraSpecValidator):
    """An ExtraSpecValidator whose message names key, value and rule."""

    def validate(self, name, value):
        try:
            extra_specs.validate(name, value)
        except extra_specs.InvalidExtraSpec as exc:
            raise exception.ValidationError(
                "Validation failed; %s." % exc)


EXTRA_SPEC_VALIDATORS = [
    PmemExtraSpecValidator(
        name=extra_specs.MODES_KEY,
        description=extra_specs.MODES_DESCRIPTION,
        value={'type': str, 'pattern': extra_specs.MODES_PATTERN},
    ),
    PmemExtraSpecValidator(
        name=extra_specs.PRIORITY_KEY,
        description=extra_specs.PRIORITY_DESCRIPTION,
        value={'type': str, 'enum': list(extra_specs.PRIORITIES)},
    ),
    PmemExtraSpecValidator(
        name=extra_specs.HOT_RATIO_KEY,
        description=extra_specs.HOT_RATIO_DESCRIPTION,
        value={'type': str, 'pattern': extra_specs.HOT_RATIO_PATTERN},
    ),
    # Nova looks up exact names first, so this only sees keys of the
    # namespace that are none of the above, and refuses them with the list
    # of valid keys instead of Nova's generic message.
    PmemExtraSpecValidator(
        name='pmem:{key}',
        description='Any other key in the pmem namespace is refused.',
        parameters=[{'name': 'key', 'pattern': r'.*',
                     'description': 'An unknown pmem key.'}],
        value={'type': str},
    ),
]


def register():
    return EXTRA_SPEC_VALIDATORS
