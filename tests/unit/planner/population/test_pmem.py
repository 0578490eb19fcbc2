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
"""DIMM population rules, checked against the published population rules.

Each error rule fires on a configuration crafted to break that rule alone;
warnings fire when the population leaves vendor guidance and not otherwise.
"""

import dataclasses
import re

import testscenarios
import testtools

from nova_pmem_filters.core.rules import kinds

from nova_pmem_filters.planner import population
from nova_pmem_filters.planner.population import common
from nova_pmem_filters.planner.population import pmem as pmem_rules
from nova_pmem_filters.planner import scenario

CATALOG = scenario.builtin_catalog()


def node_config(platform, cpu, mode, per_socket=None, sockets=None):
    """A NodeConfig from catalog names: {'ddr4-16': 6, ...} per socket."""
    plat = CATALOG.platforms[platform]
    if sockets is None:
        sockets = [per_socket] * plat.sockets
    return scenario.NodeConfig(
        name='test', platform=plat, cpu=CATALOG.cpus[cpu], mode=mode,
        sockets=tuple({CATALOG.dimms[name]: n for name, n in s.items() if n}
                      for s in sockets))


def cascade(mode, cpu='xeon-gold-6230n', **per_socket):
    names = {k.replace('_', '-'): v for k, v in per_socket.items()}
    return node_config('cascade-lake-2s', cpu, mode, names)


def ice(mode, **per_socket):
    names = {k.replace('_', '-'): v for k, v in per_socket.items()}
    return node_config('ice-lake-2s', 'xeon-gold-6330', mode, names)


def codes(findings):
    # Per-socket rules report once per socket.
    return sorted({f.code for f in findings})


class PopulationTestCase(testtools.TestCase):

    def assertFindings(self, config, errors=(), warnings=()):
        findings = population.check(config)
        self.assertEqual(sorted(errors), codes(common.errors(findings)))
        self.assertEqual(sorted(warnings),
                         codes(common.warnings(findings)))
        for finding in findings:
            self.assertEqual([str(finding)], str(finding).splitlines())
            self.assertTrue(finding.source)
        return findings


class FieldNotesNodeTestCase(PopulationTestCase):
    """The telco case's cost-matched pair."""

    def test_memory_mode_node(self):
        # 6 x 16 GB DDR4 + 2 x 128 GB PMem per socket, Memory Mode.
        config = cascade(kinds.MEMORY_MODE, ddr4_16=6, pmem100_128=2)
        findings = self.assertFindings(config, warnings=['mm-ratio'])
        self.assertEqual(1, len(findings))
        warning = findings[0]
        self.assertEqual(common.WARNING, warning.severity)
        self.assertIn('DRAM:PMem is 1:2.7 per socket', warning.message)
        self.assertIn('outside the 1:4 to 1:16', warning.message)
        self.assertEqual((192, 512), (config.dram_gb, config.pmem_gb))

    def test_dram_node(self):
        # 24 x 16 GB DDR4-2666 behind two Gold 6148.
        config = node_config('purley-2s', 'xeon-gold-6148', kinds.DRAM,
                             {'ddr4-16': 12})
        self.assertEqual([], self.assertFindings(config))
        self.assertEqual(384, config.dram_gb)

    def test_the_6148_cannot_drive_pmem(self):
        # The 6148 is 1st generation: it cannot drive PMem.
        config = node_config('cascade-lake-2s', 'xeon-gold-6148',
                             kinds.MEMORY_MODE,
                             {'ddr4-16': 6, 'pmem100-128': 2})
        findings = self.assertFindings(
            config, errors=['pmem-unsupported-cpu'], warnings=['mm-ratio'])
        self.assertEqual('pmem-unsupported-cpu', findings[0].code)
        self.assertIn('1st-gen parts such as the Gold 6148',
                      findings[0].source)
        self.assertIn('https://www.intel.com/', findings[0].source)


