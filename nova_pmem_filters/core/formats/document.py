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
"""How the core's documents are declared, read and written back.

Each document the tools write or read has its own module in the core
(:mod:`~nova_pmem_filters.core.formats.hostfile`,
:mod:`~nova_pmem_filters.core.formats.observation`,
:mod:`~nova_pmem_filters.core.formats.providerconfig`), which holds its keys
and its own rules. What they share is here, once:

- :class:`DocumentError`: an error naming the file (``source``), the key
  (``path``: object keys and list indexes from the top) and the ``rule``
  broken; each document subclasses it and says how it names a key and
  shows a value.
- :class:`Document` and :func:`key`: a part of a document is a frozen
  dataclass whose fields are its keys, in the order written, each declared
  with its check. :meth:`Document.from_dict` reads one from decoded JSON,
  every key checked; :meth:`Document.to_dict` writes it back, keys in
  order, a key the document left out (:data:`ABSENT`) left out again.
- The checks documents share (numbers, whole numbers, text, choices, flags,
  lists, objects and lists of objects, null). A check is called as
  ``check(value, source, path)`` and returns the value as a reader gets it.
  The caller gives the words of what is expected (``what``), so that each
  document keeps its own messages; a refusal is raised as the document's
  own error (:func:`raised_as`) and shows the value as that error does.
- :func:`read_json` and :func:`json_files`: a document file, and a
  directory of them, read with the same messages.

This module imports nothing from Nova.
"""

import contextlib
import dataclasses
import json
import math
import os

from nova_pmem_filters import fileutil


class DocumentError(ValueError):
    """A document that cannot be used; the message names the file and key.

    ``source`` names the file, ``path`` the key (object keys and list
    indexes, from the top), ``rule`` what the value breaks.
    """

    def __init__(self, source, path, rule):
        self.source = source
        self.path = list(path)
        self.rule = rule
        super().__init__(self.describe(source, self.path, rule))

    @classmethod
    def describe(cls, source, path, rule):
        """The message: ``source: key.0.key: rule``, on one line."""
        where = '.'.join(str(p) for p in path) or '(top level)'
        return ' '.join(('%s: %s: %s' % (source, where, rule)).splitlines())

    @classmethod
    def shown(cls, value):
        """A value as a message shows it (JSON)."""
        return json.dumps(value, default=repr)


class Refusal(DocumentError):
    """A value a shared check refused, not yet in a document's words.

    ``rule`` may hold ``{got}``: the value, as the document's error shows
    it (:meth:`as_error`).
    """

    def __init__(self, source, path, rule, value=None):
        self.template = rule
        self.value = value
        super().__init__(source, path, self._rule(DocumentError))

    def _rule(self, error):
        return self.template.replace('{got}', error.shown(self.value))

    def as_error(self, error):
        """This refusal as an ``error`` (a :class:`DocumentError` class)."""
        return error(self.source, self.path, self._rule(error))


def refuse(source, path, rule, value=None):
    """Raise a :class:`Refusal`; ``{got}`` in ``rule`` shows ``value``."""
    raise Refusal(source, path, rule, value)


@contextlib.contextmanager
def raised_as(error):
    """Raise the refusals of the shared checks within as ``error``."""
    try:
        yield
    except Refusal as exc:
        raise exc.as_error(error) from None


class _Absent(object):
    """A key the document leaves out (a document written before it)."""

    def __repr__(self):
        return 'ABSENT'

    def __bool__(self):
        return False

    # One of it: copies and pickles are it.
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        return 'ABSENT'


ABSENT = _Absent()


def given(value, default=None):
    """``value``, or ``default`` for a key the document leaves out."""
    return default if value is ABSENT else value


# --- the keys and the parts of a document ----------------------------------

