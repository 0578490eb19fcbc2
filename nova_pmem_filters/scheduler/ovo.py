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
"""Reading Nova's versioned objects without lazy-loads.

An unset field of a Nova object lazy-loads with a database query when it is
read; in the scheduler, that is a query per instance per host. These
helpers read only what is set.
"""

from oslo_versionedobjects import base as ovo_base

# VersionedObject.obj_attr_is_set builds the list of all field names on
# every call (some 4 us for an Instance); the ledger asks it of every
# instance of every tiered host on every request.
_OVO_ATTR_IS_SET = ovo_base.VersionedObject.obj_attr_is_set
FLAVOR_ATTR = ovo_base._get_attrname('flavor')
NUMA_ATTR = ovo_base._get_attrname('numa_topology')


def loaded(obj, name):
    """``obj.name`` if it is set, without a lazy-load (a database query)."""
    is_set = getattr(obj, 'obj_attr_is_set', None)
    if (getattr(is_set, '__func__', None) is _OVO_ATTR_IS_SET
            and name in obj.fields):
        # The same test as that obj_attr_is_set, without the list.
        if not hasattr(obj, ovo_base._get_attrname(name)):
            return None
    elif is_set is not None and not is_set(name):
        return None
    return getattr(obj, name, None)


def loaded_flavor(inst):
    """``loaded(inst, 'flavor')``, quicker for the common Instance."""
    is_set = getattr(inst, 'obj_attr_is_set', None)
    if (getattr(is_set, '__func__', None) is _OVO_ATTR_IS_SET
            and 'flavor' in inst.fields):
        return (getattr(inst, 'flavor', None)
                if hasattr(inst, FLAVOR_ATTR) else None)
    return loaded(inst, 'flavor')


def pushed(inst):
    """Whether nova-compute pushed this Instance object (its flavor is in).

    The scheduler builds bare objects (a UUID) itself; nova-compute pushes
    full ones (``[filter_scheduler] track_instance_changes``).
    """
    try:
        return FLAVOR_ATTR in inst.__dict__
    except AttributeError:
        return False


def node_key(host_state):
    return (host_state.host, host_state.nodename)