class ErrorRuleTestCase(PopulationTestCase):

    def test_pmem_on_first_generation_platform(self):
        config = node_config('purley-2s', 'xeon-gold-6148',
                             kinds.APP_DIRECT,
                             {'ddr4-16': 6, 'pmem100-128': 2})
        self.assertFindings(config, errors=['pmem-unsupported-cpu',
                                            'pmem-unsupported-platform'])

    def test_pmem_200_on_cascade_lake(self):
        self.assertFindings(
            cascade(kinds.APP_DIRECT, ddr4_16=6, pmem200_128=2),
            errors=['pmem-unsupported-cpu', 'pmem-unsupported-platform'],
            # 2 + 6 is an OEM mix of PMem 100, not of PMem 200.
            warnings=['not-oem-mix'])

    def test_more_modules_than_slots(self):
        # 6 channels x 2 slots per socket on Cascade Lake.
        self.assertFindings(cascade(kinds.DRAM, ddr4_16=12))
        self.assertFindings(cascade(kinds.DRAM, ddr4_16=13),
                            errors=['too-many-modules'],
                            warnings=['unbalanced-channels'])

    def test_more_pmem_than_channels(self):
        findings = self.assertFindings(
            cascade(kinds.APP_DIRECT, ddr4_16=5, pmem100_128=7),
            errors=['pmem-per-channel'], warnings=['not-oem-mix'])
        self.assertIn('at most one per channel', findings[0].message)

    def test_pmem_without_dram(self):
        self.assertFindings(
            cascade(kinds.APP_DIRECT, ddr4_16=1, pmem100_128=2),
            errors=['pmem-without-dram'], warnings=['not-oem-mix'])
        self.assertFindings(
            cascade(kinds.APP_DIRECT, pmem100_128=2),
            errors=['pmem-without-dram'], warnings=['not-oem-mix'])

    def test_asymmetric_sockets(self):
        config = node_config('cascade-lake-2s', 'xeon-gold-6230n',
                             kinds.MEMORY_MODE,
                             sockets=[{'ddr4-16': 6, 'pmem100-128': 2},
                                      {'ddr4-32': 6, 'pmem100-128': 2}])
        self.assertFindings(config, errors=['asymmetric-sockets'],
                            warnings=['mm-ratio'])
        alike = node_config('cascade-lake-2s', 'xeon-gold-6230n',
                            kinds.MEMORY_MODE,
                            sockets=[{'ddr4-16': 6, 'pmem100-128': 2}] * 2)
        self.assertFindings(alike, warnings=['mm-ratio'])

    def test_over_cpu_memory_limit(self):
        # Gold 6230N: about 1 TB per socket, and PMem counts.
        findings = self.assertFindings(
            cascade(kinds.APP_DIRECT, ddr4_64=6, pmem100_128=6),
            errors=['memory-limit'])
        self.assertIn('1152 GB against the 1024 GB limit',
                      findings[0].message)
        self.assertFindings(
            cascade(kinds.APP_DIRECT, ddr4_32=6, pmem100_128=6))

    def test_memory_limit_counts_only_pmem_in_memory_mode_on_200(self):
        # 8 x 128 GB DDR4 + 8 x 512 GB PMem 200 per socket is 5 TB; in
        # Memory Mode only the 4 TB of PMem counts toward the limit.
        config = ice(kinds.MEMORY_MODE, ddr4_128=8, pmem200_512=8)
        cpu = dataclasses.replace(config.cpu, memory_limit_gb=4608)
        self.assertFindings(dataclasses.replace(config, cpu=cpu))
        self.assertFindings(
            dataclasses.replace(config, cpu=cpu, mode=kinds.APP_DIRECT),
            errors=['memory-limit'])

    def test_memory_limit_counts_dram_in_memory_mode_on_100(self):
        config = cascade(kinds.MEMORY_MODE, cpu='xeon-gold-6238l',
                         ddr4_64=6, pmem100_512=6)
        self.assertFindings(config)
        cpu = dataclasses.replace(config.cpu, memory_limit_gb=3072)
        self.assertFindings(dataclasses.replace(config, cpu=cpu),
                            errors=['memory-limit'])

    def test_mixed_pmem_sizes(self):
        self.assertFindings(
            cascade(kinds.APP_DIRECT, cpu='xeon-gold-6238l', ddr4_16=6,
                    pmem100_128=1, pmem100_256=1),
            errors=['mixed-pmem-sizes'])

    def test_pmem_module_too_large_for_base_cpu(self):
        # Base parts take 128 GB PMem only; the L part takes 256 GB.
        self.assertFindings(
            cascade(kinds.APP_DIRECT, ddr4_16=6, pmem100_256=2),
            errors=['pmem-module-too-large'])
        self.assertFindings(
            cascade(kinds.APP_DIRECT, cpu='xeon-gold-6238l', ddr4_16=6,
                    pmem100_256=2))

    def test_pmem_mode_without_pmem(self):
        for mode in (kinds.MEMORY_MODE, kinds.APP_DIRECT):
            self.assertFindings(cascade(mode, ddr4_16=6),
                                errors=['mode-without-pmem'])

    def test_memory_mode_without_dram(self):
        self.assertFindings(
            cascade(kinds.MEMORY_MODE, pmem100_128=2),
            errors=['mode-without-dram', 'pmem-without-dram'],
            warnings=['not-oem-mix'])

    def test_memory_mode_needs_pmem_on_every_controller(self):
        # Cascade Lake has two memory controllers per socket.
        findings = self.assertFindings(
            cascade(kinds.MEMORY_MODE, ddr4_16=6, pmem100_128=1),
            errors=['mm-controller'], warnings=['mm-ratio', 'not-oem-mix'])
        self.assertIn('1 PMem modules for 2 memory controllers',
                      findings[0].message)
        # Ice Lake has four; 8 DRAM + 1 PMem is an App-Direct-only mix.
        self.assertFindings(ice(kinds.MEMORY_MODE, ddr4_16=8,
                                pmem200_128=1),
                            errors=['mm-controller'], warnings=['mm-ratio'])
        self.assertFindings(ice(kinds.APP_DIRECT, ddr4_16=8,
                                pmem200_128=1))

    def test_errors_come_first(self):
        findings = population.check(
            cascade(kinds.MEMORY_MODE, ddr4_16=6, pmem100_128=1))
        severities = [f.severity for f in findings]
        self.assertEqual(sorted(severities, key=lambda s: s != 'error'),
                         severities)


