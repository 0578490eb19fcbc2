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
"""``nova-config --placement-accounting``: near memory in Placement."""

import json
import math
import os

import fixtures
import testtools
import yaml

from nova.compute import provider_config

from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import placement

from nova_pmem_filters.planner import vmsizing

from nova_pmem_filters.planner import admission
from nova_pmem_filters.planner import model
from nova_pmem_filters.planner import realise
from nova_pmem_filters.planner import scenario
from tests.unit import clitools

KEY = 'resources:CUSTOM_NEAR_MEMORY_MB'


class PlacementAccountingTestCase(testtools.TestCase):

    def setUp(self):
        super(PlacementAccountingTestCase, self).setUp()
        self.scen = scenario.load()
        self.frame = realise.settings(self.scen,
                                      placement_accounting=True)

    def _rows(self, scope, frame=None):
        frame = self.frame if frame is None else frame
        return [row for row in frame.to_dict('records')
                if row['scope'] == scope]

    def test_off_by_default(self):
        frame = realise.settings(self.scen)
        self.assertEqual([], self._rows('provider', frame))
        self.assertNotIn(KEY, list(frame['key']))
        # The rest is what it was.
        accounted = self.frame[(self.frame['scope'] != 'provider')
                               & (self.frame['key'] != KEY)]
        self.assertEqual(frame.to_dict('records'),
                         accounted.to_dict('records'))

    def test_flavor_requests_its_hot_mb(self):
        specs = {row['target']: row for row in self._rows('flavor')
                 if row['key'] == KEY}
        self.assertEqual(sorted(self.scen.workloads), sorted(specs))
        for name, workload in self.scen.workloads.items():
            expected = placement.near_memory_spec(workload.ram_mb,
                                                  workload.hot_ratio)
            self.assertEqual(expected[KEY], specs[name]['value'])
            self.assertEqual(
                'openstack flavor set --property %s=%s %s'
                % (KEY, expected[KEY], name), specs[name]['command'])
            self.assertEqual(
                int(expected[KEY]),
                math.ceil(workload.ram_mb * workload.hot_ratio))

    def test_one_inventory_per_config(self):
        rows = self._rows('provider')
        self.assertEqual(len(self.scen.configs), len(rows))
        ratios = {row['target']: float(row['value'])
                  for row in self._rows('compute')
                  if row['key'] == '[DEFAULT] ram_allocation_ratio'}
        for (name, config), row in zip(self.scen.configs.items(), rows):
            agg = realise.aggregate_name(name)
            self.assertIn(agg, row['target'])
            self.assertEqual(placement.NEAR_MEMORY_RC, row['key'])
            inventory = yaml.safe_load(row['command'])['providers'][0][
                'inventories']['additional'][0][placement.NEAR_MEMORY_RC]
            if config.mode == kinds.MEMORY_MODE:
                ratio = float(self.scen.policies.cache_overcommit)
            else:
                ratio = ratios['nova.conf of the hosts in %s' % agg]
            self.assertEqual(placement.near_memory_inventory(
                config.mode, config.dram_gb,
                cache_overcommit_ratio=ratio,
                ram_allocation_ratio=ratio), inventory)
            self.assertEqual(int(config.dram_gb * 1024), inventory['total'])
            self.assertEqual('total=%d allocation_ratio=%s'
                             % (inventory['total'], admission.fmt(ratio)),
                             row['value'])

    def test_placement_admits_what_the_model_counts(self):
        policies = self.scen.policies
        for config in self.scen.configs.values():
            node = model.node(config, policies)
            inventory = admission.near_memory_inventory(config, policies,
                                                        1.0)
            usable = inventory['total'] * inventory['allocation_ratio']
            for workload in self.scen.workloads.values():
                request = placement.instance_near_memory_mb(
                    workload.ram_mb, workload.hot_ratio)
                admitted = int(usable // request)
                limits = vmsizing.limits(node, workload, policies)
                if config.mode == kinds.MEMORY_MODE:
                    # Hot MB are whole here: Placement and the filter agree.
                    self.assertEqual(limits['dram_cache'], admitted)
                else:
                    # Never binds before memory.
                    self.assertGreaterEqual(admitted, limits['memory'])

    def test_provider_config_is_valid_for_nova(self):
        conf_dir = self.useFixture(fixtures.TempDir()).path
        rows = self._rows('provider')
        # One file per configuration, as deployed on its hosts; Nova's own
        # parser checks each.
        for i, row in enumerate(rows):
            path = os.path.join(conf_dir, 'c%d' % i, 'near-memory.yaml')
            os.mkdir(os.path.dirname(path))
            with open(path, 'w') as f:
                f.write(row['command'] + '\n')
            parsed = provider_config.get_provider_configs(
                os.path.dirname(path))
            self.assertEqual(['$COMPUTE_NODE'], list(parsed))
            self.assertEqual(
                yaml.safe_load(row['command'])['providers'][0][
                    'inventories']['additional'],
                parsed['$COMPUTE_NODE']['inventories']['additional'])

    def test_cli_option(self):
        status, out, err = clitools.run_cli(
            self, ['nova-config', '--placement-accounting', '-f', 'json'])
        self.assertEqual(0, status, err)
        rows = json.loads(out)
        self.assertEqual(self.frame.to_dict('records'), rows)
        status, out, err = clitools.run_cli(
            self, ['nova-config', '-f', 'json'])
        self.assertEqual(0, status, err)
        self.assertNotIn(KEY, out)
