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
"""The report's files: built from a scenario, written atomically."""

import dataclasses
import os

from nova_pmem_filters import fileutil
from nova_pmem_filters.planner.report import charts as charts_mod
from nova_pmem_filters.planner.report import page
from nova_pmem_filters.planner import tables


HTML_NAME = 'report.html'
DEFAULT_OUTPUT_DIR = 'pmem-report'


@dataclasses.dataclass(frozen=True)
class Frames:
    """The tables a report is made of."""

    comparison: object
    calibration: object
    configs: object


def frames(scen):
    return Frames(comparison=tables.comparison(scen),
                  calibration=tables.calibration(scen),
                  configs=tables.configs(scen))


@dataclasses.dataclass(frozen=True)
class Artifact:
    """One file of a report: its name in the output directory and bytes."""

    name: str
    kind: str
    data: bytes


# tables, one per chart, HTML, writing the files.
STEPS = len(charts_mod.CHARTS) + 3


SIMULATION_CHART = 'simulation.png'


def build(scen, png=True, progress=None, simulation=None):
    """Render the report of a scenario; nothing is written.

    :param png: also return the charts as PNG files (they are always
        embedded in the HTML).
    :param progress: called as ``progress(step, STEPS, label)`` before
        each step; the last step, writing, is the caller's.
    :param simulation: a :class:`nova_pmem_filters.planner.simulate.Run` to
    add, with a
        chart of it.
    :returns: a list of :class:`Artifact`, the HTML last.
    """
    step = iter(range(1, STEPS + 1))

    def tell(label):
        if progress is not None:
            progress(next(step), STEPS, label)

    tell('tables: comparison, calibration, configs')
    report_frames = frames(scen)
    charts = []
    for spec in charts_mod.CHARTS:
        tell('chart: %s' % spec.title)
        charts.append(
            (spec, charts_mod.chart_png(spec, report_frames.comparison,
                                        scen.baseline)))
    sim_png = None
    if simulation is not None:
        from nova_pmem_filters.planner import simulate
        sim_png = simulate.chart_png(simulation.result.timeline,
                                     'Simulated placement: %s' % scen.name)
    tell('html: %s' % HTML_NAME)
    text = page.render_html(scen, report_frames, charts, simulation=simulation,
                            simulation_png=sim_png)
    artifacts = [Artifact(spec.name, 'png', data)
                 for spec, data in charts] if png else []
    if png and sim_png is not None:
        artifacts.append(Artifact(SIMULATION_CHART, 'png', sim_png))
    artifacts.append(Artifact(HTML_NAME, 'html', text.encode('utf-8')))
    return artifacts


# ----------------------------------------------------------------- files


def output_dir_problem(path):
    """Why a report cannot be written under ``path``, or None.

    A quick check before rendering, which creates nothing; :func:`write`
    still reports what really fails.
    """
    probe = os.path.abspath(path)
    while not os.path.lexists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    if not os.path.isdir(probe):
        return '%s is not a directory' % probe
    if not os.access(probe, os.W_OK | os.X_OK):
        return 'permission denied on %s' % probe
    return None


def write(artifacts, output_dir):
    """Write artifacts into ``output_dir``, each file atomically.

    All files are written and synced to temporary files first; only then
    are they renamed over the old ones, the HTML last. On any failure the
    temporary files are removed and the old report stays as it was.

    :returns: [(path, kind, bytes)] of the files written.
    :raises OSError: when the directory or a file cannot be written.
    """
    os.makedirs(output_dir, exist_ok=True)
    ordered = sorted(artifacts, key=lambda a: a.kind == 'html')
    temps = []
    try:
        for artifact in ordered:
            temps.append(fileutil.stage(output_dir, artifact.name,
                                        artifact.data))
        written = []
        for artifact, tmp in zip(ordered, temps):
            path = os.path.join(output_dir, artifact.name)
            os.replace(tmp, path)
            written.append((path, artifact.kind, len(artifact.data)))
    except BaseException:
        fileutil.discard(temps)
        raise
    fileutil.fsync_dir(output_dir)
    return written
