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
"""The scenario file's YAML, read with its bounds and written back."""

import functools
import math
import re

from nova_pmem_filters.core.formats import scenario_schema as sch


# A number with an exponent as YAML 1.2 (and JSON) writes it: PyYAML
# follows YAML 1.1, whose floats need a dot and a signed exponent, and read
# 1e20 as the text '1e20'. Quoted text stays text.
_EXPONENT = re.compile(r'^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)'
                       r'[eE][-+]?[0-9]+$')


@functools.lru_cache(maxsize=None)
def yaml_class(name):
    """PyYAML's SafeLoader or SafeDumper, with YAML 1.2's exponents.

    The dumper quotes the text that the loader would read as a number.
    """
    import yaml

    members = {}
    if name == 'SafeLoader':
        members = {'compose_node': _compose_node,
                   'compose_document': _compose_document,
                   'construct_mapping': _construct_mapping}
    cls = type(name, (getattr(yaml, name),), members)
    cls.add_implicit_resolver('tag:yaml.org,2002:float', _EXPONENT,
                              list('-+0123456789.'))
    if name == 'SafeLoader':
        cls.add_constructor('tag:yaml.org,2002:int', _construct_int)
    return cls


# Aliases (``*name``) a document may hold, and the nodes it may hold once
# they are expanded: a "billion laughs" of a few hundred bytes expands to
# more than memory holds; no format of ours needs more than a few.
ALIAS_LIMIT = 100


EXPANDED_NODE_LIMIT = 1000000


def _compose_node(loader, parent, index):
    import yaml
    if loader.check_event(yaml.events.AliasEvent):
        loader.alias_count = getattr(loader, 'alias_count', 0) + 1
        if loader.alias_count > ALIAS_LIMIT:
            raise yaml.composer.ComposerError(
                None, None, 'more than %d aliases (*name); a document may '
                'hold at most %d' % (ALIAS_LIMIT, ALIAS_LIMIT),
                loader.peek_event().start_mark)
    return super(type(loader), loader).compose_node(parent, index)


def _compose_document(loader):
    import yaml
    node = super(type(loader), loader).compose_document()
    # The nodes as a reader of the data sees them, aliases expanded.
    count, pending = 0, [node]
    while pending:
        current = pending.pop()
        count += 1
        if count > EXPANDED_NODE_LIMIT:
            raise yaml.composer.ComposerError(
                None, None, 'more than %d values once its aliases are '
                'expanded; a document may hold at most %d'
                % (EXPANDED_NODE_LIMIT, EXPANDED_NODE_LIMIT),
                node.start_mark)
        if isinstance(current, yaml.MappingNode):
            for key, value in current.value:
                pending.extend((key, value))
        elif isinstance(current, yaml.SequenceNode):
            pending.extend(current.value)
    return node


def _construct_mapping(loader, node, deep=False):
    import yaml
    if isinstance(node, yaml.MappingNode):
        seen = set()
        for key_node, _node_value in node.value:
            if key_node.tag == 'tag:yaml.org,2002:merge':
                continue
            key = loader.construct_object(key_node, deep=True)
            try:
                repeated = key in seen
            except TypeError:
                # An unhashable key: the constructor names it.
                break
            if repeated:
                raise yaml.constructor.ConstructorError(
                    None, None, 'duplicate key %r: a key may appear once in '
                    'a mapping' % (key,), key_node.start_mark)
            seen.add(key)
    return super(type(loader), loader).construct_mapping(node, deep=deep)


def _construct_int(loader, node):
    try:
        return loader.construct_yaml_int(node)
    except ValueError:
        # More digits than Python turns into an int (4300): beyond every
        # bound, which the schema then names with the key.
        return math.inf


def _check_no_nan(data, source, path=()):
    # .nan passes every bound of the schema (it compares false with all).
    if isinstance(data, float) and math.isnan(data):
        raise sch.ScenarioError(source, list(path),
                                'expected a number, got nan')
    if isinstance(data, dict):
        for key, value in data.items():
            _check_no_nan(value, source, path + (key,))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            _check_no_nan(value, source, path + (index,))


def read_yaml(text, source):
    import yaml
    try:
        data = yaml.load(text, Loader=yaml_class('SafeLoader'))
    except yaml.YAMLError as exc:
        mark = getattr(exc, 'problem_mark', None)
        problem = getattr(exc, 'problem', None)
        if mark:
            where = ['line %d' % (mark.line + 1)]
        elif isinstance(exc, yaml.reader.ReaderError):
            # A character YAML does not allow: no mark, and str(exc) spans
            # two lines.
            where = ['line %d' % (text.count('\n', 0, exc.position) + 1)]
            problem = '%s (character #x%04x)' % (exc.reason, exc.character)
        else:
            where = []
        raise sch.ScenarioError(source, where, 'not valid YAML: %s'
                                % (problem or exc))
    if not isinstance(data, dict):
        raise sch.ScenarioError(source, [], 'expected a mapping of keys to '
                                'values, got %s' % type(data).__name__)
    _check_no_nan(data, source)
    return data
