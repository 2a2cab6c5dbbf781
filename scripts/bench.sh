#!/usr/bin/env bash
# Benchmarks the checkout against the physical limit on this machine, in one run,
# and writes docs/BENCHMARKS.md: the callback handler's SQL under pgbench next to
# the same callbacks through the release backend (new, and a duplicate storm) at
# 8, 32 and 100 clients; pay-now next to redis-benchmark; the page's .wasm size;
# the backend's peak memory. Not part of the test suite. Takes about 9 minutes
# (3 rounds of 10 s runs per client count; about 12 with --profile --pgbench-ping).
#
#   bash scripts/bench.sh                          # everything
#   bash scripts/bench.sh --profile --pgbench-ping # plus perf profiles and the price of the pool's ping
#   bash scripts/bench.sh --rounds 5 --duration 20 # steadier figures
#   bash scripts/bench.sh --steps new,dup --clients 32,100
#   bash scripts/bench.sh --db-max-connections 40  # try another backend pool size
#   bash scripts/bench.sh --help                   # every option
#
# Environment:
#   BENCH_BUILD_FRONTEND=1   rebuild dist/ (scripts/build-frontend.sh) even when a .wasm is there
#
# Run it on a quiet machine: the figures are ratios of runs made minutes apart,
# and the report says how much CPU other processes took during each run.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '==> %s\n' "$*"; }

step "Load tools"
missing=()
command -v pgbench >/dev/null || missing+=(postgresql-client)
command -v redis-benchmark >/dev/null || missing+=(redis-tools)
command -v gzip >/dev/null || missing+=(gzip)
if [[ " $* " == *" --profile "* ]] && ! command -v perf >/dev/null; then
    missing+=(linux-perf)
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

step "Building backend and bench (release)"
cargo build --release --locked -p backend -p bench

step "Running the benchmark"
exec target/release/bench --backend-bin target/release/backend \
    --command "bash scripts/bench.sh${*:+ $*}" "$@"
