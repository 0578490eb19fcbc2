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
"""The flavor changes the doctor and the planner print.

The doctor's fixes (``hot-ratio-under-declared``, ``near-memory-mismatch``,
``placement-accounting-partial``) and the planner's ``hot-ratios`` all tell
the operator to run ``openstack flavor set --property pmem:hot_ratio=...``
and, for a flavor accounted in Placement, to request the hot MB of that
ratio. One function builds each change, so that they write the same text:

* the ratio as :func:`extra_specs.format_hot_ratio` writes it;
* the near-memory request in the request group that already asks for it
  (``resources1:CUSTOM_NEAR_MEMORY_MB``, ``resources_G:...``): an
  unnumbered key beside it would be a second request, summed with the
  first; other groups that ask for it too are unset.

And :func:`modes_without`, which keeps a flavor off the hosts of one kind
(the doctor's ``bound-flavor-whole-ram``): the ``pmem:modes`` that admit
every other kind the flavor is admitted to, as the kinds table says.

This module imports nothing from Nova.
"""

import dataclasses
import shlex

from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import placement


@dataclasses.dataclass(frozen=True)
class FlavorChange:
    """Extra specs to unset, then to set, on one flavor."""

    flavor: str
    # ((key, value), ...), in the order written.
    set: tuple = ()
    # Keys, removed first.
    unset: tuple = ()

    def argvs(self):
        """The ``openstack`` commands, as argument lists."""
        found = []
        if self.unset:
            found.append(('openstack', 'flavor', 'unset')
                         + _properties(self.unset) + (self.flavor,))
        if self.set:
            found.append(('openstack', 'flavor', 'set')
                         + _properties('%s=%s' % kv for kv in self.set)
                         + (self.flavor,))
        return found

    def command(self):
        """One shell line (``unset && set``), each word quoted for a shell.

        Fixes are printed to be pasted: a flavor name with a blank or a
        shell character must reach the client as it is.
        """
        return ' && '.join(' '.join(shlex.quote(str(w)) for w in argv)
                           for argv in self.argvs())

    def apply(self, specs):
        """``specs`` (a flavor's extra specs) once the change is made."""
        found = {k: v for k, v in (specs or {}).items()
                 if k not in self.unset}
        found.update(self.set)
        return found


def _properties(words):
    return tuple(w for word in words for w in ('--property', word))


def near_memory(flavor, specs, memory_mb, hot_ratio):
    """Request the hot MB of ``hot_ratio`` of ``CUSTOM_NEAR_MEMORY_MB``.

    In the first request group of ``specs`` that names it (sorted, as
    :func:`placement.near_memory_keys` lists them), else unnumbered; the
    other groups that name it are unset.

    :param flavor: the flavor's name.
    :param specs: its extra specs.
    :param memory_mb: its RAM.
    """
    keys = (placement.near_memory_keys(specs)
            or [placement.NEAR_MEMORY_KEY])
    amount = placement.instance_near_memory_mb(memory_mb, hot_ratio)
    return FlavorChange(flavor=flavor, set=((keys[0], str(amount)),),
                        unset=tuple(keys[1:]))


def hot_ratio(flavor, specs, ratio, memory_mb=None, accounted=None):
    """Declare ``ratio`` as the flavor's ``pmem:hot_ratio``.

    A flavor accounted in Placement also requests the hot MB of the new
    ratio (:func:`near_memory`), so that ``near-memory-mismatch`` follows
    the fix.

    :param specs: the flavor's extra specs (None: it has none).
    :param memory_mb: its RAM; None when unknown (only the ratio is set).
    :param accounted: whether its near memory is requested from
        Placement; None: whether ``specs`` request it.
    """
    change = FlavorChange(flavor=flavor, set=((
        extra_specs.HOT_RATIO_KEY, extra_specs.format_hot_ratio(ratio)),))
    if accounted is None:
        accounted = placement.requested_near_memory(specs) is not None
    if not accounted or memory_mb is None:
        return change
    near = near_memory(flavor, specs, memory_mb, ratio)
    return FlavorChange(flavor=flavor, set=change.set + near.set,
                        unset=near.unset)


def _admits(value):
    """The kinds a ``pmem:modes`` value admits (:func:`kinds.admitted_by`)."""
    return frozenset(k for k in kinds.ALL_MODES
                     if value in kinds.admitted_by(k))


def modes_without(flavor, request, kind):
    """Keep a flavor off the hosts of ``kind``, and on as many others.

    A mode admits every kind scheduled as it (``memory_mode`` admits
    ``cxl_flat`` and ``cxl_kmem``), a CXL kind's name admits exactly that
    kind: the values are those whose kinds the flavor is admitted to, but
    for ``kind``, the modes first and a CXL kind's name only where no mode
    chosen admits it.

    :param request: the flavor's :class:`extra_specs.PmemRequest`.
    :returns: (:class:`FlavorChange` setting ``pmem:modes``, or None when
        the flavor is admitted to no other kind; the kinds it is admitted
        to now that no value can keep without ``kind``, sorted as the
        kinds table).
    """
    keep = frozenset(k for k in kinds.ALL_MODES
                     if k != kind and request.allows(k))
    values = []
    covered = set()
    for value in kinds.FLAVOR_MODES:
        admits = _admits(value)
        if admits and admits <= keep and not admits <= covered:
            values.append(value)
            covered |= admits
    lost = tuple(k for k in kinds.ALL_MODES if k in keep - covered)
    if not values:
        return None, lost
    return FlavorChange(flavor=flavor, set=((
        extra_specs.MODES_KEY, ','.join(values)),)), lost
