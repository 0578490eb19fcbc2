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
"""The Nova settings that make Nova admit what the planner counted.

For each node configuration: the aggregate metadata of its host profile and
the compute-node allocation settings; for each workload: the flavor and its
``pmem:`` extra specs; for the scheduler: the ``[pmem]`` options of the
policies. Each constraint of the node model maps onto one Nova mechanism:

=============== ==========================================================
constraint      Nova mechanism
=============== ==========================================================
vcpu            Placement VCPU inventory: ``cpu_allocation_ratio``
memory          Placement MEMORY_MB inventory: ``reserved_host_memory_mb``
                and ``ram_allocation_ratio`` (memory cap x flavor RAM /
                RAM really used), so ``(total - reserved) x ratio / flavor
                RAM`` is the planner's memory bound
dram_cache      PmemCacheFilter: aggregate ``pmem_dram_cache_gb`` (and on
                ``cxl_kmem`` ``pmem_kernel_tiering``, always written),
                flavor ``pmem:hot_ratio`` (or ``hw:numa_nodes``: whole
                RAM on ``cxl_kmem``), ``[pmem] cache_overcommit_ratio``
mode            PmemModeFilter: aggregate ``pmem_mode``, flavor
                ``pmem:modes`` / ``hw:pmem``
numa_nodes,     flavor ``hw:numa_nodes``; NUMATopologyFilter with the
socket_vcpu,    same ``cpu_allocation_ratio`` and ``ram_allocation_ratio``
socket_memory   per host cell (the ratio is chosen so that both the host's
                and a cell's memory bound are the planner's)
socket_dram_    PmemCacheFilter per cell: the host's ``pmem_dram_cache_gb``
cache           split evenly over its cells
=============== ==========================================================

The per-cell cache key ``pmem_dram_cache_gb_per_cell`` is not emitted: the
planner's sockets are alike, so its value would be the scheduler's even
split anyway, and writing it needs the hosts' NUMA node ids, which a
configuration does not know (they are usually, not always, 0 to S-1).

With ``placement_accounting``, the dram_cache constraint is also made
atomic in Placement: each configuration's hosts report their DRAM as
``CUSTOM_NEAR_MEMORY_MB`` through Nova's provider config, and each flavor
requests its hot MB of it (``resources:CUSTOM_NEAR_MEMORY_MB``), both from
the shared core (``placement.near_memory_inventory``,
``placement.near_memory_spec``).
"""

import shlex

import yaml

from nova_pmem_filters.cli import inifile
from nova_pmem_filters.cli import oscscript
from nova_pmem_filters.conf import nova_scheduler
from nova_pmem_filters.core.formats import providerconfig
from nova_pmem_filters.core.rules import classes
from nova_pmem_filters.core.rules import placement

from nova_pmem_filters.planner import admission
from nova_pmem_filters.planner import model

COLUMNS = ('scope', 'target', 'key', 'value', 'command')


def aggregate_name(config_name):
    return 'pmem-%s' % config_name


# Where nova-compute reads provider configs by default.
PROVIDER_CONFIG_FILE = '/etc/nova/provider_config/nova-pmem-near-memory.yaml'


# The root disk of the flavors the plan creates, GB. Not 0: Nova's policy
# os_compute_api:servers:create:zero_disk_flavor lets only admins boot a
# zero-disk flavor from an image. The planner does not plan disk: hosts
# need this much local disk (or shared storage) per VM.
FLAVOR_DISK_GB = 10


# Roles of the nova.conf rows: the schedulers, and the computes of one
# aggregate (``compute:<aggregate>``).
SCHEDULER_ROLE = 'scheduler'


def compute_role(aggregate):
    return 'compute:%s' % aggregate


def _nova_default_list(option):
    return inifile.nova_default(nova_scheduler.FILTER_SCHEDULER, option)


def _joined(defaults, ours):
    return ','.join(list(defaults) + [c for c in ours if c not in defaults])


