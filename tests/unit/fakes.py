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
"""Hosts, flavors and request specs for the scheduler-side unit tests."""

import logging
import weakref

import fixtures
from oslo_utils.fixture import uuidsentinel as uuids

from nova import context as nova_context
from nova import objects
from nova import test
from nova.tests.unit.scheduler import fakes as nova_fakes

from nova_pmem_filters.scheduler import host_profiles
from nova_pmem_filters.scheduler import ledger
from nova_pmem_filters.scheduler import logonce
from nova_pmem_filters.scheduler import request_memo

DRAM = {'pmem_mode': 'dram'}
APP_DIRECT = {'pmem_mode': 'app_direct'}


def memory_mode(cache_gb):
    return {'pmem_mode': 'memory_mode', 'pmem_dram_cache_gb': str(cache_gb)}


def flavor(memory_mb=1024, specs=None, name='pmem.small'):
    return objects.Flavor(name=name, flavorid=name, memory_mb=memory_mb,
                          vcpus=1, root_gb=1, ephemeral_gb=0, swap=0,
                          extra_specs=dict(specs or {}))


def request_spec(specs=None, memory_mb=1024, instance_uuid=uuids.new,
                 rebuild=False, name='pmem.small'):
    hints = {'_nova_check_type': ['rebuild']} if rebuild else {}
    return objects.RequestSpec(instance_uuid=instance_uuid,
                               flavor=flavor(memory_mb, specs, name),
                               scheduler_hints=hints)


def host(name, metadata=(), instances=(), node=None, **attrs):
    """A HostState in one aggregate per metadata mapping."""
    aggregates = [objects.Aggregate(id=i, name='%s-agg%d' % (name, i),
                                    metadata=md)
                  for i, md in enumerate(metadata)]
    attrs['aggregates'] = aggregates
    return nova_fakes.FakeHostState(name, node or name + '-node', attrs,
                                    instances=list(instances))


class PmemTestCase(test.NoDBTestCase):
    """Resets module state and fakes the database reads of the ledger.

    ``self.db`` maps instance UUIDs to full Instance objects (flavor loaded)
    that the patched ``InstanceList.get_by_filters`` returns; the host
    states hold bare ``Instance(uuid=...)`` objects like the scheduler's.
    A lazy-load of any Instance field fails the test.
    """

    def setUp(self):
        super(PmemTestCase, self).setUp()
        self.now = 1000.0
        self.ledger = ledger.HotRamLedger(clock=lambda: self.now)
        self.useFixture(fixtures.MockPatchObject(ledger, 'LEDGER',
                                                 self.ledger))
        self.useFixture(fixtures.MockPatchObject(
            request_memo, '_MEMOS', weakref.WeakKeyDictionary()))
        logonce._WARNED.clear()
        self.addCleanup(logonce._WARNED.clear)
        host_profiles._PROFILES.clear()
        self.addCleanup(host_profiles._PROFILES.clear)
        self.log = self.useFixture(fixtures.FakeLogger(
            name='nova_pmem_filters', level=logging.DEBUG,
            format='%(levelname)s %(name)s %(message)s'))

        self.ctxt = nova_context.get_admin_context()
        self.db = {}
        self.get_by_filters = self.useFixture(fixtures.MockPatch(
            'nova.objects.InstanceList.get_by_filters',
            side_effect=self._get_by_filters)).mock
        self.lazy_loads = []
        lazy_loads = self.lazy_loads

        def obj_load_attr(instance, attrname):
            lazy_loads.append((instance.uuid, attrname))
            raise AssertionError('lazy-load of Instance.%s' % attrname)

        self.useFixture(fixtures.MockPatchObject(
            objects.Instance, 'obj_load_attr', obj_load_attr))
        self.addCleanup(self._assert_no_lazy_load)

    def _get_by_filters(self, ctxt, filters, expected_attrs=None, **kwargs):
        found = [self.db[uuid] for uuid in filters['uuid'] if uuid in self.db]
        return objects.InstanceList(ctxt, objects=found)

    def _assert_no_lazy_load(self):
        self.assertEqual([], self.lazy_loads)

    def instance(self, uuid, memory_mb=1024, specs=None, loaded=False,
                 deleted=False, in_db=True, ctxt=None):
        """An instance as a HostState holds it; recorded in ``self.db``.

        :param loaded: give the HostState the full object, as nova-compute
            pushes it with ``track_instance_changes``.
        """
        ctxt = ctxt or self.ctxt
        full = objects.Instance(ctxt, uuid=uuid, deleted=deleted,
                                flavor=flavor(memory_mb, specs))
        if in_db:
            self.db[uuid] = full
        if loaded:
            return full
        return objects.Instance(ctxt, uuid=uuid)

    def log_lines(self, level):
        return [line for line in self.log.output.splitlines()
                if line.startswith(level + ' ')]

    def queried_uuids(self):
        """The sorted UUID lists of each get_by_filters call."""
        return [call.args[1]['uuid']
                for call in self.get_by_filters.call_args_list]
