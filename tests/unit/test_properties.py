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
"""Property tests: arbitrary metadata and extra specs never break a request.

The default profile is derandomized and small so the unit suite is
deterministic and fast; ``HYPOTHESIS_PROFILE=thorough`` explores more.
"""

import math
import types
import uuid

import hypothesis
from hypothesis import strategies as st

from nova.api.validation.extra_specs import base
from nova.api.validation.extra_specs import validators
from nova import exception
from nova.scheduler import weights
from nova.tests.unit.scheduler import fakes as nova_fakes

from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import kinds
from nova_pmem_filters.core.rules import profile
from nova_pmem_filters import filters
from nova_pmem_filters.scheduler import ledger
from nova_pmem_filters.scheduler import logonce
from nova_pmem_filters import weighers
from tests.unit import fakes
from tests.unit import hypo

SETTINGS = hypo.settings(200)

# Nova refuses extra-spec values longer than this.
MAX_VALUE_LEN = 255

# Whitespace Python's str.strip() and the regex \s know, plus look-alikes
# that are not whitespace at all.
_SPACES = [' ', '\t', '\n', '\r', '\x0b', '\x0c', '\x1c', '\x85', '\xa0',
           '\u2003', '\u2028', '\u3000', '\u200b', '\ufeff', '']

# Numbers as operators or fuzzers write them, good and bad.
_NUMBER_WORDS = ['0', '-0', '0.0', '1', '192', ' 192 ', '192.5', '1e3',
                 '1e308', '1.7976931348623157e308', '1e400', '-1e400',
                 '5e-324', '1e-400', 'nan', 'NaN', '-nan', 'inf', '-inf',
                 'Infinity', '1_000', '0x10', '192GB', '1,5', '١٢',
                 '\uff11\uff19\uff12', '']

garbage_text = st.one_of(
    st.text(max_size=20),
    st.text(alphabet=st.characters(), max_size=8),
    st.sampled_from(_NUMBER_WORDS),
    st.floats().map(repr),
    st.integers(min_value=-10 ** 400, max_value=10 ** 400).map(str),
)

non_str_values = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(),
    st.binary(max_size=4), st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=1),
)

mode_values = st.one_of(
    st.sampled_from(kinds.MODES + (' dram ', 'DRAM', 'memory-mode',
                                   'dram,memory_mode', '')),
    garbage_text, non_str_values)

metadata = st.dictionaries(
    keys=st.one_of(
        st.sampled_from([profile.MODE_KEY, profile.DRAM_CACHE_KEY,
                         profile.TIER_WEIGHT_MULTIPLIER_KEY,
                         'availability_zone']),
        st.text(max_size=8)),
    values=st.one_of(mode_values, garbage_text, non_str_values),
    max_size=4)

# The metadata of one host's aggregates, weighted towards the pmem keys.
aggregate_metadata = st.lists(
    st.one_of(
        metadata,
        st.fixed_dictionaries(
            {profile.MODE_KEY: mode_values},
            optional={profile.DRAM_CACHE_KEY: st.one_of(
                garbage_text, non_str_values)}),
        # Memory Mode with every kind of cache size, sane and not.
        st.fixed_dictionaries(
            {profile.MODE_KEY: st.just(kinds.MEMORY_MODE),
             profile.DRAM_CACHE_KEY: st.one_of(
                 st.sampled_from(_NUMBER_WORDS),
                 st.floats(min_value=0.0, max_value=4.0).map(repr))}),
        st.none()),
    max_size=3)


def _join(parts):
    return ''.join(parts)


