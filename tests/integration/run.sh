#!/usr/bin/env bash
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
#
# One command: install MariaDB and RabbitMQ if missing, bring the deployment
# up, run the load, race, fault and bad-input scenarios, print the results
# table, write it as JSON, and tear everything down, on failure too.
#
#   run.sh [--venv DIR] [--json FILE] [--keep-logs DIR] [scenario options]
#
# Scenario options go to tests/integration/scenarios.py (--quick, --load,
# --race, --only). Normally run as "tox -e integration", which passes --venv;
# CI runs "tox -e integration -- --quick".
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
export VENV=$TOP/.tox/integration
export PMEM_IT_WORK=${PMEM_IT_WORK:-/tmp/pmem-integration}
JSON=$PMEM_IT_WORK/results.json
KEEP_LOGS=""
ARGS=()
while (($#)); do
    case $1 in
        --venv) VENV=$2; shift 2 ;;
        --json) JSON=$2; shift 2 ;;
        --keep-logs) KEEP_LOGS=$2; shift 2 ;;
        *) ARGS+=("$1"); shift ;;
    esac
done
case $JSON in /*) ;; *) JSON=$PWD/$JSON ;; esac
# Results of an earlier run must not pass for this one's.
rm -f "$JSON"

teardown() {
    local rc=$?
    trap - EXIT INT TERM
    bash "$HERE/deploy.sh" down || true
    if [[ -n $KEEP_LOGS && -d $PMEM_IT_WORK/logs ]]; then
        mkdir -p "$KEEP_LOGS"
        cp -r "$PMEM_IT_WORK/logs/." "$KEEP_LOGS/"
    fi
    exit "$rc"
}
trap teardown EXIT INT TERM

start=$SECONDS
bash "$HERE/deploy.sh" packages
# A previous run that was killed may have left its processes.
bash "$HERE/deploy.sh" down
rm -rf "$PMEM_IT_WORK"
bash "$HERE/deploy.sh" up
cd "$TOP"
rc=0
"$VENV/bin/python" -m tests.integration.scenarios --json "$JSON" \
    --logs "$PMEM_IT_WORK/logs" --teardown "${ARGS[@]+"${ARGS[@]}"}" || rc=$?
echo "results: $JSON; wall time $((SECONDS - start))s"
exit "$rc"
