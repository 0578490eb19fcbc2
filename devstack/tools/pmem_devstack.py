#!/usr/bin/env python3
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
"""What the devstack plugin does in Python: nova.conf, aggregates, flavors.

Run with the Python devstack installed the package into, so that Nova's
option defaults, our ``[pmem]`` options, the extra-spec grammar and the
discovery outputs come from the package itself::

    pmem_devstack.py configure-nova NOVA_CONF [--filters F,F] [--weighers]
                                    [--set OPTION=VALUE ...]
    pmem_devstack.py set-option FILE SECTION OPTION VALUE
    pmem_devstack.py provider-config OUTPUT [--nova-conf FILE] [--from DIR]
    pmem_devstack.py local-aggregate [--from DIR]
    pmem_devstack.py flavor-properties RAM_MB [--placement-accounting]
                                       [KEY=VALUE ...]

Every edit of nova.conf is idempotent: a second run changes nothing. The
multi-valued ``[filter_scheduler] available_filters`` keeps every line it
has (Nova's own included) and gains ours once; ``enabled_filters`` and
``weight_classes`` start from Nova's defaults when nova.conf does not set
them. Errors are one line on stderr and exit status 2.
"""

import argparse
import json
import os
import stat
import subprocess
import sys

from nova_pmem_filters.cli import inifile
from nova_pmem_filters.conf import pmem as pmem_conf
from nova_pmem_filters.conf import schedulerconf
from nova_pmem_filters.core.formats import discoveredhost
from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import placement
from nova_pmem_filters.discover import outputs
from nova_pmem_filters import fileutil


class ToolError(Exception):
    """One line for the operator."""


def _pmem_opts():
    return {opt.dest: opt for opt in pmem_conf.pmem_opts}


def _read(path, missing_ok=False):
    """(text, permissions) of a config file; ('', None) if missing_ok."""
    try:
        with open(path) as f:
            return f.read(), stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        if missing_ok:
            return '', None
        raise ToolError('cannot read %s: no such file' % path)
    except OSError as exc:
        raise ToolError('cannot read %s: %s' % (path, exc.strerror))


def _write(path, ini, before, mode):
    if ini.text() != before:
        # nova.conf may hold secrets: keep its permissions.
        fileutil.write_atomic(path, ini.text(), mode=mode)


def configure_nova(path, filters, weighers, settings):
    before, mode = _read(path)
    ini = inifile.IniFile(before)
    inifile.add_scheduler_classes(ini, filters, weighers)
    opts = _pmem_opts()
    for name, value in settings:
        if name not in opts:
            raise ToolError('[pmem] has no option %s (options: %s)'
                            % (name, ', '.join(sorted(opts))))
        try:
            opts[name].type(value)
        except ValueError as exc:
            raise ToolError('[pmem] %s = %r: %s' % (name, value, exc))
        ini.set(pmem_conf.pmem_group.name, name, value)
    _write(path, ini, before, mode)


def set_option(path, section, option, value):
    before, mode = _read(path, missing_ok=True)
    ini = inifile.IniFile(before)
    ini.set(section, option, value)
    _write(path, ini, before, mode)


def provider_config(output, nova_conf, from_dir, discover):
    """This host's provider config, with the ratios its compute uses.

    The near memory of a dram or app_direct host carries the compute's RAM
    allocation ratio, that of a Memory-Mode host [pmem]
    cache_overcommit_ratio: see placement.near_memory_inventory.
    """
    files = [f for f in nova_conf if os.path.exists(f)]
    try:
        ram_ratio = schedulerconf.ram_allocation_ratio(files)
        overcommit = schedulerconf.load(files).cache_overcommit_ratio
    except schedulerconf.ConfigError as exc:
        raise ToolError(str(exc))
    argv = [discover, '--json', '--provider-config', output,
            '--ram-allocation-ratio', repr(ram_ratio),
            '--cache-overcommit-ratio', repr(overcommit)]
    _discover(argv, from_dir)


