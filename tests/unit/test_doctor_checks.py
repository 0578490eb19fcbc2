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
"""The doctor's checks on snapshots of a cloud, one defect at a time.

``clean()`` is a cloud set up as the docs say (the integration deployment's
shape)::

    aggregate dram    pmem_mode=dram                          dram1
    aggregate pmem-mm pmem_mode=memory_mode, cache 192 GB     mm1, mm2
    aggregate pmem-ad pmem_mode=app_direct                    ad1

with both filters and weighers configured, two scheduler workers, every
Memory-Mode flavor accounted in Placement and providers as
nova-pmem-discover describes them. It has no finding; each test plants one
defect and expects exactly the findings it causes.
"""

import dataclasses
import os
import re

import testtools

from nova_pmem_filters.core import hostfile
from nova_pmem_filters.core import kinds
from nova_pmem_filters.core import placement
from nova_pmem_filters.core import profile
from nova_pmem_filters.discover import outputs
from nova_pmem_filters.doctor import checks
from nova_pmem_filters.doctor import novaconf
from nova_pmem_filters.doctor import snapshot as snap_mod

GB = 1024
HOSTS = {'dram1': (kinds.DRAM, 384), 'mm1': (kinds.MEMORY_MODE, 192),
         'mm2': (kinds.MEMORY_MODE, 192), 'ad1': (kinds.APP_DIRECT, 192)}
NEAR = 'resources:CUSTOM_NEAR_MEMORY_MB'


def config(**changes):
    values = dict(
        files=('nova.conf',),
        available_filters=('nova.scheduler.filters.all_filters',
                           'nova_pmem_filters.filters.all_filters'),
        enabled_filters=('ComputeFilter', 'PmemModeFilter',
                         'PmemCacheFilter'),
        weight_classes=('nova.scheduler.weights.all_weighers',
                        'nova_pmem_filters.weighers.all_weighers'),
        scheduler_workers=2, default_host_mode=kinds.DRAM,
        default_flavor_modes=kinds.MODES, default_hot_ratio=0.5,
        cache_overcommit_ratio=1.0)
    values.update(changes)
    return novaconf.NovaConfig(**values)


def discovered(host, mode=None, dram_gb=None, cache_gb=None):
    label, dram = HOSTS[host]
    mode = mode or label
    dram = dram_gb if dram_gb is not None else dram
    cache = (cache_gb if cache_gb is not None else dram) \
        if mode == kinds.MEMORY_MODE else 0.0
    return hostfile.DiscoveredHost(
        source='fleet/%s.json' % host, hostname=host, hardware_mode=mode,
        mode=mode, visible_memory_gb=512.0 if mode == kinds.MEMORY_MODE
        else float(dram), dram_cache_gb=float(cache), dram_gb=float(dram))


def discovery_output(prof):
    """The discovery output fields ``prof`` was read from."""
    return {'hostname': prof.hostname, 'mode': prof.hardware_mode,
            'scheduler_mode': prof.mode, 'dram_gb': prof.dram_gb,
            'dram_cache_gb': prof.dram_cache_gb}


def provider(host, prof=None):
    prof = prof or discovered(host)
    conf = outputs.provider_config(discovery_output(prof))['providers'][0]
    inventory = conf['inventories']['additional'][0][placement.NEAR_MEMORY_RC]
    return snap_mod.Provider(
        uuid='uuid-%s' % host, name=host,
        traits=frozenset(conf['traits']['additional']) | {'COMPUTE_NODE'},
        inventories={'VCPU': {'total': 80},
                     placement.NEAR_MEMORY_RC: dict(inventory)})


def flavor(name, ram_gb, **specs):
    return snap_mod.Flavor(name=name, id='id-%s' % name, ram_mb=ram_gb * GB,
                           extra_specs=dict(specs))


def server(name, host, ram_gb, **specs):
    return snap_mod.Server(id='id-%s' % name, name=name, host=host,
                           status='ACTIVE', flavor_name='f',
                           ram_mb=ram_gb * GB, extra_specs=dict(specs))


def clean():
    return snap_mod.Snapshot(
        aggregates=(
            snap_mod.Aggregate('dram', '1', ('dram1',),
                               {profile.MODE_KEY: kinds.DRAM}),
            snap_mod.Aggregate('pmem-mm', '2', ('mm1', 'mm2'),
                               {profile.MODE_KEY: kinds.MEMORY_MODE,
                                profile.DRAM_CACHE_KEY: '192',
                                'availability_zone': 'az1'}),
            snap_mod.Aggregate('pmem-ad', '3', ('ad1',),
                               {profile.MODE_KEY: kinds.APP_DIRECT})),
        flavors=(
            # 2 GB at the default hot ratio 0.5: 1024 MB near memory.
            flavor('small', 2, **{NEAR: '1024'}),
            flavor('capacity', 32, **{'pmem:modes': 'memory_mode',
                                      'pmem:priority': 'low',
                                      'pmem:hot_ratio': '0.25',
                                      NEAR: '8192'}),
            flavor('latency', 8, **{'pmem:modes': 'dram,app_direct',
                                    'pmem:priority': 'high'}),
            flavor('vpmem', 8, **{'hw:pmem': 'SMALL'})),
        computes=tuple(snap_mod.Compute(h, (h,)) for h in sorted(HOSTS)),
        servers=(server('c1', 'mm1', 32, **{'pmem:hot_ratio': '0.25'}),
                 server('s1', 'dram1', 2)),
        providers={h: provider(h) for h in HOSTS},
        config=config(),
        fleet=tuple(discovered(h) for h in sorted(HOSTS)))


