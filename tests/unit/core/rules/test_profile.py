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
"""Tests of the host memory profile, which imports nothing from Nova."""

import math

import hypothesis
from hypothesis import strategies as st
import testtools

from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import profile
from tests.unit import hypo


class FromMetadataTestCase(testtools.TestCase):

    def _unknown(self, metadata_list, *fragments, **kwargs):
        prof = profile.from_metadata(metadata_list, **kwargs)
        self.assertFalse(prof.known)
        self.assertIsNone(prof.mode)
        self.assertIsNone(prof.dram_cache_gb)
        for fragment in fragments:
            self.assertIn(fragment, prof.problem)
        return prof

    def test_no_aggregates_is_default_mode(self):
        prof = profile.from_metadata([])
        self.assertEqual(profile.HostProfile(mode=kinds.DRAM), prof)
        self.assertTrue(prof.known)
        self.assertIsNone(prof.problem)

    def test_aggregates_without_pmem_keys_are_default_mode(self):
        prof = profile.from_metadata(
            [{}, None, {'availability_zone': 'az1', 'ssd': 'true'}],
            default_mode=kinds.APP_DIRECT)
        self.assertEqual(kinds.APP_DIRECT, prof.mode)
        self.assertIsNone(prof.dram_cache_gb)

    def test_default_memory_mode_needs_a_cache_size(self):
        self._unknown([], profile.DRAM_CACHE_KEY,
                      default_mode=kinds.MEMORY_MODE)
        prof = profile.from_metadata([{profile.DRAM_CACHE_KEY: '64'}],
                                     default_mode=kinds.MEMORY_MODE)
        self.assertEqual(kinds.MEMORY_MODE, prof.mode)
        self.assertEqual(64.0, prof.dram_cache_gb)

    def test_dram(self):
        prof = profile.from_metadata([{profile.MODE_KEY: 'dram'}],
                                     default_mode=kinds.APP_DIRECT)
        self.assertEqual(profile.HostProfile(mode=kinds.DRAM), prof)

    def test_app_direct(self):
        prof = profile.from_metadata([{profile.MODE_KEY: 'app_direct'}])
        self.assertEqual(profile.HostProfile(mode=kinds.APP_DIRECT), prof)

    def test_memory_mode(self):
        prof = profile.from_metadata([{profile.MODE_KEY: 'memory_mode',
                                       profile.DRAM_CACHE_KEY: '192'}])
        self.assertEqual(
            profile.HostProfile(mode=kinds.MEMORY_MODE, dram_cache_gb=192.0),
            prof)

    def test_memory_mode_fractional_cache(self):
        prof = profile.from_metadata([{profile.MODE_KEY: 'memory_mode',
                                       profile.DRAM_CACHE_KEY: '0.5'}])
        self.assertEqual(0.5, prof.dram_cache_gb)

    def test_keys_spread_over_several_aggregates(self):
        prof = profile.from_metadata([
            {profile.MODE_KEY: 'memory_mode'},
            {'availability_zone': 'az1'},
            {profile.DRAM_CACHE_KEY: '96'},
        ])
        self.assertEqual(kinds.MEMORY_MODE, prof.mode)
        self.assertEqual(96.0, prof.dram_cache_gb)

    def test_memory_mode_without_cache_size(self):
        self._unknown([{profile.MODE_KEY: 'memory_mode'}],
                      profile.DRAM_CACHE_KEY, 'memory_mode')

    def test_cache_size_ignored_outside_memory_mode(self):
        for mode in (kinds.DRAM, kinds.APP_DIRECT):
            prof = profile.from_metadata([{profile.MODE_KEY: mode,
                                           profile.DRAM_CACHE_KEY: '192'}])
            self.assertEqual(profile.HostProfile(mode=mode), prof)

    def test_unknown_mode(self):
        for bad in ('DRAM', 'memory', 'dram,memory_mode', '', 'none'):
            self._unknown([{profile.MODE_KEY: bad}], profile.MODE_KEY,
                          repr(bad), 'dram, memory_mode, app_direct')

    def test_non_string_values(self):
        self._unknown([{profile.MODE_KEY: 7}], profile.MODE_KEY)
        self._unknown([{profile.MODE_KEY: None}], profile.MODE_KEY)
        prof = profile.from_metadata([{profile.MODE_KEY: 'memory_mode',
                                       profile.DRAM_CACHE_KEY: 64}])
        self.assertEqual(64.0, prof.dram_cache_gb)

    def test_whitespace_around_values(self):
        prof = profile.from_metadata([{profile.MODE_KEY: ' memory_mode\t',
                                       profile.DRAM_CACHE_KEY: ' 192 \n'}])
        self.assertEqual(
            profile.HostProfile(mode=kinds.MEMORY_MODE, dram_cache_gb=192.0),
            prof)

    def test_whitespace_differences_are_not_a_conflict(self):
        prof = profile.from_metadata([{profile.MODE_KEY: 'dram'},
                                      {profile.MODE_KEY: ' dram '}])
        self.assertEqual(kinds.DRAM, prof.mode)

    def test_agreeing_aggregates(self):
        prof = profile.from_metadata([
            {profile.MODE_KEY: 'memory_mode', profile.DRAM_CACHE_KEY: '192'},
            {profile.MODE_KEY: 'memory_mode', profile.DRAM_CACHE_KEY: '192'},
        ])
        self.assertEqual(192.0, prof.dram_cache_gb)

    def test_conflicting_modes(self):
        self._unknown([{profile.MODE_KEY: 'memory_mode',
                        profile.DRAM_CACHE_KEY: '192'},
                       {profile.MODE_KEY: 'dram'}],
                      'aggregates disagree on pmem_mode',
                      "'dram', 'memory_mode'")

    def test_conflicting_cache_sizes(self):
        self._unknown([{profile.MODE_KEY: 'memory_mode',
                        profile.DRAM_CACHE_KEY: '192'},
                       {profile.DRAM_CACHE_KEY: '96'}],
                      'aggregates disagree on pmem_dram_cache_gb',
                      "'192', '96'")

    def test_conflicting_cache_sizes_outside_memory_mode(self):
        # Disagreeing metadata means the aggregates are mislabelled, whatever
        # the mode.
        self._unknown([{profile.MODE_KEY: 'dram',
                        profile.DRAM_CACHE_KEY: '192'},
                       {profile.DRAM_CACHE_KEY: '96'}],
                      'aggregates disagree')

    def test_garbage_cache_sizes(self):
        for bad in ('', 'abc', '192GB', '1,5', '0x10', '[]'):
            self._unknown([{profile.MODE_KEY: 'memory_mode',
                            profile.DRAM_CACHE_KEY: bad}],
                          profile.DRAM_CACHE_KEY, 'positive number')

    def test_non_positive_cache_sizes(self):
        for bad in ('0', '-0', '0.0', '-1', '-192', '-inf'):
            self._unknown([{profile.MODE_KEY: 'memory_mode',
                            profile.DRAM_CACHE_KEY: bad}],
                          profile.DRAM_CACHE_KEY, repr(bad))

    def test_inf_and_nan_cache_sizes(self):
        for bad in ('inf', 'Infinity', 'nan', 'NaN', '1e400'):
            self._unknown([{profile.MODE_KEY: 'memory_mode',
                            profile.DRAM_CACHE_KEY: bad}],
                          profile.DRAM_CACHE_KEY)

    def test_cache_size_too_large_for_mb(self):
        # Finite in GB but infinite in MB: no capacity arithmetic can use it.
        self._unknown([{profile.MODE_KEY: 'memory_mode',
                        profile.DRAM_CACHE_KEY: '1e308'}],
                      profile.DRAM_CACHE_KEY)

    def test_bad_cache_size_outside_memory_mode(self):
        self._unknown([{profile.MODE_KEY: 'dram',
                        profile.DRAM_CACHE_KEY: 'lots'}],
                      profile.DRAM_CACHE_KEY)

    def test_profile_is_hashable_and_frozen(self):
        prof = profile.HostProfile(mode=kinds.DRAM)
        self.assertEqual({prof}, {profile.HostProfile(mode=kinds.DRAM)})
        self.assertRaises(AttributeError, setattr, prof, 'mode', 'x')


