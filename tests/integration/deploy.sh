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
# A multi-process Nova on this machine, every listener on 127.0.0.1:
# MariaDB, RabbitMQ, a Glance/Neutron stand-in, Keystone, Placement and
# nova-api under gunicorn (Placement and nova-api behind keystonemiddleware),
# nova-conductor, nova-scheduler ([scheduler] workers=2) and four fake-driver
# nova-compute processes sized like PMem nodes.
#
#   deploy.sh packages            apt-get install MariaDB and RabbitMQ
#   deploy.sh up                  configure and start everything
#   deploy.sh down                stop everything this script started
#   deploy.sh restart-compute H   kill -9 nova-compute H and start it again
#   deploy.sh kill-scheduler-worker   kill -9 one nova-scheduler worker
#   deploy.sh restart-rabbit      stop RabbitMQ and start it again
#   deploy.sh rpc-queues          "QUEUE CONSUMERS" of each consumed queue
#   deploy.sh scheduler PROFILE   restart nova-scheduler, PROFILE pmem|plain
#   deploy.sh placement N         restart Placement with N allocation retries
#   deploy.sh keystone stop|start stop Keystone, or start it and wait for it
#   deploy.sh watcher start|stop  Watcher (API, decision engine, applier),
#                                 Prometheus and an observer per compute
#   deploy.sh leftovers           processes or listeners "down" left behind
#   deploy.sh scheduler-workers   how many nova-scheduler workers run
#
# Every process is started in its own process group whose id is kept in
# $WORK/pids/NAME.pid; "down" signals the groups, so nothing is left behind.
# Environment: VENV (the virtualenv with Nova, Placement, gunicorn, PyMySQL
# and this project), PMEM_IT_WORK (state, logs; default
# /tmp/pmem-integration), PMEM_IT_PORT_BASE (default 18000), PMEM_IT_KEEPALIVE
# (keep-alive of nova-api, s; default 75), PMEM_IT_ADMIN_PASSWORD and
# PMEM_IT_SERVICE_PASSWORD (Keystone's admin and the nova, placement and
# watcher users; test-only defaults, tests/integration/client.py reads the
# same), PMEM_IT_SCRAPE_S and PMEM_IT_WATCHER_SYNC_S (Prometheus's scrape
# interval and Watcher's model rebuild period, s; default 2 and 5).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
cd "$TOP"
VENV=${VENV:-$TOP/.tox/integration}
# Absolute: the Watcher services start in a directory of their own.
case $VENV in /*) ;; *) VENV=$TOP/$VENV ;; esac
WORK=${PMEM_IT_WORK:-/tmp/pmem-integration}
BASE=${PMEM_IT_PORT_BASE:-18000}
DB_PORT=$((BASE + 306))
AMQP_PORT=$((BASE + 672))
DIST_PORT=$((BASE + 673))
EPMD_PORT=$((BASE + 369))
PLACEMENT_PORT=$((BASE + 778))
API_PORT=$((BASE + 774))
STUB_PORT=$((BASE + 90))
KEYSTONE_PORT=$((BASE + 500))
KEYSTONE_URL=http://127.0.0.1:$KEYSTONE_PORT/v3
# Watcher's API, Prometheus, and the observers' exporters (one per compute
# host, in $COMPUTES order, from OBSERVER_PORT): only "watcher start" starts
# them.
WATCHER_PORT=$((BASE + 322))
AETOS_PORT=$((BASE + 908))
PROMETHEUS_PORT=$((BASE + 909))
OBSERVER_PORT=$((BASE + 910))
# Seconds between two scrapes, and between two syncs of Watcher's compute
# model with Nova: the scenario waits for both after the migrations.
SCRAPE_S=${PMEM_IT_SCRAPE_S:-2}
WATCHER_SYNC_S=${PMEM_IT_WATCHER_SYNC_S:-5}
ADMIN_PASSWORD=${PMEM_IT_ADMIN_PASSWORD:-pmem-it-admin}
SERVICE_PASSWORD=${PMEM_IT_SERVICE_PASSWORD:-pmem-it-service}
REGION=RegionOne
PY=$VENV/bin/python
# Placement 16.0.0 retries an allocation write that lost a generation race
# inside the same transaction, without rolling back the rows the first try
# inserted; the retry then sees the consumer's own allocation as "previous
# usage" and lets the provider go over capacity. One try per request makes
# Placement answer 409 and Nova's scheduler retry with a fresh transaction.
# PMEM_IT_PLACEMENT_RETRIES=10 (Placement's default) shows the bug.
PLACEMENT_RETRIES=${PMEM_IT_PLACEMENT_RETRIES:-1}
RABBIT_BIN=/usr/lib/rabbitmq/bin
# Keep-alive of nova-api, set explicitly: gunicorn's default is 2 s, and a
# client that sends on a connection just as the server closes it for
# idleness gets a reset. Our client survives such a close in any case.
KEEPALIVE_S=${PMEM_IT_KEEPALIVE:-75}
# Placement keeps no connection alive (gunicorn closes each after its
# answer, with "Connection: close"). nova-scheduler and nova-conductor make
# their first Placement request (version discovery) in the parent process,
# before oslo.service forks the workers; every worker inherits that pooled
# connection, and while the server keeps it open the workers send on the
# one socket at once and read each other's answers: keystoneauth raises
# ConnectFailure (BadStatusLine holding another request's JSON) and the
# request gets NoValidHost. With a 75 s keep-alive CI failed that way; with
# a short one it depends on how soon the workers start. Without keep-alive
# no connection outlives its request, so none is shared.
PLACEMENT_KEEPALIVE_S=${PMEM_IT_PLACEMENT_KEEPALIVE:-0}
# Keystone likewise: the same parent processes get their service token
# before they fork.
KEYSTONE_KEEPALIVE_S=0
# name:vcpus:memory_gb:mode:dram_gb
COMPUTES=${PMEM_IT_COMPUTES:-"dram1:80:384:dram:384 mm1:80:512:memory_mode:192 mm2:80:512:memory_mode:192 ad1:80:192:app_direct:192"}

export ERL_EPMD_PORT=$EPMD_PORT ERL_EPMD_ADDRESS=127.0.0.1

log() { printf '%s deploy: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# wait_for SECONDS DESCRIPTION COMMAND...: poll until COMMAND succeeds.
wait_for() {
    local limit=$1 what=$2 i
    shift 2
    for ((i = 0; i < limit * 2; i++)); do
        if "$@" >/dev/null 2>&1; then
            return 0
        fi
        sleep 0.5
    done
    die "$what not ready after ${limit}s"
}

# start NAME COMMAND...: run COMMAND in a new process group, log to
# $WORK/logs/NAME.out, remember the group in $WORK/pids/NAME.pid.
start() {
    local name=$1
    shift
    setsid "$@" >>"$WORK/logs/$name.out" 2>&1 < /dev/null &
    echo $! >"$WORK/pids/$name.pid"
    echo "$! $name" >>"$WORK/groups"
}

# stop NAME [SIGNAL]: signal the process group of NAME and wait for it.
stop() {
    local name=$1 sig=${2:-TERM} pid i
    [[ -f $WORK/pids/$name.pid ]] || return 0
    pid=$(cat "$WORK/pids/$name.pid")
    kill -"$sig" -- "-$pid" 2>/dev/null || true
    for ((i = 0; i < 40; i++)); do
        kill -0 -- "-$pid" 2>/dev/null || break
        sleep 0.25
    done
    kill -KILL -- "-$pid" 2>/dev/null || true
    for ((i = 0; i < 20; i++)); do
        kill -0 -- "-$pid" 2>/dev/null || break
        sleep 0.25
    done
    rm -f "$WORK/pids/$name.pid"
}

http_ok() { curl -sf -o /dev/null "$1"; }

cmd_packages() {
    # curl for the readiness probes, ss (iproute2) and pgrep (procps) for
    # the fault and teardown commands.
    if command -v mariadbd curl ss pgrep >/dev/null &&
        [[ -x $RABBIT_BIN/rabbitmq-server ]]; then
        return 0
    fi
    log "installing mariadb-server, rabbitmq-server, curl, iproute2, procps"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends mariadb-server rabbitmq-server curl \
        iproute2 procps >/dev/null
}

write_config() {
    local db="mysql+pymysql://nova:nova@127.0.0.1:$DB_PORT"
    mkdir -p "$WORK/etc" "$WORK/state" "$WORK/lock"
    cat >"$WORK/etc/nova.conf" <<EOF
[DEFAULT]
transport_url = rabbit://guest:guest@127.0.0.1:$AMQP_PORT/
state_path = $WORK/state
my_ip = 127.0.0.1
compute_driver = pmem_integration.SizedFakeDriver
rpc_response_timeout = 30
long_rpc_timeout = 60
heal_instance_info_cache_interval = -1
ram_allocation_ratio = 1.0
cpu_allocation_ratio = 4.0
# nova.filters at DEBUG: "Filter PmemCacheFilter returned 1 host(s)" with
# the request id, the proof that a live migration went through the filters.
default_log_levels = amqp=WARN,amqplib=WARN,sqlalchemy=WARN,oslo.messaging=INFO,oslo_messaging=INFO,iso8601=WARN,requests.packages.urllib3.connectionpool=WARN,urllib3.connectionpool=WARN,websocket=WARN,keystonemiddleware=WARN,routes.middleware=WARN,stevedore=WARN,taskflow=WARN,keystoneauth=WARN,oslo.cache=INFO,oslo_policy=INFO,dogpile.core.dogpile=INFO,nova_pmem_filters=DEBUG,nova.filters=DEBUG

[api]
auth_strategy = keystone

[wsgi]
api_paste_config = $WORK/etc/api-paste.ini

[api_database]
connection = $db/nova_api?charset=utf8
max_pool_size = 10

[database]
connection = $db/nova?charset=utf8
max_pool_size = 10

[oslo_concurrency]
lock_path = $WORK/lock

[oslo_messaging_notifications]
driver = noop

[oslo_policy]
enforce_scope = False
enforce_new_defaults = False

[quota]
instances = -1
cores = -1
ram = -1
metadata_items = -1

[scheduler]
workers = 2
discover_hosts_in_cells_interval = -1

[filter_scheduler]
available_filters = nova.scheduler.filters.all_filters
available_filters = nova_pmem_filters.filters.all_filters
enabled_filters = ComputeFilter,ComputeCapabilitiesFilter,ImagePropertiesFilter,ServerGroupAntiAffinityFilter,ServerGroupAffinityFilter,PmemModeFilter,PmemCacheFilter
weight_classes = nova.scheduler.weights.all_weighers,nova_pmem_filters.weighers.all_weighers

[pmem]
default_hot_ratio = 0.5

$(authtoken nova -1)

[placement]
$(service_user nova)
region_name = $REGION

# Nova's service token on its requests to other services, which every
# deployment needs since 2023.1 (nova-status upgrade check fails without).
[service_user]
send_service_user_token = true
$(service_user nova)

[glance]
endpoint_override = http://127.0.0.1:$STUB_PORT
num_retries = 0

# The stand-in checks no token: Neutron is not under test.
[neutron]
auth_type = admin_token
endpoint = http://127.0.0.1:$STUB_PORT
token = unchecked
endpoint_override = http://127.0.0.1:$STUB_PORT

[conductor]
workers = 1

[vnc]
enabled = False
EOF
    # The filters' reasons are DEBUG lines; the profile "plain" leaves our
    # filters and weighers out, for the latency comparison.
    cat >"$WORK/etc/scheduler-plain.conf" <<EOF
[filter_scheduler]
enabled_filters = ComputeFilter,ComputeCapabilitiesFilter,ImagePropertiesFilter,ServerGroupAntiAffinityFilter,ServerGroupAffinityFilter
weight_classes = nova.scheduler.weights.all_weighers
EOF
    : >"$WORK/etc/scheduler-pmem.conf"
    printf '[DEFAULT]\nlog_file = %s\n' "$WORK/logs/nova-api.log" \
        >"$WORK/etc/nova-api.conf"

    # Nova's own paste file, unchanged: keystonemiddleware's authtoken.
    cp "$VENV/etc/nova/api-paste.ini" "$WORK/etc/api-paste.ini"

    cat >"$WORK/etc/placement.conf" <<EOF
[DEFAULT]
log_file = $WORK/logs/placement.log
[api]
auth_strategy = keystone
$(authtoken placement 300)
[placement]
allocation_conflict_retry_count = $PLACEMENT_RETRIES
[placement_database]
connection = $db/placement?charset=utf8
max_pool_size = 10
EOF

    # Fernet tokens, keys under $WORK/keystone. At bcrypt's default cost
    # (12) a password check takes 0.2 s of CPU on this kind of machine, at
    # the lowest (4) 1 ms.
    cat >"$WORK/etc/keystone.conf" <<EOF
[DEFAULT]
log_file = $WORK/logs/keystone.log
[database]
connection = mysql+pymysql://keystone:keystone@127.0.0.1:$DB_PORT/keystone?charset=utf8
max_pool_size = 10
[token]
provider = fernet
[fernet_tokens]
key_repository = $WORK/keystone/fernet-keys
[credential]
key_repository = $WORK/keystone/credential-keys
[identity]
password_hash_rounds = 4
EOF
}

# service_user USER: the password auth options of a service user of the
# service project (nova or placement, tests/integration/keystonesetup.py).
service_user() {
    cat <<EOF
auth_type = password
auth_url = $KEYSTONE_URL
username = $1
password = $SERVICE_PASSWORD
project_name = service
user_domain_name = Default
project_domain_name = Default
EOF
}

# authtoken USER CACHE_S: keystonemiddleware's section for a service whose
# tokens USER validates, caching a validated token CACHE_S seconds (-1: no
# cache). Its default, 300 s, is per gunicorn worker: a token revoked in
# Keystone would go on working in nova-api until the cache expires, in one
# worker and not in the other. nova-api has no cache, so a revocation takes
# effect at the next request (identity.py tests it). Placement keeps the
# default: it gets three times nova-api's requests (3572 to 1289 in a
# --quick run), most with the Nova services' own tokens, which live an hour;
# validating each with Keystone would only load the machine.
authtoken() {
    cat <<EOF
[keystone_authtoken]
www_authenticate_uri = $KEYSTONE_URL
region_name = $REGION
token_cache_time = $2
$(service_user "$1")
EOF
}

start_mariadb() {
    local data=$WORK/mysql/data
    if [[ ! -d $data/mysql ]]; then
        mkdir -p "$data"
        mariadb-install-db --no-defaults --datadir="$data" --user=root \
            --auth-root-authentication-method=normal --skip-test-db \
            >>"$WORK/logs/mariadb-install.out" 2>&1
    fi
    start mariadb mariadbd --no-defaults --datadir="$data" --user=root \
        --socket="$WORK/mysql/sock" --port="$DB_PORT" \
        --bind-address=127.0.0.1 --skip-name-resolve \
        --pid-file="$WORK/mysql/mariadbd.pid" \
        --log-error="$WORK/logs/mariadb.log" --max-connections=2000 \
        --innodb-buffer-pool-size=256M --innodb-flush-log-at-trx-commit=0 \
        --skip-log-bin
}

wait_mariadb() {
    wait_for 60 MariaDB mariadb-admin --socket="$WORK/mysql/sock" ping
}

RABBIT_ENV=(
    HOME="$WORK/rabbit"
    RABBITMQ_NODENAME=pmemit@localhost
    RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
    RABBITMQ_NODE_PORT="$AMQP_PORT"
    RABBITMQ_DIST_PORT="$DIST_PORT"
    RABBITMQ_MNESIA_BASE="$WORK/rabbit/mnesia"
    RABBITMQ_LOG_BASE="$WORK/logs/rabbit"
    RABBITMQ_CONFIG_FILE="$WORK/rabbit/rabbitmq"
    RABBITMQ_ENABLED_PLUGINS_FILE="$WORK/rabbit/enabled_plugins"
    RABBITMQ_PID_FILE="$WORK/rabbit/rabbit.pid"
    RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
    RABBITMQ_CTL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
)

rabbitmqctl() {
    env "${RABBIT_ENV[@]}" timeout 120 "$RABBIT_BIN/rabbitmqctl" \
        -n pmemit@localhost "$@"
}

start_rabbit() {
    mkdir -p "$WORK/rabbit" "$WORK/logs/rabbit"
    echo '[].' >"$WORK/rabbit/enabled_plugins"
    echo 'loopback_users = none' >"$WORK/rabbit/rabbitmq.conf"
    if [[ ! -f $WORK/pids/epmd.pid ]]; then
        start epmd epmd -port "$EPMD_PORT" -address 127.0.0.1
    fi
    start rabbitmq env "${RABBIT_ENV[@]}" "$RABBIT_BIN/rabbitmq-server"
}

wait_rabbit() {
    wait_for 90 "RabbitMQ node" rabbitmqctl ping
    rabbitmqctl await_startup >/dev/null
}

setup_databases() {
    mariadb --socket="$WORK/mysql/sock" -uroot <<EOF
CREATE DATABASE IF NOT EXISTS nova_api;
CREATE DATABASE IF NOT EXISTS nova;
CREATE DATABASE IF NOT EXISTS nova_cell0;
CREATE DATABASE IF NOT EXISTS placement;
CREATE DATABASE IF NOT EXISTS keystone;
CREATE USER IF NOT EXISTS 'nova'@'127.0.0.1' IDENTIFIED BY 'nova';
GRANT ALL PRIVILEGES ON *.* TO 'nova'@'127.0.0.1';
CREATE USER IF NOT EXISTS 'keystone'@'127.0.0.1' IDENTIFIED BY 'keystone';
GRANT ALL PRIVILEGES ON keystone.* TO 'keystone'@'127.0.0.1';
EOF
    # Keystone's, Placement's and Nova's (API, cell0, cell1) schemas at the
    # same time.
    local placement_sync keystone_setup rc=0
    setup_keystone >>"$WORK/logs/keystone-setup.out" 2>&1 &
    keystone_setup=$!
    "$VENV/bin/placement-manage" --config-file "$WORK/etc/placement.conf" \
        db sync >>"$WORK/logs/placement-db-sync.out" 2>&1 &
    placement_sync=$!
    (cd "$TOP" && "$PY" -m tests.integration.dbsetup "$WORK/etc/nova.conf" \
        "mysql+pymysql://nova:nova@127.0.0.1:$DB_PORT/nova_cell0?charset=utf8" \
        >>"$WORK/logs/db-sync.out" 2>&1) || rc=$?
    wait "$placement_sync" || die "placement-manage db sync failed (logs/placement-db-sync.out)"
    wait "$keystone_setup" || die "Keystone setup failed (logs/keystone-setup.out)"
    ((rc == 0)) || die "Nova database setup failed (logs/db-sync.out)"
}

keystone_manage() {
    "$VENV/bin/keystone-manage" --config-file "$WORK/etc/keystone.conf" "$@"
}

setup_keystone() {
    # Keys, schema, then the admin user, project and role, the region and
    # the identity endpoints. Every step can be run again.
    mkdir -p "$WORK/keystone"
    keystone_manage fernet_setup --keystone-user "$(id -un)" \
        --keystone-group "$(id -gn)"
    keystone_manage credential_setup --keystone-user "$(id -un)" \
        --keystone-group "$(id -gn)"
    keystone_manage db_sync
    keystone_manage bootstrap --bootstrap-password "$ADMIN_PASSWORD" \
        --bootstrap-username admin --bootstrap-project-name admin \
        --bootstrap-role-name admin --bootstrap-service-name keystone \
        --bootstrap-region-id "$REGION" \
        --bootstrap-admin-url "$KEYSTONE_URL" \
        --bootstrap-internal-url "$KEYSTONE_URL" \
        --bootstrap-public-url "$KEYSTONE_URL"
}

start_wsgi() {
    # start_wsgi NAME PORT KEEPALIVE MODULE VAR=VALUE...: the application
    # of tests.integration.MODULE under gunicorn, two workers of 8 threads,
    # in the environment VAR=VALUE...
    local name=$1 port=$2 keepalive=$3 module=$4
    shift 4
    start "$name" env "$@" \
        "$VENV/bin/gunicorn" --chdir "$TOP" --no-control-socket \
        --bind "127.0.0.1:$port" --workers 2 --threads 8 \
        --keep-alive "$keepalive" --timeout 120 --graceful-timeout 5 \
        "tests.integration.$module:application"
}

start_keystone() {
    start_wsgi keystone "$KEYSTONE_PORT" "$KEYSTONE_KEEPALIVE_S" \
        wsgi_keystone OS_KEYSTONE_CONFIG_DIR="$WORK/etc"
}

wait_keystone() {
    wait_for 60 Keystone http_ok "$KEYSTONE_URL"
}

setup_identity() {
    # The service project and users, the catalog, the suite's users and
    # $WORK/clouds.yaml, through Keystone's API as the admin.
    (cd "$TOP" && "$PY" -m tests.integration.keystonesetup \
        "$SERVICE_PASSWORD" "$WORK/clouds.yaml" \
        >>"$WORK/logs/keystone-setup.out" 2>&1) ||
        die "Keystone users and catalog failed (logs/keystone-setup.out)"
}

start_placement() {
    start_wsgi placement "$PLACEMENT_PORT" "$PLACEMENT_KEEPALIVE_S" \
        wsgi_placement OS_PLACEMENT_CONFIG_DIR="$WORK/etc"
    wait_for 60 Placement http_ok "http://127.0.0.1:$PLACEMENT_PORT/"
}

start_api() {
    start_wsgi nova-api "$API_PORT" "$KEEPALIVE_S" wsgi_nova_api \
        OS_NOVA_CONFIG_DIR="$WORK/etc" \
        OS_NOVA_CONFIG_FILES="api-paste.ini;nova.conf;nova-api.conf"
}

start_stubs() {
    start stubs "$PY" -m tests.integration.stubs "$STUB_PORT" \
        "$WORK/logs/stubs.log"
    wait_for 20 "Glance/Neutron stand-in" \
        http_ok "http://127.0.0.1:$STUB_PORT/v2/schemas/image"
}

service() {
    # service NAME BINARY [EXTRA CONFIG FILE]
    local name=$1 binary=$2 extra=${3:-}
    local args=(--config-file "$WORK/etc/nova.conf")
    [[ -n $extra ]] && args+=(--config-file "$extra")
    (cd "$TOP" && start "$name" "$VENV/bin/$binary" "${args[@]}" \
        --log-file "$WORK/logs/$name.log")
}

start_scheduler() {
    local profile=${1:-pmem}
    service nova-scheduler nova-scheduler "$WORK/etc/scheduler-$profile.conf"
    echo "$profile" >"$WORK/scheduler.profile"
}

compute_fields() {
    local spec
    for spec in $COMPUTES; do
        if [[ ${spec%%:*} == "$1" ]]; then
            echo "$spec" | tr ':' ' '
            return 0
        fi
    done
    die "no compute $1"
}

prepare_computes() {
    local spec name dir
    for spec in $COMPUTES; do
        name=${spec%%:*}
        dir=$WORK/compute/$name
        mkdir -p "$dir"
        cat >"$dir/nova-compute.conf" <<EOF
[DEFAULT]
host = $name
state_path = $dir/state
[compute]
provider_config_location = $dir/provider_config
EOF
    done
    # What nova-pmem-discover --provider-config writes for such a host, and
    # the node identity Nova would otherwise invent on first start.
    # shellcheck disable=SC2086
    (cd "$TOP" && "$PY" -m tests.integration.hostfiles "$WORK/compute" \
        $COMPUTES)
}

start_compute() {
    local name vcpus mem mode dram dir
    read -r name vcpus mem mode dram < <(compute_fields "$1")
    dir=$WORK/compute/$name
    (cd "$TOP" && PMEM_IT_VCPUS=$vcpus PMEM_IT_MEMORY_MB=$((mem * 1024)) \
        start "compute-$name" "$PY" -m tests.integration.compute \
        --config-file "$WORK/etc/nova.conf" \
        --config-file "$dir/nova-compute.conf" \
        --log-file "$WORK/logs/compute-$name.log")
}

nova_manage() {
    "$VENV/bin/nova-manage" --config-file "$WORK/etc/nova.conf" "$@"
}

services_up() {
    # wait until nova-api lists the binary on COUNT hosts as up
    "$PY" -m tests.integration.client services-up "$@"
}

cmd_up() {
    local t0=$SECONDS spec
    [[ -x $VENV/bin/gunicorn ]] || die "$VENV has no gunicorn"
    command -v mariadbd >/dev/null || die "no mariadbd: deploy.sh packages"
    mkdir -p "$WORK/logs" "$WORK/pids"
    write_config
    # Whatever does not wait for something else starts at once: RabbitMQ
    # takes the longest and comes up while the databases are made.
    start_mariadb
    start_rabbit
    prepare_computes
    wait_mariadb
    setup_databases
    log "databases ready ($((SECONDS - t0))s)"
    start_keystone
    start_stubs
    start_placement
    wait_keystone
    setup_identity
    log "Keystone ready ($((SECONDS - t0))s)"
    wait_rabbit
    log "RabbitMQ up ($((SECONDS - t0))s)"
    start_api
    service nova-conductor nova-conductor
    start_scheduler pmem
    "$PY" -m tests.integration.client wait-consumer conductor
    for spec in $COMPUTES; do
        start_compute "${spec%%:*}"
    done
    wait_for 90 nova-api http_ok "http://127.0.0.1:$API_PORT/"
    services_up nova-compute "$(echo "$COMPUTES" | wc -w)"
    nova_manage cell_v2 discover_hosts >>"$WORK/logs/db-sync.out" 2>&1
    services_up nova-scheduler 1
    services_up nova-conductor 1
    "$PY" -m tests.integration.client wait-providers \
        "$(echo "$COMPUTES" | wc -w)"
    log "deployment up in $((SECONDS - t0))s"
}

wait_groups_gone() {
    # wait_groups_gone TRIES PGID...: poll every 0.25 s until no process
    # group is left, at most TRIES times.
    local tries=$1 i pid alive
    shift
    for ((i = 0; i < tries; i++)); do
        alive=0
        for pid in "$@"; do
            kill -0 -- "-$pid" 2>/dev/null && alive=1
        done
        ((alive)) || return 0
        sleep 0.25
    done
}

stop_groups() {
    # stop_groups TRIES PIDFILE...: SIGTERM to the process group of each
    # pid file that exists, all at once; SIGKILL whatever is left after
    # TRIES x 0.25 s (a graceful stop is not what is under test); then the
    # pid files go.
    local tries=$1 f pid pids=()
    shift
    for f in "$@"; do
        [[ -e $f ]] || continue
        pid=$(cat "$f")
        pids+=("$pid")
        kill -TERM -- "-$pid" 2>/dev/null || true
    done
    wait_groups_gone "$tries" "${pids[@]+"${pids[@]}"}"
    for pid in "${pids[@]+"${pids[@]}"}"; do
        kill -KILL -- "-$pid" 2>/dev/null || true
    done
    wait_groups_gone 20 "${pids[@]+"${pids[@]}"}"
    rm -f "$@"
}

cmd_down() {
    # Every group at once, SIGKILL after 15 s.
    [[ -d $WORK/pids ]] || return 0
    stop_groups 60 "$WORK"/pids/*.pid
    log "deployment down"
}

cmd_leftovers() {
    # What "down" should have removed: a live process of any group this
    # deployment ever started, a listener on one of its ports.
    local ports found=0 i
    if [[ -f $WORK/groups ]]; then
        ps -eo pgid=,pid=,comm= | awk '
            NR == FNR { name[$1] = $2; next }
            ($1 in name) { printf "process %s (%s) of %s\n", $2, $3, name[$1] }
        ' "$WORK/groups" - | grep . && found=1
    fi
    ports="$DB_PORT|$AMQP_PORT|$DIST_PORT|$EPMD_PORT|$PLACEMENT_PORT|$API_PORT|$STUB_PORT|$KEYSTONE_PORT|$WATCHER_PORT|$AETOS_PORT|$PROMETHEUS_PORT"
    for ((i = 0; i < $(echo "$COMPUTES" | wc -w); i++)); do
        ports="$ports|$((OBSERVER_PORT + i))"
    done
    ss -Hltn | awk -v p=":($ports)\$" '$4 ~ p { print "listener " $4 }' |
        grep . && found=1
    ((found)) || echo none
}

cmd_shared_connections() {
    # Open connections to Placement or nova-api that more than one process
    # holds (a socket inherited across fork): two processes sending on one
    # connection read each other's answers.
    ss -Htnp state established |
        awk -v p=":($PLACEMENT_PORT|$API_PORT)\$" '
            $4 ~ p && gsub(/pid=/, "pid=") > 1 { print $3 " -> " $4 " " $5 }
        ' | grep . || echo none
}

cmd_scheduler_workers() {
    local parent
    parent=$(cat "$WORK/pids/nova-scheduler.pid")
    pgrep -P "$parent" | wc -l
}

cmd_restart_compute() {
    local name=$1
    stop "compute-$name" KILL
    start_compute "$name"
}

cmd_kill_scheduler_worker() {
    local parent child
    parent=$(cat "$WORK/pids/nova-scheduler.pid")
    child=$(pgrep -P "$parent" | head -n 1)
    [[ -n $child ]] || die "nova-scheduler $parent has no worker"
    kill -KILL "$child"
    echo "$child"
}

cmd_restart_rabbit() {
    rabbitmqctl stop >/dev/null 2>&1 || true
    stop rabbitmq
    start_rabbit
    wait_rabbit
}

cmd_rpc_queues() {
    # Every queue a service consumes (RPC servers, fanouts, reply queues)
    # and its consumers: a service that reconnects after a broker restart
    # declares its queues again under the same names.
    rabbitmqctl -s list_queues name consumers | awk '$2 > 0 {print $1, $2}'
}

cmd_placement() {
    # restart Placement with [placement] allocation_conflict_retry_count=$1
    sed -i "s/^allocation_conflict_retry_count = .*/allocation_conflict_retry_count = $1/" \
        "$WORK/etc/placement.conf"
    stop placement
    start_placement
}

