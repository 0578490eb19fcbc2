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
"""Every form in which ndctl prints the same listing.

``ndctl_forms/`` holds the App Direct host of
``discover_data/ad_2s_pmem100_512`` as ndctl prints it with ``-u`` (sizes
as strings, 64-bit ids as ``"0x..."``), as ndctl 73 to 78 print it without
``-u`` (cookies unsigned) and with it (cookies at or above 2**63 clamped to
``0x7fffffffffffffff``), and with ``-B -D`` (a bus holding the DIMMs and
the regions). Each must give the host's profile.
"""

import io
import json
import os
import re
import shutil
import subprocess

import fixtures
import testtools

from nova_pmem_filters.core.grammars import errors
from nova_pmem_filters.core.grammars import ndctl
from nova_pmem_filters.core.grammars import toolout
from nova_pmem_filters.discover import cli
from nova_pmem_filters.discover import runner
from tests.unit import paths

HERE = paths.of('tests', 'unit')
CASE = os.path.join(HERE, 'discover_data', 'ad_2s_pmem100_512')
FORMS = os.path.join(HERE, 'ndctl_forms')
GIB = 2 ** 30
TIB = 2 ** 40

# ndctl's own example (Documentation/ndctl/ndctl-list.txt): one region
# listed without and with --human.
REGION7 = ('{"dev":"region7","size":67108864,"available_size":67108864,'
           '"type":"pmem","iset_id":-6382611090938810793,'
           '"badblock_count":8}')
REGION7_HUMAN = ('{"dev":"region7","size":"64.00 MiB (67.11 MB)",'
                 '"available_size":"64.00 MiB (67.11 MB)","type":"pmem",'
                 '"iset_id":"0xa76c6907811fae57","badblock_count":8}')


def listing(text):
    return ndctl.parse_listing(toolout.Output(
        runner.BY_KEY['ndctl'], text, 0, 'json', 'ndctl-list.json'))


def read(path):
    with open(path) as f:
        return f.read()


def ipmctl_isets():
    return [int(v, 16) for v in re.findall(
        r'<ISetID>([^<]*)</ISetID>',
        read(os.path.join(CASE, 'ipmctl-region.xml')))]


def ipmctl_dimm_ids():
    return [int(v, 16) for v in re.findall(
        r'<DimmID>([^<]*)</DimmID>',
        read(os.path.join(CASE, 'ipmctl-dimm.xml')))]


def printed_precision(text):
    """Half a unit in the last digit ndctl printed, in bytes."""
    match = re.match(r'^[0-9]+\.[0-9]{2} (MiB|GiB|TiB)', text)
    unit = {'MiB': 2 ** 20, 'GiB': GIB, 'TiB': TIB}[match.group(1)]
    return 0.005 * unit


class TestIds(testtools.TestCase):

    def test_ndctl_documentation_example_in_both_forms(self):
        plain = listing(REGION7).regions[0]
        human = listing(REGION7_HUMAN).regions[0]
        self.assertEqual(0xa76c6907811fae57, plain['iset_id'])
        self.assertEqual(plain, human)
        self.assertEqual(67108864, human['size'])

    def test_unsigned_print_of_ndctl_73_and_later(self):
        text = REGION7.replace('-6382611090938810793',
                               str(0xa76c6907811fae57))
        self.assertEqual(0xa76c6907811fae57,
                         listing(text).regions[0]['iset_id'])

    def test_every_form_gives_the_cookies_ipmctl_reports(self):
        forms = ['ndctl-list.RNvu.json', 'ndctl-list.RNv-unsigned.json',
                 'ndctl-list.BDRNvu.json']
        want = ipmctl_isets()
        self.assertEqual(want, [r['iset_id'] for r in listing(
            read(os.path.join(CASE, 'ndctl-list.json'))).regions])
        for form in forms:
            got = listing(read(os.path.join(FORMS, form))).regions
            self.assertEqual(want, [r['iset_id'] for r in got], form)

    def test_clamped_cookie_is_unknown(self):
        regions = listing(read(os.path.join(
            FORMS, 'ndctl-list.RNvu-clamped.json'))).regions
        self.assertEqual([None, None], [r['iset_id'] for r in regions])

    def test_dimm_handles_in_both_forms(self):
        text = read(os.path.join(FORMS, 'ndctl-list.BDRNvu.json'))
        human = listing(text).dimms
        self.assertEqual(ipmctl_dimm_ids(), [d['handle'] for d in human])
        self.assertEqual([0x1c + 2 * i for i in range(12)],
                         [d['phys_id'] for d in human])
        # Without -u ndctl prints the same fields as integers.
        data = json.loads(text)
        for dimm in data[0]['dimms']:
            dimm['handle'] = int(dimm['handle'], 16)
            dimm['phys_id'] = int(dimm['phys_id'], 16)
        self.assertEqual(human, listing(json.dumps(data)).dimms)

    def test_zero_is_printed_without_prefix(self):
        dimms = listing('{"dev":"nmem0","id":"8089-a2-1837-00000bc0",'
                        '"handle":"0","phys_id":"0x0"}').dimms
        self.assertEqual([(0, 0)], [(d['handle'], d['phys_id'])
                                    for d in dimms])

    def test_bad_ids_are_refused_with_the_key_and_device(self):
        for value in ('"0xZZ"', '"12"', '"0x1ffffffffffffffff"', '""',
                      str(2 ** 64), str(-2 ** 63 - 1), '1.5', 'true',
                      '[]'):
            text = REGION7.replace('-6382611090938810793', value)
            exc = self.assertRaises(errors.DiscoveryError, listing, text)
            self.assertIn('iset_id of region7 is not a 64-bit id', str(exc))
            self.assertIn('ndctl-list.json', str(exc))

    def test_entry_of_unknown_kind(self):
        exc = self.assertRaises(errors.DiscoveryError, listing,
                                '[{"dev":"region0","size":1},'
                                '{"dev":"widget3"}]')
        self.assertIn("dev 'widget3'", str(exc))

    def test_buses_without_lists(self):
        self.assertEqual(
            ndctl.Listing([], [], []),
            listing('[{"provider":"ACPI.NFIT","dev":"ndbus0",'
                    '"scrub_state":"idle"}]'))

    def test_platform_object_of_several_kinds(self):
        text = read(os.path.join(FORMS, 'ndctl-list.BDRNvu.json'))
        bus = json.loads(text)[0]
        flat = listing(json.dumps({'dimms': bus['dimms'],
                                   'regions': bus['regions']}))
        self.assertEqual(listing(text), flat)
        self.assertEqual(5, len(flat.namespaces))


