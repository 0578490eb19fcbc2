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

import testtools

from nova_pmem_filters import profile


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
        self.assertEqual(profile.HostProfile(mode=profile.DRAM), prof)
        self.assertTrue(prof.known)
        self.assertIsNone(prof.problem)

    def test_aggregates_without_pmem_keys_are_default_mode(self):
        prof = profile.from_metadata(
            [{}, None, {'availability_zone': 'az1', 'ssd': 'true'}],
            default_mode=profile.APP_DIRECT)
        self.assertEqual(profile.APP_DIRECT, prof.mode)
        self.assertIsNone(prof.dram_cache_gb)

    def test_default_memory_mode_needs_a_cache_size(self):
        self._unknown([], profile.DRAM_CACHE_KEY,
                      default_mode=profile.MEMORY_MODE)
        prof = profile.from_metadata([{profile.DRAM_CACHE_KEY: '64'}],
                                     default_mode=profile.MEMORY_MODE)
        self.assertEqual(profile.MEMORY_MODE, prof.mode)
        self.assertEqual(64.0, prof.dram_cache_gb)

    def test_dram(self):
        prof = profile.from_metadata([{profile.MODE_KEY: 'dram'}],
                                     default_mode=profile.APP_DIRECT)
        self.assertEqual(profile.HostProfile(mode=profile.DRAM), prof)

    def test_app_direct(self):
        prof = profile.from_metadata([{profile.MODE_KEY: 'app_direct'}])
        self.assertEqual(profile.HostProfile(mode=profile.APP_DIRECT), prof)

    def test_memory_mode(self):
        prof = profile.from_metadata([{profile.MODE_KEY: 'memory_mode',
                                       profile.DRAM_CACHE_KEY: '192'}])
        self.assertEqual(
            profile.HostProfile(mode=profile.MEMORY_MODE, dram_cache_gb=192.0),
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
        self.assertEqual(profile.MEMORY_MODE, prof.mode)
        self.assertEqual(96.0, prof.dram_cache_gb)

    def test_memory_mode_without_cache_size(self):
        self._unknown([{profile.MODE_KEY: 'memory_mode'}],
                      profile.DRAM_CACHE_KEY, 'memory_mode')

    def test_cache_size_ignored_outside_memory_mode(self):
        for mode in (profile.DRAM, profile.APP_DIRECT):
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
            profile.HostProfile(mode=profile.MEMORY_MODE, dram_cache_gb=192.0),
            prof)

    def test_whitespace_differences_are_not_a_conflict(self):
        prof = profile.from_metadata([{profile.MODE_KEY: 'dram'},
                                      {profile.MODE_KEY: ' dram '}])
        self.assertEqual(profile.DRAM, prof.mode)

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
        prof = profile.HostProfile(mode=profile.DRAM)
        self.assertEqual({prof}, {profile.HostProfile(mode=profile.DRAM)})
        self.assertRaises(AttributeError, setattr, prof, 'mode', 'x')


class CacheArithmeticTestCase(testtools.TestCase):

    def test_cache_capacity_mb(self):
        prof = profile.HostProfile(mode=profile.MEMORY_MODE, dram_cache_gb=2)
        self.assertEqual(2048.0, prof.cache_capacity_mb())
        self.assertEqual(3072.0, prof.cache_capacity_mb(1.5))
        self.assertEqual(0.0, prof.cache_capacity_mb(0.0))

    def test_cache_capacity_outside_memory_mode(self):
        for prof in (profile.HostProfile(mode=profile.DRAM),
                     profile.HostProfile(mode=profile.APP_DIRECT),
                     profile.HostProfile(problem='unknown')):
            self.assertIsNone(prof.cache_capacity_mb())

    def test_hot_mb(self):
        self.assertEqual(1024.0, profile.hot_mb(4096, 0.25))
        self.assertEqual(4096.0, profile.hot_mb(4096, 1.0))
        self.assertEqual(0.0, profile.hot_mb(0, 0.5))

    def test_fits_cache_exact_bound(self):
        self.assertTrue(profile.fits_cache(1024.0, 1024.0, 2048.0))
        self.assertTrue(profile.fits_cache(0.0, 2048.0, 2048.0))
        self.assertFalse(profile.fits_cache(1024.0, 1025.0, 2048.0))
        self.assertFalse(profile.fits_cache(0.0, 2048.01, 2048.0))

    def test_fits_cache_float_sums(self):
        # Ten instances of 1024 MB at hot ratio 0.7 fill a 7 GB cache
        # exactly, although the float sum is a hair above 7168.
        used = 0.0
        for _ in range(9):
            used += profile.hot_mb(1024, 0.7)
        new = profile.hot_mb(1024, 0.7)
        self.assertGreater(used + new, 7168.0)
        self.assertTrue(profile.fits_cache(used, new, 7168.0))
        self.assertFalse(profile.fits_cache(used, new + 0.001, 7168.0))

    def test_nothing_fits_a_zero_cache(self):
        self.assertTrue(profile.fits_cache(0.0, 0.0, 0.0))
        self.assertFalse(profile.fits_cache(0.0, 1.0, 0.0))

    def test_headroom(self):
        self.assertEqual(1024.0, profile.cache_headroom_mb(1024.0, 2048.0))
        self.assertEqual(2048.0, profile.cache_headroom_mb(0.0, 2048.0))
        self.assertEqual(0.0, profile.cache_headroom_mb(2048.0, 2048.0))
        # Overcommitted hosts have no headroom, never a negative one.
        self.assertEqual(0.0, profile.cache_headroom_mb(4096.0, 2048.0))