def replace(snap, **changes):
    return dataclasses.replace(snap, **changes)


def with_aggregate(snap, name, hosts=None, **metadata):
    """``snap`` with aggregate ``name`` changed (metadata None removes)."""
    aggs = []
    found = False
    for agg in snap.aggregates:
        if agg.name == name:
            found = True
            meta = dict(agg.metadata)
            for key, value in metadata.items():
                if value is None:
                    meta.pop(key, None)
                else:
                    meta[key] = value
            agg = dataclasses.replace(
                agg, metadata=meta,
                hosts=tuple(hosts) if hosts is not None else agg.hosts)
        aggs.append(agg)
    if not found:
        aggs.append(snap_mod.Aggregate(name, str(len(aggs) + 1),
                                       tuple(hosts or ()), dict(metadata)))
    return replace(snap, aggregates=tuple(aggs))


def with_flavor(snap, new):
    return replace(snap, flavors=tuple(
        f for f in snap.flavors if f.name != new.name) + (new,))


def with_provider(snap, host, **changes):
    providers = dict(snap.providers)
    providers[host] = dataclasses.replace(providers[host], **changes)
    return replace(snap, providers=providers)


class DoctorTestCase(testtools.TestCase):

    def findings(self, snap):
        return checks.run(snap)

    def assertFindings(self, snap, *expected):
        """Exactly these (severity, code, object) findings, in any order."""
        found = self.findings(snap)
        got = sorted((f.severity, f.code, f.object) for f in found)
        self.assertEqual(sorted(expected), got,
                         '\n'.join('%s %s %s: %s' % (f.severity, f.code,
                                                     f.object, f.problem)
                                   for f in found))
        return {(f.code, f.object): f for f in found}


class CleanCloudTestCase(DoctorTestCase):

    def test_clean_cloud_has_no_finding(self):
        self.assertFindings(clean())
        self.assertEqual(0, checks.exit_status(checks.run(clean())))

    def test_without_fleet_or_placement_traits_still_clean(self):
        snap = replace(clean(), fleet=None)
        self.assertFindings(snap)
        bare = {h: dataclasses.replace(p, traits=frozenset(['COMPUTE_NODE']))
                for h, p in snap.providers.items()}
        self.assertFindings(replace(snap, providers=bare))

    def test_no_nova_conf_is_said_not_guessed(self):
        found = self.assertFindings(
            replace(clean(), config=None),
            (checks.INFO, 'nova-conf-not-read', 'nova.conf'))
        finding = found[('nova-conf-not-read', 'nova.conf')]
        self.assertIn('--config-file', finding.fix)
        self.assertIn('default_hot_ratio 0.5', finding.problem)
        self.assertEqual(0, checks.exit_status(checks.run(
            replace(clean(), config=None))))


