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
"""The scenario file's sections: one frozen class each, its fields the keys."""

import dataclasses
import functools

from nova_pmem_filters.core.formats import scenario_schema as sch
from nova_pmem_filters.core.rules import extra_specs
from nova_pmem_filters.core.rules import tiering


_READ = 'read'


_WRITE = 'write'


# What a reader of the file assumes when a key is absent (the value itself
# stays None, so that the writer leaves the key out): see resolved().
_ASSUMED = 'assumed'


# The type a reader takes a given (or assumed) value as: see resolved().
_AS = 'as'


# A field that is no key of the file: the name of a catalog entry is the key
# of its mapping in the catalog, set by the reader, left out by the writer.
_NAMED = 'named'


def _name():
    return dataclasses.field(default=None, metadata={_NAMED: True})


def keys(cls):
    """The fields of a section class that are keys of the file."""
    return tuple(field for field in dataclasses.fields(cls)
                 if not field.metadata.get(_NAMED))


def _metadata(read, write, assumed, as_):
    metadata = {}
    for name, item in ((_READ, read), (_WRITE, write), (_ASSUMED, assumed),
                       (_AS, as_)):
        if item is not None:
            metadata[name] = item
    return metadata


def _key(read=None, write=None, assumed=None, as_=None, **kwargs):
    if 'default' not in kwargs and 'default_factory' not in kwargs:
        kwargs['default'] = None
    return dataclasses.field(
        metadata=_metadata(read, write, assumed, as_), **kwargs)


def _required(read=None, as_=None):
    return dataclasses.field(metadata=_metadata(read, None, None, as_))


def _section(cls):
    """Reads one mapping into ``cls``."""
    def read(raw):
        return value_of(cls, raw)
    return read


def _sections(cls):
    """Reads {name: mapping} into {name: ``cls``}."""
    def read(raw):
        return {name: value_of(cls, item, name)
                for name, item in raw.items()}
    return read


def _list(raw):
    return tuple(raw)


def _mapping(raw):
    return dict(raw)


def _populations(raw):
    return tuple(dict(population) for population in raw)


def _tiering_state(raw):
    """``on`` or ``off`` of a ``kernel_tiering`` (YAML's true or false)."""
    if isinstance(raw, bool):
        return tiering.ON if raw else tiering.OFF
    return raw


_VALUE = dataclasses.dataclass(frozen=True, kw_only=True)


@_VALUE
class Cpu:
    """A CPU of the catalog (``catalog.cpus.<name>``)."""

    name: str = _name()
    description: str = _key(assumed='')
    generation: str = _key(assumed='')
    cores: int = _required()
    threads: int = _required()
    price: float = _required(as_=float)
    price_source: str = _key(assumed='')
    watts: float = _required(as_=float)
    watts_source: str = _key(assumed='')
    memory_limit_gb: float = _required(as_=float)
    pmem_generations: tuple = _key(_list, assumed=(), as_=tuple)
    pmem_max_module_gb: float = _key(assumed=0, as_=float)
    # Where the entry's facts (PMem support, limits) come from.
    source: str = _key(assumed='')
    cxl_lanes: int = _key(assumed=0, as_=int)
    cxl_lanes_source: str = _key()
    flat_memory_mode: bool = _key(assumed=False, as_=bool)
    flat_memory_mode_source: str = _key()


@_VALUE
class Dimm:
    """A memory module of the catalog (``catalog.dimms.<name>``)."""

    name: str = _name()
    type: str = _required()
    generation: str = _key()
    description: str = _key()
    capacity_gb: float = _required(as_=float)
    price: float = _required(as_=float)
    price_source: str = _key(assumed='')
    watts: float = _required(as_=float)
    watts_source: str = _key(assumed='')
    source: str = _key(assumed='')
    bandwidth_gbps: float = _key()
    bandwidth_source: str = _key()
    latency_ns: float = _key()
    latency_source: str = _key()
    lanes: int = _key(assumed=0, as_=int)
    lanes_source: str = _key()

    @property
    def is_pmem(self):
        return self.type == 'pmem'

    @property
    def is_cxl(self):
        return self.type == 'cxl'

    @property
    def is_dram(self):
        """A DRAM DIMM in a memory channel (not PMem, not CXL)."""
        return self.type in ('ddr4', 'ddr5')


