#!/usr/bin/env bash
# Tests scripts/ensure-services.sh against services that answer but cannot be
# used: a PostgreSQL cluster made here with `initdb --auth-host=scram-sha-256`
# (pg_isready says yes, the passwordless login is refused) and a Redis that
# requires a password, both on free ports in a temporary folder. It checks that
# the service step falls back to the project's own services when the URLs are
# the defaults (pointed at the broken ones through CHECKOUT_PG_PORT /
# CHECKOUT_REDIS_PORT), fails with a one-line error when the URLs were set
# explicitly, and that the backend then starts on the fallback and answers
# /healthz with both "ok". Touches nothing outside its own folder and ports:
# the machine's PostgreSQL and Redis are never contacted.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '==> %s\n' "$*"; }

passed=0 failed=0
pass() { passed=$((passed + 1)); printf '    ok: %s\n' "$*"; }
fail() { failed=$((failed + 1)); printf '    FAILED: %s\n' "$*"; }
# check "what" command...: passes when the command succeeds.
check() {
    local what=$1
    shift
    if "$@"; then pass "$what"; else fail "$what"; fi
}
contains() { [[ $1 == *"$2"* ]]; }
lacks() { [[ $1 != *"$2"* ]]; }
equals() { [[ $1 == "$2" ]]; }

is_root() { [[ $(id -u) == 0 ]]; }
as_pg() { if is_root; then runuser -u postgres -- "$@"; else "$@"; fi; }
port_taken() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
used_ports=" "
# Sets $port to a free port that this script has not handed out yet, below
# Linux's ephemeral range (32768-60999), where outgoing connections take theirs.
# Not called in $(...): a subshell would forget the ports already handed out.
free_port() {
    while :; do
        port=$((20000 + RANDOM % 12000))
        [[ $used_ports == *" $port "* ]] && continue
        port_taken "$port" && continue
        used_ports+="$port "
        return
    done
}

bin=$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n1)
if [[ ! -x $bin/initdb ]] || ! command -v redis-server >/dev/null; then
    # The service step installs them on a plain machine; this test needs them up front.
    bash scripts/ensure-services.sh >/dev/null
    bin=$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n1)
fi

tmp=$(mktemp -d /tmp/checkout-test-services.XXXXXX)
chmod 755 "$tmp" # the postgres user must reach the clusters inside
backend_pid=''
free_port; PG_PORT=$port
free_port; REDIS_PORT=$port
free_port; OWN_PG_PORT=$port
free_port; OWN_REDIS_PORT=$port
free_port; BACKEND_PORT=$port
free_port; CLOSED_PORT=$port
REDIS_PASSWORD=test-services-secret

cleanup() {
    set +e
    [[ -n $backend_pid ]] && kill "$backend_pid" 2>/dev/null && wait "$backend_pid" 2>/dev/null
    services --stop >/dev/null 2>&1
    [[ -f $tmp/broken-pg/postmaster.pid ]] && as_pg "$bin/pg_ctl" -D "$tmp/broken-pg" -w -m immediate stop >/dev/null 2>&1
    [[ -f $tmp/broken-redis/redis.pid ]] && kill "$(cat "$tmp/broken-redis/redis.pid")" 2>/dev/null
    sleep 0.2
    rm -rf "$tmp"
}
trap cleanup EXIT

# Runs the service step with this test's knobs; the caller's URLs never leak in.
# The first arguments of the form NAME=VALUE are added to its environment.
services() {
    local extra=()
    while [[ ${1:-} == *=* ]]; do extra+=("$1"); shift; done
    env -u DATABASE_URL -u REDIS_URL -u TEST_POSTGRES_URL -u TEST_REDIS_URL \
        CHECKOUT_PG_PORT="$PG_PORT" CHECKOUT_REDIS_PORT="$REDIS_PORT" \
        CHECKOUT_OWN_PG_PORT="$OWN_PG_PORT" CHECKOUT_OWN_REDIS_PORT="$OWN_REDIS_PORT" \
        CHECKOUT_SERVICES_DIR="$tmp/services" "${extra[@]}" \
        bash scripts/ensure-services.sh "$@"
}
# Runs the service step, keeping its stdout, stderr and exit status.
run_services() {
    set +e
    services "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    set -e
    out=$(cat "$tmp/out") err=$(cat "$tmp/err")
}
# The error line about $1, without its " — how to fix it" part.
reason_of() {
    local line
    line=$(grep "$1" <<<"$err") || true
    echo "${line%% — *}"
}
show() { sed 's/^/      | /' "$tmp/out" "$tmp/err"; }

