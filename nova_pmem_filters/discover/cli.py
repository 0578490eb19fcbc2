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
"""The ``nova-pmem-discover`` command.

argparse rather than cliff: the command has no subcommands, and a cliff
application started with no arguments opens an interactive shell, which a
compute host's automation must never get.

Exit status (the convention of every tool, doc/source/cli.rst): 0
success; 2 bad options, --from directory, --plan or output path; 3 could
not run: a tool is missing, fails, hangs or prints what we cannot read (or
the host cannot give what was asked, e.g. --libvirt on a Memory-Mode host).
Every failure is one line on stderr.
"""

import argparse
import sys


from nova_pmem_filters.cli import application
from nova_pmem_filters.core.formats import discoveredhost
from nova_pmem_filters.core.formats import hostfile
from nova_pmem_filters.core.grammars import errors
from nova_pmem_filters.core.rules import defaults
from nova_pmem_filters.core.rules import placement
from nova_pmem_filters.discover import cxl
from nova_pmem_filters.discover import derive
from nova_pmem_filters.discover import outputs
from nova_pmem_filters.discover import runner

PROG = 'nova-pmem-discover'
HELP = '%s --help' % PROG
# Standard output, for --provider-config.
STDOUT = '-'


# One tool run: up to an hour.
_timeout = application.seconds(3600)


def _ratio(raw):
    """An argparse type: an allocation ratio, a number above 0."""
    try:
        value = float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError('not a number: %r' % raw)
    if not 0 < value < float('inf'):
        raise argparse.ArgumentTypeError(
            'must be a number above 0, got %r' % raw)
    return value


def build_parser():
    parser = application.HostToolParser(
        PROG, errors.UsageError,
        description='Read ipmctl and ndctl (with --cxl also cxl and '
                    'daxctl) and describe this compute host for Nova: '
                    'memory profile, aggregate metadata, provider config '
                    'and [libvirt] pmem_namespaces.')
    view = parser.add_mutually_exclusive_group()
    # -f and -c as the other commands and openstack's take them; --json and
    # --table are the older spellings of -f json and -f table.
    application.add_format_options(
        parser, 'json', 'the summary of the profile (the Field and Value '
        'rows of the first table of -f table; with -c, only those rows): '
        'csv as one header line of the fields and one line of their '
        'values, value as one value a line; -c names a field (hostname, '
        'mode, dram_cache_gb, ...)', 'the whole profile', group=view)
    view.add_argument('--json', dest='view', action='store_const',
                      const='json', help='the same as -f json')
    view.add_argument('--table', dest='view', action='store_const',
                      const='table', help='the same as -f table')
    view.add_argument('--aggregate', dest='view', action='store_const',
                      const='aggregate', help='print the aggregate '
                      'metadata and the openstack commands that set it')
    view.add_argument('--libvirt', dest='view', action='store_const',
                      const='libvirt', help='print [libvirt] '
                      'pmem_namespaces from named devdax namespaces')
    parser.add_argument('--plan', metavar='SPEC',
                        help='with --libvirt: also print the ndctl '
                        'commands that carve COUNTxSIZE devdax namespaces, '
                        'e.g. 4x32G or 4x32G,2x128G')
    parser.add_argument('--numa', action='store_true',
                        help='add the per-NUMA-node view: with --json the '
                        'numa_nodes listing, dram_cache_gb_per_cell and '
                        "each namespace's socket; with --table a numa "
                        'nodes table; with --aggregate the '
                        'pmem_dram_cache_gb_per_cell key of Memory-Mode '
                        'hosts')
    parser.add_argument('--cxl', action='store_true',
                        help='also read CXL memory (cxl list, daxctl list, '
                        'the NUMA nodes of sysfs) and the kernel\'s tiering '
                        'settings: adds the cxl and kernel_tiering '
                        'sections and, where CXL memory is in use, makes '
                        'the host cxl_flat, cxl_kmem or cxl_devdax')
    parser.add_argument('--aggregate-name', metavar='NAME',
                        help='with --aggregate: aggregate name (default: '
                        'from mode and DRAM cache size)')
    parser.add_argument('--provider-config', metavar='PATH',
                        help='write a Nova provider config (YAML) to PATH, '
                        'atomically, after validating it; - prints it on '
                        'standard output instead of the profile')
    parser.add_argument('--ram-allocation-ratio', type=_ratio,
                        default=placement.INITIAL_RAM_ALLOCATION_RATIO,
                        metavar='RATIO',
                        help="the host's [DEFAULT] ram_allocation_ratio: the "
                        'allocation ratio of the near-memory inventory of '
                        'dram and app_direct hosts (default %(default)s, '
                        "Nova's initial_ram_allocation_ratio)")
    parser.add_argument('--cache-overcommit-ratio', type=_ratio,
                        default=defaults.CACHE_OVERCOMMIT_RATIO,
                        metavar='RATIO',
                        help="the schedulers' [pmem] cache_overcommit_ratio:"
                        ' the allocation ratio of the near-memory inventory '
                        'of memory_mode hosts (default %(default)s); both '
                        'ratios are numbers above 0')
    parser.add_argument('--from', dest='from_dir', metavar='DIR',
                        help='read saved tool outputs from DIR instead of '
                        'running the tools')
    parser.add_argument('--timeout', type=_timeout, default=30.0,
                        metavar='SECONDS',
                        help='time limit of each tool run (default 30)')
    parser.add_argument('--hostname', help='host name to report (default: '
                        'DIR/hostname with --from, else this host)')
    parser.add_tool_options()
    parser.set_defaults(view=None)
    return parser