# Near misses of the grammar of each key, built from its pieces.
hot_ratio_near_misses = st.one_of(
    st.sampled_from(['0.5', '1.0', '.5', '1.', '01', '0', '1.01', '0.0',
                     '.', '0.', '.0', '00', '001', '1.00001', '0.99999',
                     '+0.5', '-0.5', '5e-1', '0.5e0', '1e0', '0,5', '½',
                     '0.5 ', ' 0.5', '0.5\n', '١', '0.٥', '0' * 254 + '1',
                     '0.' + '0' * 252 + '1']),
    st.builds(
        _join,
        st.lists(st.sampled_from(['', '+', '-', ' ', '0', '00', '1', '2',
                                  '9', '.', '..', '5', '25', '000', '0001',
                                  'e', 'e-1', 'E1', '\n', ',', '_']),
                 max_size=6)),
)

_MODE_TOKENS = list(kinds.MODES) + ['DRAM', 'dram_', 'memory', 'mode',
                                    'app-direct', 'optane', '']
modes_near_misses = st.one_of(
    st.sampled_from([' dram , memory_mode', 'dram,', ',dram', 'dram,,dram',
                     'dram;memory_mode', 'dram memory_mode', 'Dram',
                     'dram\n', '\ndram', 'dram,\u200bapp_direct',
                     'dram\ufeff', '\x1cdram\x1c,\x85memory_mode']),
    st.builds(
        _join,
        st.lists(st.one_of(st.sampled_from(_MODE_TOKENS),
                           st.sampled_from(_SPACES),
                           st.sampled_from([',', ', ', ' ,', ';', ',,'])),
                 max_size=8)),
)

priority_near_misses = st.builds(
    _join, st.lists(st.one_of(
        st.sampled_from(extra_specs.PRIORITIES + ('HIGH', 'Low', 'norm')),
        st.sampled_from(_SPACES)), max_size=3))

spec_values = st.one_of(st.text(max_size=MAX_VALUE_LEN),
                        hot_ratio_near_misses, modes_near_misses,
                        priority_near_misses)

# Extra specs as Nova stores them: strings to strings. Half are valid, so
# that the filters and weighers get past parsing.
flavor_extra_specs = st.one_of(
    st.fixed_dictionaries({}, optional={
        extra_specs.MODES_KEY: st.sampled_from(
            ['dram', 'memory_mode', 'app_direct', 'dram,app_direct',
             ' memory_mode , dram ', 'dram,memory_mode,app_direct']),
        extra_specs.PRIORITY_KEY: st.sampled_from(extra_specs.PRIORITIES),
        extra_specs.HOT_RATIO_KEY: st.sampled_from(
            ['1', '0.5', '.25', '0.001', '1.0', '0.' + '0' * 252 + '1']),
        extra_specs.VPMEM_KEY: st.sampled_from(['SMALL', 'SMALL,LARGE', '']),
        'hw:cpu_policy': st.just('dedicated'),
    }),
    st.dictionaries(
        keys=st.one_of(
            st.sampled_from([extra_specs.MODES_KEY, extra_specs.PRIORITY_KEY,
                             extra_specs.HOT_RATIO_KEY, extra_specs.VPMEM_KEY,
                             'pmem:hotratio', 'pmem:', 'hw:cpu_policy']),
            st.text(max_size=10)),
        values=st.one_of(
            st.sampled_from(['dram', 'memory_mode', 'app_direct',
                             'dram,app_direct', 'high', 'low', 'normal',
                             '0.5', '1', 'SMALL', 'SMALL,LARGE']),
            spec_values),
        max_size=4),
)

hosts_strategy = st.lists(
    st.tuples(aggregate_metadata,
              st.lists(st.tuples(flavor_extra_specs,
                                 st.integers(min_value=0, max_value=10 ** 6),
                                 st.booleans()),
                       max_size=2)),
    min_size=1, max_size=4)


