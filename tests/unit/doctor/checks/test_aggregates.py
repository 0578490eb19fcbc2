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
"""The checks of the aggregates' metadata."""

import dataclasses
import shlex


from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.doctor import checks
from tests.unit.doctor import cases


class AggregateTestCase(cases.DoctorTestCase):

    MM = 'aggregate pmem-mm'

    def test_invalid_mode(self):
        snap = cases.with_aggregate(
            cases.clean(), 'pmem-mm', pmem_mode='Memory-Mode')
        found = self.assertFindings(
            snap, (checks.ERROR, 'invalid-pmem-mode', self.MM))
        finding = found[('invalid-pmem-mode', self.MM)]
        self.assertIn("'Memory-Mode'", finding.problem)
        self.assertIn('mm1, mm2', finding.problem)
        self.assertIn('pmem_mode=memory_mode pmem-mm', finding.fix)
        self.assertEqual(2, checks.exit_status(self.findings(snap)))

    def test_invalid_cache(self):
        for value in ('banana', '-5', '0', 'inf', ''):
            snap = cases.with_aggregate(cases.clean(), 'pmem-mm',
                                        pmem_dram_cache_gb=value)
            found = self.assertFindings(
                snap, (checks.ERROR, 'invalid-dram-cache', self.MM))
            self.assertIn('PmemCacheFilter rejects hosts mm1, mm2 for every '
                          'flavor', found[('invalid-dram-cache',
                                           self.MM)].problem)
        empty = cases.with_aggregate(cases.clean(), 'new', hosts=(),
                                     pmem_dram_cache_gb='lots')
        found = self.assertFindings(
            empty, (checks.ERROR, 'invalid-dram-cache', 'aggregate new'))
        self.assertIn('hosts added to it will be rejected', found[(
            'invalid-dram-cache', 'aggregate new')].problem)

    def test_misspelt_keys(self):
        for wrong in ('pmem_dram_cache', 'pmem-dram-cache-gb',
                      'PMEM_DRAM_CACHE_GB', 'pmem_dramcache_gb'):
            snap = cases.with_aggregate(
                cases.clean(), 'pmem-mm', pmem_dram_cache_gb=None,
                **{wrong: '192'})
            found = self.assertFindings(
                snap, (checks.WARNING, 'misspelt-key', self.MM),
                (checks.ERROR, 'memory-mode-without-cache', self.MM))
            self.assertIn('looks like pmem_dram_cache_gb',
                          found[('misspelt-key', self.MM)].problem)
        snap = cases.with_aggregate(
            cases.clean(), 'pmem-mm', pmem_mod='memory_mode')
        self.assertFindings(snap, (checks.WARNING, 'misspelt-key', self.MM))

    def test_mode_with_spaces_is_read_as_the_scheduler_reads_it(self):
        # The scheduler strips the value: the hosts are in Memory Mode and
        # boots succeed; only a warning to tidy the value.
        snap = cases.with_aggregate(
            cases.clean(), 'pmem-mm', pmem_mode=' memory_mode ')
        found = self.assertFindings(
            snap, (checks.WARNING, 'untidy-pmem-mode', self.MM))
        finding = found[('untidy-pmem-mode', self.MM)]
        self.assertNotIn('rejects', finding.problem)
        self.assertEqual('openstack aggregate set --property '
                         'pmem_mode=memory_mode pmem-mm', finding.fix)
        self.assertEqual(1, checks.exit_status(self.findings(snap)))
        # Read as memory_mode, so its cache is still required.
        bare = cases.with_aggregate(snap, 'pmem-mm', pmem_dram_cache_gb=None)
        self.assertIn(('memory-mode-without-cache', self.MM),
                      [(f.code, f.object) for f in self.findings(bare)])

    def test_key_fix_unsets_before_set_and_quotes(self):
        # MariaDB compares keys ignoring case and trailing spaces: "set"
        # of the right key would update the wrong key's row, and a later
        # "unset" of the wrong key would delete it. Unset first, quoted.
        for wrong in ('pmem_dram_cache_gb ', 'PMEM_DRAM_CACHE_GB'):
            snap = cases.with_aggregate(
                cases.clean(), 'pmem-mm', pmem_dram_cache_gb=None,
                **{wrong: '192'})
            fixes = [f.fix for f in self.findings(snap)
                     if f.code == 'misspelt-key']
            self.assertEqual(
                ["openstack aggregate unset --property %s pmem-mm && "
                 "openstack aggregate set --property pmem_dram_cache_gb=192 "
                 "pmem-mm" % shlex.quote(wrong)], fixes)
            self.assertEqual(
                ['openstack', 'aggregate', 'unset', '--property', wrong,
                 'pmem-mm', '&&', 'openstack', 'aggregate', 'set',
                 '--property', 'pmem_dram_cache_gb=192', 'pmem-mm'],
                shlex.split(fixes[0]))

    def test_key_fix_sets_a_value_the_filters_read(self):
        # Moved as it is, the value would turn the warning into another
        # finding: a mode is tidied or guessed, else a placeholder.
        for wrong, value, moved in (
                ('PMEM_MODE', ' memory_mode ', 'pmem_mode=memory_mode'),
                ('PMEM_MODE', 'memory-mode', 'pmem_mode=memory_mode'),
                ('PMEM_MODE', 'tiered', "'pmem_mode=<mode>'"),
                ('pmem_dram_cache', 'banana',
                 "'pmem_dram_cache_gb=<GB of DRAM cache per host>'"),
                ('pmem_tier_weight_mult', 'nan',
                 "'pmem_tier_weight_multiplier=<number>'")):
            snap = cases.with_aggregate(cases.clean(), 'pmem-mm',
                                        **{wrong: value})
            fixes = [f.fix for f in self.findings(snap)
                     if f.code == 'misspelt-key']
            self.assertEqual(
                ['openstack aggregate unset --property %s pmem-mm && '
                 'openstack aggregate set --property %s pmem-mm'
                 % (wrong, moved)], fixes)

    def test_nova_keys_are_not_ours(self):
        snap = cases.with_aggregate(
            cases.clean(), 'pmem-mm', cpu_allocation_ratio='2',
            ram_weight_multiplier='1', filter_tenant_id='x')
        self.assertFindings(snap)

    def test_cache_from_another_aggregate(self):
        snap = cases.with_aggregate(
            cases.clean(), 'pmem-mm', pmem_dram_cache_gb=None)
        self.assertFindings(snap, (checks.ERROR, 'memory-mode-without-cache',
                                   self.MM))
        snap = cases.with_aggregate(snap, 'cache-192', hosts=('mm1', 'mm2'),
                                    pmem_dram_cache_gb='192')
        self.assertFindings(snap)
        empty = cases.with_aggregate(cases.clean(), 'pmem-mm-new', hosts=(),
                                     pmem_mode='memory_mode')
        self.assertFindings(empty, (checks.WARNING,
                                    'memory-mode-without-cache',
                                    'aggregate pmem-mm-new'))

    def test_hosts_in_aggregates_that_disagree(self):
        snap = cases.with_aggregate(
            cases.clean(), 'dram', hosts=('dram1', 'mm1'))
        found = self.assertFindings(
            snap, (checks.ERROR, 'aggregates-disagree', 'host mm1'))
        problem = found[('aggregates-disagree', 'host mm1')].problem
        self.assertIn('dram, pmem-mm', problem)
        self.assertIn("'dram', 'memory_mode'", problem)

    def test_cache_key_on_a_dram_aggregate(self):
        snap = cases.with_aggregate(
            cases.clean(), 'dram', pmem_dram_cache_gb='384')
        self.assertFindings(snap, (checks.WARNING,
                                   'dram-cache-without-memory-mode',
                                   'aggregate dram'))

    def test_invalid_weight_multiplier(self):
        snap = cases.with_aggregate(cases.clean(), 'pmem-mm',
                                    pmem_tier_weight_multiplier='heavy')
        self.assertFindings(snap, (checks.WARNING,
                                   'invalid-weight-multiplier', self.MM))
        snap = cases.with_aggregate(cases.clean(), 'pmem-mm',
                                    pmem_tier_weight_multiplier='-2.5')
        self.assertFindings(snap)

    def test_non_finite_weight_multiplier(self):
        # float() takes these, so Nova uses them: every weight is NaN.
        for value in ('nan', 'inf', '-Infinity'):
            snap = cases.with_aggregate(cases.clean(), 'pmem-mm',
                                        pmem_tier_weight_multiplier=value)
            found = self.assertFindings(
                snap, (checks.ERROR, 'invalid-weight-multiplier', self.MM))
            finding = found[('invalid-weight-multiplier', self.MM)]
            self.assertIn('not a finite number', finding.problem)
            self.assertEqual('openstack aggregate unset --property '
                             'pmem_tier_weight_multiplier pmem-mm',
                             finding.fix)


