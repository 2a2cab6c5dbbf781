#!/usr/bin/env bash
# The one command that runs every check and test on a fresh machine: services,
# tools, formatting, lints (native and wasm32), unit and integration tests
# against real PostgreSQL and Redis, the release build of the payment page,
# fault injection with real processes, and the browser tests in headless Chromium.
# FAULT_SEEDS=1,2,3 (default) picks the seeded fault schedules.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n==> %s\n' "$*"; }
started=$(date +%s)

step "Services"
bash scripts/ensure-services.sh

step "Tools for the payment page"
. scripts/install-frontend-tools.sh

step "Dropping databases left by earlier test runs"
psql -h 127.0.0.1 -U postgres -d postgres -Atc \
    "SELECT datname FROM pg_database WHERE datname LIKE 'checkout\_test\_%' OR datname LIKE 'e2e\_%'" |
    while read -r db; do psql -q -h 127.0.0.1 -U postgres -d postgres -c "DROP DATABASE IF EXISTS \"$db\" WITH (FORCE)"; done

step "cargo fmt --check"
cargo fmt --all --check

step "cargo clippy (native)"
cargo clippy --locked --workspace --exclude frontend --all-targets -- -D warnings

step "cargo clippy (wasm32 payment page)"
cargo clippy --locked -p frontend --target wasm32-unknown-unknown -- -D warnings

step "Unit and integration tests (api-types, backend, platform-sim, bench, testkit)"
cargo test --locked -p api-types -p backend -p platform-sim -p bench -p testkit

step "Fault injection: the backend as a child process, killed, frozen; PostgreSQL and Redis taken away"
# The fault tests start target/debug/backend; build it from this tree first.
cargo build --locked -p backend --bin backend
cargo test --locked -p storm

step "Payment page logic tests"
cargo test --locked -p frontend

step "Release build of the payment page"
bash scripts/build-frontend.sh

step "Browser end-to-end tests"
cargo test --locked -p e2e

echo
echo "All checks passed in $(( $(date +%s) - started )) s."