cmd_keystone() {
    case $1 in
        stop) stop keystone ;;
        start)
            start_keystone
            wait_keystone
            ;;
        *) die "usage: $0 keystone stop|start" ;;
    esac
}

write_watcher_config() {
    local dir=$WORK/watcher spec i=0
    mkdir -p "$dir/prometheus/data" "$WORK/observers"
    cat >"$dir/watcher.conf" <<EOF
[DEFAULT]
transport_url = rabbit://guest:guest@127.0.0.1:$AMQP_PORT/
default_log_levels = amqp=WARN,amqplib=WARN,sqlalchemy=WARN,oslo.messaging=INFO,oslo_messaging=INFO,urllib3.connectionpool=WARN,keystonemiddleware=WARN,stevedore=WARN,keystoneauth=WARN,openstack=WARN,apscheduler=WARN,taskflow=WARN,nova_pmem_filters=DEBUG
[database]
connection = mysql+pymysql://watcher:watcher@127.0.0.1:$DB_PORT/watcher?charset=utf8
max_pool_size = 10
[oslo_concurrency]
lock_path = $WORK/lock
[oslo_messaging_notifications]
driver = noop
$(authtoken watcher 300)
[watcher_clients_auth]
$(service_user watcher)
[nova]
$(service_user watcher)
region_name = $REGION
[placement]
$(service_user watcher)
region_name = $REGION
# The flavors' extra specs in the model: the strategy reads pmem:*.
[compute_model]
enable_extended_attributes = true
# Without Nova's notifications the model learns of a migration only when
# it is rebuilt.
[watcher_cluster_data_model_collectors.compute]
period = $WATCHER_SYNC_S
# The working sets, through Watcher's own datasource: Aetos in front of
# Prometheus, found in Keystone's catalog (metric-storage).
[watcher_datasources]
datasources = aetos
[aetos_client]
region_name = $REGION
[watcher_strategies.tiered_memory_rebalance]
# The schedulers' [pmem] settings, read where they are set.
nova_config_files = $WORK/etc/nova.conf
EOF
    # Aetos's paste pipeline, its middlewares reading aetos.conf: they
    # load their options by project name, from /etc/aetos by default.
    sed "s|^oslo_config_project = aetos\$|&\noslo_config_file = $dir/aetos.conf|" \
        "$("$PY" -c 'import aetos, os; print(os.path.join(os.path.dirname(aetos.__file__), "api-paste.ini"))')" \
        >"$dir/aetos-paste.ini"
    cat >"$dir/aetos.conf" <<EOF
[DEFAULT]
auth_mode = keystone
paste_config = $dir/aetos-paste.ini
[prometheus]
host = 127.0.0.1
port = $PROMETHEUS_PORT
$(authtoken aetos 300)
EOF
    {
        printf 'global:\n  scrape_interval: %ss\n  scrape_timeout: %ss\n' \
            "$SCRAPE_S" "$SCRAPE_S"
        printf 'scrape_configs:\n- job_name: nova-pmem-observe\n'
        printf '  static_configs:\n'
        for spec in $COMPUTES; do
            # fqdn: the label Watcher's Prometheus datasource maps its
            # nodes by ([prometheus_client] fqdn_label).
            printf "  - targets: ['127.0.0.1:%d']\n    labels: {host: %s, fqdn: %s}\n" \
                $((OBSERVER_PORT + i)) "${spec%%:*}" "${spec%%:*}"
            i=$((i + 1))
        done
    } >"$dir/prometheus/prometheus.yml"
}

