#!/usr/bin/env bash
# Installs the pinned hygiene tools the test command runs, once; later runs
# skip what is present. cargo-machete finds dependencies a crate declares but
# never uses.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '==> %s\n' "$*"; }

machete_version=0.9.2
step "cargo-machete $machete_version"
if [[ "$(cargo machete --version 2>/dev/null || true)" == *"$machete_version"* ]]; then
    echo "    already installed"
else
    CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
        cargo install cargo-machete --version "$machete_version" --locked
fi
