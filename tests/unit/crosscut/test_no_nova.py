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
"""The shared core (profile, extra_specs) must work with no Nova installed.

The planner and an operator's laptop import it without Nova, so a fresh
interpreter in which ``import nova`` fails must still import and use it.
"""

import json
import subprocess
import sys
import textwrap

import testtools

# Runs in a fresh interpreter: a meta path finder refuses nova and every
# submodule, as if Nova were not installed.
_SCRIPT = textwrap.dedent("""
    import importlib.abc
    import sys

    class NoNova(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == 'nova' or name.startswith('nova.'):
                raise ImportError('nova is blocked: ' + name)
            return None

    sys.meta_path.insert(0, NoNova())
    try:
        import nova  # noqa
    except ImportError:
        pass
    else:
        sys.exit('the nova blocker does not work')

    %(imports)s

    leaked = sorted(m for m in sys.modules
                    if m == 'nova' or m.startswith('nova.'))
    if leaked:
        sys.exit('nova modules imported: %%s' %% leaked)
    print('OK')
""")


class NoNovaTestCase(testtools.TestCase):

    def _run(self, imports):
        script = _SCRIPT % {'imports': textwrap.dedent(imports).strip()}
        return subprocess.run([sys.executable, '-c', script],
                              capture_output=True, text=True, timeout=120)

    def test_shared_core_imports_no_nova(self):
        proc = self._run("""
            import nova_pmem_filters.core as core
            from nova_pmem_filters.core.rules import extra_specs
            from nova_pmem_filters.core.rules import nearmem
            from nova_pmem_filters.core.rules import profile
            import pkgutil
            for module in pkgutil.iter_modules(core.__path__):
                __import__('nova_pmem_filters.core.' + module.name)
            prof = profile.from_metadata(
                [{'pmem_mode': 'memory_mode', 'pmem_dram_cache_gb': '1'}])
            req = extra_specs.parse({'pmem:hot_ratio': '0.5'})
            assert nearmem.fits_cache(0.0, req.hot_mb(2048),
                                    prof.cache_capacity_mb())
            """)
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertEqual('OK\n', proc.stdout)

    def test_planner_runs_without_nova(self):
        proc = self._run("""
            from nova_pmem_filters.planner import cli
            assert cli.main(['compare', '-f', 'json']) == 0
            """)
        self.assertEqual(0, proc.returncode, proc.stderr)
        output, ok, _rest = proc.stdout.rpartition('OK\n')
        self.assertEqual('OK\n', ok)
        rows = json.loads(output)
        # One role per configuration: MySQL gets the ratio Redis needs.
        self.assertEqual([14, 14, 19, 19],
                         [r['vms_per_node'] for r in rows])

    def test_fleet_commands_run_without_nova(self):
        # optimize, simulate and sweep, and the shared rules the simulator
        # decides with.
        proc = self._run("""
            from nova_pmem_filters.core.rules import decide  # noqa
            from nova_pmem_filters.planner import cli
            assert cli.main(['optimize', '--no-single', '-f', 'value',
                             '-c', 'nodes']) == 0
            assert cli.main(['simulate', '--nodes', 'mm-192-512=4',
                             '--days', '20', '-f', 'value',
                             '-c', 'kind']) == 0
            assert cli.main(['sweep', '--power-price', '0.1', '--jobs', '1',
                             '-f', 'value', '-c', 'nodes']) == 0
            """)
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertEqual(['52', '52', 'mm-192-512', 'total', '52', 'OK'],
                         proc.stdout.split())

    def test_blocker_catches_nova_imports(self):
        # The same harness fails for a module that does need Nova, so the
        # test above is not passing by accident.
        proc = self._run("""
            from nova_pmem_filters import filters  # noqa
            """)
        self.assertNotEqual(0, proc.returncode)
        self.assertIn('nova is blocked', proc.stderr)
