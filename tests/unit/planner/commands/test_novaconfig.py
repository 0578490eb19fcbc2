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
"""nova-config and the forms of its rows that run as printed.

The script itself is applied to a real multi-process Nova by the
integration suite (``tests/integration/operator.py``,
``scenario_nova_config``): created once, unchanged the second time.
"""

import json
import os
import shlex
import stat
import subprocess
import textwrap

import fixtures
from nova.compute import provider_config
from oslo_config import cfg
import testtools
import yaml

from nova_pmem_filters.core.formats import scenario_sections as sec
from nova_pmem_filters.core.rules import classes
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters.planner import admission
from nova_pmem_filters.planner import model
from nova_pmem_filters.planner import realise
from nova_pmem_filters.planner import scenario
from tests.unit import clitools

NOVA_ENABLED = ['ComputeFilter', 'ComputeCapabilitiesFilter',
                'ImagePropertiesFilter', 'ServerGroupAntiAffinityFilter',
                'ServerGroupAffinityFilter']


def read_conf(path, opts):
    """What oslo.config reads from ``path``: {(group, name): value}."""
    conf = cfg.ConfigOpts()
    for group, opt in opts:
        conf.register_opt(opt, group=group)
    conf([], default_config_files=[path], default_config_dirs=[])
    return {(group, opt.dest): getattr(
        conf[group] if group else conf, opt.dest) for group, opt in opts}


SCHEDULER_OPTS = [
    ('filter_scheduler', cfg.MultiStrOpt('available_filters')),
    ('filter_scheduler', cfg.ListOpt('enabled_filters')),
    ('filter_scheduler', cfg.ListOpt('weight_classes')),
    ('pmem', cfg.FloatOpt('cache_overcommit_ratio')),
]
COMPUTE_OPTS = [
    (None, cfg.IntOpt('reserved_host_memory_mb')),
    (None, cfg.FloatOpt('ram_allocation_ratio')),
    (None, cfg.FloatOpt('cpu_allocation_ratio')),
]


def table_rows(table):
    """The rows of a cliff table, each cell a list of its lines.

    A row's first cell is never empty: a line whose first cell is empty
    continues the row above (a wrapped cell).
    """
    rows = []
    for line in table.splitlines()[3:]:
        if not line.startswith('|'):
            continue
        cells = [c.strip() for c in line.strip('|').split('|')]
        if cells[0]:
            rows.append([[c] for c in cells])
        else:
            for lines, cell in zip(rows[-1], cells):
                if cell:
                    lines.append(cell)
    return rows


class NovaConfigTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def run_cli(self, *argv):
        return clitools.run_cli(self, argv)

    def ok(self, *argv):
        status, out, err = self.run_cli(*argv)
        self.assertEqual(0, status, err)
        return out

    def rows(self, *argv):
        return json.loads(self.ok('nova-config', '-f', 'json', *argv))

    def test_reserve_is_what_the_plan_leaves_the_host(self):
        # 0.9 of visible memory for VMs (the field's rule): the host keeps
        # the other 10%, and the ratio is flavor RAM / RAM really used.
        scen = scenario.load(None)
        for name, config in scen.configs.items():
            node = model.node(config, scen.policies)
            visible_mb = node.visible_memory_gb * profile.MB_PER_GB
            agg = realise.aggregate_name(name)
            got = {r['key']: r['value'] for r in self.rows()
                   if r['target'] == 'nova.conf of the hosts in %s' % agg}
            self.assertEqual(str(round(visible_mb * 0.1)),
                             got['[DEFAULT] reserved_host_memory_mb'])
            self.assertEqual('1.3333', got['[DEFAULT] ram_allocation_ratio'])

    def test_reserve_keeps_host_reserve_and_cap(self):
        policies = sec.resolved(sec.Policies(memory_cap=0.8,
                                             host_reserve_gb=16))
        scen = scenario.load(None)
        node = model.node(scen.configs['dram-384'], policies)
        # 16 GB reserved, and 20% of the other 368 GB.
        self.assertEqual(round(16 * 1024 + 0.2 * 368 * 1024),
                         admission.host_reserve_mb(node, policies))
        # Cells do not subtract the reserve: the cap goes into the ratio.
        self.assertEqual(16 * 1024, admission.host_reserve_mb(
            node, policies, cells=True))
        # A cap of 1 or more leaves only the reserve.
        self.assertEqual(16 * 1024, admission.host_reserve_mb(
            node, sec.resolved(sec.Policies(memory_cap=1.2,
                                            host_reserve_gb=16))))

    def test_table_leaves_out_the_command_column(self):
        out = self.ok('nova-config')
        header = out.splitlines()[1]
        self.assertNotIn('command', header)
        self.assertIn('value', header)
        self.assertIn('command', self.ok('nova-config', '--long'))
        self.assertEqual(list(realise.COLUMNS), list(self.rows()[0]))

    def test_no_placeholder(self):
        for row in self.rows():
            self.assertNotIn('<', row['command'])
        enabled = [r for r in self.rows()
                   if r['key'] == '[filter_scheduler] enabled_filters'][0]
        self.assertEqual(
            '[filter_scheduler] enabled_filters = %s'
            % ','.join(NOVA_ENABLED + list(classes.FILTERS)),
            enabled['command'])

    def test_every_nova_conf_value_is_the_value_to_set(self):
        # The table's value of a list option is the whole list to set,
        # Nova's own classes included, as its nova.conf line has it; a
        # multi-valued option has a row per line.
        for argv in ((), ('--placement-accounting',),
                     ('--scenario', 'cxl-cost-matched')):
            for row in self.rows(*argv):
                if row['scope'] in ('scheduler', 'compute'):
                    self.assertEqual('%s = %s' % (row['key'], row['value']),
                                     row['command'])
        got = {}
        for row in self.rows():
            got.setdefault(row['key'], []).append(row['value'])
        self.assertEqual([','.join(NOVA_ENABLED + list(classes.FILTERS))],
                         got['[filter_scheduler] enabled_filters'])
        self.assertEqual(['nova.scheduler.filters.all_filters',
                          classes.ALL_FILTERS],
                         got['[filter_scheduler] available_filters'])
        self.assertEqual(['nova.scheduler.weights.all_weighers,'
                          + classes.ALL_WEIGHERS],
                         got['[filter_scheduler] weight_classes'])

    def test_table_shows_the_whole_list(self):
        # A long value wraps after its commas: its lines joined are the
        # value to set.
        table = self.ok('nova-config')
        got = {}
        for scope, target, key, value in table_rows(table):
            got.setdefault(' '.join(key), []).append(''.join(value))
        self.assertEqual([','.join(NOVA_ENABLED + list(classes.FILTERS))],
                         got['[filter_scheduler] enabled_filters'])
        self.assertEqual(['nova.scheduler.filters.all_filters',
                          classes.ALL_FILTERS],
                         got['[filter_scheduler] available_filters'])

    def test_script_has_the_rows(self):
        out = self.ok('nova-config', 'script', '--placement-accounting')
        self.assertTrue(out.startswith('#!/bin/sh\n'))
        self.assertEqual(0, subprocess.run(['sh', '-n', '-c', out]
                                           ).returncode)
        calls = [shlex.split(line) for line in out.splitlines()
                 if line.startswith(('aggregate ', 'flavor '))]
        rows = self.rows('--placement-accounting')
        aggs = {r['target']: {} for r in rows if r['scope'] == 'aggregate'}
        for r in rows:
            if r['scope'] == 'aggregate' and r['key'] != 'create':
                aggs[r['target']][r['key']] = r['value']
        flavors = {}
        for r in rows:
            if r['scope'] != 'flavor':
                continue
            entry = flavors.setdefault(r['target'], [None, {}])
            if r['key'] == 'create':
                create = shlex.split(r['command'])
                entry[0] = [create[create.index('--vcpus') + 1],
                            create[create.index('--ram') + 1],
                            create[create.index('--disk') + 1]]
            else:
                entry[1][r['key']] = r['value']
        self.assertEqual(
            sorted([['aggregate', name] + ['%s=%s' % kv for kv in
                                           sorted(meta.items())]
                    for name, meta in aggs.items()]
                   + [['flavor', name] + size + ['%s=%s' % kv for kv in
                                                 sorted(specs.items())]
                      for name, (size, specs) in flavors.items()]),
            sorted(calls))

    def test_script_quotes_names(self):
        path = clitools.dram_scenario(self.tmp, 's', textwrap.dedent('''\
            web: {vcpus: 2, ram_gb: 8, used_gb: 6,
                  flavor: "web $(touch pwned) 'x'"}
            '''))
        out = self.ok('nova-config', 'script', '--scenario', path)
        line = [ln for ln in out.splitlines() if ln.startswith('flavor ')][0]
        self.assertEqual("web $(touch pwned) 'x'", shlex.split(line)[1])

    def test_script_output_file(self):
        path = os.path.join(self.tmp, 'plan.sh')
        self.assertEqual('', self.ok('nova-config', 'script', '-o', path))
        self.assertEqual(0o755, stat.S_IMODE(os.stat(path).st_mode))
        with open(path) as f:
            self.assertIn('nova-config script', f.read())

    def test_nova_conf_scheduler_as_oslo_reads_it(self):
        path = os.path.join(self.tmp, 'pmem.conf')
        with open(path, 'w') as f:
            f.write(self.ok('nova-config', 'nova-conf'))
        got = read_conf(path, SCHEDULER_OPTS)
        self.assertEqual(['nova.scheduler.filters.all_filters',
                          classes.ALL_FILTERS],
                         got[('filter_scheduler', 'available_filters')])
        self.assertEqual(NOVA_ENABLED + list(classes.FILTERS),
                         got[('filter_scheduler', 'enabled_filters')])
        self.assertEqual(['nova.scheduler.weights.all_weighers',
                          classes.ALL_WEIGHERS],
                         got[('filter_scheduler', 'weight_classes')])
        self.assertEqual(1.0, got[('pmem', 'cache_overcommit_ratio')])

    def test_nova_conf_compute_equals_rows(self):
        rows = self.rows()
        for agg in ('pmem-dram-384', 'pmem-mm-192-512'):
            path = os.path.join(self.tmp, '%s.conf' % agg)
            with open(path, 'w') as f:
                f.write(self.ok('nova-config', 'nova-conf', '--role',
                                'compute:%s' % agg))
            got = read_conf(path, COMPUTE_OPTS)
            want = {r['key']: r['value'] for r in rows
                    if r['target'] == 'nova.conf of the hosts in %s' % agg}
            self.assertEqual(
                {(None, k.split()[1]): float(v) for k, v in want.items()},
                {k: float(v) for k, v in got.items()})

    def test_merge_into_keeps_the_file_and_is_idempotent(self):
        path = os.path.join(self.tmp, 'nova.conf')
        original = textwrap.dedent('''\
            [DEFAULT]
            # the operator's comment
            transport_url = rabbit://secret@mq
            [filter_scheduler]
            available_filters = nova.scheduler.filters.all_filters
            available_filters = my.filters.all
            enabled_filters = ComputeFilter,MyFilter
            [pmem]
            cache_overcommit_ratio = 1.5
            ''')
        with open(path, 'w') as f:
            f.write(original)
        os.chmod(path, 0o640)
        self.ok('nova-config', 'nova-conf', '--merge-into', path)
        with open(path) as f:
            merged = f.read()
        self.assertIn('# the operator\'s comment', merged)
        self.assertIn('transport_url = rabbit://secret@mq', merged)
        self.assertEqual(0o640, stat.S_IMODE(os.stat(path).st_mode))
        got = read_conf(path, SCHEDULER_OPTS)
        self.assertEqual(['nova.scheduler.filters.all_filters',
                          'my.filters.all', classes.ALL_FILTERS],
                         got[('filter_scheduler', 'available_filters')])
        self.assertEqual(['ComputeFilter', 'MyFilter'] + list(
            classes.FILTERS), got[('filter_scheduler', 'enabled_filters')])
        self.assertEqual(1.0, got[('pmem', 'cache_overcommit_ratio')])
        before = os.stat(path).st_mtime_ns
        self.ok('nova-config', 'nova-conf', '--merge-into', path)
        with open(path) as f:
            self.assertEqual(merged, f.read())
        self.assertEqual(before, os.stat(path).st_mtime_ns)

    def test_merge_into_compute(self):
        path = os.path.join(self.tmp, 'nova-cpu.conf')
        with open(path, 'w') as f:
            f.write('[DEFAULT]\nram_allocation_ratio = 1.5\n')
        self.ok('nova-config', 'nova-conf', '--role',
                'compute:pmem-dram-384', '--merge-into', path)
        got = read_conf(path, COMPUTE_OPTS)
        self.assertEqual(1.3333, got[(None, 'ram_allocation_ratio')])

    def test_bad_role_and_file(self):
        status, out, err = self.run_cli('nova-config', 'nova-conf', '--role',
                                        'compute:nosuch')
        self.assertEqual(2, status)
        self.assertEqual('', out)
        self.assertIn('--role compute:nosuch: not a role of this plan '
                      '(roles: compute:pmem-dram-384, '
                      'compute:pmem-mm-192-512, scheduler)', err)
        status, out, err = self.run_cli(
            'nova-config', 'nova-conf', '--merge-into',
            os.path.join(self.tmp, 'missing.conf'))
        self.assertEqual(2, status)
        self.assertIn('missing.conf: No such file or directory', err)
        self.assertEqual(1, len(err.strip().splitlines()))

    def test_provider_config_as_nova_reads_it(self):
        rows = self.rows('--placement-accounting')
        for agg in ('pmem-dram-384', 'pmem-mm-192-512'):
            conf_dir = os.path.join(self.tmp, agg)
            os.mkdir(conf_dir)
            path = os.path.join(conf_dir, 'near-memory.yaml')
            self.assertEqual('', self.ok(
                'nova-config', 'provider-config', '--role',
                'compute:%s' % agg, '-o', path))
            parsed = provider_config.get_provider_configs(conf_dir)
            (row,) = [r for r in rows if r['scope'] == 'provider'
                      and r['target'].endswith(' %s' % agg)]
            want = yaml.safe_load(row['command'])['providers'][0]
            self.assertEqual(want['inventories']['additional'],
                             parsed['$COMPUTE_NODE']['inventories'][
                                 'additional'])
        status, out, err = self.run_cli('nova-config', 'provider-config',
                                        '--role', 'scheduler')
        self.assertEqual(2, status)
        self.assertIn('--role scheduler: not a compute role of this plan',
                      err)
