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
"""Runs the Watcher strategy in a process of its own, for the tests.

Watcher and Nova register some of the same oslo.config options (``host``,
``max_limit``): they cannot be imported into one process, and the unit
tests' workers import Nova. So the tests start this module by its path
(``python tests/unit/watcher/harness.py``: the source tree is then not on
``sys.path``, and the project is found where it is installed, with its
entry points) with a case as JSON on stdin, and read the result as JSON
on stdout. With ``--serve``, it imports Watcher once and answers one case
per line, each in a process forked for it (a test worker keeps one such
harness: Watcher's imports take seconds, a case milliseconds).

The case: ``conf`` (watcher.conf sections, written to a file and read as
the decision engine reads its own), ``nodes`` and ``instances`` (fields of
Watcher's ``element.ComputeNode`` and ``element.Instance``; an instance's
``node`` is the hostname it is mapped to), ``extended`` (the model's
``extended_attributes_enabled``), ``parameters`` (the audit's, or a list:
one audit for each) and ``audits`` (how many audits run, one after
another, on the same model: Watcher's ``ModelRoot`` as the strategy left
it).

The strategy is loaded by its entry point with Watcher's own loader, its
audit parameters validated and defaulted as Watcher's API and decision
engine do, and run with ``execute()``. The result: per audit, the
solution's actions, efficacy indicators and global efficacy, the warnings
logged, or the exception raised (its class names and message).
"""

import configparser
import json
import logging
import os
import sys
import tempfile
import traceback
import warnings


def _model(case):
    from watcher.decision_engine.model import element
    from watcher.decision_engine.model import model_root

    model = model_root.ModelRoot()
    model.extended_attributes_enabled = case.get('extended', True)
    nodes = {}
    for fields in case['nodes']:
        node = element.ComputeNode(**fields)
        model.add_node(node)
        nodes[node.hostname] = node
    for fields in case['instances']:
        fields = dict(fields)
        host = fields.pop('node')
        instance = element.Instance(**fields)
        model.add_instance(instance)
        model.map_instance(instance, nodes[host])
    return model


def _configure(case):
    from watcher import conf

    parser = configparser.ConfigParser()
    for section, options in case.get('conf', {}).items():
        parser[section] = {k: str(v) for k, v in options.items()}
    with tempfile.NamedTemporaryFile('w', suffix='.conf',
                                     delete=False) as f:
        parser.write(f)
    # As the default file, not --config-file: Watcher 14 (2025.1) loads a
    # strategy's options by parsing the command line again with its default
    # files only (watcher.common.loader.default), which loses a
    # --config-file; later Watchers reload the files already parsed.
    conf.CONF([], project='watcher', default_config_files=[f.name])
    return conf.CONF


class _Warnings(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def _audit(model, parameters):
    from watcher.common import utils
    from watcher.decision_engine.loading import default

    strategy = default.DefaultStrategyLoader().load(
        'tiered_memory_rebalance')
    # As the API validates an audit's parameters and the decision engine
    # gives them to the strategy (DefaultStrategyContext).
    parameters = dict(parameters)
    utils.StrictDefaultValidatingDraft4Validator(
        strategy.get_schema()).validate(parameters)
    strategy.input_parameters.update(parameters)
    # The model the collector would give (BaseStrategy.compute_model).
    strategy._compute_model = model
    solution = strategy.execute()
    return {
        'actions': solution.actions,
        'invalid_actions': _invalid(solution.actions),
        'indicators': {i.name: i.value for i in solution.efficacy_indicators},
        'global': {i.name: i.value for i in solution.global_efficacy},
        'goal': solution.goal.name,
    }


def _invalid(actions):
    """Actions whose parameters Watcher's migrate action refuses."""
    import jsonschema
    from watcher.applier.actions import migration

    schema = migration.Migrate(config=None).schema
    found = []
    for action in actions:
        try:
            jsonschema.validate(action['input_parameters'], schema)
        except jsonschema.ValidationError as exc:
            found.append('%s: %s' % (action, exc.message))
    return found


def run(case):
    warnings.simplefilter('ignore')
    _configure(case)
    handler = _Warnings()
    logging.getLogger().addHandler(handler)
    model = _model(case)
    audits = []
    parameters = case.get('parameters', {})
    if not isinstance(parameters, list):
        parameters = [parameters] * case.get('audits', 1)
    for audit_parameters in parameters:
        del handler.lines[:]
        try:
            result = _audit(model, audit_parameters)
        except Exception as exc:
            result = {'error': [c.__name__ for c in type(exc).__mro__],
                      'message': str(exc),
                      'traceback': traceback.format_exc()}
        result['warnings'] = list(handler.lines)
        audits.append(result)
    return {'audits': audits}


def _preload():
    """Import what every case needs, before the first fork."""
    import jsonschema  # noqa: F401
    from watcher.applier.actions import migration  # noqa: F401
    from watcher.common import utils  # noqa: F401
    from watcher import conf  # noqa: F401
    from watcher.decision_engine.loading import default  # noqa: F401
    from watcher.decision_engine.model import element  # noqa: F401
    from watcher.decision_engine.model import model_root  # noqa: F401


def _forked(case):
    """run(case) in a child process.

    Its configuration and its state die with it; the imports are paid
    once, in this process.
    """
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            answer = json.dumps(run(case)).encode()
        except BaseException:
            answer = json.dumps({'harness_error':
                                 traceback.format_exc()}).encode()
        with os.fdopen(write_end, 'wb') as out:
            out.write(answer)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, 'rb') as answer:
        body = answer.read()
    os.waitpid(pid, 0)
    return json.loads(body) if body else {
        'harness_error': 'the case\'s process ended without an answer'}


def serve():
    """One case per line on stdin, one answer per line on stdout."""
    _preload()
    for line in sys.stdin:
        sys.stdout.write(json.dumps(_forked(json.loads(line))) + '\n')
        sys.stdout.flush()


def main():
    if sys.argv[1:] == ['--serve']:
        # Watcher 14 parses the command line again when it loads a
        # strategy: it must not find --serve there.
        del sys.argv[1:]
        return serve()
    case = json.load(sys.stdin)
    json.dump(run(case), sys.stdout)


if __name__ == '__main__':
    main()
