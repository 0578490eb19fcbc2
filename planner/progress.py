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
"""Progress of long commands: one line on stderr, rewritten in place.

The line is written only when stderr is a terminal: a pipe, a file or a
test's captured stream gets nothing, so no progress ever mixes with what a
script reads (stdout, whatever ``-f`` says, is never touched). ``-q`` and
``--no-progress`` turn it off. Updates are shown as they come, with no
timer, so what a command shows depends only on what it did.
"""

import os

# Width of the line when the terminal does not say.
DEFAULT_WIDTH = 80


def add_argument(parser):
    """The --no-progress option of a command that shows progress."""
    parser.add_argument(
        '--no-progress', action='store_true',
        help='do not show progress on stderr (it is shown only when stderr '
             'is a terminal, and not with -q)')
    return parser


def is_terminal(stream):
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        # No isatty, or a closed stream.
        return False


def _width(stream):
    try:
        return os.get_terminal_size(stream.fileno()).columns or DEFAULT_WIDTH
    except (AttributeError, OSError, ValueError):
        # io.UnsupportedOperation is an OSError and a ValueError.
        return DEFAULT_WIDTH


class Progress(object):
    """One status line on a terminal, rewritten with each update."""

    def __init__(self, stream, label, enabled=None):
        """:param enabled: None: when ``stream`` is a terminal."""
        self.stream = stream
        self.label = label
        self.enabled = is_terminal(stream) if enabled is None else enabled
        self._shown = 0

    def update(self, text, done=None, total=None):
        """Show ``label: [done/total] text`` in place of the last line."""
        if not self.enabled:
            return
        count = ''
        if done is not None:
            count = ('[%d/%d] ' % (done, total) if total
                     else '[%d] ' % done)
        line = '%s: %s%s' % (self.label, count, text)
        # The last column stays empty: a full line would wrap on some
        # terminals, and \r would then rewrite only the second row.
        line = line[:max(_width(self.stream) - 1, 10)]
        self.stream.write('\r' + line.ljust(self._shown))
        self.stream.flush()
        self._shown = len(line)

    def clear(self):
        """Erase the line, so that what follows starts on a clean one."""
        if self.enabled and self._shown:
            self.stream.write('\r%s\r' % (' ' * self._shown))
            self.stream.flush()
        self._shown = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.clear()
        return False


def for_command(command, parsed_args, label):
    """The Progress of a cliff command (its stderr, -q, --no-progress)."""
    enabled = (not getattr(parsed_args, 'no_progress', False)
               and command.app.options.verbose_level > 0
               and is_terminal(command.app.stderr))
    return Progress(command.app.stderr, label, enabled=enabled)
