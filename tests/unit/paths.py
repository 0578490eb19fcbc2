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
"""Paths of the source tree the tests read: examples, docs, data."""

import importlib.util
import os

# The root of the source tree.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def of(*parts):
    """The path of ``parts`` under the root of the source tree."""
    return os.path.join(ROOT, *parts)


def tool(name):
    """The module of ``tools/NAME.py``, a script rather than a package."""
    spec = importlib.util.spec_from_file_location(
        name, of('tools', name + '.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