# One exporter per compute host (tests/integration/observers.py), its
# working sets from the table the scenario writes.
start_observers() {
    local spec name vcpus mem mode dram i=0
    for spec in $COMPUTES; do
        read -r name vcpus mem mode dram < <(compute_fields "${spec%%:*}")
        start "observer-$name" "$PY" -m tests.integration.observers "$name" \
            "$mode" "$dram" $((OBSERVER_PORT + i)) \
            "$WORK/observers/working-sets.json"
        i=$((i + 1))
    done
}

start_prometheus() {
    start prometheus prometheus \
        --config.file="$WORK/watcher/prometheus/prometheus.yml" \
        --storage.tsdb.path="$WORK/watcher/prometheus/data" \
        --web.listen-address="127.0.0.1:$PROMETHEUS_PORT" \
        --log.level=warn
}

# watcher_service NAME: a Watcher service from its console script, run in
# a directory of its own (not the source tree: see wsgi_watcher_api.py).
watcher_service() {
    (cd "$WORK/watcher" && start "$1" "$VENV/bin/$1" \
        --config-file "$WORK/watcher/watcher.conf" \
        --log-file "$WORK/logs/$1.log")
}

start_watcher_api() {
    start watcher-api env WATCHER_CONFIG_FILE="$WORK/watcher/watcher.conf" \
        "$VENV/bin/gunicorn" --chdir "$WORK/watcher" --pythonpath "$HERE" \
        --no-control-socket --bind "127.0.0.1:$WATCHER_PORT" --workers 1 \
        --threads 8 --keep-alive 0 --timeout 120 --graceful-timeout 5 \
        wsgi_watcher_api:application
}

