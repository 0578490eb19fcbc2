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
"""A new host kind is one row of the kind table, and nothing else.

The test adds a throw-away kind (``hbm_cache``: HBM as a hardware cache in
front of DRAM, scheduled as itself) to a copy of
``nova_pmem_filters/core/rules/kinds.py``, loads that copy in a process of
its own in place of the real module, and asks every part that lists or
branches on kinds what it makes of the new one: the aggregate metadata,
the extra specs and their API validator, the filters' and weighers'
rules, the ``[pmem]`` options, discovery's outputs, the doctor's and the
planner's tables and charts. No other file is changed, so whatever the new
kind needs elsewhere shows up here as a failure.
"""

import json
import os
import subprocess
import sys

import fixtures
import testtools

from tests.unit import paths

KINDS_PY = os.path.join('nova_pmem_filters', 'core', 'rules', 'kinds.py')
# The row, as a developer would add it to the table.
ROW = '''    Kind('hbm_cache', 'hbm_cache', True, 'HBM cache', 'hbm',
         'HBM is a hardware cache in front of the DRAM.', HARDWARE,
         words='HBM cache', prefix='hbm',
         media=frozenset([DRAM_MEDIUM, 'hbm']),
         guest_memory=(DRAM_MEDIUM,), far_memory=DRAM_MEDIUM),
'''
END_OF_TABLE = ')}\n'

# What the child process runs: the copy in place of kinds, then the parts.
PROBE = r'''
import importlib.util
import json
import re
import sys

spec = importlib.util.spec_from_file_location(
    'nova_pmem_filters.core.rules.kinds', sys.argv[1])
module = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = module
spec.loader.exec_module(module)

from nova_pmem_filters.conf import pmem as pmem_conf
from nova_pmem_filters.core.rules import decide
from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import nearmem
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters.planner import enumeration
from nova_pmem_filters.planner.simulate import charts

NEW = 'hbm_cache'
prof = profile.from_metadata([{profile.MODE_KEY: NEW,
                               profile.DRAM_CACHE_KEY: '64'}])
request = extra_specs.parse({extra_specs.MODES_KEY: NEW,
                             extra_specs.HOT_RATIO_KEY: '0.5'})
dram_only = extra_specs.parse({extra_specs.MODES_KEY: 'dram'})
high = extra_specs.parse({extra_specs.PRIORITY_KEY: 'high'})
low = extra_specs.parse({extra_specs.PRIORITY_KEY: 'low'})
opts = {o.name: o for o in pmem_conf.pmem_opts}


def admits(used_mb, memory_mb):
    used = nearmem.HotRam(total=used_mb)
    return decide.cache_check(prof, 1.0, used, request, memory_mb)[0]


try:
    refused = extra_specs.parse({extra_specs.MODES_KEY: 'hbm-cache'})
    refused = None
except extra_specs.InvalidExtraSpec as exc:
    refused = str(exc)

print(json.dumps({
    'in_table': NEW in kinds.ALL_MODES,
    'flavor_mode': NEW in kinds.FLAVOR_MODES,
    'tiered': NEW in kinds.TIERED,
    'trait': kinds.trait(NEW),
    'profile': [prof.mode, prof.dram_cache_gb, prof.known],
    'mode_passes': decide.mode_passes(request, prof)[0],
    'dram_flavor_passes': decide.mode_passes(dram_only, prof)[0],
    # 64 GB of cache: 65536 MB of hot RAM.
    'cache_admits': [admits(60000, 8192), admits(62000, 8192)],
    'tier_scores': [decide.tier_score(high, prof),
                    decide.tier_score(low, prof)],
    'host_mode_choice': NEW in opts['default_host_mode'].type.choices,
    'flavor_modes_choice': NEW in opts['default_flavor_modes']
    .type.item_type.choices,
    'refused_lists_it': refused is not None and NEW in refused,
    # nova-api's validator of pmem:modes.
    'api_pattern': bool(re.fullmatch(extra_specs.MODES_PATTERN,
                                     'dram,' + NEW)),
    'prefix': enumeration.MODE_PREFIX[NEW],
    'chart_words': charts.MODE_WORDS[NEW],
    'guest_memory_gb': kinds.guest_memory_gb(NEW, {'dram': 512.0,
                                                   'hbm': 64.0}),
}))
'''


class NewKindTestCase(testtools.TestCase):

    def test_a_kind_is_one_row(self):
        with open(paths.of(KINDS_PY), encoding='utf-8') as f:
            source = f.read()
        # The table ends once; the row goes before its end.
        self.assertEqual(1, source.count(END_OF_TABLE))
        copy = source.replace(END_OF_TABLE, ROW + END_OF_TABLE)
        tmp = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(tmp, 'kinds.py')
        with open(path, 'w', encoding='utf-8') as f:
            f.write(copy)
        proc = subprocess.run(
            [sys.executable, '-c', PROBE, path], capture_output=True,
            text=True, cwd=paths.of('.'), timeout=300)
        self.assertEqual(0, proc.returncode, proc.stderr)
        found = json.loads(proc.stdout.splitlines()[-1])
        self.assertEqual({
            'in_table': True,
            'flavor_mode': True,
            'tiered': True,
            'trait': 'CUSTOM_PMEM_MODE_HBM_CACHE',
            'profile': ['hbm_cache', 64.0, True],
            'mode_passes': True,
            'dram_flavor_passes': False,
            'cache_admits': [True, False],
            # Tiered: low priority prefers it, high does not.
            'tier_scores': [0.0, 1.0],
            'host_mode_choice': True,
            'flavor_modes_choice': True,
            'refused_lists_it': True,
            'api_pattern': True,
            'prefix': 'hbm',
            'chart_words': 'HBM cache',
            'guest_memory_gb': 512.0,
        }, found)

    def test_the_probe_sees_the_real_table_without_it(self):
        # The same probe on the real table: the kind is not there, so
        # what the test above finds comes from the row.
        proc = subprocess.run(
            [sys.executable, '-c', PROBE, paths.of(KINDS_PY)],
            capture_output=True, text=True, cwd=paths.of('.'), timeout=300)
        self.assertNotEqual(0, proc.returncode)
        self.assertIn("'hbm_cache'", proc.stderr)
