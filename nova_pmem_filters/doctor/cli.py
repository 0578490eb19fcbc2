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
"""``nova-pmem-doctor``: audit a live cloud's PMem scheduling setup.

Reads the cloud through openstacksdk (``clouds.yaml``, ``OS_CLOUD``, the
usual ``--os-*`` options; admin credentials), and optionally the local
nova.conf (``--config-file``), a directory of discovered host profiles
(``--fleet DIR``) and one of observations (``--observations DIR``). Lists
findings; exits 0 when clean (info findings only), 1 with warnings, 2 with
errors. A cloud that cannot be read, bad credentials or a bad file are one
line on stderr and exit status 3 ("unknown", as for a monitoring plugin):
the audit did not run.
"""

import logging
import sys

from cliff import app
from cliff import commandmanager
from cliff import help as cliff_help
from cliff import lister
from keystoneauth1 import exceptions as ksa_exceptions
from openstack import config as sdk_config
from openstack import connection
from openstack import exceptions as sdk_exceptions

from nova_pmem_filters.cli import application

COLUMNS = ('severity', 'code', 'object', 'problem', 'fix')
DEFAULT_COMMAND = 'check'
# The exit status of an audit that could not run: "unknown" in the Nagios
# plugin convention, apart from 2, the cloud's errors; every tool's "could
# not run" (doc/source/cli.rst).
UNKNOWN = application.EXIT_CANNOT_RUN
# Libraries that log what the doctor reports as its one line (keystoneauth's
# "Failed to discover available identity versions" before a connection
# error): quiet unless -v or --debug asks for more.
QUIET_LOGGERS = ('keystoneauth', 'keystoneauth1', 'openstack')


class DoctorError(Exception):
    """What stops the audit; the message is one line."""


def _one_line(exc):
    return ' '.join(str(exc).split()) or exc.__class__.__name__


# What the doctor reads, and so why it needs an admin.
READS = ('the doctor reads aggregates, hypervisors, every project\'s servers '
         'and Placement')


def _identity(conn):
    """(user, project, roles) of the connection's token, if it has one.

    None before Keystone issued a token, or for an auth type without one
    (``admin_token``, ``none``): nothing is asked of the cloud here.
    """
    auth = getattr(getattr(conn, 'session', None), 'auth', None)
    access = getattr(auth, 'auth_ref', None)
    if access is None or not getattr(access, 'username', None):
        return None
    return (access.username, access.project_name,
            tuple(sorted(access.role_names or ())))


def _forbidden(where, identity):
    if identity is None:
        return ('the cloud refused a request (HTTP 403%s): %s, which needs '
                'admin credentials' % (where, READS))
    user, project, roles = identity
    scope = ' in project %s' % project if project else ''
    if 'admin' not in roles:
        return ('the cloud refused a request (HTTP 403%s): user %s%s has '
                'role(s) %s but not admin; %s, which needs the admin role'
                % (where, user, scope, ', '.join(roles) or 'none', READS))
    return ('the cloud refused a request (HTTP 403%s): user %s%s has the '
            'admin role, but the cloud\'s policy refuses it that request; '
            '%s' % (where, user, scope, READS))


def _reason(exc):
    """The server's own words, without keystoneauth's status and id."""
    message = getattr(exc, 'message', None) or _one_line(exc)
    return ' '.join(message.split(' (HTTP ')[0].split())


def _auth(conn):
    """(auth type, auth_url) of the connection's cloud; None if unknown."""
    config = getattr(getattr(conn, 'config', None), 'config', None) or {}
    return (config.get('auth_type'),
            (config.get('auth') or {}).get('auth_url'))


# keystoneauth's auth types that present a token Keystone may refuse with
# a 404; every other one that posts to {auth_url}/auth/tokens gets its 404
# from an auth_url that is not Keystone's.
TOKEN_AUTH_TYPES = ('token', 'v2token', 'v3token')


