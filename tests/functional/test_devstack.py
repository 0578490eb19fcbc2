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
"""The devstack plugin's phases in bash, and what they produce in real Nova.

devstack/plugin.sh runs as devstack runs it (``source plugin.sh MODE
PHASE`` after ``settings``), with devstack's own helpers it calls
(``trueorfalse``, ``setup_develop``, ``echo_summary``, ``warn``, ``die``)
played by small stand-ins, against a scratch nova.conf shaped like the one
devstack writes. Every phase runs twice and must change nothing the second
time. The nova.conf it leaves is then read through Nova's own option
definitions and loaders, and a real in-process Nova is started with it.
The "stack extra" and "unstack" phases, which call the ``openstack``
client, run against the multi-process Nova of tests/integration.
"""

import os
import shutil

from nova.compute import provider_config
from nova.conf import scheduler as nova_scheduler_conf
from nova.scheduler import filters as nova_filters
from nova.scheduler import weights as nova_weights
import testtools
import yaml

from nova_pmem_filters.core.rules import placement
from tests import devstack_plugin
from tests.functional import base
from tests import novaconf

TOP = devstack_plugin.TOP
DISCOVER_DATA = os.path.join(TOP, 'tests', 'unit', 'discover_data')
DEVSTACK_NOVA_CONF = devstack_plugin.DEVSTACK_NOVA_CONF
Devstack = devstack_plugin.Devstack


