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
"""Host-side commands fail in one line: never a traceback on a console.

Shared by ``nova-pmem-discover`` and ``nova-pmem-observe`` (argparse
commands run by a compute host's automation); the one-line usage errors,
the version and the plain-text help are shared with the cliff tools
(``nova-pmem-planner``, ``nova-pmem-doctor``) too. Imports nothing but the
standard library (:func:`list_commands`, called by a cliff tool, imports
cliff's pager). The output options of the argparse commands (``-f
json|yaml|table|csv|value``, ``-c``) are those of the cliff tools
(:func:`add_format_options`, :func:`picked`, :func:`csv_text`).
"""

import argparse
import csv
import difflib
import importlib.metadata
import inspect
import io
import re
import traceback

DISTRIBUTION = 'nova-pmem-filters'

# The exit statuses of the four tools (doc/source/cli.rst, "Exit status").
# 1 and 2 are also the doctor's findings (warnings, errors), as a Nagios
# plugin's; its usage errors are therefore "could not run".
EXIT_OK = 0
# What the user gave is wrong: an option, an argument, a file named on the
# command line.
EXIT_USAGE = 2
# The tool could not do its work: its extra is not installed, a host tool,
# the cloud or the host failed, or an unexpected error (a bug).
EXIT_CANNOT_RUN = 3
# Ended by Ctrl-C (SIGINT), as a shell reports it.
EXIT_INTERRUPTED = 130


def run(prog, stderr, debug, call, expected, unexpected_status):
    """Return ``call()``'s exit status; every failure is one line on stderr.

    :param expected: ((exception class, exit status), ...): errors the
        command raises on purpose, printed as ``PROG: error: MESSAGE``;
        a status of None takes the exception's ``exit_code``.
    :param unexpected_status: the status of any other exception, printed
        with its type (``--debug`` raises it instead).

    An ImportError goes up to the console script
    (:func:`nova_pmem_filters.cli.entrypoints.run`), which names the extra
    that lacks it: a tool imports what a command needs when it runs.
    """
    try:
        return call()
    except ImportError:
        raise
    except SystemExit as exc:
        # --help and --version exit through argparse.
        return exc.code if isinstance(exc.code, int) else 0
    except KeyboardInterrupt:
        stderr.write('%s: interrupted\n' % prog)
        return EXIT_INTERRUPTED
    except Exception as exc:
        for cls, status in expected:
            if isinstance(exc, cls):
                stderr.write(error_line(prog, exc) + '\n')
                return exc.exit_code if status is None else status
        if debug:
            raise
        stderr.write(unexpected_line(prog, exc) + '\n')
        return unexpected_status


def _line(exc):
    return ' '.join(str(exc).split())


def error_line(prog, message):
    """``PROG: error: MESSAGE``, the message on one line."""
    return '%s: error: %s' % (prog, _line(message))


def unexpected_line(prog, exc):
    """The one line of an exception no one expected (a bug)."""
    return '%s: error: unexpected %s: %s (use --debug)' % (
        prog, type(exc).__name__, _line(exc)[:300])


def version():
    """The installed version of the distribution, as pip shows it.

    pbr's ``version_string()`` drops the ``.devN`` of a development
    install; an operator comparing with ``pip show`` needs all of it.
    """
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return 'unknown'


def usage_error(message, help_command):
    """One line for a bad command line: MESSAGE (see 'HELP_COMMAND')."""
    return "%s (see '%s')" % (' '.join(str(message).split()), help_command)


class HostToolParser(argparse.ArgumentParser):
    """The parser of a host tool (no subcommands, no interactive shell).

    A bad command line raises ``error_class`` with the one line of
    :func:`usage_error`; :meth:`add_tool_options` adds ``--version`` and
    ``--debug``, last in the help as in every tool's.
    """

    def __init__(self, prog, error_class, description):
        super().__init__(prog=prog, description=description)
        self._error_class = error_class

    def error(self, message):
        raise self._error_class(usage_error(message, '%s --help' % self.prog))

    def add_tool_options(self):
        self.add_argument('--version', action='version',
                          version='%(prog)s ' + version())
        self.add_argument('--debug', action='store_true',
                          help='show a traceback on unexpected errors')


def seconds(limit):
    """An argparse type: a number of seconds above 0 and at most ``limit``."""
    def parse(raw):
        try:
            value = float(raw)
        except ValueError:
            raise argparse.ArgumentTypeError('not a number: %r' % raw)
        if not 0 < value <= limit:
            raise argparse.ArgumentTypeError(
                'must be more than 0 and at most %d seconds' % limit)
        return value
    return parse


def log_file_problem(path):
    """Why the log file ``path`` (``--log-file``) cannot be written, or None.

    cliff opens it when it sets up logging, and a path it cannot open
    ends the tool with the bare errno (status 1). It is opened to append,
    as logging does: a file that does not exist is created.
    """
    if not path:
        return None
    try:
        with open(path, 'a'):
            pass
    except OSError as exc:
        return '--log-file %s: cannot write it: %s' % (
            path, exc.strerror or exc)
    return None