start_aetos() {
    start aetos env AETOS_CONFIG_FILE="$WORK/watcher/aetos.conf" \
        "$VENV/bin/gunicorn" --chdir "$WORK/watcher" --pythonpath "$HERE" \
        --no-control-socket --bind "127.0.0.1:$AETOS_PORT" --workers 1 \
        --threads 4 --timeout 120 --graceful-timeout 5 --access-logfile - \
        wsgi_aetos:application
}

cmd_watcher() {
    # Started only by the scenario that needs them (tests/integration/
    # rebalance.py): the rest of the suite does without.
    local t0=$SECONDS spec
    case ${1:-} in
        start)
            write_watcher_config
            mariadb --socket="$WORK/mysql/sock" -uroot <<EOF
CREATE DATABASE IF NOT EXISTS watcher;
CREATE USER IF NOT EXISTS 'watcher'@'127.0.0.1' IDENTIFIED BY 'watcher';
GRANT ALL PRIVILEGES ON watcher.* TO 'watcher'@'127.0.0.1';
EOF
            start_observers
            start_prometheus
            start_aetos
            (cd "$WORK/watcher" && "$VENV/bin/watcher-db-manage" \
                --config-file "$WORK/watcher/watcher.conf" upgrade \
                >>"$WORK/logs/watcher-db-manage.out" 2>&1) ||
                die "watcher-db-manage upgrade failed (logs/watcher-db-manage.out)"
            start_watcher_api
            watcher_service watcher-decision-engine
            watcher_service watcher-applier
            wait_for 60 Prometheus http_ok \
                "http://127.0.0.1:$PROMETHEUS_PORT/-/ready"
            wait_for 90 watcher-api http_ok "http://127.0.0.1:$WATCHER_PORT/"
            wait_for 60 Aetos http_ok "http://127.0.0.1:$AETOS_PORT/"
            "$PY" -m tests.integration.client wait-consumer \
                watcher.decision.control
            "$PY" -m tests.integration.client wait-consumer \
                watcher.applier.control
            log "Watcher, Aetos, Prometheus and the observers up in $((SECONDS - t0))s"
            ;;
        stop)
            # All at once, SIGKILL after 5 s: Watcher's services take longer
            # than that to stop gracefully, which is not under test.
            local names=(watcher-applier watcher-decision-engine watcher-api
                aetos prometheus) files=()
            for spec in $COMPUTES; do
                names+=("observer-${spec%%:*}")
            done
            for spec in "${names[@]}"; do
                files+=("$WORK/pids/$spec.pid")
            done
            stop_groups 20 "${files[@]}"
            ;;
        *) die "usage: $0 watcher start|stop" ;;
    esac
}

