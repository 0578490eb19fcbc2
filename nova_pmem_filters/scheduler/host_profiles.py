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
"""A host's profile, read from its aggregates through the core.

``profile.from_metadata`` and reading the option cost more per host than
the filters' own work, and hosts share a few aggregates: profiles are
memoised by the content of what ``from_metadata`` reads (so a metadata
change is seen at once) and, within one request, by the identity of the
host's aggregate objects (:func:`profiles_of`).
"""

from oslo_log import log as logging

from nova_pmem_filters import conf
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters.scheduler import logonce

LOG = logging.getLogger(__name__)
CONF = conf.CONF

# Profiles by what from_metadata() reads of a host's aggregates.
_PROFILES = {}
_PROFILES_MAX = 1000
_KEYS = profile.PROFILE_KEYS
# An aggregate whose pmem values are not all strings: not memoised.
_UNCACHEABLE = object()


def _agg_values(agg):
    """The pmem values of one aggregate: a tuple, None, or _UNCACHEABLE."""
    metadata = agg.metadata
    if not metadata:
        return None
    values = []
    present = False
    for key in _KEYS:
        if key in metadata:
            value = metadata[key]
            if type(value) is not str:
                return _UNCACHEABLE
            present = True
            values.append(value)
        else:
            values.append(None)
    return tuple(values) if present else None


def _profile_key(aggregates, default_mode, agg_values=None):
    """The default mode and the pmem values of a host's aggregates.

    None when they are not memoisable.

    :param agg_values: ``{aggregate: values}`` of this request (keyed by
        the objects, which hash by identity).
    """
    try:
        # The default mode too: which aggregates' values make a profile,
        # with or without it, is from_metadata()'s rule alone.
        key = [default_mode]
        for agg in aggregates or ():
            if agg_values is None:
                values = _agg_values(agg)
            elif agg in agg_values:
                values = agg_values[agg]
            else:
                values = agg_values[agg] = _agg_values(agg)
            if values is None:
                continue
            if values is _UNCACHEABLE:
                return None
            key.append(values)
        return tuple(key)
    except Exception:
        # Let from_metadata() meet the same problem and report it.
        return None


def host_profile(host_state, default_mode=None, agg_values=None):
    """The HostProfile of a host, from its aggregates; never raises."""
    if default_mode is None:
        default_mode = CONF.pmem.default_host_mode
    aggregates = getattr(host_state, 'aggregates', None)
    key = _profile_key(aggregates, default_mode, agg_values)
    result = _PROFILES.get(key) if key is not None else None
    if result is None:
        try:
            result = profile.from_metadata(
                (agg.metadata for agg in aggregates or ()),
                default_mode=default_mode)
        except Exception as exc:
            # Aggregates that are not Nova objects at all; keep serving.
            result = profile.unknown('unreadable aggregates: %s' % exc,
                                     profile.UNREADABLE)
        if key is not None:
            if len(_PROFILES) >= _PROFILES_MAX:
                _PROFILES.clear()
            _PROFILES[key] = result
    if result.mode is None:
        logonce.warn_once(
            LOG, (host_state.host, host_state.nodename, result.problem),
            "Host %(host)s (node %(node)s) has an unknown pmem profile: "
            "%(problem)s. Filters that need its memory mode reject it "
            "until its aggregate metadata is fixed.",
            {'host': host_state.host, 'node': host_state.nodename,
             'problem': result.problem})
    return result


def profiles_of(host_states, by_aggregates=None, agg_values=None,
                default_mode=None):
    """The profiles of ``host_states``, in order.

    :param by_aggregates: ``{aggregates: profile}`` of this request, keyed
        by the tuple of the host's aggregate objects (which hash by
        identity, and which the key keeps alive): within a request an
        aggregate object does not change, and hosts with the same
        aggregates have the same profile.
    :param agg_values: ``{aggregate: values}`` of this request.
    """
    if default_mode is None:
        default_mode = CONF.pmem.default_host_mode
    if by_aggregates is None:
        return [host_profile(hs, default_mode) for hs in host_states]
    result = []
    for host_state in host_states:
        try:
            ids = tuple(host_state.aggregates or ())
            hash(ids)
        except Exception:
            result.append(host_profile(host_state, default_mode))
            continue
        prof = by_aggregates.get(ids)
        if prof is None:
            prof = host_profile(host_state, default_mode, agg_values)
            by_aggregates[ids] = prof
        elif prof.mode is None:
            # Warn (once) about each host of an unknown profile.
            host_profile(host_state, default_mode, agg_values)
        result.append(prof)
    return result