def _not_keystone(exc, status, url, auth_type):
    """Whether the auth_url answered 404: it is no identity endpoint."""
    if isinstance(exc, ksa_exceptions.DiscoveryFailure):
        # keystoneauth found no API version at the auth_url: what it
        # raises from names the 404.
        return getattr(exc.__context__, 'http_status', None) == 404
    return (status == 404 and auth_type is not None
            and auth_type not in TOKEN_AUTH_TYPES
            and (url or '').rstrip('/').endswith('/auth/tokens'))


def _cloud_error(exc, identity=None, auth=(None, None)):
    """One line for what openstacksdk or keystoneauth raised.

    :param identity: (user, project, roles) of the token the cloud refused
        a request with (``_identity``), to say what the user lacks.
    :param auth: (auth type, auth_url) of the cloud (``_auth``), to tell
        a refused token from an auth_url that is not Keystone's.
    """
    status = getattr(exc, 'status_code', None) or getattr(exc, 'http_status',
                                                          None)
    url = getattr(exc, 'url', None) or getattr(
        getattr(exc, 'response', None), 'url', None)
    auth_type, auth_url = auth
    if _not_keystone(exc, status, url, auth_type):
        return ('the auth_url %s answered HTTP 404%s: it is not a Keystone '
                'identity endpoint; give the URL of Keystone\'s identity '
                'API, which ends in /v3 (e.g. '
                'https://keystone.example.com:5000/v3)'
                % (auth_url or '(unknown)',
                   ' to POST %s' % url if url else ''))
    if isinstance(exc, (ksa_exceptions.ConnectFailure,
                        ksa_exceptions.ConnectTimeout,
                        ksa_exceptions.DiscoveryFailure)):
        return 'cannot reach the cloud: %s' % _one_line(exc)
    if isinstance(exc, ksa_exceptions.Unauthorized) or status == 401:
        return ('the cloud refused the credentials (HTTP 401%s): check '
                'OS_CLOUD, clouds.yaml or the --os-* options'
                % (' from %s' % url if url else ''))
    if status == 404 and (url or '').rstrip('/').endswith('/auth/tokens'):
        # Keystone's answer when the token auth method (--os-auth-type
        # v3token) presents a token it no longer accepts.
        return ('Keystone refused the token (HTTP 404 from %s: %s): it '
                'expired, was revoked or is no token; get a new one, or use '
                'password auth'
                % (url, _reason(exc)))
    if isinstance(exc, ksa_exceptions.Forbidden) or status == 403:
        return _forbidden(' on %s' % url if url else '', identity)
    if isinstance(exc, ksa_exceptions.EndpointNotFound):
        return ('the service catalog has no endpoint the doctor needs '
                '(compute and placement): %s' % _one_line(exc))
    if isinstance(exc, (sdk_exceptions.ConfigException,
                        ksa_exceptions.auth_plugins.AuthPluginException)):
        return ('no usable cloud configuration (set OS_CLOUD or --os-cloud, '
                'or the --os-* options): %s' % _one_line(exc))
    return 'cannot read the cloud: %s' % _one_line(exc)


def version_string():
    """The installed version (``0.0.1.dev96``), as ``pip show`` gives it."""
    return application.version()


CLOUD_ERRORS = (sdk_exceptions.SDKException, ksa_exceptions.ClientException)


def _thresholds(parsed_args):
    """The plan's thresholds, checked by the core: one line if refused."""
    from nova_pmem_filters.core.plans import rebalance
    from nova_pmem_filters.doctor import snapshot

    thresholds = snapshot.Thresholds(
        act_above=parsed_args.act_above, aim_below=parsed_args.aim_below,
        max_moves=parsed_args.max_moves)
    try:
        # A plan of no hosts: the core checks the options it is given.
        rebalance.plan([], act_above=thresholds.act_above,
                       aim_below=thresholds.aim_below,
                       max_moves=thresholds.max_moves)
    except rebalance.RebalanceError as exc:
        message = str(exc)
        for name in ('act_above', 'aim_below', 'max_moves'):
            message = message.replace(name, '--' + name.replace('_', '-'))
        raise DoctorError(application.usage_error(
            message, 'nova-pmem-doctor help check'))
    return thresholds


