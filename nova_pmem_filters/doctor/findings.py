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
"""What the doctor says about a cloud: findings, their codes and texts.

Every finding has a severity, a code, the object it is about, what is wrong
and what to do. Codes are stable: operators filter on them, and
``doc/source/doctor.rst`` lists the same.
"""

import dataclasses
import difflib
import shlex


ERROR = 'error'
WARNING = 'warning'
INFO = 'info'
SEVERITIES = (ERROR, WARNING, INFO)

# Instances listed by name in one finding before "and N more".
MAX_LISTED = 10


# Every code a finding may have, by what it is about; doc/source/doctor.rst
# lists the same.
CODES = (
    # nova.conf
    'nova-conf-not-read', 'filter-not-available', 'filter-not-enabled',
    'filter-unknown', 'weighers-not-configured', 'nova-weighers-dropped',
    'weight-multiplier-not-finite',
    'filter-only-cache-accounting',
    # aggregates
    'invalid-pmem-mode', 'invalid-dram-cache', 'invalid-dram-cache-per-cell',
    'memory-mode-without-cache',
    'dram-cache-without-memory-mode', 'invalid-weight-multiplier',
    'untidy-pmem-mode', 'invalid-kernel-tiering', 'kernel-tiering-ignored',
    # aggregates and flavors
    'misspelt-key',
    # flavors
    'invalid-extra-spec', 'vpmem-modes-conflict', 'near-memory-mismatch',
    'placement-accounting-partial',
    # hosts
    'aggregates-disagree', 'profile-mismatch', 'mode-trait-mismatch',
    'near-memory-inventory-missing', 'near-memory-inventory-mismatch',
    'cache-overcommitted', 'cache-cells-unchecked', 'fleet-host-unknown',
    # the kernel's tiering on cxl_kmem hosts (--fleet), and the flavors
    # whose memory Nova binds there
    'kernel-tiering-off', 'kernel-tiering-half-on', 'far-node-in-dram-tier',
    'kernel-tiering-unknown', 'kernel-tiering-mismatch',
    'bound-flavor-whole-ram',
    # instances with vPMEM
    'vpmem-numa-remote', 'vpmem-numa-unknown', 'vpmem-guest-numa-nodes',
    # observations (--observations DIR)
    'hot-ratio-under-declared', 'working-set-over-near-memory',
    'numa-memory-remote', 'numa-memory-slow-tier',
    'observed-tiering-off', 'tiering-promotion-lags',
    'tiering-direct-demotion', 'hot-pages-on-far-node',
    # reclaim's demotion of the memory Nova binds (--fleet, --observations)
    'kernel-demotes-bound-memory', 'bound-memory-demoted',
)


@dataclasses.dataclass(frozen=True)
class Finding:
    severity: str
    code: str
    object: str
    problem: str
    fix: str

    def __post_init__(self):
        if self.severity not in SEVERITIES or self.code not in CODES:
            raise ValueError('finding %s %s is not one the doctor documents'
                             % (self.severity, self.code))

    def sort_key(self):
        return (SEVERITIES.index(self.severity), self.code, self.object)


def exit_status(findings):
    """0 clean (info only), 1 with warnings, 2 with errors."""
    severities = {f.severity for f in findings}
    if ERROR in severities:
        return 2
    return 1 if WARNING in severities else 0


def rejected(what):
    """What the filters do with hosts whose profile is unknown."""
    return ('PmemCacheFilter rejects %s for every flavor, PmemModeFilter '
            'for every flavor that names modes' % what)


def rejected_in(agg):
    if agg.hosts:
        return rejected('hosts %s' % names(agg.hosts))
    return ('hosts added to it will be rejected (by PmemCacheFilter for '
            'every flavor, by PmemModeFilter for every flavor that names '
            'modes)')


def names(items, limit=MAX_LISTED):
    items = list(items)
    shown = ', '.join(items[:limit])
    if len(items) > limit:
        shown += ' and %d more' % (len(items) - limit)
    return shown


def are(items):
    """``items`` joined with "and", then "is" or "are" by their number."""
    items = list(items)
    return '%s %s' % (' and '.join(items), 'is' if len(items) == 1 else 'are')


def suggest(word, choices, cutoff):
    """The closest of ``choices`` to a misspelt ``word``, or None."""
    match = difflib.get_close_matches(word, choices, n=1, cutoff=cutoff)
    return match[0] if match else None


def command(*words):
    """A shell command line of ``words``, each quoted as the shell needs.

    Fixes are printed to be pasted: a metadata key with a trailing space or
    a value with a shell character must reach the client as it is.
    """
    return ' '.join(shlex.quote(str(w)) for w in words)


def replace_property(noun, obj, old_key, new_key, value):
    """The commands that move ``old_key``'s value to ``new_key`` on ``obj``.

    ``unset`` first: MariaDB, Nova's usual database, compares metadata and
    extra-spec keys ignoring case and trailing spaces, so ``set`` of the
    right key updates the row of the wrong one and a later ``unset`` of the
    wrong key would then delete the value just set.
    """
    return '%s && %s' % (
        command('openstack', noun, 'unset', '--property', old_key, obj),
        command('openstack', noun, 'set', '--property',
                '%s=%s' % (new_key, value), obj))
