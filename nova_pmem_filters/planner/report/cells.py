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
"""What the charts and the page both read of the comparison frame.

A cell of the frame (a configuration's value for a workload), the order of
a column's values, whether a value is a finite number, and the resolution
the charts are drawn at (the page sizes the images by it).
"""

import math
import numbers

# Dots per inch of the report's PNG charts.
DPI = 120


def finite(value):
    """Whether ``value`` is a real, finite number (not a bool)."""
    return (isinstance(value, numbers.Real) and not isinstance(value, bool)
            and math.isfinite(value))


def column_order(column):
    """The values of a column, each once, in the order they first appear."""
    return list(dict.fromkeys(column))


def comparison_cell(comparison, config, workload, column):
    """``column`` of the comparison row of (config, workload), or None."""
    rows = comparison[(comparison['config'] == config)
                      & (comparison['workload'] == workload)]
    return rows[column].iloc[0] if len(rows) else None
