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
"""Pieces every planner command shares.

Every command module is imported to list the commands (``--help``), so a
command module and this one import only what is cheap: the scenario
loader, the numerical libraries (numpy, pandas, scipy), matplotlib and the
planner's modules that use them are imported by the command that runs, in
its methods (tests/unit/cli/test_startup.py).
"""

import argparse
import math
import sys
import textwrap

from cliff import lister

from nova_pmem_filters.core.formats import scenario_schema as sch
from nova_pmem_filters import fileutil
from nova_pmem_filters.planner.commands import fit
from nova_pmem_filters.planner import errors
from nova_pmem_filters.planner.population import sources
from nova_pmem_filters.planner import tables
from nova_pmem_filters.planner import vmsizing

# Output formats that carry a missing value as null; the others (table,
# value, csv) show it as an empty cell rather than "None".
NULL_FORMATS = ('json', 'yaml')
# Commands with a binding column (fleet: one per workload): their help
# explains the values.
BINDING_COMMANDS = ('compare', 'search', 'fleet')


def add_scenario_argument(parser, observations=True):
    from nova_pmem_filters.planner import scenario

    parser.add_argument(
        '--scenario', metavar='FILE|NAME', default=None,
        help='scenario YAML file, or the name of a built-in scenario '
             '(%s); default: %s' % (', '.join(scenario.builtin_names()),
                                    scenario.BUILTIN_SCENARIO))
    if observations:
        parser.add_argument(
            '--observations', metavar='DIR', default=None,
            help='a directory of nova-pmem-observe documents: workloads '
                 'whose hot_ratio is "observed" are planned with the value '
                 'they recommend (replaces the scenario\'s observations)')
    return parser


def add_fleet_argument(parser, required, purpose):
    parser.add_argument(
        '--fleet', metavar='DIR', required=required, default=None,
        help='%s: a directory of discovered host profiles (the .json '
             'files, as nova-pmem-discover prints them)' % purpose)
    return parser


def whole_count(text):
    """A count of the command line: a whole number 0 or more.

    Written with an exponent or not (``1e3`` is 1000), as a scenario's
    counts are, and at most the bound on every number of a scenario.

    :raises CountTooLarge: (a ValueError) above that bound.
    :raises ValueError: for anything else (``1.5``, ``-1``, ``x``).
    """
    value = float(text)
    if value > sch.NUMBER_LIMIT:
        raise CountTooLarge(text)
    if not value >= 0 or not value.is_integer():
        raise ValueError(text)
    return int(value)


class CountTooLarge(ValueError):
    """A count above the bound on every number (:func:`whole_count`)."""


def number(option, text, positive=False):
    """A number option's value, 0 or more (above 0 if ``positive``).

    At most the scenario's bound on every number (the same quantity, such
    as a budget, has the same bound on the command line and in the file).
    """
    try:
        value = float(text)
    except (TypeError, ValueError):
        value = -1.0
    if value > sch.NUMBER_LIMIT:
        raise errors.PlannerError('%s %s: expected a number, at most %s' % (
            option, sch.short_number(value),
            sch.short_number(sch.NUMBER_LIMIT)))
    if not value >= 0 or (positive and not value > 0):
        raise errors.PlannerError('%s %s: expected a number%s'
                                  % (option, text, ' above 0' if positive
                                     else ', 0 or more'))
    return value


# The seeds of a synthetic trace: numpy takes any whole number 0 or more;
# 32 bits are a seed every tool that replays a trace can take.
MAX_SEED = 2 ** 32 - 1


def seed(text):
    """An argparse type: a seed, a whole number from 0 to 2**32-1."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(
            'expected a whole number from 0 to %d (2**32-1), got %r'
            % (MAX_SEED, text))
    return value


def finite(text):
    """An argparse type: a number, negative or not, but finite."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError('expected a number, got %r' % text)
    return value


def check_workloads(scen, names):
    """Refuse a ``--workload`` the scenario does not have (exit 2)."""
    for name in names or ():
        if name not in scen.workloads:
            raise errors.PlannerError(
                '--workload: unknown workload %r (known: %s)'
                % (name, ', '.join(sorted(scen.workloads))))


