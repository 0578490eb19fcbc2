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
"""Nova's provider config: built here, and read back.

nova-compute reads every ``*.yaml`` of ``[compute]
provider_config_location`` (schema 1.0, ``nova/compute/provider_config.py``)
and adds the traits and inventories they give to its compute node
providers. ``nova-pmem-discover --provider-config`` writes one per host
(its mode traits and near memory), ``nova-pmem-planner nova-config
provider-config`` one per aggregate of a plan (near memory), and the tests
start Nova with them: all build it with :func:`document`,
:func:`provider` and :func:`inventory`, and read it back with
:func:`parse`, which refuses what nova-compute would refuse of the parts
we write (custom names, integer inventory fields) and an inventory whose
``min_unit <= max_unit <= total`` does not hold.

:func:`dumps` writes it as YAML, the one writer of both tools: checked
with :func:`parse` first, so that neither writes a file nova-compute would
refuse. Everything else here works on the decoded document (a dict). It
imports nothing from Nova, and PyYAML only when it writes.
"""

import dataclasses
import json
import re

# As _document: document() builds a provider config.
from nova_pmem_filters.core.formats import document as _document
from nova_pmem_filters.core.rules import placement

SCHEMA_VERSION = '1.0'

# Keys of the document.
META = 'meta'
SCHEMA_VERSION_KEY = 'schema_version'
PROVIDERS = 'providers'
IDENTIFICATION = 'identification'
UUID = 'uuid'
NAME = 'name'
TRAITS = 'traits'
INVENTORIES = 'inventories'
# The one adjective of traits and inventories in schema 1.0.
ADDITIONAL = 'additional'
# The fields of one inventory, in the order they are written.

# Nova's identification of every compute node root provider of the
# nova-compute reading the file; it accepts it as ``uuid`` only.
COMPUTE_NODE = '$COMPUTE_NODE'

# Custom trait and resource class names (Nova refuses standard ones here).
_CUSTOM_NAME = re.compile(r'CUSTOM_[A-Z0-9_]{1,248}')
_UUID = re.compile(r'[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-'
                   r'[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}')


class ProviderConfigError(_document.DocumentError):
    """A provider config nova-compute would not load, or not ours."""

    @classmethod
    def shown(cls, value):
        # YAML gives values JSON has not (dates): as text, and short.
        return json.dumps(value, default=str)[:60]


_shown = ProviderConfigError.shown


# --- building ---------------------------------------------------------------

def provider(name=None, traits=(), inventories=()):
    """One provider of a provider config.

    :param name: the compute node's name; None identifies every compute
        node of the nova-compute that reads the file (:data:`COMPUTE_NODE`).
    :param traits: trait names to add; none leaves ``traits`` out.
    :param inventories: ``{resource class: inventory}`` or pairs of them;
        none leaves ``inventories`` out.
    """
    result = {IDENTIFICATION: {NAME: name} if name
              else {UUID: COMPUTE_NODE}}
    if traits:
        result[TRAITS] = {ADDITIONAL: list(traits)}
    pairs = list(dict(inventories).items())
    if pairs:
        result[INVENTORIES] = {ADDITIONAL: [{rc: dict(inv)}
                                            for rc, inv in pairs]}
    return result


def document(*providers):
    """The provider config of ``providers`` (from :func:`provider`)."""
    return {META: {SCHEMA_VERSION_KEY: SCHEMA_VERSION},
            PROVIDERS: [dict(p) for p in providers]}


# --- reading ----------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Inventory:
    """One inventory as the file gives it.

    None where it leaves a field out (Placement's default then applies).
    """

    total: int
    reserved: int = None
    min_unit: int = None
    max_unit: int = None
    step_size: int = None
    allocation_ratio: float = None

    def as_dict(self):
        return {key: getattr(self, key) for key in placement.INVENTORY_KEYS
                if getattr(self, key) is not None}


