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
"""Host-side commands fail in one line: never a traceback on a console.

Shared by ``nova-pmem-discover`` and ``nova-pmem-observe`` (argparse
commands run by a compute host's automation). Imports nothing but the
standard library.
"""


def run(prog, stderr, debug, call, expected, unexpected_status):
    """Return ``call()``'s exit status; every failure is one line on stderr.

    :param expected: ((exception class, exit status), ...): errors the
        command raises on purpose, printed as ``PROG: error: MESSAGE``;
        a status of None takes the exception's ``exit_code``.
    :param unexpected_status: the status of any other exception, printed
        with its type (``--debug`` raises it instead).
    """
    try:
        return call()
    except SystemExit as exc:
        # --help and --version exit through argparse.
        return exc.code if isinstance(exc.code, int) else 0
    except KeyboardInterrupt:
        stderr.write('%s: interrupted\n' % prog)
        return 130
    except Exception as exc:
        for cls, status in expected:
            if isinstance(exc, cls):
                stderr.write('%s: error: %s\n' % (prog, _line(exc)))
                return exc.exit_code if status is None else status
        if debug:
            raise
        stderr.write('%s: error: unexpected %s: %s (use --debug)\n'
                     % (prog, type(exc).__name__, _line(exc)[:300]))
        return unexpected_status


def _line(exc):
    return ' '.join(str(exc).split())
