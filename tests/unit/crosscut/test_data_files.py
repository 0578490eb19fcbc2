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
"""The files the package installs besides its code (setup.cfg data_files).

Every example, the observer's unit files and the sample configuration are
installed, each where the install page says; pbr copies a directory that a
glob matches whole.
"""

import configparser
import glob
import os

import testtools

from tests.unit import paths

# What the docs say ships: every file under these, and these files.
SHIPPED_TREES = ('etc/examples', 'etc/nova-pmem-filters/observe')
SHIPPED_FILES = ('etc/nova-pmem-filters/nova-pmem-filters.conf.sample',)


def _files_under(relative):
    top = paths.of(relative)
    if os.path.isfile(top):
        return {relative}
    return {os.path.relpath(os.path.join(where, name), paths.ROOT)
            for where, _, names in os.walk(top) for name in names}


def data_files():
    """{installed directory: set of source files}, as pbr reads them."""
    parser = configparser.ConfigParser()
    parser.read(paths.of('setup.cfg'))
    installed = {}
    for line in parser.get('files', 'data_files').strip().splitlines():
        target, _, source = (part.strip() for part in line.partition('='))
        files = installed.setdefault(target, set())
        for match in glob.glob(paths.of(source)):
            files |= _files_under(os.path.relpath(match, paths.ROOT))
    return installed


class DataFilesTest(testtools.TestCase):

    def test_every_shipped_file_is_installed(self):
        wanted = set(SHIPPED_FILES)
        for tree in SHIPPED_TREES:
            wanted |= _files_under(tree)
        self.assertGreater(len(wanted), 20)
        installed = set().union(*data_files().values())
        self.assertEqual(set(), wanted - installed)

    def test_install_page_names_every_target(self):
        with open(paths.of('doc', 'source', 'install.rst')) as f:
            page = f.read()
        section = page.split('What the package installs', 1)[1].split(
            'By deployment tool', 1)[0]
        for target in data_files():
            self.assertIn('``%s/``' % target, section)
