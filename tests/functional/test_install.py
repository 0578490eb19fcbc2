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
"""A filters-only install: what ``pip install nova-pmem-filters`` brings.

The wheel of this tree is installed, bare, into a new virtualenv: it must
bring what nova-scheduler and nova-api need (pbr, oslo.config, oslo.log and
what they need) and none of the tools' libraries, the core must work there,
and each tool must say in one line which extra it needs. Needs PyPI (or a
configured index) for oslo.config and oslo.log; versions come from
upper-constraints.txt.
"""

import json
import os
import subprocess
import sys

import fixtures
import testtools

_TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

# What the tools bring through their extras (setup.cfg [extras]), by
# distribution name. PyYAML is in the extras too, but oslo.config needs it.
TOOL_LIBRARIES = frozenset([
    'cliff', 'jsonschema', 'joblib', 'keystoneauth1', 'matplotlib', 'numpy',
    'openstacksdk', 'pandas', 'scipy'])

# The console scripts, their extra and their status without it: 3, "could
# not run", for every tool (doc/source/cli.rst).
TOOLS = (('nova-pmem-planner', ['compare'], 'planner', 3),
         ('nova-pmem-doctor', ['check'], 'doctor', 3),
         ('nova-pmem-observe', ['--window', '1'], 'observe', 3))
# nova-pmem-discover needs only PyYAML, which oslo.config brings: it runs
# in a bare install, and on a host without the tools says so in one line.
DISCOVER = 'nova-pmem-discover'


# The constraints a tox environment of the release matrix sets (tox.ini):
# the bare install gives its own, and pip must not apply a release's to
# the isolated environment that builds the wheel.
_TOX_CONSTRAINTS = ('PIP_CONSTRAINT', 'UV_CONSTRAINT')


def _run(argv, env=None, **kwargs):
    env = {k: v for k, v in (os.environ if env is None else env).items()
           if k not in _TOX_CONSTRAINTS}
    return subprocess.run(argv, capture_output=True, text=True, timeout=600,
                          env=env, **kwargs)


class BareInstallTest(testtools.TestCase):
    """One test: the wheel is built and installed once (minutes, network)."""

    def setUp(self):
        super(BareInstallTest, self).setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.venv = os.path.join(self.tmp, 'venv')
        proc = _run([sys.executable, '-m', 'venv', self.venv])
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.python = os.path.join(self.venv, 'bin', 'python')

    def _install_the_tree(self):
        wheels = os.path.join(self.tmp, 'wheels')
        # pbr reads the version from git: build from the tree itself.
        proc = _run([self.python, '-m', 'pip', 'wheel', '--no-deps', '-q',
                     '--disable-pip-version-check', '--wheel-dir', wheels,
                     _TOP])
        self.assertEqual(0, proc.returncode, proc.stderr)
        (wheel,) = os.listdir(wheels)
        proc = _run([self.python, '-m', 'pip', 'install', '-q',
                     '--disable-pip-version-check', '-c',
                     os.path.join(_TOP, 'upper-constraints.txt'),
                     os.path.join(wheels, wheel)])
        self.assertEqual(0, proc.returncode, proc.stderr)

    def _python(self, code):
        # Outside the tree, so that it imports the installed package.
        proc = _run([self.python, '-c', code], cwd=self.tmp)
        self.assertEqual(0, proc.returncode, proc.stderr)
        return proc.stdout

    def test_bare_install(self):
        self._install_the_tree()
        self._check_installed_distributions()
        self._check_the_scheduler_side()
        self._check_each_tool_names_its_extra()
        self._check_discover_runs()

    def _check_installed_distributions(self):
        names = json.loads(self._python(
            'import importlib.metadata, json\n'
            'print(json.dumps(sorted({d.metadata["Name"].lower()\n'
            '    for d in importlib.metadata.distributions()})))'))
        self.assertIn('nova-pmem-filters', names)
        for needed in ('pbr', 'oslo.config', 'oslo.log'):
            self.assertIn(needed, names)
        self.assertEqual([], sorted(TOOL_LIBRARIES & set(names)), names)

    def _check_the_scheduler_side(self):
        out = self._python(
            'import nova_pmem_filters.conf as conf\n'
            'from nova_pmem_filters.conf import opts\n'
            'from nova_pmem_filters.core.rules import extra_specs, profile\n'
            'prof = profile.from_metadata([{"pmem_mode": "memory_mode", '
            '"pmem_dram_cache_gb": "192"}])\n'
            'req = extra_specs.parse({"pmem:hot_ratio": "0.25"})\n'
            'print(prof.mode, req.hot_mb(4096), '
            'conf.CONF.pmem.default_hot_ratio, '
            '[g.name for g, _o in opts.list_opts()])')
        self.assertEqual("memory_mode 1024.0 0.5 ['pmem']", out.strip())
        proc = _run([os.path.join(self.venv, 'bin', 'oslo-config-generator'),
                     '--namespace', 'nova_pmem_filters'])
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertIn('[pmem]', proc.stdout)
        self.assertIn('#default_hot_ratio = 0.5', proc.stdout)

    def _check_each_tool_names_its_extra(self):
        for tool, argv, extra, status in TOOLS:
            proc = _run([os.path.join(self.venv, 'bin', tool)] + argv,
                        cwd=self.tmp)
            self.assertEqual(status, proc.returncode, (tool, proc.stderr))
            self.assertEqual('', proc.stdout)
            lines = proc.stderr.splitlines()
            self.assertEqual(1, len(lines), (tool, proc.stderr))
            self.assertIn("%s: needs the '%s' extra: pip install "
                          "'nova-pmem-filters[%s]' (missing: "
                          % (tool, extra, extra), lines[0])

    def _check_discover_runs(self):
        tool = os.path.join(self.venv, 'bin', DISCOVER)
        proc = _run([tool, '--help'], cwd=self.tmp)
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertIn('--provider-config', proc.stdout)
        # No ipmctl or ndctl on the PATH: one line naming the tool, could
        # not run.
        proc = _run([tool, '--json'], cwd=self.tmp,
                    env=dict(os.environ, PATH=os.path.join(self.venv, 'bin')))
        self.assertEqual(3, proc.returncode, proc.stderr)
        self.assertEqual('', proc.stdout)
        lines = proc.stderr.splitlines()
        self.assertEqual(1, len(lines), proc.stderr)
        self.assertNotIn('extra', lines[0])
        self.assertRegex(lines[0], r'(ndctl|ipmctl)')