class WarningRuleTestCase(PopulationTestCase):

    def test_mm_ratio_inside_guidance(self):
        # 1:8 (recommended), and both ends of 1:4 to 1:16.
        self.assertFindings(ice(kinds.MEMORY_MODE, ddr4_16=8,
                                pmem200_128=8))
        self.assertFindings(cascade(kinds.MEMORY_MODE,
                                    cpu='xeon-gold-6238l', ddr4_32=4,
                                    pmem100_256=2))
        self.assertFindings(cascade(kinds.MEMORY_MODE,
                                    cpu='xeon-gold-6238l', ddr4_16=4,
                                    pmem100_512=2))

    def test_mm_ratio_outside_guidance(self):
        # 1:2 (too much DRAM) and 1:32 (too little).
        findings = self.assertFindings(
            cascade(kinds.MEMORY_MODE, ddr4_32=4, pmem100_128=2),
            warnings=['mm-ratio'])
        self.assertIn('1:2.0', findings[0].message)
        findings = self.assertFindings(
            ice(kinds.MEMORY_MODE, ddr4_16=4, pmem200_512=4),
            warnings=['mm-ratio'])
        self.assertIn('1:32.0', findings[0].message)

    def test_mm_ratio_only_in_memory_mode(self):
        self.assertFindings(cascade(kinds.APP_DIRECT, ddr4_16=6,
                                    pmem100_128=2))

    def test_oem_mixes_pmem_100(self):
        # OEM mixes: 2 PMem + 4 DRAM, 2+6, 4+6, 6+6 per socket.
        for pmem, dram in ((2, 4), (2, 6), (4, 6), (6, 6)):
            self.assertFindings(cascade(kinds.APP_DIRECT, ddr4_16=dram,
                                        pmem100_128=pmem))
        for pmem, dram in ((4, 4), (2, 8), (1, 6), (3, 3), (4, 8)):
            findings = self.assertFindings(
                cascade(kinds.APP_DIRECT, ddr4_16=dram, pmem100_128=pmem),
                warnings=['not-oem-mix'])
            self.assertIn('%d PMem + %d DRAM per socket' % (pmem, dram),
                          findings[0].message)

    def test_oem_mixes_pmem_200(self):
        # OEM mixes: DRAM + PMem 4+4, 8+4, 8+8 and 8+1.
        for dram, pmem in ((4, 4), (8, 4), (8, 8), (8, 1)):
            self.assertFindings(ice(kinds.APP_DIRECT, ddr4_16=dram,
                                    pmem200_128=pmem))
        for dram, pmem in ((2, 2), (6, 2), (8, 2), (8, 6)):
            self.assertFindings(ice(kinds.APP_DIRECT, ddr4_16=dram,
                                    pmem200_128=pmem),
                                warnings=['not-oem-mix'])

    def test_no_oem_warning_without_pmem(self):
        self.assertFindings(cascade(kinds.DRAM, ddr4_16=6))
        self.assertFindings(ice(kinds.DRAM, ddr4_32=8))

    def test_pmem_unused_in_dram_mode(self):
        self.assertFindings(cascade(kinds.DRAM, ddr4_16=6, pmem100_128=2),
                            warnings=['pmem-unused'])

    def test_unbalanced_channels(self):
        self.assertFindings(cascade(kinds.DRAM, ddr4_16=8),
                            warnings=['unbalanced-channels'])
        self.assertFindings(ice(kinds.DRAM, ddr4_16=16))