class ConfigTestCase(DoctorTestCase):

    OPT = 'nova.conf [filter_scheduler] %s'

    def test_enabled_filter_not_available(self):
        snap = replace(clean(), config=config(
            available_filters=('nova.scheduler.filters.all_filters',)))
        found = self.assertFindings(
            snap, (checks.ERROR, 'filter-not-available',
                   self.OPT % 'available_filters'),
            (checks.ERROR, 'filter-not-available',
             self.OPT % 'available_filters'))
        self.assertIn('does not start', found[(
            'filter-not-available',
            self.OPT % 'available_filters')].problem)

    def test_single_classes_count_as_available(self):
        snap = replace(clean(), config=config(available_filters=(
            'nova.scheduler.filters.all_filters',
            'nova_pmem_filters.filters.PmemModeFilter',
            'nova_pmem_filters.filters.PmemCacheFilter')))
        self.assertFindings(snap)

    def test_mode_filter_not_enabled(self):
        snap = replace(clean(), config=config(
            enabled_filters=('ComputeFilter', 'PmemCacheFilter')))
        found = self.assertFindings(
            snap, (checks.ERROR, 'filter-not-enabled',
                   self.OPT % 'enabled_filters'))
        finding = found[('filter-not-enabled', self.OPT % 'enabled_filters')]
        self.assertIn('PmemModeFilter', finding.problem)
        self.assertIn('append PmemModeFilter', finding.fix)

    def test_cache_filter_needed_only_without_placement_accounting(self):
        snap = replace(clean(), config=config(
            enabled_filters=('ComputeFilter', 'PmemModeFilter')))
        # Every Memory-Mode flavor requests near memory: nothing to add.
        self.assertFindings(snap)
        capacity = flavor('capacity', 32, **{'pmem:modes': 'memory_mode',
                                             'pmem:hot_ratio': '0.25'})
        small = flavor('small', 2)
        snap = with_flavor(with_flavor(snap, capacity), small)
        found = self.assertFindings(
            snap, (checks.ERROR, 'filter-not-enabled',
                   self.OPT % 'enabled_filters'))
        self.assertIn('capacity, small', found[(
            'filter-not-enabled', self.OPT % 'enabled_filters')].problem)

    def test_weighers(self):
        snap = replace(clean(), config=config(
            weight_classes=('nova.scheduler.weights.all_weighers',)))
        self.assertFindings(snap, (checks.WARNING, 'weighers-not-configured',
                                   self.OPT % 'weight_classes'))
        snap = replace(clean(), config=config(weight_classes=(
            'nova.scheduler.weights.all_weighers',
            'nova_pmem_filters.weighers.PmemTierWeigher')))
        found = self.assertFindings(
            snap, (checks.WARNING, 'weighers-not-configured',
                   self.OPT % 'weight_classes'))
        self.assertIn('PmemCacheHeadroomWeigher and PmemNumaCellWeigher '
                      'are not', found[(
                          'weighers-not-configured',
                          self.OPT % 'weight_classes')].problem)
        # Only the NUMA cell weigher missing is a finding too.
        snap = replace(clean(), config=config(weight_classes=(
            'nova.scheduler.weights.all_weighers',
            'nova_pmem_filters.weighers.PmemTierWeigher',
            'nova_pmem_filters.weighers.PmemCacheHeadroomWeigher')))
        found = self.assertFindings(
            snap, (checks.WARNING, 'weighers-not-configured',
                   self.OPT % 'weight_classes'))
        self.assertEqual(
            'PmemNumaCellWeigher is not in weight_classes: '
            'pmem:priority=high flavors are not given the least loaded NUMA '
            'cells', found[('weighers-not-configured',
                            self.OPT % 'weight_classes')].problem)

    def test_nova_weighers_dropped(self):
        snap = replace(clean(), config=config(weight_classes=(
            'nova_pmem_filters.weighers.all_weighers',)))
        self.assertFindings(snap, (checks.WARNING, 'nova-weighers-dropped',
                                   self.OPT % 'weight_classes'))
        # Naming Nova's weighers one by one is a choice, not a mistake.
        snap = replace(clean(), config=config(weight_classes=(
            'nova.scheduler.weights.ram.RAMWeigher',
            'nova_pmem_filters.weighers.all_weighers')))
        self.assertFindings(snap)

    def filter_only(self, workers):
        snap = replace(clean(), config=config(scheduler_workers=workers))
        for name, ram in (('small', 2), ('capacity', 32)):
            snap = with_flavor(snap, flavor(name, ram))
        return snap

    def test_filter_only_accounting_with_several_workers(self):
        workers = 'nova.conf [scheduler] workers'
        found = self.assertFindings(
            self.filter_only(2),
            (checks.WARNING, 'filter-only-cache-accounting', workers))
        finding = found[('filter-only-cache-accounting', workers)]
        self.assertIn('2 nova-scheduler workers', finding.problem)
        self.assertIn('measured 30', finding.problem)
        self.assertIn('--placement-accounting', finding.fix)
        found = self.assertFindings(
            self.filter_only(None),
            (checks.WARNING, 'filter-only-cache-accounting', workers))
        self.assertIn('one worker per CPU', found[(
            'filter-only-cache-accounting', workers)].problem)
        self.assertFindings(self.filter_only(1))


