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
"""Adapters from nova-scheduler's objects to the core, one idea a module.

``ovo``
    reading Nova's versioned objects without lazy-loads.
``logonce``
    one warning per problem per scheduler process.
``flavors``
    a flavor's or RequestSpec's ``pmem:`` request with the configured
    defaults.
``host_profiles``
    a host's profile from its aggregates, memoised by content.
``aggregate_view``
    repair of the aggregates a re-forked scheduler worker holds stale.
``ledger``
    the hot RAM of the instances already on each host.
``request_memo``
    what one request computes once for all filters and weighers (its
    flavor's request, the hosts' profiles and hot RAM, the RAM it has
    already placed in a multi-create).
``numa``
    Nova's NUMA fitting of a request and the hosts' cells.

The filters (``nova_pmem_filters.filters``) and weighers
(``nova_pmem_filters.weighers``) call these and the core's rules
(``nova_pmem_filters.core.rules.decide``). Everything here runs inside
nova-scheduler and never raises on a bad host or flavor.
"""
