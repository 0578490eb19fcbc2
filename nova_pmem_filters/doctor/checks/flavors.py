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
"""Checks of the flavors' ``pmem:`` extra specs and their Placement request.
"""

import dataclasses

from nova_pmem_filters.core.plans import flavorfix
from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import placement
from nova_pmem_filters.doctor import cloud
from nova_pmem_filters.doctor import findings


PMEM_SPEC_KEYS = tuple(sorted(extra_specs.RULES))


def _spec_lookalike(key):
    """The pmem: key a misspelt extra-spec key stands for, or None."""
    if key.startswith(extra_specs.NAMESPACE + ':'):
        return None
    normal = key.strip().lower()
    for sep in ('_', '.', '-', '='):
        if normal.startswith(extra_specs.NAMESPACE + sep):
            normal = extra_specs.NAMESPACE + ':' + normal[len(sep) + 4:]
            break
    if normal in PMEM_SPEC_KEYS:
        return normal
    if normal.startswith(extra_specs.NAMESPACE):
        return findings.suggest(normal, PMEM_SPEC_KEYS, 0.6)
    return None


def _moved_value(key, value):
    """``value`` if it is valid for ``key``, else None (a placeholder).

    Moved as it is, an invalid value would turn a misspelt key into an
    invalid-extra-spec, and nova-api refuses to set it (microversion 2.86
    and later) after the misspelt key was unset.
    """
    try:
        extra_specs.validate(key, value)
    except extra_specs.InvalidExtraSpec:
        return None
    return value


# What a placeholder stands for when the fix works out the Placement
# request that follows it: pmem:priority asks nothing of Placement (None:
# the default); a near-memory request of the hot MB is right on every kind
# (each reports its near memory), so the modes that admit every kind need
# it wherever a choice of modes does; a ratio changes the amount, which the
# fix then leaves for the operator to work out (NEAR_MEMORY_PLACEHOLDER).
PLACEHOLDER_STAND_INS = {
    extra_specs.PRIORITY_KEY: None,
    extra_specs.MODES_KEY: ','.join(kinds.MODES),
    extra_specs.HOT_RATIO_KEY: '1.0',
}
NEAR_MEMORY_PLACEHOLDER = '<%d MB x the ratio chosen, rounded up>'


def _spec_change(key, value):
    """What the fix of an invalid or misspelt spec writes.

    :returns: (the key it writes, the value moved there or None when the
        operator must choose one).
    """
    if key in extra_specs.RULES:
        return key, None
    right = findings.suggest(key, PMEM_SPEC_KEYS, 0.0)
    return right, _moved_value(right, value)


def _spec_fix(flavor, key, right, value):
    """The commands of the change :func:`_spec_change` returned."""
    shown = '<%s>' % extra_specs.RULES[right][0] if value is None else value
    if key == right:
        return ('openstack flavor set --property %s=%s %s'
                % (key, shown, flavor))
    return findings.replace_property('flavor', flavor, key, right, shown)


def _fixed_specs(specs, changes):
    """The extra specs once every fix of ``changes`` is run.

    A placeholder is its stand-in (:data:`PLACEHOLDER_STAND_INS`).

    :param changes: [(old key, new key, value or None), ...].
    :returns: (the specs, whether the hot ratio is a placeholder).
    """
    fixed = dict(specs)
    open_ratio = False
    for old, new, value in changes:
        fixed.pop(old, None)
        if value is None:
            open_ratio |= new == extra_specs.HOT_RATIO_KEY
            value = PLACEHOLDER_STAND_INS[new]
        if value is not None:
            fixed[new] = value
    return fixed, open_ratio


def _spec_findings(flavor):
    """invalid-extra-spec and misspelt-key; and whether a spec is invalid.

    :returns: (findings, whether a spec is invalid, the changes their
        fixes make: [(old key, new key, value or None)]).
    """
    obj = 'flavor %s' % flavor.name
    specs = flavor.extra_specs
    found = []
    changes = []
    bad = False
    for key in sorted(k for k in specs
                      if k.startswith(extra_specs.NAMESPACE + ':')):
        try:
            extra_specs.validate(key, specs[key])
        except extra_specs.InvalidExtraSpec as exc:
            bad = True
            change = (key,) + _spec_change(key, specs[key])
            found.append(findings.Finding(
                findings.ERROR, 'invalid-extra-spec', obj,
                '%s: the filters reject every host for it (NoValidHost) '
                'and count all RAM of its instances as hot' % exc,
                _spec_fix(flavor.name, *change)))
            changes.append(change)
    for key in sorted(specs):
        lookalike = _spec_lookalike(key)
        if lookalike:
            change = (key, lookalike, _moved_value(lookalike, specs[key]))
            found.append(findings.Finding(
                findings.WARNING, 'misspelt-key', obj,
                'extra spec %r is not read by the filters; it looks '
                'like %s' % (key, lookalike),
                _spec_fix(flavor.name, *change)))
            changes.append(change)
    return found, bad, changes


