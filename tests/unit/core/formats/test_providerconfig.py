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

import copy
import os

import fixtures
from nova.compute import provider_config as nova_provider_config
from nova import exception as nova_exception
import testtools
import yaml

from nova_pmem_filters.core.formats import providerconfig
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import placement


def discovered():
    """What discovery writes for a Memory-Mode host."""
    inv = placement.near_memory_inventory(kinds.MEMORY_MODE, 192, 1.5)
    return providerconfig.near_memory_provider_config(
        inv, traits=kinds.traits(kinds.MEMORY_MODE))


def planned():
    """What nova-config and the functional tests write for one node."""
    return providerconfig.near_memory_provider_config(
        placement.near_memory_inventory(kinds.DRAM, 384), name='dram1')


class BuildTestCase(testtools.TestCase):

    def test_discovered(self):
        self.assertEqual({
            'meta': {'schema_version': '1.0'},
            'providers': [{
                'identification': {'uuid': '$COMPUTE_NODE'},
                'traits': {'additional': ['CUSTOM_PMEM_MODE_MEMORY_MODE']},
                'inventories': {'additional': [{'CUSTOM_NEAR_MEMORY_MB': {
                    'total': 196608, 'reserved': 0, 'min_unit': 1,
                    'max_unit': 196608, 'step_size': 1,
                    'allocation_ratio': 1.5}}]}}]}, discovered())
        # The keys in the order they are written (the YAML's order).
        provider = discovered()['providers'][0]
        self.assertEqual([providerconfig.IDENTIFICATION,
                          providerconfig.TRAITS, providerconfig.INVENTORIES],
                         list(provider))
        inv = provider['inventories']['additional'][0][
            placement.NEAR_MEMORY_RC]
        self.assertEqual(list(placement.INVENTORY_KEYS), list(inv))

    def test_no_near_memory_no_inventory(self):
        config = providerconfig.near_memory_provider_config(
            None, traits=['CUSTOM_X'])
        self.assertNotIn('inventories', config['providers'][0])


class ReadTestCase(testtools.TestCase):

    def test_round_trip(self):
        for config in (discovered(), planned(),
                       providerconfig.document(providerconfig.provider(
                           traits=['CUSTOM_A', 'CUSTOM_B']))):
            read = providerconfig.parse(config, 'x.yaml')
            self.assertEqual(config, read.as_dict())

    def test_values(self):
        read = providerconfig.parse(discovered(), 'x.yaml')
        (provider,) = read.providers
        self.assertTrue(provider.every_compute_node)
        self.assertEqual(('CUSTOM_PMEM_MODE_MEMORY_MODE',), provider.traits)
        self.assertEqual(providerconfig.Inventory(196608, 0, 1, 196608, 1,
                                                  1.5),
                         provider.inventory(placement.NEAR_MEMORY_RC))
        self.assertIsNone(provider.inventory('CUSTOM_OTHER'))
        (named,) = providerconfig.parse(planned(), 'x.yaml').providers
        self.assertEqual(('dram1', None, False),
                         (named.name, named.traits,
                          named.every_compute_node))

    def test_errors_name_the_key(self):
        cases = [
            (lambda c: c['meta'].update(schema_version='2.0'),
             'x.yaml: meta.schema_version: expected "1.0", got "2.0"'),
            (lambda c: c.update(providers=[]),
             'x.yaml: providers: expected a non-empty list, got []'),
            (lambda c: c['providers'][0].update(identification={}),
             'x.yaml: providers.0.identification: expected exactly one '
             'of uuid, name'),
            (lambda c: c['providers'][0]['traits'].update(
                additional=['HW_CPU_X86_AVX']),
             'x.yaml: providers.0.traits.additional.0: "HW_CPU_X86_AVX" '
             'is not a custom name'),
            (lambda c: _inventory(c).update(max_unit=10 ** 9),
             'x.yaml: providers.0.inventories.additional.0.'
             'CUSTOM_NEAR_MEMORY_MB: needs min_unit <= max_unit <= total'),
            (lambda c: _inventory(c).update(total=1.5),
             'CUSTOM_NEAR_MEMORY_MB.total: expected an integer >= 1, got '
             '1.5'),
            (lambda c: _inventory(c).update(allocation_ratio=0),
             'allocation_ratio: expected a number > 0, got 0'),
            (lambda c: _inventory(c).update(spare=1),
             'CUSTOM_NEAR_MEMORY_MB.spare: not a key of total'),
        ]
        for change, message in cases:
            config = discovered()
            change(config)
            err = self.assertRaises(providerconfig.ProviderConfigError,
                                    providerconfig.parse, config, 'x.yaml')
            self.assertIn(message, str(err))


