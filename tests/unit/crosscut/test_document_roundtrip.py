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
"""What the tools write reads back to the same values, for every host kind.

The host-profile documents and the provider configs ``nova-pmem-discover``
writes from every set of recorded tool outputs (every host kind, with and
without ``--numa``): each reads back through its core module
(:mod:`nova_pmem_filters.core.formats.hostfile`,
:mod:`nova_pmem_filters.core.formats.providerconfig`) to what discovery built,
and what the readers make of it agrees with what was written.
"""

import io
import json
import os

import fixtures
from nova.compute import provider_config as nova_provider_config
import testtools
import yaml

from nova_pmem_filters.core.formats import discoveredhost

from nova_pmem_filters.core.formats import hostfile
from nova_pmem_filters.core.formats import providerconfig
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import placement
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters.discover import cli
from nova_pmem_filters.discover import runner
from nova_pmem_filters.planner import admission
from nova_pmem_filters.planner import model
from nova_pmem_filters.planner import realise
from nova_pmem_filters.planner import scenario
from tests.unit import paths

CACHE_RATIO = 1.5
RAM_RATIO = 1.25


def recorded():
    """(name, directory, --cxl) of every set of recorded tool outputs."""
    found = []
    for base, with_cxl in ((paths.of('tests', 'unit', 'discover_data'),
                            False),
                           (paths.of('tests', 'unit', 'discover_cxl_data'),
                            True),
                           (paths.of('tests', 'unit',
                                     'discover_tiering_data'), True)):
        for name in sorted(os.listdir(base)):
            if os.path.isdir(os.path.join(base, name)):
                found.append((name, os.path.join(base, name), with_cxl))
    examples = paths.of('etc', 'examples', 'discover')
    for name in sorted(os.listdir(examples)):
        found.append((name, os.path.join(examples, name),
                      name.startswith('cxl')))
    return found


def run(directory, with_cxl, numa, *extra):
    argv = (['--from', directory] + (['--cxl'] if with_cxl else [])
            + (['--numa'] if numa else []) + list(extra))
    out, err = io.StringIO(), io.StringIO()
    status = cli.main(argv, stdout=out, stderr=err)
    if status:
        raise AssertionError('%s: %s' % (argv, err.getvalue()))
    return out.getvalue()


class HostProfileRoundTripTestCase(testtools.TestCase):
    """Every host-profile document discovery writes reads back the same."""

    def cases(self):
        for name, directory, with_cxl in recorded():
            for numa in (False, True):
                yield name, directory, with_cxl, numa

    def test_every_kind_is_recorded(self):
        modes = {json.loads(run(d, c, False))['mode']
                 for _n, d, c in recorded()}
        self.assertEqual(set(kinds.HARDWARE_MODES), modes)

    def test_documents_read_back_to_what_was_built(self):
        for name, directory, with_cxl, numa in self.cases():
            with self.subTest(host=name, numa=numa):
                built = cli.discover(runner.DirRunner(directory),
                                     with_cxl=with_cxl, numa=numa)
                text = run(directory, with_cxl, numa)
                # What was written is the document built, key for key.
                self.assertEqual(hostfile.dumps(built) + '\n', text)
                data = json.loads(text)
                read = hostfile.parse_document(data, name)
                self.assertEqual(built, read)
                self.assertEqual(data, hostfile.to_dict(read))
                self.assertEqual(text, hostfile.dumps(read) + '\n')
                # -f yaml is the same document.
                self.assertEqual(read, hostfile.parse_document(
                    yaml.safe_load(run(directory, with_cxl, numa, '-f',
                                       'yaml')), name))

    def test_readers_see_what_was_written(self):
        for name, directory, with_cxl, numa in self.cases():
            with self.subTest(host=name, numa=numa):
                text = run(directory, with_cxl, numa)
                self._agree(json.loads(text), name)

    def _agree(self, data, name):
        host = discoveredhost.parse(data, name)
        built = discoveredhost.host_of(hostfile.parse_document(data, name),
                                       name)
        self.assertEqual(built, host)
        mode = data['scheduler_mode']
        tiered = mode in kinds.TIERED
        self.assertEqual(
            (data['hostname'], data['mode'], mode,
             data['visible_memory_gb'], data['dram_gb'],
             data['dram_cache_gb'] if tiered else 0.0, data.get('vcpus')),
            (host.hostname, host.hardware_mode, host.mode,
             host.visible_memory_gb, host.dram_gb, host.dram_cache_gb,
             host.vcpus))
        near_gb = data['dram_cache_gb'] if tiered else data['dram_gb']
        self.assertEqual(near_gb, host.near_memory_gb)
        # Placement's whole MB: the exact figure written; from the rounded
        # GB within 0.005 GB.
        self.assertEqual(data['near_memory_mb'], host.host_near_memory_mb)
        self.assertLessEqual(
            abs(placement.host_near_memory_mb(near_gb)
                - data['near_memory_mb']), 0.005 * profile.MB_PER_GB + 1)
        cells = data.get('dram_cache_gb_per_cell')
        if tiered and cells:
            self.assertEqual(
                tuple(sorted(profile.parse_cell_cache(cells)[0].items())),
                host.cell_cache_gb)
        else:
            self.assertIsNone(host.cell_cache_gb)
        if data['sockets']:
            sockets = len(data['sockets'])
        elif 'cxl' in data:
            # The NUMA nodes with CPUs stand for them.
            sockets = sum(1 for n in data['cxl']['numa_nodes']
                          if n['cpus']) or None
        else:
            sockets = None
        self.assertEqual(sockets, host.sockets)
        if mode == kinds.APP_DIRECT:
            self.assertEqual(
                sorted(r['size_gb'] for r in data['regions']),
                list(host.region_gb))
            self.assertEqual(
                [(n['name'], n['dev'], n['mode'], n['numa_node'],
                  n['size_gb']) for n in data['namespaces']],
                [(n.name, n.dev, n.mode, n.numa_node, n.size_gb)
                 for n in host.namespaces])
        section = data.get('cxl')
        if section and section['kind']:
            self.assertEqual(section['near_memory_mb'],
                             data['near_memory_mb'])
            self.assertEqual(section['near_memory_gb'], data['dram_gb'])


