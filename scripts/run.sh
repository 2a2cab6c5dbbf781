#!/usr/bin/env bash
# The one command that runs the app on a fresh machine: makes sure PostgreSQL and
# Redis are usable (running the project's own when the machine's are not), builds
# the payment page, then serves the demo shop and the API at http://127.0.0.1:3000
# (database created and migrated at start).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/ensure-services.sh
# When the configured PostgreSQL/Redis are not usable (e.g. PostgreSQL asks for a
# password) and their URLs are the defaults, the project's own run instead: use them.
set -a; . "${CHECKOUT_SERVICES_DIR:-.services}/env"; set +a
SKIP_BROWSER=1 bash scripts/build-frontend.sh

export DEMO="${DEMO:-true}"
export STATIC_DIR="${STATIC_DIR:-$PWD/dist}"
export RUST_LOG="${RUST_LOG:-info,sqlx=warn}"
echo "==> Starting the backend: open http://${BIND_ADDR:-127.0.0.1:3000}"
exec cargo run --release --locked -p backend