class AggregateTestCase(DoctorTestCase):

    MM = 'aggregate pmem-mm'

    def test_invalid_mode(self):
        snap = with_aggregate(clean(), 'pmem-mm', pmem_mode='Memory-Mode')
        found = self.assertFindings(
            snap, (checks.ERROR, 'invalid-pmem-mode', self.MM))
        finding = found[('invalid-pmem-mode', self.MM)]
        self.assertIn("'Memory-Mode'", finding.problem)
        self.assertIn('mm1, mm2', finding.problem)
        self.assertIn('pmem_mode=memory_mode pmem-mm', finding.fix)
        self.assertEqual(2, checks.exit_status(self.findings(snap)))

    def test_invalid_cache(self):
        for value in ('banana', '-5', '0', 'inf', ''):
            snap = with_aggregate(clean(), 'pmem-mm',
                                  pmem_dram_cache_gb=value)
            found = self.assertFindings(
                snap, (checks.ERROR, 'invalid-dram-cache', self.MM))
            self.assertIn('PmemCacheFilter rejects hosts mm1, mm2 for every '
                          'flavor', found[('invalid-dram-cache',
                                           self.MM)].problem)
        empty = with_aggregate(clean(), 'new', hosts=(),
                               pmem_dram_cache_gb='lots')
        found = self.assertFindings(
            empty, (checks.ERROR, 'invalid-dram-cache', 'aggregate new'))
        self.assertIn('hosts added to it will be rejected', found[(
            'invalid-dram-cache', 'aggregate new')].problem)

    def test_misspelt_keys(self):
        for wrong in ('pmem_dram_cache', 'pmem-dram-cache-gb',
                      'PMEM_DRAM_CACHE_GB', 'pmem_dramcache_gb'):
            snap = with_aggregate(clean(), 'pmem-mm',
                                  pmem_dram_cache_gb=None, **{wrong: '192'})
            found = self.assertFindings(
                snap, (checks.WARNING, 'misspelt-key', self.MM),
                (checks.ERROR, 'memory-mode-without-cache', self.MM))
            self.assertIn('looks like pmem_dram_cache_gb',
                          found[('misspelt-key', self.MM)].problem)
        snap = with_aggregate(clean(), 'pmem-mm', pmem_mod='memory_mode')
        self.assertFindings(snap, (checks.WARNING, 'misspelt-key', self.MM))

    def test_nova_keys_are_not_ours(self):
        snap = with_aggregate(clean(), 'pmem-mm', cpu_allocation_ratio='2',
                              ram_weight_multiplier='1', filter_tenant_id='x')
        self.assertFindings(snap)

    def test_cache_from_another_aggregate(self):
        snap = with_aggregate(clean(), 'pmem-mm', pmem_dram_cache_gb=None)
        self.assertFindings(snap, (checks.ERROR, 'memory-mode-without-cache',
                                   self.MM))
        snap = with_aggregate(snap, 'cache-192', hosts=('mm1', 'mm2'),
                              pmem_dram_cache_gb='192')
        self.assertFindings(snap)
        empty = with_aggregate(clean(), 'pmem-mm-new', hosts=(),
                               pmem_mode='memory_mode')
        self.assertFindings(empty, (checks.WARNING,
                                    'memory-mode-without-cache',
                                    'aggregate pmem-mm-new'))

    def test_hosts_in_aggregates_that_disagree(self):
        snap = with_aggregate(clean(), 'dram', hosts=('dram1', 'mm1'))
        found = self.assertFindings(
            snap, (checks.ERROR, 'aggregates-disagree', 'host mm1'))
        problem = found[('aggregates-disagree', 'host mm1')].problem
        self.assertIn('dram, pmem-mm', problem)
        self.assertIn("'dram', 'memory_mode'", problem)

    def test_cache_key_on_a_dram_aggregate(self):
        snap = with_aggregate(clean(), 'dram', pmem_dram_cache_gb='384')
        self.assertFindings(snap, (checks.WARNING,
                                   'dram-cache-without-memory-mode',
                                   'aggregate dram'))

    def test_invalid_weight_multiplier(self):
        snap = with_aggregate(clean(), 'pmem-mm',
                              pmem_tier_weight_multiplier='heavy')
        self.assertFindings(snap, (checks.WARNING,
                                   'invalid-weight-multiplier', self.MM))
        snap = with_aggregate(clean(), 'pmem-mm',
                              pmem_tier_weight_multiplier='-2.5')
        self.assertFindings(snap)


class FlavorTestCase(DoctorTestCase):

    def test_invalid_and_unknown_specs(self):
        bad = flavor('old', 4, **{'pmem:hotratio': '0.3',
                                  'pmem:priority': 'urgent'})
        found = self.assertFindings(
            with_flavor(clean(), bad),
            (checks.ERROR, 'invalid-extra-spec', 'flavor old'),
            (checks.ERROR, 'invalid-extra-spec', 'flavor old'))
        fixes = sorted(f.fix for f in checks.run(with_flavor(clean(), bad)))
        # The value of a misspelt key is kept where it is valid.
        self.assertEqual('openstack flavor set --property pmem:hot_ratio=0.3 '
                         'old && openstack flavor unset --property '
                         'pmem:hotratio old', fixes[0])
        self.assertEqual('openstack flavor set --property pmem:priority=<one '
                         'of high, normal, low> old', fixes[1])
        self.assertIn('NoValidHost',
                      found[('invalid-extra-spec', 'flavor old')].problem)

    def test_vpmem_without_app_direct(self):
        bad = flavor('vpmem', 8, **{'hw:pmem': 'SMALL',
                                    'pmem:modes': 'dram'})
        self.assertFindings(with_flavor(clean(), bad),
                            (checks.ERROR, 'vpmem-modes-conflict',
                             'flavor vpmem'))

    def test_near_memory_amount(self):
        less = flavor('capacity', 32, **{'pmem:modes': 'memory_mode',
                                         'pmem:hot_ratio': '0.25',
                                         NEAR: '4096'})
        found = self.assertFindings(
            with_flavor(clean(), less),
            (checks.ERROR, 'near-memory-mismatch', 'flavor capacity'))
        finding = found[('near-memory-mismatch', 'flavor capacity')]
        self.assertIn('8192', finding.problem)
        self.assertIn('CUSTOM_NEAR_MEMORY_MB=8192 capacity', finding.fix)
        more = dataclasses.replace(less, extra_specs=dict(
            less.extra_specs, **{NEAR: '16384'}))
        self.assertFindings(with_flavor(clean(), more),
                            (checks.WARNING, 'near-memory-mismatch',
                             'flavor capacity'))
        # The default hot ratio of nova.conf decides for a flavor without
        # its own: 2 GB at 0.25.
        snap = replace(clean(), config=config(default_hot_ratio=0.25))
        self.assertFindings(snap, (checks.WARNING, 'near-memory-mismatch',
                                   'flavor small'))

    def test_partial_placement_accounting(self):
        snap = with_flavor(clean(), flavor('small', 2))
        found = self.assertFindings(
            snap, (checks.WARNING, 'placement-accounting-partial',
                   'flavor small'),
            (checks.WARNING, 'filter-only-cache-accounting',
             'nova.conf [scheduler] workers'))
        self.assertIn('CUSTOM_NEAR_MEMORY_MB=1024 small', found[(
            'placement-accounting-partial', 'flavor small')].fix)
        # A flavor that never lands in Memory Mode needs no accounting.
        dram_only = flavor('small', 2, **{'pmem:modes': 'dram'})
        self.assertFindings(with_flavor(clean(), dram_only))

    def test_misspelt_flavor_keys(self):
        for wrong in ('pmem_modes', 'pmem.hot_ratio', 'PMEM:priority',
                      'pmem-modes'):
            snap = with_flavor(clean(), flavor('odd', 2, **{
                NEAR: '1024', wrong: 'dram'}))
            self.assertFindings(snap, (checks.WARNING, 'misspelt-key',
                                       'flavor odd'))


