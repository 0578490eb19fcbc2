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
"""Line-preserving, idempotent edits of nova.conf (an ini file).

What the devstack plugin and ``nova-pmem-planner nova-config nova-conf
--merge-into`` both do to a nova.conf that exists: every line, comment and
option already there is kept, an option is set in place, and our scheduler
classes are added once. The multi-valued ``[filter_scheduler]
available_filters`` keeps every line it has (Nova's own included) and gains
ours; ``enabled_filters`` and ``weight_classes`` start from Nova's defaults
when the file does not set them. A second edit with the same input changes
nothing.
"""

import re

from nova_pmem_filters.conf import nova_scheduler

FILTERS = 'nova_pmem_filters.filters.all_filters'
WEIGHERS = 'nova_pmem_filters.weighers.all_weighers'
_SECTION = re.compile(r'^\s*\[([^\]]+)\]\s*$')
_OPTION = re.compile(r'^([A-Za-z0-9_.-]+)\s*[=:]')


class IniFile(object):
    """Line-preserving edits of an ini file with repeated options."""

    def __init__(self, text):
        self.lines = text.splitlines()

    def text(self):
        return '\n'.join(self.lines) + '\n'

    def syntax_error(self):
        """(line number, why) of the first line oslo.config cannot parse.

        None for an ini file: blank lines, ``#`` and ``;`` comments,
        ``[section]`` headers, ``option = value`` (or ``option: value``)
        lines inside a section and their indented continuation lines. A
        YAML or JSON file fails here (an option before any section, a
        list item, a brace), before an edit could append sections to it.
        """
        section = assignment = False
        for number, line in enumerate(self.lines, 1):
            stripped = line.strip()
            if not stripped or stripped[0] in '#;':
                continue
            if line[0].isspace():
                if not assignment:
                    return number, 'an indented line continues no option'
                continue
            if _SECTION.match(line):
                section, assignment = True, False
            elif not _OPTION.match(line):
                return number, 'neither a [section] nor an option = value'
            elif not section:
                return number, 'an option before the first [section]'
            else:
                assignment = True
        return None

    def _section_range(self, section):
        start = None
        for i, line in enumerate(self.lines):
            match = _SECTION.match(line)
            if match and start is not None:
                return start, i
            if match and match.group(1).strip() == section:
                start = i + 1
        return (start, len(self.lines)) if start is not None else None

    def _option_lines(self, section, option):
        bounds = self._section_range(section)
        if bounds is None:
            return []
        start, end = bounds
        found = []
        for i in range(start, end):
            match = _OPTION.match(self.lines[i])
            if match and match.group(1) == option:
                found.append(i)
        return found

    def values(self, section, option):
        """Every value of ``option``, in file order (None if absent)."""
        found = self._option_lines(section, option)
        if not found:
            return None
        return [re.split(r'[=:]', self.lines[i], 1)[1].strip()
                for i in found]

    def _insert(self, section, after, lines):
        bounds = self._section_range(section)
        if bounds is None:
            if self.lines and self.lines[-1].strip():
                self.lines.append('')
            self.lines.append('[%s]' % section)
            self.lines.extend(lines)
            return
        if after is None:
            # At the end of the section, before its trailing blank lines.
            after = bounds[1] - 1
            while after >= bounds[0] and not self.lines[after].strip():
                after -= 1
        self.lines[after + 1:after + 1] = lines

    def add_value(self, section, option, value, defaults=()):
        """A value of a multi-valued option, once; absent: defaults first."""
        current = self.values(section, option)
        if current is None:
            self._insert(section, None, ['%s = %s' % (option, v)
                                         for v in list(defaults) + [value]
                                         if v])
            return
        if value in current:
            return
        self._insert(section, self._option_lines(section, option)[-1],
                     ['%s = %s' % (option, value)])

    def set(self, section, option, value):
        """One line ``option = value`` in place of any there were."""
        found = self._option_lines(section, option)
        line = '%s = %s' % (option, value)
        if found and len(found) == 1 and self.lines[found[0]] == line:
            return
        for i in reversed(found[1:]):
            del self.lines[i]
        if found:
            self.lines[found[0]] = line
        else:
            self._insert(section, None, [line])

    def append_to_list(self, section, option, items, default):
        """Append ``items`` not in a comma-list option (oslo: last wins)."""
        current = self.values(section, option)
        listed = ([v.strip() for v in current[-1].split(',') if v.strip()]
                  if current else list(default))
        wanted = listed + [i for i in items if i not in listed]
        if current and wanted == listed and len(current) == 1:
            return
        self.set(section, option, ','.join(wanted))


def nova_default(group, name):
    """The default of one of Nova's scheduler options, as a list."""
    return list(nova_scheduler.default(group, name) or ())


def add_scheduler_classes(ini, filters=(), weighers=False):
    """Make our filters available, enable ``filters``, add our weighers."""
    fs = nova_scheduler.FILTER_SCHEDULER
    ini.add_value(fs, 'available_filters', FILTERS,
                  defaults=nova_default(fs, 'available_filters'))
    if filters:
        ini.append_to_list(fs, 'enabled_filters', list(filters),
                           nova_default(fs, 'enabled_filters'))
    if weighers:
        ini.append_to_list(fs, 'weight_classes', [WEIGHERS],
                           nova_default(fs, 'weight_classes'))
