#!/usr/bin/env bash
# Makes sure the PostgreSQL and Redis the app is configured for are usable: it
# logs in with DATABASE_URL (creating its database when missing) and runs
# commands against REDIS_URL, checking their versions; answering on a port is
# not enough.
#
# - DATABASE_URL / REDIS_URL unset (the defaults, postgres://postgres@127.0.0.1:5432/checkout
#   and redis://127.0.0.1:6379): when one is not usable (it asks for a password,
#   nothing answers, too old, ...) the project runs its own instead, on 127.0.0.1
#   only, trusting 127.0.0.1 only: a PostgreSQL cluster on port 55432 and a Redis
#   on port 56379, data under .services/ in the checkout. Missing server
#   packages are installed from Debian's packages first.
# - DATABASE_URL / REDIS_URL set: never replaced; when not usable, one line on
#   stderr says what failed and how to fix it, and the exit status is 1.
#
# Callers learn which URLs to use from .services/env (always written on
# success; it only assigns variables when the project's own services are in use):
#
#   bash scripts/ensure-services.sh
#   set -a; . "${CHECKOUT_SERVICES_DIR:-.services}/env"; set +a
#
#   bash scripts/ensure-services.sh --stop   # stops the project's own PostgreSQL and Redis (only those)
#
# Knobs (for tests, or a machine where the ports are taken):
#   CHECKOUT_PG_PORT=5432, CHECKOUT_REDIS_PORT=6379          ports of the default URLs
#   CHECKOUT_OWN_PG_PORT=55432, CHECKOUT_OWN_REDIS_PORT=56379 ports of the project's own services
#   CHECKOUT_SERVICES_DIR=<checkout>/.services               their data, and the env file
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)

PG_PORT=${CHECKOUT_PG_PORT:-5432}
REDIS_PORT=${CHECKOUT_REDIS_PORT:-6379}
OWN_PG_PORT=${CHECKOUT_OWN_PG_PORT:-55432}
OWN_REDIS_PORT=${CHECKOUT_OWN_REDIS_PORT:-56379}
SERVICES_DIR=${CHECKOUT_SERVICES_DIR:-$ROOT/.services}
ENV_FILE=$SERVICES_DIR/env

DEFAULT_DATABASE_URL="postgres://postgres@127.0.0.1:$PG_PORT/checkout"
DEFAULT_REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
OWN_PG_SERVER="postgres://postgres@127.0.0.1:$OWN_PG_PORT"
OWN_REDIS_URL="redis://127.0.0.1:$OWN_REDIS_PORT"

# Oldest versions the app works with: PostgreSQL 13 for DROP DATABASE ... WITH (FORCE)
# (tests, bench; the migrations alone need 11), Redis 6.2 for GETDEL.
PG_MIN=130000 PG_MIN_TEXT=13
REDIS_MIN=6.2

step() { printf '==> %s\n' "$*"; }
note() { printf '    %s\n' "$*"; }
is_root() { [[ $(id -u) == 0 ]]; }

# A URL fit to print: the password (if any) replaced by ***.
mask() { sed -E 's#^([A-Za-z0-9+.-]+://[^:/@]*):.*@#\1:***@#' <<<"$1"; }

# Installs Debian packages (as root, or through sudo).
install_packages() {
    note "installing $* from Debian's packages"
    local sudo=()
    if ! is_root; then
        command -v sudo >/dev/null || {
            echo "error: $* missing and not root: run 'apt-get install -y $*' as root" >&2
            exit 1
        }
        sudo=(sudo)
    fi
    "${sudo[@]}" apt-get update -qq 9>&-
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "$@" >/dev/null 9>&-
}

port_taken() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# --- PostgreSQL -----------------------------------------------------------

pg_bin_dir() {
    local d found=''
    for d in $(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V); do
        [[ -x $d/initdb ]] && found=$d
    done
    [[ -n $found ]] && echo "$found"
}

# Runs a PostgreSQL server tool as the postgres user when we are root (initdb refuses root).
as_pg() {
    if is_root; then runuser -u postgres -- "$@"; else "$@"; fi
}

