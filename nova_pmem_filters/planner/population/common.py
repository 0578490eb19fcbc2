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
"""What every population rule shares: findings, severities, a socket's modules.
"""

import dataclasses


ERROR = 'error'
WARNING = 'warning'


@dataclasses.dataclass(frozen=True)
class Finding:
    severity: str
    code: str
    message: str
    source: str

    def __str__(self):
        return '%s %s: %s [%s]' % (self.severity, self.code, self.message,
                                   self.source)


def socket_counts(socket):
    # CXL devices sit on CXL lanes, not in DIMM slots: counted apart.
    dram = sum(n for d, n in socket.items() if d.is_dram)
    pmem = sum(n for d, n in socket.items() if d.is_pmem)
    return dram, pmem


def _kind(dimm, pmem):
    # pmem True: PMem; False: DRAM DIMMs; 'cxl': CXL memory devices.
    if pmem == 'cxl':
        return dimm.is_cxl
    return dimm.is_pmem if pmem else dimm.is_dram


def socket_gb(socket, pmem):
    return sum(d.capacity_gb * n for d, n in socket.items()
               if _kind(d, pmem))


def modules(socket, pmem=None):
    """'6 x ddr4-16 + 2 x pmem100-128': a socket's modules by name."""
    return ' + '.join('%d x %s' % (n, d.name) for d, n in sorted(
        socket.items(), key=lambda kv: kv[0].name)
        if n and (pmem is None or _kind(d, pmem))) or 'no modules'


def catalog_source(kind, name, fact, source):
    return '%s catalog (%s: %s)%s' % (kind, name, fact,
                                      '; %s' % source if source else '')


def errors(findings):
    return [f for f in findings if f.severity == ERROR]


def warnings(findings):
    return [f for f in findings if f.severity == WARNING]
