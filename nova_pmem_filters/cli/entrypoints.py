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
"""The command-line tools, on an install that may lack their extra.

``pip install nova-pmem-filters`` brings what nova-scheduler and nova-api
need; each tool's libraries come with an extra (``[planner]``,
``[doctor]``, ``[discover]``, ``[observe]``, or ``[all]``). The console
scripts start here: without its extra a tool says, in one line, which
extra to install, instead of a traceback, and exits 3 ("could not run",
doc/source/cli.rst). This module imports nothing but the standard library
(and :mod:`nova_pmem_filters.cli.application`, which imports nothing else).
"""

import importlib
import sys

from nova_pmem_filters.cli import application

# The top-level modules each extra brings (setup.cfg [extras]).
EXTRAS = {
    'planner': frozenset(['cliff', 'jsonschema', 'joblib', 'matplotlib',
                          'numpy', 'pandas', 'scipy', 'yaml']),
    'doctor': frozenset(['cliff', 'keystoneauth1', 'openstack']),
    'discover': frozenset(['yaml']),
    'observe': frozenset(['prometheus_client']),
}


def missing(extra, exc):
    """The library of ``extra`` whose absence raised ``exc``, or None.

    :param exc: an ImportError.
    """
    name = (exc.name or '').partition('.')[0]
    return name if name in EXTRAS[extra] else None


def needs(prog, extra, library):
    """The one line of a tool whose ``extra`` lacks ``library``."""
    return ("%s: needs the '%s' extra: pip install 'nova-pmem-filters[%s]' "
            "(missing: %s)" % (prog, extra, extra, library))


def run(prog, extra, module, argv=None):
    """``module.main(argv)``, or one line naming ``extra``.

    Only a module of the extra missing is reported so, with the status of
    a tool that could not run (:data:`application.EXIT_CANNOT_RUN`, the same
    for every tool); any other import error is a bug and raises. A tool
    imports its heaviest libraries when a command needs them, so they may
    be found missing while ``main`` runs, not only when ``module`` is
    imported.
    """
    try:
        cli = importlib.import_module(module)
        return cli.main(argv)
    except ImportError as exc:
        library = missing(extra, exc)
        if library is None:
            raise
        sys.stderr.write(needs(prog, extra, library) + '\n')
        return application.EXIT_CANNOT_RUN


def _console_script(extra):
    """The console script ``nova-pmem-EXTRA``: its tool, or the line."""
    def script():
        sys.exit(run('nova-pmem-' + extra, extra,
                     'nova_pmem_filters.%s.cli' % extra))
    return script


# The console scripts of setup.cfg, a tool each.
planner = _console_script('planner')
doctor = _console_script('doctor')
discover = _console_script('discover')
observe = _console_script('observe')
