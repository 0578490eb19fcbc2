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
"""The public documents the planner's rules and defaults cite.

Every source a finding (or a built-in catalog entry) cites is either one of
these documents, by title and URL, so that a reader can open it, or text
that starts with ``assumption``: the project's own assumption, to be
replaced by the operator's figures.
"""

import collections
import re


Source = collections.namedtuple('Source', 'title url')

SOURCES = {
    'intel-pmem-platforms': Source(
        'Intel, "Intel Optane DC Persistent Memory - Configuring Platforms '
        'for Best Performance"',
        'https://www.intel.com/content/www/us/en/architecture-and-'
        'technology/gartner-perf-article.html'),
    'intel-pmem-video': Source(
        'Intel, "Configuring Intel Optane DC Persistent Memory for Best '
        'Performance" (video transcript)',
        'https://www.intel.com/content/www/us/en/developer/videos/'
        'configuring-optane-dc-persistent-memory-for-best-performance.html'),
    'lenovo-pmem100': Source(
        'Lenovo Press LP1066, "Intel Optane Persistent Memory 100 Series" '
        'product guide',
        'https://lenovopress.lenovo.com/lp1066-intel-optane-persistent-'
        'memory-100-series'),
    'lenovo-pmem200': Source(
        'Lenovo Press LP1380, "Intel Optane Persistent Memory 200 Series" '
        'product guide',
        'https://lenovopress.lenovo.com/lp1380-intel-optane-persistent-'
        'memory-200-series'),
    'vmware-memory-mode': Source(
        'VMware, "Intel Optane DC Persistent Memory \'Memory Mode\' '
        'Virtualized Performance Study"',
        'https://core.vmware.com/resource/intel-optane-dc-persistent-memory-'
        'memory-mode-virtualized-performance-study'),
    'wwt-xeon-population': Source(
        'WWT, "Memory Population Guidelines for Intel 4th Gen Xeon Scalable '
        'Processors" (also covers the 3rd generation)',
        'https://www.wwt.com/article/memory-population-guidelines-for-intel-'
        '4th-gen-xeon-scalable-processors'),
    'ice-lake-socket': Source(
        'HotHardware, "Intel Ice Lake Xeon 10nm Processor Leak Confirms '
        '8-Channel Memory And LGA4189 Socket"',
        'https://hothardware.com/news/intel-ice-lake-xeon-10nm-leak-confirms-'
        '8-channel-memory-lga4189-socket'),
    'optane-prices-2019': Source(
        'HWSW, Intel Optane DC DIMM launch prices (2019, in Hungarian)',
        'https://www.hwsw.hu/hirek/60205/intel-optance-dc-dimm-memoria-modul-'
        'ddr4-3d-xpoint.html'),
    'lenovo-sr630-pmem-mixes': Source(
        'Lenovo ThinkSystem SR630, "Mixed Memory Mode" DCPMM installation '
        'rules',
        'https://pubs.lenovo.com/sr630/dimm_installation_dcpmm_mix'),
    'fujitsu-rx4770-m5': Source(
        'Fujitsu PRIMERGY RX4770 M5 Upgrade and Maintenance Manual, '
        'page 253 (Memory Mode and App Direct population rules)',
        'https://www.easymanua.ls/fujitsu/primergy-rx4770-m5/manual?p=253'),
    'fast20-optane': Source(
        'Yang et al., "An Empirical Guide to the Behavior and Use of '
        'Scalable Persistent Memory", USENIX FAST 20',
        'https://www.usenix.org/conference/fast20/presentation/yang'),
}

ASSUMPTION = 'assumption'

_URL = re.compile(r'https?://[^\s);,\]]+')


def cite(source_id, detail=None):
    """'<title>, <URL>' of a source of the table, with what it says."""
    source = SOURCES[source_id]
    text = '%s, %s' % (source.title, source.url)
    return '%s (%s)' % (text, detail) if detail else text


def cite_all(*pairs):
    """Several citations, each a (source id, detail) pair, joined by '; '."""
    return '; '.join(cite(source_id, detail) for source_id, detail in pairs)


def assumption(text):
    """The project's own assumption, named as such."""
    return '%s: %s' % (ASSUMPTION, text)


_CATALOG = re.compile(r'^(\w+) catalog \(([^:)]+)')


def short(text):
    """A short reference to a citation, for a line of output.

    The ids of the documents of :data:`SOURCES` it cites, ``assumption``
    where it holds one, in the order they appear: the docs' table of
    sources gives each id's title and URL. A catalog entry's citation is
    ``<kind> catalog: <name>`` (the entry gives its source); a URL the
    table does not know is kept whole, and text that is none of these is
    returned as it is, so that the reference is never ambiguous.
    """
    text = text or ''
    catalog = _CATALOG.match(text)
    if catalog:
        return '%s catalog: %s' % catalog.groups()
    by_url = {source.url: source_id for source_id, source in SOURCES.items()}
    found = []
    for match in re.finditer(r'%s|(?:^|; |\()(%s)\b' % (
            _URL.pattern, ASSUMPTION), text):
        ref = (ASSUMPTION if match.group(1)
               else by_url.get(match.group(0), match.group(0)))
        if ref not in found:
            found.append(ref)
    return ', '.join(found) or text


def urls(text):
    """The URLs a citation names."""
    return _URL.findall(text or '')


def known_urls():
    return frozenset(s.url for s in SOURCES.values())