class RobustnessTestCase(fakes.PmemTestCase):
    """No metadata or extra spec makes a filter or a weigher blow up."""

    def _build(self, host_specs):
        """HostStates from (metadata list, [(specs, memory_mb, loaded)])."""
        hosts = []
        n = 0
        for i, (md_list, inst_specs) in enumerate(host_specs):
            instances = []
            for specs, memory_mb, loaded in inst_specs:
                n += 1
                instances.append(self.instance(
                    str(uuid.UUID(int=n)), memory_mb, specs, loaded=loaded))
            aggregates = [types.SimpleNamespace(metadata=md)
                          for md in md_list]
            hosts.append(nova_fakes.FakeHostState(
                'host%d' % i, 'node%d' % i, {'aggregates': aggregates},
                instances=instances))
        return hosts

    def _fresh(self):
        # One example must not see the ledger, database or warnings of
        # another: each example is a fresh scheduler process.
        ledger.LEDGER = ledger.HotRamLedger(clock=lambda: self.now)
        logonce._WARNED.clear()
        self.db.clear()
        return len(self.log.output)

    def _assert_no_unexpected_error(self, log_start):
        self.assertNotIn('unexpected error', self.log.output[log_start:])

    def _passing(self, filt_cls, hosts, spec_obj):
        """Which hosts pass, checking the result is a subset in order."""
        passing = filt_cls.filter_all(hosts, spec_obj)
        self.assertIsInstance(passing, list)
        ids = [id(h) for h in hosts]
        positions = [ids.index(id(h)) for h in passing]
        self.assertEqual(sorted(set(positions)), positions)
        return [id(h) in set(map(id, passing)) for h in hosts]

    @SETTINGS
    @hypothesis.given(host_specs=hosts_strategy, specs=flavor_extra_specs,
                      rebuild=st.booleans())
    def test_mode_filter(self, host_specs, specs, rebuild):
        log_start = self._fresh()
        hosts = self._build(host_specs)
        spec_obj = fakes.request_spec(specs, rebuild=rebuild)
        passing = self._passing(filters.PmemModeFilter(), hosts, spec_obj)
        # The adapter decides as the shared core does.
        try:
            request = extra_specs.parse(specs)
        except extra_specs.InvalidExtraSpec:
            request = None
        expected = []
        for md_list, _insts in host_specs:
            if rebuild:
                expected.append(True)
            elif request is None or not request.modes:
                expected.append(False)
            elif not request.constrains_modes:
                expected.append(True)
            else:
                prof = profile.from_metadata(md_list)
                expected.append(prof.mode in request.modes)
        self.assertEqual(expected, passing)
        self._assert_no_unexpected_error(log_start)

    @SETTINGS
    @hypothesis.given(host_specs=hosts_strategy, specs=flavor_extra_specs,
                      memory_mb=st.integers(min_value=0, max_value=10 ** 7),
                      rebuild=st.booleans())
    def test_cache_filter(self, host_specs, specs, memory_mb, rebuild):
        log_start = self._fresh()
        hosts = self._build(host_specs)
        spec_obj = fakes.request_spec(specs, memory_mb, rebuild=rebuild)
        passing = self._passing(filters.PmemCacheFilter(), hosts, spec_obj)
        try:
            extra_specs.parse(specs)
            valid = True
        except extra_specs.InvalidExtraSpec:
            valid = False
        for (md_list, _insts), passed in zip(host_specs, passing):
            prof = profile.from_metadata(md_list)
            if rebuild:
                self.assertTrue(passed)
            elif not valid or not prof.known:
                self.assertFalse(passed)
            elif prof.mode != kinds.MEMORY_MODE:
                self.assertTrue(passed)
        self._assert_no_unexpected_error(log_start)

    @SETTINGS
    @hypothesis.given(host_specs=hosts_strategy, specs=flavor_extra_specs,
                      memory_mb=st.integers(min_value=0, max_value=10 ** 7))
    @hypothesis.example(
        # A cache so large that its size in MB overflows to infinity.
        host_specs=[([{profile.MODE_KEY: kinds.MEMORY_MODE,
                       profile.DRAM_CACHE_KEY: '1e308'}], []),
                    ([{profile.MODE_KEY: kinds.MEMORY_MODE,
                       profile.DRAM_CACHE_KEY: '5e-324'}], [])],
        specs={}, memory_mb=1)
    def test_weighers_never_raise(self, host_specs, specs, memory_mb):
        log_start = self._fresh()
        hosts = self._build(host_specs)
        spec_obj = fakes.request_spec(specs, memory_mb)
        weighed = [weights.WeighedHost(h, 0.0) for h in hosts]
        for weigher in (weighers.PmemTierWeigher(),
                        weighers.PmemCacheHeadroomWeigher()):
            scores = weigher.weigh_objects(weighed, spec_obj)
            self.assertEqual(len(hosts), len(scores))
            for score in scores:
                self.assertTrue(math.isfinite(score), scores)
                self.assertTrue(weigher.minval <= score <= weigher.maxval,
                                scores)
        self._assert_no_unexpected_error(log_start)