def _discover(argv, from_dir):
    """Run nova-pmem-discover (on recorded outputs with ``from_dir``)."""
    if from_dir:
        argv = argv + ['--from', from_dir]
    proc = subprocess.run(argv, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=300)
    if proc.returncode:
        raise ToolError(proc.stderr.strip() or 'nova-pmem-discover failed')
    return proc


def local_aggregate(from_dir, discover):
    """``name:key=value,...:host`` of this host's discovered profile."""
    argv = [discover, '--json']
    proc = _discover(argv, from_dir)
    try:
        host = discoveredhost.parse(json.loads(proc.stdout),
                                    'nova-pmem-discover')
    except ValueError as exc:
        raise ToolError(str(exc))
    meta = ','.join('%s=%s' % kv for kv in outputs.aggregate_metadata(host))
    return '%s:%s:%s' % (outputs.aggregate_name(host), meta, host.hostname)


def flavor_properties(ram_mb, properties, placement_accounting,
                      default_hot_ratio):
    specs = {}
    for item in properties:
        key, sep, value = item.partition('=')
        if not sep:
            raise ToolError('flavor property %r is not KEY=VALUE' % item)
        specs[key] = value
    try:
        request = extra_specs.parse(specs, extra_specs.Defaults(
            hot_ratio=default_hot_ratio))
    except extra_specs.InvalidExtraSpec as exc:
        raise ToolError(str(exc))
    if request.conflict:
        raise ToolError(request.conflict)
    if placement_accounting and placement.requested_near_memory(
            specs) is None:
        specs.update(placement.near_memory_spec(ram_mb, request.hot_ratio))
    return ['%s=%s' % kv for kv in sorted(specs.items())]


def _setting(text):
    name, sep, value = text.partition('=')
    if not sep:
        raise argparse.ArgumentTypeError('expected OPTION=VALUE, got %r'
                                         % text)
    return name.strip().lower(), value.strip()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest='command', required=True)
    conf = sub.add_parser('configure-nova')
    conf.add_argument('nova_conf')
    conf.add_argument('--filters', default='',
                      help='comma list of our filters to enable')
    conf.add_argument('--weighers', action='store_true')
    conf.add_argument('--set', type=_setting, action='append', default=[],
                      metavar='OPTION=VALUE', help='a [pmem] option')
    agg = sub.add_parser('local-aggregate')
    agg.add_argument('--from', dest='from_dir', default='')
    agg.add_argument('--discover', default='nova-pmem-discover')
    opt = sub.add_parser('set-option')
    opt.add_argument('file')
    opt.add_argument('section')
    opt.add_argument('option')
    opt.add_argument('value')
    prov = sub.add_parser('provider-config')
    prov.add_argument('output')
    prov.add_argument('--nova-conf', action='append', default=[])
    prov.add_argument('--from', dest='from_dir', default='')
    prov.add_argument('--discover', default='nova-pmem-discover')
    flv = sub.add_parser('flavor-properties')
    flv.add_argument('ram_mb', type=int)
    flv.add_argument('properties', nargs='*')
    flv.add_argument('--placement-accounting', action='store_true')
    flv.add_argument('--default-hot-ratio', type=float,
                     default=_pmem_opts()['default_hot_ratio'].default)
    args = parser.parse_args(argv)
    try:
        if args.command == 'configure-nova':
            configure_nova(args.nova_conf,
                           [f for f in args.filters.split(',') if f],
                           args.weighers, args.set)
        elif args.command == 'set-option':
            set_option(args.file, args.section, args.option, args.value)
        elif args.command == 'provider-config':
            provider_config(args.output, args.nova_conf, args.from_dir,
                            args.discover)
        elif args.command == 'local-aggregate':
            print(local_aggregate(args.from_dir, args.discover))
        else:
            print('\n'.join(flavor_properties(
                args.ram_mb, args.properties, args.placement_accounting,
                args.default_hot_ratio)))
    except (ToolError, OSError) as exc:
        sys.stderr.write('pmem_devstack: %s\n' % exc)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main())