def load_scenario(parsed_args):
    from nova_pmem_filters.planner import scenario

    return scenario.load(parsed_args.scenario,
                         observations=parsed_args.observations)


def _cell(value):
    # pandas stores a missing number as NaN, which is not JSON; a cell with
    # no value (cost per VM of a node that holds none) is shown empty.
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def frame_rows(frame):
    """cliff (columns, rows) from a DataFrame."""
    return (tuple(frame.columns),
            [tuple(_cell(v) for v in row)
             for row in frame.itertuples(index=False, name=None)])


def show_warnings(findings_by_config, stream=None, verbose_level=1,
                  full=False):
    """Print population warnings once per configuration on stderr.

    One message each, its source a short reference (the ids of the docs'
    table of sources,
    :func:`nova_pmem_filters.planner.population.sources.short`), or the whole
    citation with ``full`` (``--long``); none at verbose level 0 (``-q``).
    """
    if verbose_level < 1:
        return
    stream = stream or sys.stderr
    show_messages(stream, ['%s: %s %s: %s [%s]' % (
        name, f.severity, f.code, f.message,
        f.source if full else sources.short(f.source))
        for name, findings in findings_by_config.items()
        for f in findings])


def show_messages(stream, messages):
    """Each message on ``stream``, wrapped between words to its width.

    The terminal's width (COLUMNS), else
    :data:`nova_pmem_filters.planner.commands.fit.DEFAULT_WIDTH`; the lines
    after a message's first are indented.
    """
    width = fit.terminal_width(stream) or fit.DEFAULT_WIDTH
    for text in messages:
        stream.write(fit.message(text, width) + '\n')


def write_file(command, path, data, mode=None):
    """Write ``data`` to ``path`` atomically and say so on stderr.

    One line, ``COMMAND: wrote PATH (N bytes)``, as report lists the files
    it wrote; none with -q.

    :raises nova_pmem_filters.planner.errors.OutputError: the file cannot be
    written.
    """
    if isinstance(data, str):
        data = data.encode('utf-8')
    try:
        fileutil.write_atomic(path, data, mode=mode)
    except OSError as exc:
        raise errors.OutputError('cannot write %s: %s'
                                 % (path, exc.strerror or exc)) from exc
    tell(command, 'wrote %s (%d bytes)' % (path, len(data)))


def tell(command, text):
    """``COMMAND: text`` on the command's stderr; nothing with -q."""
    if command.app.options.verbose_level >= 1:
        command.app.stderr.write('%s: %s\n' % (command.cmd_name, text))


def binding_help():
    """What each ``binding`` value means, as plain text for an epilog.

    The values are the model's constraints, in the model's order, so the
    help lists every value a command can print.
    """
    width = max(len(name) for name in vmsizing.CONSTRAINTS)
    lines = textwrap.wrap(
        'binding: the constraint that limits VMs per node (several, joined '
        'by "+", when they give the same count, e.g. vcpu+memory):', 76)
    for name in vmsizing.CONSTRAINTS:
        # A constraint new to the model without words yet still shows (a
        # test asks for the words).
        lines += textwrap.wrap(tables.BINDINGS.get(name, '(undocumented)'),
                               76,
                               initial_indent='  %-*s  ' % (width, name),
                               subsequent_indent=' ' * (width + 4))
    return '\n'.join(lines)


def _keeping_lines(formatter_class):
    """``formatter_class`` that keeps the line breaks of an epilog."""

    class Formatter(formatter_class):
        # argparse fills an epilog into one paragraph; a list of values
        # must stay one per line (a long line still wraps).
        def _fill_text(self, text, width, indent):
            lines = []
            for line in text.splitlines():
                lead = indent + line[:len(line) - len(line.lstrip())]
                lines.append(textwrap.fill(line.strip(), width,
                                           initial_indent=lead,
                                           subsequent_indent=lead))
            return '\n'.join(lines)

    return Formatter


