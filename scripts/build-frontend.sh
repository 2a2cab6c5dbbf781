#!/usr/bin/env bash
# Builds the payment page into dist/ and the operator console into dist/ops/
# (release: profile wasm-release, wasm-opt -Oz), reports each .wasm's size, and
# fails when a gzip size exceeds its budget.
#
# The payment page is built first: Trunk empties its dist directory, and the
# payment page's is dist/ itself, which holds dist/ops/.
#
# Environment:
#   MAX_WASM_GZIP_KIB       size budget for the payment page's gzipped .wasm (default 150)
#   MAX_OPS_WASM_GZIP_KIB   size budget for the operator console's gzipped .wasm (default 400)
set -euo pipefail
cd "$(dirname "$0")/.."

# Installs missing tools (fast when present) and puts wasm-opt on PATH.
SKIP_BROWSER=1 . scripts/install-frontend-tools.sh

echo "==> cargo fetch --locked"
# Trunk.toml sets offline = true, so every crate must be in the local cache.
cargo fetch --locked --quiet

# check_budget DIR BUDGET_KIB: the one .wasm in DIR, its sizes, and the budget.
check_budget() {
    local dir=$1 budget_kib=$2
    shopt -s nullglob
    local wasm_files=("$dir"/*.wasm)
    shopt -u nullglob
    if [[ ${#wasm_files[@]} -ne 1 ]]; then
        echo "error: expected exactly one .wasm in $dir/, found ${#wasm_files[@]}" >&2
        exit 1
    fi
    local wasm="${wasm_files[0]}" raw gz
    raw=$(stat -c %s "$wasm")
    gz=$(gzip -9 -c "$wasm" | wc -c)
    awk -v f="$wasm" -v raw="$raw" -v gz="$gz" -v budget="$budget_kib" 'BEGIN {
        printf "==> %s: %d bytes raw (%.1f KiB), %d bytes gzip -9 (%.1f KiB); budget %d KiB gzip\n",
            f, raw, raw / 1024, gz, gz / 1024, budget }'
    if (( gz > budget_kib * 1024 )); then
        echo "error: the gzipped .wasm in $dir/ is over the ${budget_kib} KiB budget" >&2
        exit 1
    fi
}

# --dist: the Trunk.toml files point `trunk serve` at target/, away from dist/.
# Absolute, because Trunk reads a relative --dist from the config file's folder.
echo "==> trunk build --release --dist dist (the payment page, dist/)"
trunk build --release --dist "$PWD/dist"
check_budget dist "${MAX_WASM_GZIP_KIB:-150}"

echo "==> trunk build --release --config ops-console/Trunk.toml --dist "$PWD/dist/ops" (the operator console, dist/ops/)"
trunk build --release --config ops-console/Trunk.toml --dist "$PWD/dist/ops"
check_budget dist/ops "${MAX_OPS_WASM_GZIP_KIB:-400}"
