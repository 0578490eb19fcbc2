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
"""The ``pmem:`` flavor extra specs: one parser for every consumer.

The scheduler filters and weighers, the nova-api validators, the doctor,
the simulator and the planner all read flavor extra specs through
:func:`parse` (or :func:`request_of`, which never raises), with the same
:class:`Defaults` for what a flavor leaves out. The value grammar lives here
as regular expressions, and both the parser and the API validators are built
from them, so what the API accepts is exactly what the scheduler
understands.

This module imports nothing from Nova.
"""

import dataclasses
import decimal
import re

from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import nearmem

NAMESPACE = 'pmem'

MODES_KEY = 'pmem:modes'
PRIORITY_KEY = 'pmem:priority'
HOT_RATIO_KEY = 'pmem:hot_ratio'

# Nova's own vPMEM extra spec; a flavor with it needs an App Direct host.
VPMEM_KEY = 'hw:pmem'
# Nova's own extra spec for a guest NUMA topology of N cells.
NUMA_NODES_KEY = 'hw:numa_nodes'

PRIORITY_HIGH = 'high'
PRIORITY_NORMAL = 'normal'
PRIORITY_LOW = 'low'
PRIORITIES = (PRIORITY_HIGH, PRIORITY_NORMAL, PRIORITY_LOW)

_MODE_ALTERNATION = '|'.join(kinds.FLAVOR_MODES)

# A comma list of modes; blanks around the commas are allowed.
MODES_PATTERN = (r'\s*(?:%(m)s)\s*(?:,\s*(?:%(m)s)\s*)*'
                 % {'m': _MODE_ALTERNATION})

# A decimal number r with 0 < r <= 1, written without exponent: "1", "1.0",
# "0.25", ".5". Kept to plain decimals so that the value an operator reads in
# `openstack flavor show` is the value the scheduler uses.
HOT_RATIO_PATTERN = r'0*1(?:\.0*)?|0*\.[0-9]*[1-9][0-9]*'

_MODES_RE = re.compile(MODES_PATTERN)
_HOT_RATIO_RE = re.compile(HOT_RATIO_PATTERN)

MODES_DESCRIPTION = (
    'Comma-separated list of host memory modes this flavor may run on: '
    '%s. A host in none of them is rejected by PmemModeFilter. CXL hosts '
    'pass as the mode they behave as: cxl_flat and cxl_kmem as memory_mode, '
    'cxl_devdax as dram; a CXL kind named in the list admits exactly the '
    'hosts of that kind. Defaults to [pmem] default_flavor_modes.'
    % ', '.join(kinds.FLAVOR_MODES))
PRIORITY_DESCRIPTION = (
    'Memory-tier priority of the flavor: high prefers DRAM-backed hosts '
    '(dram, app_direct, cxl_devdax), low prefers tiered hosts '
    '(memory_mode, cxl_flat, cxl_kmem), normal has no preference. Used by '
    'PmemTierWeigher. Defaults to normal.')
HOT_RATIO_DESCRIPTION = (
    'Share of the flavor RAM that is hot (0 < ratio <= 1, plain decimal). '
    'On a memory_mode host, PmemCacheFilter keeps the hot RAM of all '
    'instances within the DRAM cache. Defaults to [pmem] default_hot_ratio.')

# key -> (human description of the allowed values, regex the value matches)
RULES = {
    MODES_KEY: ('a comma-separated list of %s'
                % ', '.join(kinds.FLAVOR_MODES),
                MODES_PATTERN),
    PRIORITY_KEY: ('one of %s' % ', '.join(PRIORITIES),
                   '|'.join(PRIORITIES)),
    HOT_RATIO_KEY: ('a decimal number greater than 0 and at most 1',
                    HOT_RATIO_PATTERN),
}


# Share of a flavor's RAM counted as hot when it has no pmem:hot_ratio: the
# default of [pmem] default_hot_ratio, and what the planner plans with (and
# nova-config writes) for a workload that gives no hot ratio. About half of
# cloud VMs never touch half of the memory they rent.
DEFAULT_HOT_RATIO = 0.5


