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
"""What the CXL planning tests share: the built-in CXL scenario."""

import re

import yaml

from nova_pmem_filters.planner import scenario


NAME = 'cxl-cost-matched'
FIGURES = ('price', 'watts', 'bandwidth', 'latency', 'lanes', 'cxl_lanes',
           'flat_memory_mode', 'base_cost', 'base_watts', 'rack_units')


def raw_scenario():
    return yaml.safe_load(scenario.read_text(NAME)[0])


def cited(text):
    return bool(re.search(r'https?://', text or '')) or (
        (text or '').startswith('assumption'))


def dataclass_replace(workload, hot_ratio):
    import dataclasses
    request = dataclasses.replace(workload.request, hot_ratio=hot_ratio)
    return dataclasses.replace(workload, request=request)
