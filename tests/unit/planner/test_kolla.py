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
"""Kolla: the image build and the kolla-ansible config, with the real tools.

The template override of etc/kolla/ is rendered by the real ``kolla-build
--template-only`` (pip package kolla, no container engine: its socket is
pointed at nothing). The files ``nova-config kolla`` writes are merged by
kolla-ansible's own ``merge_configs`` parser (pip package kolla-ansible,
which installs it under ``share/``), in the order its nova roles give it,
and the result is read as nova-scheduler reads it: oslo.config, then
Nova's filter handler and HostManager's choice of the enabled filters.
"""

import importlib.util
import io
import os
import re
import subprocess
import sys
import textwrap

import fixtures
from nova.scheduler import filters as nova_filters
from nova.scheduler import host_manager
from nova.scheduler import weights as nova_weights
import testtools

from nova_pmem_filters.core.rules import classes
from nova_pmem_filters.planner import realise
from nova_pmem_filters.planner import scenario
from tests import novaconf
from tests.unit import clitools
from tests.unit import paths
from tests.unit.planner.commands import test_novaconfig

OVERRIDE = paths.of('etc', 'kolla', 'template-overrides.j2')
# Generous: kolla-build renders every Dockerfile of its tree first.
RENDER_TIMEOUT = 600
CONSTRAINTS = '-c /requirements/upper-constraints.txt'

# What kolla-ansible's nova.conf.j2 renders for nova-scheduler, in part:
# the options the merge must leave alone, and a [filter_scheduler] of its
# own (its enable_nova_fake line).
KOLLA_TEMPLATE = textwrap.dedent('''\
    [DEFAULT]
    transport_url = rabbit://openstack:secret@192.0.2.1:5672//
    [filter_scheduler]
    enabled_filters = ComputeFilter,ComputeCapabilitiesFilter
    [scheduler]
    max_attempts = 10
    [pmem]
    check_aggregate_view = true
    ''')


