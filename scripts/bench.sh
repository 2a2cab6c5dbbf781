#!/usr/bin/env bash
# Benchmarks the checkout against the physical limit on this machine, in one run,
# and rewrites the `## Latest results` section of docs/BENCHMARKS.md: new signed
# callbacks through the release backend next to pgbench doing the same work in
# one round trip (the handler's one statement, and the general path's statements
# pipelined) and one round trip per statement, at 8, 32 and 80 clients; a
# duplicate storm (8 to 100 clients) next to the one-statement duplicate path;
# the pay next to redis-benchmark's GETDEL plus pgbench on pay's one statement;
# where the CPU went; the backend's peak memory. Every pgbench script is
# generated from the SQL files the handler runs. Not part of the test suite.
# Takes about 20 minutes (3 rounds of 10 s runs per client count).
#
#   bash scripts/bench.sh                          # everything
#   bash scripts/bench.sh --rounds 5 --duration 20 # steadier figures
#   bash scripts/bench.sh --steps new,dup --clients 32,80
#   bash scripts/bench.sh --db-max-connections 40  # try another backend pool size
#   bash scripts/bench.sh --steps scale            # scale-out only (about 6 minutes): new callbacks straight to
#                                                  # one backend and through HAProxy with 1, 2, 3 backends, next
#                                                  # to pgbench; writes docs/SCALING.md's `## Measured` section
#   bash scripts/bench.sh --postgres postgres://postgres@127.0.0.1:5432  # another server, not a cluster of its own
#   bash scripts/bench.sh --keep                   # keep the cluster and the databases for inspection
#   bash scripts/bench.sh --help                   # every option
#
# It measures on a PostgreSQL cluster of its own, started here and removed at the
# end: initdb's defaults (fsync and synchronous_commit on, shared_buffers 128MB),
# room for 100 pgbench clients beside the backend's pool, and autovacuum off (the
# benchmark VACUUMs before every run, as pgbench does). The benchmark creates its
# two databases there with the backend's own migrations.
#
# Environment:
#   CARGO_TARGET_DIR   where cargo builds (and where the binaries are run from); default target/
#
# Run it on a quiet machine: the figures are ratios of runs made minutes apart,
# and the report says how much CPU other processes took during each run.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
step() { printf '==> %s\n' "$*"; }

step "Load tools"
missing=()
command -v pgbench >/dev/null || missing+=(postgresql-client)
command -v redis-benchmark >/dev/null || missing+=(redis-tools)
if [[ " $* " =~ [\ ,=]scale[\ ,] ]] && ! command -v haproxy >/dev/null && [[ ! -x /usr/sbin/haproxy ]]; then
    missing+=(haproxy)
fi
if ((${#missing[@]})); then
    echo "    installing ${missing[*]} from Debian's packages"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
else
    echo "    pgbench, redis-benchmark present"
fi

# PostgreSQL's server binaries (for the cluster below) and Redis.
bash scripts/ensure-services.sh

step "Building backend, platform-sim and bench (release)"
cargo build --release --locked -p backend -p platform-sim -p bench
if [[ " $* " == *" --help "* || " $* " == *" -h "* ]]; then
    exec "$target/release/bench" --help
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
is_root() { [[ $(id -u) == 0 ]]; }
as_pg() { if is_root; then runuser -u postgres -- "$@"; else "$@"; fi; }
keep=false
[[ " $* " == *" --keep "* ]] && keep=true
platform_pid='' pgbin='' pgdata=''
cleanup() {
    set +e
    [[ -n $platform_pid ]] && kill "$platform_pid" 2>/dev/null
    if [[ -n $pgdata ]] && ! $keep; then
        as_pg "$pgbin/pg_ctl" -D "$pgdata" -w -m fast stop >/dev/null
        rm -rf "$pgdata"
    fi
}
trap cleanup EXIT

extra_args=()
if [[ " $* " != *" --postgres "* ]]; then
    pgbin=$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n1)
    pgdata=$(mktemp -d /tmp/checkout-bench-pg.XXXXXX)
    is_root && chown postgres:postgres "$pgdata"
    port=$(free_port)
    step "Starting a PostgreSQL cluster of the benchmark's own on 127.0.0.1:$port"
    as_pg "$pgbin/initdb" -D "$pgdata" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
    as_pg "$pgbin/pg_ctl" -D "$pgdata" -l "$pgdata/server.log" -w -o "-p $port -c listen_addresses=127.0.0.1 \
        -c unix_socket_directories=$pgdata -c max_connections=300 -c autovacuum=off" start >/dev/null
    $keep && echo "    kept after the run: postgres://postgres@127.0.0.1:$port (data in $pgdata)"
    extra_args+=(--postgres "postgres://postgres@127.0.0.1:$port")
fi

# The pay hands each payment to a platform. In production that is another
# process; so it is here: a platform-sim that holds payments for an hour, so no
# callback lands during the measurement and the backend's memory is its own. It
# logs at warn, as the backends the benchmark starts do: in production its CPU is
# not on our cores, and here every line it formats would be taken from the pay.
if [[ " $* " != *" --pay-platform-url "* ]]; then
    port=$(free_port)
    step "Starting platform-sim on 127.0.0.1:$port for the pay"
    RUST_LOG=warn WEBHOOK_SECRET="whsec_$(head -c 32 /dev/urandom | base64)" "$target/release/platform-sim" \
        --bind-addr "127.0.0.1:$port" --processing-delay 1h >/dev/null 2>&1 &
    platform_pid=$!
    extra_args+=(--pay-platform-url "http://127.0.0.1:$port" --pay-platform-pid "$platform_pid")
fi

step "Running the benchmark"
"$target/release/bench" --backend-bin "$target/release/backend" \
    --command "bash scripts/bench.sh${*:+ $*}" "${extra_args[@]}" "$@"