PG_REASON='' PG_KIND=''

# Sets PG_REASON (one line, no password) and PG_KIND (auth, unreachable, version, create, other).
pg_failed() {
    local out=$1 user=$2 line
    line=$(grep -v '^\s*$' <<<"$out" | head -n1) || true
    line=${line#psql: error: }
    line=$(sed -E 's/^connection to server at "[^"]*"( \([^)]*\))?, port [0-9]+ failed: //; s/^FATAL: +//; s/^ERROR: +//' <<<"$line")
    case $out in
        *"no password supplied"*)
            PG_KIND=auth PG_REASON="password authentication failed for user \"$user\" (no password in the URL)" ;;
        *"password authentication failed"* | *"no pg_hba.conf entry"* | *"authentication failed"* | *"role \""*"\" does not exist"*)
            PG_KIND=auth PG_REASON=$line ;;
        *"Connection refused"* | *"timeout expired"* | *"could not translate host name"* | *"No route to host"*)
            PG_KIND=unreachable PG_REASON="cannot connect: $line" ;;
        *)
            PG_KIND=other PG_REASON=$line ;;
    esac
}

# Is the PostgreSQL at $1 usable: login, version, writable, the database exists
# (created when missing)? Sets PG_REASON/PG_KIND when not.
pg_usable() {
    local url=$1 base db query user out
    if [[ ! $url =~ ^(postgres(ql)?://[^/?]*)(/([^?]*))?(\?.*)?$ ]]; then
        PG_KIND=other PG_REASON="not a postgres:// URL"
        return 1
    fi
    base=${BASH_REMATCH[1]} db=${BASH_REMATCH[4]} query=${BASH_REMATCH[5]}
    user=$(id -un)
    [[ $base =~ ://([^:@/]+)(:[^@]*)?@ ]] && user=${BASH_REMATCH[1]}
    local psql=(env PGCONNECT_TIMEOUT=5 psql -X -w -q -At -v ON_ERROR_STOP=1)
    if ! out=$("${psql[@]}" -d "$url" -F '|' \
        -c "SELECT current_setting('server_version_num'), current_setting('server_version'), pg_is_in_recovery()" 2>&1); then
        if [[ -n $db && $out == *"database \"$db\" does not exist"* ]]; then
            # Log in to the maintenance database and create ours, as the backend would.
            if ! out=$(printf 'CREATE DATABASE :"db";\n' |
                "${psql[@]}" -d "$base/postgres$query" -v db="$db" 2>&1); then
                pg_failed "$out" "$user"
                [[ $PG_KIND == other ]] && PG_KIND=create PG_REASON="cannot create database \"$db\": $PG_REASON"
                return 1
            fi
            pg_usable "$url"
            return
        fi
        pg_failed "$out" "$user"
        return 1
    fi
    local num version recovery
    IFS='|' read -r num version recovery <<<"$out"
    if ((num < PG_MIN)); then
        PG_KIND=version PG_REASON="PostgreSQL ${version%% *} is too old (need $PG_MIN_TEXT or newer)"
        return 1
    fi
    if [[ $recovery == t ]]; then
        PG_KIND=other PG_REASON="the server is a read-only standby"
        return 1
    fi
    PG_VERSION_TEXT=${version%% *}
}

pg_fix() {
    case $PG_KIND in
        auth) echo "put the password in the URL (postgres://USER:PASSWORD@HOST:PORT/DB) or allow trust login for 127.0.0.1 in pg_hba.conf, or unset DATABASE_URL to let the scripts run their own PostgreSQL" ;;
        unreachable) echo "start that PostgreSQL or correct the URL, or unset DATABASE_URL to let the scripts run their own PostgreSQL" ;;
        version) echo "use PostgreSQL $PG_MIN_TEXT or newer, or unset DATABASE_URL to let the scripts run their own PostgreSQL" ;;
        create) echo "create the database yourself or grant the user CREATEDB, or unset DATABASE_URL to let the scripts run their own PostgreSQL" ;;
        *) echo "fix that server or the URL, or unset DATABASE_URL to let the scripts run their own PostgreSQL" ;;
    esac
}

