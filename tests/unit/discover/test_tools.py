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
"""nova-pmem-discover against running tools: fakes, mutations, the real ones.

Fake ``ipmctl`` / ``ndctl`` executables in a temporary directory on PATH
play a missing, failing, hanging or babbling tool; a property test feeds
mutated recorded outputs; the real tools run when they are installed.
"""

import io
import json
import os
import shutil
import subprocess
import sys
import time

import fixtures
import hypothesis
from hypothesis import strategies as st
import testtools

from nova_pmem_filters.discover import cli
from nova_pmem_filters.discover import runner
from tests.unit import paths

DATA = os.path.join(paths.of('tests', 'unit'), 'discover_data')
DOC = paths.of('doc', 'source', 'discovery.rst')
NO_PMEM = 'Initialization failed. No PMem modules in the system.'


def run(argv):
    out = io.StringIO()
    err = io.StringIO()
    status = cli.main(list(argv), stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


class FakeTools(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.bin = self.useFixture(fixtures.TempDir()).path
        # Only our fakes: a real tool would shadow the missing-binary case.
        self.useFixture(fixtures.EnvironmentVariable('PATH', self.bin))

    def fake(self, name, body):
        path = os.path.join(self.bin, name)
        with open(path, 'w') as f:
            # The fakes find sleep and cat; we find only the fakes.
            f.write('#!/bin/sh\nPATH=/usr/bin:/bin\n' + body + '\n')
        os.chmod(path, 0o755)

    def assert_one_line_error(self, status, out, err, code=3):
        self.assertEqual(code, status, err)
        self.assertEqual('', out)
        self.assertEqual(1, len(err.splitlines()), err)
        self.assertTrue(err.startswith('nova-pmem-discover: error: '), err)
        self.assertNotIn('Traceback', err)
        self.assertNotIn('unexpected', err)

    def test_missing_binaries(self):
        status, out, err = run([])
        self.assert_one_line_error(status, out, err)
        self.assertIn('command not found', err)

    def test_missing_ipmctl(self):
        self.fake('ndctl', 'echo "[]"')
        status, out, err = run([])
        self.assert_one_line_error(status, out, err)
        self.assertIn('ipmctl: command not found', err)

    def test_failing_tool(self):
        self.fake('ndctl', 'echo "[]"')
        self.fake('ipmctl', 'echo "Error: Failed to read the PCD" >&2; '
                  'exit 3')
        status, out, err = run([])
        self.assert_one_line_error(status, out, err)
        self.assertIn('exit status 3', err)
        self.assertIn('Failed to read the PCD', err)

    def test_failing_ndctl(self):
        self.fake('ndctl', 'echo "libndctl: bad things" >&2; exit 1')
        status, out, err = run([])
        self.assert_one_line_error(status, out, err)
        self.assertIn('ndctl list --regions --namespaces', err)

    def test_hanging_tool(self):
        self.fake('ndctl', 'echo "[]"')
        # A child that keeps the pipes open must not keep us waiting.
        self.fake('ipmctl', 'sleep 30 & sleep 30')
        start = time.monotonic()
        status, out, err = run(['--timeout', '0.5'])
        self.assertLess(time.monotonic() - start, 10)
        self.assert_one_line_error(status, out, err)
        self.assertIn('timeout', err)

    def test_garbage(self):
        self.fake('ndctl', 'echo "[]"')
        self.fake('ipmctl', r'printf "\377\376garbage\001\n"')
        status, out, err = run([])
        self.assert_one_line_error(status, out, err)

    def test_truncated(self):
        src = os.path.join(DATA, 'mm_2s_pmem100_256', 'ipmctl-dimm.xml')
        with open(src) as f:
            text = f.read()
        half = os.path.join(self.bin, 'half.xml')
        with open(half, 'w') as f:
            f.write(text[:len(text) // 2])
        self.fake('ndctl', 'true')
        self.fake('ipmctl', 'cat %s' % half)
        status, out, err = run([])
        self.assert_one_line_error(status, out, err)
        self.assertIn('not valid XML', err)

    def test_truncated_ndctl(self):
        self.fake('ndctl', 'printf \'[{"dev":"region0","size":12\'')
        status, out, err = run([])
        self.assert_one_line_error(status, out, err)
        self.assertIn('not valid JSON', err)

    def test_no_pmem_is_a_dram_host(self):
        for ndctl_out in ('true', 'echo "[]"'):
            self.fake('ndctl', ndctl_out)
            self.fake('ipmctl', 'echo "%s"; exit 1' % NO_PMEM)
            status, out, err = run([])
            self.assertEqual(0, status, err)
            prof = json.loads(out)
            self.assertEqual('dram', prof['mode'])
            self.assertIn('no PMem modules found', prof['notes'][0])

    def test_no_access(self):
        self.fake('ndctl', 'echo "[]"')
        self.fake('ipmctl', 'echo "ipmctl command you have attempted to '
                  'execute requires root privileges."; exit 1')
        status, out, err = run([])
        self.assertEqual(0, status, err)
        prof = json.loads(out)
        self.assertEqual('dram', prof['mode'])
        self.assertIn('no access', prof['notes'][0])
        # With regions ndctl can see, guessing "dram" would be wrong.
        self.fake('ndctl', 'echo \'{"dev":"region0","size":1073741824,'
                  '"numa_node":0}\'')
        status, out, err = run([])
        self.assert_one_line_error(status, out, err)
        self.assertIn('run as root', err)

    def test_live_run_uses_the_documented_commands(self):
        case = os.path.join(DATA, 'mixed_2s_pmem200_256')
        with open(DOC) as f:
            documented = ' '.join(f.read().split())
        # Serve each recorded file only for the argv the docs give it.
        for tool in ('ipmctl', 'ndctl'):
            lines = ['case "$*" in']
            for command in runner.COMMANDS:
                if command.argv[0] != tool:
                    continue
                self.assertIn('``%s``' % command.display(), documented)
                recorded = [n for n in command.files
                            if os.path.exists(os.path.join(case, n))]
                lines.append('  "%s") cat %s;;' % (
                    ' '.join(command.argv[1:]),
                    os.path.join(case, recorded[0])))
            lines.append('  *) echo "unexpected: $*" >&2; exit 9;;')
            lines.append('esac')
            self.fake(tool, '\n'.join(lines))
        status, out, err = run(['--hostname', 'mixed-2s-pmem200-256'])
        self.assertEqual(0, status, err)
        status2, out2, err2 = run(['--from', case])
        self.assertEqual(json.loads(out2), json.loads(out))


# --- mutated outputs ------------------------------------------------------

CASE_FILES = sorted(
    (case, name) for case in os.listdir(DATA)
    for name in os.listdir(os.path.join(DATA, case))
    if name != 'hostname' and not name.endswith('.rc'))


def _mutate(text, kind, position, junk):
    if not text:
        return junk
    index = position % len(text)
    if kind == 'truncate':
        return text[:index]
    if kind == 'flip':
        return text[:index] + chr((ord(text[index]) ^ 0x5a) or 1) \
            + text[index + 1:]
    if kind == 'drop_line':
        lines = text.splitlines(True)
        del lines[index % len(lines)]
        return ''.join(lines)
    if kind == 'wrong_type':
        # Replace one value (after ':', '=', '>' or '|') by junk.
        seps = [i for i, c in enumerate(text) if c in ':=>|']
        if not seps:
            return junk
        start = seps[index % len(seps)] + 1
        end = start
        while end < len(text) and text[end] not in ',\n<|}':
            end += 1
        return text[:start] + junk + text[end:]
    return text + junk


class TestMutatedOutputs(testtools.TestCase):

    @hypothesis.settings(derandomize=True, deadline=None, max_examples=150,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(
        target=st.sampled_from(CASE_FILES),
        kind=st.sampled_from(['truncate', 'flip', 'drop_line',
                              'wrong_type', 'append']),
        position=st.integers(min_value=0, max_value=10 ** 6),
        junk=st.sampled_from(['', '"x"', '[]', '{}', 'null', '-1', 'true',
                              '1e999', 'abc GiB', '0xZZ', '<a>', '\x00',
                              '"12 GiB (1 GB)"', '9' * 30]))
    def test_never_raises(self, target, kind, position, junk):
        case, name = target
        tmp = self.useFixture(fixtures.TempDir()).path
        for entry in os.listdir(os.path.join(DATA, case)):
            shutil.copy(os.path.join(DATA, case, entry), tmp)
        with open(os.path.join(DATA, case, name), encoding='utf-8') as f:
            text = f.read()
        with open(os.path.join(tmp, name), 'w', encoding='utf-8',
                  errors='surrogateescape') as f:
            f.write(_mutate(text, kind, position, junk))
        for view in ('--json', '--table', '--aggregate', '--libvirt'):
            status, out, err = run(['--from', tmp, view, '--provider-config',
                                    os.path.join(tmp, 'pmem.yaml')])
            self.assertIn(status, (0, 2, 3), err)
            self.assertNotIn('Traceback', err)
            self.assertNotIn('unexpected', err)
            if status:
                self.assertEqual(1, len(err.splitlines()), err)
                self.assertEqual('', out)
            elif view == '--json':
                prof = json.loads(out)
                self.assertIn(prof['mode'], ('dram', 'memory_mode',
                                             'app_direct', 'mixed'))


# --- the real tools -------------------------------------------------------

class TestRealTools(testtools.TestCase):

    def setUp(self):
        super().setUp()
        if not (shutil.which('ipmctl') and shutil.which('ndctl')):
            self.skipTest('ipmctl and ndctl are not installed')

    def test_real_tools(self):
        proc = subprocess.run(
            [sys.executable, '-m', 'nova_pmem_filters.discover.cli',
             '--timeout', '60'],
            capture_output=True, text=True, timeout=300)
        self.assertNotIn('Traceback', proc.stderr)
        if proc.returncode == 0:
            prof = json.loads(proc.stdout)
            if prof['mode'] == 'dram':
                # No PMem here (or no access): said so, not guessed.
                self.assertTrue(any('no PMem' in n or 'no access' in n
                                    for n in prof['notes']), prof['notes'])
            self.assertEqual('', proc.stderr)
        else:
            # A host with PMem we may not read: one clear line, exit 3.
            self.assertEqual(3, proc.returncode, proc.stderr)
            self.assertEqual(1, len(proc.stderr.splitlines()), proc.stderr)


class TestNoNova(testtools.TestCase):

    def test_discover_imports_no_nova(self):
        script = (
            'import sys\n'
            'from nova_pmem_filters.discover import cli\n'
            'status = cli.main(["--from", %r, "--provider-config", %r])\n'
            'leaked = [m for m in sys.modules if m.split(".")[0] == "nova"]\n'
            'sys.exit(status or (1 if leaked else 0))\n'
            % (os.path.join(DATA, 'mixed_2s_pmem200_256'),
               os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'p.yaml')))
        proc = subprocess.run([sys.executable, '-c', script],
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(0, proc.returncode, proc.stderr)