def rows(scen, workloads=None, placement_accounting=False):
    """Every Nova setting of the plan, as dicts.

    Each has the public columns (:data:`COLUMNS`) and what the script and
    the nova.conf snippet are made of: ``object`` (the aggregate or flavor
    name, or the nova.conf role), ``section``, ``option`` and ``items``
    (the items a list option gains), ``nova_default`` (a line of Nova's
    own default, which a merge leaves to the file), ``flavor`` ((vCPUs,
    RAM MB, disk GB) of a flavor's create row). The ``value`` of a
    nova.conf row is the whole value of its line: a list option's starts
    with Nova's defaults, and a multi-valued option has a row per line.
    """
    policies = scen.policies
    chosen = [scen.workloads[name] for name in (workloads or scen.workloads)]
    result = []

    def add(scope, target, key, value, command, **extra):
        row = {'scope': scope, 'target': target, 'key': key,
               'value': admission.fmt(value), 'command': command}
        row.update(extra)
        result.append(row)

    def conf(role, target, section, option, value, items=None,
             nova_default=False):
        # ``value`` is the whole value of the nova.conf line: a list
        # option's includes Nova's defaults; ``items`` are what we add.
        add('scheduler' if role == SCHEDULER_ROLE else 'compute', target,
            '[%s] %s' % (section, option), value,
            '[%s] %s = %s' % (section, option, admission.fmt(value)),
            object=role, section=section, option=option, items=items,
            line_value=admission.fmt(value), nova_default=nova_default)

    for name, config in scen.configs.items():
        agg = aggregate_name(name)
        add('aggregate', agg, 'create', agg,
            'openstack aggregate create %s' % shlex.quote(agg), object=agg)
        for key, value in sorted(model.aggregate_metadata(config).items()):
            add('aggregate', agg, key, value,
                'openstack aggregate set --property %s %s'
                % (shlex.quote('%s=%s' % (key, admission.fmt(value))),
                   shlex.quote(agg)), object=agg)
        reserved, ratio = admission.compute_memory(scen, name, chosen)
        role = compute_role(agg)
        target = 'nova.conf of the hosts in %s' % agg
        conf(role, target, 'DEFAULT', 'reserved_host_memory_mb', reserved)
        conf(role, target, 'DEFAULT', 'ram_allocation_ratio',
             admission.ratio_text(ratio))
        conf(role, target, 'DEFAULT', 'cpu_allocation_ratio',
             admission.fmt(float(policies.cpu_overcommit)))
        if placement_accounting:
            inventory = admission.near_memory_inventory(config, policies,
                                                        ratio)
            args, extra = _provider_row(agg, role, inventory)
            add(*args, **extra)

    sched = 'nova.conf of the schedulers'
    fs = nova_scheduler.FILTER_SCHEDULER
    # A multi-valued option: a row per line, Nova's own first (without
    # them Nova's default enabled_filters are not available). A merge
    # keeps a file's own lines and adds ours (``nova_default``).
    for value in _nova_default_list('available_filters'):
        conf(SCHEDULER_ROLE, sched, fs, 'available_filters', value,
             items=[value], nova_default=True)
    conf(SCHEDULER_ROLE, sched, fs, 'available_filters',
         classes.ALL_FILTERS, items=[classes.ALL_FILTERS])
    filters = list(classes.FILTERS)
    if any(w.numa_nodes for w in chosen):
        # Not in Nova's default list; without it no scheduler checks the
        # cells and the compute's claim applies no allocation ratio.
        filters.insert(0, 'NUMATopologyFilter')
    conf(SCHEDULER_ROLE, sched, fs, 'enabled_filters',
         _joined(_nova_default_list('enabled_filters'), filters),
         items=filters)
    conf(SCHEDULER_ROLE, sched, fs, 'weight_classes',
         _joined(_nova_default_list('weight_classes'),
                 [classes.ALL_WEIGHERS]), items=[classes.ALL_WEIGHERS])
    conf(SCHEDULER_ROLE, sched, 'pmem', 'cache_overcommit_ratio',
         admission.fmt(float(policies.cache_overcommit)))

    for workload in chosen:
        flavor = workload.flavor_name
        add('flavor', workload.name, 'create',
            '%d vCPU, %d MB' % (workload.vcpus, workload.ram_mb),
            'openstack flavor create --vcpus %d --ram %d --disk %d %s'
            % (workload.vcpus, workload.ram_mb, FLAVOR_DISK_GB,
               shlex.quote(flavor)),
            object=flavor,
            flavor=(workload.vcpus, workload.ram_mb, FLAVOR_DISK_GB))
        specs = dict(workload.extra_specs)
        if placement_accounting:
            specs.update(placement.near_memory_spec(workload.ram_mb,
                                                    workload.hot_ratio))
        for key, value in sorted(specs.items()):
            add('flavor', workload.name, key, value,
                'openstack flavor set --property %s %s'
                % (shlex.quote('%s=%s' % (key, admission.fmt(value))),
                   shlex.quote(flavor)), object=flavor)
    return result