@dataclasses.dataclass(frozen=True)
class Defaults:
    """What a flavor gets for the ``pmem:`` keys it leaves out.

    ``[pmem] default_flavor_modes`` and ``default_hot_ratio`` in the
    scheduler; the same values everywhere else that must decide as it does.
    """

    modes: frozenset = frozenset(kinds.MODES)
    hot_ratio: float = DEFAULT_HOT_RATIO

    def __post_init__(self):
        object.__setattr__(self, 'modes', frozenset(self.modes))
        object.__setattr__(self, 'hot_ratio', float(self.hot_ratio))

    @classmethod
    def from_options(cls, options):
        """The Defaults of ``[pmem]`` option values.

        :param options: anything with ``default_flavor_modes`` and
            ``default_hot_ratio`` (the ``[pmem]`` group, or a record of it).
        """
        return cls(modes=options.default_flavor_modes,
                   hot_ratio=options.default_hot_ratio)


DEFAULTS = Defaults()


class InvalidExtraSpec(ValueError):
    """A ``pmem:`` extra spec whose value or name is not allowed."""

    def __init__(self, key, value, allowed):
        self.key = key
        self.value = value
        self.allowed = allowed
        super().__init__(
            "extra spec '%s' has value '%s', expected %s"
            % (key, value, allowed))


# Every kind passes as one of these: a flavor allowing all of them allows
# every host.
_ALL_MODES = frozenset(kinds.MODES)


@dataclasses.dataclass(frozen=True)
class PmemRequest:
    """What a flavor asks of the memory tiers, parsed from its extra specs."""

    # Modes the flavor may run on; empty when the specs contradict each other.
    modes: frozenset
    priority: str
    hot_ratio: float
    # Labels from Nova's hw:pmem; non-empty means vPMEM namespaces are needed.
    vpmem_labels: tuple = ()
    # Why ``modes`` is empty, for the log line of PmemModeFilter.
    conflict: str = None

    def allows(self, mode):
        """Whether a host of kind ``mode`` passes the flavor's modes.

        A CXL host passes as the mode it behaves as
        (:func:`nova_pmem_filters.core.rules.kinds.scheduled_as`), or by its
        own name (:func:`nova_pmem_filters.core.rules.kinds.admitted_by`).
        """
        return not kinds.admitted_by(mode).isdisjoint(self.modes)

    @property
    def constrains_modes(self):
        return not _ALL_MODES <= self.modes

    def hot_mb(self, memory_mb):
        """Hot RAM in MB of an instance of ``memory_mb`` with this request."""
        return nearmem.hot_mb(memory_mb, self.hot_ratio)


def _match(key, value):
    allowed, pattern = RULES[key]
    if not isinstance(value, str) or not re.fullmatch(pattern, value):
        raise InvalidExtraSpec(key, value, allowed)
    return value


def parse_modes(value):
    """Parse a ``pmem:modes`` value into a frozenset of modes."""
    _match(MODES_KEY, value)
    return frozenset(m.strip() for m in value.split(','))


def parse_hot_ratio(value):
    """Parse a ``pmem:hot_ratio`` value into a float in (0, 1]."""
    ratio = float(_match(HOT_RATIO_KEY, value))
    if ratio <= 0.0:
        # Only reachable past Nova's 255-character limit on values, where
        # enough leading zeros underflow a double.
        raise InvalidExtraSpec(HOT_RATIO_KEY, value, RULES[HOT_RATIO_KEY][0])
    return ratio


def format_hot_ratio(ratio):
    """A hot ratio as the text of ``pmem:hot_ratio``: the one way to write it.

    The shortest decimal that reads back as the same float (``repr``'s
    digits: ``0.25``, ``1.0``), without an exponent (``1e-05`` is
    ``0.00001``: the grammar has none), so that :func:`parse_hot_ratio` of
    the text is ``ratio``. Every writer of the extra spec (the doctor's
    fixes, ``hot-ratios``, nova-config, the sweep) writes it with this.

    :raises InvalidExtraSpec: for a ratio that is not above 0 and at most 1.
    """
    try:
        value = float(ratio)
    except (TypeError, ValueError):
        value = float('nan')
    if isinstance(ratio, bool) or not 0.0 < value <= 1.0:
        raise InvalidExtraSpec(HOT_RATIO_KEY, ratio, RULES[HOT_RATIO_KEY][0])
    return plain_decimal(value)


