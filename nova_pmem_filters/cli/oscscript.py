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
"""Shell scripts of ``openstack`` commands that can be run again.

``nova-pmem-planner nova-config script`` and ``nova-pmem-discover
--aggregate`` print aggregates and flavors as a POSIX shell script that
creates what is missing, sets what differs and leaves everything else as
it is: a second run changes nothing and says so. It needs the
``openstack`` client with admin credentials (``OS_CLOUD`` or ``OS_*``)
and ``python3`` (which the client brings) to read its JSON.

A flavor cannot be changed in Nova: one of the same name with other vCPUs,
RAM or disk stops the script with a message, before anything else of that
flavor is touched.
"""

import shlex

# Functions the script's lines call. Each prints one line per object:
# "created", "set" (with what), "added" or "unchanged", and counts changes.
PRELUDE = r'''set -eu

changes=0

# _props KIND NAME: the properties of an aggregate or flavor, as JSON.
_props() {
    openstack "$1" show -f json -c properties "$2"
}

# _missing JSON KEY=VALUE...: the pairs JSON's properties do not have.
_missing() {
    python3 -c '
import json, re, sys
props = json.loads(sys.argv[1]).get("properties") or {}
if not isinstance(props, dict):
    # Older clients print properties as "key='"'"'value'"'"', ...".
    props = dict(re.findall(r"([^\s=,]+)='"'"'([^'"'"']*)'"'"'", props))
for pair in sys.argv[2:]:
    key, _, value = pair.partition("=")
    if props.get(key) != value:
        print(pair)
' "$@"
}

# _set KIND NAME KEY=VALUE...: set the pairs that differ, in one call.
_set() {
    kind=$1 name=$2
    shift 2
    missing=$(_missing "$(_props "$kind" "$name")" "$@")
    if [ -z "$missing" ]; then
        echo "unchanged: $kind $name properties"
        return
    fi
    set --
    # One pair per line; values never hold a newline.
    while IFS= read -r pair; do
        set -- "$@" --property "$pair"
    done <<EOF
$missing
EOF
    openstack "$kind" set "$@" "$name"
    echo "set: $kind $name" $(printf '%s\n' "$missing" | tr '\n' ' ')
    changes=$((changes + 1))
}

# aggregate NAME KEY=VALUE...: the aggregate, with these properties.
aggregate() {
    name=$1
    shift
    if openstack aggregate show -f value -c id "$name" >/dev/null 2>&1; then
        echo "unchanged: aggregate $name exists"
    else
        openstack aggregate create "$name" >/dev/null
        echo "created: aggregate $name"
        changes=$((changes + 1))
    fi
    if [ $# -gt 0 ]; then
        _set aggregate "$name" "$@"
    fi
}

# aggregate_host NAME HOST: HOST in the aggregate.
aggregate_host() {
    if openstack aggregate show -f json -c hosts "$1" | python3 -c '
import json, sys
sys.exit(sys.argv[1] not in (json.load(sys.stdin).get("hosts") or []))
' "$2"; then
        echo "unchanged: aggregate $1 has host $2"
    else
        openstack aggregate add host "$1" "$2" >/dev/null
        echo "added: host $2 to aggregate $1"
        changes=$((changes + 1))
    fi
}

# flavor NAME VCPUS RAM_MB DISK_GB KEY=VALUE...: the flavor, with these
# properties. Nova cannot change a flavor: a different one stops here.
flavor() {
    name=$1 vcpus=$2 ram=$3 disk=$4
    shift 4
    if found=$(openstack flavor show -f json -c vcpus -c ram -c disk \
            "$name" 2>/dev/null); then
        if ! python3 -c '
import json, sys
f = json.loads(sys.argv[1])
sys.exit([f["vcpus"], f["ram"], f["disk"]] != [int(a) for a in sys.argv[2:]])
' "$found" "$vcpus" "$ram" "$disk"; then
            echo "error: flavor $name exists with other vCPUs, RAM or" \
                 "disk than $vcpus vCPU, $ram MB, $disk GB ($found);" \
                 "flavors cannot change: delete it or use another name" >&2
            exit 1
        fi
        echo "unchanged: flavor $name exists"
    else
        openstack flavor create --vcpus "$vcpus" --ram "$ram" \
            --disk "$disk" "$name" >/dev/null
        echo "created: flavor $name"
        changes=$((changes + 1))
    fi
    if [ $# -gt 0 ]; then
        _set flavor "$name" "$@"
    fi
}
'''

EPILOGUE = 'echo "$changes change(s)"\n'


def _words(*words):
    return ' '.join(shlex.quote(str(w)) for w in words)


def aggregate_line(name, metadata=()):
    """``aggregate NAME KEY=VALUE...``: the aggregate with its metadata."""
    return _words('aggregate', name, *['%s=%s' % kv for kv in metadata])


def aggregate_host_line(name, host):
    return _words('aggregate_host', name, host)


def flavor_line(name, vcpus, ram_mb, disk_gb, specs=()):
    """``flavor NAME VCPUS RAM DISK KEY=VALUE...``."""
    return _words('flavor', name, int(vcpus), int(ram_mb), int(disk_gb),
                  *['%s=%s' % kv for kv in specs])


def create_aggregate_command(name):
    """One line that creates aggregate ``name`` unless it exists."""
    name = shlex.quote(name)
    return ('openstack aggregate show %s >/dev/null 2>&1 || '
            'openstack aggregate create %s >/dev/null' % (name, name))


def add_host_command(name, host):
    """One line that adds ``host`` to aggregate ``name`` unless it is in."""
    name, host = shlex.quote(name), shlex.quote(host)
    return ('if ! openstack aggregate show -f json -c hosts %s | python3 -c '
            '\'import json, sys; sys.exit(sys.argv[1] not in '
            'json.load(sys.stdin).get("hosts", []))\' %s; '
            'then openstack aggregate add host %s %s >/dev/null; fi'
            % (name, host, name, host))


def script(lines, comments=()):
    """The whole script: ``comments``, the functions, ``lines``."""
    head = ['#!/bin/sh'] + ['# %s' % c if c else '#' for c in comments]
    return '\n'.join(head + ['', PRELUDE.rstrip('\n'), ''] + list(lines)
                     + ['']) + EPILOGUE