def named(config, name='cfg-under-test'):
    return dataclasses.replace(config, name=name)


def with_cpu(config, **changes):
    return dataclasses.replace(config, cpu=dataclasses.replace(config.cpu,
                                                               **changes))


def asym(platform, cpu, mode, first, second):
    return node_config(platform, cpu, mode, sockets=[first, second])


# (case, config, code, parts the message names, what the source says, what
# it must not say). One row per rule, and one per case where the source
# that applies differs.
MESSAGE_CASES = [
    ('PMem 100 on an Ice Lake CPU',
     lambda: node_config('ice-lake-2s', 'xeon-gold-6330', kinds.APP_DIRECT,
                         {'ddr4-16': 8, 'pmem100-128': 4}),
     'pmem-unsupported-cpu',
     ['xeon-gold-6330', '3rd-gen', 'PMem 100', 'pmem100-128',
      'drives PMem 200'],
     ['lenovopress.lenovo.com', 'PMem 200 on 3rd-gen'], ['1st-gen']),
    ('PMem 200 on a Cascade Lake CPU',
     lambda: cascade(kinds.APP_DIRECT, ddr4_16=6, pmem200_128=2),
     'pmem-unsupported-cpu',
     ['xeon-gold-6230n', '2nd-gen', 'PMem 200', 'pmem200-128',
      'drives PMem 100'],
     ['PMem 100 runs on 2nd-gen'], ['1st-gen']),
    ('PMem on the 1st-gen Gold 6148',
     lambda: node_config('cascade-lake-2s', 'xeon-gold-6148',
                         kinds.MEMORY_MODE,
                         {'ddr4-16': 6, 'pmem100-128': 2}),
     'pmem-unsupported-cpu', ['xeon-gold-6148', '1st-gen', 'pmem100-128'],
     ['gartner-perf-article', '1st-gen'], ['lenovopress']),
    ('PMem on a catalog CPU of no known generation without PMem',
     lambda: with_cpu(cascade(kinds.APP_DIRECT, ddr4_16=6, pmem100_128=2),
                      name='acme-1', generation='', pmem_generations=(),
                      source='the vendor datasheet'),
     'pmem-unsupported-cpu', ['acme-1', 'pmem100-128'],
     ['CPU catalog (acme-1', 'the vendor datasheet'],
     ['https://', '1st-gen']),
    ('PMem 100 on an Ice Lake platform',
     lambda: node_config('ice-lake-2s', 'xeon-gold-6330', kinds.APP_DIRECT,
                         {'ddr4-16': 8, 'pmem100-128': 4}),
     'pmem-unsupported-platform', ['ice-lake-2s', 'PMem 100', 'pmem100-128',
                                   'takes PMem 200'],
     ['PMem 200 on 3rd-gen'], ['1st-gen']),
    ('PMem on a platform without PMem',
     lambda: node_config('purley-2s', 'xeon-gold-6148', kinds.APP_DIRECT,
                         {'ddr4-16': 6, 'pmem100-128': 2}),
     'pmem-unsupported-platform', ['purley-2s', 'pmem100-128'],
     ['platform catalog (purley-2s'], ['lenovopress']),
    ('sockets differ, PMem 100',
     lambda: asym('cascade-lake-2s', 'xeon-gold-6230n', kinds.MEMORY_MODE,
                  {'ddr4-16': 6, 'pmem100-128': 2},
                  {'ddr4-32': 6, 'pmem100-128': 2}),
     'asymmetric-sockets',
     ['socket 1', '6 x ddr4-32 + 2 x pmem100-128', 'socket 0',
      '6 x ddr4-16 + 2 x pmem100-128'],
     ['assumption', 'applied to PMem 100'], []),
    ('sockets differ, PMem 200',
     lambda: asym('ice-lake-2s', 'xeon-gold-6330', kinds.APP_DIRECT,
                  {'ddr4-16': 8, 'pmem200-128': 4},
                  {'ddr4-16': 8, 'pmem200-128': 8}),
     'asymmetric-sockets', ['8 x ddr4-16 + 8 x pmem200-128',
                            '8 x ddr4-16 + 4 x pmem200-128'],
     ['assumption', 'every socket populated alike', 'applied to PMem 200'],
     []),
    ('sockets differ, DRAM only',
     lambda: asym('purley-2s', 'xeon-gold-6148', kinds.DRAM,
                  {'ddr4-16': 6}, {'ddr4-16': 4}),
     'asymmetric-sockets', ['4 x ddr4-16', '6 x ddr4-16'],
     ['assumption', 'NUMA'], ['PMem']),
    ('PMem 100 of two sizes',
     lambda: cascade(kinds.APP_DIRECT, cpu='xeon-gold-6238l', ddr4_16=6,
                     pmem100_128=1, pmem100_256=1),
     'mixed-pmem-sizes', ['pmem100-128', 'pmem100-256'],
     ['assumption', 'applied to PMem 100'], []),
    ('PMem 200 of two sizes',
     lambda: ice(kinds.APP_DIRECT, ddr4_16=8, pmem200_128=2,
                 pmem200_256=2),
     'mixed-pmem-sizes', ['pmem200-128', 'pmem200-256'],
     ['assumption', 'one module size', 'lp1380'], []),
    ('PMem 100 module too large for a base CPU',
     lambda: cascade(kinds.APP_DIRECT, ddr4_16=6, pmem100_256=2),
     'pmem-module-too-large', ['xeon-gold-6230n', '128 GB', 'pmem100-256'],
     ['base parts 128 GB only', 'pubs.lenovo.com'], []),
    ('PMem 200 module over a catalog CPU limit',
     lambda: with_cpu(ice(kinds.APP_DIRECT, ddr4_16=8, pmem200_512=4),
                      pmem_max_module_gb=256),
     'pmem-module-too-large', ['xeon-gold-6330', '256 GB', 'pmem200-512'],
     ['CPU catalog (xeon-gold-6330: pmem_max_module_gb 256'],
     ['base CPUs']),
    ('more modules than slots',
     lambda: cascade(kinds.DRAM, ddr4_16=13),
     'too-many-modules', ['socket 0', '13 x ddr4-16', '12 slots',
                          'cascade-lake-2s'],
     ['platform catalog (cascade-lake-2s: 6 channels x 2 slots'], []),
    ('more PMem than channels',
     lambda: cascade(kinds.APP_DIRECT, ddr4_16=5, pmem100_128=7),
     'pmem-per-channel', ['socket 0', '7 x pmem100-128', 'cascade-lake-2s'],
     ['at most one PMem module per channel', 'pubs.lenovo.com'], []),
    ('more PMem than DRAM',
     lambda: cascade(kinds.APP_DIRECT, ddr4_16=1, pmem100_128=2),
     'pmem-without-dram', ['socket 0', '2 x pmem100-128', '1 x ddr4-16'],
     ['pubs.lenovo.com', 'DRAM module on its channel'], []),
    ('PMem and no DRAM',
     lambda: cascade(kinds.APP_DIRECT, pmem100_128=2),
     'pmem-without-dram', ['2 x pmem100-128', 'no DRAM'],
     ['pubs.lenovo.com'], []),
    ('Memory Mode, a PMem 100 controller without PMem',
     lambda: cascade(kinds.MEMORY_MODE, ddr4_16=6, pmem100_128=1),
     'mm-controller', ['socket 0', '2 memory controllers', 'cascade-lake-2s',
                       '6 x ddr4-16 + 1 x pmem100-128'],
     ['Fujitsu', 'per memory controller'], ['assumption']),
    ('Memory Mode, PMem 200 controllers without PMem',
     lambda: ice(kinds.MEMORY_MODE, ddr4_16=8, pmem200_128=1),
     'mm-controller', ['4 memory controllers', 'ice-lake-2s',
                       '8 x ddr4-16 + 1 x pmem200-128'],
     ['assumption', '8 DRAM + 1 PMem', 'App Direct only'], []),
    ('over the limit with PMem 100',
     lambda: cascade(kinds.APP_DIRECT, ddr4_64=6, pmem100_128=6),
     'memory-limit', ['socket 0', 'xeon-gold-6230n',
                      '6 x ddr4-64 + 6 x pmem100-128'],
     ['assumption', 'counts PMem as well as DRAM'], ['only the PMem']),
    ('over the limit with PMem 200 in Memory Mode',
     lambda: with_cpu(ice(kinds.MEMORY_MODE, ddr4_128=8, pmem200_512=8),
                      memory_limit_gb=3072),
     'memory-limit', ['xeon-gold-6330', 'the PMem only: 8 x pmem200-512'],
     ['assumption: PMem 200 in Memory Mode: only the PMem'],
     ['ddr4-128']),
    ('over the limit with DRAM only',
     lambda: with_cpu(cascade(kinds.DRAM, ddr4_128=12),
                      memory_limit_gb=1024),
     'memory-limit', ['xeon-gold-6230n', '12 x ddr4-128'],
     ['CPU catalog (xeon-gold-6230n: memory_limit_gb 1024'],
     ['counts PMem', 'only the PMem']),
    ('a PMem mode without PMem',
     lambda: named(cascade(kinds.APP_DIRECT, ddr4_16=6)),
     'mode-without-pmem', ['app_direct', 'cfg-under-test', '6 x ddr4-16'],
     ['App Direct exposes PMem'], []),
    ('Memory Mode without DRAM',
     lambda: named(cascade(kinds.MEMORY_MODE, pmem100_128=2)),
     'mode-without-dram', ['cfg-under-test', '2 x pmem100-128'],
     ['DRAM is a cache in front of PMem'], []),
    ('PMem unused in dram mode',
     lambda: named(cascade(kinds.DRAM, ddr4_16=6, pmem100_128=2)),
     'pmem-unused', ['cfg-under-test', '2 x pmem100-128'],
     ['intel.com'], []),
    ('Memory-Mode ratio outside guidance',
     lambda: cascade(kinds.MEMORY_MODE, ddr4_16=6, pmem100_128=2),
     'mm-ratio', ['1:2.7', '96 GB of 6 x ddr4-16',
                  '256 GB of 2 x pmem100-128'],
     ['1 GB of DRAM for every 8 GB of PMem', 'assumption: 1:4 to 1:16'],
     []),
    ('not an OEM mix of PMem 200',
     lambda: ice(kinds.APP_DIRECT, ddr4_16=6, pmem200_128=2),
     'not-oem-mix', ['2 PMem + 6 DRAM', 'PMem 200',
                     '6 x ddr4-16 + 2 x pmem200-128'],
     ['lp1380', 'PMem 200'], ['PMem 100']),
    ('uneven DRAM channels',
     lambda: cascade(kinds.DRAM, ddr4_16=8),
     'unbalanced-channels', ['8 x ddr4-16', '6 channels', 'cascade-lake-2s'],
     ['assumption'], []),
]


class MessageTestCase(testscenarios.WithScenarios, testtools.TestCase):
    """Each finding names the parts involved and cites what applies."""

    scenarios = [(case, {'make': make, 'code': code, 'parts': parts,
                         'says': says, 'never': never})
                 for case, make, code, parts, says, never in MESSAGE_CASES]

    def test_names_its_parts_and_cites_what_applies(self):
        found = [f for f in population.check(self.make())
                 if f.code == self.code]
        self.assertTrue(found, 'no %s finding' % self.code)
        finding = found[0]
        for part in self.parts:
            self.assertIn(part, finding.message)
        for text in self.says:
            self.assertIn(text, finding.source)
        for text in self.never:
            self.assertNotIn(text, finding.source)


class RuleCoverageTestCase(testtools.TestCase):

    def test_every_rule_has_a_case(self):
        with open(pmem_rules.__file__) as f:
            codes_in_code = set(re.findall(
                r"common\.(?:ERROR|WARNING),\s*'([a-z-]+)'", f.read()))
        self.assertEqual(codes_in_code, {c[2] for c in MESSAGE_CASES})