# When nothing answers on the default port, start a packaged (pg_createcluster) cluster
# that listens there, as a plain Debian install leaves it after a reboot without systemd.
start_packaged_cluster() {
    command -v pg_lsclusters >/dev/null || return 0
    local version name port status
    while read -r version name port status _; do
        if [[ $port == "$PG_PORT" && $status == down* ]]; then
            note "starting Debian's PostgreSQL cluster $version/$name"
            pg_ctlcluster --skip-systemctl-redirect "$version" "$name" start >/dev/null 2>&1 9>&- || true
            for _ in $(seq 1 20); do
                pg_isready -q -h 127.0.0.1 -p "$PG_PORT" && return 0
                sleep 0.5
            done
        fi
    done < <(pg_lsclusters -h 2>/dev/null)
}

# Where the project's own cluster lives: .services/postgres, unless we are root and
# the postgres user cannot reach the checkout (e.g. under /root): then in that user's home.
own_pg_data() {
    local data=$SERVICES_DIR/postgres
    if is_root && ! runuser -u postgres -- test -x "$SERVICES_DIR" 2>/dev/null; then
        local home
        home=$(getent passwd postgres | cut -d: -f6)
        data=${home:-/var/lib/postgresql}/checkout-$(printf %s "$SERVICES_DIR" | sha1sum | cut -c1-12)
    fi
    echo "$data"
}

own_pg_running() {
    local data=$1 bin=$2
    [[ -f $data/postmaster.pid ]] && as_pg "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1
}

start_own_pg() {
    local bin data port
    bin=$(pg_bin_dir) || { install_packages postgresql; bin=$(pg_bin_dir); }
    data=$(own_pg_data)
    if own_pg_running "$data" "$bin"; then
        port=$(sed -n 4p "$data/postmaster.pid")
        note "the project's own PostgreSQL is running on 127.0.0.1:$port ($data)"
    else
        port=$OWN_PG_PORT
        if port_taken "$port"; then
            echo "error: port $port, for the project's own PostgreSQL, is taken by another program — set CHECKOUT_OWN_PG_PORT to a free port" >&2
            exit 1
        fi
        if [[ ! -f $data/PG_VERSION ]]; then
            note "creating the project's own PostgreSQL cluster in $data"
            mkdir -p "$data"
            chmod 700 "$data"
            is_root && chown postgres:postgres "$data"
            as_pg "$bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
            # Trust 127.0.0.1 only: no Unix socket, no other address.
            printf '# Written by scripts/ensure-services.sh: trust 127.0.0.1 only.\nhost all all 127.0.0.1/32 trust\n' |
                as_pg tee "$data/pg_hba.conf" >/dev/null
            printf "\n# scripts/ensure-services.sh\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = ''\n" |
                as_pg tee -a "$data/postgresql.conf" >/dev/null
        fi
        note "starting the project's own PostgreSQL on 127.0.0.1:$port ($data)"
        if ! as_pg "$bin/pg_ctl" -D "$data" -l "$data/server.log" -w -t 60 -o "-p $port" start >/dev/null 9>&-; then
            echo "error: the project's own PostgreSQL did not start; see $data/server.log" >&2
            exit 1
        fi
    fi
    OWN_PG_SERVER="postgres://postgres@127.0.0.1:$port"
}

# --- Redis -----------------------------------------------------------------

REDIS_REASON='' REDIS_KIND=''