def configure_logging(app, configure):
    """``configure()`` (a cliff app's own), its ``--log-file`` checked first.

    Returns the one line of a log file that cannot be written, the logging
    then set up for the console only (where cliff prints the line), or
    None.
    """
    problem = log_file_problem(app.options.log_file)
    if problem:
        app.options.log_file = None
    configure()
    return error_line(app.NAME, problem) if problem else None


def one_line_errors(parser, help_command, error_class):
    """Make ``parser`` raise ``error_class`` with one line; returns it.

    argparse prints the whole usage block before its error; an operator
    needs the one line that says what is wrong and where to read more:
    ``PROG: error: MESSAGE (see 'HELP_COMMAND')``.
    """
    def error(message):
        raise error_class('%s: error: %s' % (
            parser.prog, usage_error(message, help_command)))
    parser.error = error
    return parser


def unknown_name(what, word, known, help_command):
    """One line for a name that is none of ``known``, with close matches."""
    close = difflib.get_close_matches(word, sorted(known), n=3)
    hint = ('; did you mean %s?' % ' or '.join("'%s'" % c for c in close)
            if close else '')
    return usage_error('unknown %s %r%s' % (what, word, hint), help_command)


def unknown_column(word, known, help_command):
    """One line for a ``-c`` that names none of the ``known`` columns."""
    close = difflib.get_close_matches(word, list(known), n=3)
    hint = ('; did you mean %s?' % ' or '.join("'%s'" % c for c in close)
            if close else '')
    return usage_error('unknown column %r%s (columns: %s)'
                       % (word, hint, ', '.join(known)), help_command)


def known_columns(call, help_command, error_class):
    """``call`` (a cliff ``produce_output``), refusing an unknown column.

    cliff drops a ``-c`` it does not know when another one is known, and
    raises a ValueError (exit 1) when none is; it sorts by the
    ``--sort-column`` names it knows and ignores the others: one usage
    error (``error_class``, the line without the program's name) here.
    """

    def wrapper(parsed_args, column_names, data):
        for name in ((getattr(parsed_args, 'columns', None) or [])
                     + (getattr(parsed_args, 'sort_columns', None) or [])):
            if name not in column_names:
                raise error_class(unknown_column(name, column_names,
                                                 help_command))
        return call(parsed_args, column_names, data)
    return wrapper


# The formats of cliff's listings, for the argparse commands.
FORMATS = ('json', 'table', 'yaml', 'csv', 'value')
# The formats -c picks columns of: a whole document prints as json or yaml.
COLUMN_FORMATS = ('table', 'csv', 'value')


def add_format_options(parser, default, listing, documents, group=None):
    """Add ``-f FORMAT`` and ``-c COLUMN`` as cliff's listings have them.

    :param listing: what -f table, csv and value print, and -c picks the
        columns of (a help text).
    :param documents: what -f json and yaml print (a help text).
    :param group: where -f goes (a mutually exclusive group of other
        views), if not ``parser``; its default is then None.
    """
    (group or parser).add_argument(
        '-f', '--format', dest='view', choices=FORMATS,
        default=None if group else default,
        help='the output format (default %s): json or yaml %s; table, '
        'csv or value %s (csv: a header line and one line a row, as '
        "cliff's; value: the values without the header)"
        % (default, documents, listing))
    parser.add_argument(
        '-c', '--column', dest='columns', action='append', default=[],
        metavar='COLUMN',
        help='with -f table, csv or value: print this column (repeat '
        'to print several, in that order); unknown names are an error')
    return parser


def picked(columns, wanted, view, help_command):
    """The indexes of the ``wanted`` (-c) columns; raises ValueError.

    All of them without -c. A -c with -f json or yaml, or that names none
    of ``columns``, is a usage error (ValueError with one line).
    """
    if not wanted:
        return list(range(len(columns)))
    if view not in COLUMN_FORMATS:
        raise ValueError(usage_error(
            '-c picks the columns of -f table, csv or value; -f %s prints '
            'the whole document' % view, help_command))
    for word in wanted:
        if word not in columns:
            raise ValueError(unknown_column(word, columns, help_command))
    return [list(columns).index(word) for word in wanted]


def csv_text(columns, rows):
    """cliff's ``-f csv``: the header and a row a line, text quoted."""
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_NONNUMERIC,
                        lineterminator='\n')
    writer.writerow(columns)
    for row in rows:
        writer.writerow(['' if v is None else v for v in row])
    return out.getvalue()


def value_text(rows):
    """cliff's ``-f value``: a row a line, its values space-separated."""
    return ''.join(' '.join('' if v is None else str(v) for v in row)
                   + '\n' for row in rows)


