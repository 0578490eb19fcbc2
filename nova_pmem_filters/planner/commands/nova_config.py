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
"""nova-config and the commands that print its rows in other forms.

nova-config script, nova-config nova-conf and nova-config provider-config
for Nova itself; nova-config kolla and nova-config osa for the deployment
tools that write nova.conf for it (kolla-ansible, OpenStack-Ansible).
"""

import os
import stat

from cliff import command

from nova_pmem_filters import fileutil
from nova_pmem_filters.planner.commands import base
from nova_pmem_filters.planner import errors


def _add_plan_arguments(parser):
    base.add_scenario_argument(parser)
    parser.add_argument(
        '--workload', action='append', default=None, metavar='NAME',
        help='plan for this workload only (repeatable; default: all)')
    parser.add_argument(
        '--placement-accounting', action='store_true',
        help='also emit the CUSTOM_NEAR_MEMORY_MB provider-config '
             'inventory of each configuration and the flavor extra '
             'spec resources:CUSTOM_NEAR_MEMORY_MB, so that Placement '
             'enforces the DRAM-cache bound atomically')
    return parser


def _plan_rows(parsed_args):
    from nova_pmem_filters.planner import realise

    scen = base.load_scenario(parsed_args)
    base.check_workloads(scen, parsed_args.workload)
    return scen, realise.rows(
        scen, workloads=parsed_args.workload,
        placement_accounting=parsed_args.placement_accounting)


def _origin(parsed_args, scen, what):
    """Comment lines that say where a generated file comes from."""
    return ['%s of the plan of scenario %s,' % (what, scen.name),
            'by nova-pmem-planner %s.' % ' '.join(parsed_args.argv_words)]


def _read_conf(path):
    """(text, permission bits) of a nova.conf to merge into, bounded.

    :raises FileNotFoundError: there is none.
    :raises nova_pmem_filters.planner.errors.PlannerError: it cannot be read,
    or is not text.
    """
    try:
        text = fileutil.read_text(path)
        return text, stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise errors.PlannerError('%s: %s' % (path, exc.strerror or exc))
    except UnicodeDecodeError:
        raise errors.PlannerError('%s: not UTF-8 text; a nova.conf is an '
                                  'ini file' % path)


def _merged(path, merge):
    """``merge()``, its refusal of a file that is no ini file one line."""
    try:
        return merge()
    except ValueError as exc:
        raise errors.PlannerError('%s: %s' % (path, exc)) from None


class NovaConfig(base.ShortTableLister):
    """Show the Nova settings (aggregates, flavors, nova.conf) of the plan.

    Every row once; nova-config script, nova-config nova-conf and
    nova-config provider-config print the same rows in forms that run as
    printed.
    """

    def short_columns(self, column_names):
        return [c for c in column_names if c != 'command']

    def get_parser(self, prog_name):
        return _add_plan_arguments(super().get_parser(prog_name))

    def take_action(self, parsed_args):
        from nova_pmem_filters.planner import realise

        _scen, plan = _plan_rows(parsed_args)
        return base.frame_rows(realise.frame(plan))


class _Generated(command.Command):
    """A command that prints (or writes) one text generated from the plan."""

    def get_parser(self, prog_name):
        parser = _add_plan_arguments(super().get_parser(prog_name))
        self._words = prog_name.split()[1:]
        return parser

    def run(self, parsed_args):
        parsed_args.argv_words = self._argv_words(parsed_args)
        return super().run(parsed_args)

    def _print_or_write(self, parsed_args, text, mode):
        """Print ``text``, or write it to --output (atomically)."""
        if parsed_args.output:
            base.write_file(self, parsed_args.output, text, mode=mode)
        else:
            self.app.stdout.write(text)
        return 0

    def _write_changed(self, path, text, existing, mode):
        """Write ``text`` to ``path`` unless it holds it already."""
        if text != existing:
            base.write_file(self, path, text, mode=mode)
        else:
            base.tell(self, '%s unchanged: it has the settings' % path)

    def _argv_words(self, parsed_args):
        words = list(self._words)
        if parsed_args.scenario:
            words += ['--scenario', parsed_args.scenario]
        for name in parsed_args.workload or ():
            words += ['--workload', name]
        if parsed_args.placement_accounting:
            words.append('--placement-accounting')
        return words


class _ForRole(_Generated):
    """A generated text for one role of the plan: --role, scheduler first."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--role', metavar='ROLE', default=None,
            help='scheduler, or compute:AGGREGATE for the hosts of one '
                 'aggregate of the plan (default: scheduler)')
        return parser

    def _argv_words(self, parsed_args):
        words = super()._argv_words(parsed_args)
        if parsed_args.role:
            words += ['--role', parsed_args.role]
        return words

    @staticmethod
    def _role(parsed_args, plan):
        """The role asked for, checked against the plan's."""
        from nova_pmem_filters.planner import realise

        role = parsed_args.role or realise.SCHEDULER_ROLE
        known = realise.roles(plan)
        if role not in known:
            raise errors.PlannerError('--role %s: not a role of this plan '
                                      '(roles: %s)'
                                      % (role, ', '.join(known)))
        return role


