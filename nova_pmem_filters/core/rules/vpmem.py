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
"""vPMEM labels: the name of a namespace's size, and its resource class.

Nova offers App-Direct namespaces to guests by label (``[libvirt]
pmem_namespaces = LABEL:ns0|ns1``, flavor ``hw:pmem=LABEL``), each label a
Placement resource class ``CUSTOM_PMEM_NAMESPACE_<LABEL>``. Discovery names
the namespaces it finds by their size; the doctor matches them back the same
way.

This module imports nothing from Nova.
"""

import math
import re

RESOURCE_CLASS_PREFIX = 'CUSTOM_PMEM_NAMESPACE_'


def label_for(size_gb):
    """Label of a namespace of ``size_gb`` usable GiB, e.g. '128GB'.

    ndctl reports the usable size, a little below the size the namespace
    was created with (metadata, alignment). The label is that size rounded
    up to a multiple of 8 GiB (of 1 GiB below 16 GiB): 124.03 -> '128GB',
    31.5 -> '32GB', 3.94 -> '4GB'.
    """
    step = 8 if size_gb >= 16 else 1
    value = int(math.ceil(round(size_gb, 2) / step)) * step
    return '%dGB' % max(value, 1)


def resource_class(label):
    """Nova's resource class of ``label``, as os-resource-classes names it."""
    return RESOURCE_CLASS_PREFIX + re.sub('[^0-9A-Z]+', '_', label.upper())
