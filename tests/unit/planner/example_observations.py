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
"""The example observations of ``etc/examples/observations``, made here.

The observer itself (``nova_pmem_filters.observe.host.observe``) measures
windows on fake hosts (:mod:`tests.unit.observe.fakehost`: libvirt status
files as Nova's driver writes them, ``/proc`` and ``/sys``), and each
document is written as ``nova-pmem-observe --output DIR`` writes it
(``HOSTNAME-STARTED.json``, :func:`observation.dumps`). Nothing in the
files is typed by hand: what the fake hosts give is the guests' flavors,
their touched memory (``Referenced`` of ``smaps_rollup``, here a share of
the flavor's RAM) and where their pages sit.

The fleet is that of ``etc/examples/fleet``: two Memory-Mode hosts with
the profile of ``compute-mm-01`` and one DRAM host; ``redis`` and
``mysql`` are the flavors of the built-in ``telco-cost-matched`` scenario
(32 GB, declaring ``pmem:hot_ratio=0.25``), ``m1.web`` one it does not
know. compute-mm-01 is observed in two windows an hour apart; one redis
process of compute-mm-02 exits during its window and its pid is taken by
another (a gap).

Regenerate the files (after a change of the observer's output, which the
test of this module reports) with::

    .tox/py3/bin/python -m tests.unit.planner.example_observations
"""

import os
import sys
import tempfile
import types

from nova_pmem_filters.core.formats import discoveredhost
from nova_pmem_filters.core.formats import observation
from nova_pmem_filters.observe import cli as observe_cli
from nova_pmem_filters.observe import counters
from nova_pmem_filters.observe import host
from tests.unit.observe import fakehost
from tests.unit import paths

DIRECTORY = os.path.join(paths.ROOT, 'etc', 'examples', 'observations')
PROFILE = os.path.join(paths.ROOT, 'etc', 'examples', 'fleet',
                       'compute-mm-01.json')
IPMCTL = [os.path.join(paths.ROOT, 'tests', 'unit', 'observe', 'data',
                       'ipmctl-performance%s.txt' % suffix)
          for suffix in ('', '-after')]
# 2026-11-25T12:00:00Z.
NOON = 1795608000.0
WINDOW_S = 60.0
MIB_PAGES = 256
TELCO = {'pmem:hot_ratio': '0.25'}

# (flavor, RAM MB, vCPUs, declared extra specs).
REDIS = ('redis', 32768, 4, TELCO)
MYSQL = ('mysql', 32768, 4, TELCO)
WEB = ('m1.web', 8192, 2, {})

# Per window: (hostname, hours after noon, Memory Mode,
#   [(instance number, flavor, share of its RAM touched, NUMA node,
#     whether its process exits during the window)]).
# redis: 0.30 to 0.38, p95 0.375 -> 0.4; mysql: 0.14 to 0.18, p95 0.177 ->
# 0.2; m1.web: 0.48 to 0.62, p95 0.613 -> 0.65.
WINDOWS = (
    ('compute-mm-01', 0, True, [(1, REDIS, 0.30, 0, False),
                                (2, REDIS, 0.36, 1, False),
                                (3, MYSQL, 0.14, 0, False)]),
    ('compute-mm-01', 1, True, [(1, REDIS, 0.31, 0, False),
                                (2, REDIS, 0.38, 1, False),
                                (3, MYSQL, 0.15, 0, False)]),
    ('compute-mm-02', 0, True, [(4, REDIS, 0.33, 0, False),
                                (5, REDIS, 0.35, 1, False),
                                (6, REDIS, 0.34, 1, True),
                                (7, WEB, 0.48, 0, False)]),
    ('compute-dram-01', 0, False, [(8, MYSQL, 0.18, 0, False),
                                   (9, WEB, 0.55, 1, False),
                                   (10, WEB, 0.62, 0, False)]),
)


def _uuid(number):
    return '5e1f0c2a-0000-4000-8000-%012d' % number


