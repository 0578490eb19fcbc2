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
"""DIMM population rules, checked against the field notes (sections 1, 7).

Each error rule fires on a configuration crafted to break that rule alone;
warnings fire when the population leaves vendor guidance and not otherwise.
"""

import dataclasses

import testtools

from nova_pmem_filters import profile
from planner import population
from planner import scenario

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
        self.assertEqual(sorted(errors), codes(population.errors(findings)))
        self.assertEqual(sorted(warnings),
                         codes(population.warnings(findings)))
        for finding in findings:
            self.assertEqual([str(finding)], str(finding).splitlines())
            self.assertTrue(finding.source)
        return findings


class FieldNotesNodeTestCase(PopulationTestCase):
    """Field notes 1: the cost-matched pair."""

    def test_memory_mode_node(self):
        # 6 x 16 GB DDR4 + 2 x 128 GB PMem per socket, Memory Mode.
        config = cascade(profile.MEMORY_MODE, ddr4_16=6, pmem100_128=2)
        findings = self.assertFindings(config, warnings=['mm-ratio'])
        self.assertEqual(1, len(findings))
        warning = findings[0]
        self.assertEqual(population.WARNING, warning.severity)
        self.assertIn('DRAM:PMem is 1:2.7 per socket', warning.message)
        self.assertIn('outside the 1:4 to 1:16', warning.message)
        self.assertEqual((192, 512), (config.dram_gb, config.pmem_gb))

    def test_dram_node(self):
        # 24 x 16 GB DDR4-2666 behind two Gold 6148.
        config = node_config('purley-2s', 'xeon-gold-6148', profile.DRAM,
                             {'ddr4-16': 12})
        self.assertEqual([], self.assertFindings(config))
        self.assertEqual(384, config.dram_gb)

    def test_the_6148_cannot_drive_pmem(self):
        # The field notes' own caveat: the 6148 is 1st generation.
        config = node_config('cascade-lake-2s', 'xeon-gold-6148',
                             profile.MEMORY_MODE,
                             {'ddr4-16': 6, 'pmem100-128': 2})
        findings = self.assertFindings(
            config, errors=['pmem-unsupported-cpu'], warnings=['mm-ratio'])
        self.assertEqual('pmem-unsupported-cpu', findings[0].code)
        self.assertIn('field notes 1', findings[0].source)


