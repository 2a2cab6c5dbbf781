#!/usr/bin/env bash
# The checkout as it runs in production, on one machine's loopback: three
# backends behind HAProxy, Redis with a replica and three Sentinels, the
# shared PostgreSQL, and platform-sim as the payment platform.
#
#   bash scripts/cluster.sh start     build, start everything, wait until HAProxy serves
#   bash scripts/cluster.sh stop      drain the backends (SIGTERM), stop the rest
#   bash scripts/cluster.sh status    what runs, and what HAProxy thinks of each backend
#
#   http://127.0.0.1:3000        the shop, through HAProxy (CLUSTER_LISTEN)
#   http://127.0.0.1:3099        HAProxy's statistics page (CLUSTER_STATS)
#   127.0.0.1:3101..3103         the backends (/readyz is what HAProxy checks)
#   127.0.0.1:6380, :6381        Redis primary and replica (request tokens)
#   127.0.0.1:26380..26382       Redis Sentinels, master name "checkout"
#   127.0.0.1:4000               platform-sim (the checkout's own protocol)
#
# Logs and state: .local/cluster/. CLUSTER_INSTANCES=1|2|3 picks how many
# backends start. HAProxy and Redis Sentinel come from Debian's packages and
# are installed when missing. docs/SCALING.md explains the setup and its numbers.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=.local/cluster
instances="${CLUSTER_INSTANCES:-3}"
listen="${CLUSTER_LISTEN:-127.0.0.1:3000}"
stats="${CLUSTER_STATS:-127.0.0.1:3099}"
redis_ports=(6380 6381)
sentinel_ports=(26380 26381 26382)
sim_addr="127.0.0.1:4000"
per_instance_connections="${DATABASE_MAX_CONNECTIONS:-20}"
bin="${CARGO_TARGET_DIR:-target}/release"

say() { printf '==> %s\n' "$*"; }

# start NAME COMMAND...: runs it in the background, logging to $dir/NAME.log.
start() {
    local name="$1"; shift
    "$@" >>"$dir/$name.log" 2>&1 &
    echo "$!" >"$dir/$name.pid"
}

running() { [[ -f "$dir/$1.pid" ]] && kill -0 "$(cat "$dir/$1.pid")" 2>/dev/null; }

wait_for() {
    local what="$1" check="$2"
    for _ in $(seq 1 150); do
        if eval "$check" >/dev/null 2>&1; then return 0; fi
        sleep 0.2
    done
    echo "error: $what did not come up; logs in $dir/" >&2
    exit 1
}