def _provider_row(agg, role, inventory):
    """The ``provider`` row of an aggregate's computes, as (args, extra)."""
    config = providerconfig.near_memory_provider_config(inventory)
    return (('provider', '%s on the hosts in %s' % (PROVIDER_CONFIG_FILE, agg),
             placement.NEAR_MEMORY_RC, 'total=%d allocation_ratio=%s'
             % (inventory['total'],
                admission.fmt(inventory['allocation_ratio'])),
             providerconfig.dumps(config, _provider_source(role),
                                  one_line=True)),
            {'object': role, 'provider_config': config})


def settings(scen, workloads=None, placement_accounting=False):
    """DataFrame of every Nova setting that realises the scenario's plan.

    :param workloads: names of the workloads to plan for (default all); the
        memory allocation ratio of a configuration is the smallest any of
        them needs, so that none is over-admission.admitted.
    :param placement_accounting: also emit the ``CUSTOM_NEAR_MEMORY_MB``
        provider-config inventory of each configuration and the flavor
        extra spec that requests it.
    """
    return frame(rows(scen, workloads, placement_accounting))


def frame(plan_rows):
    """The public columns of ``plan_rows``, as a DataFrame."""
    import pandas as pd

    return pd.DataFrame(plan_rows, columns=COLUMNS)


def script(plan_rows, comments=()):
    """The aggregates and flavors of ``plan_rows`` as a shell script.

    Idempotent (:mod:`nova_pmem_filters.cli.oscscript`): run again, it changes
    nothing. Hosts are not added: the plan does not know them
    (``nova-pmem-discover --aggregate`` on each host does).
    """
    objects = {}
    for row in plan_rows:
        if row['scope'] not in ('aggregate', 'flavor'):
            continue
        entry = objects.setdefault((row['scope'], row['object']),
                                   {'pairs': [], 'flavor': None})
        if row['key'] == 'create':
            entry['flavor'] = row.get('flavor')
        else:
            entry['pairs'].append((row['key'], row['value']))
    lines = []
    for (scope, name), entry in objects.items():
        if scope == 'aggregate':
            lines.append(oscscript.aggregate_line(name, entry['pairs']))
        else:
            lines.append(oscscript.flavor_line(name, *entry['flavor'],
                                               specs=entry['pairs']))
    return oscscript.script(lines, comments)


def roles(plan_rows):
    """The nova.conf roles of ``plan_rows``, in order."""
    found = []
    for row in plan_rows:
        if row['scope'] in ('compute', 'scheduler') and \
                row['object'] not in found:
            found.append(row['object'])
    return found


def _role_rows(plan_rows, role):
    chosen = [r for r in plan_rows if r.get('object') == role
              and r['scope'] in ('compute', 'scheduler')]
    if not chosen:
        raise KeyError(role)
    return chosen


