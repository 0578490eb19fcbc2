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
"""What Nova admits as nova-config configures it, against an oracle.

The oracle is Placement's own rule applied allocation by allocation (an
allocation fits while ``used + amount <= (total - reserved) x ratio``), on
the settings nova-config prints, read back from its rows: never the
planner's formulas.
"""

import dataclasses

import testtools

from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.planner import admission
from nova_pmem_filters.planner import model
from nova_pmem_filters.planner import realise
from nova_pmem_filters.planner import scenario
from nova_pmem_filters.planner import tables
from nova_pmem_filters.planner import vmsizing


def placement_oracle(total, reserved, ratio, amount):
    """Allocations of ``amount`` Placement accepts, one at a time."""
    capacity = (total - reserved) * ratio
    used = count = 0
    while used + amount <= capacity:
        used += amount
        count += 1
    return count


def printed(scen, config_name, placement_accounting=False):
    """(reserved MB, ratio, near-memory inventory or None) as printed."""
    rows = realise.rows(scen, placement_accounting=placement_accounting)
    role = realise.compute_role(realise.aggregate_name(config_name))
    values = {r['option']: r['line_value'] for r in rows
              if r.get('object') == role and r['scope'] == 'compute'}
    near = [r['value'] for r in rows
            if r['scope'] == 'provider' and r['object'] == role]
    inventory = None
    if near:
        fields = dict(part.split('=') for part in near[0].split())
        inventory = (int(fields['total']), float(fields['allocation_ratio']))
    return (int(values['reserved_host_memory_mb']),
            float(values['ram_allocation_ratio']), inventory)


def flavor_request(scen, workload_name):
    rows = realise.rows(scen, placement_accounting=True)
    return int(next(r['value'] for r in rows if r['scope'] == 'flavor'
                    and r['target'] == workload_name
                    and r['key'] == 'resources:CUSTOM_NEAR_MEMORY_MB'))


def with_hot_ratio(scen, name, hot_ratio):
    raw = scen.workloads[name]
    specs = dict(raw.extra_specs, **{'pmem:hot_ratio': str(hot_ratio)})
    return dataclasses.replace(scen, workloads=dict(
        scen.workloads, **{name: dataclasses.replace(
            raw, extra_specs=specs, request=extra_specs.parse(specs))}))


class AdmittedTestCase(testtools.TestCase):

    def _assert_oracle(self, scen, accounting):
        counts = admission.admitted_counts(scen, None, accounting)
        for (config_name, name), (count, _reason) in counts.items():
            reserved, ratio, inventory = printed(scen, config_name,
                                                 accounting)
            workload = scen.workloads[name]
            node = model.node(scen.configs[config_name], scen.policies)
            planned, _ = vmsizing.density(node, workload, scen.policies)
            total = int(round(node.visible_memory_gb * 1024))
            expected = min(planned, placement_oracle(
                total, reserved, ratio, workload.ram_mb))
            if inventory is not None:
                expected = min(expected, placement_oracle(
                    inventory[0], 0, inventory[1],
                    flavor_request(scen, name)))
            self.assertEqual(expected, count, (config_name, name))

    def test_builtin_scenarios_agree_with_placement(self):
        for name in scenario.builtin_names():
            for accounting in (False, True):
                self._assert_oracle(scenario.load(name), accounting)

    def test_shared_ratio_loses_mysql_one_vm(self):
        scen = scenario.load(None)
        counts = admission.admitted_counts(scen)
        self.assertEqual((19, 'shared_ratio'),
                         counts[('mm-192-512', 'mysql')])
        self.assertEqual((19, None), counts[('mm-192-512', 'redis')])
        # Planned alone, MySQL's own ratio admits its 20.
        self.assertEqual({('dram-384', 'mysql'): (15, None),
                          ('mm-192-512', 'mysql'): (20, None)},
                         admission.admitted_counts(scen, ['mysql']))

    def test_a_ratio_good_for_both_is_taken(self):
        # Two workloads that use the same share of their flavor: one ratio
        # gives both their planned count.
        scen = scenario.load(None)
        redis = scen.workloads['redis']
        twin = dataclasses.replace(redis, name='twin')
        scen = dataclasses.replace(scen, workloads={'redis': redis,
                                                    'twin': twin})
        for (_c, _w), (_count, reason) in admission.admitted_counts(
                scen).items():
            self.assertIsNone(reason)

    def test_near_memory_rounding(self):
        # Hot ratio 0.4: 13107.2 hot MB, requested as 13108; 196608 MB of
        # DRAM hold 15 by the filter, 14 by Placement.
        scen = with_hot_ratio(scenario.load(None), 'redis', 0.4)
        self.assertEqual(13108, flavor_request(scen, 'redis'))
        self.assertEqual((15, None), admission.admitted(
            scen, 'mm-192-512', scen.workloads['redis']))
        self.assertEqual((14, 'near_memory_rounding'), admission.admitted(
            scen, 'mm-192-512', scen.workloads['redis'],
            placement_accounting=True))
        self._assert_oracle(scen, True)
        notes = tables.admission_notes(scen, placement_accounting=True)
        self.assertIn(
            'mm-192-512: note near_memory_rounding: redis: 14 VMs per node: '
            'its CUSTOM_NEAR_MEMORY_MB request, rounded up to whole MB, '
            'divides the inventory 14 times (15 without Placement '
            'accounting)', notes)
