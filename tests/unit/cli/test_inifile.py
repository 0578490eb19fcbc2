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
"""What the nova.conf editor takes for an ini file, judged by oslo.config.

The editor's own rule (:meth:`IniFile.syntax_error`) is checked against
oslo.config's parser, which nova-api and nova-scheduler read the file with:
a file the editor refuses is one oslo.config refuses too, or one no
OpenStack service was ever given (YAML, JSON).
"""

import os

import fixtures
from oslo_config import cfg
from oslo_config import iniparser
import testtools

from nova_pmem_filters.cli import inifile

ACCEPTED = [
    '',
    '# only a comment\n',
    '[DEFAULT]\ndebug = true\n; a comment\n\n[filter_scheduler]\n'
    'enabled_filters = A,\n  B\n',
    '[DEFAULT]\ntransport_url: rabbit://u:p@host:5672/\n',
    '[DEFAULT]\n#reserved_host_memory_mb = 512\n',
]
# (text, line refused): YAML, JSON, an option outside any section, an
# indented line that continues nothing.
REFUSED = [
    ('compute:\n  ram_allocation_ratio: 1.5\n', 1),
    ('{"DEFAULT": {"debug": true}}\n', 1),
    ('debug = true\n[DEFAULT]\n', 1),
    ('[DEFAULT]\n- item\n', 2),
    ('[DEFAULT]\n  indented = 1\n', 2),
]


class SyntaxErrorTest(testtools.TestCase):

    def oslo_refuses(self, text):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'nova.conf')
        with open(path, 'w') as f:
            f.write(text)
        try:
            cfg.ConfigParser(path, {}).parse()
        except iniparser.ParseError:
            return True
        return False

    def test_accepted(self):
        for text in ACCEPTED:
            self.assertIsNone(inifile.IniFile(text).syntax_error(), text)
            self.assertFalse(self.oslo_refuses(text), text)

    def test_refused_with_the_line(self):
        for text, line in REFUSED:
            error = inifile.IniFile(text).syntax_error()
            self.assertIsNotNone(error, text)
            self.assertEqual(line, error[0], text)
            self.assertTrue(self.oslo_refuses(text), text)