def nova_conf(plan_rows, role, comments=()):
    """The nova.conf snippet of one role: whole lines, section by section.

    Standalone, as a file of its own in a config directory (oslo.config
    reads ``/etc/nova/nova.conf.d/*.conf`` after nova.conf): list options
    start from Nova's defaults.
    """
    ini = inifile.IniFile('\n'.join('# %s' % c if c else '#'
                                    for c in comments))
    for row in _role_rows(plan_rows, role):
        if row['option'] == 'available_filters':
            ini.add_value(row['section'], row['option'], row['line_value'])
        else:
            ini.set(row['section'], row['option'], row['line_value'])
    return ini.text().lstrip('\n')


def provider_config(plan_rows, role, comments=()):
    """The provider config file of the computes of ``role``, as YAML.

    From the ``provider`` row of that role (``placement_accounting``), for
    ``PROVIDER_CONFIG_FILE`` on each of its hosts: checked as Nova reads it
    (:func:`providerconfig.dumps`).
    """
    found = [r for r in plan_rows
             if r['scope'] == 'provider' and r['object'] == role]
    if not found:
        raise KeyError(role)
    return providerconfig.dumps(found[0]['provider_config'],
                                _provider_source(role), comments)


def _provider_source(role):
    return 'the provider config of %s' % role


def _snippet(line, width=40):
    line = line.strip()
    return repr(line if len(line) <= width else line[:width - 3] + '...')


def merge_nova_conf(text, plan_rows, role):
    """``text`` (a nova.conf) with the settings of ``role`` merged in.

    Every line already there is kept; options of the plan are set in
    place; our filters and weighers are added to the lists the file has
    (or to Nova's defaults). Merging twice changes nothing.

    :raises ValueError: ``text`` is not an ini file
        (:meth:`~nova_pmem_filters.cli.inifile.IniFile.syntax_error`), in one
        line that names the line.
    """
    ini = inifile.IniFile(text)
    error = ini.syntax_error()
    if error:
        raise ValueError(
            'not a nova.conf: line %d (%s): %s; allowed: [section] '
            'headers, option = value lines and comments'
            % (error[0], _snippet(ini.lines[error[0] - 1]), error[1]))
    for row in _role_rows(plan_rows, role):
        if row.get('nova_default'):
            # Nova's own line goes in only where the file has none
            # (``defaults`` below): a file's own list is kept as it is.
            continue
        if row['option'] == 'available_filters':
            ini.add_value(row['section'], row['option'], row['items'][0],
                          defaults=_nova_default_list('available_filters'))
        elif row['items'] is not None:
            ini.append_to_list(row['section'], row['option'], row['items'],
                               _nova_default_list(row['option']))
        else:
            ini.set(row['section'], row['option'], row['line_value'])
    return ini.text()


# The distribution the images and venvs of the deployment tools install.
PACKAGE = 'nova-pmem-filters'

# kolla-ansible: the directory of service config overrides (its
# ``node_custom_config``). Its ``merge_configs`` reads, in order, the
# role's nova.conf template, ``global.conf``, ``nova.conf``,
# ``nova/<service>.conf``, ``nova/<host>/nova.conf`` and (for the services
# of the nova-cell role: nova-compute) ``nova/<host>/<service>.conf``; a
# key a later file sets replaces every line of it the earlier files had,
# and a file's own repeated lines (``available_filters``) are all kept
# (ansible/roles/nova*/tasks/config.yml, action_plugins/merge_configs.py).
KOLLA_CONFIG_DIR = '/etc/kolla/config'


def kolla_paths(role, hosts=()):
    """Where the settings of ``role`` go, relative to the config dir.

    The schedulers' in the file of the nova-scheduler service alone; a
    compute's in the file of nova-compute on each of ``hosts``: kolla-
    ansible has no file per group of hosts, and an aggregate's hosts are
    the operator's to name.
    """
    if role == SCHEDULER_ROLE:
        return ['nova/nova-scheduler.conf']
    return ['nova/%s/nova-compute.conf' % host for host in hosts]


