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
"""The kernel's CPU and node lists, against an independent spelling."""

import itertools

import hypothesis
from hypothesis import strategies as st
import testtools

from nova_pmem_filters.core.grammars import cxltools
from nova_pmem_filters.core.grammars import errors
from nova_pmem_filters.core.grammars import kernellist
from nova_pmem_filters.core.grammars import sysfs


def oracle_text(ids):
    """bitmap_list_string's output, by grouping consecutive ids."""
    parts = []
    for _key, run in itertools.groupby(enumerate(sorted(set(ids))),
                                       lambda pair: pair[1] - pair[0]):
        run = [i for _n, i in run]
        parts.append(str(run[0]) if len(run) == 1
                     else '%d-%d' % (run[0], run[-1]))
    return ','.join(parts)


class KernelListTest(testtools.TestCase):

    def test_as_sysfs_prints_them(self):
        # A two-socket host with hyper-threads: node0/cpulist.
        self.assertEqual(list(range(0, 28)) + list(range(56, 84)),
                         kernellist.parse('0-27,56-83\n'))
        self.assertEqual([3], kernellist.parse('3'))
        self.assertEqual([], kernellist.parse('\n'))
        self.assertEqual('0-27,56-83', kernellist.format(
            list(range(0, 28)) + list(range(56, 84))))
        self.assertEqual('', kernellist.format([]))

    @hypothesis.given(st.sets(st.integers(0, 300), max_size=60))
    def test_round_trip(self, ids):
        text = kernellist.format(sorted(ids))
        self.assertEqual(oracle_text(ids), text)
        self.assertEqual(sorted(ids), kernellist.parse(text))

    def test_what_is_not_a_list(self):
        for text in ('2-1', '0,,1', 'a', '0-', '-1', '1 2', '0-3:2',
                     '0x1', '1,2,'):
            self.assertIsNone(kernellist.parse(text), text)

    def test_bounded(self):
        # One id more than the largest kernel's NR_CPUS, in one range or
        # in many: refused without expanding it.
        top = kernellist.MAX_IDS
        self.assertEqual(top, len(kernellist.parse('0-%d' % (top - 1))))
        self.assertIsNone(kernellist.parse('0-%d' % top))
        self.assertIsNone(kernellist.parse('0-100000000'))
        self.assertIsNone(kernellist.parse(
            ','.join(str(i) for i in range(top + 1))))
        self.assertIsNone(kernellist.parse('1' * 100000))

    def test_each_grammar_fails_with_its_own_error(self):
        self.assertEqual([0, 1], cxltools.parse_cpulist('0-1\n', 'F'))
        self.assertRaises(errors.DiscoveryError, cxltools.parse_cpulist,
                          '0-100000000', 'F')
        self.assertEqual((0, 1), sysfs.parse_nodelist('0-1\n', 'F'))
        self.assertRaises(sysfs.TieringError, sysfs.parse_nodelist,
                          '0-100000000', 'F')