# Percent-decodes $1 (backslashes kept as they are).
urldecode() {
    local s=${1//\\/\\\\}
    printf '%b' "${s//%/\\x}"
}

# Runs redis-cli against the URL $1 with the remaining arguments. The password
# goes through REDISCLI_AUTH (never on a command line).
redis_cmd() {
    local url=$1 rest userinfo hostport db=0 user='' pass='' args=()
    shift
    case $url in
        redis://*) rest=${url#redis://} ;;
        rediss://*) rest=${url#rediss://} args+=(--tls) ;;
        *) echo "unsupported URL scheme (redis:// or rediss:// expected)"; return 2 ;;
    esac
    rest=${rest%%\?*}
    if [[ $rest == *@* ]]; then
        userinfo=${rest%@*} rest=${rest##*@}
        if [[ $userinfo == *:* ]]; then user=${userinfo%%:*} pass=${userinfo#*:}; else user=$userinfo; fi
        user=$(urldecode "$user") pass=$(urldecode "$pass")
    fi
    hostport=${rest%%/*}
    [[ $rest == */* && -n ${rest#*/} ]] && db=${rest#*/}
    local host=${hostport:-127.0.0.1} port=6379
    if [[ $hostport =~ ^\[(.*)\](:([0-9]+))?$ ]]; then
        host=${BASH_REMATCH[1]} port=${BASH_REMATCH[3]:-6379}
    elif [[ $hostport == *:* ]]; then
        host=${hostport%%:*} port=${hostport##*:}
    fi
    [[ -n $user ]] && args+=(--user "$user")
    if [[ -n $pass ]]; then
        REDISCLI_AUTH=$pass timeout 10 redis-cli --no-auth-warning -h "$host" -p "$port" -n "$db" "${args[@]}" "$@" 2>&1
    else
        timeout 10 redis-cli -h "$host" -p "$port" -n "$db" "${args[@]}" "$@" 2>&1
    fi
}

# Is the Redis at $1 usable: answers commands, new enough, takes writes, has GETDEL?
redis_usable() {
    local url=$1 out version line
    out=$(redis_cmd "$url" INFO server) || true
    if [[ $out != *redis_version:* ]]; then
        line=$(grep -v '^\s*$' <<<"$out" | grep -v '^AUTH failed' | head -n1) || true
        case $out in
            *WRONGPASS*) REDIS_KIND=auth REDIS_REASON="wrong user or password (WRONGPASS)" ;;
            *NOAUTH*) REDIS_KIND=auth REDIS_REASON="Redis requires a password and the URL has none (NOAUTH)" ;;
            *"Could not connect"* | *"Connection refused"*) REDIS_KIND=unreachable REDIS_REASON="cannot connect: ${line#Could not connect to Redis at }" ;;
            '') REDIS_KIND=unreachable REDIS_REASON="no answer within 10 s" ;;
            *) REDIS_KIND=other REDIS_REASON=$line ;;
        esac
        return 1
    fi
    version=$(sed -n 's/^redis_version:\([0-9.]*\).*/\1/p' <<<"$out")
    if [[ $(printf '%s\n%s\n' "$REDIS_MIN" "$version" | sort -V | head -n1) != "$REDIS_MIN" ]]; then
        REDIS_KIND=version REDIS_REASON="Redis $version is too old (need $REDIS_MIN or newer for GETDEL)"
        return 1
    fi
    local key="${REDIS_KEY_PREFIX:-checkout:}ensure-services:$$"
    out=$(printf 'SET %s 1 EX 30\nGETDEL %s\n' "$key" "$key" | redis_cmd "$url") || true
    if [[ $(tr -d '\r' <<<"$out") != $'OK\n1' ]]; then
        REDIS_KIND=other REDIS_REASON="SET/GETDEL failed: $(grep -v '^\s*$' <<<"$out" | grep -v '^OK$' | head -n1 || true)"
        return 1
    fi
    REDIS_VERSION_TEXT=$version
}

redis_fix() {
    case $REDIS_KIND in
        auth) echo "put the password in the URL (redis://:PASSWORD@HOST:PORT or redis://USER:PASSWORD@HOST:PORT), or unset REDIS_URL to let the scripts run their own Redis" ;;
        unreachable) echo "start that Redis or correct the URL, or unset REDIS_URL to let the scripts run their own Redis" ;;
        version) echo "use Redis $REDIS_MIN or newer, or unset REDIS_URL to let the scripts run their own Redis" ;;
        *) echo "fix that server or the URL, or unset REDIS_URL to let the scripts run their own Redis" ;;
    esac
}

