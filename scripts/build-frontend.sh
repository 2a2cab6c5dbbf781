#!/usr/bin/env bash
# Builds the payment page into dist/ (release: profile wasm-release, wasm-opt -Oz)
# and reports the .wasm size; fails when the gzip size exceeds the budget.
#
# Environment:
#   MAX_WASM_GZIP_KIB   size budget for the gzipped .wasm (default 150)
set -euo pipefail
cd "$(dirname "$0")/.."

# Installs missing tools (fast when present) and puts wasm-opt on PATH.
SKIP_BROWSER=1 . scripts/install-frontend-tools.sh

echo "==> cargo fetch --locked"
# Trunk.toml sets offline = true, so every crate must be in the local cache.
cargo fetch --locked --quiet

echo "==> trunk build --release"
trunk build --release

shopt -s nullglob
wasm_files=(dist/*.wasm)
if [[ ${#wasm_files[@]} -ne 1 ]]; then
    echo "error: expected exactly one .wasm in dist/, found ${#wasm_files[@]}" >&2
    exit 1
fi
wasm="${wasm_files[0]}"
raw=$(stat -c %s "$wasm")
gz=$(gzip -9 -c "$wasm" | wc -c)
budget_kib="${MAX_WASM_GZIP_KIB:-150}"
awk -v f="$wasm" -v raw="$raw" -v gz="$gz" -v budget="$budget_kib" 'BEGIN {
    printf "==> %s: %d bytes raw (%.1f KiB), %d bytes gzip -9 (%.1f KiB); budget %d KiB gzip\n",
        f, raw, raw / 1024, gz, gz / 1024, budget }'
if (( gz > budget_kib * 1024 )); then
    echo "error: the gzipped .wasm is over the ${budget_kib} KiB budget" >&2
    exit 1
fi
