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
"""The doctor's reading of nova.conf, and its copy of Nova's options."""

import math
import os

import fixtures
from nova.conf import compute as nova_compute_conf
from nova.conf import scheduler as nova_scheduler_conf
from nova.scheduler import filters as nova_filters
import testtools

from nova_pmem_filters.conf import nova_scheduler
from nova_pmem_filters.conf import schedulerconf
from nova_pmem_filters.doctor.checks import config as config_checks


class NovaOptionsTestCase(testtools.TestCase):
    """The options the doctor registers are Nova's, name, type and default."""

    def test_same_as_nova(self):
        nova = {group.name: {o.dest: o for o in opts}
                for group, opts in nova_scheduler_conf.list_opts().items()}
        nova['DEFAULT'] = {o.dest: o for o in
                           nova_compute_conf.list_opts()['DEFAULT']}
        for group, opts in nova_scheduler.NOVA_OPTS.items():
            for opt in opts:
                theirs = nova[group][opt.dest]
                self.assertEqual(type(theirs), type(opt), opt.dest)
                self.assertEqual(theirs.default, opt.default, opt.dest)
                self.assertEqual(theirs.multi, opt.multi, opt.dest)
                self.assertEqual(type(theirs.type), type(opt.type), opt.dest)

    def test_nova_filters_are_novas(self):
        self.assertEqual(
            sorted(c.__name__ for c in nova_filters.all_filters()),
            sorted(nova_scheduler.NOVA_FILTERS))

    def test_every_multiplier_has_its_weigher(self):
        self.assertEqual(sorted(config_checks.MULTIPLIER_WEIGHERS),
                         sorted(schedulerconf.WEIGHT_MULTIPLIER_OPTS))


class LoadTestCase(testtools.TestCase):

    def write(self, text, name='nova.conf'):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path, name)
        with open(path, 'w') as f:
            f.write(text)
        return path

    def test_defaults_and_values(self):
        defaults = schedulerconf.defaults()
        self.assertEqual(('nova.scheduler.filters.all_filters',),
                         defaults.available_filters)
        self.assertIsNone(defaults.scheduler_workers)
        self.assertEqual(0.5, defaults.default_hot_ratio)
        path = self.write(
            '[filter_scheduler]\n'
            'available_filters = nova.scheduler.filters.all_filters\n'
            'available_filters = nova_pmem_filters.filters.all_filters\n'
            'enabled_filters = ComputeFilter, PmemModeFilter\n'
            '[scheduler]\nworkers = 3\n'
            '[pmem]\ndefault_flavor_modes = dram,app_direct\n'
            'cache_overcommit_ratio = 1.25\n')
        conf = schedulerconf.load([path])
        self.assertEqual(('nova.scheduler.filters.all_filters',
                          'nova_pmem_filters.filters.all_filters'),
                         conf.available_filters)
        self.assertEqual(('ComputeFilter', 'PmemModeFilter'),
                         conf.enabled_filters)
        self.assertEqual(3, conf.scheduler_workers)
        self.assertEqual(('dram', 'app_direct'), conf.default_flavor_modes)
        self.assertEqual(1.25, conf.cache_overcommit_ratio)

    def test_non_finite_multipliers_are_read(self):
        # oslo.config takes nan and inf for a FloatOpt: the checks judge.
        path = self.write('[pmem]\ntier_weight_multiplier = nan\n'
                          'numa_cell_weight_multiplier = -inf\n')
        values = dict(schedulerconf.load([path]).weight_multipliers)
        self.assertTrue(math.isnan(values['tier_weight_multiplier']))
        self.assertEqual(float('-inf'), values['numa_cell_weight_multiplier'])
        self.assertEqual(1.0, values['cache_headroom_weight_multiplier'])

    def test_later_files_override(self):
        first = self.write('[scheduler]\nworkers = 3\n')
        second = self.write('[scheduler]\nworkers = 1\n', 'override.conf')
        self.assertEqual(
            1, schedulerconf.load([first, second]).scheduler_workers)

    def test_errors_name_the_file_and_option(self):
        cases = [
            ('[scheduler]\nworkers = many\n', '[scheduler] workers'),
            ('[pmem]\ndefault_hot_ratio = 2\n', '[pmem] default_hot_ratio'),
            ('[pmem]\ndefault_host_mode = tiered\n',
             '[pmem] default_host_mode'),
            ('no section here\n', 'not a valid ini file'),
        ]
        for text, part in cases:
            path = self.write(text)
            exc = self.assertRaises(schedulerconf.ConfigError,
                                    schedulerconf.load, [path])
            self.assertIn(path, str(exc))
            self.assertIn(part, str(exc))
            self.assertEqual(1, len(str(exc).splitlines()))
        exc = self.assertRaises(schedulerconf.ConfigError, schedulerconf.load,
                                ['/nonexistent/nova.conf'])
        self.assertEqual('cannot read /nonexistent/nova.conf', str(exc))
