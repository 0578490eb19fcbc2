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
"""Tests of the [pmem] options and their oslo-config-generator hook."""

import os
import subprocess
import sys

import fixtures
from oslo_config import cfg
from oslo_config import generator
import testtools

from nova_pmem_filters.conf import opts as conf_opts
from nova_pmem_filters.conf import pmem
from tests.unit import paths

_OPT_NAMES = ['default_host_mode', 'default_flavor_modes',
              'default_hot_ratio', 'cache_overcommit_ratio',
              'tier_weight_multiplier', 'cache_headroom_weight_multiplier',
              'numa_cell_weight_multiplier',
              'instance_cache_ttl', 'check_aggregate_view']


class ListOptsTestCase(testtools.TestCase):

    def test_list_opts_is_a_list_of_group_and_opts(self):
        opts = conf_opts.list_opts()
        self.assertIsInstance(opts, list)
        self.assertEqual(1, len(opts))
        group, group_opts = opts[0]
        self.assertIsInstance(group, cfg.OptGroup)
        self.assertEqual('pmem', group.name)
        self.assertIsInstance(group_opts, list)
        self.assertEqual(_OPT_NAMES, [opt.name for opt in group_opts])
        for opt in group_opts:
            self.assertIsInstance(opt, cfg.Opt)
            self.assertTrue(opt.help.strip())

    def test_entry_point(self):
        # What oslo-config-generator --namespace nova_pmem_filters loads.
        loaded = generator._list_opts(['nova_pmem_filters'])
        self.assertEqual(1, len(loaded))
        namespace, opts = loaded[0]
        self.assertEqual('nova_pmem_filters', namespace)
        self.assertEqual([('pmem', _OPT_NAMES)],
                         [(group.name, [o.name for o in group_opts])
                          for group, group_opts in opts])

    def test_register_opts_and_defaults(self):
        config = cfg.ConfigOpts()
        pmem.register_opts(config)
        config([])
        self.assertEqual('dram', config.pmem.default_host_mode)
        self.assertEqual(['dram', 'memory_mode', 'app_direct'],
                         config.pmem.default_flavor_modes)
        self.assertEqual(0.5, config.pmem.default_hot_ratio)
        self.assertEqual(1.0, config.pmem.cache_overcommit_ratio)
        self.assertEqual(10.0, config.pmem.tier_weight_multiplier)
        self.assertEqual(1.0, config.pmem.cache_headroom_weight_multiplier)
        self.assertEqual(600, config.pmem.instance_cache_ttl)
        self.assertTrue(config.pmem.check_aggregate_view)

    def test_bounds(self):
        config = cfg.ConfigOpts()
        pmem.register_opts(config)
        config([])
        for name, value in (('default_hot_ratio', 0.0),
                            ('default_hot_ratio', 1.5),
                            ('cache_overcommit_ratio', -1.0),
                            ('instance_cache_ttl', -1),
                            ('default_host_mode', 'optane')):
            self.assertRaises(ValueError, config.set_override, name, value,
                              group='pmem')
        self.assertRaises(ValueError, config.set_override,
                          'default_flavor_modes', ['dram', 'optane'],
                          group='pmem')

    def test_generator_output_matches_sample(self):
        # The shipped sample is generated, not hand-written; regenerate it
        # with `tox -e genconfig` when an option changes.
        tmp = self.useFixture(fixtures.TempDir()).path
        output = os.path.join(tmp, 'pmem.conf.sample')
        generator_bin = os.path.join(os.path.dirname(sys.executable),
                                     'oslo-config-generator')
        subprocess.run([generator_bin, '--namespace', 'nova_pmem_filters',
                        '--wrap-width', '79', '--output-file', output],
                       check=True, capture_output=True, timeout=60)
        with open(output) as f:
            generated = f.read()
        self.assertIn('[pmem]', generated)
        for name in _OPT_NAMES:
            self.assertIn('#%s = ' % name, generated)
        sample = paths.of('etc', 'nova-pmem-filters',
                          'nova-pmem-filters.conf.sample')
        with open(sample) as f:
            self.assertEqual(f.read(), generated)
