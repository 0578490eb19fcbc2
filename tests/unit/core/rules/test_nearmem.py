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
"""The near-memory arithmetic of the core."""

import testtools

from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import nearmem
from nova_pmem_filters.core.rules import profile


class CacheArithmeticTestCase(testtools.TestCase):

    def test_cache_capacity_mb(self):
        prof = profile.HostProfile(mode=kinds.MEMORY_MODE, dram_cache_gb=2)
        self.assertEqual(2048.0, prof.cache_capacity_mb())
        self.assertEqual(3072.0, prof.cache_capacity_mb(1.5))
        self.assertEqual(0.0, prof.cache_capacity_mb(0.0))

    def test_cache_capacity_outside_memory_mode(self):
        for prof in (profile.HostProfile(mode=kinds.DRAM),
                     profile.HostProfile(mode=kinds.APP_DIRECT),
                     profile.HostProfile(problem='unknown')):
            self.assertIsNone(prof.cache_capacity_mb())

    def test_hot_mb(self):
        self.assertEqual(1024.0, nearmem.hot_mb(4096, 0.25))
        self.assertEqual(4096.0, nearmem.hot_mb(4096, 1.0))
        self.assertEqual(0.0, nearmem.hot_mb(0, 0.5))

    def test_fits_cache_exact_bound(self):
        self.assertTrue(nearmem.fits_cache(1024.0, 1024.0, 2048.0))
        self.assertTrue(nearmem.fits_cache(0.0, 2048.0, 2048.0))
        self.assertFalse(nearmem.fits_cache(1024.0, 1025.0, 2048.0))
        self.assertFalse(nearmem.fits_cache(0.0, 2048.01, 2048.0))

    def test_fits_cache_float_sums(self):
        # Ten instances of 1024 MB at hot ratio 0.7 fill a 7 GB cache
        # exactly, although the float sum is a hair above 7168.
        used = 0.0
        for _ in range(9):
            used += nearmem.hot_mb(1024, 0.7)
        new = nearmem.hot_mb(1024, 0.7)
        self.assertGreater(used + new, 7168.0)
        self.assertTrue(nearmem.fits_cache(used, new, 7168.0))
        self.assertFalse(nearmem.fits_cache(used, new + 0.001, 7168.0))

    def test_nothing_fits_a_zero_cache(self):
        self.assertTrue(nearmem.fits_cache(0.0, 0.0, 0.0))
        self.assertFalse(nearmem.fits_cache(0.0, 1.0, 0.0))

    def test_headroom(self):
        self.assertEqual(1024.0, nearmem.cache_headroom_mb(1024.0, 2048.0))
        self.assertEqual(2048.0, nearmem.cache_headroom_mb(0.0, 2048.0))
        self.assertEqual(0.0, nearmem.cache_headroom_mb(2048.0, 2048.0))
        # Overcommitted hosts have no headroom, never a negative one.
        self.assertEqual(0.0, nearmem.cache_headroom_mb(4096.0, 2048.0))


class HotRamTestCase(testtools.TestCase):

    def test_add_counts_floating_and_bound_instances(self):
        used = nearmem.HotRam(0.0)
        used.add(1024.0)
        used.add(512.0, nearmem.bound_cells([(0, 1024), (1, 1024)], 512.0))
        used.add(256.0, ((1, 256.0),))
        self.assertEqual(nearmem.HotRam(1792.0, {0: 256.0, 1: 512.0}), used)
        self.assertEqual(1024.0, used.floating)
