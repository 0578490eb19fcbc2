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
"""Running ``ipmctl``, ``ndctl``, ``cxl`` and ``daxctl``, or reading their
saved outputs, and reading the NUMA nodes of sysfs.

Each tool runs as an argv list (never through a shell), with stdin closed,
``LC_ALL=C`` and a timeout; on timeout its whole process group is killed.
``--from DIR`` reads one file per command instead (see :data:`COMMANDS`).

The kernel's tiering files (``--cxl``) are read where they are: under
``/`` on the host, under ``DIR`` as recorded with :data:`RECORD_TIERING`
(``DIR/proc/sys/kernel/numa_balancing``, ...); :meth:`tiering_root` says
which root, and ``core.grammars.sysfs`` reads them.
"""

import dataclasses
import glob
import os
import re
import subprocess

from nova_pmem_filters.cli import procutil
from nova_pmem_filters.core.grammars import errors
from nova_pmem_filters.core.grammars import toolout
from nova_pmem_filters.core.rules import tiering

# The distribution package of a tool, where it is not named after it
# (Debian and Ubuntu: /usr/bin/cxl is in ndctl).
PACKAGES = {toolout.CXL: 'ndctl', toolout.LSCPU: 'util-linux'}

# The tools' outputs are small; more than this is not an answer we can use.
_MAX_OUTPUT = 16 * 1024 * 1024


COMMANDS = (
    toolout.Command('dimm',
                    (toolout.IPMCTL, 'show', '-o', 'nvmxml', '-a', '-dimm'),
                    ('ipmctl-dimm.xml', 'ipmctl-dimm.txt')),
    toolout.Command('memoryresources',
                    (toolout.IPMCTL, 'show', '-o', 'nvmxml',
                     '-memoryresources'),
                    ('ipmctl-memoryresources.xml',
                     'ipmctl-memoryresources.txt')),
    toolout.Command('region',
                    (toolout.IPMCTL, 'show', '-o', 'nvmxml', '-region'),
                    ('ipmctl-region.xml', 'ipmctl-region.txt')),
    toolout.Command('socket',
                    (toolout.IPMCTL, 'show', '-o', 'nvmxml', '-socket'),
                    ('ipmctl-socket.xml', 'ipmctl-socket.txt')),
    # --verbose: ndctl prints a region's or namespace's numa_node only then.
    toolout.Command('ndctl', (toolout.NDCTL, 'list', '--regions',
                              '--namespaces', '--verbose'),
                    ('ndctl-list.json',)),
    # --cxl only: CXL memory devices, regions and (endpoint) decoders, and
    # the dax devices with their mode (system-ram or devdax).
    toolout.Command('cxl', (toolout.CXL, 'list', '--memdevs', '--regions',
                            '--decoders'),
                    ('cxl-list.json',)),
    # --regions: a region's path tells CXL dax devices from HMEM ones.
    toolout.Command('daxctl',
                    (toolout.DAXCTL, 'list', '--regions', '--devices'),
                    ('daxctl-list.json',)),
    # The host's CPUs (sockets, cores, threads) for the vcpus of the
    # profile; optional: a --from DIR without it gives a profile without.
    toolout.Command('lscpu', (toolout.LSCPU, '-J'), ('lscpu.json',)),
)
BY_KEY = {c.key: c for c in COMMANDS}

# Optional files in --from DIR.
HOSTNAME_FILE = 'hostname'
MEMINFO_FILE = 'meminfo'
# A file '<name>.rc' next to an output holds the tool's exit status
# (default 0), so a saved failure replays as one.
RC_SUFFIX = '.rc'
# The NUMA nodes (--cxl): /sys/devices/system/node/node<N>/cpulist and
# meminfo, saved in --from DIR as node-<N>-cpulist.txt and
# node-<N>-meminfo.txt.
SYS_NODE_DIR = '/sys/devices/system/node'
NODE_FILE = 'node-%d-%s.txt'
_NODE_FILE_RE = re.compile(r'^node-([0-9]+)-cpulist\.txt$')