def discover(source, hostname=None, with_cxl=False, numa=False):
    """The host profile (a :class:`hostfile.Document`) the tools give.

    :param source: a runner (:mod:`runner`): the tools, or their saved
        outputs.
    :param with_cxl: ``--cxl``; ``numa``: ``--numa``.
    """
    prof = derive.discover(source, hostname=hostname,
                           pmem_tools_optional=with_cxl)
    if with_cxl:
        prof = cxl.apply(prof, source)
    else:
        prof = cxl.check_without_cxl(prof, source)
    prof = derive.add_cpus(prof, source)
    return derive.add_numa(prof) if numa else prof


def _check(args):
    """Usage errors of the options together; the view to print."""
    if args.plan and args.view != 'libvirt':
        raise errors.UsageError('--plan needs --libvirt')
    if args.aggregate_name and args.view != 'aggregate':
        raise errors.UsageError('--aggregate-name needs --aggregate')
    if args.numa and args.view == 'libvirt':
        raise errors.UsageError('--numa needs -f json|table|yaml or '
                                '--aggregate')
    view = args.view or 'json'
    if args.columns and view not in application.COLUMN_FORMATS:
        raise errors.UsageError(application.usage_error(
            '-c needs -f table, csv or value, not %s (which prints the '
            'whole %s)' % (('-f ' + view, 'profile')
                           if view in application.FORMATS
                           else ('--' + view, 'output')), HELP))
    if args.provider_config == STDOUT and args.view is not None:
        # Standard output holds the provider config only.
        raise errors.UsageError(application.usage_error(
            '--provider-config - prints the provider config on standard '
            'output: it takes no -f, --json, --table, --aggregate or '
            '--libvirt', HELP))
    if args.plan:
        outputs.parse_plan(args.plan)
    return view


def _run(args, stdout):
    view = _check(args)
    if args.from_dir:
        source = runner.DirRunner(args.from_dir)
    else:
        source = runner.LiveRunner(timeout=args.timeout)
    prof = discover(source, hostname=args.hostname, with_cxl=args.cxl,
                    numa=args.numa)

    if args.provider_config:
        text = outputs.render_provider_config(outputs.provider_config(
            _host(prof), ram_allocation_ratio=args.ram_allocation_ratio,
            cache_overcommit_ratio=args.cache_overcommit_ratio))
        if args.provider_config == STDOUT:
            stdout.write(text)
            return 0
        outputs.write_atomic(args.provider_config, text)
    stdout.write(_view(prof, view, args))
    return 0


def _view(prof, view, args):
    """The text of the profile in ``view`` (-f, --aggregate, --libvirt)."""
    if view in application.COLUMN_FORMATS:
        fields = outputs.summary(prof)
        try:
            keep = application.picked([k for k, _v in fields], args.columns,
                                      view, HELP)
        except ValueError as exc:
            raise errors.UsageError(str(exc))
        fields = [fields[i] for i in keep]
        if view == 'csv':
            return application.csv_text([k for k, _v in fields],
                                        [[v for _k, v in fields]])
        if view == 'value':
            return application.value_text([[v] for _k, v in fields])
        if args.columns:
            lines = outputs.summary_table(fields)
        else:
            lines = outputs.table_lines(prof)
    elif view == 'aggregate':
        lines = outputs.aggregate_lines(_host(prof), args.aggregate_name)
    elif view == 'libvirt':
        lines = outputs.libvirt_lines(prof, args.plan)
    elif view == 'yaml':
        lines = [hostfile.dumps_yaml(prof).rstrip('\n')]
    else:
        lines = [hostfile.dumps(prof)]
    return '\n'.join(lines) + '\n'


def _host(prof):
    """The host the profile describes, as the planner and the doctor read.

    What its aggregate metadata and provider config are made of.
    """
    try:
        return discoveredhost.host_of(prof, 'the discovered profile')
    except hostfile.ProfileError as exc:
        raise errors.DiscoveryError(str(exc))


def main(argv=None, stdout=None, stderr=None):
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    argv = sys.argv[1:] if argv is None else list(argv)
    return application.run(
        PROG, stderr, '--debug' in argv,
        lambda: _run(build_parser().parse_args(argv), stdout),
        ((errors.DiscoveryError, None),), errors.EXIT_TOOL)


if __name__ == '__main__':
    sys.exit(main())