def _read(given, load, error):
    """``load(given)``, None if not given; ``error`` is its one line."""
    if not given:
        return None
    try:
        return load(given)
    except error as exc:
        raise DoctorError(str(exc))


class Check(lister.Lister):
    """Audit the cloud's PMem scheduling setup and list what is wrong."""

    log = None

    def get_parser(self, prog_name):
        self._prog = prog_name
        # A bad option is one line, and the audit did not run (exit 3).
        parser = application.one_line_errors(
            super().get_parser(prog_name), 'nova-pmem-doctor help check',
            DoctorError)
        parser.add_argument(
            '--config-file', metavar='FILE', action='append', default=[],
            help='the nova.conf that nova-scheduler reads (repeatable, later '
                 'files override earlier ones, as for Nova): audit the '
                 'filter and weigher settings and use its [pmem] options; '
                 'without it those checks are skipped and the [pmem] '
                 'defaults are assumed')
        parser.add_argument(
            '--fleet', metavar='DIR',
            help='a directory of discovered host profiles (the .json files, '
                 'as nova-pmem-discover prints them): compare each host\'s '
                 'aggregates, Placement traits and near-memory inventory '
                 'with what discovery found')
        parser.add_argument(
            '--observations', metavar='DIR',
            help='a directory of nova-pmem-observe documents (the .json '
                 'files, one per host and window): compare the flavors\' '
                 'hot ratios, the hosts\' near memory and where NUMA-bound '
                 'instances\' memory sits with what was measured')
        # The thresholds of the rebalancing plan, the fix of
        # working-set-over-near-memory: the core's defaults.
        from nova_pmem_filters.core.plans import rebalance
        parser.add_argument(
            '--act-above', metavar='RATIO', type=float,
            default=rebalance.ACT_ABOVE,
            help='with --observations: a host (or cell) whose measured '
                 'working set exceeds RATIO x its near memory is reported, '
                 'and the plan of its fix moves instances off it '
                 '(default: %(default)s)')
        parser.add_argument(
            '--aim-below', metavar='RATIO', type=float,
            default=rebalance.AIM_BELOW,
            help='the plan brings every host it fixes, and every '
                 'destination, to at most RATIO x its near memory, at or '
                 'below --act-above, so that the next audit finds nothing '
                 'to move (default: %(default)s)')
        parser.add_argument(
            '--max-moves', metavar='N', type=int,
            default=rebalance.MAX_MOVES,
            help='the plan holds at most N live migrations (default: '
                 '%(default)s)')
        return application.plain_parser(parser)

    def take_action(self, parsed_args):
        # The audit's modules: --help and --version start without them
        # (benchmarks/startup.py).
        from nova_pmem_filters.conf import schedulerconf
        from nova_pmem_filters.core.formats import discoveredhost
        from nova_pmem_filters.core.formats import hostfile
        from nova_pmem_filters.core.formats import observation
        from nova_pmem_filters.doctor import checks
        from nova_pmem_filters.doctor import snapshot

        config = _read(parsed_args.config_file, schedulerconf.load,
                       schedulerconf.ConfigError)
        fleet = _read(parsed_args.fleet, discoveredhost.load,
                      hostfile.ProfileError)
        thresholds = _thresholds(parsed_args)
        observations = _read(parsed_args.observations, observation.load,
                             observation.ObservationError)
        conn = None
        try:
            conn = connection.from_config(options=self.app.options,
                                          app_name='nova-pmem-doctor',
                                          app_version=version_string())
            snap = snapshot.gather(conn, config=config, fleet=fleet,
                                   observations=observations,
                                   thresholds=thresholds)
        except CLOUD_ERRORS as exc:
            raise DoctorError(_cloud_error(exc, _identity(conn),
                                           _auth(conn)))
        findings = checks.run(snap)
        self.status = checks.exit_status(findings)
        return COLUMNS, [tuple(getattr(f, c) for c in COLUMNS)
                         for f in findings]

    def produce_output(self, parsed_args, column_names, data):
        return application.known_columns(
            super().produce_output, 'nova-pmem-doctor help check',
            DoctorError)(parsed_args, column_names, data)

    def run(self, parsed_args):
        self.status = UNKNOWN
        try:
            super().run(parsed_args)
        except BrokenPipeError:
            raise
        except DoctorError as exc:
            raise DoctorError(application.error_line(self._prog, exc)) from exc
        except Exception as exc:
            if self.app.options.debug:
                raise
            raise DoctorError(application.unexpected_line(self._prog,
                                                          exc)) from exc
        return self.status


