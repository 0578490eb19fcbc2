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
"""The ``nova-pmem-planner`` command-line application (cliff).

It starts in a blink (``benchmarks/startup.py``): the module of a command
is imported when that command runs or the commands are listed, and a
command imports the numerical libraries when it needs them
(:mod:`nova_pmem_filters.planner.commands.base`).
"""

import functools
import importlib.metadata
import inspect
import sys

from cliff import app
from cliff import commandmanager
from cliff import help as cliff_help

from nova_pmem_filters.cli import application
from nova_pmem_filters.cli import entrypoints
from nova_pmem_filters import planner
from nova_pmem_filters.planner import errors

NAME = 'nova-pmem-planner'
# The entry points of the commands (setup.cfg).
NAMESPACE = 'nova_pmem_planner.cli'
# Errors in what the user gave us: one line on stderr, exit status 2. Any
# other error of a command (a library of the extra missing, a bug) exits 3,
# "could not run" (doc/source/cli.rst).
USAGE_ERRORS = (errors.PlannerError,)


class UsageError(errors.PlannerError):
    """A command line the planner cannot parse; the message is one line."""


class MissingExtra(Exception):
    """A library of the planner extra is not installed; one line.

    The line of :func:`nova_pmem_filters.cli.entrypoints.run`, for a library a
    command imports as it runs: the planner could not run (exit 3).
    """


class CouldNotRun(Exception):
    """An error no one expected (a bug): one line, exit status 3."""


def one_line_failures(call, prog, debug):
    """``call`` (a command's ``run``), whose failures read ``PROG: error:``.

    The errors in what the user gave (exit 2) and the others (3) alike;
    ``debug`` (``--debug``) lets an unexpected error through, for cliff to
    show its traceback.
    """

    @functools.wraps(call)
    def wrapper(*args, **kwargs):
        try:
            return call(*args, **kwargs)
        except (UsageError, MissingExtra, BrokenPipeError):
            # Their line names the command already; cliff handles a
            # closed pipe.
            raise
        except errors.PlannerError as exc:
            raise UsageError(application.error_line(prog, exc)) from exc
        except errors.MissingLibrary as exc:
            raise errors.MissingLibrary(
                application.error_line(prog, exc)) from exc
        except Exception as exc:
            if debug:
                raise
            raise CouldNotRun(application.unexpected_line(prog, exc)) from exc
    return wrapper


def naming_the_extra(call):
    """``call``, whose ImportError of a planner extra library is one line."""

    @functools.wraps(call)
    def wrapper(*args, **kwargs):
        try:
            return call(*args, **kwargs)
        except ImportError as exc:
            library = entrypoints.missing('planner', exc)
            if library is None:
                raise
            raise MissingExtra(entrypoints.needs(NAME, 'planner',
                                                 library)) from exc
    return wrapper


class CommandManager(commandmanager.CommandManager):
    """cliff's, without importing every command to start one.

    cliff's loads (imports) the entry point of every command of the
    namespace to start any of them; this one keeps the entry points, and
    cliff imports the one it runs (``find_command``), or each one to list
    them (``--help``).
    """

    def load_commands(self, namespace):
        self.group_list.append(namespace)
        for entry_point in importlib.metadata.entry_points(group=namespace):
            name = entry_point.name
            if self.convert_underscores:
                name = name.replace('_', ' ')
            self.commands[name] = entry_point


def print_commands(app):
    """``--help``: the options and the commands, as cliff prints them.

    Then exits, as cliff's help does (``HelpExit``).
    """
    application.list_commands(app, app.parser, app.options)
    raise cliff_help.HelpExit()


class HelpCommand(cliff_help.HelpCommand):
    """Print the help of a command, as plain text."""

    def take_action(self, parsed_args):
        if not parsed_args.cmd:
            # Exits, as cliff's list of commands does.
            print_commands(self.app)
        try:
            factory, name, _rest = self.app.command_manager.find_command(
                parsed_args.cmd)
        except ValueError:
            raise UsageError(self.app.unknown_command(
                ' '.join(parsed_args.cmd)))
        kwargs = {}
        if 'cmd_name' in inspect.getfullargspec(factory.__init__).args:
            kwargs['cmd_name'] = name
        cmd = factory(self.app, self.app_args, **kwargs)
        parser = application.plain_parser(
            cmd.get_parser('%s %s' % (self.app.NAME, name)))
        # Imported here: a bare install (no planner extra) must fail on
        # cliff, which names the extra, not on cliff's own dependency.
        import autopage.argparse

        pager = autopage.argparse.help_pager(self.app.stdout)
        with pager as out:
            autopage.argparse.use_color_for_parser(parser,
                                                   pager.to_terminal())
            parser.print_help(out)
        return 0


