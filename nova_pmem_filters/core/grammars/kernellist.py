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
"""The kernel's list of CPUs or NUMA nodes: ``0-3,8``.

sysfs prints a node's ``cpulist`` and a memory tier's ``nodelist`` with
``%*pbl`` (lib/vsprintf.c, bitmap_list_string): ascending ids, runs of
two or more as ``first-last``, joined by commas. Each grammar that reads
such a file parses it here and fails with its own error class.
"""

import re

_LIST_RE = re.compile(r'[0-9]+(?:-[0-9]+)?(?:,[0-9]+(?:-[0-9]+)?)*')

# The most ids a list may name: the kernel's largest NR_CPUS (8192, with
# CONFIG_MAXSMP). A larger list is not one a kernel prints, and expanding
# it would take memory without bound.
MAX_IDS = 8192


# What a list may be, for the one line that refuses another.
ALLOWED = 'ids and ranges such as 0-3,8, at most %d ids' % MAX_IDS


def parse(text):
    """'0-3,8' -> [0, 1, 2, 3, 8]; '' -> []; None if ``text`` is not a list.

    Not a list: another shape, a range whose end is below its start, or
    more than :data:`MAX_IDS` ids.
    """
    text = text.strip()
    if not text:
        return []
    if len(text) > 8 * MAX_IDS or not _LIST_RE.fullmatch(text):
        return None
    ids = []
    for part in text.split(','):
        low, _sep, high = part.partition('-')
        low, high = int(low), int(high or low)
        if high < low or len(ids) + high - low >= MAX_IDS:
            return None
        ids.extend(range(low, high + 1))
    return ids


def format(ids):
    """[0, 1, 2, 5] -> '0-2,5', as the kernel prints it; [] -> ''."""
    runs = []
    for i in ids:
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ','.join(str(a) if a == b else '%d-%d' % (a, b) for a, b in runs)
