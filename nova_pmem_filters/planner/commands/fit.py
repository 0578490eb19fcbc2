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
"""Tables and messages fitted to the width of the terminal, between words.

Text breaks after a space, a ``,`` or a ``;``. A word longer than its
column breaks after a ``:``, ``=``, ``+``, ``/`` or ``.`` in it, then
after a ``-`` or ``_`` (``mm-192-512`` stays whole wherever it fits). A
header breaks after a space or an ``_``, and only once no cell can wrap
between words any more. Numbers never wrap, and a table is never cut
inside a word: one that cannot fit so overflows the terminal.

Imported to list the commands: the standard library only (cliff and
prettytable when a table is printed).
"""

import os
import textwrap

# The width of a table or a message when nothing says the terminal's:
# stdout is a pipe or a file, and COLUMNS is not set.
DEFAULT_WIDTH = 100
# Where a text may break, coarsest first: between words, then inside a
# word that is still too long.
_LEVELS = (' ,;', ':=+/.', '-_')
WORDS, NAMES, PARTS, CUT = range(4)
# A header breaks between the words of its name ("cost_per_vm USD").
_HEADER_LEVELS = (' ', '', '_')


def terminal_width(stream, max_width=0):
    """The columns to fit output on ``stream`` to, or None if unknown.

    ``max_width`` (cliff's --max-width) when above 0, else COLUMNS when it
    is a positive number, else the width of the terminal ``stream`` is.
    """
    if max_width and max_width > 0:
        return max_width
    columns = os.environ.get('COLUMNS', '')
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        if stream.isatty():
            return os.get_terminal_size(stream.fileno()).columns or None
    except (AttributeError, OSError, ValueError):
        # No terminal behind it (io.UnsupportedOperation is both).
        pass
    return None


def _split_after(text, ends):
    pieces, start = [], 0
    for i, char in enumerate(text):
        if char in ends:
            pieces.append(text[start:i + 1])
            start = i + 1
    if start < len(text):
        pieces.append(text[start:])
    return pieces


def _pieces(text, width, depth, levels=_LEVELS):
    """The pieces ``text`` breaks into at ``width``, at most ``depth`` deep.

    A piece longer than ``width`` is broken at the next level, down to
    ``depth``; at CUT, what is still too long is cut.
    """
    if len(text.rstrip()) <= width or depth < 0:
        return [text]
    if not levels:
        if width < 1:
            return [text]
        return [text[i:i + width] for i in range(0, len(text), width)]
    pieces = []
    for piece in _split_after(text, levels[0]):
        pieces += _pieces(piece, width, depth - 1, levels[1:])
    return pieces


def wrap(text, width, depth=CUT, levels=_LEVELS):
    """``text`` in lines of at most ``width``, broken as the module says.

    ``depth`` is the deepest break allowed (WORDS, NAMES, PARTS or CUT);
    a piece that even it leaves too long stays whole on its line.
    """
    lines = []
    for paragraph in text.split('\n'):
        line = ''
        for piece in _pieces(paragraph, width, depth, levels):
            if line and len((line + piece).rstrip()) > width:
                lines.append(line.rstrip())
                line = piece.lstrip()
            else:
                line += piece
        lines.append(line.rstrip())
    return '\n'.join(lines)


def _longest_piece(text, depth, levels=_LEVELS):
    return max((len(p.rstrip()) for line in text.split('\n')
                for p in _pieces(line, 0, depth, levels)), default=0)


def _width(value):
    return max((len(ln) for ln in str(value).split('\n')), default=0)


# How far cells and headers break, tried in turn until the table fits:
# (cells' depth, headers' depth), None for a header kept whole. The last
# is used when none fits.
_STAGES = ((WORDS, None), (WORDS, PARTS), (NAMES, PARTS), (PARTS, PARTS))


def _minimum(name, cells, stage):
    """The narrowest a column goes at ``stage`` (cells, header depths)."""
    cell_depth, header_depth = stage
    floor = [_width(v) for v in cells if not isinstance(v, str)]
    floor += [_longest_piece(v, cell_depth) for v in cells
              if isinstance(v, str)]
    if header_depth is None:
        floor.append(len(name))
    else:
        floor.append(_longest_piece(name, header_depth, _HEADER_LEVELS))
    return max(floor)


def fit(column_names, rows, width):
    """(headers, rows) wrapped so that their table fits ``width``.

    The widest columns are narrowed to one width, the largest that fits;
    what is left over goes to the widest. A table that fits comes back as
    it was; one that cannot fit between words and parts of words
    overflows.
    """
    names = list(column_names)
    rows = [tuple(row) for row in rows]
    columns = [[row[i] for row in rows] for i in range(len(names))]
    room = width - 3 * len(names) - 1
    natural = [max([len(name)] + [_width(v) for v in cells])
               for name, cells in zip(names, columns)]
    if sum(natural) <= room:
        return names, rows
    for stage in _STAGES:
        floor = [min(n, _minimum(name, cells, stage))
                 for name, cells, n in zip(names, columns, natural)]
        if sum(floor) <= room:
            break

    def used(limit):
        return sum(max(f, min(n, limit)) for f, n in zip(floor, natural))

    limit = max(natural)
    while limit > 1 and used(limit) > room:
        limit -= 1
    limits = [max(f, min(n, limit)) for f, n in zip(floor, natural)]
    widest = natural.index(max(natural))
    limits[widest] = min(natural[widest],
                         limits[widest] + max(room - used(limit), 0))
    cell_depth, header_depth = stage
    if header_depth is not None:
        names = [wrap(name, limits[i], header_depth, _HEADER_LEVELS)
                 for i, name in enumerate(names)]
    return names, [tuple(wrap(v, limits[i], cell_depth)
                         if isinstance(v, str) and _width(v) > limits[i]
                         else v for i, v in enumerate(row)) for row in rows]


def print_table(headers, rows, stdout):
    """A table whose headers take several lines, laid out as cliff's.

    prettytable writes a header on one line: here the lines of the
    headers are the first rows, above a divider. Columns are aligned as
    cliff aligns them, by the type of the first row's cells.
    """
    from cliff.formatters import table
    import prettytable

    keys = ['%d' % i for i in range(len(headers))]
    out = prettytable.PrettyTable(keys, header=False)
    out.padding_width = 1
    for key, value in zip(keys, rows[0] if rows else ()):
        out.align[key] = table.TableFormatter.ALIGNMENTS.get(type(value),
                                                             'l')
    lines = [header.split('\n') for header in headers]
    height = max(len(h) for h in lines)
    for i in range(height):
        out.add_row([h[i] if i < len(h) else '' for h in lines],
                    divider=i == height - 1)
    for row in rows:
        out.add_row(list(row))
    stdout.write(out.get_string() + '\n')


def message(text, width, indent='    '):
    """A message in lines of at most ``width``, broken between words.

    The lines after the first are indented, so that a reader sees where
    each message starts.
    """
    return textwrap.fill(text, width, subsequent_indent=indent,
                         break_long_words=False, break_on_hyphens=False)