# reStructuredText in docstrings and help strings, as plain text: a role's
# text (:ref:`title <target>` is "title", :class:`~a.B` is "B"), a link's
# text, literals and emphasis without their marks; directives and comments
# dropped, and the "::" that opens a literal block made a colon.
_RST = (
    (re.compile(r':[a-z:]+:`~?([^`<]*?)\s*<[^`>]*>`'), r'\1'),
    (re.compile(r':[a-z:]+:`~([^`]*\.)?([^`.]+)`'), r'\2'),
    (re.compile(r':[a-z:]+:`([^`]+)`'), r'\1'),
    (re.compile(r'`([^`<]*?)\s*<[^`>]*>`__?'), r'\1'),
    (re.compile(r'`([^`]+)`__?'), r'\1'),
    (re.compile(r'``([^`]+)``'), r'\1'),
    (re.compile(r'`([^`]+)`'), r'\1'),
    (re.compile(r'\*\*([^*]+)\*\*'), r'\1'),
    (re.compile(r'(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])'), r'\1'),
    (re.compile(r'^[ \t]*\.\.( [^\n]*)?\n?', re.M), ''),
    (re.compile(r'^[ \t]*::[ \t]*\n?', re.M), ''),
    (re.compile(r'(\S)[ \t]*::[ \t]*$', re.M), r'\1:'),
)


def plain_text(text):
    """``text`` without reStructuredText markup, for a terminal."""
    if not text:
        return text
    for pattern, replacement in _RST:
        text = pattern.sub(replacement, text)
    return text


def plain_parser(parser):
    """Make an argparse parser's help plain text, in place; returns it.

    Docstrings serve both the documentation and the help: the help shows
    them without the markup.
    """
    parser.description = plain_text(parser.description)
    parser.epilog = plain_text(parser.epilog)
    for group in parser._action_groups:
        group.description = plain_text(group.description)
    for action in parser._actions:
        if isinstance(action.help, str):
            action.help = plain_text(action.help)
    return parser


def _package(obj):
    """The top-level package of the module that defines ``obj``."""
    module = inspect.getmodule(obj)
    if module is None:
        raise RuntimeError('failed to find app: %s' % (obj,))
    return module.__name__.partition('.')[0]


def _top_level(dist):
    """The top-level packages of a distribution, as importlib finds them."""
    declared = (dist.read_text('top_level.txt') or '').split()
    if declared:
        return set(declared)
    return {f.parts[0] if len(f.parts) > 1 else f.with_suffix('').name
            for f in dist.files or () if f.suffix == '.py'}


def _foreign_distribution(package, app_package):
    """The distribution of ``package``, unless it is ``app_package``'s.

    What cliff's list of commands names after a command that is not the
    application's. cliff maps the packages of every installed distribution
    for it, which reads the metadata of each (a tenth of a second in a
    virtualenv with Nova, at every --help); the distribution named as the
    package is asked first, and the map made only when it is not the
    package's.
    """
    if package == app_package:
        return None
    try:
        dist = importlib.metadata.distribution(package)
        tops = _top_level(dist)
    except importlib.metadata.PackageNotFoundError:
        tops = ()
    if package in tops:
        return None if app_package in tops else dist.metadata['Name']
    dists = importlib.metadata.packages_distributions()
    name = (dists.get(package) or [None])[0]
    app_dist = (dists.get(app_package) or [None])[0]
    return name if name and name != app_dist else None


def list_commands(app, parser, namespace):
    """Print a cliff application's help and its commands, as cliff does.

    The output of ``cliff.help.HelpAction`` (the help of ``--help``, then
    each command with the first line of its description, and the
    distribution of a command from another one), without reading every
    installed distribution (:func:`_foreign_distribution`).

    :param app: the cliff application.
    :param parser: its argparse parser.
    :param namespace: its parsed options (``--debug``).
    """
    # cliff's pager, there wherever a cliff application runs.
    import autopage.argparse

    pager = autopage.argparse.help_pager(app.stdout)
    color = pager.to_terminal()
    autopage.argparse.use_color_for_parser(parser, color)
    with pager as out:
        parser.print_help(out)
        title_hl = ('\033[4m', '\033[0m') if color else ('', '')
        out.write('\n{}Commands{}:\n'.format(*title_hl))
        app_package = _package(app)
        for name, ep in sorted(app.command_manager):
            try:
                factory = ep.load()
            except Exception:
                out.write('Could not load %r\n' % (ep,))
                if namespace.debug:
                    traceback.print_exc(file=out)
                continue
            try:
                kwargs = {}
                if 'cmd_name' in inspect.getfullargspec(
                        factory.__init__).args:
                    kwargs['cmd_name'] = name
                cmd = factory(app, None, **kwargs)
                if cmd.deprecated:
                    continue
            except Exception as err:
                out.write('Could not instantiate %r: %s\n' % (ep, err))
                if namespace.debug:
                    traceback.print_exc(file=out)
                continue
            one_liner = cmd.get_description().split('\n')[0].rstrip('.')
            dist_name = _foreign_distribution(_package(factory), app_package)
            if dist_name:
                dist_info = ' (' + dist_name + ')'
                if color:
                    dist_info = '\033[90m%s\033[39m' % dist_info
            else:
                dist_info = ''
            padded_name = '%-13s' % name
            if color:
                padded_name = '\033[36m%s\033[39m' % padded_name
            out.write('  %s  %s%s\n' % (padded_name, one_liner, dist_info))
