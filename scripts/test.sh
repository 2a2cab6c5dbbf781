#!/usr/bin/env bash
# The one command that runs every check and test on a fresh machine: services,
# tools, formatting, lints (native, wasm32, and each backend build: default,
# without the sandbox, with fault injection), unused dependencies, no I/O crate
# under the rules crate, docs, the compile-time SQL data, unit and integration
# tests against real PostgreSQL and Redis, the service step against a PostgreSQL
# that asks for passwords, fault injection with real processes, schemathesis
# against the OpenAPI description, the release build of the payment page, and
# the browser tests in headless Chromium.
# FAULT_SEEDS=1,2,3 (default) picks the seeded fault schedules.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n==> %s\n' "$*"; }
started=$(date +%s)

step "Services"
bash scripts/ensure-services.sh
# Where the services are (the project's own cluster when the machine's is not usable).
set -a; . "${CHECKOUT_SERVICES_DIR:-.services}/env"; set +a

step "Tools for the payment page"
. scripts/install-frontend-tools.sh

step "Tools for the checks"
bash scripts/install-check-tools.sh

step "Dropping databases and roles kept by failed tests of earlier runs"
pg_admin="${TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432}/postgres"
psql "$pg_admin" -Atc \
    "SELECT datname FROM pg_database WHERE datname LIKE 'checkout\_test\_%' OR datname LIKE 'e2e\_%'" |
    while read -r db; do psql -q "$pg_admin" -c "DROP DATABASE IF EXISTS \"$db\" WITH (FORCE)"; done
# Roles of db_roles.rs that a killed test run left behind (their databases are gone now).
psql "$pg_admin" -Atc "SELECT rolname FROM pg_roles WHERE rolname LIKE 'checkout\_test\_%'" |
    while read -r role; do psql -q "$pg_admin" -c "DROP OWNED BY \"$role\"; DROP ROLE IF EXISTS \"$role\""; done

step "Compile-time SQL data (.sqlx/) is fresh"
bash scripts/check-sqlx.sh

step "cargo fmt --check"
cargo fmt --all --check

step "cargo clippy (native)"
cargo clippy --locked --workspace --exclude frontend --exclude ops-console --all-targets -- -D warnings

step "cargo clippy (backend without the sandbox, and with fault injection)"
cargo clippy --locked -p backend --no-default-features --all-targets -- -D warnings
cargo clippy --locked -p backend --features fault-injection --all-targets -- -D warnings

step "cargo clippy (wasm32 payment page)"
cargo clippy --locked -p frontend --target wasm32-unknown-unknown -- -D warnings

step "cargo clippy (wasm32 operator console)"
cargo clippy --locked -p ops-console --target wasm32-unknown-unknown -- -D warnings

step "cargo clippy (wasm32 HTTP client of both pages)"
cargo clippy --locked -p web-client --target wasm32-unknown-unknown -- -D warnings

step "Unused dependencies (cargo machete)"
cargo machete

step "The rules crate does no I/O (no I/O crate in checkout-rules' dependency tree)"
io_crates=$(cargo tree --locked -p checkout-rules -e normal --prefix none |
    grep -E '^(sqlx|axum|tokio|redis|hyper|reqwest|tower|mio) ' | sort -u || true)
if [ -n "$io_crates" ]; then
    echo "checkout-rules depends on crates that do I/O:" >&2
    echo "$io_crates" >&2
    exit 1
fi

step "Docs (cargo doc, warnings denied)"
RUSTDOCFLAGS="-D warnings" cargo doc --locked --workspace --no-deps --exclude frontend --exclude ops-console

step "Unit and integration tests (api-types, checkout-rules, callback-signing, platform-protocols, backend, platform-sim, bench, testkit)"
cargo test --locked -p api-types -p checkout-rules -p callback-signing -p platform-protocols -p backend -p platform-sim -p bench -p testkit

step "cargo run -p backend picks the service binary (what scripts/run.sh runs)"
cargo run --locked -q -p backend -- --version

step "The service step against a PostgreSQL that asks for passwords and a Redis that does"
bash scripts/test-services.sh

step "Fault injection: the backend as a child process, killed, frozen; PostgreSQL and Redis taken away"
# The fault tests start target/debug/backend-fault-injection (crash points) and
# target/debug/backend (the ordinary build, which must ignore CRASH_POINTS);
# build both from this tree first, separately, so the ordinary one stays without them.
cargo build --locked -p backend --bin backend
cargo build --locked -p backend --features fault-injection --bin backend-fault-injection
cargo test --locked -p storm -p faults

step "schemathesis: every operation of /api/openapi.json, no 5xx, every answer as described"
bash scripts/schemathesis.sh

step "Payment page logic tests, and web-client's (the pages' HTTP client: error mapping, escaping)"
cargo test --locked -p frontend -p web-client

step "Operator console logic tests (routes, chart geometry, formats)"
cargo test --locked -p ops-console

step "Release build of the payment page and the operator console"
bash scripts/build-frontend.sh

step "Browser end-to-end tests"
cargo test --locked -p e2e

echo
echo "All checks passed in $(( $(date +%s) - started )) s."