class HostTestCase(DoctorTestCase):

    def test_discovered_mode_differs(self):
        fleet = tuple(discovered(h, mode=kinds.DRAM) if h == 'mm2'
                      else discovered(h) for h in sorted(HOSTS))
        # The host's provider config came from the same discovery: its
        # trait says dram, its near memory is its 192 GB of DRAM.
        snap = with_provider(replace(clean(), fleet=fleet), 'mm2',
                             traits=provider('mm2', fleet[3]).traits)
        found = self.assertFindings(
            snap, (checks.ERROR, 'profile-mismatch', 'host mm2'))
        self.assertIn('aggregates say memory_mode but discovery',
                      found[('profile-mismatch', 'host mm2')].problem)

    def test_discovered_cache_differs(self):
        for cache, severity in ((128, checks.ERROR), (256, checks.WARNING)):
            fleet = tuple(discovered(h, cache_gb=cache) if h == 'mm1'
                          else discovered(h) for h in sorted(HOSTS))
            snap = replace(clean(), fleet=fleet)
            # Placement offers what discovery found: it disagrees with the
            # label, not with the hardware.
            snap = with_provider(snap, 'mm1', inventories=provider(
                'mm1', discovered('mm1', cache_gb=cache)).inventories)
            self.assertFindings(snap, (severity, 'profile-mismatch',
                                       'host mm1'))

    def test_mode_traits(self):
        snap = with_provider(clean(), 'mm1', traits=frozenset(
            ['COMPUTE_NODE', 'CUSTOM_PMEM_MODE_DRAM']))
        found = self.assertFindings(
            snap, (checks.WARNING, 'mode-trait-mismatch', 'host mm1'))
        self.assertIn('expected CUSTOM_PMEM_MODE_MEMORY_MODE (from '
                      'discovery)',
                      found[('mode-trait-mismatch', 'host mm1')].problem)
        # Without discovery, the aggregate label is what traits must say.
        found = self.assertFindings(
            replace(snap, fleet=None),
            (checks.WARNING, 'mode-trait-mismatch', 'host mm1'))
        self.assertIn('from its aggregates',
                      found[('mode-trait-mismatch', 'host mm1')].problem)

    def test_mixed_host_traits(self):
        mixed = dataclasses.replace(discovered('mm1'),
                                    hardware_mode=hostfile.MIXED)
        fleet = tuple(mixed if h == 'mm1' else discovered(h)
                      for h in sorted(HOSTS))
        snap = with_provider(replace(clean(), fleet=fleet), 'mm1',
                             traits=provider('mm1', mixed).traits)
        self.assertFindings(snap)
        self.assertFindings(replace(snap, fleet=None))

    def test_near_memory_inventory_missing(self):
        inventories = {'VCPU': {'total': 80}}
        snap = with_provider(clean(), 'ad1', inventories=inventories)
        found = self.assertFindings(
            snap, (checks.ERROR, 'near-memory-inventory-missing', 'host ad1'))
        self.assertIn('capacity, small', found[(
            'near-memory-inventory-missing', 'host ad1')].problem)
        # No flavor requests it: not needed.
        plain = replace(snap, flavors=(flavor('small', 2),),
                        config=config(scheduler_workers=1))
        self.assertFindings(plain)

    def test_near_memory_inventory_amount(self):
        inv = dict(clean().providers['mm1'].inventories)
        inv[placement.NEAR_MEMORY_RC] = dict(inv[placement.NEAR_MEMORY_RC],
                                             total=256 * GB)
        found = self.assertFindings(
            with_provider(clean(), 'mm1', inventories=inv),
            (checks.ERROR, 'near-memory-inventory-mismatch', 'host mm1'))
        self.assertIn('admits more', found[(
            'near-memory-inventory-mismatch', 'host mm1')].problem)
        inv[placement.NEAR_MEMORY_RC] = dict(inv[placement.NEAR_MEMORY_RC],
                                             total=192 * GB,
                                             allocation_ratio=0.5)
        self.assertFindings(with_provider(clean(), 'mm1', inventories=inv),
                            (checks.WARNING,
                             'near-memory-inventory-mismatch', 'host mm1'))
        # With an overcommitted cache, the inventory is too.
        snap = replace(clean(), config=config(cache_overcommit_ratio=1.5))
        self.assertFindings(
            snap, (checks.WARNING, 'near-memory-inventory-mismatch',
                   'host mm1'),
            (checks.WARNING, 'near-memory-inventory-mismatch', 'host mm2'))
        inv[placement.NEAR_MEMORY_RC] = dict(inv[placement.NEAR_MEMORY_RC],
                                             allocation_ratio=1.5)
        self.assertFindings(
            with_provider(snap, 'mm1', inventories=inv),
            (checks.WARNING, 'near-memory-inventory-mismatch', 'host mm2'))
        # The DRAM of a dram host, known from discovery only.
        inv = dict(clean().providers['dram1'].inventories)
        inv[placement.NEAR_MEMORY_RC] = dict(inv[placement.NEAR_MEMORY_RC],
                                             total=128 * GB)
        snap = with_provider(clean(), 'dram1', inventories=inv)
        self.assertFindings(snap, (checks.WARNING,
                                   'near-memory-inventory-mismatch',
                                   'host dram1'))
        self.assertFindings(replace(snap, fleet=None))

    def test_cache_overcommitted(self):
        # 192 GB of cache: 24 instances of 32 GB at 0.25 fit, 25 do not.
        fits = tuple(server('c%02d' % i, 'mm1', 32, **{
            'pmem:hot_ratio': '0.25'}) for i in range(24))
        self.assertFindings(replace(clean(), servers=fits))
        over = fits + (server('c24', 'mm1', 32, **{
            'pmem:hot_ratio': '0.25'}),)
        found = self.assertFindings(
            replace(clean(), servers=over),
            (checks.ERROR, 'cache-overcommitted', 'host mm1'))
        problem = found[('cache-overcommitted', 'host mm1')].problem
        self.assertIn('204800 MB', problem)
        self.assertIn('196608 MB', problem)
        self.assertIn('c00 (id-c00, 8192 MB hot)', problem)
        self.assertIn('and 15 more', problem)

    def test_invalid_specs_of_placed_instances_count_all_ram(self):
        # As PmemCacheFilter counts them: 200 GB of RAM, all hot.
        snap = replace(clean(), servers=(
            server('old', 'mm2', 200, **{'pmem:hot_ratio': 'lots'}),))
        self.assertFindings(snap, (checks.ERROR, 'cache-overcommitted',
                                   'host mm2'))

    def test_lowered_cache_overcommits_placed_instances(self):
        servers = tuple(server('c%d' % i, 'mm1', 32, **{
            'pmem:hot_ratio': '0.25'}) for i in range(20))
        snap = replace(clean(), servers=servers, fleet=None)
        self.assertFindings(snap)
        smaller = with_aggregate(snap, 'pmem-mm', pmem_dram_cache_gb='128')
        found = self.assertFindings(
            smaller, (checks.ERROR, 'cache-overcommitted', 'host mm1'),
            (checks.ERROR, 'near-memory-inventory-mismatch', 'host mm1'),
            (checks.ERROR, 'near-memory-inventory-mismatch', 'host mm2'))
        self.assertIn('c0 (id-c0', found[('cache-overcommitted',
                                          'host mm1')].problem)

    def test_fleet_host_not_in_the_cloud(self):
        extra = hostfile.DiscoveredHost(
            source='fleet/mm9.json', hostname='mm9', hardware_mode='dram',
            mode='dram', visible_memory_gb=384.0, dram_cache_gb=0.0,
            dram_gb=384.0)
        snap = replace(clean(), fleet=clean().fleet + (extra,))
        self.assertFindings(snap, (checks.INFO, 'fleet-host-unknown',
                                   'host mm9'))


