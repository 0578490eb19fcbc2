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
"""The part of nova.conf the tools read, with oslo.config, without Nova.

The doctor audits it, and the Watcher strategy takes the scheduler's
``[pmem]`` settings from it, so that an operator sets them once. Both run
where Nova may not be installed (an operator's machine, Watcher's decision
engine), so this does not import Nova: it registers the few Nova options
it reads (:mod:`nova_pmem_filters.conf.nova_scheduler`, with Nova's names,
types and defaults) and our own ``[pmem]`` options (the same declarations
nova-scheduler registers), and lets oslo.config parse the files as
nova-scheduler would.
"""

import dataclasses

from oslo_config import cfg

from nova_pmem_filters.conf import nova_scheduler
from nova_pmem_filters.conf import pmem as pmem_conf
from nova_pmem_filters.core.rules import extra_specs

# Our [pmem] options that multiply a weigher's score.
WEIGHT_MULTIPLIER_OPTS = tuple(
    opt.name for opt in pmem_conf.pmem_opts
    if isinstance(opt, cfg.FloatOpt)
    and opt.name.endswith('_weight_multiplier'))


class ConfigError(Exception):
    """A nova.conf that cannot be read; the message is one line."""


@dataclasses.dataclass(frozen=True)
class NovaConfig:
    """What the doctor needs of nova.conf."""

    files: tuple
    available_filters: tuple
    enabled_filters: tuple
    weight_classes: tuple
    # None when unset: nova-scheduler then runs one worker per CPU.
    scheduler_workers: int
    default_host_mode: str
    default_flavor_modes: tuple
    default_hot_ratio: float
    cache_overcommit_ratio: float
    # ((option, value), ...) of WEIGHT_MULTIPLIER_OPTS; () for their
    # defaults.
    weight_multipliers: tuple = ()

    @property
    def defaults(self):
        """What flavors get for the pmem: keys they leave out."""
        return extra_specs.Defaults.from_options(self)


def _conf(files):
    conf = cfg.ConfigOpts()
    nova_scheduler.register(conf)
    pmem_conf.register_opts(conf)
    args = []
    for path in files:
        args += ['--config-file', path]
    conf(args=args, project='nova', default_config_files=[],
         default_config_dirs=[], validate_default_values=True)
    return conf


def defaults():
    """The configuration of a cloud that sets nothing: every default."""
    return _values(_conf([]), files=())


def defaults_of(name):
    """The default of one of our ``[pmem]`` options."""
    for opt in pmem_conf.pmem_opts:
        if opt.name == name:
            return opt.default
    raise KeyError(name)


def _get(conf, group, name, files):
    try:
        return (conf[name] if group == nova_scheduler.DEFAULT
                else conf[group][name])
    except (cfg.ConfigFileValueError, ValueError) as exc:
        # oslo.config says "Value for option X from LocationInfo(...) is not
        # valid: REASON"; the reason is what the operator needs.
        reason = str(exc).rpartition('is not valid: ')[2] or str(exc)
        raise ConfigError('%s: [%s] %s: %s'
                          % (', '.join(files), group, name, reason))


def _values(conf, files):
    def get(group, name):
        return _get(conf, group, name, files)

    pmem = pmem_conf.pmem_group.name
    fs = nova_scheduler.FILTER_SCHEDULER
    return NovaConfig(
        files=tuple(files),
        available_filters=tuple(get(fs, 'available_filters')),
        enabled_filters=tuple(
            f.strip() for f in get(fs, 'enabled_filters')),
        weight_classes=tuple(
            w.strip() for w in get(fs, 'weight_classes')),
        scheduler_workers=get(nova_scheduler.SCHEDULER, 'workers'),
        default_host_mode=get(pmem, 'default_host_mode'),
        default_flavor_modes=tuple(get(pmem, 'default_flavor_modes')),
        default_hot_ratio=get(pmem, 'default_hot_ratio'),
        cache_overcommit_ratio=get(pmem, 'cache_overcommit_ratio'),
        weight_multipliers=tuple((name, get(pmem, name))
                                 for name in WEIGHT_MULTIPLIER_OPTS))


def ram_allocation_ratio(files):
    """MEMORY_MB's allocation ratio a compute with these files reports."""
    try:
        conf = _conf(files)
        default = nova_scheduler.DEFAULT
        return (_get(conf, default, 'ram_allocation_ratio', files)
                or _get(conf, default, 'initial_ram_allocation_ratio',
                        files))
    except cfg.Error as exc:
        raise ConfigError('%s: %s' % (', '.join(files), exc))


def load(files):
    """Read nova.conf files (later files override earlier ones).

    :raises ConfigError: a file missing, unreadable, or holding a value its
        option refuses; the message names the file or the option.
    """
    try:
        conf = _conf(files)
        # oslo.config parses values when they are read: read them all here.
        return _values(conf, files)
    except cfg.ConfigFilesNotFoundError as exc:
        raise ConfigError('cannot read %s' % ', '.join(exc.config_files))
    except cfg.ConfigFileParseError as exc:
        raise ConfigError('%s is not a valid ini file: %s'
                          % (exc.config_file, exc.msg))
    except cfg.Error as exc:
        raise ConfigError('%s: %s' % (', '.join(files), exc))