class ProviderConfigRoundTripTestCase(testtools.TestCase):
    """Every provider config discovery writes reads back the same."""

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def test_provider_configs_read_back(self):
        seen = set()
        for name, directory, with_cxl in recorded():
            for numa in (False, True):
                with self.subTest(host=name, numa=numa):
                    seen.add(self._read_back(name, directory, with_cxl,
                                             numa))
        self.assertEqual(set(kinds.HARDWARE_MODES), seen)

    def _read_back(self, name, directory, with_cxl, numa):
        path = os.path.join(self.tmp, name, 'pmem.yaml')
        os.makedirs(os.path.dirname(path), exist_ok=True)
        data = json.loads(run(
            directory, with_cxl, numa, '--provider-config', path,
            '--cache-overcommit-ratio', str(CACHE_RATIO),
            '--ram-allocation-ratio', str(RAM_RATIO)))
        with open(path) as f:
            written = yaml.safe_load(f)
        config = providerconfig.parse(written, path)
        # Read back, it is what was written.
        self.assertEqual(written, config.as_dict())
        # It is what the host's profile says.
        (provider,) = config.providers
        self.assertTrue(provider.every_compute_node)
        self.assertEqual(tuple(kinds.traits(data['mode'])), provider.traits)
        inventory = provider.inventory(placement.NEAR_MEMORY_RC)
        total = data['near_memory_mb']
        self.assertEqual(providerconfig.Inventory(
            total=total, reserved=0, min_unit=1, max_unit=total,
            step_size=1,
            allocation_ratio=(CACHE_RATIO if data['scheduler_mode']
                              in kinds.TIERED else RAM_RATIO)), inventory)
        self.assertEqual(
            [(provider, inventory.as_dict())],
            providerconfig.near_memory_of(config))
        # Nova reads the same.
        nova = nova_provider_config._validate_provider_config(
            nova_provider_config._parse_provider_yaml(path), path)
        self.assertEqual([provider.as_dict()], nova)
        return data['mode']


class PlannedProviderConfigTestCase(testtools.TestCase):
    """nova-config's provider configs read back to the plan's inventory."""

    def test_every_configuration_of_the_built_in_scenarios(self):
        seen = set()
        for name in ('telco-cost-matched', 'cxl-cost-matched'):
            scen = scenario.load(name)
            rows = realise.rows(scen, placement_accounting=True)
            for config_name, config in scen.configs.items():
                role = realise.compute_role(
                    realise.aggregate_name(config_name))
                text = realise.provider_config(rows, role)
                written = yaml.safe_load(text)
                read = providerconfig.parse(written, role)
                self.assertEqual(written, read.as_dict())
                (provider, inventory), = providerconfig.near_memory_of(read)
                self.assertTrue(provider.every_compute_node)
                _reserved, ratio = admission.compute_memory(scen,
                                                            config_name)
                self.assertEqual(admission.near_memory_inventory(
                    config, scen.policies, ratio), inventory)
                # The near memory of the node the planner counted.
                node = model.node(config, scen.policies)
                near_gb = profile.near_memory_gb(
                    config.mode, config.dram_gb, node.profile.dram_cache_gb)
                self.assertEqual(placement.host_near_memory_mb(near_gb),
                                 inventory[placement.TOTAL])
                seen.add(config.mode)
        self.assertTrue({kinds.DRAM, kinds.MEMORY_MODE, kinds.CXL_KMEM,
                         kinds.CXL_FLAT} <= seen, seen)