@_VALUE
class Platform:
    """A board of the catalog (``catalog.platforms.<name>``)."""

    name: str = _name()
    description: str = _key(assumed='')
    sockets: int = _required()
    controllers_per_socket: int = _required()
    channels_per_socket: int = _required()
    slots_per_channel: int = _required()
    pmem_generations: tuple = _key(_list, assumed=(), as_=tuple)
    # CPU generations the board takes; () : judged by the memory interface.
    cpu_generations: tuple = _key(_list, assumed=(), as_=tuple)
    base_cost: float = _required(as_=float)
    base_cost_source: str = _key(assumed='')
    base_watts: float = _required(as_=float)
    base_watts_source: str = _key(assumed='')
    rack_units: int = _key(assumed=2)
    rack_units_source: str = _key()
    source: str = _key(assumed='')
    memory_type: str = _key(assumed='ddr4')
    cxl_lanes: int = _key(assumed=0, as_=int)
    cxl_lanes_source: str = _key()

    @property
    def slots_per_socket(self):
        return self.channels_per_socket * self.slots_per_channel


@_VALUE
class Catalog:
    """Hardware entries by name.

    A scenario's ``catalog`` section, or the planner's built-in catalog
    file.
    """

    cpus: dict = _key(_sections(Cpu), default_factory=dict)
    dimms: dict = _key(_sections(Dimm), default_factory=dict)
    platforms: dict = _key(_sections(Platform), default_factory=dict)

    def merged(self, other):
        """This catalog with ``other``'s entries added or replacing."""
        return Catalog(cpus={**self.cpus, **other.cpus},
                       dimms={**self.dimms, **other.dimms},
                       platforms={**self.platforms, **other.platforms})


@_VALUE
class Config:
    """A node configuration (``configs.<name>``).

    Its platform, CPU and DIMMs are the names of catalog entries.
    """

    description: str = _key(assumed='')
    platform: str = _required()
    cpu: str = _required()
    mode: str = _required()
    # {DIMM name: count} on every socket ...
    per_socket: dict = _key(_mapping)
    # ... or one per socket.
    sockets: tuple = _key(_populations)
    # cxl_kmem only: tiering.ON or tiering.OFF (None: not said, on).
    kernel_tiering: str = _key(_tiering_state)

    def populations(self, sockets):
        """One {DIMM name: count} per socket of a board of ``sockets``."""
        if self.per_socket is not None:
            return tuple(dict(self.per_socket) for _ in range(sockets))
        return tuple(dict(population) for population in self.sockets)


@_VALUE
class Vpmem:
    """The vPMEM namespace of a workload (Nova's ``hw:pmem``)."""

    label: str = _required()
    size_gb: float = _required()


@_VALUE
class Calibration:
    """A published node throughput gain of a workload."""

    mode: str = _required()
    node_gain: float = _required()
    source: str = _key()