# The kernel's tiering files (core.grammars.sysfs), relative to the root of the
# host's file system: under / live, under DIR with --from DIR.
LIVE_ROOT = '/'
TIERING_FILES = (
    tiering.OSRELEASE_FILE, tiering.NUMA_BALANCING_FILE,
    tiering.RATE_LIMIT_FILE, tiering.DEMOTION_FILE,
    tiering.MEMORY_TIERING_DIR + '/memory_tier*/nodelist',
    tiering.MOUNTS_FILE)
# A recording of them: cp names the files an older kernel does not have
# (and exits 1) and copies the others. Not tar: it stores the files of
# /proc, whose size is 0, empty.
RECORD_TIERING = 'cp --parents %s DIR/' % ' '.join(
    '/' + name for name in TIERING_FILES)
# The top directories of a recording: a DIR with neither was recorded
# before discovery read the tiering files.
_TIERING_TOPS = ('proc', 'sys')


@dataclasses.dataclass(frozen=True)
class NodeFiles:
    """The cpulist and meminfo of one NUMA node, and where they came from."""

    node: int
    cpulist: str
    cpulist_source: str
    meminfo: str
    meminfo_source: str


def _fmt_for(name):
    if name.endswith('.xml'):
        return 'xml'
    if name.endswith('.json'):
        return 'json'
    return 'text'


def _decode(raw):
    # A flipped byte must not become a UnicodeDecodeError traceback: the
    # parsers reject the replacement character like any other garbage.
    return raw.decode('utf-8', errors='replace')


class LiveRunner:
    """Runs the real tools."""

    def __init__(self, timeout=30.0):
        self.timeout = timeout

    def run(self, key):
        command = BY_KEY[key]
        env = dict(os.environ, LC_ALL='C', LANG='C')
        try:
            proc = subprocess.Popen(
                list(command.argv), stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                start_new_session=True)
        except FileNotFoundError:
            raise errors.ToolNotFound(
                '%s: command not found (install the %s package)'
                % (command.argv[0],
                   PACKAGES.get(command.argv[0], command.argv[0])),
                command.argv[0])
        except OSError as exc:
            raise errors.DiscoveryError(
                '%s: cannot run: %s' % (command.display(), exc.strerror))
        try:
            out, err = proc.communicate(timeout=self.timeout)
        except Exception as exc:
            # Under eventlet's monkey patching (a process that also loaded
            # Nova) the exception is green subprocess's own class.
            if type(exc).__name__ != 'TimeoutExpired':
                raise
            procutil.kill_group(proc)
            raise errors.DiscoveryError(
                '%s: no answer after %gs (timeout; see --timeout)'
                % (command.display(), self.timeout))
        if len(out) > _MAX_OUTPUT:
            raise errors.DiscoveryError(
                '%s: output larger than %d bytes'
                % (command.display(), _MAX_OUTPUT))
        text = _decode(out)
        if proc.returncode != 0 and not text.strip():
            # The tools print their errors on stdout or stderr, depending.
            text = _decode(err)
        return toolout.Output(command, text, proc.returncode,
                              _fmt_for(command.files[0]), command.display())

    def recorded(self, key):
        """Live tools are only run when asked for."""
        return False

    def tiering_root(self):
        """The root the kernel's tiering files are read under: ``/``."""
        return LIVE_ROOT

    def run_optional(self, key):
        """The output of ``key``, or None when the tool is not installed."""
        try:
            return self.run(key)
        except errors.ToolNotFound:
            return None

    def hostname(self):
        return os.uname().nodename

    def meminfo(self):
        try:
            with open('/proc/meminfo') as f:
                return f.read()
        except OSError:
            return None

    def numa_nodes(self, directory=SYS_NODE_DIR):
        found = []
        for path in glob.glob(os.path.join(directory, 'node[0-9]*')):
            match = re.match(r'^node([0-9]+)$', os.path.basename(path))
            if not match:
                continue
            texts = []
            for name in ('cpulist', 'meminfo'):
                source = os.path.join(path, name)
                try:
                    with open(source, 'rb') as f:
                        texts.append((_decode(f.read(_MAX_OUTPUT)), source))
                except OSError as exc:
                    raise errors.DiscoveryError('%s: cannot read: %s'
                                                % (source, exc.strerror))
            found.append(NodeFiles(int(match.group(1)), texts[0][0],
                                   texts[0][1], texts[1][0], texts[1][1]))
        if not found:
            raise errors.DiscoveryError(
                '%s: no node<N> directory (a kernel without NUMA support?)'
                % directory)
        return sorted(found, key=lambda n: n.node)