class DoctorApp(app.App):
    """Audit a cloud's PMem scheduling setup: findings and what to do."""

    # Not the running script's name, which "python -m" makes "cli".
    NAME = 'nova-pmem-doctor'

    def __init__(self, argv=()):
        # openstacksdk registers the options of the auth plugin named in
        # argv (--os-auth-type), so it needs argv before the parser exists.
        self._argv = list(argv)
        super().__init__(
            description=DoctorApp.__doc__,
            version=version_string(),
            command_manager=commandmanager.CommandManager(
                'nova_pmem_doctor.cli'),
            deferred_help=True)
        self._last_error = None
        # The line of a --log-file that cannot be written, if any.
        self._log_file_refused = None

    def configure_logging(self):
        self._log_file_refused = application.configure_logging(
            self, super().configure_logging)
        if self._log_file_refused:
            raise DoctorError(self._log_file_refused)
        if self.options.verbose_level <= 1 and not self.options.debug:
            for name in QUIET_LOGGERS:
                logging.getLogger(name).setLevel(logging.CRITICAL)

    def build_option_parser(self, description, version, argparse_kwargs=None):
        parser = super().build_option_parser(
            description, version, dict(argparse_kwargs or {}, prog=self.NAME))
        # cliff names the base class's script in --version.
        parser._option_string_actions['--version'].version = '%s %s' % (
            self.NAME, version)
        sdk_config.OpenStackConfig().register_argparse_arguments(
            parser, self._argv)
        return application.plain_parser(parser)

    def print_help_if_requested(self):
        # cliff's list of commands, without reading every distribution.
        if self.deferred_help and self.options.deferred_help:
            application.list_commands(self, self.parser, self.options)
            raise cliff_help.HelpExit()

    def run(self, argv):
        # "nova-pmem-doctor [options]" runs the audit: the check command is
        # the default. argparse leaves a bare command name in the remainder
        # wherever the app's options stand, so it can go first.
        _options, remainder = self.parser.parse_known_args(argv)
        asks_help = not remainder and any(a in ('-h', '--help')
                                          for a in argv)
        if not asks_help and not self._names_command(remainder):
            argv = [DEFAULT_COMMAND] + list(argv)
        result = super().run(argv)
        # cliff's status of a failure to start is 1, a finding's here.
        return UNKNOWN if self._log_file_refused else result

    def _names_command(self, argv):
        if not argv:
            return False
        try:
            self.command_manager.find_command(argv)
        except ValueError:
            return False
        return True

    def clean_up(self, cmd, result, err):
        self._last_error = err

    def run_subcommand(self, argv):
        if argv[:1] == ['help'] and argv[1:] and not self._names_command(
                argv[1:]):
            # cliff's help prints "Unknown command ['NAME']".
            self.stderr.write('%s: error: %s\n' % (
                self.NAME, application.unknown_name(
                    'command', ' '.join(argv[1:]),
                    [name for name, _ep in self.command_manager],
                    '%s --help' % self.NAME)))
            return UNKNOWN
        result = super().run_subcommand(argv)
        if self._last_error is not None:
            # One line was printed; the audit did not run.
            return UNKNOWN
        return result


def main(argv=None):
    if argv is None:
        argv = sys.argv[1:]
    try:
        doctor = DoctorApp(argv)
    except CLOUD_ERRORS as exc:
        # openstacksdk reads the cloud named by --os-cloud or OS_CLOUD
        # while the options are registered.
        sys.stderr.write(application.error_line(DoctorApp.NAME,
                                                _cloud_error(exc)) + '\n')
        return UNKNOWN
    return doctor.run(argv)


if __name__ == '__main__':
    sys.exit(main())