def key(check, required=False, default=ABSENT, default_factory=None,
        missing=ABSENT):
    """A key of a part of a document: a dataclass field named as the key.

    :param check: the rule of its value, ``check(value, source, path)``.
    :param required: a part that leaves the key out is refused
        (``missing``).
    :param default: the field's default (:data:`ABSENT`: left out).
    :param default_factory: makes the default instead (``tuple``, ...).
    :param missing: what the key reads as when the part leaves it out
        (checked as if the part held it); by default the part's
        :attr:`Document.missing`.
    """
    metadata = {'check': check, 'required': required}
    if missing is not ABSENT:
        metadata['missing'] = missing
    if default_factory is not None:
        return dataclasses.field(default_factory=default_factory,
                                 metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def keys(part):
    """The keys of a part (its class, or one of it), in the order written."""
    return tuple(field.name for field in dataclasses.fields(part))


class Document(object):
    """A part of a document (or all of it): one field per key, in order.

    Subclasses are frozen dataclasses whose fields are declared with
    :func:`key`; lists given to them are kept as tuples.
    """

    # The error a refusal is raised as.
    error = DocumentError
    # What a key the part leaves out reads as: ABSENT leaves the field at
    # its default, and to_dict leaves the key out again; another value
    # (None: missing keys read as null) is checked as if the part held it.
    missing = ABSENT
    # The rule of a part that is not a JSON object.
    not_an_object = 'expected an object'

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, list):
                object.__setattr__(self, field.name, tuple(value))

    @classmethod
    def from_dict(cls, data, source, path=()):
        """Read the part from ``data`` (decoded JSON), every key checked.

        Keys it does not declare are ignored.

        :raises DocumentError: a :attr:`error`, naming ``source`` and
            ``path`` and the key under it.
        """
        path = list(path)
        with raised_as(cls.error):
            if not isinstance(data, dict):
                refuse(source, path, cls.not_an_object, data)
            values = {}
            for field in dataclasses.fields(cls):
                name = field.name
                if name in data:
                    value = data[name]
                elif field.metadata['required']:
                    refuse(source, path + [name], 'missing')
                else:
                    value = field.metadata.get('missing', cls.missing)
                    if value is ABSENT:
                        continue
                values[name] = field.metadata['check'](value, source,
                                                       path + [name])
            return cls(**values)

    @classmethod
    def from_document(cls, data, source, schema):
        """Read a whole document: a JSON object whose ``schema`` is ours.

        The schema is checked first: a document of another kind is named
        as such.
        """
        with raised_as(cls.error):
            if not isinstance(data, dict):
                refuse(source, [], 'expected a JSON object')
            exactly(schema)(data.get('schema'), source, ['schema'])
        return cls.from_dict(data, source, [])

    def to_dict(self):
        """The decoded JSON: the keys in order, without those left out."""
        return {field.name: _plain(getattr(self, field.name))
                for field in dataclasses.fields(self)
                if getattr(self, field.name) is not ABSENT}


def _plain(value):
    if isinstance(value, Document):
        return value.to_dict()
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


# --- the checks documents share --------------------------------------------
#
# Each takes ``what``, the words of what is expected: a refusal reads
# "expected <what>, got <value>".

def _expected(what):
    return 'expected %s, got {got}' % what


def _is_number(value):
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def nullable(check, null=None):
    """``check``, or ``null`` for a null value."""
    def nullable(value, source, path):
        return null if value is None else check(value, source, path)
    return nullable


def number(what, least=None, above=None, convert=None):
    """A finite number (not a boolean), at least ``least``, above ``above``.

    :param convert: applied to the value (``float``); as written without.
    """
    def number(value, source, path):
        if not _is_number(value) or (least is not None and value < least) \
                or (above is not None and value <= above):
            refuse(source, path, _expected(what), value)
        return value if convert is None else convert(value)
    return number


def whole(what, least=0, most=None):
    """An integer (not a boolean) from ``least`` to ``most``."""
    def whole(value, source, path):
        if not _is_int(value) or value < least or (
                most is not None and value > most):
            refuse(source, path, _expected(what), value)
        return value
    return whole


def text(what='a non-empty string', empty=False, blank=True):
    """A string: non-empty unless ``empty``, not blank unless ``blank``."""
    def text(value, source, path):
        if not isinstance(value, str) or (not empty and not value) or (
                not blank and not value.strip()):
            refuse(source, path, _expected(what), value)
        return value
    return text


def choice(choices, what=None, check=None):
    """One of ``choices``, after ``check`` if given.

    The refusal reads "expected <what>, got <value>", or without ``what``
    "<value> is not one of <choices>".
    """
    rule = (_expected(what) if what is not None
            else '{got} is not one of %s' % ', '.join(choices))

    def choice(value, source, path):
        if check is not None:
            value = check(value, source, path)
        if value not in choices:
            refuse(source, path, rule, value)
        return value
    return choice


