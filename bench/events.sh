#!/usr/bin/env bash
# Live event streams at rest (issue 31): a release build on its own managed cluster, USERS users
# with one session each, then STREAMS idle GET /users/me/events streams (bench/events_idle.py):
# the server's resident memory per stream, its CPU while they sit quiet for 60 s (two heartbeats
# each at --events-heartbeat 25), and how soon a PATCH reaches its user's stream with them open.
# Usage: [EXOSPHERE_BIN=path] bench/events.sh [streams=10000] [idle seconds=60]
# Needs: python3, psql (postgresql), curl, and an open-file hard limit over STREAMS + 4096.
set -euo pipefail
cd "$(dirname "$0")/.."
STREAMS=${1:-10000}
IDLE=${2:-60}
USERS=$STREAMS
PORT=18491
DIR=$(mktemp -d /tmp/exo-events-bench.XXXXXX)
cleanup() {
    [ -n "${PID:-}" ] && kill -TERM "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
    rm -rf "$DIR"
}
trap cleanup EXIT
. bench/lib.sh
exosphere_binary "$DIR"
chmod 755 "$DIR"
# Each side holds a descriptor per stream: the client's limit, and the server's (it raises its own
# to the hard limit at start).
WANTED=$(( STREAMS + 4096 ))
HARD=$(ulimit -Hn)
[ "$HARD" != unlimited ] && [ "$HARD" -lt "$WANTED" ] && { echo "the open-file hard limit ($HARD) is under $WANTED"; exit 1; }
ulimit -n "$WANTED"
start_managed_server --thumbnail-helpers 0 --max-connections $(( STREAMS + 1000 )) --max-connections-per-address 0
# USERS users with one session each, whose token is derived from its number (as bench/accounts.sh).
curl -fs -X POST "http://127.0.0.1:$PORT/users" -H 'Content-Type: application/json' \
    -d '{"email":"user1@bench.example","password":"bench password 1"}' >/dev/null
TOKEN_SQL="rtrim(translate(encode(sha256(convert_to('seed' || i, 'UTF8')), 'base64'), '+/', '-_'), '=')"
psql "$CONN" -qX -v ON_ERROR_STOP=1 <<SQL
INSERT INTO users (email, email_normalized, password_hash)
SELECT 'user' || i || '@bench.example', 'user' || i || '@bench.example',
       (SELECT password_hash FROM users WHERE email_normalized = 'user1@bench.example')
FROM generate_series(2, $USERS) i;
INSERT INTO sessions (user_id, token_hash, expires_at)
SELECT u.id, sha256(convert_to($TOKEN_SQL, 'UTF8')), now() + interval '1 year'
FROM generate_series(1, $USERS) i JOIN users u ON u.email_normalized = 'user' || i || '@bench.example';
VACUUM ANALYZE;
SQL
psql "$CONN" -qAtX -c "SELECT $TOKEN_SQL FROM generate_series(1, $USERS) i" > "$DIR/tokens.txt"
python3 bench/events_idle.py "$PORT" "$PID" "$DIR/tokens.txt" "$STREAMS" "$IDLE" 200