def _inventory(config):
    return config['providers'][0]['inventories']['additional'][0][
        placement.NEAR_MEMORY_RC]


class WriteTestCase(testtools.TestCase):
    """dumps: the one writer of discovery and the planner."""

    def test_block_text(self):
        # Comments first, then the document in the order it was built.
        self.assertEqual(
            '# Written by a test.\n'
            '#\n'
            'meta:\n'
            "  schema_version: '1.0'\n"
            'providers:\n'
            '- identification:\n'
            '    name: dram1\n'
            '  inventories:\n'
            '    additional:\n'
            '    - CUSTOM_NEAR_MEMORY_MB:\n'
            '        total: 393216\n'
            '        reserved: 0\n'
            '        min_unit: 1\n'
            '        max_unit: 393216\n'
            '        step_size: 1\n'
            '        allocation_ratio: 1.0\n',
            providerconfig.dumps(planned(), 'x', ['Written by a test.', '']))

    def test_one_line(self):
        self.assertEqual(
            "{meta: {schema_version: '1.0'}, providers: [{identification: "
            "{name: dram1}, inventories: {additional: [{"
            "CUSTOM_NEAR_MEMORY_MB: {allocation_ratio: 1.0, max_unit: "
            "393216, min_unit: 1, reserved: 0, step_size: 1, total: "
            "393216}}]}}]}",
            providerconfig.dumps(planned(), 'x', one_line=True))

    def test_round_trip(self):
        for config in (discovered(), planned()):
            for one_line in (False, True):
                text = providerconfig.dumps(config, 'x', ['c'], one_line)
                self.assertEqual(providerconfig.parse(config, 'x'),
                                 providerconfig.parse(yaml.safe_load(text),
                                                      'y'))
        # A ProviderConfig is written as the document it was read from.
        read = providerconfig.parse(discovered(), 'x')
        self.assertEqual(providerconfig.dumps(discovered(), 'x'),
                         providerconfig.dumps(read, 'x'))

    def test_refuses_what_nova_would(self):
        config = copy.deepcopy(discovered())
        _inventory(config).update(total='196608')
        error = self.assertRaises(providerconfig.ProviderConfigError,
                                  providerconfig.dumps, config, 'out.yaml')
        self.assertIn('out.yaml', str(error))


class NovaAgreesTestCase(testtools.TestCase):
    """What parse accepts Nova loads; what Nova refuses parse refuses."""

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def nova(self, config):
        path = os.path.join(self.tmp, 'p.yaml')
        with open(path, 'w') as f:
            yaml.safe_dump(config, f)
        return nova_provider_config._validate_provider_config(
            nova_provider_config._parse_provider_yaml(path), path)

    def test_accepted(self):
        for config in (discovered(), planned()):
            read = providerconfig.parse(config, 'x.yaml')
            self.assertEqual([p.as_dict() for p in read.providers],
                             self.nova(config))

    def test_nova_loads_what_dumps_writes(self):
        for config in (discovered(), planned()):
            path = os.path.join(self.tmp, 'written.yaml')
            with open(path, 'w') as f:
                f.write(providerconfig.dumps(config, path, ['a comment']))
            self.assertEqual(
                config['providers'],
                nova_provider_config._validate_provider_config(
                    nova_provider_config._parse_provider_yaml(path), path))

    def test_refused_by_both(self):
        changes = [
            lambda c: c['meta'].update(schema_version='2.0'),
            lambda c: c['providers'][0].update(identification={}),
            lambda c: c['providers'][0]['identification'].update(
                name='two ways'),
            lambda c: c['providers'][0]['identification'].update(
                uuid='not-a-uuid'),
            lambda c: c['providers'][0]['traits'].update(
                additional=['HW_CPU_X86_AVX']),
            lambda c: c['providers'][0]['inventories']['additional'][0]
            .update(MEMORY_MB={'total': 1}),
            lambda c: _inventory(c).update(total='196608'),
            lambda c: _inventory(c).update(reserved=0.5),
            lambda c: _inventory(c).pop('total'),
            lambda c: _inventory(c).update(spare=1),
        ]
        for number, change in enumerate(changes):
            config = copy.deepcopy(discovered())
            change(config)
            with self.subTest(change=number):
                self.assertRaises(nova_exception.ProviderConfigException,
                                  self.nova, config)
                self.assertRaises(providerconfig.ProviderConfigError,
                                  providerconfig.parse, config, 'x.yaml')