step "A PostgreSQL that answers but asks for a password (scram-sha-256) on 127.0.0.1:$PG_PORT"
mkdir -p "$tmp/broken-pg"
is_root && chown postgres:postgres "$tmp/broken-pg"
as_pg "$bin/initdb" -D "$tmp/broken-pg" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
    -E UTF8 --locale=C.UTF-8 >/dev/null
as_pg "$bin/pg_ctl" -D "$tmp/broken-pg" -l "$tmp/broken-pg/server.log" -w -o \
    "-p $PG_PORT -c listen_addresses=127.0.0.1 -c unix_socket_directories=$tmp/broken-pg -c fsync=off" start >/dev/null
check "pg_isready says it is alive" pg_isready -q -h 127.0.0.1 -p "$PG_PORT"
check "it refuses the passwordless login" \
    bash -c "! PGCONNECT_TIMEOUT=5 psql -X -w -At -d postgres://postgres@127.0.0.1:$PG_PORT/postgres -c 'SELECT 1' 2>/dev/null"

step "A Redis that requires a password on 127.0.0.1:$REDIS_PORT"
mkdir -p "$tmp/broken-redis"
redis-server --daemonize yes --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
    --requirepass "$REDIS_PASSWORD" --dir "$tmp/broken-redis" --pidfile "$tmp/broken-redis/redis.pid" \
    --logfile "$tmp/broken-redis/redis.log" >/dev/null
for _ in $(seq 1 40); do port_taken "$REDIS_PORT" && break; sleep 0.25; done
check "it answers PING with NOAUTH" contains "$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" PING 2>&1)" NOAUTH

step "Default URLs pointing at them: the service step runs the project's own"
run_services
[[ $rc == 0 ]] || show
check "exit status 0 (was $rc)" equals "$rc" 0
check "it says why PostgreSQL is not usable" \
    contains "$out" "not usable: password authentication failed for user \"postgres\" (no password in the URL)"
check "it says why Redis is not usable" \
    contains "$out" "not usable: Redis requires a password and the URL has none (NOAUTH)"
env_file=$tmp/services/env
expected_env="DATABASE_URL='postgres://postgres@127.0.0.1:$OWN_PG_PORT/checkout'
TEST_POSTGRES_URL='postgres://postgres@127.0.0.1:$OWN_PG_PORT'
REDIS_URL='redis://127.0.0.1:$OWN_REDIS_PORT'
TEST_REDIS_URL='redis://127.0.0.1:$OWN_REDIS_PORT'"
check "the env file points at the project's own services" \
    equals "$(grep -v '^#' "$env_file" 2>/dev/null)" "$expected_env"
check "the own PostgreSQL has the checkout database and trusts 127.0.0.1" \
    equals "$(PGCONNECT_TIMEOUT=5 psql -X -w -At -d "postgres://postgres@127.0.0.1:$OWN_PG_PORT/checkout" -c 'SELECT 1' 2>&1)" 1
check "the own PostgreSQL's data is in the services folder" test -f "$tmp/services/postgres/PG_VERSION"
check "the own PostgreSQL listens on 127.0.0.1 only, no Unix socket" equals \
    "$(psql -X -w -At -d "postgres://postgres@127.0.0.1:$OWN_PG_PORT/checkout" \
        -c "SELECT current_setting('listen_addresses') || ',' || current_setting('unix_socket_directories')" 2>&1)" \
    "127.0.0.1,"
check "the own Redis answers PING" equals "$(redis-cli -h 127.0.0.1 -p "$OWN_REDIS_PORT" PING 2>&1)" PONG