class CodesTestCase(testtools.TestCase):

    def test_every_code_is_documented_and_tested(self):
        doc = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir,
                           'doc', 'source', 'doctor.rst')
        with open(doc) as f:
            documented = re.findall(r'^``([a-z-]+)``$', f.read(), re.M)
        self.assertEqual(sorted(checks.CODES), sorted(documented))
        with open(__file__) as f:
            tests = f.read()
        for code in checks.CODES:
            self.assertIn("'%s'" % code, tests)

    def test_undocumented_codes_are_refused(self):
        self.assertRaises(ValueError, checks.Finding, checks.ERROR,
                          'made-up', 'o', 'p', 'f')
        self.assertRaises(ValueError, checks.Finding, 'fatal',
                          'misspelt-key', 'o', 'p', 'f')


class ExitStatusTestCase(testtools.TestCase):

    def test_exit_status(self):
        def finding(severity):
            return checks.Finding(severity, 'misspelt-key', 'o', 'p', 'f')
        self.assertEqual(0, checks.exit_status([]))
        self.assertEqual(0, checks.exit_status([finding(checks.INFO)]))
        self.assertEqual(1, checks.exit_status([finding(checks.INFO),
                                                finding(checks.WARNING)]))
        self.assertEqual(2, checks.exit_status([finding(checks.WARNING),
                                                finding(checks.ERROR)]))

    def test_order_errors_first(self):
        snap = with_flavor(replace(clean(), config=None),
                           flavor('old', 4, **{'pmem:hotratio': '1'}))
        severities = [f.severity for f in checks.run(snap)]
        self.assertEqual(sorted(severities, key=checks.SEVERITIES.index),
                         severities)