def kolla_file(plan_rows, role, existing=None, comments=()):
    """The text of a kolla-ansible override file of ``role``.

    New (``existing`` None), the standalone snippet of
    :func:`nova_conf`: its list options start from Nova's defaults, as
    they must, since its lines replace those of the files merged before
    it. An existing file gets the settings merged in
    (:func:`merge_nova_conf`), every line of its own kept.
    """
    if existing is None:
        return nova_conf(plan_rows, role, comments)
    return merge_nova_conf(existing, plan_rows, role)


# OpenStack-Ansible's os_nova role: the variables that set the compute
# options of the plan (defaults/main.yml; templates/nova.conf.j2 writes
# them into [DEFAULT]). Host variables win over the role's defaults and
# over nova_virt_types, which sets its facts only where the host has none.
OSA_COMPUTE_VARIABLES = {
    'reserved_host_memory_mb': 'nova_reserved_host_memory_mb',
    'ram_allocation_ratio': 'nova_ram_allocation_ratio',
    'cpu_allocation_ratio': 'nova_cpu_allocation_ratio',
}

# os_nova's nova_scheduler_default_filters (defaults/main.yml): the filters
# it enables before nova_scheduler_extra_filters; ours that are among them
# are not added again (Nova would run a filter named twice twice).
OSA_DEFAULT_FILTERS = (
    'ComputeFilter', 'AggregateNumInstancesFilter', 'AggregateIoOpsFilter',
    'ComputeCapabilitiesFilter', 'ImagePropertiesFilter',
    'ServerGroupAntiAffinityFilter', 'ServerGroupAffinityFilter',
    'NUMATopologyFilter',
)


def _yaml_scalar(text):
    """``text`` as YAML would type it, when that reads back the same."""
    value = yaml.safe_load(text)
    if isinstance(value, (int, float)) and not isinstance(value, bool) \
            and admission.fmt(value) == text:
        return value
    return text


def osa_variables(plan_rows, role, package=PACKAGE):
    """The os_nova variables of ``role``, as a dict for YAML.

    The schedulers' for ``user_variables.yml``: the package for every nova
    venv (``nova_user_pip_packages``), our filters after os_nova's
    (``nova_scheduler_extra_filters``), and the rest through
    ``nova_nova_conf_overrides``, which config_template writes over the
    role's template: a list as one comma-separated line (weight_classes,
    Nova's weighers first), a mapping whose values are all empty as one
    line per key (available_filters, a multi-valued option: Nova's own
    line first, since the override replaces the template's). A compute's:
    :data:`OSA_COMPUTE_VARIABLES`, for the host_vars of its hosts.
    """
    rows_ = _role_rows(plan_rows, role)
    if role != SCHEDULER_ROLE:
        return {OSA_COMPUTE_VARIABLES[r['option']]:
                _yaml_scalar(r['line_value']) for r in rows_}
    overrides = {}
    extra = []
    for row in rows_:
        section = overrides.setdefault(row['section'], {})
        if row['option'] == 'available_filters':
            section.setdefault(row['option'], {})[row['line_value']] = None
        elif row['option'] == 'enabled_filters':
            extra = [f for f in row['items'] if f not in OSA_DEFAULT_FILTERS]
        elif row['items'] is not None:
            section[row['option']] = row['line_value'].split(',')
        else:
            section[row['option']] = _yaml_scalar(row['line_value'])
    overrides = {s: o for s, o in overrides.items() if o}
    return {'nova_user_pip_packages': [package],
            'nova_scheduler_extra_filters': extra,
            'nova_nova_conf_overrides': overrides}


def osa_yaml(plan_rows, role, package=PACKAGE, comments=()):
    """:func:`osa_variables` as a YAML file, after ``comments``."""
    body = yaml.safe_dump(osa_variables(plan_rows, role, package),
                          default_flow_style=False, sort_keys=False,
                          width=float('inf'))
    return ''.join('# %s\n' % c if c else '#\n' for c in comments) + body
