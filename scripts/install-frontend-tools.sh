#!/usr/bin/env bash
# Installs what builds and tests the payment page; every step is skipped when
# the right version is already there, so a warm run takes about a second.
#
#   scripts/install-frontend-tools.sh      install, then print the PATH line to add
#   . scripts/install-frontend-tools.sh    install and export PATH in this shell
#
# Environment:
#   CHECKOUT_TOOLS_DIR   where npm tools go (default: $HOME/.cache/checkout-tools)
#   SKIP_BROWSER=1       do not install Chromium + chromedriver (building needs neither)
#
# Versions: trunk 0.21.14 (0.22 needs a newer rustc), wasm-bindgen-cli equal to
# the wasm-bindgen in Cargo.lock, binaryen 132 from npm (Debian's binaryen 108
# silently produces a broken .wasm), Chromium and chromedriver from Debian.

_frontend_tools_repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_frontend_tools_dir="${CHECKOUT_TOOLS_DIR:-$HOME/.cache/checkout-tools}"
_frontend_tools_path="$_frontend_tools_dir/binaryen/node_modules/.bin:$HOME/.cargo/bin"

# Runs in a subshell so `set -e` never leaks into a shell that sources this file.
_frontend_tools_install() (
    set -euo pipefail
    cd "$_frontend_tools_repo"
    export PATH="$_frontend_tools_path:$PATH"
    step() { printf '==> %s\n' "$*"; }

    step "Rust target wasm32-unknown-unknown"
    if rustup target list --installed | grep -qx wasm32-unknown-unknown; then
        echo "    already installed"
    else
        rustup target add wasm32-unknown-unknown
    fi

    local trunk_version=0.21.14
    step "trunk $trunk_version"
    if [[ "$(trunk --version 2>/dev/null || true)" == "trunk $trunk_version" ]]; then
        echo "    already installed"
    else
        # Without LTO and with parallel codegen the install takes minutes, not eight.
        CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
            cargo install trunk --version "$trunk_version" --locked
    fi

    local bindgen_version
    bindgen_version="$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)"
    if [[ -z "$bindgen_version" ]]; then
        echo "error: no wasm-bindgen in Cargo.lock; run 'cargo fetch' first" >&2
        exit 1
    fi
    step "wasm-bindgen-cli $bindgen_version (the version in Cargo.lock)"
    if [[ "$(wasm-bindgen --version 2>/dev/null || true)" == "wasm-bindgen $bindgen_version" ]]; then
        echo "    already installed"
    else
        # No --locked: its lockfile pins a webpki-roots release the registry lacks.
        CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
            cargo install wasm-bindgen-cli --version "$bindgen_version"
    fi

    local binaryen_dir="$_frontend_tools_dir/binaryen"
    step "binaryen 132 (wasm-opt) in $binaryen_dir"
    if "$binaryen_dir/node_modules/.bin/wasm-opt" --version 2>/dev/null | grep -q "version 132"; then
        echo "    already installed"
    else
        if ! command -v npm >/dev/null; then
            apt-get update -qq && apt-get install -y -qq nodejs npm
        fi
        mkdir -p "$binaryen_dir"
        npm install --prefix "$binaryen_dir" --no-audit --no-fund binaryen@132.0.0
    fi

    step "Chromium + chromedriver"
    if [[ "${SKIP_BROWSER:-0}" == 1 ]]; then
        echo "    skipped (SKIP_BROWSER=1)"
    elif [[ -x /usr/bin/chromedriver && -x /usr/bin/chromium ]]; then
        echo "    already installed"
    else
        apt-get update -qq
        apt-get install -y -qq chromium chromium-driver
    fi
)

if _frontend_tools_install; then
    _frontend_tools_status=0
else
    _frontend_tools_status=$?
fi

if [[ "${BASH_SOURCE[0]}" != "$0" ]]; then
    # Sourced: put the tools on this shell's PATH.
    if [[ $_frontend_tools_status == 0 && ":$PATH:" != *":$_frontend_tools_dir/binaryen/node_modules/.bin:"* ]]; then
        export PATH="$_frontend_tools_path:$PATH"
    fi
    return $_frontend_tools_status
fi
if [[ $_frontend_tools_status == 0 ]]; then
    echo "Tools ready. Add wasm-opt to PATH with:"
    echo "  export PATH=\"$_frontend_tools_path:\$PATH\""
fi
exit $_frontend_tools_status