class TestProfileFromEachForm(testtools.TestCase):
    """nova-pmem-discover --from DIR with each form as ndctl-list.json."""

    def discover(self, form=None):
        tmp = self.useFixture(fixtures.TempDir()).path
        for name in os.listdir(CASE):
            shutil.copy(os.path.join(CASE, name), tmp)
        if form:
            shutil.copy(os.path.join(FORMS, form),
                        os.path.join(tmp, 'ndctl-list.json'))
        out, err = io.StringIO(), io.StringIO()
        status = cli.main(['--from', tmp], stdout=out, stderr=err)
        self.assertEqual(0, status, err.getvalue())
        return json.loads(out.getvalue())

    def assert_same_host(self, want, got, text):
        """Equal, but for sizes rounded as ndctl printed them."""
        sizes = {}
        for entry in json.loads(text):
            for region in entry.get('regions', [entry]):
                sizes[region['dev']] = region
                for ns in region.get('namespaces', []):
                    sizes[ns['dev']] = ns
        for key in ('regions', 'namespaces'):
            for w, g in zip(want[key], got[key]):
                for field, raw in (('size_gb', 'size'),
                                   ('available_gb', 'available_size')):
                    if field not in w:
                        continue
                    printed = sizes[w.get('dev', w.get('id'))][raw]
                    slack = (printed_precision(printed) / GIB + 0.005
                             if isinstance(printed, str) else 0)
                    self.assertLessEqual(abs(w[field] - g[field]), slack,
                                         (w, g))
                    g[field] = w[field]
        self.assertEqual(want, got)

    def test_each_form_gives_the_same_profile(self):
        want = self.discover()
        self.assertEqual([], want['notes'])
        for form in ('ndctl-list.RNvu.json', 'ndctl-list.RNv-unsigned.json',
                     'ndctl-list.BDRNvu.json'):
            self.assert_same_host(want, self.discover(form),
                                  read(os.path.join(FORMS, form)))

    def test_clamped_cookies_fall_back_to_the_numa_node(self):
        want = self.discover()
        got = self.discover('ndctl-list.RNvu-clamped.json')
        notes = got.pop('notes')
        self.assertEqual(
            ['ndctl gives region%d no usable interleave set id (ndctl 73 '
             'to 78 print 0x7fffffffffffffff with -u); its socket is its '
             'NUMA node (%d)' % (n, n) for n in (0, 1)], notes)
        want.pop('notes')
        self.assert_same_host(want, got, read(os.path.join(
            FORMS, 'ndctl-list.RNvu-clamped.json')))
        self.assertEqual([0, 1], [r['socket'] for r in got['regions']])


class TestRealNdctl(testtools.TestCase):

    def test_the_command_discovery_runs(self):
        argv = runner.BY_KEY['ndctl'].argv
        if not shutil.which(argv[0]):
            self.skipTest('ndctl is not installed')
        proc = subprocess.run(argv, capture_output=True, text=True,
                              timeout=60, stdin=subprocess.DEVNULL)
        # Options it did not know would exit 129 with a usage message.
        self.assertEqual(0, proc.returncode, proc.stderr)
        listing(proc.stdout)
