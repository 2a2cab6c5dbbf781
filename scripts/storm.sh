#!/usr/bin/env bash
# Replays the incident against a freshly started release backend and prints the
# table: 100 identical signed callbacks at once, 10 retries every 10 s, a backend
# restart, one more retry. Exits non-zero on any violation of exactly-once.
#
#   bash scripts/storm.sh                      # the incident exactly (~2 minutes)
#   bash scripts/storm.sh --time-scale 0.01    # the same, a hundred times faster
#   bash scripts/storm.sh --orders 20 --concurrency 50
#   bash scripts/storm.sh --platform wechatpay --time-scale 0.1   # in WeChat Pay's format (or alipay)
#   bash scripts/storm.sh --help               # every option
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-services.sh
set -a; . "${CHECKOUT_SERVICES_DIR:-.services}/env"; set +a
echo "==> Building backend and storm (release)"
cargo build --release --locked -p backend -p storm
target="${CARGO_TARGET_DIR:-target}"
exec "$target/release/storm" --backend-bin "$target/release/backend" "$@"
