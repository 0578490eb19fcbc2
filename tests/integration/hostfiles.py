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
"""Files a compute host of the integration deployment needs before it starts.

* ``provider_config/pmem.yaml``: what ``nova-pmem-discover
  --provider-config`` writes for such a host (the ``CUSTOM_NEAR_MEMORY_MB``
  inventory and the mode traits), built and validated by the same functions.
* ``state/compute_id``: the node UUID of :mod:`tests.integration.compute`,
  so that nova-compute finds its identity on every start, the first too.

    python -m tests.integration.hostfiles COMPUTE_DIR SPEC [SPEC ...]

SPEC is ``name:vcpus:memory_gb:mode:dram_gb`` as in deploy.sh's COMPUTES;
the files go to ``COMPUTE_DIR/name/``. One process does every host: importing
the package costs seconds on a small machine.
"""

import os
import sys

from nova_pmem_filters.core.formats import discoveredhost
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.discover import outputs

from tests.integration import compute


def host_profile(name, mode, dram_gb):
    """The host a nova-pmem-discover profile of such a host describes."""
    return discoveredhost.DiscoveredHost(
        source=name, hostname=name, hardware_mode=mode, mode=mode,
        visible_memory_gb=float(dram_gb),
        dram_cache_gb=float(dram_gb) if mode == kinds.MEMORY_MODE else 0.0,
        dram_gb=float(dram_gb))


def write_host(directory, name, mode, dram_gb):
    config = outputs.provider_config(host_profile(name, mode, dram_gb))
    outputs.write_atomic(
        os.path.join(directory, 'provider_config', 'pmem.yaml'),
        outputs.render_provider_config(config))
    id_file = os.path.join(directory, 'state', 'compute_id')
    if not os.path.exists(id_file):
        with open(id_file, 'w') as f:
            f.write(compute.node_uuid(name))


def main(argv):
    base = argv[1]
    for spec in argv[2:]:
        name, _vcpus, _memory_gb, mode, dram_gb = spec.split(':')
        directory = os.path.join(base, name)
        for sub in ('provider_config', 'state'):
            os.makedirs(os.path.join(directory, sub), exist_ok=True)
        write_host(directory, name, mode, dram_gb)


if __name__ == '__main__':
    main(sys.argv)