class NovaConfigScript(_Generated):
    """Print the plan's aggregates and flavors as a shell script.

    The script creates what is missing and sets what differs, so it can be
    run again: the second run changes nothing and says so. It needs the
    openstack client with admin credentials (OS_CLOUD or OS_* variables).
    A flavor that exists with other vCPUs, RAM or disk stops it (Nova
    cannot change a flavor). Hosts join the aggregates with the commands
    nova-pmem-discover --aggregate prints on each host; the nova.conf
    settings come from nova-config nova-conf.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--output', '-o', metavar='FILE',
            help='write the script to FILE (atomically, executable) '
                 'instead of printing it')
        return parser

    def take_action(self, parsed_args):
        from nova_pmem_filters.planner import realise

        scen, plan = _plan_rows(parsed_args)
        text = realise.script(plan, _origin(
            parsed_args, scen, 'The aggregates and flavors') + [
            'Idempotent: creates what is missing, sets what differs.'])
        return self._print_or_write(parsed_args, text, 0o755)


class NovaConfigNovaConf(_ForRole):
    """Print (or merge) the nova.conf settings of one role of the plan.

    The schedulers (--role scheduler) or the computes of one aggregate
    (--role compute:AGGREGATE). Printed, the snippet stands alone: put it
    in /etc/nova/nova.conf.d/ (read after nova.conf), with list options
    starting from Nova's defaults. --merge-into FILE edits an existing
    nova.conf instead, keeping every line and option it has and adding our
    filters and weighers to the lists it sets; merging twice changes
    nothing.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--merge-into', metavar='FILE',
            help='merge the settings into this nova.conf (atomically, '
                 'keeping its permissions) instead of printing them')
        return parser

    def take_action(self, parsed_args):
        from nova_pmem_filters.planner import realise

        scen, plan = _plan_rows(parsed_args)
        role = self._role(parsed_args, plan)
        if parsed_args.merge_into:
            path = parsed_args.merge_into
            try:
                before, mode = _read_conf(path)
            except FileNotFoundError as exc:
                raise errors.PlannerError('--merge-into %s: %s'
                                          % (path, exc.strerror))
            except errors.PlannerError as exc:
                raise errors.PlannerError('--merge-into %s' % exc) from None
            after = _merged('--merge-into ' + path, lambda: (
                realise.merge_nova_conf(before, plan, role)))
            # nova.conf may hold secrets: keep its permissions.
            self._write_changed(path, after, before, mode)
            return 0
        self.app.stdout.write(realise.nova_conf(plan, role, _origin(
            parsed_args, scen, 'nova.conf settings (%s)' % role)))
        return 0