class ErrorRuleTestCase(PopulationTestCase):

    def test_pmem_on_first_generation_platform(self):
        config = node_config('purley-2s', 'xeon-gold-6148',
                             profile.APP_DIRECT,
                             {'ddr4-16': 6, 'pmem100-128': 2})
        self.assertFindings(config, errors=['pmem-unsupported-cpu',
                                            'pmem-unsupported-platform'])

    def test_pmem_200_on_cascade_lake(self):
        self.assertFindings(
            cascade(profile.APP_DIRECT, ddr4_16=6, pmem200_128=2),
            errors=['pmem-unsupported-cpu', 'pmem-unsupported-platform'],
            # 2 + 6 is an OEM mix of PMem 100, not of PMem 200.
            warnings=['not-oem-mix'])

    def test_more_modules_than_slots(self):
        # 6 channels x 2 slots per socket on Cascade Lake.
        self.assertFindings(cascade(profile.DRAM, ddr4_16=12))
        self.assertFindings(cascade(profile.DRAM, ddr4_16=13),
                            errors=['too-many-modules'],
                            warnings=['unbalanced-channels'])

    def test_more_pmem_than_channels(self):
        findings = self.assertFindings(
            cascade(profile.APP_DIRECT, ddr4_16=5, pmem100_128=7),
            errors=['pmem-per-channel'], warnings=['not-oem-mix'])
        self.assertIn('at most one per channel', findings[0].message)

    def test_pmem_without_dram(self):
        self.assertFindings(
            cascade(profile.APP_DIRECT, ddr4_16=1, pmem100_128=2),
            errors=['pmem-without-dram'], warnings=['not-oem-mix'])
        self.assertFindings(
            cascade(profile.APP_DIRECT, pmem100_128=2),
            errors=['pmem-without-dram'], warnings=['not-oem-mix'])

    def test_asymmetric_sockets(self):
        config = node_config('cascade-lake-2s', 'xeon-gold-6230n',
                             profile.MEMORY_MODE,
                             sockets=[{'ddr4-16': 6, 'pmem100-128': 2},
                                      {'ddr4-32': 6, 'pmem100-128': 2}])
        self.assertFindings(config, errors=['asymmetric-sockets'],
                            warnings=['mm-ratio'])
        alike = node_config('cascade-lake-2s', 'xeon-gold-6230n',
                            profile.MEMORY_MODE,
                            sockets=[{'ddr4-16': 6, 'pmem100-128': 2}] * 2)
        self.assertFindings(alike, warnings=['mm-ratio'])

    def test_over_cpu_memory_limit(self):
        # Gold 6230N: about 1 TB per socket, and PMem counts.
        findings = self.assertFindings(
            cascade(profile.APP_DIRECT, ddr4_64=6, pmem100_128=6),
            errors=['memory-limit'])
        self.assertIn('1152 GB against the 1024 GB limit',
                      findings[0].message)
        self.assertFindings(
            cascade(profile.APP_DIRECT, ddr4_32=6, pmem100_128=6))

    def test_memory_limit_counts_only_pmem_in_memory_mode_on_200(self):
        # 8 x 128 GB DDR4 + 8 x 512 GB PMem 200 per socket is 5 TB; in
        # Memory Mode only the 4 TB of PMem counts toward the limit.
        config = ice(profile.MEMORY_MODE, ddr4_128=8, pmem200_512=8)
        cpu = dataclasses.replace(config.cpu, memory_limit_gb=4608)
        self.assertFindings(dataclasses.replace(config, cpu=cpu))
        self.assertFindings(
            dataclasses.replace(config, cpu=cpu, mode=profile.APP_DIRECT),
            errors=['memory-limit'])

    def test_memory_limit_counts_dram_in_memory_mode_on_100(self):
        config = cascade(profile.MEMORY_MODE, cpu='xeon-gold-6238l',
                         ddr4_64=6, pmem100_512=6)
        self.assertFindings(config)
        cpu = dataclasses.replace(config.cpu, memory_limit_gb=3072)
        self.assertFindings(dataclasses.replace(config, cpu=cpu),
                            errors=['memory-limit'])

    def test_mixed_pmem_sizes(self):
        self.assertFindings(
            cascade(profile.APP_DIRECT, cpu='xeon-gold-6238l', ddr4_16=6,
                    pmem100_128=1, pmem100_256=1),
            errors=['mixed-pmem-sizes'])

    def test_pmem_module_too_large_for_base_cpu(self):
        # Base parts take 128 GB PMem only; the L part takes 256 GB.
        self.assertFindings(
            cascade(profile.APP_DIRECT, ddr4_16=6, pmem100_256=2),
            errors=['pmem-module-too-large'])
        self.assertFindings(
            cascade(profile.APP_DIRECT, cpu='xeon-gold-6238l', ddr4_16=6,
                    pmem100_256=2))

    def test_pmem_mode_without_pmem(self):
        for mode in (profile.MEMORY_MODE, profile.APP_DIRECT):
            self.assertFindings(cascade(mode, ddr4_16=6),
                                errors=['mode-without-pmem'])

    def test_memory_mode_without_dram(self):
        self.assertFindings(
            cascade(profile.MEMORY_MODE, pmem100_128=2),
            errors=['mode-without-dram', 'pmem-without-dram'],
            warnings=['not-oem-mix'])

    def test_memory_mode_needs_pmem_on_every_controller(self):
        # Cascade Lake has two memory controllers per socket.
        findings = self.assertFindings(
            cascade(profile.MEMORY_MODE, ddr4_16=6, pmem100_128=1),
            errors=['mm-controller'], warnings=['mm-ratio', 'not-oem-mix'])
        self.assertIn('1 PMem modules for 2 memory controllers',
                      findings[0].message)
        # Ice Lake has four; 8 DRAM + 1 PMem is an App-Direct-only mix.
        self.assertFindings(ice(profile.MEMORY_MODE, ddr4_16=8,
                                pmem200_128=1),
                            errors=['mm-controller'], warnings=['mm-ratio'])
        self.assertFindings(ice(profile.APP_DIRECT, ddr4_16=8,
                                pmem200_128=1))

    def test_errors_come_first(self):
        findings = population.check(
            cascade(profile.MEMORY_MODE, ddr4_16=6, pmem100_128=1))
        severities = [f.severity for f in findings]
        self.assertEqual(sorted(severities, key=lambda s: s != 'error'),
                         severities)


