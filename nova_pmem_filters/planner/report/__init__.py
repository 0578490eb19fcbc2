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
"""The capacity report: PNG charts and one self-contained HTML file.

Rendering is pure: :func:`chart_png` and :func:`render_html` take the frames
of :mod:`nova_pmem_filters.planner.tables` (and the scenario) and return
``bytes`` or ``str``;
:func:`build` runs them all and returns the files to write. :func:`write` is
the only function that touches the file system: every file goes to a
temporary file in the target directory, is synced, and is renamed over the
old one, HTML last, so a reader finds the old report or the new one and
never half of one.

Charts are drawn on matplotlib's Agg canvas directly (no pyplot, no display).

One module per idea: ``cells`` (what the charts and the page both read of
the comparison frame), ``charts`` (the PNG charts), ``page`` (the HTML
page) and ``files`` (the report's files, built and written atomically).
"""

from nova_pmem_filters.planner.report import cells
from nova_pmem_filters.planner.report import charts
from nova_pmem_filters.planner.report import files
from nova_pmem_filters.planner.report import page


# The names callers use, from the module that holds each.
BASELINE_COLOR = charts.BASELINE_COLOR
PALETTE = charts.PALETTE
CONSTRAINT_COLORS = charts.CONSTRAINT_COLORS
CONSTRAINT_TEXT = charts.CONSTRAINT_TEXT
DPI = cells.DPI
ChartSpec = charts.ChartSpec
CHARTS = charts.CHARTS
chart_png = charts.chart_png
CURRENCY = page.CURRENCY
COMPARISON_HEADINGS = page.COMPARISON_HEADINGS
CALIBRATION_HEADINGS = page.CALIBRATION_HEADINGS
CONFIGS_HEADINGS = page.CONFIGS_HEADINGS
format_value = page.format_value
source_rows = page.source_rows
render_html = page.render_html
table_id = page.table_id
HTML_NAME = files.HTML_NAME
DEFAULT_OUTPUT_DIR = files.DEFAULT_OUTPUT_DIR
Frames = files.Frames
frames = files.frames
Artifact = files.Artifact
STEPS = files.STEPS
SIMULATION_CHART = files.SIMULATION_CHART
build = files.build
output_dir_problem = files.output_dir_problem
write = files.write