class NovaConfigProviderConfig(_Generated):
    """Print (or write) the provider config of the hosts of one aggregate.

    The CUSTOM_NEAR_MEMORY_MB inventory the plan gives the computes of
    --role compute:AGGREGATE (as with --placement-accounting), for
    /etc/nova/provider_config/ on each of its hosts; nova-pmem-discover
    --provider-config writes the same from what the host really has.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--role', metavar='compute:AGGREGATE', required=True,
            help='the computes of one aggregate of the plan')
        parser.add_argument(
            '--output', '-o', metavar='FILE',
            help='write the file (atomically) instead of printing it')
        return parser

    def _argv_words(self, parsed_args):
        return super()._argv_words(parsed_args) + ['--role',
                                                   parsed_args.role]

    def take_action(self, parsed_args):
        from nova_pmem_filters.planner import realise

        parsed_args.placement_accounting = True
        scen, plan = _plan_rows(parsed_args)
        roles = [r for r in realise.roles(plan)
                 if r != realise.SCHEDULER_ROLE]
        if parsed_args.role not in roles:
            raise errors.PlannerError(
                '--role %s: not a compute role of this plan (roles: %s)'
                % (parsed_args.role, ', '.join(roles)))
        text = realise.provider_config(plan, parsed_args.role, _origin(
            parsed_args, scen, 'Provider config (%s)' % parsed_args.role) + [
            'For %s on each host.' % realise.PROVIDER_CONFIG_FILE])
        return self._print_or_write(parsed_args, text, 0o644)


class NovaConfigKolla(_ForRole):
    """Print (or write) the plan's kolla-ansible config override file.

    For the schedulers (--role scheduler, the default) the file
    nova/nova-scheduler.conf of kolla-ansible's config directory
    (/etc/kolla/config); for the computes of one aggregate (--role
    compute:AGGREGATE) nova/HOST/nova-compute.conf of each --host.
    kolla-ansible merges it into the service's nova.conf after its own
    template, global.conf and nova.conf (kolla-ansible reconfigure).
    --output-dir DIR writes the files under DIR (atomically); a file
    already there gets the settings merged in, its own lines kept, as
    nova-config nova-conf --merge-into does.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--host', action='append', default=None, metavar='NAME',
            help='a host of the aggregate of a compute role, as the '
                 'kolla-ansible inventory names it (repeatable)')
        parser.add_argument(
            '--output-dir', metavar='DIR',
            help='write the files under DIR (kolla-ansible\'s config '
                 'directory, usually /etc/kolla/config) instead of '
                 'printing them')
        return parser

    def _argv_words(self, parsed_args):
        words = super()._argv_words(parsed_args)
        for host in parsed_args.host or ():
            words += ['--host', host]
        return words

    def take_action(self, parsed_args):
        from nova_pmem_filters.planner import realise

        scen, plan = _plan_rows(parsed_args)
        role = self._role(parsed_args, plan)
        hosts = parsed_args.host or []
        if role == realise.SCHEDULER_ROLE and hosts:
            raise errors.PlannerError('--host: only for a compute role '
                                      '(the schedulers share one file)')
        if parsed_args.output_dir and not hosts and \
                role != realise.SCHEDULER_ROLE:
            raise errors.PlannerError('--output-dir: --role %s needs '
                                      '--host for each host of it' % role)
        paths = realise.kolla_paths(role, hosts)
        if paths:
            where = ['For %s.' % ', '.join(
                '%s/%s' % (realise.KOLLA_CONFIG_DIR, p) for p in paths)]
        else:
            where = ['For %s/nova/HOST/nova-compute.conf, HOST each host of '
                     '%s in the inventory.' % (realise.KOLLA_CONFIG_DIR,
                                               role.split(':', 1)[1])]
        comments = _origin(parsed_args, scen, 'kolla-ansible config '
                           'override (%s)' % role) + where
        if not parsed_args.output_dir:
            self.app.stdout.write(realise.kolla_file(
                plan, role, comments=comments))
            return 0
        # Every file merged before one is written: a file that is no ini
        # file refuses the run with nothing written.
        merged = [self._merged_into(parsed_args.output_dir, relative, plan,
                                    role, comments) for relative in paths]
        for path, text, mode, existing in merged:
            self._write_changed(path, text, existing, mode)
        return 0

    @staticmethod
    def _merged_into(top, relative, plan, role, comments):
        """(path, text, mode, existing text) of one override file."""
        from nova_pmem_filters.planner import realise

        path = os.path.join(top, relative)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            existing, mode = _read_conf(path)
        except FileNotFoundError:
            existing, mode = None, 0o640
        except OSError as exc:
            raise errors.OutputError('cannot write %s: %s'
                                     % (path, exc.strerror or exc))
        text = _merged(path, lambda: realise.kolla_file(
            plan, role, existing, comments))
        return path, text, mode, existing


class NovaConfigOsa(_ForRole):
    """Print (or write) the plan's OpenStack-Ansible variables.

    For the schedulers (--role scheduler, the default) a user variables
    file for /etc/openstack_deploy/ (OpenStack-Ansible reads every
    user_*.yml there): the package for the nova venvs
    (nova_user_pip_packages), our filters (nova_scheduler_extra_filters)
    and the other scheduler options (nova_nova_conf_overrides). For the
    computes of one aggregate (--role compute:AGGREGATE) the os_nova
    variables of /etc/openstack_deploy/host_vars/HOST.yml of each of its
    hosts.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--pip-package', metavar='SPEC', default=None,
            help='what nova_user_pip_packages installs (default: '
                 'nova-pmem-filters; pin it, e.g. nova-pmem-filters==1.2.0)')
        parser.add_argument(
            '--output', '-o', metavar='FILE',
            help='write the file (atomically) instead of printing it')
        return parser

    def _argv_words(self, parsed_args):
        words = super()._argv_words(parsed_args)
        if parsed_args.pip_package:
            words += ['--pip-package', parsed_args.pip_package]
        return words

    def take_action(self, parsed_args):
        from nova_pmem_filters.planner import realise

        scen, plan = _plan_rows(parsed_args)
        role = self._role(parsed_args, plan)
        if role == realise.SCHEDULER_ROLE:
            where = 'For /etc/openstack_deploy/user_nova_pmem.yml.'
        else:
            where = ('For /etc/openstack_deploy/host_vars/HOST.yml, HOST '
                     'each host of %s.' % role.split(':', 1)[1])
        text = realise.osa_yaml(
            plan, role, parsed_args.pip_package or realise.PACKAGE,
            _origin(parsed_args, scen, 'OpenStack-Ansible variables (%s)'
                    % role) + [where])
        return self._print_or_write(parsed_args, text, 0o644)
