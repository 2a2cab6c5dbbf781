#!/usr/bin/env bash
# The one command that runs the app on a fresh machine: makes sure PostgreSQL and
# Redis are usable (running the project's own when the machine's are not), builds
# the payment page, then serves the demo shop and the API at http://127.0.0.1:3000
# (database created and migrated at start).
#
#   bash scripts/run.sh                        the sandbox platform, inside the backend
#   bash scripts/run.sh --platform wechatpay   WeChat Pay API v3, played by platform-sim
#   bash scripts/run.sh --platform alipay      Alipay, played by platform-sim
#
# With wechatpay or alipay, a platform-sim process speaks that platform's real
# protocol on 127.0.0.1:4000 (SIM_BIND_ADDR), with a key set written once to
# .local/platform-keys (`platform-sim keys`); the page shows the platform's QR
# code and the simulator pays it by itself after SIM_PROCESSING_DELAY (default
# 8s). Its log is .local/platform-sim.log. It stops with the backend.
set -euo pipefail
cd "$(dirname "$0")/.."

while [[ $# -gt 0 ]]; do
    case "$1" in
        --platform) PLATFORM="${2:?--platform needs sandbox, wechatpay or alipay}"; shift 2 ;;
        --platform=*) PLATFORM="${1#*=}"; shift ;;
        -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument: $1 (try --help)" >&2; exit 2 ;;
    esac
done
export PLATFORM="${PLATFORM:-sandbox}"
case "$PLATFORM" in
    sandbox|remote|wechatpay|alipay) ;;
    *) echo "PLATFORM must be sandbox, wechatpay or alipay (or remote with PLATFORM_URL), not '$PLATFORM'" >&2; exit 2 ;;
esac

bash scripts/ensure-services.sh
# When the configured PostgreSQL/Redis are not usable (e.g. PostgreSQL asks for a
# password) and their URLs are the defaults, the project's own run instead: use them.
set -a; . "${CHECKOUT_SERVICES_DIR:-.services}/env"; set +a
SKIP_BROWSER=1 bash scripts/build-frontend.sh

export DEMO="${DEMO:-true}"
export STATIC_DIR="${STATIC_DIR:-$PWD/dist}"
export RUST_LOG="${RUST_LOG:-info,sqlx=warn}"
# The demo pays through the in-process sandbox platform by default: no money
# moves, and the page shows a "sandbox" badge. PLATFORM=remote PLATFORM_URL=...
# WEBHOOK_SECRET=... bash scripts/run.sh sends payments to a platform over HTTP instead.
sim_pid=""
stop_sim() { [[ -n "$sim_pid" ]] && kill "$sim_pid" 2>/dev/null || true; }
if [[ "$PLATFORM" == wechatpay || "$PLATFORM" == alipay ]]; then
    echo "==> Building platform-sim (it plays $PLATFORM, with its real protocol)"
    cargo build --release --locked -p platform-sim
    sim="${CARGO_TARGET_DIR:-target}/release/platform-sim"
    keys=.local/platform-keys
    if [[ ! -f "$keys/merchant_private_key.pem" ]]; then
        mkdir -p .local
        "$sim" keys "$keys" >/dev/null
        echo "==> Wrote a local key set to $keys"
    fi
    sim_addr="${SIM_BIND_ADDR:-127.0.0.1:4000}"
    sim_args=(--bind-addr "$sim_addr" --processing-delay "${SIM_PROCESSING_DELAY:-8s}")
    if [[ "$PLATFORM" == wechatpay ]]; then
        export WECHATPAY_MCHID="${WECHATPAY_MCHID:-1900009191}"
        export WECHATPAY_APPID="${WECHATPAY_APPID:-wxd678efh567hg6787}"
        export WECHATPAY_API_URL="http://$sim_addr"
        export WECHATPAY_MERCHANT_KEY_FILE="$PWD/$keys/merchant_private_key.pem"
        export WECHATPAY_MERCHANT_SERIAL="$(cat "$keys/merchant_serial_no.txt")"
        export WECHATPAY_PLATFORM_PUBLIC_KEY_FILE="$PWD/$keys/platform_public_key.pem"
        export WECHATPAY_PLATFORM_SERIAL="$(cat "$keys/platform_serial_no.txt")"
        export WECHATPAY_APIV3_KEY_FILE="$PWD/$keys/wechatpay_apiv3_key.txt"
        sim_args+=(--schedule wechat --wechatpay-keys "$keys"
            --wechatpay-mchid "$WECHATPAY_MCHID" --wechatpay-appid "$WECHATPAY_APPID")
    else
        export ALIPAY_APP_ID="${ALIPAY_APP_ID:-2021000000000001}"
        export ALIPAY_GATEWAY_URL="http://$sim_addr/gateway.do"
        export ALIPAY_APP_PRIVATE_KEY_FILE="$PWD/$keys/merchant_private_key.pem"
        export ALIPAY_PUBLIC_KEY_FILE="$PWD/$keys/platform_public_key.pem"
        sim_args+=(--schedule alipay --alipay-keys "$keys" --alipay-app-id "$ALIPAY_APP_ID")
    fi
    # platform-sim also speaks the checkout's own protocol, which needs a secret.
    WEBHOOK_SECRET="whsec_$(head -c 32 /dev/urandom | base64)" \
        "$sim" "${sim_args[@]}" >.local/platform-sim.log 2>&1 &
    sim_pid=$!
    trap stop_sim EXIT INT TERM
    for _ in $(seq 1 50); do
        if curl -s -o /dev/null "http://$sim_addr/healthz"; then break; fi
        if ! kill -0 "$sim_pid" 2>/dev/null; then
            echo "platform-sim did not start; its log:" >&2; cat .local/platform-sim.log >&2; exit 1
        fi
        sleep 0.2
    done
    echo "==> Platform: $PLATFORM, played by platform-sim at http://$sim_addr (pid $sim_pid; it pays each QR code after ${SIM_PROCESSING_DELAY:-8s}; log .local/platform-sim.log)"