# --- vPMEM and NUMA ---------------------------------------------------------

def ad_with_namespaces():
    """ad1 with three named devdax namespaces, as discovery lists them.

    ns0 (126 GiB usable, label 128GB) on node 0, ns1 (128GB) and ns2 (252
    GiB, label 256GB) on node 1; Placement has the inventories Nova makes
    of ``[libvirt] pmem_namespaces = 128GB:ns0|ns1,256GB:ns2``.
    """
    namespaces = (
        hostfile.Namespace('ns0', 'namespace0.0', 'devdax', 0, 126.0),
        hostfile.Namespace('ns1', 'namespace1.0', 'devdax', 1, 126.0),
        hostfile.Namespace('ns2', 'namespace1.1', 'devdax', 1, 252.0),
        hostfile.Namespace(None, 'namespace0.1', 'fsdax', 0, 500.0))
    snap = clean()
    fleet = tuple(dataclasses.replace(p, namespaces=namespaces)
                  if p.hostname == 'ad1' else p for p in snap.fleet)
    inventories = dict(snap.providers['ad1'].inventories)
    inventories['CUSTOM_PMEM_NAMESPACE_128GB'] = {'total': 2}
    inventories['CUSTOM_PMEM_NAMESPACE_256GB'] = {'total': 1}
    return with_provider(replace(snap, fleet=fleet), 'ad1',
                         inventories=inventories)


def vpmem_server(name, label, numa_nodes, host='ad1'):
    return dataclasses.replace(
        server(name, host, 8, **{'hw:pmem': label}), numa_nodes=numa_nodes)


class VpmemNumaTestCase(DoctorTestCase):

    def snap(self, *servers, base=None):
        base = base or ad_with_namespaces()
        return replace(base, servers=base.servers + servers)

    def test_local_namespace_is_clean(self):
        self.assertFindings(self.snap(vpmem_server('v', '256GB', (1,))))

    def test_remote_namespace(self):
        found = self.assertFindings(
            self.snap(vpmem_server('far', '256GB', (0,)),
                      vpmem_server('near', '256GB', (1,))),
            (checks.WARNING, 'vpmem-numa-remote', 'host ad1'))
        problem = found[('vpmem-numa-remote', 'host ad1')].problem
        self.assertIn('far (id-far): guest node 0 on host node 0, 256GB '
                      'namespaces ns2 on node 1', problem)
        self.assertNotIn('near', problem)

    def test_label_on_both_nodes_is_unknown(self):
        found = self.assertFindings(
            self.snap(vpmem_server('v', '128GB', (0,))),
            (checks.INFO, 'vpmem-numa-unknown', 'host ad1'))
        problem = found[('vpmem-numa-unknown', 'host ad1')].problem
        self.assertIn('ns0 on node 0; ns1 on node 1', problem)
        self.assertEqual(0, checks.exit_status(checks.run(
            self.snap(vpmem_server('v', '128GB', (0,))))))

    def test_every_label_of_a_server(self):
        found = self.assertFindings(
            self.snap(vpmem_server('v', '128GB,256GB', (0,))),
            (checks.WARNING, 'vpmem-numa-remote', 'host ad1'),
            (checks.INFO, 'vpmem-numa-unknown', 'host ad1'))
        self.assertIn('256GB', found[('vpmem-numa-remote',
                                      'host ad1')].problem)
        self.assertIn('128GB', found[('vpmem-numa-unknown',
                                      'host ad1')].problem)

    def test_multi_node_guest(self):
        found = self.assertFindings(
            self.snap(vpmem_server('wide', '256GB', (1, 0))),
            (checks.WARNING, 'vpmem-guest-numa-nodes', 'host ad1'))
        finding = found[('vpmem-guest-numa-nodes', 'host ad1')]
        self.assertIn('wide (id-wide, host nodes 1,0)', finding.problem)
        self.assertIn('hw:numa_nodes=1', finding.fix)
        # Guest node 0 on host node 0: remote as well.
        self.assertFindings(
            self.snap(vpmem_server('wide', '256GB', (0, 1))),
            (checks.WARNING, 'vpmem-guest-numa-nodes', 'host ad1'),
            (checks.WARNING, 'vpmem-numa-remote', 'host ad1'))

    def test_hidden_topology_is_said(self):
        found = self.assertFindings(
            self.snap(vpmem_server('v', '256GB', None)),
            (checks.INFO, 'vpmem-numa-unknown', 'host ad1'))
        self.assertIn('no host_node',
                      found[('vpmem-numa-unknown', 'host ad1')].problem)

    def test_labels_discovery_cannot_map(self):
        # Placement counts another number of 256GB namespaces than
        # discovery's size rule finds: the host uses labels of its own.
        snap = ad_with_namespaces()
        inventories = dict(snap.providers['ad1'].inventories)
        inventories['CUSTOM_PMEM_NAMESPACE_256GB'] = {'total': 3}
        snap = with_provider(snap, 'ad1', inventories=inventories)
        for label, why in (('256GB', 'Placement has 3'),
                           ('FAST', 'finds 0 namespace(s)')):
            found = self.assertFindings(
                self.snap(vpmem_server('v', label, (0,)), base=snap),
                (checks.INFO, 'vpmem-numa-unknown', 'host ad1'))
            self.assertIn(why, found[('vpmem-numa-unknown',
                                      'host ad1')].problem)

    def test_without_fleet_only_what_nova_says(self):
        snap = replace(ad_with_namespaces(), fleet=None)
        self.assertFindings(self.snap(vpmem_server('v', '256GB', (0,)),
                                      base=snap))
        self.assertFindings(
            self.snap(vpmem_server('w', '256GB', (0, 1)), base=snap),
            (checks.WARNING, 'vpmem-guest-numa-nodes', 'host ad1'))


