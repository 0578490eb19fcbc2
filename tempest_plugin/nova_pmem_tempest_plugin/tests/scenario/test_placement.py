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
"""Flavors with ``pmem:`` specs land only on hosts of the right kinds.

A host's kind is what the scheduler reads: ``pmem_mode`` in the metadata
of its aggregates (``[pmem_filters] default_host_mode`` when none sets it).
Each test creates one flavor and

* boots ``[pmem_filters] servers_per_flavor`` servers without naming a
  host: each must be ACTIVE on a host of a kind the flavor allows;
* asks for up to ``[pmem_filters] hosts_per_kind`` hosts of every kind
  the flavor does not allow, by name (server create's ``host``, 2.74,
  which still runs the filters): each such server must end in ERROR with
  NoValidHost. Where the weighers alone would keep a flavor away from a
  kind, this shows the filter does;
* asks for one allowed host by name: ACTIVE there, so the refusals are
  the flavor's kinds and not the named-host request itself.

A test skips when the cloud has no host the flavor may land on, or no
host it must be kept off (then there is nothing to show).
"""

from tempest import config
from tempest.lib import decorators

from nova_pmem_tempest_plugin import contract
from nova_pmem_tempest_plugin import hosts
from nova_pmem_tempest_plugin.tests import base

CONF = config.CONF


class PmemPlacementTest(base.BasePlacementTest):
    """Where the scheduler puts flavors that name memory tiers."""

    def check_lands_only_on_allowed(self, label, specs):
        request = contract.flavor(specs, self.default_hot_ratio)
        allowed, refused = hosts.split_hosts(self.profiles, request)
        wanted = hosts.describe_kinds(request.modes)
        if not allowed:
            raise self.skipException(
                'no compute host of kind %s (hosts: %s)'
                % (wanted, self.describe_hosts()))
        if not refused:
            raise self.skipException(
                'every compute host is of kind %s: no host to keep the '
                'flavor off (hosts: %s)' % (wanted, self.describe_hosts()))
        flavor = self.create_flavor(label, CONF.pmem_filters.flavor_ram_mb,
                                    specs)
        for _ in range(CONF.pmem_filters.servers_per_flavor):
            self.assert_active(self.boot(flavor), on=allowed)
        for host in self.refused_sample(refused):
            self.assert_no_valid_host(
                self.boot(flavor, host),
                'host %s is %s and the flavor allows only %s'
                % (host, self.profiles[host].mode, wanted))
        self.assert_active(self.boot(flavor, allowed[0]), on=[allowed[0]])

    def refused_sample(self, refused):
        """Up to ``hosts_per_kind`` of the refused hosts of each kind."""
        per_kind = {}
        for host in refused:
            per_kind.setdefault(self.profiles[host].mode, []).append(host)
        count = CONF.pmem_filters.hosts_per_kind
        return [h for mode in sorted(per_kind, key=contract.kind_order)
                for h in per_kind[mode][:count]]

    def describe_hosts(self):
        return ', '.join('%s=%s' % (h, p.mode or 'unknown')
                         for h, p in sorted(self.profiles.items()))

    @decorators.idempotent_id('2d1458b7-0e24-4844-b429-e507003f9287')
    def test_latency_sensitive_flavor_never_on_memory_mode(self):
        """DRAM-backed kinds only, high priority: never Memory Mode."""
        self.check_lands_only_on_allowed('latency', {
            contract.MODES_KEY: '%s,%s' % (contract.DRAM, contract.APP_DIRECT),
            contract.PRIORITY_KEY: contract.PRIORITY_HIGH})

    @decorators.idempotent_id('ea2ef0f1-4855-4c63-add3-6da7befc5e1d')
    def test_dram_only_flavor_only_on_dram(self):
        self.check_lands_only_on_allowed('dram', {
            contract.MODES_KEY: contract.DRAM})

    @decorators.idempotent_id('44bfdc1e-36d7-4d6c-99e9-394028f41a44')
    def test_capacity_flavor_only_on_memory_mode(self):
        """Low priority, Memory Mode only, little hot RAM."""
        self.check_lands_only_on_allowed('capacity', {
            contract.MODES_KEY: contract.MEMORY_MODE,
            contract.PRIORITY_KEY: contract.PRIORITY_LOW,
            contract.HOT_RATIO_KEY: '0.1'})

    @decorators.idempotent_id('01526660-390d-4a15-aa31-dab6e6e94dcd')
    def test_app_direct_flavor_only_on_app_direct(self):
        self.check_lands_only_on_allowed('app-direct', {
            contract.MODES_KEY: contract.APP_DIRECT})

    @decorators.idempotent_id('f290c89e-015f-48e2-89af-4cf806781990')
    def test_vpmem_flavor_only_on_app_direct(self):
        """``hw:pmem`` without ``pmem:modes``: App Direct hosts only."""
        label = CONF.pmem_filters.vpmem_label
        if not label:
            raise self.skipException(
                '[pmem_filters] vpmem_label is not set: no vPMEM namespace '
                'label of the App Direct hosts to ask for')
        self.check_lands_only_on_allowed('vpmem', {
            contract.VPMEM_KEY: label})

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('76217db4-dd29-49d8-b20e-46b78d05b1dd')
    def test_vpmem_flavor_excluding_app_direct_refused(self):
        """``hw:pmem`` with ``pmem:modes`` without app_direct: no host.

        Nova validates one key at a time, so the API takes the pair; the
        scheduler refuses it even on an App Direct host that offers the
        namespace.
        """
        label = CONF.pmem_filters.vpmem_label
        if not label:
            raise self.skipException(
                '[pmem_filters] vpmem_label is not set: no vPMEM namespace '
                'label of the App Direct hosts to ask for')
        targets = self.hosts_of(contract.APP_DIRECT)
        if not targets:
            raise self.skipException(
                'no compute host of kind app_direct (hosts: %s)'
                % self.describe_hosts())
        flavor = self.create_flavor(
            'vpmem-conflict', CONF.pmem_filters.flavor_ram_mb, {
                contract.VPMEM_KEY: label,
                contract.MODES_KEY: '%s,%s' % (contract.DRAM,
                                               contract.MEMORY_MODE)})
        self.assert_no_valid_host(
            self.boot(flavor, targets[0]),
            'the flavor asks for vPMEM but allows only dram and memory_mode')
