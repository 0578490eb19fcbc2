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
"""Writing files so that a reader sees the old content or the new, never half.

Shared by the discovery tool (Nova provider configs, which nova-compute
refuses to start on if they are broken) and the planner's reports. Imports
nothing from Nova.
"""

import os
import tempfile


def default_mode():
    """The permissions a plain ``open(path, 'w')`` would give."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def stage(directory, name, data, mode=None):
    """Write ``data`` to a synced temporary file beside ``name``.

    The temporary file is named ``.NAME.*.tmp``, so globs such as Nova's
    ``*.yaml`` never pick it up. Returns its path; the caller renames it
    into place with ``os.replace`` or removes it with :func:`discard`.
    """
    if isinstance(data, str):
        data = data.encode('utf-8')
    fd, tmp = tempfile.mkstemp(prefix='.%s.' % name, suffix='.tmp',
                               dir=directory)
    try:
        with os.fdopen(fd, 'wb') as f:
            f.write(data)
            f.flush()
            os.fchmod(f.fileno(), default_mode() if mode is None else mode)
            os.fsync(f.fileno())
    except BaseException:
        discard([tmp])
        raise
    return tmp


def discard(paths):
    """Remove temporary files; those already gone are fine."""
    for path in paths:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def fsync_dir(directory):
    """Make renames in ``directory`` durable, where the platform can."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomic(path, data, mode=None):
    """Replace ``path`` with ``data`` or leave it as it was.

    :raises OSError: when the directory or the file cannot be written; the
        old file is then untouched and no temporary file is left.
    """
    directory = os.path.dirname(os.path.abspath(path))
    tmp = stage(directory, os.path.basename(path), data, mode=mode)
    try:
        os.replace(tmp, path)
    except BaseException:
        discard([tmp])
        raise
    fsync_dir(directory)


# The largest file any of the tools reads (a scenario, a trace, an
# observation, a nova.conf): a device or a runaway file (/dev/zero) is
# refused by its size, not read into memory.
READ_LIMIT = 64 * 1024 * 1024


class TooLarge(OSError):
    """A file larger than the bound; ``strerror`` names the bound."""


def read_bytes(path, limit=None):
    """The content of ``path``: at most ``limit`` bytes.

    ``limit``: :data:`READ_LIMIT` when None. Reads at most ``limit`` + 1
    bytes, whatever the file is (a FIFO, a
    device), so that memory stays bounded.

    :raises TooLarge: (an OSError) when the file holds more than ``limit``
        bytes; its ``strerror`` names the bound.
    :raises OSError: when the file cannot be read.
    """
    if limit is None:
        limit = READ_LIMIT
    with open(path, 'rb') as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(0, 'larger than the %d MiB a file may hold'
                       % (limit // (1024 * 1024)), path)
    return data


def read_text(path, limit=None):
    """The UTF-8 text of ``path``, bounded as :func:`read_bytes`.

    :raises UnicodeDecodeError: when the file is not UTF-8 text.
    """
    return read_bytes(path, limit).decode('utf-8')