@dataclasses.dataclass(frozen=True)
class Provider:
    """One provider: how it is identified, its traits and inventories."""

    uuid: str = None
    name: str = None
    # None when the provider has no ``traits`` key.
    traits: tuple = None
    # ((resource class, Inventory), ...); None when it has no
    # ``inventories`` key.
    inventories: tuple = None

    @property
    def every_compute_node(self):
        """Whether it names every compute node (``$COMPUTE_NODE``)."""
        return self.uuid == COMPUTE_NODE

    def inventory(self, resource_class):
        """The :class:`Inventory` of ``resource_class``, or None."""
        return dict(self.inventories or ()).get(resource_class)

    def as_dict(self):
        result = {IDENTIFICATION: ({UUID: self.uuid} if self.uuid is not None
                                   else {NAME: self.name})}
        if self.traits is not None:
            result[TRAITS] = {ADDITIONAL: list(self.traits)}
        if self.inventories is not None:
            result[INVENTORIES] = {ADDITIONAL: [
                {rc: inv.as_dict()} for rc, inv in self.inventories]}
        return result


@dataclasses.dataclass(frozen=True)
class ProviderConfig:
    """A provider config, read back."""

    schema_version: str
    providers: tuple

    def as_dict(self):
        """The document :func:`parse` read, as :func:`document` builds."""
        return {META: {SCHEMA_VERSION_KEY: self.schema_version},
                PROVIDERS: [p.as_dict() for p in self.providers]}


def _object(value, source, path, keys):
    if not isinstance(value, dict):
        raise ProviderConfigError(source, path, 'expected an object, got %s'
                                  % _shown(value))
    unknown = sorted(set(value) - set(keys), key=str)
    if unknown:
        raise ProviderConfigError(source, path + [unknown[0]],
                                  'not a key of %s' % ', '.join(keys))
    return value


def _list(value, source, path, non_empty=False):
    if not isinstance(value, list) or (non_empty and not value):
        raise ProviderConfigError(source, path, 'expected a %slist, got %s'
                                  % ('non-empty ' if non_empty else '',
                                     _shown(value)))
    return value


def _custom(value, source, path):
    if not (isinstance(value, str) and _CUSTOM_NAME.fullmatch(value)):
        raise ProviderConfigError(source, path, '%s is not a custom name '
                                  '(CUSTOM_ and up to 248 of A-Z, 0-9, _)'
                                  % _shown(value))
    return value


def _integer(item, key, source, path, least):
    check = _document.whole('an integer >= %d' % least, least=least)
    if key != placement.TOTAL:
        check = _document.nullable(check)
    return check(item.get(key), source, path + [key])


_RATIO = _document.nullable(_document.number('a number > 0', above=0,
                                             convert=float))


def _inventory(item, source, path):
    _object(item, source, path, placement.INVENTORY_KEYS)
    ratio = _RATIO(item.get(placement.ALLOCATION_RATIO), source,
                   path + [placement.ALLOCATION_RATIO])
    inv = Inventory(
        total=_integer(item, placement.TOTAL, source, path, 1),
        reserved=_integer(item, placement.RESERVED, source, path, 0),
        min_unit=_integer(item, placement.MIN_UNIT, source, path, 1),
        max_unit=_integer(item, placement.MAX_UNIT, source, path, 1),
        step_size=_integer(item, placement.STEP_SIZE, source, path, 1),
        allocation_ratio=ratio)
    low = 1 if inv.min_unit is None else inv.min_unit
    high = inv.total if inv.max_unit is None else inv.max_unit
    if not low <= high <= inv.total:
        raise ProviderConfigError(source, path, 'needs min_unit <= max_unit '
                                  '<= total, got %d, %d, %d'
                                  % (low, high, inv.total))
    return inv


def _identification(value, source, path):
    _object(value, source, path, (UUID, NAME))
    if len(value) != 1:
        raise ProviderConfigError(source, path, 'expected exactly one of '
                                  'uuid, name')
    if UUID in value:
        uuid = value[UUID]
        if not (uuid == COMPUTE_NODE or (isinstance(uuid, str)
                                         and _UUID.fullmatch(uuid))):
            raise ProviderConfigError(source, path + [UUID], 'expected a '
                                      'UUID or %s, got %s'
                                      % (COMPUTE_NODE, _shown(uuid)))
        return uuid, None
    name = value[NAME]
    if not (isinstance(name, str) and 1 <= len(name) <= 200):
        raise ProviderConfigError(source, path + [NAME], 'expected a name '
                                  'of 1 to 200 characters, got %s'
                                  % _shown(name))
    return None, name