class CellCacheAggregateTestCase(DoctorTestCase):
    """pmem_dram_cache_gb_per_cell is one of ours, and checked."""

    MM = 'aggregate pmem-mm'

    def test_valid_per_cell_sizes(self):
        snap = with_aggregate(clean(), 'pmem-mm',
                              pmem_dram_cache_gb_per_cell='0:96,1:96')
        self.assertFindings(snap)

    def test_per_cell_sizes_alone_bound_the_cache(self):
        snap = with_aggregate(clean(), 'pmem-mm', pmem_dram_cache_gb=None,
                              pmem_dram_cache_gb_per_cell='0:96,1:96')
        self.assertFindings(snap)

    def test_invalid_per_cell_sizes(self):
        for value, words in (('0:96,x:96', 'cell:GB pairs'),
                             ('0:96,0:96', 'names cell 0 twice'),
                             ('0:96,1:-1', 'cell:GB pairs'),
                             ('0:64,1:64', 'adds up to 128 GB')):
            snap = with_aggregate(clean(), 'pmem-mm',
                                  pmem_dram_cache_gb_per_cell=value)
            found = self.assertFindings(
                snap, (checks.ERROR, 'invalid-dram-cache-per-cell', self.MM))
            finding = found[('invalid-dram-cache-per-cell', self.MM)]
            self.assertIn(words, finding.problem)
            self.assertIn('mm1, mm2', finding.problem)
            self.assertIn('unset --property pmem_dram_cache_gb_per_cell',
                          finding.fix)


class CxlAggregateTestCase(DoctorTestCase):
    """The CXL kinds are valid pmem_mode values; tiered ones need DRAM."""

    MM = 'aggregate pmem-mm'

    def _relabelled(self, **metadata):
        # The example fleet's profiles say memory_mode: the doctor would
        # rightly report every relabelled host; audit the labels alone.
        return dataclasses.replace(
            with_aggregate(clean(), 'pmem-mm', **metadata), fleet=None)

    def test_tiered_kinds_with_near_memory(self):
        for kind in (kinds.CXL_FLAT, kinds.CXL_KMEM):
            found = self.findings(self._relabelled(pmem_mode=kind))
            # Only the hosts' Placement traits, still Memory Mode's, are
            # out of date: the label itself is valid.
            self.assertEqual({('mode-trait-mismatch', 'host mm1'),
                              ('mode-trait-mismatch', 'host mm2')},
                             {(f.code, f.object) for f in found})
            self.assertIn('expected CUSTOM_PMEM_MODE_%s' % kind.upper(),
                          found[0].problem)

    def test_tiered_kind_without_near_memory(self):
        snap = self._relabelled(pmem_mode=kinds.CXL_KMEM,
                                pmem_dram_cache_gb=None)
        found = self.assertFindings(
            snap, (checks.ERROR, 'memory-mode-without-cache', self.MM))
        self.assertIn('pmem_mode=cxl_kmem without pmem_dram_cache_gb',
                      found[('memory-mode-without-cache', self.MM)].problem)

    def test_devdax_ignores_the_cache_key(self):
        found = self.findings(self._relabelled(pmem_mode=kinds.CXL_DEVDAX))
        self.assertIn(('dram-cache-without-memory-mode', self.MM),
                      {(f.code, f.object) for f in found})
        self.assertNotIn('invalid-pmem-mode', {f.code for f in found})

    def test_misspelt_kind(self):
        snap = self._relabelled(pmem_mode='cxl-kmem')
        found = self.assertFindings(
            snap, (checks.ERROR, 'invalid-pmem-mode', self.MM))
        self.assertIn('pmem_mode=cxl_kmem pmem-mm',
                      found[('invalid-pmem-mode', self.MM)].fix)