own_redis_pid() {
    local pid
    pid=$(cat "$SERVICES_DIR/redis/redis.pid" 2>/dev/null) || return 1
    [[ -n $pid && $(cat "/proc/$pid/comm" 2>/dev/null) == redis-server* ]] && echo "$pid"
}

start_own_redis() {
    local dir=$SERVICES_DIR/redis port
    command -v redis-server >/dev/null || install_packages redis-server
    if own_redis_pid >/dev/null; then
        port=$(cat "$dir/port")
        note "the project's own Redis is running on 127.0.0.1:$port"
    else
        port=$OWN_REDIS_PORT
        if port_taken "$port"; then
            echo "error: port $port, for the project's own Redis, is taken by another program — set CHECKOUT_OWN_REDIS_PORT to a free port" >&2
            exit 1
        fi
        mkdir -p "$dir"
        note "starting the project's own Redis on 127.0.0.1:$port"
        redis-server --daemonize yes --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
            --dir "$dir" --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" >/dev/null 9>&-
        echo "$port" >"$dir/port"
        for _ in $(seq 1 40); do
            [[ $(redis_cmd "redis://127.0.0.1:$port" PING) == PONG ]] && break
            sleep 0.25
        done
    fi
    OWN_REDIS_URL="redis://127.0.0.1:$port"
}

# --- stop --------------------------------------------------------------------

empty_env_file() {
    [[ -d $SERVICES_DIR ]] || return 0
    printf '# Written by scripts/ensure-services.sh: the configured PostgreSQL and Redis are used; nothing to override.\n' >"$ENV_FILE"
}

if [[ ${1:-} == --help || ${1:-} == -h ]]; then
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 0
fi

mkdir -p "$SERVICES_DIR"
# One run at a time per services folder. (Servers started below get `9>&-`, so
# they do not inherit the lock and hold it for ever.)
exec 9>"$SERVICES_DIR/.lock"
flock 9

if [[ ${1:-} == --stop ]]; then
    step "Stopping the project's own PostgreSQL and Redis"
    if bin=$(pg_bin_dir) && data=$(own_pg_data) && own_pg_running "$data" "$bin"; then
        as_pg "$bin/pg_ctl" -D "$data" -w -m fast stop >/dev/null
        note "PostgreSQL stopped ($data)"
    else
        note "PostgreSQL: not running"
    fi
    if pid=$(own_redis_pid); then
        kill "$pid"
        for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
        note "Redis stopped"
    else
        note "Redis: not running"
    fi
    empty_env_file
    exit 0
elif [[ -n ${1:-} ]]; then
    echo "error: unknown argument $1 (try --help)" >&2
    exit 2
fi

rm -f "$ENV_FILE"
errors=0
env_lines=()

# --- PostgreSQL --------------------------------------------------------------

