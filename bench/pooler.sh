#!/usr/bin/env bash
# Exosphere behind pgbouncer (issue 19): GET /users/me and PATCH /users/me with wrk, direct to
# PostgreSQL and through Debian's pgbouncer in session and in transaction mode, in one run on one
# managed cluster, so that the ratios say what a pooler costs (transaction mode: every statement
# unnamed, the event loops' pipelines off).
# Usage: bench/pooler.sh [seconds=10] [connections=64]
#   EXOSPHERE_BIN=path: use that binary instead of building (scripts/build-release.sh) here.
# Needs: wrk, curl, pgbouncer, python3 (and setpriv as root).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_RUN=${1:-10}
CONNECTIONS=${2:-64}
PORT=18491
BOUNCER_PORT=18492
DIR=$(mktemp -d /tmp/exo-pooler-bench.XXXXXX)
cleanup() {
    [ -n "${PID2:-}" ] && kill -TERM "$PID2" 2>/dev/null && wait "$PID2" 2>/dev/null || true
    [ -n "${BOUNCER:-}" ] && kill -KILL "$BOUNCER" 2>/dev/null || true
    [ -n "${PID:-}" ] && kill -TERM "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
    rm -rf "$DIR"
}
trap cleanup EXIT

. bench/lib.sh
exosphere_binary "$DIR"
chmod 755 "$DIR"
start_managed_server
field() { sed -n "s/.*$1='\?\([^' ]*\)'\?.*/\1/p" <<< "$CONN"; }
HOST=$(field host); PGPORT=$(field port); PGUSER=$(field user); DB=$(field dbname)
TOKEN=$(curl -fs "http://127.0.0.1:$PORT/users" -H 'Content-Type: application/json' \
    -d '{"email": "bench@example.com", "password": "bench pooler passphrase"}' | python3 -c 'import json, sys; print(json.load(sys.stdin)["accessToken"])')
cat > "$DIR/patch.lua" <<'LUA'
wrk.method = "PATCH"
wrk.body = '{"data": {"weight": 70}}'
wrk.headers["Content-Type"] = "application/json"
LUA

measure() {  # label port
    local get patch
    get=$(wrk -t 2 -c "$CONNECTIONS" -d "${SECONDS_PER_RUN}s" --latency -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$2/users/me")
    patch=$(wrk -t 2 -c "$CONNECTIONS" -d "${SECONDS_PER_RUN}s" --latency -s "$DIR/patch.lua" -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$2/users/me")
    printf '%-34s GET %9s req/s p99 %8s %s | PATCH %9s req/s p99 %8s %s\n' "$1" \
        "$(awk '$1 == "Requests/sec:" {print $2}' <<< "$get")" "$(awk '$1 == "99%" {print $2}' <<< "$get")" "$(grep -E 'Non-2xx' <<< "$get" || true)" \
        "$(awk '$1 == "Requests/sec:" {print $2}' <<< "$patch")" "$(awk '$1 == "99%" {print $2}' <<< "$patch")" "$(grep -E 'Non-2xx' <<< "$patch" || true)"
}

measure "direct (the managed cluster)" "$PORT"
# Direct without the event loops' pipelines, as transaction mode runs: what is the pooler's own cost.
"$BIN" serve --port $((PORT + 10)) --database-url "$CONN" --db-pipelining off --access-log off --log-format logfmt > "$DIR/exosphere-nopipe.log" 2>&1 &
PID2=$!
for _ in $(seq 300); do curl -fs "http://127.0.0.1:$((PORT + 10))/readyz" >/dev/null 2>&1 && break; sleep 0.2; done
measure "direct, --db-pipelining off" $((PORT + 10))
kill -TERM "$PID2"; wait "$PID2" 2>/dev/null || true; PID2=""
for mode in session transaction; do
    cat > "$DIR/pgbouncer.ini" <<INI
[databases]
* = host=$HOST port=$PGPORT
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $BOUNCER_PORT
unix_socket_dir =
auth_type = trust
auth_file = $DIR/users.txt
pool_mode = $mode
default_pool_size = $([ "$mode" = session ] && echo 64 || echo 16)
max_client_conn = 500
logfile = $DIR/pgbouncer.log
pidfile = $DIR/pgbouncer.pid
INI
    echo "\"$PGUSER\" \"\"" > "$DIR/users.txt"
    if [ "$(id -u)" = 0 ]; then
        chown postgres "$DIR/pgbouncer.ini" "$DIR/users.txt" && chmod 777 "$DIR"
        setpriv --reuid=postgres --regid=postgres --clear-groups /usr/sbin/pgbouncer "$DIR/pgbouncer.ini" > /dev/null 2>&1 &
    else
        /usr/sbin/pgbouncer "$DIR/pgbouncer.ini" > /dev/null 2>&1 &
    fi
    BOUNCER=$!
    sleep 1
    "$BIN" serve --port $((PORT + 10)) --database-url "host=127.0.0.1 port=$BOUNCER_PORT user=$PGUSER dbname=$DB" --db-pooler "$mode" \
        --access-log off --log-format logfmt > "$DIR/exosphere-$mode.log" 2>&1 &
    PID2=$!
    for _ in $(seq 300); do curl -fs "http://127.0.0.1:$((PORT + 10))/readyz" >/dev/null 2>&1 && break; sleep 0.2; done
    measure "through pgbouncer, $mode mode" $((PORT + 10))
    kill -TERM "$PID2"; wait "$PID2" 2>/dev/null || true; PID2=""
    kill -KILL "$BOUNCER"; wait "$BOUNCER" 2>/dev/null || true; BOUNCER=""
done