elif [[ "$PLATFORM" == sandbox ]]; then
    echo "==> Platform: sandbox (the simulator inside the backend; built with the default 'sandbox' feature; no money moves)"
else
    echo "==> Platform: $PLATFORM at ${PLATFORM_URL:-<PLATFORM_URL is not set>}"
fi
# The operator console (/ops/) and /metrics want ADMIN_TOKEN: without one set,
# a token is made once for this checkout, kept in .local/admin-token (mode 600)
# and never printed.
if [[ -z "${ADMIN_TOKEN:-}" ]]; then
    if [[ ! -s .local/admin-token ]]; then
        mkdir -p .local
        (umask 077; head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >.local/admin-token)
    fi
    ADMIN_TOKEN="$(cat .local/admin-token)"
    export ADMIN_TOKEN
    echo "==> Operator console: http://${BIND_ADDR:-127.0.0.1:3000}/ops/ (sign in with the admin token in .local/admin-token)"
fi
# Merchants' API keys are kept as HMACs under MERCHANT_KEY_SECRET: without one
# set, a secret is made once for this checkout, kept in .local/merchant-key-secret
# (mode 600) and never printed, so the keys made here keep working across restarts.
if [[ -z "${MERCHANT_KEY_SECRET:-}" ]]; then
    if [[ ! -s .local/merchant-key-secret ]]; then
        mkdir -p .local
        (umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >.local/merchant-key-secret)
    fi
    MERCHANT_KEY_SECRET="$(cat .local/merchant-key-secret)"
    export MERCHANT_KEY_SECRET
fi
# One instance and no load balancer: nothing to wait for on Ctrl-C
# (scripts/cluster.sh runs instances behind HAProxy with a drain).
export DRAIN_SECS="${DRAIN_SECS:-0}"
echo "==> Starting the backend: open http://${BIND_ADDR:-127.0.0.1:3000} (a second merchant, the partner shop: /partner)"
if [[ -z "$sim_pid" ]]; then
    exec cargo run --release --locked -p backend
fi
# Not exec: the trap stops platform-sim when the backend exits.
cargo run --release --locked -p backend
