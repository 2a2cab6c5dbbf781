#!/usr/bin/env bash
# Makes sure PostgreSQL (127.0.0.1:5432, user postgres, trust) and Redis
# (127.0.0.1:6379) answer. Each is left alone when it already answers;
# otherwise it is started, and installed from Debian's packages first if missing.
set -euo pipefail
step() { printf '==> %s\n' "$*"; }

PG_PORT=5432
REDIS_PORT=6379

pg_answers() { pg_isready -q -h 127.0.0.1 -p "$PG_PORT" 2>/dev/null; }
redis_answers() { [[ "$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null)" == PONG ]]; }

wait_for() {
    local what=$1 check=$2
    for _ in $(seq 1 60); do
        if $check; then echo "    $what answers"; return 0; fi
        sleep 0.5
    done
    echo "error: $what did not come up" >&2
    return 1
}

step "PostgreSQL on 127.0.0.1:$PG_PORT"
if command -v pg_isready >/dev/null && pg_answers; then
    echo "    already running"
else
    if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
        echo "    installing postgresql from Debian packages"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql postgresql-contrib
    fi
    if ls /etc/postgresql/*/main >/dev/null 2>&1; then
        version=$(ls /etc/postgresql | sort -V | tail -n1)
        pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
    fi
    if ! pg_answers; then
        # No packaged cluster could start: run our own, trusting local connections.
        bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)
        data=/var/tmp/checkout-postgres
        if [[ ! -f $data/PG_VERSION ]]; then
            mkdir -p "$data" && chown postgres:postgres "$data"
            runuser -u postgres -- "$bin/initdb" -D "$data" -U postgres --auth=trust >/dev/null
        fi
        runuser -u postgres -- "$bin/pg_ctl" -D "$data" -l "$data/server.log" \
            -o "-p $PG_PORT -c listen_addresses=127.0.0.1" start >/dev/null
    fi
    wait_for PostgreSQL pg_answers
fi

step "Redis on 127.0.0.1:$REDIS_PORT"
if command -v redis-cli >/dev/null && redis_answers; then
    echo "    already running"
else
    if ! command -v redis-server >/dev/null; then
        echo "    installing redis-server from Debian packages"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server
    fi
    redis-server --daemonize yes --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no >/dev/null
    wait_for Redis redis_answers
fi