class PlannerApp(app.App):
    """Capacity planning for DRAM, Memory-Mode and App-Direct PMem nodes."""

    # cliff's default is the name of the running script, which is not the
    # command's under "python -m nova_pmem_filters.planner.cli" or a test
    # runner.
    NAME = NAME

    def __init__(self):
        super().__init__(
            description=PlannerApp.__doc__,
            version=planner.version_string(),
            command_manager=CommandManager(NAMESPACE),
            deferred_help=True)
        self.command_manager.add_command('help', HelpCommand)
        self._last_error = None
        self._no_command = False
        # The line of a --log-file that cannot be written, if any.
        self._log_file_refused = None

    def build_option_parser(self, description, version, argparse_kwargs=None):
        parser = super().build_option_parser(
            description, version, dict(argparse_kwargs or {}, prog=self.NAME))
        # cliff names the base class's script in --version.
        parser._option_string_actions['--version'].version = '%s %s' % (
            self.NAME, version)
        return application.plain_parser(parser)

    def configure_logging(self):
        self._log_file_refused = application.configure_logging(
            self, super().configure_logging)
        if self._log_file_refused:
            raise UsageError(self._log_file_refused)

    def print_help_if_requested(self):
        if self.deferred_help and self.options.deferred_help:
            print_commands(self)

    def prepare_to_run_command(self, cmd):
        super().prepare_to_run_command(cmd)
        get_parser = naming_the_extra(cmd.get_parser)
        name = cmd.cmd_name

        # Every command's parser, whoever wrote the command.
        def parser_of_one_line_errors(prog_name):
            return application.one_line_errors(
                get_parser(prog_name), '%s help %s' % (self.NAME, name),
                UsageError)
        cmd.get_parser = parser_of_one_line_errors
        cmd.run = one_line_failures(naming_the_extra(cmd.run),
                                    '%s %s' % (self.NAME, name),
                                    self.options.debug)
        if hasattr(cmd, 'produce_output'):
            cmd.produce_output = application.known_columns(
                cmd.produce_output, '%s help %s' % (self.NAME, name),
                errors.PlannerError)

    def unknown_command(self, word):
        """One line for a command name we do not have, with close ones."""
        return '%s: error: %s' % (self.NAME, application.unknown_name(
            'command', word, [name for name, _ep in self.command_manager],
            '%s --help' % self.NAME))

    def interact(self):
        """No command: the usage and the commands, not cliff's shell.

        cliff opens an interactive ``(Cmd)`` prompt (or reads commands
        from a standard input that is not a terminal); a command is
        required (exit status 2).
        """
        self._no_command = True
        application.list_commands(self, self.parser, self.options)

    def run(self, argv):
        result = super().run(argv)
        if self._no_command or self._log_file_refused:
            return application.EXIT_USAGE
        return result

    def clean_up(self, cmd, result, err):
        self._last_error = err

    def run_subcommand(self, argv):
        if argv and argv[0].startswith('-'):
            # An option the application does not know, before any command:
            # cliff would look it up as a command name.
            self.stderr.write('%s: error: %s\n' % (self.NAME, (
                application.usage_error('unrecognized arguments: %s'
                                        % ' '.join(argv),
                                        '%s --help' % self.NAME))))
            return application.EXIT_USAGE
        try:
            self.command_manager.find_command(argv)
        except ValueError:
            # One line, with the close matches, on stderr (cliff writes
            # its suggestions on stdout, where a script reads data).
            self.stderr.write(self.unknown_command(argv[0]) + '\n')
            return application.EXIT_USAGE
        result = super().run_subcommand(argv)
        if isinstance(self._last_error, USAGE_ERRORS):
            return application.EXIT_USAGE
        if self._last_error is not None:
            # cliff printed its one line and returns 1.
            return application.EXIT_CANNOT_RUN
        return result


def main(argv=None):
    if argv is None:
        argv = sys.argv[1:]
    return PlannerApp().run(argv)


if __name__ == '__main__':
    sys.exit(main())