class BothWaysTestCase(testtools.TestCase):
    """to_metadata and from_metadata are each other's inverse."""

    def test_every_kind_round_trips(self):
        for mode in kinds.ALL_MODES:
            for cells in (None, {0: 95.5, 1: 96.5}):
                prof = profile.build(mode, 192.0, cells)
                self.assertTrue(prof.known, prof.problem)
                metadata = profile.to_metadata(prof)
                self.assertEqual(prof, profile.from_metadata([metadata]))
                self.assertEqual(mode, metadata[profile.MODE_KEY])
                if mode in kinds.TIERED:
                    self.assertEqual(192.0, prof.dram_cache_gb)
                    self.assertEqual(
                        None if cells is None else ((0, 95.5), (1, 96.5)),
                        prof.cell_cache_gb)
                else:
                    # Near memory means nothing where guest RAM is DRAM.
                    self.assertEqual({profile.MODE_KEY: mode}, metadata)
                    self.assertIsNone(prof.dram_cache_gb)

    def test_keys_in_the_order_they_are_read(self):
        metadata = profile.metadata(kinds.CXL_KMEM, 256, {0: 128, 1: 128},
                                    'off')
        self.assertEqual(list(profile.PROFILE_KEYS), list(metadata))
        self.assertEqual(['cxl_kmem', '256', '0:128,1:128', 'off'],
                         list(metadata.values()))

    def test_values_keep_every_digit(self):
        prof = profile.build(kinds.MEMORY_MODE, 1234.5678)
        self.assertEqual('1234.5678',
                         profile.to_metadata(prof)[profile.DRAM_CACHE_KEY])

    def test_unknown_profile_has_no_metadata(self):
        self.assertRaises(ValueError, profile.to_metadata,
                          profile.build(kinds.MEMORY_MODE))

    @hypo.settings(200)
    @hypothesis.given(
        mode=st.sampled_from(kinds.ALL_MODES),
        near=st.floats(0.001, 1e6, allow_nan=False),
        cells=st.none() | st.dictionaries(st.integers(0, 15),
                                          st.floats(0.001, 1e5),
                                          min_size=1, max_size=4))
    def test_round_trip_property(self, mode, near, cells):
        if cells:
            near = math.fsum(cells.values())
        prof = profile.build(mode, near, cells)
        self.assertTrue(prof.known, prof.problem)
        self.assertEqual(prof, profile.from_metadata(
            [profile.to_metadata(prof)]))