class CellCacheAggregateTestCase(cases.DoctorTestCase):
    """pmem_dram_cache_gb_per_cell is one of ours, and checked."""

    MM = 'aggregate pmem-mm'

    def test_valid_per_cell_sizes(self):
        snap = cases.with_aggregate(cases.clean(), 'pmem-mm',
                                    pmem_dram_cache_gb_per_cell='0:96,1:96')
        self.assertFindings(snap)

    def test_per_cell_sizes_alone_bound_the_cache(self):
        snap = cases.with_aggregate(
            cases.clean(), 'pmem-mm', pmem_dram_cache_gb=None,
            pmem_dram_cache_gb_per_cell='0:96,1:96')
        self.assertFindings(snap)

    def test_invalid_per_cell_sizes(self):
        for value, words in (('0:96,x:96', 'cell:GB pairs'),
                             ('0:96,0:96', 'names cell 0 twice'),
                             ('0:96,1:-1', 'cell:GB pairs'),
                             ('0:64,1:64', 'adds up to 128 GB')):
            snap = cases.with_aggregate(cases.clean(), 'pmem-mm',
                                        pmem_dram_cache_gb_per_cell=value)
            found = self.assertFindings(
                snap, (checks.ERROR, 'invalid-dram-cache-per-cell', self.MM))
            finding = found[('invalid-dram-cache-per-cell', self.MM)]
            self.assertIn(words, finding.problem)
            self.assertIn('mm1, mm2', finding.problem)
            self.assertIn('unset --property pmem_dram_cache_gb_per_cell',
                          finding.fix)


