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
        found = self.assertFindings(
            snap, (checks.ERROR, 'filter-not-available',
                   self.OPT % 'available_filters'),
            (checks.ERROR, 'filter-not-available',
             self.OPT % 'available_filters'))
        self.assertIn('does not start', found[(
            'filter-not-available',
            self.OPT % 'available_filters')].problem)

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