def flag(what='true or false'):
    """A boolean."""
    def flag(value, source, path):
        if not isinstance(value, bool):
            refuse(source, path, _expected(what), value)
        return value
    return flag


def exactly(expected):
    """The one value ``expected`` (a schema)."""
    def exactly(value, source, path):
        if value != expected:
            refuse(source, path, _expected(json.dumps(expected)), value)
        return value
    return exactly


def list_of(check):
    """A list, each item checked (its index named); read as a tuple."""
    def items(value, source, path):
        if not isinstance(value, list):
            refuse(source, path, 'expected a list')
        return tuple(check(item, source, list(path) + [i])
                     for i, item in enumerate(value))
    return items


def object_of(part):
    """An object read as ``part`` (a :class:`Document` class)."""
    def obj(value, source, path):
        return part.from_dict(value, source, path)
    return obj


def objects(part, item_in_source=False):
    """A list of objects read as ``part``; a tuple of them.

    :param item_in_source: an error names the item in the source
        (``file: key.N``) and the key within it in the path, rather than
        all in the path.
    """
    def objects(value, source, path):
        if not isinstance(value, list):
            refuse(source, path, 'expected a list')
        if not item_in_source:
            return tuple(part.from_dict(item, source, list(path) + [i])
                         for i, item in enumerate(value))
        found = []
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                refuse(source, list(path) + [i], part.not_an_object, item)
            found.append(part.from_dict(item, '%s: %s' % (
                source, '.'.join(str(p) for p in list(path) + [i])), []))
        return tuple(found)
    return objects


# --- files -----------------------------------------------------------------

def yaml_text(data):
    """A decoded document as the YAML of ``-f yaml``: keys in its order."""
    import yaml

    return yaml.safe_dump(data, default_flow_style=False, sort_keys=False)


def read_json(path, error):
    """The decoded JSON of a file.

    :raises DocumentError: an ``error`` naming the file.
    """
    try:
        content = fileutil.read_text(path)
    except OSError as exc:
        raise error(path, [], 'cannot read the file: %s' % exc.strerror)
    except UnicodeDecodeError:
        raise error(path, [], 'not UTF-8 text')
    try:
        return json.loads(content)
    except ValueError as exc:
        raise error(path, [], 'not valid JSON: %s' % exc)


# A directory of documents (a fleet's host profiles, a cloud's
# observations): at most this many files, of at most this many bytes in
# all, so that a wrong directory is refused at once with memory bounded.
FILE_COUNT_LIMIT = 100000
DIRECTORY_BYTES_LIMIT = 1024 * 1024 * 1024


def json_files(directory, error, what):
    """The ``*.json`` files of ``directory``, in name order.

    :param what: the kind of document, for the message of a directory
        without one.
    :raises DocumentError: an ``error``, when ``directory`` is not one,
        holds none, or holds more than :data:`FILE_COUNT_LIMIT` files or
        :data:`DIRECTORY_BYTES_LIMIT` bytes of them.
    """
    if not os.path.isdir(directory):
        raise error(directory, [], 'not a directory')
    paths, size = [], 0
    try:
        entries = os.scandir(directory)
    except OSError as exc:
        raise error(directory, [], 'cannot read the directory: %s'
                    % exc.strerror)
    with entries:
        for entry in entries:
            if not entry.name.endswith('.json') or entry.name[0] == '.':
                continue
            paths.append(entry.path)
            if len(paths) > FILE_COUNT_LIMIT:
                raise error(directory, [], 'more than %d *.json files; '
                            'allowed: at most %d %ss in one directory'
                            % (FILE_COUNT_LIMIT, FILE_COUNT_LIMIT, what))
            try:
                size += entry.stat().st_size
            except OSError:
                continue  # reading it names the problem
            if size > DIRECTORY_BYTES_LIMIT:
                raise error(directory, [], 'its *.json files hold more '
                            'than %d MiB; allowed: at most %d MiB of %ss'
                            % (DIRECTORY_BYTES_LIMIT // (1024 * 1024),
                               DIRECTORY_BYTES_LIMIT // (1024 * 1024),
                               what))
    if not paths:
        raise error(directory, [], 'no *.json %s in the directory' % what)
    return sorted(paths)