def _nova_accepts(key, value):
    try:
        validators.validate(key, value)
    except exception.ValidationError:
        return False
    return True


def _documented_rule_accepts(key, value):
    # Nova's own check of the ``value`` dictionary our validators document.
    try:
        base.ExtraSpecValidator.validate(validators.VALIDATORS[key], key,
                                         value)
    except exception.ValidationError:
        return False
    return True


def _parse(key, value):
    try:
        return extra_specs.parse({key: value})
    except extra_specs.InvalidExtraSpec:
        return None


class ValidatorAgreementTestCase(fakes.PmemTestCase):
    """nova-api accepts exactly what the scheduler understands."""

    def _check(self, key, value):
        request = _parse(key, value)
        self.assertEqual(request is not None, _nova_accepts(key, value),
                         (key, value))
        self.assertEqual(request is not None,
                         _documented_rule_accepts(key, value), (key, value))
        return request

    @SETTINGS
    @hypothesis.given(value=st.one_of(st.text(max_size=MAX_VALUE_LEN),
                                      modes_near_misses))
    def test_modes(self, value):
        request = self._check(extra_specs.MODES_KEY, value)
        if request is not None:
            self.assertTrue(request.modes)
            self.assertTrue(request.modes <= frozenset(kinds.MODES),
                            request.modes)

    @SETTINGS
    @hypothesis.given(value=st.one_of(st.text(max_size=MAX_VALUE_LEN),
                                      priority_near_misses))
    def test_priority(self, value):
        request = self._check(extra_specs.PRIORITY_KEY, value)
        if request is not None:
            self.assertIn(request.priority, extra_specs.PRIORITIES)

    @SETTINGS
    @hypothesis.given(value=st.one_of(st.text(max_size=MAX_VALUE_LEN),
                                      hot_ratio_near_misses))
    def test_hot_ratio(self, value):
        request = self._check(extra_specs.HOT_RATIO_KEY, value)
        if request is not None:
            self.assertTrue(0.0 < request.hot_ratio <= 1.0, value)

    # Nova looks an unknown key up by trying each of its 529 validators'
    # name patterns, more than the re module caches: about 0.2 s a key.
    @hypothesis.settings(SETTINGS, max_examples=30)
    @hypothesis.given(
        suffix=st.one_of(
            st.sampled_from(['mode', 'Modes', 'modes ', 'hotratio',
                             'hot_ratio.', 'priority:x', 'hw:pmem', '']),
            # What Nova's API allows in an extra-spec key.
            st.text(alphabet='abcdefghijklmnopqrstuvwxyzAZ019-_:. ',
                    max_size=20)),
        value=spec_values)
    def test_unknown_keys(self, suffix, value):
        key = 'pmem:' + suffix
        hypothesis.assume(key not in extra_specs.RULES)
        self.assertIsNone(_parse(key, value))
        exc = self.assertRaises(exception.ValidationError,
                                validators.validate, key, value)
        self.assertIn("extra spec '%s' has value" % key, str(exc))
        self.assertIn('one of the keys pmem:hot_ratio, pmem:modes, '
                      'pmem:priority', str(exc))
