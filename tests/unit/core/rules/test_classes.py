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
"""The class names of nova.conf: the core's list is what Nova loads."""

from nova import loadables
from nova.scheduler import filters as nova_filters
from nova.scheduler import weights as nova_weights
import testtools

from nova_pmem_filters.core.rules import classes
from nova_pmem_filters import filters
from nova_pmem_filters import weighers


class ClassesTestCase(testtools.TestCase):

    def test_all_filters(self):
        self.assertEqual(classes.FILTERS,
                         tuple(c.__name__ for c in filters.all_filters()))

    def test_all_weighers(self):
        self.assertEqual(classes.WEIGHERS,
                         tuple(c.__name__ for c in weighers.all_weighers()))

    def test_paths_load_as_nova_loads_them(self):
        # [filter_scheduler] available_filters and weight_classes.
        for handler, path, names in (
                (nova_filters.HostFilterHandler(), classes.ALL_FILTERS,
                 classes.FILTERS),
                (nova_weights.HostWeightHandler(), classes.ALL_WEIGHERS,
                 classes.WEIGHERS)):
            loaded = handler.get_matching_classes([path])
            self.assertEqual(names, tuple(c.__name__ for c in loaded))
            for name in names:
                self.assertEqual(
                    [name], [c.__name__ for c in handler.get_matching_classes(
                        ['%s.%s' % (path.rpartition('.')[0], name)])])
        self.assertTrue(issubclass(nova_filters.HostFilterHandler,
                                   loadables.BaseLoader))