def merge_configs_module():
    """kolla-ansible's merge_configs action plugin, imported."""
    path = os.path.join(sys.prefix, 'share', 'kolla-ansible', 'ansible',
                        'action_plugins', 'merge_configs.py')
    spec = importlib.util.spec_from_file_location('kolla_merge_configs',
                                                  path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def kolla_merge(sources):
    """The nova.conf merge_configs writes from ``sources`` (in order).

    As its ``read_config``: a source that is not there is skipped; each
    is parsed into the same parser, which then writes the result.
    """
    parser = merge_configs_module().OverrideConfigParser()
    for source in sources:
        if os.access(source, os.R_OK):
            with open(source) as f:
                parser.parse(io.StringIO(f.read()))
    out = io.StringIO()
    parser.write(out)
    return out.getvalue()


def scheduler_sources(template, config_dir, host='ctl1'):
    # ansible/roles/nova/tasks/config.yml, "Copying over nova.conf".
    return [template,
            os.path.join(config_dir, 'global.conf'),
            os.path.join(config_dir, 'nova.conf'),
            os.path.join(config_dir, 'nova', 'nova-scheduler.conf'),
            os.path.join(config_dir, 'nova', host, 'nova.conf')]


def compute_sources(template, config_dir, host):
    # ansible/roles/nova-cell/tasks/config.yml, "Copying over nova.conf".
    return [template,
            os.path.join(config_dir, 'global.conf'),
            os.path.join(config_dir, 'nova.conf'),
            os.path.join(config_dir, 'nova', 'nova-compute.conf'),
            os.path.join(config_dir, 'nova', host, 'nova.conf'),
            os.path.join(config_dir, 'nova', host, 'nova-compute.conf')]


class _Handlers(object):
    """What HostManager._choose_host_filters reads of its HostManager."""

    def __init__(self, available_filters):
        handler = nova_filters.HostFilterHandler()
        self.filter_cls_map = {
            cls.__name__: cls
            for cls in handler.get_matching_classes(available_filters)}
        self.filter_obj_map = {}


def scheduler_view(conf):
    """(enabled filter names, weigher names) as nova-scheduler loads them.

    HostManager's own steps, without its database: the classes
    ``available_filters`` loads, the ``enabled_filters`` chosen among
    them (Nova raises SchedulerHostFilterNotFound for one it cannot
    load), the classes ``weight_classes`` loads.
    """
    fs = conf.filter_scheduler
    chosen = host_manager.HostManager._choose_host_filters(
        _Handlers(fs.available_filters), fs.enabled_filters)
    weighers = nova_weights.HostWeightHandler().get_matching_classes(
        fs.weight_classes)
    return ([type(f).__name__ for f in chosen],
            [cls.__name__ for cls in weighers])


class KollaBuildTestCase(testtools.TestCase):
    """kolla-build --template-only with the shipped template override."""

    def render(self, *override):
        tmp = self.useFixture(fixtures.TempDir()).path
        conf = os.path.join(tmp, 'kolla-build.conf')
        with open(conf, 'w') as f:
            f.write('[DEFAULT]\n')
        env = dict(os.environ, HOME=tmp,
                   # No container engine: template-only must not need one.
                   DOCKER_HOST='unix://%s/no-docker.sock' % tmp)
        argv = [os.path.join(os.path.dirname(sys.executable), 'kolla-build'),
                '--config-file', conf, '--template-only',
                '--work-dir', os.path.join(tmp, 'work')]
        for path in override:
            argv += ['--template-override', path]
        proc = subprocess.run(argv + ['^nova-scheduler$', '^nova-api$'],
                              env=env, capture_output=True, text=True,
                              timeout=RENDER_TIMEOUT)
        self.assertEqual(0, proc.returncode, proc.stderr)
        top = os.path.join(tmp, 'work', 'docker')
        files = {}
        for image in ('openstack-base', 'nova-base', 'nova-scheduler',
                      'nova-api'):
            subdir = '' if image == 'openstack-base' else 'nova'
            with open(os.path.join(top, subdir, image, 'Dockerfile')) as f:
                files[image] = f.read()
        return files

    @staticmethod
    def commands(dockerfile):
        """The Dockerfile's instructions, continuation lines joined."""
        return re.sub(r'\\\n\s*', ' ', dockerfile).splitlines()

    @staticmethod
    def parent(dockerfile):
        return re.search(r'^FROM (\S+)', dockerfile, re.M).group(1)

    def pip_installs(self, dockerfile):
        """Each pip install of the Dockerfile: (constraints, packages)."""
        found = []
        for line in self.commands(dockerfile):
            for match in re.finditer(
                    r'python3 -m pip --no-cache-dir install --upgrade '
                    r'((?:-c \S+ )?)([^&;]*)', line):
                found.append((match.group(1).strip(),
                              match.group(2).split()))
        return found

    def test_nova_images_install_the_package_under_constraints(self):
        files = self.render(OVERRIDE)
        # nova-scheduler (filters, weighers) and nova-api (extra-spec
        # validators) are nova-base with nothing installed on top.
        base_image = self.parent(files['nova-scheduler'])
        self.assertEqual(base_image, self.parent(files['nova-api']))
        self.assertRegex(base_image, r'/nova-base:')
        for image in ('nova-scheduler', 'nova-api'):
            self.assertEqual([], self.pip_installs(files[image]))
        # nova-base installs the package in Nova's own pip command, under
        # the upper-constraints openstack-base puts in /requirements.
        self.assertIn('/openstack-base:', self.parent(files['nova-base']))
        self.assertIn('ln -s openstack-base-source/* /requirements',
                      files['openstack-base'])
        installs = self.pip_installs(files['nova-base'])
        (nova,) = [i for i in installs if '/nova' in i[1]]
        self.assertEqual((CONSTRAINTS, ['/nova', realise.PACKAGE]), nova)

    def test_without_the_override_nova_base_lacks_it(self):
        # The control: Kolla's own nova-base does not install it.
        files = self.render()
        installs = self.pip_installs(files['nova-base'])
        (nova,) = [i for i in installs if '/nova' in i[1]]
        self.assertEqual((CONSTRAINTS, ['/nova']), nova)
        self.assertNotIn(realise.PACKAGE, files['nova-base'])


class KollaAnsibleTestCase(testtools.TestCase):
    """nova-config kolla's files, merged by kolla-ansible's own code."""

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.config_dir = os.path.join(self.tmp, 'config')
        self.template = os.path.join(self.tmp, 'nova.conf.j2')
        with open(self.template, 'w') as f:
            f.write(KOLLA_TEMPLATE)

    def ok(self, *argv):
        status, out, err = clitools.run_cli(self, argv)
        self.assertEqual(0, status, err)
        return out

    def merged(self, sources, opts):
        path = os.path.join(self.tmp, 'merged-nova.conf')
        with open(path, 'w') as f:
            f.write(kolla_merge(sources))
        return path, test_novaconfig.read_conf(path, opts)

    def test_scheduler_loads_our_filters_from_the_merge(self):
        self.assertEqual('', self.ok('nova-config', 'kolla', '--output-dir',
                                     self.config_dir))
        with open(os.path.join(self.config_dir, 'global.conf'), 'w') as f:
            f.write('[DEFAULT]\ndebug = True\n')
        path, got = self.merged(
            scheduler_sources(self.template, self.config_dir),
            test_novaconfig.SCHEDULER_OPTS)
        with open(path) as f:
            merged = f.read()
        # Kolla's own options stay; both available_filters lines are there.
        self.assertIn('transport_url = rabbit://', merged)
        self.assertIn('debug = True', merged)
        self.assertIn('max_attempts = 10', merged)
        self.assertIn('check_aggregate_view = true', merged)
        self.assertEqual(['nova.scheduler.filters.all_filters',
                          classes.ALL_FILTERS],
                         got[('filter_scheduler', 'available_filters')])
        self.assertEqual(1.0, got[('pmem', 'cache_overcommit_ratio')])
        enabled, weighers = scheduler_view(novaconf.nova_view(path))
        self.assertEqual(test_novaconfig.NOVA_ENABLED
                         + list(classes.FILTERS), enabled)
        self.assertIn('PmemModeFilter', enabled)
        self.assertIn('PmemCacheFilter', enabled)
        self.assertIn('RAMWeigher', weighers)
        self.assertIn('PmemTierWeigher', weighers)
        self.assertIn('PmemCacheHeadroomWeigher', weighers)

    def test_printed_file_is_the_written_file(self):
        printed = self.ok('nova-config', 'kolla')
        self.ok('nova-config', 'kolla', '--output-dir', self.config_dir)
        with open(os.path.join(self.config_dir, 'nova',
                               'nova-scheduler.conf')) as f:
            self.assertEqual(printed, f.read())
        self.assertIn('# For /etc/kolla/config/nova/nova-scheduler.conf.',
                      printed)

    def test_later_file_replaces_earlier_lines(self):
        # merge_configs keeps a file's repeated lines but lets a later
        # file's key replace all of an earlier one's: the file stands
        # alone, Nova's own filters included, and a filter that nova.conf
        # names under [filter_scheduler] must be in nova-scheduler.conf
        # too (install-kolla.rst says so).
        with open(self.template, 'a') as f:
            f.write('[filter_scheduler]\n'
                    'available_filters = nova.scheduler.filters.all_filters\n'
                    'available_filters = blazarnova.scheduler.filters.'
                    'blazar_filter.BlazarFilter\n')
        self.ok('nova-config', 'kolla', '--output-dir', self.config_dir)
        path, got = self.merged(
            scheduler_sources(self.template, self.config_dir),
            test_novaconfig.SCHEDULER_OPTS)
        self.assertEqual(['nova.scheduler.filters.all_filters',
                          classes.ALL_FILTERS],
                         got[('filter_scheduler', 'available_filters')])

    def test_output_dir_merges_into_an_existing_file(self):
        existing = os.path.join(self.config_dir, 'nova',
                                'nova-scheduler.conf')
        os.makedirs(os.path.dirname(existing))
        with open(existing, 'w') as f:
            f.write('[filter_scheduler]\n'
                    'available_filters = nova.scheduler.filters.all_filters\n'
                    'available_filters = acme.filters.all_filters\n'
                    'enabled_filters = ComputeFilter,AcmeFilter\n'
                    '[scheduler]\nworkers = 4\n')
        os.chmod(existing, 0o600)
        self.ok('nova-config', 'kolla', '--output-dir', self.config_dir)
        self.assertEqual(0o600, os.stat(existing).st_mode & 0o777)
        path, got = self.merged(
            scheduler_sources(self.template, self.config_dir),
            test_novaconfig.SCHEDULER_OPTS)
        self.assertEqual(['nova.scheduler.filters.all_filters',
                          'acme.filters.all_filters', classes.ALL_FILTERS],
                         got[('filter_scheduler', 'available_filters')])
        self.assertEqual(['ComputeFilter', 'AcmeFilter']
                         + list(classes.FILTERS),
                         got[('filter_scheduler', 'enabled_filters')])
        with open(existing) as f:
            once = f.read()
        self.assertIn('workers = 4', once)
        before = os.stat(existing).st_mtime_ns
        self.ok('nova-config', 'kolla', '--output-dir', self.config_dir)
        with open(existing) as f:
            self.assertEqual(once, f.read())
        self.assertEqual(before, os.stat(existing).st_mtime_ns)

    def test_compute_files_per_host(self):
        role = 'compute:pmem-mm-192-512'
        self.assertEqual('', self.ok('nova-config', 'kolla', '--role', role,
                                     '--host', 'cmp1', '--host', 'cmp2',
                                     '--output-dir', self.config_dir))
        want = {r['key'].split()[1]: float(r['value'])
                for r in realise.rows(scenario.load(None))
                if r.get('object') == role}
        self.assertEqual({'reserved_host_memory_mb', 'ram_allocation_ratio',
                          'cpu_allocation_ratio'}, set(want))
        for host in ('cmp1', 'cmp2'):
            _path, got = self.merged(
                compute_sources(self.template, self.config_dir, host),
                test_novaconfig.COMPUTE_OPTS)
            self.assertEqual(want, {k[1]: float(v) for k, v in got.items()})

    def test_bad_arguments(self):
        cases = [
            (('--role', 'compute:nosuch'),
             '--role compute:nosuch: not a role of this plan'),
            (('--host', 'cmp1'), '--host: only for a compute role'),
            (('--role', 'compute:pmem-dram-384', '--output-dir',
              self.config_dir),
             '--output-dir: --role compute:pmem-dram-384 needs --host'),
        ]
        for argv, message in cases:
            status, out, err = clitools.run_cli(
                self, ('nova-config', 'kolla') + argv)
            self.assertEqual(2, status)
            self.assertEqual('', out)
            self.assertIn(message, err)
            self.assertEqual(1, len(err.strip().splitlines()))
        self.assertFalse(os.path.exists(self.config_dir))
