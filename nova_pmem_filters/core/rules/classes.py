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
"""The names operators write in nova.conf to load our filters and weighers.

``nova_pmem_filters.filters.all_filters()`` and
``nova_pmem_filters.weighers.all_weighers()`` return exactly these classes
(a test checks it); the doctor and nova-config name them from here, without
importing Nova.
"""

FILTERS_MODULE = 'nova_pmem_filters.filters'
WEIGHERS_MODULE = 'nova_pmem_filters.weighers'
# For [filter_scheduler] available_filters and weight_classes.
ALL_FILTERS = FILTERS_MODULE + '.all_filters'
ALL_WEIGHERS = WEIGHERS_MODULE + '.all_weighers'

# Class names, as [filter_scheduler] enabled_filters matches them.
MODE_FILTER = 'PmemModeFilter'
CACHE_FILTER = 'PmemCacheFilter'
FILTERS = (MODE_FILTER, CACHE_FILTER)
TIER_WEIGHER = 'PmemTierWeigher'
HEADROOM_WEIGHER = 'PmemCacheHeadroomWeigher'
NUMA_CELL_WEIGHER = 'PmemNumaCellWeigher'
WEIGHERS = (TIER_WEIGHER, HEADROOM_WEIGHER, NUMA_CELL_WEIGHER)
