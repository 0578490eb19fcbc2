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
"""The checks of the scheduler's nova.conf."""


from nova_pmem_filters.doctor import checks
from tests.unit.doctor import cases


class ConfigTestCase(cases.DoctorTestCase):

    OPT = 'nova.conf [filter_scheduler] %s'

    def test_enabled_filter_not_available(self):
        snap = cases.replace(cases.clean(), config=cases.config(
            available_filters=('nova.scheduler.filters.all_filters',)))
        # Both filters lack the same line: one finding for the key, which
        # names both, not one per filter with the same fix.
        found = self.assertFindings(
            snap, (checks.ERROR, 'filter-not-available',
                   self.OPT % 'available_filters'))
        finding = found[('filter-not-available',
                         self.OPT % 'available_filters')]
        self.assertEqual(
            'PmemModeFilter and PmemCacheFilter are in enabled_filters but '
            'not in available_filters: nova-scheduler does not start '
            '(SchedulerHostFilterNotFound)', finding.problem)
        self.assertIn('available_filters = nova_pmem_filters.filters.'
                      'all_filters', finding.fix)

    def test_one_enabled_filter_not_available(self):
        snap = cases.replace(cases.clean(), config=cases.config(
            available_filters=('nova.scheduler.filters.all_filters',
                               'nova_pmem_filters.filters.PmemModeFilter')))
        found = self.assertFindings(
            snap, (checks.ERROR, 'filter-not-available',
                   self.OPT % 'available_filters'))
        self.assertTrue(found[(
            'filter-not-available', self.OPT % 'available_filters')]
            .problem.startswith('PmemCacheFilter is in enabled_filters'))

    def test_single_classes_count_as_available(self):
        snap = cases.replace(cases.clean(), config=cases.config(
            available_filters=(
                'nova.scheduler.filters.all_filters',
                'nova_pmem_filters.filters.PmemModeFilter',
                'nova_pmem_filters.filters.PmemCacheFilter')))
        self.assertFindings(snap)

    def test_mode_filter_not_enabled(self):
        snap = cases.replace(cases.clean(), config=cases.config(
            enabled_filters=('ComputeFilter', 'PmemCacheFilter')))
        found = self.assertFindings(
            snap, (checks.ERROR, 'filter-not-enabled',
                   self.OPT % 'enabled_filters'))
        finding = found[('filter-not-enabled', self.OPT % 'enabled_filters')]
        self.assertIn('PmemModeFilter', finding.problem)
        self.assertIn('append PmemModeFilter', finding.fix)

    def test_unknown_filter_name(self):
        # Names match the class, case included: nova-scheduler refuses to
        # start on pmemcachefilter.
        snap = cases.replace(cases.clean(), config=cases.config(
            enabled_filters=('ComputeFilter', 'PmemModeFilter',
                             'pmemcachefilter')))
        found = self.assertFindings(
            snap, (checks.ERROR, 'filter-unknown',
                   self.OPT % 'enabled_filters'))
        finding = found[('filter-unknown', self.OPT % 'enabled_filters')]
        self.assertIn("'pmemcachefilter'", finding.problem)
        self.assertIn('looks like PmemCacheFilter', finding.problem)
        self.assertIn('does not start', finding.problem)
        self.assertEqual(
            'set [filter_scheduler] enabled_filters = ComputeFilter,'
            'PmemModeFilter,PmemCacheFilter and restart nova-scheduler',
            finding.fix)
        # A name like nothing is dropped; Nova's own names are known.
        snap = cases.replace(cases.clean(), config=cases.config(
            enabled_filters=('ComputeFilter', 'NUMATopologyFilter', 'Bogus',
                             'PmemModeFilter', 'PmemCacheFilter')))
        found = self.assertFindings(
            snap, (checks.ERROR, 'filter-unknown',
                   self.OPT % 'enabled_filters'))
        self.assertEqual(
            'set [filter_scheduler] enabled_filters = ComputeFilter,'
            'NUMATopologyFilter,PmemModeFilter,PmemCacheFilter and restart '
            'nova-scheduler',
            found[('filter-unknown', self.OPT % 'enabled_filters')].fix)
        # Another package's loader: its names cannot be judged here.
        snap = cases.replace(cases.clean(), config=cases.config(
            available_filters=cases.config().available_filters
            + ('other.filters.all_filters',),
            enabled_filters=('ComputeFilter', 'OtherFilter',
                             'PmemModeFilter', 'PmemCacheFilter')))
        self.assertFindings(snap)

    def test_missing_filter_fix_drops_the_bad_name(self):
        # PmemModeFilter is misspelt: the fix for the missing filter
        # replaces the bad name rather than appending beside it.
        snap = cases.replace(cases.clean(), config=cases.config(
            enabled_filters=('ComputeFilter', 'PmemModefilter',
                             'PmemCacheFilter')))
        found = self.assertFindings(
            snap, (checks.ERROR, 'filter-unknown',
                   self.OPT % 'enabled_filters'),
            (checks.ERROR, 'filter-not-enabled',
             self.OPT % 'enabled_filters'))
        expected = ('set [filter_scheduler] enabled_filters = ComputeFilter,'
                    'PmemModeFilter,PmemCacheFilter and restart '
                    'nova-scheduler')
        self.assertEqual(expected, found[(
            'filter-not-enabled', self.OPT % 'enabled_filters')].fix)
        self.assertEqual(expected, found[(
            'filter-unknown', self.OPT % 'enabled_filters')].fix)

    def test_non_finite_weight_multipliers(self):
        for option in ('tier_weight_multiplier',
                       'cache_headroom_weight_multiplier',
                       'numa_cell_weight_multiplier'):
            for value in (float('nan'), float('inf'), float('-inf')):
                snap = cases.replace(cases.clean(), config=cases.config(
                    weight_multipliers=((option, value),)))
                found = self.assertFindings(
                    snap, (checks.ERROR, 'weight-multiplier-not-finite',
                           'nova.conf [pmem] %s' % option))
                finding = found[('weight-multiplier-not-finite',
                                 'nova.conf [pmem] %s' % option)]
                self.assertIn('every weight is NaN', finding.problem)
                self.assertIn('set [pmem] %s to a finite number' % option,
                              finding.fix)
        # A weigher not loaded: a warning for when it is.
        snap = cases.replace(cases.clean(), config=cases.config(
            weight_classes=('nova.scheduler.weights.all_weighers',
                            'nova_pmem_filters.weighers.PmemTierWeigher',
                            'nova_pmem_filters.weighers.'
                            'PmemCacheHeadroomWeigher'),
            weight_multipliers=(('numa_cell_weight_multiplier',
                                 float('nan')),)))
        self.assertFindings(
            snap, (checks.WARNING, 'weight-multiplier-not-finite',
                   'nova.conf [pmem] numa_cell_weight_multiplier'),
            (checks.WARNING, 'weighers-not-configured',
             self.OPT % 'weight_classes'))
        # Finite values, negative ones included, are choices.
        snap = cases.replace(cases.clean(), config=cases.config(
            weight_multipliers=(('tier_weight_multiplier', -10.0),)))
        self.assertFindings(snap)

    def test_cache_filter_needed_only_without_placement_accounting(self):
        snap = cases.replace(cases.clean(), config=cases.config(
            enabled_filters=('ComputeFilter', 'PmemModeFilter')))
        # Every Memory-Mode flavor requests near memory: nothing to add.
        self.assertFindings(snap)
        capacity = cases.flavor('capacity', 32, **{'pmem:modes': 'memory_mode',
                                                   'pmem:hot_ratio': '0.25'})
        small = cases.flavor('small', 2)
        snap = cases.with_flavor(cases.with_flavor(snap, capacity), small)
        found = self.assertFindings(
            snap, (checks.ERROR, 'filter-not-enabled',
                   self.OPT % 'enabled_filters'))
        self.assertIn('capacity, small', found[(
            'filter-not-enabled', self.OPT % 'enabled_filters')].problem)

    def test_weighers(self):
        snap = cases.replace(cases.clean(), config=cases.config(
            weight_classes=('nova.scheduler.weights.all_weighers',)))
        self.assertFindings(snap, (checks.WARNING, 'weighers-not-configured',
                                   self.OPT % 'weight_classes'))
        snap = cases.replace(cases.clean(), config=cases.config(
            weight_classes=(
                'nova.scheduler.weights.all_weighers',
                'nova_pmem_filters.weighers.PmemTierWeigher')))
        found = self.assertFindings(
            snap, (checks.WARNING, 'weighers-not-configured',
                   self.OPT % 'weight_classes'))
        self.assertIn('PmemCacheHeadroomWeigher and PmemNumaCellWeigher '
                      'are not', found[(
                          'weighers-not-configured',
                          self.OPT % 'weight_classes')].problem)
        # Only the NUMA cell weigher missing is a finding too.
        snap = cases.replace(cases.clean(), config=cases.config(
            weight_classes=(
                'nova.scheduler.weights.all_weighers',
                'nova_pmem_filters.weighers.PmemTierWeigher',
                'nova_pmem_filters.weighers.PmemCacheHeadroomWeigher')))
        found = self.assertFindings(
            snap, (checks.WARNING, 'weighers-not-configured',
                   self.OPT % 'weight_classes'))
        self.assertEqual(
            'PmemNumaCellWeigher is not in weight_classes: '
            'pmem:priority=high flavors are not given the least loaded NUMA '
            'cells', found[('weighers-not-configured',
                            self.OPT % 'weight_classes')].problem)

    def test_nova_weighers_dropped(self):
        snap = cases.replace(cases.clean(), config=cases.config(
            weight_classes=(
                'nova_pmem_filters.weighers.all_weighers',)))
        self.assertFindings(snap, (checks.WARNING, 'nova-weighers-dropped',
                                   self.OPT % 'weight_classes'))
        # Naming Nova's weighers one by one is a choice, not a mistake.
        snap = cases.replace(cases.clean(), config=cases.config(
            weight_classes=(
                'nova.scheduler.weights.ram.RAMWeigher',
                'nova_pmem_filters.weighers.all_weighers')))
        self.assertFindings(snap)

    def filter_only(self, workers):
        snap = cases.replace(
            cases.clean(), config=cases.config(scheduler_workers=workers))
        for name, ram in (('small', 2), ('capacity', 32)):
            snap = cases.with_flavor(snap, cases.flavor(name, ram))
        return snap

    def test_filter_only_accounting_with_several_workers(self):
        workers = 'nova.conf [scheduler] workers'
        found = self.assertFindings(
            self.filter_only(2),
            (checks.WARNING, 'filter-only-cache-accounting', workers))
        finding = found[('filter-only-cache-accounting', workers)]
        self.assertIn('2 nova-scheduler workers', finding.problem)
        self.assertIn('measured 30', finding.problem)
        self.assertIn('--placement-accounting', finding.fix)
        found = self.assertFindings(
            self.filter_only(None),
            (checks.WARNING, 'filter-only-cache-accounting', workers))
        self.assertIn('one worker per CPU', found[(
            'filter-only-cache-accounting', workers)].problem)
        self.assertFindings(self.filter_only(1))