step "Running it again reuses the running services"
run_services
[[ $rc == 0 ]] || show
check "exit status 0 (was $rc)" equals "$rc" 0
check "it finds the own PostgreSQL running" contains "$out" "the project's own PostgreSQL is running on 127.0.0.1:$OWN_PG_PORT"
check "it finds the own Redis running" contains "$out" "the project's own Redis is running on 127.0.0.1:$OWN_REDIS_PORT"
check "the env file is the same" equals "$(grep -v '^#' "$env_file" 2>/dev/null)" "$expected_env"

step "After sourcing the env file, the URLs it set are used as they are"
run_services "DATABASE_URL=postgres://postgres@127.0.0.1:$OWN_PG_PORT/checkout" "REDIS_URL=redis://127.0.0.1:$OWN_REDIS_PORT" \
    "TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:$OWN_PG_PORT" "TEST_REDIS_URL=redis://127.0.0.1:$OWN_REDIS_PORT"
[[ $rc == 0 ]] || show
check "exit status 0 (was $rc)" equals "$rc" 0
check "the env file still names them" equals "$(grep -v '^#' "$env_file" 2>/dev/null)" "$expected_env"

step "Explicit URLs pointing at them: one clear line each, no fallback"
run_services "DATABASE_URL=postgres://postgres@127.0.0.1:$PG_PORT/checkout" "REDIS_URL=redis://127.0.0.1:$REDIS_PORT"
check "exit status 1 (was $rc)" equals "$rc" 1
check "the PostgreSQL error says what failed and how to fix it" equals "$(grep DATABASE_URL <<<"$err")" \
    "error: DATABASE_URL=postgres://postgres@127.0.0.1:$PG_PORT/checkout: password authentication failed for user \"postgres\" (no password in the URL) — put the password in the URL (postgres://USER:PASSWORD@HOST:PORT/DB) or allow trust login for 127.0.0.1 in pg_hba.conf, or unset DATABASE_URL to let the scripts run their own PostgreSQL"
check "the Redis error says what failed and how to fix it" equals "$(grep REDIS_URL <<<"$err")" \
    "error: REDIS_URL=redis://127.0.0.1:$REDIS_PORT: Redis requires a password and the URL has none (NOAUTH) — put the password in the URL (redis://:PASSWORD@HOST:PORT or redis://USER:PASSWORD@HOST:PORT), or unset REDIS_URL to let the scripts run their own Redis"
check "stderr is those two lines only" equals "$(wc -l <<<"$err")" 2
check "no env file is left to source" test ! -e "$env_file"

step "Explicit URLs with wrong passwords: named, passwords masked"
run_services "DATABASE_URL=postgres://postgres:wrong-pg-pass@127.0.0.1:$PG_PORT/checkout" \
    "REDIS_URL=redis://:wrong-redis-pass@127.0.0.1:$REDIS_PORT"
check "exit status 1 (was $rc)" equals "$rc" 1
check "PostgreSQL: password authentication failed, URL masked" equals "$(reason_of DATABASE_URL)" \
    "error: DATABASE_URL=postgres://postgres:***@127.0.0.1:$PG_PORT/checkout: password authentication failed for user \"postgres\""
check "Redis: wrong password, URL masked" equals "$(reason_of REDIS_URL)" \
    "error: REDIS_URL=redis://:***@127.0.0.1:$REDIS_PORT: wrong user or password (WRONGPASS)"
check "no password is printed" lacks "$out$err" wrong-
check "no password is printed (redis)" lacks "$out$err" -pass

step "Explicit URLs to closed ports: unreachable"
run_services "DATABASE_URL=postgres://postgres@127.0.0.1:$CLOSED_PORT/checkout" "REDIS_URL=redis://127.0.0.1:$CLOSED_PORT"
check "exit status 1 (was $rc)" equals "$rc" 1
check "PostgreSQL: cannot connect" contains "$(grep DATABASE_URL <<<"$err")" \
    "DATABASE_URL=postgres://postgres@127.0.0.1:$CLOSED_PORT/checkout: cannot connect: Connection refused"
