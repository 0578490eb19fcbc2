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
"""Progress of long commands on stderr: the one policy of the planner.

* stderr a terminal: one line, rewritten in place with each update and
  erased when the command ends;
* stderr a pipe or a file: plain lines, at a quiet rate: a line for each
  stage (an update without a count), for each tenth of a counted stage
  (``done`` out of ``total``: its first update, then each time ``done``
  reaches another tenth of ``total``), and for the first and every
  :data:`ROUNDS_PER_LINE`-th update of a count without a total (rounds);
* ``-q`` or ``--no-progress``: nothing.

Which updates make a line depends on the counts only, never on a clock, so
the same run prints the same lines. stdout, whatever ``-f`` says, is never
touched.
"""

import os

# Width of the line when the terminal does not say.
DEFAULT_WIDTH = 80
# Off a terminal, a count without a total (rounds) is a line at its first
# update and then once in this many.
ROUNDS_PER_LINE = 10
# Off a terminal, a counted stage is a line per this share of its total.
TENTHS = 10


def add_argument(parser):
    """The --no-progress option of a command that shows progress."""
    parser.add_argument(
        '--no-progress', action='store_true',
        help='do not show progress on stderr (on a terminal one line, '
             'rewritten; otherwise a line per stage and per tenth of it; '
             'none with -q)')
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
    """Progress on ``stream``: a rewritten line, or lines at a quiet rate."""

    def __init__(self, stream, label, enabled=True, terminal=None):
        """:param terminal: None: whether ``stream`` is a terminal."""
        self.stream = stream
        self.label = label
        self.enabled = enabled
        self.terminal = is_terminal(stream) if terminal is None else terminal
        self._shown = 0
        # Off a terminal: (total, done, tenth) of the last counted update.
        self._last = None

    def update(self, text, done=None, total=None):
        """Show ``label: [done/total] text`` (see the module's policy)."""
        if not self.enabled:
            return
        count = ''
        if done is not None:
            count = ('[%d/%d] ' % (done, total) if total
                     else '[%d] ' % done)
        line = '%s: %s%s' % (self.label, count, text)
        if not self.terminal:
            if self._wanted(done, total):
                self.stream.write(line + '\n')
                self.stream.flush()
            return
        # The last column stays empty: a full line would wrap on some
        # terminals, and \r would then rewrite only the second row.
        line = line[:max(_width(self.stream) - 1, 10)]
        self.stream.write('\r' + line.ljust(self._shown))
        self.stream.flush()
        self._shown = len(line)

    def _wanted(self, done, total):
        """Whether an update off a terminal is a line of its own."""
        if done is None:
            self._last = None
            return True
        last, self._last = self._last, (total, done,
                                        done * TENTHS // total if total
                                        else done // ROUNDS_PER_LINE)
        if last is None or last[0] != total or done < last[1]:
            # A new counted stage.
            return True
        return self._last[2] > last[2]

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
               and command.app.options.verbose_level > 0)
    return Progress(command.app.stderr, label, enabled=enabled)