class WarningRuleTestCase(PopulationTestCase):

    def test_mm_ratio_inside_guidance(self):
        # 1:8 (recommended), and both ends of 1:4 to 1:16.
        self.assertFindings(ice(profile.MEMORY_MODE, ddr4_16=8,
                                pmem200_128=8))
        self.assertFindings(cascade(profile.MEMORY_MODE,
                                    cpu='xeon-gold-6238l', ddr4_32=4,
                                    pmem100_256=2))
        self.assertFindings(cascade(profile.MEMORY_MODE,
                                    cpu='xeon-gold-6238l', ddr4_16=4,
                                    pmem100_512=2))

    def test_mm_ratio_outside_guidance(self):
        # 1:2 (too much DRAM) and 1:32 (too little).
        findings = self.assertFindings(
            cascade(profile.MEMORY_MODE, ddr4_32=4, pmem100_128=2),
            warnings=['mm-ratio'])
        self.assertIn('1:2.0', findings[0].message)
        findings = self.assertFindings(
            ice(profile.MEMORY_MODE, ddr4_16=4, pmem200_512=4),
            warnings=['mm-ratio'])
        self.assertIn('1:32.0', findings[0].message)

    def test_mm_ratio_only_in_memory_mode(self):
        self.assertFindings(cascade(profile.APP_DIRECT, ddr4_16=6,
                                    pmem100_128=2))

    def test_oem_mixes_pmem_100(self):
        # Field notes 7: 2 PMem + 4 DRAM, 2+6, 4+6, 6+6 per socket.
        for pmem, dram in ((2, 4), (2, 6), (4, 6), (6, 6)):
            self.assertFindings(cascade(profile.APP_DIRECT, ddr4_16=dram,
                                        pmem100_128=pmem))
        for pmem, dram in ((4, 4), (2, 8), (1, 6), (3, 3), (4, 8)):
            findings = self.assertFindings(
                cascade(profile.APP_DIRECT, ddr4_16=dram, pmem100_128=pmem),
                warnings=['not-oem-mix'])
            self.assertIn('%d PMem + %d DRAM per socket' % (pmem, dram),
                          findings[0].message)

    def test_oem_mixes_pmem_200(self):
        # Field notes 7: DRAM + PMem 4+4, 8+4, 8+8 and 8+1.
        for dram, pmem in ((4, 4), (8, 4), (8, 8), (8, 1)):
            self.assertFindings(ice(profile.APP_DIRECT, ddr4_16=dram,
                                    pmem200_128=pmem))
        for dram, pmem in ((2, 2), (6, 2), (8, 2), (8, 6)):
            self.assertFindings(ice(profile.APP_DIRECT, ddr4_16=dram,
                                    pmem200_128=pmem),
                                warnings=['not-oem-mix'])

    def test_no_oem_warning_without_pmem(self):
        self.assertFindings(cascade(profile.DRAM, ddr4_16=6))
        self.assertFindings(ice(profile.DRAM, ddr4_32=8))

    def test_pmem_unused_in_dram_mode(self):
        self.assertFindings(cascade(profile.DRAM, ddr4_16=6, pmem100_128=2),
                            warnings=['pmem-unused'])

    def test_unbalanced_channels(self):
        self.assertFindings(cascade(profile.DRAM, ddr4_16=8),
                            warnings=['unbalanced-channels'])
        self.assertFindings(ice(profile.DRAM, ddr4_16=16))