@_VALUE
class Workload:
    """A flavor and how its VMs use memory (``workloads.<name>``)."""

    description: str = _key(assumed='')
    vcpus: int = _required()
    ram_gb: float = _required(as_=float)
    # Absent: the whole ram_gb (see the planner's loading).
    used_gb: float = _key(as_=float)
    used_source: str = _key()
    flavor: str = _key()
    # A number, the text of a pmem:hot_ratio, or OBSERVED.
    hot_ratio: object = _key()
    hot_ratio_source: str = _key(assumed='')
    priority: str = _key()
    modes: tuple = _key(_list)
    numa_nodes: int = _key(as_=int)
    vpmem: Vpmem = _key(_section(Vpmem))
    throughput: dict = _key(_mapping, assumed={}, as_=dict)
    bound: str = _key(assumed=sch.LATENCY_BOUND)
    bandwidth_gbps: float = _key()
    bandwidth_source: str = _key()
    calibration: Calibration = _key(_section(Calibration))

    @property
    def observed(self):
        """Whether the hot ratio is the measured one."""
        return self.hot_ratio == sch.OBSERVED

    def extra_specs(self):
        """The flavor extra specs that express the workload.

        An observed hot ratio, not known here, is left out.
        """
        specs = {}
        if self.modes is not None:
            specs[extra_specs.MODES_KEY] = ','.join(
                str(m) for m in self.modes)
        if self.priority is not None:
            specs[extra_specs.PRIORITY_KEY] = spec_text(self.priority)
        if self.hot_ratio is not None and not self.observed:
            specs[extra_specs.HOT_RATIO_KEY] = _hot_ratio_text(
                self.hot_ratio)
        if self.vpmem is not None:
            specs[extra_specs.VPMEM_KEY] = self.vpmem.label
        if self.numa_nodes is not None:
            # int(): the schema lets 2.0 through as an integer, and Nova
            # refuses hw:numa_nodes=2.0.
            specs[sch.NUMA_NODES_KEY] = str(int(self.numa_nodes))
        return specs

    @functools.cached_property
    def request(self):
        """The PmemRequest of :meth:`extra_specs` (computed once).

        As the scheduler reads the specs.

        :raises nova_pmem_filters.core.rules.extra_specs.InvalidExtraSpec: for
            a value the parse of the document would have refused.
        """
        return extra_specs.parse(self.extra_specs())


@_VALUE
class Policies:
    """How full a node may be (``policies``)."""

    memory_cap: float = _key(assumed=0.9)
    memory_cap_source: str = _key()
    host_reserve_gb: float = _key(assumed=0.0)
    cpu_overcommit: float = _key(assumed=1.0)
    cache_overcommit: float = _key(assumed=1.0)
    # Share of an App-Direct region lost to namespace metadata and alignment
    # (devdax/fsdax with struct-page metadata on the device: 64 bytes per
    # 4 KiB page is 1/64).
    namespace_overhead: float = _key(assumed=1.0 / 64)


@_VALUE
class Performance:
    """Memory latencies of the throughput model (``performance``)."""

    # Intel's platform guide (nova_pmem_filters.planner.population.sources,
    # 'intel-pmem-platforms'): Optane about 350 ns idle read latency against
    # under 100 ns for DRAM.
    dram_latency_ns: float = _key(assumed=90.0)
    pmem_latency_ns: float = _key(assumed=350.0)
    source: str = _key()


@_VALUE
class Economics:
    """Power prices, service life, the fleet's caps (``economics``)."""

    # Assumptions to replace with the site's own figures.
    power_price_per_kwh: float = _key(assumed=0.10)
    power_price_source: str = _key()
    pue: float = _key(assumed=1.5)
    pue_source: str = _key()
    years: float = _key(assumed=5.0)
    years_source: str = _key()
    budget: float = _key()
    power_kw: float = _key()
    rack_units: float = _key()


@_VALUE
class Period:
    """VMs per workload to carry for some years: one step of ``demand``.

    A demand given as VMs per workload is one period named
    :data:`WHOLE_LIFE` whose ``years`` is None: the service life.
    """

    name: str = _required()
    years: float = _required()
    vms: dict = _required(_mapping)


def _read_demand(raw):
    if isinstance(raw, dict):
        return (Period(name=sch.WHOLE_LIFE, years=None, vms=dict(raw)),)
    return tuple(value_of(Period, period) for period in raw)


def _write_demand(periods):
    if len(periods) == 1 and periods[0].years is None:
        return dict(periods[0].vms)
    return [to_mapping(period) for period in periods]


@_VALUE
class Document:
    """A whole scenario."""

    name: str = _required()
    description: str = _key(assumed='')
    source: str = _key()
    baseline: str = _key()
    catalog: Catalog = _key(_section(Catalog))
    configs: dict = _required(_sections(Config))
    workloads: dict = _required(_sections(Workload))
    policies: Policies = _key(_section(Policies))
    performance: Performance = _key(_section(Performance))
    economics: Economics = _key(_section(Economics))
    # Periods (Period), in order.
    demand: tuple = _key(_read_demand, _write_demand)
    observations: str = _key()

    @property
    def baseline_config(self):
        """The configuration the others are compared with.

        The baseline, or else the first configuration.
        """
        return self.baseline if self.baseline is not None else next(
            iter(self.configs))


