#!/usr/bin/env bash
# Checks that the committed sqlx query data (.sqlx/) matches the SQL in the code
# and the schema in migrations/: builds use that data instead of a database
# (SQLX_OFFLINE=true in .cargo/config.toml), so stale data would let a query
# that no longer fits the schema compile.
#
#   bash scripts/check-sqlx.sh           check: fails when .sqlx/ is stale
#   bash scripts/check-sqlx.sh --write   regenerate .sqlx/ after changing SQL or
#                                        a migration, then commit .sqlx/
#
# Both run against a scratch database created on the PostgreSQL server of
# DATABASE_URL (default postgres://postgres@127.0.0.1:5432; any database name in
# it is ignored), migrated from migrations/ and dropped at the end, so the data
# never depends on the state of anybody's own database. sqlx-cli is installed
# first, pinned to the sqlx version in Cargo.lock, with only PostgreSQL support.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '==> %s\n' "$*"; }

mode=check
case "${1:-}" in
    "") ;;
    --write) mode=write ;;
    *) echo "usage: $0 [--write]" >&2; exit 2 ;;
esac

# The sqlx version the workspace builds with; the CLI must match it, because the
# query data format and the macros' hashing belong to one version.
version=$(awk '/^name = "sqlx"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
if [[ -z $version ]]; then
    echo "error: no sqlx package in Cargo.lock" >&2
    exit 1
fi

step "sqlx-cli $version"
installed=$(cargo sqlx --version 2>/dev/null | awk '{ print $2 }' || true)
if [[ $installed == "$version" ]]; then
    echo "    already installed"
else
    echo "    installing (found: ${installed:-none})"
    cargo install sqlx-cli --version "$version" --locked \
        --no-default-features --features rustls,postgres
fi

# postgres://user@host:port[/db][?params] -> the server, plus a scratch database
# named per process so that two runs on one server do not collide.
url=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432}
params=""
if [[ $url == *\?* ]]; then
    params="?${url#*\?}"
    url=${url%%\?*}
fi
scheme=${url%%://*}
rest=${url#*://}
server="$scheme://${rest%%/*}"
scratch_name="checkout_sqlx_check_$$"
scratch="$server/$scratch_name$params"
authority=${rest%%/*}
host=${authority##*@} # for messages: never print a password

drop_scratch() {
    cargo sqlx database drop -y -f --no-dotenv --database-url "$scratch" >/dev/null 2>&1 || true
}
trap drop_scratch EXIT

step "Scratch database $scratch_name on $host"
cargo sqlx database create --no-dotenv --database-url "$scratch"

step "Applying migrations/"
cargo sqlx migrate run --no-dotenv --source migrations --database-url "$scratch"

# `-- --all-targets`: cargo check of the default members (api-types, backend)
# with their tests; that is where every query! macro lives. Keep these arguments
# the same in both modes, or the check compares different sets of queries.
if [[ $mode == write ]]; then
    step "Writing .sqlx/ (cargo sqlx prepare --workspace -- --all-targets)"
    DATABASE_URL=$scratch cargo sqlx prepare --workspace -- --all-targets
    echo "    .sqlx/ regenerated: commit it with the SQL change"
else
    step "Checking .sqlx/ (cargo sqlx prepare --workspace --check -- --all-targets)"
    log=$(mktemp)
    if ! DATABASE_URL=$scratch cargo sqlx prepare --workspace --check -- --all-targets 2>&1 | tee "$log"; then
        rm -f "$log"
        echo "error: .sqlx/ is stale; run: bash scripts/check-sqlx.sh --write, and commit .sqlx/" >&2
        exit 1
    fi
    # sqlx-cli only warns about query files no query uses any more; stale data is stale.
    if grep -q "potentially unused queries" "$log"; then
        rm -f "$log"
        echo "error: .sqlx/ holds data of queries that are gone; run: bash scripts/check-sqlx.sh --write" >&2
        exit 1
    fi
    rm -f "$log"
    echo "    .sqlx/ matches the queries and migrations/"
fi

step "Dropping $scratch_name"
drop_scratch
trap - EXIT