def _provider(item, source, path):
    _object(item, source, path, (IDENTIFICATION, TRAITS, INVENTORIES))
    if IDENTIFICATION not in item:
        raise ProviderConfigError(source, path + [IDENTIFICATION], 'missing')
    uuid, name = _identification(item[IDENTIFICATION], source,
                                 path + [IDENTIFICATION])
    traits = inventories = None
    if TRAITS in item:
        where = path + [TRAITS]
        section = _object(item[TRAITS], source, where, (ADDITIONAL,))
        names = _list(section.get(ADDITIONAL), source, where + [ADDITIONAL],
                      non_empty=True)
        traits = tuple(_custom(t, source, where + [ADDITIONAL, i])
                       for i, t in enumerate(names))
    if INVENTORIES in item:
        where = path + [INVENTORIES, ADDITIONAL]
        section = _object(item[INVENTORIES], source, path + [INVENTORIES],
                          (ADDITIONAL,))
        found = []
        for i, entry in enumerate(_list(section.get(ADDITIONAL, []), source,
                                        where)):
            if not isinstance(entry, dict) or not entry:
                raise ProviderConfigError(source, where + [i], 'expected an '
                                          'object of resource classes')
            for rc, inv in entry.items():
                _custom(rc, source, where + [i])
                found.append((rc, _inventory(inv, source,
                                             where + [i, rc])))
        inventories = tuple(found)
    return Provider(uuid=uuid, name=name, traits=traits,
                    inventories=inventories)


def parse(data, source):
    """Read a provider config (the decoded YAML).

    :returns: a :class:`ProviderConfig`.
    :raises ProviderConfigError: naming ``source`` and the key.
    """
    with _document.raised_as(ProviderConfigError):
        _object(data, source, [], (META, PROVIDERS))
        meta = _object(data.get(META), source, [META],
                       (SCHEMA_VERSION_KEY,))
        _document.exactly(SCHEMA_VERSION)(meta.get(SCHEMA_VERSION_KEY),
                                          source, [META, SCHEMA_VERSION_KEY])
        items = _list(data.get(PROVIDERS), source, [PROVIDERS],
                      non_empty=True)
        return ProviderConfig(
            schema_version=SCHEMA_VERSION,
            providers=tuple(_provider(item, source, [PROVIDERS, i])
                            for i, item in enumerate(items)))


def dumps(data, source, comments=(), one_line=False):
    """``data`` as the YAML text of a provider config file.

    :param data: the decoded document (from :func:`document`) or a
        :class:`ProviderConfig`.
    :param source: what ``data`` is, for the error.
    :param comments: lines of a leading comment (an empty one is ``#``).
    :param one_line: flow style on one line, keys sorted, no comments: the
        planner's ``command`` column.
    :raises ProviderConfigError: ``data`` is not a provider config Nova
        would load (:func:`parse`), or does not read back the same.
    """
    import yaml

    config = data if isinstance(data, ProviderConfig) else parse(data, source)
    doc = config.as_dict()
    if one_line:
        return yaml.safe_dump(doc, default_flow_style=True,
                              width=float('inf')).strip()
    text = ''.join('# %s\n' % c if c else '#\n' for c in comments) + (
        yaml.safe_dump(doc, default_flow_style=False, sort_keys=False))
    # What Nova will read back must be what was checked.
    if parse(yaml.safe_load(text), source) != config:
        raise ProviderConfigError('%s does not survive a YAML round trip'
                                  % source)
    return text


def near_memory_provider_config(inventory, name=None, traits=()):
    """A Nova provider config (``[compute] provider_config_location``).

    :param inventory: from :func:`~.placement.near_memory_inventory`; None
        (or a total of 0) reports no near memory.
    :param name: the compute node's name; None identifies every compute node
        of the nova-compute that reads the file (``$COMPUTE_NODE``).
    :param traits: trait names to add too (discovery's mode traits).
    :returns: a dict to write as YAML .
    """
    inventories = ({placement.NEAR_MEMORY_RC: inventory}
                   if inventory and inventory[placement.TOTAL] > 0
                   else {})
    return document(provider(
        name=name, traits=traits, inventories=inventories))


def near_memory_of(config):
    """The ``CUSTOM_NEAR_MEMORY_MB`` inventories a provider config gives.

    :param config: a :class:`ProviderConfig`.
    :returns: ``[(provider, inventory dict)]`` of the providers that have
        one.
    """
    found = []
    for prov in config.providers:
        inv = prov.inventory(placement.NEAR_MEMORY_RC)
        if inv is not None:
            found.append((prov, inv.as_dict()))
    return found
