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
"""The observation as Prometheus metrics: the names and labels, once.

``nova-pmem-observe`` exports them (``observe/prometheus.py``), the
Watcher strategy queries them (``watcher/workingsets.py``) and the alert
rules shipped in ``etc/nova-pmem-filters/observe`` name them: all of one
spelling.
"""

# Every metric's name starts so.
PREFIX = 'nova_pmem_'
# The labels of a per-instance metric.
UUID_LABEL = 'uuid'
INSTANCE_LABELS = [UUID_LABEL, 'name', 'flavor']
# Memory the instance touched in the window: the working set.
INSTANCE_WORKING_SET = 'instance_working_set_bytes'


def name(short):
    """The full name of a metric: ``nova_pmem_`` and its short name."""
    return PREFIX + short