stop_all() {
    local pids=()
    for n in $(seq 1 3); do
        if running "backend$n"; then pids+=("$(cat "$dir/backend$n.pid")"); fi
    done
    if [[ ${#pids[@]} -gt 0 ]]; then
        say "Draining ${#pids[@]} backend(s): SIGTERM, /readyz 503, requests in flight finish"
        kill -TERM "${pids[@]}" 2>/dev/null || true
        for _ in $(seq 1 300); do
            local alive=0
            for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
            [[ $alive -eq 0 ]] && break
            sleep 0.1
        done
    fi
    for name in haproxy platform-sim sentinel1 sentinel2 sentinel3 redis-replica redis-primary; do
        if running "$name"; then kill -TERM "$(cat "$dir/$name.pid")" 2>/dev/null || true; fi
    done
    rm -f "$dir"/*.pid
    say "Cluster stopped"
}

status() {
    for name in redis-primary redis-replica sentinel1 sentinel2 sentinel3 platform-sim backend1 backend2 backend3 haproxy; do
        if running "$name"; then echo "  $name: running (pid $(cat "$dir/$name.pid"))"; fi
    done
    if curl -fsS "http://$stats/;csv" >/dev/null 2>&1; then
        echo "  HAProxy's view (server, status, sessions now, requests served):"
        curl -fsS "http://$stats/;csv" | awk -F, '$1=="checkout" && $2!="FRONTEND" && $2!="BACKEND" {print "    " $2 ": " $18 ", " $5 " now, " $8 " in all"}'
    fi
    local primary
    primary=$(redis-cli -p "${sentinel_ports[0]}" SENTINEL get-master-addr-by-name checkout 2>/dev/null | paste -sd: || true)
    [[ -n "$primary" ]] && echo "  Redis primary (by Sentinel): $primary"
    return 0
}

case "${1:-start}" in
    stop) stop_all; exit 0 ;;
    status) status; exit 0 ;;
    start) ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: scripts/cluster.sh start|stop|status" >&2; exit 2 ;;
esac

case "$instances" in 1|2|3) ;; *) echo "CLUSTER_INSTANCES must be 1, 2 or 3" >&2; exit 2 ;; esac
mkdir -p "$dir"
if running haproxy || running backend1; then
    echo "the cluster is already running (scripts/cluster.sh stop first)" >&2
    exit 1
fi

# PostgreSQL usable, HAProxy and Redis Sentinel installed (Debian's packages).
bash scripts/ensure-services.sh
set -a; . "${CHECKOUT_SERVICES_DIR:-.services}/env"; set +a
export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/checkout}"

say "Connection budget: $instances instance(s) x $per_instance_connections PostgreSQL connections"
max_connections=$(psql "${DATABASE_URL%/*}/postgres" -Atc "SHOW max_connections")
reserved=$(psql "${DATABASE_URL%/*}/postgres" -Atc "SHOW superuser_reserved_connections")
# Besides the pools: the migrations' one connection at start, psql, and a
# margin of 10 for an operator's session and the reconcile command.
budget=$(( instances * per_instance_connections + 10 ))
if (( budget > max_connections - reserved )); then
    echo "error: $instances x $per_instance_connections connections + 10 spare = $budget, but PostgreSQL takes $max_connections - $reserved reserved; lower DATABASE_MAX_CONNECTIONS" >&2
    exit 1
fi
echo "    $budget of PostgreSQL's $(( max_connections - reserved )) usable connections"

say "Building the backend, platform-sim and the payment page (release)"
cargo build --release --locked -p backend -p platform-sim
SKIP_BROWSER=1 bash scripts/build-frontend.sh

say "Redis primary :${redis_ports[0]}, replica :${redis_ports[1]}, Sentinels :${sentinel_ports[*]}"
# --dir: a replica's full sync writes an RDB file even with persistence off; it goes under $dir.
start redis-primary redis-server --port "${redis_ports[0]}" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir"
start redis-replica redis-server --port "${redis_ports[1]}" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" \
    --replicaof 127.0.0.1 "${redis_ports[0]}"
wait_for "Redis" "redis-cli -p ${redis_ports[0]} ping"
for n in 1 2 3; do
    port="${sentinel_ports[$((n - 1))]}"
    # Sentinel rewrites its file (what it learned of replicas and peers): a fresh one each start.
    cat >"$dir/sentinel$n.conf" <<CONF
port $port
bind 127.0.0.1
sentinel monitor checkout 127.0.0.1 ${redis_ports[0]} 2
sentinel down-after-milliseconds checkout 1000
sentinel failover-timeout checkout 5000
sentinel parallel-syncs checkout 1
CONF
    start "sentinel$n" redis-sentinel "$dir/sentinel$n.conf"
done
wait_for "the Sentinels" "redis-cli -p ${sentinel_ports[2]} SENTINEL get-master-addr-by-name checkout | grep -q ${redis_ports[0]}"

# One webhook secret for the platform and every backend, kept for the next start.
if [[ ! -s "$dir/webhook-secret" ]]; then
    (umask 077; printf 'whsec_%s' "$(head -c 32 /dev/urandom | base64)" >"$dir/webhook-secret")
fi
webhook_secret="$(cat "$dir/webhook-secret")"
if [[ -z "${ADMIN_TOKEN:-}" ]]; then
    if [[ ! -s .local/admin-token ]]; then
        (umask 077; head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >.local/admin-token)
    fi
    ADMIN_TOKEN="$(cat .local/admin-token)"
fi

say "platform-sim at http://$sim_addr"
start platform-sim env WEBHOOK_SECRET="$webhook_secret" "$bin/platform-sim" --bind-addr "$sim_addr"
wait_for "platform-sim" "curl -fsS http://$sim_addr/healthz"

sentinels=$(printf '127.0.0.1:%s,' "${sentinel_ports[@]}")
for n in $(seq 1 "$instances"); do
    say "Backend $n at 127.0.0.1:310$n"
    env PLATFORM=remote PLATFORM_URL="http://$sim_addr" WEBHOOK_SECRET="$webhook_secret" \
        ADMIN_TOKEN="$ADMIN_TOKEN" TRUSTED_PROXIES=127.0.0.1 \
        BIND_ADDR="127.0.0.1:310$n" PUBLIC_ORIGIN="http://$listen" NOTIFY_BASE_URL="http://$listen" \
        REDIS_SENTINELS="${sentinels%,}" REDIS_MASTER_NAME=checkout \
        DATABASE_MAX_CONNECTIONS="$per_instance_connections" \
        DEMO="${DEMO:-true}" STATIC_DIR="$PWD/dist" RUST_LOG="${RUST_LOG:-info,sqlx=warn}" \
        DRAIN_SECS="${DRAIN_SECS:-5}" \
        "$bin/backend" >>"$dir/backend$n.log" 2>&1 &
    echo "$!" >"$dir/backend$n.pid"
    # One at a time: the first migrates the database, the others find it migrated.
    wait_for "backend $n" "curl -fsS http://127.0.0.1:310$n/readyz"
done

say "HAProxy at http://$listen (statistics at http://$stats)"
cp deploy/haproxy.cfg "$dir/haproxy.cfg"
for n in $(seq 1 "$instances"); do
    echo "    server backend$n 127.0.0.1:310$n" >>"$dir/haproxy.cfg"
done
CHECKOUT_LISTEN="$listen" CHECKOUT_STATS="$stats" haproxy -c -q -f "$dir/haproxy.cfg"
start haproxy env CHECKOUT_LISTEN="$listen" CHECKOUT_STATS="$stats" haproxy -db -f "$dir/haproxy.cfg"
wait_for "HAProxy" "curl -fsS http://$listen/readyz"

say "Cluster up: open http://$listen (operator console: http://$listen/ops/, admin token in .local/admin-token)"
status
echo "Stop it with: bash scripts/cluster.sh stop"