def _fake_host(root, guests):
    """The libvirt, /proc and /sys of a two-socket host with ``guests``."""
    libvirt = os.path.join(root, 'run', 'libvirt', 'qemu')
    proc = os.path.join(root, 'proc')
    sysfs = os.path.join(root, 'sys')
    os.makedirs(libvirt)
    fakehost.add_nodes(sysfs, {0: '0-39', 1: '40-79'},
                       memory_kb=96 * 1024 * 1024)
    fakehost.write(os.path.join(proc, 'sys', 'kernel', 'osrelease'),
                   '5.15.0-91-generic\n')
    fakehost.write(os.path.join(proc, 'sys', 'kernel', 'numa_balancing'),
                   '1\n')
    fakehost.write(os.path.join(proc, 'vmstat'),
                   'nr_free_pages 1000000\npgpromote_success 0\n')
    exits = []
    for number, (flavor, ram_mb, vcpus, specs), touched, node, gone \
            in guests:
        pid = 3000 + number
        fakehost.add_domain(libvirt, 'instance-%08x' % number,
                            _uuid(number), pid=pid, flavor=flavor,
                            memory_mb=ram_mb, vcpus=vcpus,
                            extra_specs=dict(specs))
        # The guest has touched 3/4 of its RAM since it booted, all on
        # its node; ``touched`` of its RAM in the window.
        fakehost.add_process(
            proc, pid, referenced_kb=round(touched * ram_mb * 1024),
            numa_pages={node: ram_mb * 3 // 4 * MIB_PAGES})
        if gone:
            exits.append(os.path.join(proc, str(pid), 'stat'))
    return host.default_paths(proc=proc, sysfs=sysfs, libvirt=libvirt), exits


def _ipmctl():
    """The counters backend of a Memory-Mode host: ipmctl's two readings."""
    texts = []
    for path in IPMCTL:
        with open(path, encoding='utf-8') as f:
            texts.append(f.read())
    readings = iter(texts)
    return types.SimpleNamespace(
        run_ipmctl_performance=lambda: next(readings),
        ipmctl_performance=counters.ipmctl_performance,
        media_rates=counters.media_rates, vmstat=counters.vmstat)


def window(root, hostname, hour, memory_mode, guests):
    """The observer's document of one window on a fake host under root."""
    paths, exits = _fake_host(root, guests)

    def exit_processes():
        # Another process now has the pid: it started later.
        for path in exits:
            with open(path, encoding='utf-8') as f:
                stat = f.read()
            fakehost.write(path, stat.replace(' 12345 ', ' 67890 '))

    clock = fakehost.Clock(on_sleep=exit_processes)
    prof = discoveredhost.read(PROFILE) if memory_mode else None
    backends = host.default_backends()
    if memory_mode:
        backends = backends._replace(counters=_ipmctl())
    return host.observe(WINDOW_S, method=host.REFERENCE_BITS, prof=prof,
                        hostname=hostname, paths=paths, backends=backends,
                        clock=lambda: NOON + 3600 * hour,
                        monotonic=clock.monotonic, sleep=clock.sleep)


def build(directory):
    """Write every window's document into ``directory``; their paths."""
    os.makedirs(directory, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory() as scratch:
        for n, (hostname, hour, memory_mode, guests) in enumerate(WINDOWS):
            doc = window(os.path.join(scratch, str(n)), hostname, hour,
                         memory_mode, guests)
            path = observe_cli.output_path(directory, doc)
            with open(path, 'w', encoding='utf-8') as f:
                f.write(observation.dumps(doc))
            written.append(path)
    return written


if __name__ == '__main__':
    TARGET = sys.argv[1] if len(sys.argv) > 1 else DIRECTORY
    for name in os.listdir(TARGET) if os.path.isdir(TARGET) else ():
        if name.endswith('.json'):
            os.unlink(os.path.join(TARGET, name))
    for path in build(TARGET):
        print(path)
