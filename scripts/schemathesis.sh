#!/usr/bin/env bash
# Attacks the API from its own OpenAPI description: schemathesis (pinned)
# generates requests for every operation in /api/openapi.json, a bounded number
# of examples each, valid and invalid, against a running backend with a signed-in
# shopper's session cookie and the admin and merchant keys, and checks that no
# answer is a 5xx and every answer matches the description (status code,
# content type, body schema).
#
#   bash scripts/schemathesis.sh              (needs the debug backend in CARGO_TARGET_DIR or target/; test.sh builds it)
#   ST_MAX_EXAMPLES=100 bash scripts/schemathesis.sh   a longer run
#
# The backend runs on a fresh database on the PostgreSQL server of
# TEST_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432), dropped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '==> %s\n' "$*"; }

version=4.32.5
venv=target/tools/schemathesis-$version
if [[ -x $venv/bin/st ]]; then
    step "schemathesis $version: already installed"
else
    step "schemathesis $version: installing into $venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$version"
fi

backend="${CARGO_TARGET_DIR:-target}/debug/backend"
[[ -x $backend ]] || { echo "error: $backend is missing: cargo build -p backend --bin backend" >&2; exit 1; }

server="${TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432}"
redis="${TEST_REDIS_URL:-redis://127.0.0.1:6379}"
run_id=$(head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \n')
database="checkout_test_st_$run_id"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
key="schemathesis-key-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
work=$(mktemp -d)
log="$work/backend.log"

cleanup() {
    [[ -n ${pid:-} ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
    psql -q "$server/postgres" -c "DROP DATABASE IF EXISTS \"$database\" WITH (FORCE)" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

step "Starting the backend on 127.0.0.1:$port (database $database)"
# One key for both bearer schemes, so one Authorization header serves the
# admin and the merchant operations; limits off, so coverage is not cut short.
env PLATFORM=sandbox DATABASE_URL="$server/$database" REDIS_URL="$redis" \
    REDIS_KEY_PREFIX="st:$run_id:" BIND_ADDR="127.0.0.1:$port" \
    ADMIN_TOKEN="$key" MERCHANT_API_KEY="$key" RUST_LOG=warn \
    RATE_LIMIT_SIGNIN_FAILURES_PER_IP=0 RATE_LIMIT_SIGNIN_FAILURES_PER_EMAIL=0 \
    RATE_LIMIT_AUTH_FAILURES_PER_IP=0 RATE_LIMIT_ORDERS_PER_SHOPPER=0 \
    RATE_LIMIT_TOKENS_PER_SHOPPER=0 RATE_LIMIT_PAYS_PER_SHOPPER=0 \
    "$backend" >"$log" 2>&1 &
pid=$!
base="http://127.0.0.1:$port"
for _ in $(seq 1 100); do
    curl -fsS "$base/healthz" >/dev/null 2>&1 && break
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; exit 1; }
    sleep 0.2
done

step "A shopper, a product and an order to aim at"
password="schemathesis-password"
curl -fsS -X POST "$base/api/admin/shoppers" -H "Authorization: Bearer $key" \
    -H 'content-type: application/json' \
    -d "{\"email\":\"st@shop.test\",\"password\":\"$password\",\"balance_cents\":100000000,\"currency\":\"EUR\"}" >/dev/null
curl -fsS -X PUT "$base/api/admin/products/mug" -H "Authorization: Bearer $key" \
    -H 'content-type: application/json' -d '{"name":"Mug","price_cents":1250,"currency":"EUR"}' >/dev/null
cookie=$(curl -fsS -D - -o /dev/null -X POST "$base/api/session" -H 'content-type: application/json' \
    -d "{\"email\":\"st@shop.test\",\"password\":\"$password\"}" |
    awk -F'[ ;]' 'tolower($1) == "set-cookie:" { print $2 }')
[[ $cookie == checkout_session=* ]] || { echo "error: no session cookie" >&2; exit 1; }

# st_run ARGS...: `st run ARGS...`, once more when schemathesis itself crashed on
# CPython 3.11's "AST constructor recursion depth mismatch" (python/cpython#106905,
# fixed in 3.11.8; the machine's 3.11.7 has it): a SystemError inside Hypothesis
# while it describes a filter, not an answer of the API. It is a race between
# threads: with --workers 2 half the runs crashed, with --workers 1 none of eight
# did, so the runs below use one worker and this retry is the fallback. Any
# other failure counts as it is.
st_run() {
    local out rc=0
    out=$(mktemp)
    "$venv/bin/st" run "$@" 2>&1 | tee "$out" || rc=${PIPESTATUS[0]}
    if ((rc != 0)) && grep -q 'AST constructor recursion depth mismatch' "$out"; then
        step "schemathesis crashed on CPython's AST recursion bug (python/cpython#106905), not on an answer: running it once more"
        rc=0
        "$venv/bin/st" run "$@" || rc=$?
    fi
    rm -f "$out"
    return "$rc"
}

examples="${ST_MAX_EXAMPLES:-25}"
step "schemathesis: every operation, up to $examples examples each"
# DELETE /api/session would sign the shared session out half-way; its own
# tests are in backend/tests/api/sessions.rs.
status=0
st_run "$base/api/openapi.json" --url "$base" \
    --header "Authorization: Bearer $key" --header "Cookie: $cookie" \
    --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
    --exclude-method DELETE \
    --max-examples "$examples" --seed 1 --workers 1 \
    --request-timeout 10 --no-color || status=$?

step "schemathesis: the operator console's operations, with an operator session"
# The shopper's cookie above is not an operator's, so /api/ops/* answered 401
# there; here they run signed in. Signing in and out are left out (the
# session must stay), their tests are in backend/tests/api/ops.rs.
ops_cookie=$(curl -fsS -D - -o /dev/null -X POST "$base/api/ops/session" -H 'content-type: application/json' \
    -d "{\"admin_token\":\"$key\",\"name\":\"schemathesis\"}" |
    awk -F'[ ;]' 'tolower($1) == "set-cookie:" { print $2 }')
[[ $ops_cookie == checkout_session=* ]] || { echo "error: no operator session cookie" >&2; exit 1; }
ops_status=0
st_run "$base/api/openapi.json" --url "$base" \
    --header "Cookie: $ops_cookie" \
    --include-path-regex '^/api/ops/' --exclude-path '/api/ops/session' \
    --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
    --max-examples "$examples" --seed 1 --workers 1 \
    --request-timeout 10 --no-color || ops_status=$?
(( status == 0 )) && status=$ops_status
if grep -E '(ERROR|panicked)' "$log" >&2; then
    echo "error: the backend logged errors during the run (above)" >&2
    exit 1
fi
exit $status
