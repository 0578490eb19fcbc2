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
"""nova-compute on a fake driver sized and named like a PMem node.

Nova loads compute drivers only from inside ``nova.virt``, so this module
registers itself as ``nova.virt.pmem_integration`` and then runs Nova's own
``nova-compute`` entry point; ``compute_driver =
pmem_integration.SizedFakeDriver`` selects the driver. The size comes from
the environment: ``PMEM_IT_VCPUS``, ``PMEM_IT_MEMORY_MB``,
``PMEM_IT_LOCAL_GB``.

The stock fake driver makes up a node UUID per process, so a restarted
nova-compute no longer matches its compute node record and stops. Here the
UUID is derived from the node name (:func:`node_uuid`), and the deployment
writes it to the ``compute_id`` file before the first start.

    python -m tests.integration.compute --config-file ...
"""

from nova import monkey_patch; monkey_patch.patch(backend='threading')  # noqa

import os
import sys
import time
import uuid

from nova.cmd import compute as compute_cmd
from nova.virt import fake

# Any fixed namespace: the same node name always gets the same UUID.
_NAMESPACE = uuid.UUID('6f1c1f2e-8a8e-4b8e-9d0e-5d7c2b1a0c11')


def node_uuid(nodename):
    return str(uuid.uuid5(_NAMESPACE, nodename))


class SizedFakeDriver(fake.FakeDriver):
    """Fake driver with a fixed size and a node UUID stable across restarts."""

    vcpus = int(os.environ.get('PMEM_IT_VCPUS', '80'))
    memory_mb = int(os.environ.get('PMEM_IT_MEMORY_MB', str(384 * 1024)))
    local_gb = int(os.environ.get('PMEM_IT_LOCAL_GB', '2000'))

    def get_available_resource(self, nodename):
        resources = super(SizedFakeDriver, self).get_available_resource(
            nodename)
        if resources:
            resources['uuid'] = node_uuid(nodename)
        return resources

    def get_nodenames_by_uuid(self, refresh=False):
        return {node_uuid(n): n for n in self.get_available_nodes()}

    def get_host_uptime(self):
        """What ``uptime`` prints, as the libvirt driver returns it.

        Watcher's model collector reads the hypervisors' details, which ask
        each compute for its uptime; the stock fake driver raises
        NotImplementedError, a traceback in the compute's log at each sync.
        """
        return time.strftime(' %H:%M:%S up 1 min,  0 users,  load average: '
                             '0.00, 0.00, 0.00')


def main():
    sys.modules['nova.virt.pmem_integration'] = sys.modules[__name__]
    return compute_cmd.main()


if __name__ == '__main__':
    sys.exit(main())
