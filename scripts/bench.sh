#!/usr/bin/env bash
# Benchmarks the checkout against the physical limit on this machine, in one run,
# and writes docs/BENCHMARKS.md: new signed callbacks through the release backend
# next to pgbench doing the same work in one round trip (the handler's one
# statement, and the general path's statements pipelined) and one round trip per
# statement, at 8, 32 and 80 clients; a duplicate storm (8 to 100 clients) next
# to the one-statement duplicate path; pay now next to redis-benchmark's GETDEL
# plus pgbench on pay's one statement; the page's .wasm size; the backend's peak
# memory. Every pgbench script is generated from the SQL files the handler runs.
# Not part of the test suite. Takes about 20 minutes (3 rounds of 10 s runs per
# client count).
#
#   bash scripts/bench.sh                          # everything
#   bash scripts/bench.sh --profile --pgbench-ping # plus perf profiles and the price of the pool's ping
#   bash scripts/bench.sh --rounds 5 --duration 20 # steadier figures
#   bash scripts/bench.sh --steps new,dup --clients 32,80
#   bash scripts/bench.sh --db-max-connections 40  # try another backend pool size
#   bash scripts/bench.sh --steps scale            # scale-out only (about 6 minutes): new callbacks straight to
#                                                  # one backend and through HAProxy with 1, 2, 3 backends, next
#                                                  # to pgbench; writes docs/SCALING.md's `## Measured` section
#   bash scripts/bench.sh --help                   # every option
#
# Environment:
#   BENCH_BUILD_FRONTEND=1   rebuild dist/ (scripts/build-frontend.sh) even when a .wasm is there
#   CARGO_TARGET_DIR         where cargo builds (and where the binaries are run from); default target/
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
command -v gzip >/dev/null || missing+=(gzip)
if [[ " $* " == *" --profile "* ]] && ! command -v perf >/dev/null; then
    missing+=(linux-perf)
fi
if [[ " $* " =~ [\ ,=]scale[\ ,] ]] && ! command -v haproxy >/dev/null && [[ ! -x /usr/sbin/haproxy ]]; then
    missing+=(haproxy)
fi
if ((${#missing[@]})); then
    echo "    installing ${missing[*]} from Debian's packages"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
else
    echo "    pgbench, redis-benchmark present"
fi

# PostgreSQL's server binaries (the benchmark starts its own cluster) and Redis.
bash scripts/ensure-services.sh

shopt -s nullglob
wasm=(dist/*.wasm)
if [[ ${#wasm[@]} -eq 0 || "${BENCH_BUILD_FRONTEND:-0}" == 1 ]]; then
    step "Building the payment page (release)"
    # An over-budget page still gets built and measured; the report marks the target missed.
    bash scripts/build-frontend.sh || echo "    warning: scripts/build-frontend.sh failed; see above"
fi

step "Building backend, platform-sim and bench (release)"
cargo build --release --locked -p backend -p platform-sim -p bench

# Pay-now hands each payment to a platform. In production that is another
# process; so it is here: a platform-sim that holds payments for an hour, so no
# callback lands during the measurement and the backend's memory is its own. It
# logs at warn, as the backends the benchmark starts do: in production its CPU is
# not on our cores, and here every line it formats would be taken from the pay.
platform_args=()
if [[ " $* " != *" --pay-platform-url "* ]]; then
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    step "Starting platform-sim on 127.0.0.1:$port for pay-now"
    RUST_LOG=warn WEBHOOK_SECRET="whsec_$(head -c 32 /dev/urandom | base64)" "$target/release/platform-sim" \
        --bind-addr "127.0.0.1:$port" --processing-delay 1h >/dev/null 2>&1 &
    platform_pid=$!
    trap 'kill $platform_pid 2>/dev/null || true' EXIT
    platform_args=(--pay-platform-url "http://127.0.0.1:$port")
fi

step "Running the benchmark"
"$target/release/bench" --backend-bin "$target/release/backend" \
    --command "bash scripts/bench.sh${*:+ $*}" "${platform_args[@]}" "$@"
