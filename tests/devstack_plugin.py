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
"""Running devstack/plugin.sh as devstack runs it, for the tests.

``source settings; source plugin.sh MODE [PHASE]`` in bash, with the few
devstack functions the plugin calls played by stand-ins, in a scratch
devstack (DEST, DATA_DIR, nova.conf, nova-cpu.conf). Imports nothing from
Nova: the functional tests and the integration suite both use it.
"""

import os
import subprocess
import sys

import fixtures

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Stand-ins for the devstack functions the plugin calls.
DEVSTACK_STUBS = r'''
function trueorfalse {
    local default=$1 value=${!2:-$1}
    case ${value,,} in
        true|yes|on|1) echo True ;;
        false|no|off|0) echo False ;;
        *) echo "$default" ;;
    esac
}
function define_plugin { :; }
function echo_summary { echo "summary: $*"; }
# As devstack's: warn prints its second argument only, on stdout; die
# prints every argument after the line number.
function warn { echo "[WARNING] $2"; }
function die { shift; echo "[ERROR] $*" >&2; exit 1; }
function setup_develop { echo "setup_develop $*" >> "$STUB_LOG"; }
'''

# The [filter_scheduler] section devstack's lib/nova writes, with a
# comment and a neighbouring option the plugin must keep.
DEVSTACK_NOVA_CONF = '''[DEFAULT]
debug = True

[filter_scheduler]
# written by devstack
enabled_filters = ComputeFilter,ComputeCapabilitiesFilter,\
ImagePropertiesFilter,ServerGroupAntiAffinityFilter,ServerGroupAffinityFilter
track_instance_changes = True

[scheduler]
workers = 2
'''


class Devstack(fixtures.Fixture):
    """A scratch devstack: DEST, DATA_DIR, nova.conf, nova-cpu.conf."""

    def __init__(self, nova_conf=DEVSTACK_NOVA_CONF, **variables):
        super().__init__()
        self.nova_conf_text = nova_conf
        self.variables = variables

    def _setUp(self):
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.nova_conf = os.path.join(self.dir, 'etc', 'nova', 'nova.conf')
        self.cpu_conf = os.path.join(self.dir, 'etc', 'nova',
                                     'nova-cpu.conf')
        os.makedirs(os.path.dirname(self.nova_conf))
        with open(self.nova_conf, 'w') as f:
            f.write(self.nova_conf_text)
        os.chmod(self.nova_conf, 0o640)
        with open(self.cpu_conf, 'w') as f:
            f.write('[DEFAULT]\nram_allocation_ratio = 1.5\n')
        self.stub_log = os.path.join(self.dir, 'stub.log')
        self.env = {
            'PATH': os.environ['PATH'], 'HOME': self.dir,
            'DEST': os.path.join(self.dir, 'opt'),
            'DATA_DIR': os.path.join(self.dir, 'data'),
            'NOVA_CONF': self.nova_conf, 'NOVA_CPU_CONF': self.cpu_conf,
            'PYTHON': sys.executable, 'NOVA_PMEM_FILTERS_DIR': TOP,
            'NOVA_PMEM_PROVIDER_CONFIG_DIR': os.path.join(
                self.dir, 'etc', 'nova', 'provider_config'),
            'STUB_LOG': self.stub_log,
        }
        self.env.update(self.variables)

    def run(self, *phase, expect=0):
        script = (DEVSTACK_STUBS
                  + 'source "$NOVA_PMEM_FILTERS_DIR/devstack/settings"\n'
                  + 'source "$NOVA_PMEM_FILTERS_DIR/devstack/plugin.sh" '
                  + ' '.join(phase) + '\n')
        proc = subprocess.run(['bash', '-c', script], env=self.env,
                              capture_output=True, text=True, timeout=600)
        if expect is not None and proc.returncode != expect:
            raise AssertionError('plugin.sh %s: exit %d\n%s\n%s'
                                 % (' '.join(phase), proc.returncode,
                                    proc.stdout, proc.stderr))
        return proc

    def read(self, path=None):
        with open(path or self.nova_conf) as f:
            return f.read()


def default_flavors():
    """The entries of NOVA_PMEM_FLAVORS that devstack/settings defaults to."""
    script = (DEVSTACK_STUBS + 'source "%s/devstack/settings"\n'
              'echo "$NOVA_PMEM_FLAVORS"\n' % TOP)
    env = {'PATH': os.environ['PATH']}
    proc = subprocess.run(['bash', '-c', script], env=env, check=True,
                          capture_output=True, text=True, timeout=60)
    return proc.stdout.split()