# The schema of each section, by the class of its values.
SCHEMAS = {
    Cpu: sch.CPU_SCHEMA, Dimm: sch.DIMM_SCHEMA,
    Platform: sch.PLATFORM_SCHEMA, Catalog: sch.CATALOG_SCHEMA,
    Config: sch.CONFIG_SCHEMA, Vpmem: sch.VPMEM_SCHEMA,
    Calibration: sch.CALIBRATION_SCHEMA, Workload: sch.WORKLOAD_SCHEMA,
    Policies: sch.POLICIES_SCHEMA, Performance: sch.PERFORMANCE_SCHEMA,
    Economics: sch.ECONOMICS_SCHEMA, Period: sch.PERIOD_SCHEMA,
    Document: sch.SCENARIO_SCHEMA,
}


def from_mapping(cls, raw):
    """The value (``cls``) of a section's mapping.

    Its keys become the fields; nothing is checked (:func:`parse` checks).
    """
    return value_of(cls, raw)


def value_of(cls, raw, name=None):
    """The ``cls`` of a mapping; ``name``, its key, names a catalog entry."""
    values = {}
    for field in dataclasses.fields(cls):
        if field.metadata.get(_NAMED):
            values[field.name] = name
            continue
        if field.name in raw:
            read = field.metadata.get(_READ)
            value = raw[field.name]
            values[field.name] = read(value) if read else value
    return cls(**values)


def resolved(value):
    """A section as a reader takes it.

    Every key the file leaves out at the value a reader assumes for it
    (the ``assumed`` of its field), and every value given or assumed
    converted to the type the reader takes (the field's ``as``; ``2`` to
    ``2.0`` for a price). A key with nothing assumed stays None. The
    entries of a mapping of sections (a catalog's) are resolved too; a
    section within the section is left as it is.
    """
    changes = {}
    for field in dataclasses.fields(value):
        item = getattr(value, field.name)
        if isinstance(item, dict) and all(
                dataclasses.is_dataclass(entry) for entry in item.values()):
            changes[field.name] = {key: resolved(entry)
                                   for key, entry in item.items()}
        elif item is None:
            changes[field.name] = assumed(type(value), field.name)
        elif _AS in field.metadata:
            changes[field.name] = field.metadata[_AS](item)
    return dataclasses.replace(value, **changes)


def assumed(cls, key):
    """What a reader takes ``key`` of a ``cls`` section left out for."""
    field = {field.name: field for field in dataclasses.fields(cls)}[key]
    item = field.metadata.get(_ASSUMED)
    convert = field.metadata.get(_AS)
    return item if item is None or convert is None else convert(item)


def _left_out(field, value):
    if field.default is not dataclasses.MISSING:
        return value is None
    if field.default_factory is not dataclasses.MISSING:
        return value == field.default_factory()
    return False


def to_mapping(value):
    """The YAML mapping (plain dicts, lists and scalars) of a value.

    Keys the value leaves out (None) are not written.
    """
    if dataclasses.is_dataclass(value):
        mapping = {}
        for field in keys(type(value)):
            item = getattr(value, field.name)
            if _left_out(field, item):
                continue
            write = field.metadata.get(_WRITE, to_mapping)
            mapping[field.name] = write(item)
        return mapping
    if isinstance(value, dict):
        return {key: to_mapping(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_mapping(item) for item in value]
    return value


def spec_text(value):
    """The flavor extra spec text of a scenario value (a number or text).

    A number becomes a plain decimal, as a flavor carries it:
    ``repr(0.00001)`` is ``1e-05``, which the shared grammar (no
    exponents) refuses.
    """
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return extra_specs.plain_decimal(value)
    return str(value)


def _hot_ratio_text(value):
    """A workload's hot ratio as its flavor carries it.

    A ratio the file gives as a number with a fraction is written the one
    way (:func:`extra_specs.format_hot_ratio`); text and whole numbers are
    kept as the file writes them, for the scheduler's parser to read (and
    to refuse naming the key).
    """
    if isinstance(value, float) and 0.0 < value <= 1.0:
        return extra_specs.format_hot_ratio(value)
    return spec_text(value)