class ProblemCodeTestCase(testtools.TestCase):
    """What is wrong with an unknown profile, without reading its text."""

    def _code(self, *metadata):
        prof = profile.from_metadata(metadata)
        self.assertFalse(prof.known)
        return prof.problem_code, prof.problem_key

    def test_codes(self):
        self.assertEqual((profile.DISAGREE, profile.MODE_KEY), self._code(
            {'pmem_mode': 'dram'}, {'pmem_mode': 'app_direct'}))
        self.assertEqual((profile.DISAGREE, profile.DRAM_CACHE_KEY),
                         self._code({'pmem_dram_cache_gb': '1'},
                                    {'pmem_dram_cache_gb': '2'}))
        self.assertEqual((profile.INVALID, profile.MODE_KEY),
                         self._code({'pmem_mode': 'memory-mode'}))
        self.assertEqual((profile.INVALID, profile.DRAM_CACHE_KEY),
                         self._code({'pmem_mode': 'memory_mode',
                                     'pmem_dram_cache_gb': 'x'}))
        self.assertEqual((profile.INVALID, profile.DRAM_CACHE_PER_CELL_KEY),
                         self._code({'pmem_mode': 'memory_mode',
                                     'pmem_dram_cache_gb_per_cell': '0'}))
        self.assertEqual((profile.MISSING, profile.DRAM_CACHE_KEY),
                         self._code({'pmem_mode': 'cxl_flat'}))

    def test_known_profiles_have_none(self):
        prof = profile.from_metadata([{'pmem_mode': 'dram'}])
        self.assertIsNone(prof.problem_code)
        self.assertIsNone(prof.problem_key)


class NearMemoryTestCase(testtools.TestCase):

    def test_near_memory_gb(self):
        for mode in kinds.ALL_MODES:
            expected = 64.0 if mode in kinds.TIERED else 384.0
            self.assertEqual(expected,
                             profile.near_memory_gb(mode, 384.0, 64.0))


class HostProfilesTestCase(testtools.TestCase):
    """A host's profile from every aggregate that holds it."""

    MM = {'pmem_mode': 'memory_mode', 'pmem_dram_cache_gb': '192'}

    def test_each_host_from_the_aggregates_holding_it(self):
        found = profile.host_profiles(
            ['a', 'b', 'c'],
            [(['a', 'b'], self.MM), (['b'], {'pmem_mode': 'dram'}),
             (['z'], {'pmem_mode': 'app_direct'}), (None, self.MM)],
            default_mode=kinds.APP_DIRECT)
        self.assertEqual(['a', 'b', 'c'], list(found))
        self.assertEqual(profile.build(kinds.MEMORY_MODE, 192), found['a'])
        # Two aggregates that disagree: unknown.
        self.assertEqual(profile.DISAGREE, found['b'].problem_code)
        # In no aggregate: the default mode.
        self.assertEqual(kinds.APP_DIRECT, found['c'].mode)

    def test_values_spread_over_aggregates_merge(self):
        found = profile.host_profiles(
            ['a'], [(['a'], {'pmem_mode': 'memory_mode'}),
                    (['a'], {'pmem_dram_cache_gb': '96'}),
                    (['a'], None), (['a'], {'other': 'x'})])
        self.assertEqual(profile.build(kinds.MEMORY_MODE, 96), found['a'])

    def test_same_as_from_metadata(self):
        aggs = [(['a'], self.MM), (['a'], {'pmem_dram_cache_gb': '64'})]
        self.assertEqual(
            profile.from_metadata([m for _h, m in aggs]),
            profile.host_profiles(['a'], aggs)['a'])
