#!/usr/bin/env bash
# The one command that runs the app on a fresh machine: starts PostgreSQL and
# Redis if needed, builds the payment page, then serves the demo shop and the
# API at http://127.0.0.1:3000 (database created and migrated at start).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/ensure-services.sh
SKIP_BROWSER=1 bash scripts/build-frontend.sh

export DEMO="${DEMO:-true}"
export STATIC_DIR="${STATIC_DIR:-$PWD/dist}"
export RUST_LOG="${RUST_LOG:-info,sqlx=warn}"
echo "==> Starting the backend: open http://${BIND_ADDR:-127.0.0.1:3000}"
exec cargo run --release --locked -p backend
