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
"""The doctor's checks: findings about a cloud, from a Snapshot.

Each check reads the same values the scheduler reads, through the same code
(the core, :mod:`nova_pmem_filters.core`): host profiles from aggregate
metadata, flavor requests from extra specs, the cache bound and Placement's
near memory. What the doctor reports is therefore what PmemModeFilter and
PmemCacheFilter would do. One module per family of checks: ``config``
(nova.conf), ``aggregates``, ``flavors``, ``hosts``, ``vpmem``,
``kernel_tiering`` (the kernel's tiering on ``cxl_kmem`` hosts, and the
flavors whose memory Nova binds there) and ``observations`` (what
nova-pmem-observe measured); they share
the findings (:mod:`nova_pmem_filters.doctor.findings`) and the view of the
cloud (:mod:`nova_pmem_filters.doctor.cloud`).
"""

from nova_pmem_filters.doctor.checks import aggregates
from nova_pmem_filters.doctor.checks import config
from nova_pmem_filters.doctor.checks import flavors
from nova_pmem_filters.doctor.checks import hosts
from nova_pmem_filters.doctor.checks import kernel_tiering
from nova_pmem_filters.doctor.checks import observations
from nova_pmem_filters.doctor.checks import vpmem
from nova_pmem_filters.doctor import cloud
from nova_pmem_filters.doctor import findings

# The names the CLI and the tests use.
ERROR = findings.ERROR
WARNING = findings.WARNING
INFO = findings.INFO
SEVERITIES = findings.SEVERITIES
CODES = findings.CODES
Finding = findings.Finding
exit_status = findings.exit_status

CHECKS = (config.check, aggregates.check, flavors.check, hosts.check,
          vpmem.check, kernel_tiering.check, observations.check)


def run(snap):
    """Every finding about the cloud of ``snap``, errors first."""
    view = cloud.view(snap)
    found = []
    for check in CHECKS:
        found.extend(check(snap, view))
    return sorted(found, key=Finding.sort_key)
