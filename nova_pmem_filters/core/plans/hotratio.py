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
"""The pmem:hot_ratio a flavor should declare, from many observations."""

import dataclasses
import math


# The recommended pmem:hot_ratio covers this share of the observations ...
RECOMMEND_QUANTILE = 0.95


# ... rounded up to a multiple of this step ...
RECOMMEND_STEP = 0.05


# ... from at least this many distinct instances of the flavor: the 95th
# percentile of one or two instances is their maximum, a guess about the
# next one.
MIN_INSTANCES = 3


def measured(docs):
    """(document, instance) of every instance with a measured hot ratio."""
    for doc in docs:
        for inst in doc.instances:
            if inst.measured:
                yield doc, inst


@dataclasses.dataclass(frozen=True)
class FlavorRatios:
    """The observed hot ratios of one flavor."""

    flavor: str
    # One per measured instance and window, in the order read.
    ratios: tuple
    # Distinct instances (by uuid) measured at least once.
    instances: int
    # Documents (host and window) holding at least one measurement.
    windows: int

    @property
    def recommended(self):
        return recommend(self.ratios)

    def held_back(self, min_instances=MIN_INSTANCES):
        """Why no value is recommended from so few instances, or None."""
        if self.instances >= min_instances:
            return None
        return '%d instance%s, fewer than %d' % (
            self.instances, '' if self.instances == 1 else 's',
            min_instances)


def by_flavor(docs):
    """{flavor name: FlavorRatios} of every flavor with a measured instance.

    Each (document, instance) that :func:`measured` yields is one ratio: an
    instance observed in three windows counts three times, as its working
    set may change from one window to the next.
    """
    ratios = {}
    uuids = {}
    windows = {}
    for number, doc in enumerate(docs):
        for _doc, inst in measured([doc]):
            flavor = inst.flavor
            ratios.setdefault(flavor, []).append(float(inst.hot_ratio))
            uuids.setdefault(flavor, set()).add(inst.uuid)
            windows.setdefault(flavor, set()).add(number)
    return {flavor: FlavorRatios(flavor=flavor, ratios=tuple(values),
                                 instances=len(uuids[flavor]),
                                 windows=len(windows[flavor]))
            for flavor, values in sorted(ratios.items())}


def quantile(values, q):
    """The q-quantile of values, linear between order statistics."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError('no values')
    pos = q * (len(ordered) - 1)
    low = int(math.floor(pos))
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def recommend(ratios):
    """The pmem:hot_ratio to declare for a flavor observed at ``ratios``.

    The 95th percentile rounded up to the next 0.05, within (0, 1]: a
    flavor so declared counts at least the hot RAM of 19 in 20 of its
    observed instances.
    """
    top = quantile(ratios, RECOMMEND_QUANTILE)
    steps = math.ceil(top / RECOMMEND_STEP - 1e-9)
    return min(1.0, max(RECOMMEND_STEP, round(steps * RECOMMEND_STEP, 6)))


def under_declared(declared, ratios):
    """Whether a flavor declares less hot RAM than it was observed to use.

    True when the recommended value is above the declared one: more than
    one in twenty of its instances were hotter than it says.
    """
    return recommend(ratios) > declared + 1e-9