class PostConfigTestCase(testtools.TestCase):

    def test_install_phase_installs_the_tree(self):
        devstack = self.useFixture(Devstack())
        devstack.run('stack', 'install')
        with open(devstack.stub_log) as f:
            self.assertEqual('setup_develop %s discover\n' % TOP, f.read())

    def test_configures_nova_idempotently(self):
        devstack = self.useFixture(Devstack(
            NOVA_PMEM_CONF_DEFAULT_HOT_RATIO='0.3',
            NOVA_PMEM_CONF_CACHE_OVERCOMMIT_RATIO='1.2'))
        devstack.run('stack', 'post-config')
        once = devstack.read()
        devstack.run('stack', 'post-config')
        self.assertEqual(once, devstack.read())
        self.assertEqual(0o640, os.stat(devstack.nova_conf).st_mode & 0o777)
        # Nothing devstack wrote is lost.
        self.assertIn('# written by devstack', once)
        self.assertIn('track_instance_changes = True', once)
        conf = novaconf.nova_view(devstack.nova_conf)
        fs = conf.filter_scheduler
        self.assertEqual(['nova.scheduler.filters.all_filters',
                          'nova_pmem_filters.filters.all_filters'],
                         fs.available_filters)
        self.assertEqual(['ComputeFilter', 'ComputeCapabilitiesFilter',
                          'ImagePropertiesFilter',
                          'ServerGroupAntiAffinityFilter',
                          'ServerGroupAffinityFilter', 'PmemModeFilter',
                          'PmemCacheFilter'], fs.enabled_filters)
        self.assertEqual(['nova.scheduler.weights.all_weighers',
                          'nova_pmem_filters.weighers.all_weighers'],
                         fs.weight_classes)
        self.assertEqual(0.3, conf.pmem.default_hot_ratio)
        self.assertEqual(1.2, conf.pmem.cache_overcommit_ratio)
        self.assertEqual(2, conf.scheduler.workers)

    def test_keeps_every_available_filters_line(self):
        devstack = self.useFixture(Devstack(
            nova_conf='[filter_scheduler]\n'
                      'available_filters = nova.scheduler.filters.'
                      'all_filters\n'
                      'available_filters = acme.filters.all_filters\n'
                      'enabled_filters = ComputeFilter,AcmeFilter\n'
                      'weight_classes = acme.weights.AcmeWeigher\n',
            NOVA_PMEM_ENABLED_FILTERS='PmemModeFilter',
            NOVA_PMEM_ENABLE_WEIGHERS='False'))
        for _ in range(2):
            devstack.run('stack', 'post-config')
        fs = novaconf.nova_view(devstack.nova_conf).filter_scheduler
        self.assertEqual(['nova.scheduler.filters.all_filters',
                          'acme.filters.all_filters',
                          'nova_pmem_filters.filters.all_filters'],
                         fs.available_filters)
        self.assertEqual(['ComputeFilter', 'AcmeFilter', 'PmemModeFilter'],
                         fs.enabled_filters)
        self.assertEqual(['acme.weights.AcmeWeigher'], fs.weight_classes)

    def test_nova_defaults_kept_where_nova_conf_is_silent(self):
        devstack = self.useFixture(Devstack(nova_conf='[DEFAULT]\n'))
        devstack.run('stack', 'post-config')
        conf = novaconf.nova_view(devstack.nova_conf)
        defaults = {o.dest: o.default for o in
                    nova_scheduler_conf.filter_scheduler_opts}
        fs = conf.filter_scheduler
        self.assertEqual(defaults['available_filters']
                         + ['nova_pmem_filters.filters.all_filters'],
                         fs.available_filters)
        self.assertEqual(defaults['enabled_filters']
                         + ['PmemModeFilter', 'PmemCacheFilter'],
                         fs.enabled_filters)
        self.assertEqual(defaults['weight_classes']
                         + ['nova_pmem_filters.weighers.all_weighers'],
                         fs.weight_classes)

    def test_resolves_through_novas_loaders(self):
        devstack = self.useFixture(Devstack())
        devstack.run('stack', 'post-config')
        fs = novaconf.nova_view(devstack.nova_conf).filter_scheduler
        filters = nova_filters.HostFilterHandler().get_matching_classes(
            fs.available_filters)
        names = {cls.__name__ for cls in filters}
        for name in fs.enabled_filters:
            self.assertIn(name, names)
        weighers = nova_weights.HostWeightHandler().get_matching_classes(
            fs.weight_classes)
        weigher_names = {cls.__name__ for cls in weighers}
        self.assertIn('PmemTierWeigher', weigher_names)
        self.assertIn('PmemCacheHeadroomWeigher', weigher_names)
        self.assertIn('RAMWeigher', weigher_names)

    def test_bad_pmem_value_stops_the_phase_with_one_line(self):
        devstack = self.useFixture(Devstack(
            NOVA_PMEM_CONF_DEFAULT_HOT_RATIO='lots'))
        before = devstack.read()
        proc = devstack.run('stack', 'post-config', expect=1)
        self.assertIn('[pmem] default_hot_ratio', proc.stderr)
        self.assertEqual(before, devstack.read())
        devstack = self.useFixture(Devstack(NOVA_PMEM_CONF_HOT_RATIO='0.2'))
        proc = devstack.run('stack', 'post-config', expect=1)
        self.assertIn('[pmem] has no option hot_ratio', proc.stderr)


