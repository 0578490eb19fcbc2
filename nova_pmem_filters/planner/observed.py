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
"""Measured hot ratios: the planner's reading of ``nova-pmem-observe`` files.

The rules (which instances count, the distribution of a flavor, the value
to declare) are the core's (:mod:`nova_pmem_filters.core.formats.observation`);
this module turns them into the ``hot-ratios`` listing and into the hot ratio
of a scenario workload that says ``hot_ratio: observed``.
"""

import collections

from nova_pmem_filters.core.formats import observation

from nova_pmem_filters.core.plans import flavorfix
from nova_pmem_filters.core.plans import hotratio
from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.planner import errors

COLUMNS = ('flavor', 'instances', 'windows', 'p50', 'p95', 'max',
           'declared', 'workload', 'recommended', 'under_declared',
           'command', 'held_back')
# The default table: what the recommendation is made of (p95) and the
# command to run, whole, within 120 columns; the rest of the distribution
# and held_back under --long (a held-back row is also said on stderr).
SHORT_COLUMNS = ('flavor', 'instances', 'p95', 'declared', 'recommended',
                 'command')

# Digits of the distribution's figures in the listing.
_DIGITS = 4


def read(directory):
    """The observation documents of ``directory`` (``observation.load``).

    :raises nova_pmem_filters.planner.errors.PlannerError: naming the file and
    the key.
    """
    try:
        return observation.load(directory)
    except observation.ObservationError as exc:
        raise errors.PlannerError(str(exc)) from exc


def load(directory):
    """{flavor: FlavorRatios} of the observations in ``directory``.

    :raises nova_pmem_filters.planner.errors.PlannerError: naming the file and
    the key.
    """
    return hotratio.by_flavor(read(directory))


def _count(number, noun):
    return '%d %s%s' % (number, noun, '' if number == 1 else 's')


def nothing_to_recommend(docs, directory):
    """Two lines: what ``docs`` hold, and why no flavor has a ratio.

    For documents of which :func:`hotratio.by_flavor` finds no flavor:
    they list no instance, or none was measured (the most frequent gap
    says why), or those measured have no flavor.
    """
    hosts = {doc.hostname for doc in docs}
    ratio = {}
    gaps = collections.Counter()
    for doc in docs:
        for inst in doc.instances:
            measured = inst.hot_ratio is not None
            ratio[inst.uuid] = ratio.get(inst.uuid, False) or measured
            if not measured:
                gaps[inst.gap or 'none given'] += 1
    read_ = 'read %s from %s: ' % (_count(len(docs), 'document'),
                                   _count(len(hosts), 'host'))
    if not ratio:
        return ('%s: %sno instance' % (directory, read_),
                'nothing to recommend: the documents list no running '
                'instance')
    flavorless = sum(ratio.values())
    unmeasured = len(ratio) - flavorless
    why = []
    if flavorless:
        why.append('%d measured without one' % flavorless)
    if unmeasured:
        (gap, times), = gaps.most_common(1)
        why.append('%d not measured; %s: %s' % (
            unmeasured, 'gap' if len(gaps) == 1 else
            'most frequent gap (%d of %d)' % (times, sum(gaps.values())),
            gap))
    what = '%s: %s%s, none measured%s' % (
        directory, read_, _count(len(ratio), 'instance'),
        ' with a flavor' if flavorless else '')
    return (what, 'nothing to recommend: %s (%s)' % (
        'no measured instance has a flavor' if flavorless else
        'no instance has a measured working set', '; '.join(why)))


def describe(found, directory):
    """The hot_ratio_source of a workload planned with ``found``."""
    p95 = hotratio.quantile(found.ratios, hotratio.RECOMMEND_QUANTILE)
    return ('observed: p95 of %d instances in %d windows, %s (%.4g, rounded '
            'up to %g: %s)' % (found.instances, found.windows, directory,
                               p95, hotratio.RECOMMEND_STEP,
                               extra_specs.format_hot_ratio(
                                   found.recommended)))


def set_command(flavor, value, ram_mb=None, specs=None):
    """The ``openstack`` command that declares ``value`` for ``flavor``.

    With ``ram_mb`` (a flavor accounted in Placement) it also requests the
    hot MB of that ratio, so the two extra specs stay consistent: in the
    request group of ``specs`` (the flavor's extra specs) that asks for
    near memory, else as ``nova-config --placement-accounting`` writes it
    (``resources:CUSTOM_NEAR_MEMORY_MB``). The doctor's fix of
    ``hot-ratio-under-declared`` is the same command
    (:func:`nova_pmem_filters.core.plans.flavorfix.hot_ratio`).
    """
    return flavorfix.hot_ratio(flavor, specs, value, memory_mb=ram_mb,
                               accounted=ram_mb is not None).command()


def rows(ratios, scen=None, placement_accounting=False,
         min_instances=hotratio.MIN_INSTANCES):
    """One dict per observed flavor, with its declaration in ``scen``.

    A flavor is matched to the scenario workload whose ``flavor`` (default:
    the workload's name, as ``nova-config`` creates it) is its name. With
    ``placement_accounting`` the command of a matched flavor also sets its
    near-memory request (:func:`set_command`). A flavor observed in fewer
    than ``min_instances`` instances gets no recommendation, no command
    and ``held_back`` says why.
    """
    workloads = {}
    if scen is not None:
        for workload in scen.workloads.values():
            workloads.setdefault(workload.flavor_name, workload)
    result = []
    for flavor, found in sorted(ratios.items()):
        workload = workloads.get(flavor)
        declared = workload.hot_ratio if workload is not None else None
        held_back = found.held_back(min_instances)
        recommended = None if held_back else found.recommended
        result.append({
            'flavor': flavor, 'instances': found.instances,
            'windows': found.windows,
            'p50': round(hotratio.quantile(found.ratios, 0.5), _DIGITS),
            'p95': round(hotratio.quantile(
                found.ratios, hotratio.RECOMMEND_QUANTILE), _DIGITS),
            'max': round(max(found.ratios), _DIGITS),
            'declared': declared,
            'workload': workload.name if workload is not None else None,
            'recommended': recommended,
            'under_declared': (None if declared is None or held_back else
                               hotratio.under_declared(declared,
                                                       found.ratios)),
            'command': None if held_back else set_command(
                flavor, recommended,
                workload.ram_mb if placement_accounting and workload
                else None,
                workload.extra_specs if workload is not None else None),
            'held_back': held_back})
    return result