class CxlAggregateTestCase(cases.DoctorTestCase):
    """The CXL kinds are valid pmem_mode values; tiered ones need DRAM."""

    MM = 'aggregate pmem-mm'

    def _relabelled(self, **metadata):
        # The example fleet's profiles say memory_mode: the doctor would
        # rightly report every relabelled host; audit the labels alone.
        return dataclasses.replace(
            cases.with_aggregate(
                cases.clean(), 'pmem-mm', **metadata), fleet=None)

    def test_tiered_kinds_with_near_memory(self):
        for kind in (kinds.CXL_FLAT, kinds.CXL_KMEM):
            found = self.findings(self._relabelled(pmem_mode=kind))
            # Only the hosts' Placement traits, still Memory Mode's, are
            # out of date: the label itself is valid.
            self.assertEqual({('mode-trait-mismatch', 'host mm1'),
                              ('mode-trait-mismatch', 'host mm2')},
                             {(f.code, f.object) for f in found})
            self.assertIn('expected CUSTOM_PMEM_MODE_%s' % kind.upper(),
                          found[0].problem)

    def test_tiered_kind_without_near_memory(self):
        snap = self._relabelled(pmem_mode=kinds.CXL_KMEM,
                                pmem_dram_cache_gb=None)
        found = self.assertFindings(
            snap, (checks.ERROR, 'memory-mode-without-cache', self.MM))
        self.assertIn('pmem_mode=cxl_kmem without pmem_dram_cache_gb',
                      found[('memory-mode-without-cache', self.MM)].problem)

    def test_devdax_ignores_the_cache_key(self):
        found = self.findings(self._relabelled(pmem_mode=kinds.CXL_DEVDAX))
        self.assertIn(('dram-cache-without-memory-mode', self.MM),
                      {(f.code, f.object) for f in found})
        self.assertNotIn('invalid-pmem-mode', {f.code for f in found})

    def test_misspelt_kind(self):
        snap = self._relabelled(pmem_mode='cxl-kmem')
        found = self.assertFindings(
            snap, (checks.ERROR, 'invalid-pmem-mode', self.MM))
        self.assertIn('pmem_mode=cxl_kmem pmem-mm',
                      found[('invalid-pmem-mode', self.MM)].fix)