class PlacementAccountingTestCase(testtools.TestCase):

    def test_provider_config_written_and_removed(self):
        case = os.path.join(DISCOVER_DATA, 'mm_2s_pmem100_256')
        devstack = self.useFixture(Devstack(
            NOVA_PMEM_PLACEMENT_ACCOUNTING='True',
            NOVA_PMEM_DISCOVER_FROM=case,
            NOVA_PMEM_CONF_CACHE_OVERCOMMIT_RATIO='1.25'))
        config_dir = devstack.env['NOVA_PMEM_PROVIDER_CONFIG_DIR']
        os.makedirs(config_dir)
        # A provider config of someone else's stays.
        other = os.path.join(config_dir, 'gpu.yaml')
        shutil.copy(os.path.join(TOP, 'etc', 'nova-pmem-filters',
                                 'nova-pmem-filters.conf.sample'), other)
        devstack.run('stack', 'post-config')
        path = os.path.join(config_dir, 'nova-pmem-filters.yaml')
        once = devstack.read(path), devstack.read(devstack.cpu_conf)
        devstack.run('stack', 'post-config')
        self.assertEqual(once, (devstack.read(path),
                                devstack.read(devstack.cpu_conf)))
        # Nova's own parser loads it; the cache carries the overcommit
        # ratio of [pmem], as PmemCacheFilter's bound does.
        parsed = provider_config._parse_provider_yaml(path)
        inventory = parsed['providers'][0]['inventories']['additional'][0]
        near = inventory[placement.NEAR_MEMORY_RC]
        self.assertEqual(1.25, near['allocation_ratio'])
        self.assertEqual(['CUSTOM_PMEM_MODE_MEMORY_MODE'],
                         parsed['providers'][0]['traits']['additional'])
        self.assertIn('provider_config_location = %s' % config_dir,
                      devstack.read(devstack.cpu_conf))
        state = os.path.join(devstack.env['DATA_DIR'], 'nova-pmem-filters',
                             'created')
        self.assertEqual('file %s\n' % path, devstack.read(state))
        # unstack removes what the plugin wrote and nothing else, twice.
        for _ in range(2):
            devstack.run('unstack')
            self.assertFalse(os.path.exists(path))
            self.assertTrue(os.path.exists(other))
            self.assertEqual('', devstack.read(state))
        devstack.run('clean')
        self.assertFalse(os.path.exists(os.path.dirname(state)))
        self.assertTrue(os.path.exists(other))

    def test_dram_host_near_memory_carries_the_ram_ratio(self):
        case = os.path.join(DISCOVER_DATA, 'ad_2s_pmem100_512')
        devstack = self.useFixture(Devstack(
            NOVA_PMEM_PLACEMENT_ACCOUNTING='True',
            NOVA_PMEM_DISCOVER_FROM=case))
        devstack.run('stack', 'post-config')
        path = os.path.join(devstack.env['NOVA_PMEM_PROVIDER_CONFIG_DIR'],
                            'nova-pmem-filters.yaml')
        with open(path) as f:
            provider = yaml.safe_load(f)['providers'][0]
        near = provider['inventories']['additional'][0][
            placement.NEAR_MEMORY_RC]
        # nova-cpu.conf's ram_allocation_ratio, so near memory never binds
        # before MEMORY_MB.
        self.assertEqual(1.5, near['allocation_ratio'])


class DevstackConfiguredNovaTest(base.PmemTestBase):
    """Real in-process Nova started with the nova.conf the plugin wrote."""

    def setUp(self):
        devstack = self.useFixture(Devstack(
            NOVA_PMEM_CONF_DEFAULT_HOT_RATIO='0.25'))
        devstack.run('stack', 'post-config')
        self.plugin_conf = novaconf.nova_view(devstack.nova_conf)
        self.flags(default_hot_ratio=self.plugin_conf.pmem.default_hot_ratio,
                   group='pmem')
        super().setUp()

    def scheduler_flags(self):
        fs = self.plugin_conf.filter_scheduler
        return dict(available_filters=fs.available_filters,
                    enabled_filters=fs.enabled_filters,
                    weight_classes=fs.weight_classes)

    def test_scheduler_runs_our_filters_and_weighers(self):
        host_manager = self.scheduler_service.manager.host_manager
        self.assertEqual(
            ['ComputeFilter', 'ComputeCapabilitiesFilter',
             'ImagePropertiesFilter', 'ServerGroupAntiAffinityFilter',
             'ServerGroupAffinityFilter', 'PmemModeFilter',
             'PmemCacheFilter'],
            [f.__class__.__name__ for f in host_manager.enabled_filters])
        weighers = {w.__class__.__name__ for w in host_manager.weighers}
        self.assertIn('PmemTierWeigher', weighers)
        self.assertIn('RAMWeigher', weighers)
        # And they decide: a memory_mode flavor goes to the Memory-Mode
        # host, which Nova's RAMWeigher alone would also pick, and a dram
        # flavor to the DRAM host, which it would not.
        for mode, host in (('memory_mode', base.MM_HOST),
                           ('dram', base.DRAM_HOST)):
            flavor = self._create_pmem_flavor(
                'only-%s' % mode, memory_gb=16,
                extra_specs={'pmem:modes': mode})
            server = self._boot(flavor)
            self.assertEqual(host, self._host_of(server))
