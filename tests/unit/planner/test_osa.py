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
"""nova-config osa: the os_nova variables hold what nova-config nova-conf does.

The YAML is read back and compared with the nova.conf snippet of the same
role as oslo.config reads it: the same filters, weighers and options.
How os_nova's config_template writes the overrides (a list as one
comma-separated line, a mapping of empty values as one line per key) is
from its documentation (ansible-config_template doc/source/index.rst).
"""

import os
import stat

import fixtures
import testtools
import yaml

from nova_pmem_filters.conf import nova_scheduler
from nova_pmem_filters.core.rules import classes
from nova_pmem_filters.planner import realise
from tests.unit import clitools
from tests.unit.planner.commands import test_novaconfig


class OsaTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def ok(self, *argv):
        status, out, err = clitools.run_cli(self, argv)
        self.assertEqual(0, status, err)
        return out

    def nova_conf(self, opts, *argv):
        """What nova-config nova-conf gives ``argv``, as oslo reads it."""
        path = os.path.join(self.tmp, 'nova-conf.conf')
        with open(path, 'w') as f:
            f.write(self.ok('nova-config', 'nova-conf', *argv))
        return test_novaconfig.read_conf(path, opts)

    def variables(self, *argv):
        return yaml.safe_load(self.ok('nova-config', 'osa', *argv))

    def assert_same_as_nova_conf(self, *argv):
        got = self.variables(*argv)
        want = self.nova_conf(test_novaconfig.SCHEDULER_OPTS, *argv)
        self.assertEqual(['nova_user_pip_packages',
                          'nova_scheduler_extra_filters',
                          'nova_nova_conf_overrides'], list(got))
        self.assertEqual([realise.PACKAGE], got['nova_user_pip_packages'])
        overrides = got['nova_nova_conf_overrides']
        fs = overrides['filter_scheduler']
        # A multi-valued option: one line per key, values all empty.
        self.assertEqual({None}, set(fs['available_filters'].values()))
        self.assertEqual(want[('filter_scheduler', 'available_filters')],
                         list(fs['available_filters']))
        self.assertEqual(want[('filter_scheduler', 'weight_classes')],
                         fs['weight_classes'])
        self.assertEqual({'cache_overcommit_ratio': want[
            ('pmem', 'cache_overcommit_ratio')]}, overrides['pmem'])
        self.assertEqual({'filter_scheduler', 'pmem'}, set(overrides))
        self.assertNotIn('enabled_filters', fs)
        # os_nova enables its defaults, then the extra filters: every
        # filter nova-conf adds to Nova's is there once.
        enabled = (list(realise.OSA_DEFAULT_FILTERS)
                   + got['nova_scheduler_extra_filters'])
        self.assertEqual(len(set(enabled)), len(enabled))
        nova_defaults = nova_scheduler.NOVA_OPTS[
            nova_scheduler.FILTER_SCHEDULER][1]
        added = [f for f in want[('filter_scheduler', 'enabled_filters')]
                 if f not in nova_defaults.default]
        for name in added + list(nova_defaults.default):
            self.assertIn(name, enabled)
        return got, added

    def test_scheduler_variables_match_nova_conf(self):
        got, added = self.assert_same_as_nova_conf()
        self.assertEqual(list(classes.FILTERS), added)
        self.assertEqual(list(classes.FILTERS),
                         got['nova_scheduler_extra_filters'])
        self.assertEqual(
            ['nova.scheduler.filters.all_filters', classes.ALL_FILTERS],
            list(got['nova_nova_conf_overrides']['filter_scheduler'][
                'available_filters']))
        self.assertEqual(1, got['nova_nova_conf_overrides']['pmem'][
            'cache_overcommit_ratio'])

    def test_numa_bound_plan_needs_no_second_numa_filter(self):
        path = clitools.dram_scenario(
            self.tmp, 'numa',
            'db: {vcpus: 8, ram_gb: 64, used_gb: 48, numa_nodes: 2}\n')
        got, added = self.assert_same_as_nova_conf('--scenario', path)
        # nova-conf adds NUMATopologyFilter to Nova's list; os_nova has
        # it already.
        self.assertEqual(['NUMATopologyFilter'] + list(classes.FILTERS),
                         added)
        self.assertEqual(list(classes.FILTERS),
                         got['nova_scheduler_extra_filters'])

    def test_other_scenario(self):
        self.assert_same_as_nova_conf('--scenario', 'cxl-cost-matched')

    def test_compute_host_vars_match_nova_conf(self):
        for role in ('compute:pmem-dram-384', 'compute:pmem-mm-192-512'):
            got = self.variables('--role', role)
            want = self.nova_conf(test_novaconfig.COMPUTE_OPTS, '--role',
                                  role)
            self.assertEqual(
                {realise.OSA_COMPUTE_VARIABLES[k[1]]: v
                 for k, v in want.items()},
                {k: float(v) for k, v in got.items()})
            self.assertIsInstance(got['nova_reserved_host_memory_mb'], int)

    def test_pinned_package_and_output_file(self):
        path = os.path.join(self.tmp, 'user_nova_pmem.yml')
        self.assertEqual('', self.ok(
            'nova-config', 'osa', '--pip-package', 'nova-pmem-filters==1.2.0',
            '-o', path))
        self.assertEqual(0o644, stat.S_IMODE(os.stat(path).st_mode))
        with open(path) as f:
            text = f.read()
        self.assertIn('nova-config osa --pip-package '
                      'nova-pmem-filters==1.2.0', text)
        self.assertEqual(['nova-pmem-filters==1.2.0'],
                         yaml.safe_load(text)['nova_user_pip_packages'])

    def test_bad_role(self):
        status, out, err = clitools.run_cli(
            self, ('nova-config', 'osa', '--role', 'compute:nosuch'))
        self.assertEqual(2, status)
        self.assertEqual('', out)
        self.assertIn('--role compute:nosuch: not a role of this plan', err)