def _completed(spec_findings, flavor, changes, view, partial):
    """``spec_findings`` whose fixes also make the Placement request right.

    Once its specs are fixed, a flavor may land on tiered hosts (or with
    another hot ratio) and need the near-memory request that
    :func:`_placement_findings` would then ask for: each fix runs that
    change too, so that it leaves no new finding behind.
    """
    fixed, open_ratio = _fixed_specs(flavor.extra_specs, changes)
    request, _error = extra_specs.request_of(fixed, view.config.defaults)
    if request is None or request.conflict:
        return spec_findings
    after = dataclasses.replace(flavor, extra_specs=fixed)
    more = [f.fix for f in _placement_findings(after, request, partial)]
    if open_ratio and (more or placement.requested_near_memory(fixed)
                       is not None):
        # The amount follows the ratio the operator chooses.
        change = flavorfix.near_memory(flavor.name, fixed, flavor.ram_mb,
                                       request.hot_ratio)
        more = [dataclasses.replace(change, set=((
            change.set[0][0], NEAR_MEMORY_PLACEHOLDER % flavor.ram_mb),))
            .command()]
    if not more:
        return spec_findings
    return [dataclasses.replace(f, fix=' && '.join([f.fix] + more))
            for f in spec_findings]


def _placement_findings(flavor, request, partial):
    """near-memory-mismatch, or placement-accounting-partial.

    :param partial: whether other flavors request near memory from
        Placement for the tiered hosts.
    """
    obj = 'flavor %s' % flavor.name
    requested = placement.requested_near_memory(flavor.extra_specs)
    # The request of the hot MB the flavor declares, in the group that
    # asks for near memory (if any).
    fix = flavorfix.near_memory(flavor.name, flavor.extra_specs,
                                flavor.ram_mb, request.hot_ratio)
    if requested is not None:
        expected = placement.instance_near_memory_mb(flavor.ram_mb,
                                                     request.hot_ratio)
        if requested == expected:
            return []
        less = requested < expected
        return [findings.Finding(
            findings.ERROR if less else findings.WARNING,
            'near-memory-mismatch', obj,
            'requests %d MB of %s, but %d MB RAM x hot ratio %s is %d MB: '
            'Placement admits %s instances than the DRAM cache holds' % (
                requested, placement.NEAR_MEMORY_RC, flavor.ram_mb,
                extra_specs.format_hot_ratio(request.hot_ratio), expected,
                'more' if less else 'fewer'),
            fix.command())]
    if partial and kinds.TIERED & request.modes:
        return [findings.Finding(
            findings.WARNING, 'placement-accounting-partial', obj,
            'it may land on Memory-Mode hosts but does not request %s, '
            'while other flavors do: Placement does not see the DRAM '
            'cache its instances use, and admits the other flavors '
            'into it' % placement.NEAR_MEMORY_RC, fix.command())]
    return []


def check(snap, view):
    found = []
    partial = bool(cloud.tiered_hosts(view)) and any(
        placement.requested_near_memory(f.extra_specs) is not None
        for f, _r in cloud.tiered_flavors(snap, view))
    for flavor in snap.flavors:
        spec_findings, bad, changes = _spec_findings(flavor)
        found.extend(_completed(spec_findings, flavor, changes, view,
                                partial))
        if bad:
            continue
        request, _error = view.requests[flavor.name]
        if request.conflict:
            found.append(findings.Finding(
                findings.ERROR, 'vpmem-modes-conflict',
                'flavor %s' % flavor.name,
                '%s: PmemModeFilter rejects every host for it' %
                request.conflict,
                'add app_direct to %s, or remove %s'
                % (extra_specs.MODES_KEY, extra_specs.VPMEM_KEY)))
            continue
        found.extend(_placement_findings(flavor, request, partial))
    return found