class _BlankMissing(object):
    """A cliff formatter that shows a missing value as an empty cell.

    In a table, the header of a money column also names the currency
    ("cost_per_vm USD").
    """

    def __init__(self, formatter, table=False, width=None):
        self._formatter = formatter
        self._table = table
        self._width = width

    def emit_list(self, column_names, data, stdout, parsed_args):
        rows = ([('' if v is None else v) for v in row] for row in data)
        if self._table:
            # After cliff has picked and sorted the columns by their names.
            column_names = ['%s %s' % (c, tables.CURRENCY)
                            if c in tables.MONEY_COLUMNS else c
                            for c in column_names]
        if self._width:
            column_names, rows = fit.fit(column_names, rows, self._width)
            if any('\n' in name for name in column_names):
                return fit.print_table(column_names, rows, stdout)
            # Fitted between words here: cliff's own fitting to the
            # terminal would cut them.
            parsed_args = argparse.Namespace(**vars(parsed_args))
            parsed_args.max_width = sys.maxsize
        return self._formatter.emit_list(column_names, rows, stdout,
                                         parsed_args)


class Lister(lister.Lister):
    """A listing whose empty cells are empty in table, value and csv.

    json and yaml keep null. The cells are blanked after cliff has sorted
    the rows (None sorts last; an empty string would not sort with
    numbers).
    """

    def produce_output(self, parsed_args, column_names, data):
        if (parsed_args.formatter == 'table' and not parsed_args.print_empty
                and isinstance(data, (list, tuple)) and not data):
            # cliff prints an empty table as a blank line; the command says
            # why there are no rows on stderr (--print-empty shows the
            # header).
            return 0
        if parsed_args.formatter not in NULL_FORMATS:
            self.formatter = _BlankMissing(
                self.formatter, table=parsed_args.formatter == 'table',
                width=self.table_width(parsed_args))
        return super().produce_output(parsed_args, column_names, data)

    def table_width(self, parsed_args):
        """The width to fit the table to, or None (cliff's own)."""
        return None


class ShortTableLister(Lister):
    """A listing whose table shows the columns that decide; --long all.

    As in the ``openstack`` client, a terminal table shows what a reader
    decides by and ``--long`` shows every column. The machine formats
    (``-f json|yaml|csv|value``) always carry every column under its own
    name, so scripts see the same data with or without ``--long``; ``-c``
    picks columns from all of them in any format.
    """

    def short_columns(self, column_names):
        """The columns the table shows without --long, in their order."""
        raise NotImplementedError()

    def get_epilog(self):
        epilog = super().get_epilog()
        if self.cmd_name in BINDING_COMMANDS:
            epilog = '\n\n'.join(e for e in (binding_help(), epilog) if e)
        return epilog

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.formatter_class = _keeping_lines(parser.formatter_class)
        parser.add_argument(
            '--long', action='store_true',
            help='show every column in the table (the machine formats, '
                 '-f json|yaml|csv|value, always have every column)')
        return parser

    # False for a table whose cells must stay whole (a command to copy):
    # it is not fitted.
    fitted = True

    def table_width(self, parsed_args):
        """The terminal's width (--max-width, COLUMNS), else 100 or None.

        Without --long, a table off a terminal fits
        :data:`nova_pmem_filters.planner.commands.fit.DEFAULT_WIDTH`; with it
        (the wide view) it is fitted only to a terminal.
        """
        if parsed_args.formatter != 'table' or not self.fitted:
            return None
        width = fit.terminal_width(self.app.stdout,
                                   getattr(parsed_args, 'max_width', 0))
        if width is None and not parsed_args.long:
            return fit.DEFAULT_WIDTH
        return width

    def produce_output(self, parsed_args, column_names, data):
        if (parsed_args.formatter == 'table' and not parsed_args.long
                and not parsed_args.columns):
            # cliff sorts on the full rows first, so --sort-column may name
            # a column the short table does not show.
            parsed_args.columns = list(self.short_columns(column_names))
        return super().produce_output(parsed_args, column_names, data)