cmd_nova_status() {
    # nova-status upgrade check on the deployment's nova.conf (the pmem
    # filters and weighers enabled), as an operator runs it before and
    # after an upgrade: its report, then its exit code on the last line.
    local rc=0
    "$VENV/bin/nova-status" --config-file "$WORK/etc/nova.conf" \
        upgrade check 2>&1 || rc=$?
    echo "$rc"
}

cmd_rss() {
    # resident memory of every process of every group, MB
    local f pgids=()
    for f in "$WORK"/pids/*.pid; do
        [[ -e $f ]] && pgids+=("$(cat "$f")")
    done
    ps -eo pgid=,rss= | awk -v g="${pgids[*]}" '
        BEGIN { n = split(g, a, " "); for (i = 1; i <= n; i++) want[a[i]] = 1 }
        ($1 in want) { s += $2 }
        END { printf "%d\n", s / 1024 }'
}

scheduler_workers_started() {
    local parent
    parent=$(cat "$WORK/pids/nova-scheduler.pid")
    (($(pgrep -P "$parent" | wc -l) >= 2))
}

cmd_scheduler() {
    stop nova-scheduler
    start_scheduler "$1"
    # The parent process reads the aggregates before it forks the workers:
    # once they run, an aggregate change is one the parent missed.
    wait_for 90 "nova-scheduler workers" scheduler_workers_started
    services_up nova-scheduler 1
}

case ${1:-} in
    packages) cmd_packages ;;
    up) cmd_up ;;
    down) cmd_down ;;
    restart-compute) cmd_restart_compute "$2" ;;
    kill-scheduler-worker) cmd_kill_scheduler_worker ;;
    restart-rabbit) cmd_restart_rabbit ;;
    rpc-queues) cmd_rpc_queues ;;
    scheduler) cmd_scheduler "$2" ;;
    placement) cmd_placement "$2" ;;
    keystone) cmd_keystone "${2:-}" ;;
    watcher) cmd_watcher "${2:-}" ;;
    leftovers) cmd_leftovers ;;
    shared-connections) cmd_shared_connections ;;
    scheduler-workers) cmd_scheduler_workers ;;
    rss) cmd_rss ;;
    nova-status) cmd_nova_status ;;
    *) die "usage: $0 packages|up|down|leftovers|restart-compute H|kill-scheduler-worker|scheduler-workers|restart-rabbit|rpc-queues|scheduler pmem|plain|placement N|keystone stop|start|watcher start|stop|rss|nova-status" ;;
esac