check "Redis: cannot connect" contains "$(grep REDIS_URL <<<"$err")" \
    "REDIS_URL=redis://127.0.0.1:$CLOSED_PORT: cannot connect: 127.0.0.1:$CLOSED_PORT: Connection refused"

step "Explicit URLs that work (the right Redis password) are used as they are"
run_services "REDIS_URL=redis://:$REDIS_PASSWORD@127.0.0.1:$REDIS_PORT"
[[ $rc == 0 ]] || show
check "exit status 0 (was $rc)" equals "$rc" 0
check "Redis: usable, password masked" contains "$out" "Redis at REDIS_URL=redis://:***@127.0.0.1:$REDIS_PORT"$'\n'"    usable (Redis "
check "the env file sets PostgreSQL only" equals "$(grep -v '^#' "$env_file" 2>/dev/null)" \
    "DATABASE_URL='postgres://postgres@127.0.0.1:$OWN_PG_PORT/checkout'
TEST_POSTGRES_URL='postgres://postgres@127.0.0.1:$OWN_PG_PORT'"
check "no password is printed" lacks "$out$err" "$REDIS_PASSWORD"

step "The backend on the fallback services answers /healthz"
run_services
check "service step: exit status 0 (was $rc)" equals "$rc" 0
backend_bin="${CARGO_TARGET_DIR:-target}/debug/backend"
if [[ ! -x $backend_bin ]]; then
    cargo build --locked -p backend --bin backend
fi
(
    set -a
    # shellcheck source=/dev/null
    . "$env_file"
    set +a
    exec env BIND_ADDR="127.0.0.1:$BACKEND_PORT" PLATFORM=sandbox RUST_LOG=warn \
        "$backend_bin" >"$tmp/backend.log" 2>&1
) &
backend_pid=$!
health='' status=''
http_get() { # prints "STATUS BODY" of GET $1 on the backend, or nothing
    exec 3<>"/dev/tcp/127.0.0.1/$BACKEND_PORT" || return 1
    printf 'GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' "$1" >&3
    local response
    response=$(tr -d '\r' <&3)
    exec 3<&-
    printf '%s %s\n' "$(head -n1 <<<"$response" | cut -d' ' -f2)" "$(sed '1,/^$/d' <<<"$response")"
}
backend_state='still running'
for _ in $(seq 1 240); do
    if ! kill -0 "$backend_pid" 2>/dev/null; then
        wait "$backend_pid" 2>/dev/null && backend_state='exited (0)' || backend_state="exited ($?)"
        break
    fi
    if health=$(http_get /healthz 2>/dev/null) && [[ -n $health ]]; then break; fi
    sleep 0.25
done
status=${health%% *}
check "GET /healthz: 200 (was ${status:-no answer})" equals "$status" 200
check "GET /healthz: {\"database\":\"ok\",\"redis\":\"ok\"} (was ${health#* })" \
    equals "${health#* }" '{"database":"ok","redis":"ok"}'
if [[ $status != 200 ]]; then
    echo "      backend on 127.0.0.1:$BACKEND_PORT: $backend_state; its log:"
    tail -n 20 "$tmp/backend.log" | sed 's/^/      | /'
fi
kill "$backend_pid" 2>/dev/null || true
wait "$backend_pid" 2>/dev/null || true
backend_pid=''

step "--stop stops the project's own services, and only those"
run_services --stop
check "exit status 0 (was $rc)" equals "$rc" 0
check "the own PostgreSQL is stopped" bash -c "! pg_isready -q -h 127.0.0.1 -p $OWN_PG_PORT"
check "the own Redis is stopped" bash -c "! (exec 3<>/dev/tcp/127.0.0.1/$OWN_REDIS_PORT) 2>/dev/null"
check "the env file sets nothing" equals "$(grep -v '^#' "$env_file" 2>/dev/null)" ""
check "the other PostgreSQL still answers" pg_isready -q -h 127.0.0.1 -p "$PG_PORT"
check "the other Redis still answers" contains "$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" PING 2>&1)" NOAUTH

echo
echo "$passed passed, $failed failed"
((failed == 0))