class DirRunner:
    """Reads saved outputs from a directory (``--from DIR``)."""

    def __init__(self, directory):
        if not os.path.isdir(directory):
            raise errors.UsageError('--from %s: not a directory' % directory)
        self.directory = directory

    def _read(self, name):
        path = os.path.join(self.directory, name)
        try:
            with open(path, 'rb') as f:
                raw = f.read(_MAX_OUTPUT + 1)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise errors.UsageError('%s: cannot read: %s'
                                    % (path, exc.strerror))
        if len(raw) > _MAX_OUTPUT:
            raise errors.DiscoveryError('%s: larger than %d bytes'
                                        % (path, _MAX_OUTPUT))
        return _decode(raw)

    def run(self, key):
        command = BY_KEY[key]
        for name in command.files:
            text = self._read(name)
            if text is None:
                continue
            rc_text = self._read(name + RC_SUFFIX)
            returncode = 0
            if rc_text is not None:
                try:
                    returncode = int(rc_text.strip())
                except ValueError:
                    raise errors.UsageError(
                        '%s: not an exit status: %r'
                        % (os.path.join(self.directory, name + RC_SUFFIX),
                           rc_text.strip()[:40]))
            return toolout.Output(command, text, returncode, _fmt_for(name),
                                  os.path.join(self.directory, name))
        raise errors.UsageError(
            '--from %s: missing %s (saved output of: %s)'
            % (self.directory, ' or '.join(command.files),
               command.display()))

    def recorded(self, key):
        """Whether DIR holds the output of the command ``key``."""
        return any(os.path.isfile(os.path.join(self.directory, name))
                   for name in BY_KEY[key].files)

    def run_optional(self, key):
        """The saved output of ``key``, or None when DIR has none."""
        return self.run(key) if self.recorded(key) else None

    def tiering_root(self):
        """DIR, holding the kernel's tiering files as recorded; or None.

        None when DIR has neither ``proc/`` nor ``sys/``: recorded before
        discovery read them, it cannot tell what the kernel does. A
        recording has ``proc/sys/kernel/osrelease`` (every kernel has it,
        and :data:`RECORD_TIERING` copies it), so that a file left out of
        it is one the kernel does not have.

        :raises UsageError: naming the file, for a recording without it.
        """
        if not any(os.path.isdir(os.path.join(self.directory, top))
                   for top in _TIERING_TOPS):
            return None
        path = os.path.join(self.directory, tiering.OSRELEASE_FILE)
        if not os.path.exists(path):
            raise errors.UsageError(
                '--from %s: missing %s, which every kernel has: DIR holds '
                'part of a recording of the tiering files; record them '
                'again with: %s' % (self.directory, path, RECORD_TIERING))
        return self.directory

    def hostname(self):
        text = self._read(HOSTNAME_FILE)
        if text and text.strip():
            return text.strip().splitlines()[0]
        return None

    def meminfo(self):
        return self._read(MEMINFO_FILE)

    def numa_nodes(self):
        ids = sorted(int(m.group(1)) for m in (
            _NODE_FILE_RE.match(n) for n in os.listdir(self.directory)) if m)
        if not ids:
            raise errors.UsageError(
                '--from %s: missing node-<N>-cpulist.txt and '
                'node-<N>-meminfo.txt (saved %s/node<N>/cpulist and '
                'meminfo; --cxl needs them)' % (self.directory, SYS_NODE_DIR))
        found = []
        for node in ids:
            texts = []
            for kind in ('cpulist', 'meminfo'):
                name = NODE_FILE % (node, kind)
                text = self._read(name)
                if text is None:
                    raise errors.UsageError(
                        '--from %s: missing %s (saved %s/node%d/%s)'
                        % (self.directory, name, SYS_NODE_DIR, node, kind))
                texts.append((text, os.path.join(self.directory, name)))
            found.append(NodeFiles(node, texts[0][0], texts[0][1],
                                   texts[1][0], texts[1][1]))
        return found