def plain_decimal(value):
    """A float as the shortest decimal that reads back as it, no exponent.

    ``repr(0.00001)`` is ``1e-05``, which the grammar of the extra specs
    (no exponents) refuses; this is ``0.00001``.
    """
    return format(decimal.Decimal(repr(float(value))), 'f')


def validate(key, value):
    """Check one ``pmem:`` extra spec; raise InvalidExtraSpec if it is bad.

    Unknown keys in the ``pmem:`` namespace are invalid too, so that a typo
    such as ``pmem:hotratio`` is refused instead of silently ignored.
    """
    if key not in RULES:
        raise InvalidExtraSpec(
            key, value, 'one of the keys %s' % ', '.join(sorted(RULES)))
    _match(key, value)


def vpmem_labels(extra_specs):
    """The labels of Nova's ``hw:pmem`` extra spec, in order."""
    raw = extra_specs.get(VPMEM_KEY)
    if not isinstance(raw, str):
        return ()
    return tuple(label.strip() for label in raw.split(',') if label.strip())


def parse(extra_specs, defaults=DEFAULTS):
    """Parse the ``pmem:`` extra specs of one flavor.

    :param extra_specs: the flavor's extra specs, a mapping of str to str.
    :param defaults: the :class:`Defaults` of the keys it leaves out.
    :returns: a :class:`PmemRequest`.
    :raises InvalidExtraSpec: naming the first bad key, its value and what is
        allowed. Keys are checked in sorted order so the message is stable.
    """
    extra_specs = extra_specs or {}
    for key in sorted(k for k in extra_specs
                      if isinstance(k, str)
                      and k.startswith(NAMESPACE + ':')):
        validate(key, extra_specs[key])

    if MODES_KEY in extra_specs:
        modes = parse_modes(extra_specs[MODES_KEY])
    else:
        modes = defaults.modes
    priority = extra_specs.get(PRIORITY_KEY, PRIORITY_NORMAL)
    if HOT_RATIO_KEY in extra_specs:
        hot_ratio = parse_hot_ratio(extra_specs[HOT_RATIO_KEY])
    else:
        hot_ratio = defaults.hot_ratio

    labels = vpmem_labels(extra_specs)
    conflict = None
    if labels:
        # vPMEM namespaces exist only on the kinds that offer them (App
        # Direct hosts).
        offering = frozenset(modes) & kinds.NAMESPACE_KINDS
        if offering:
            modes = offering
        else:
            conflict = ("%s=%s needs an %s host but %s allows only %s"
                        % (VPMEM_KEY, extra_specs[VPMEM_KEY],
                           ' or '.join(sorted(kinds.NAMESPACE_KINDS)),
                           MODES_KEY if MODES_KEY in extra_specs
                           else '[pmem] default_flavor_modes',
                           ','.join(sorted(modes))))
            modes = frozenset()
    return PmemRequest(modes=modes, priority=priority, hot_ratio=hot_ratio,
                       vpmem_labels=labels, conflict=conflict)


def request_of(extra_specs, defaults=DEFAULTS):
    """:func:`parse` without raising.

    :returns: ``(PmemRequest, None)`` or ``(None, why the specs are
        invalid)``.
    """
    try:
        return parse(extra_specs, defaults), None
    except InvalidExtraSpec as exc:
        return None, str(exc)


def counted_hot_mb(memory_mb, request):
    """Hot MB an instance of ``memory_mb`` counts against near memory.

    A flavor whose specs do not parse (an old flavor the API would now
    refuse) counts all its RAM as hot: the bound must hold even then.

    :param request: the flavor's PmemRequest, None when it does not parse.
    """
    if request is None:
        return float(memory_mb)
    return request.hot_mb(memory_mb)