command -v psql >/dev/null || install_packages postgresql-client
if [[ -n ${DATABASE_URL:-} && $DATABASE_URL != "$OWN_PG_SERVER"/* ]]; then
    step "PostgreSQL at DATABASE_URL=$(mask "$DATABASE_URL")"
    if pg_usable "$DATABASE_URL"; then
        note "usable (PostgreSQL $PG_VERSION_TEXT)"
    else
        echo "error: DATABASE_URL=$(mask "$DATABASE_URL"): $PG_REASON — $(pg_fix)" >&2
        errors=1
    fi
else
    url=${DATABASE_URL:-$DEFAULT_DATABASE_URL}
    if [[ $url == "$OWN_PG_SERVER"/* ]]; then
        step "PostgreSQL: the project's own, at $url"
        usable=false
    else
        step "PostgreSQL at $url"
        if ! pg_isready -q -h 127.0.0.1 -p "$PG_PORT" 2>/dev/null; then
            pg_bin_dir >/dev/null || install_packages postgresql
            start_packaged_cluster
        fi
        usable=false
        if pg_usable "$url"; then
            usable=true
            note "usable (PostgreSQL $PG_VERSION_TEXT)"
        else
            note "not usable: $PG_REASON"
        fi
    fi
    if ! $usable; then
        start_own_pg
        own_url="$OWN_PG_SERVER/${url##*/}"
        if pg_usable "$own_url"; then
            note "using it: DATABASE_URL=$own_url (PostgreSQL $PG_VERSION_TEXT)"
            env_lines+=("DATABASE_URL='$own_url'")
            # The tests' server too, unless the caller chose another one.
            [[ ${TEST_POSTGRES_URL:-$OWN_PG_SERVER} == "$OWN_PG_SERVER" ]] &&
                env_lines+=("TEST_POSTGRES_URL='$OWN_PG_SERVER'")
        else
            echo "error: the project's own PostgreSQL at $own_url: $PG_REASON" >&2
            errors=1
        fi
    fi
fi

# --- Redis -------------------------------------------------------------------

command -v redis-cli >/dev/null || install_packages redis-tools
if [[ -n ${REDIS_URL:-} && $REDIS_URL != "$OWN_REDIS_URL" ]]; then
    step "Redis at REDIS_URL=$(mask "$REDIS_URL")"
    if redis_usable "$REDIS_URL"; then
        note "usable (Redis $REDIS_VERSION_TEXT)"
    else
        echo "error: REDIS_URL=$(mask "$REDIS_URL"): $REDIS_REASON — $(redis_fix)" >&2
        errors=1
    fi
else
    url=${REDIS_URL:-$DEFAULT_REDIS_URL}
    usable=false
    if [[ $url == "$OWN_REDIS_URL" ]]; then
        step "Redis: the project's own, at $url"
    else
        step "Redis at $url"
        if redis_usable "$url"; then
            usable=true
            note "usable (Redis $REDIS_VERSION_TEXT)"
        else
            note "not usable: $REDIS_REASON"
        fi
    fi
    if ! $usable; then
        start_own_redis
        if redis_usable "$OWN_REDIS_URL"; then
            note "using it: REDIS_URL=$OWN_REDIS_URL (Redis $REDIS_VERSION_TEXT)"
            env_lines+=("REDIS_URL='$OWN_REDIS_URL'")
            [[ ${TEST_REDIS_URL:-$OWN_REDIS_URL} == "$OWN_REDIS_URL" ]] &&
                env_lines+=("TEST_REDIS_URL='$OWN_REDIS_URL'")
        else
            echo "error: the project's own Redis at $OWN_REDIS_URL: $REDIS_REASON; see $SERVICES_DIR/redis/redis.log" >&2
            errors=1
        fi
    fi
fi

((errors == 0)) || exit 1

# --- HAProxy and Redis Sentinel -------------------------------------------
# Programs, not services: scripts/cluster.sh and the scale-out tests start
# their own on free ports. Debian's packages would start their own services
# on the default ports; policy-rc.d or no init keeps them off, and these
# tests never use those ports anyway.
step "HAProxy and Redis Sentinel (scripts/cluster.sh, the scale-out tests)"
cluster_missing=()
command -v haproxy >/dev/null || [[ -x /usr/sbin/haproxy ]] || cluster_missing+=(haproxy)
command -v redis-sentinel >/dev/null || cluster_missing+=(redis-sentinel)
if ((${#cluster_missing[@]})); then
    install_packages "${cluster_missing[@]}"
fi
note "$( (haproxy -v 2>/dev/null || /usr/sbin/haproxy -v) | head -n1 | cut -d' ' -f1-3); $(redis-sentinel --version | cut -d' ' -f1-3)"

if ((${#env_lines[@]})); then
    {
        echo "# Written by scripts/ensure-services.sh: the project's own services are in use."
        echo "# Stop them with: bash scripts/ensure-services.sh --stop"
        printf '%s\n' "${env_lines[@]}"
    } >"$ENV_FILE.tmp"
    mv "$ENV_FILE.tmp" "$ENV_FILE"
    note "callers load $ENV_FILE"
else
    empty_env_file
fi
