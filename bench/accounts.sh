#!/usr/bin/env bash
# Accounts benchmark against a release build, all in one run on one managed (durable) cluster:
#   1. GET /users/me (wrk, 64 connections, random session of 1,000 seeded users) against pgbench
#      running the same session lookup SQL (8 clients);
#   2. PUT /users/me (durable: synchronous_commit on) against pgbench running lookup + update,
#      at 8 connections (8 pgbench clients) and at 64 (64 clients);
#   3. POST /users/signin against the raw scrypt hashes per second the cores allow (measured just
#      before and just after it, averaged);
#   4. GET /users/me latency during a storm of sign-ins;
#   5. successful sign-ins per second of 8 connections retrying at once beside 10 clients that
#      give up, against 2 polite clients (bench/signin_retry.py);
#   and the server's resident memory throughout.
# Usage: [EXOSPHERE_BIN=path] [BENCH_CGROUP=off] [SERVER_FLAGS="--session-cache-mb 0"] [USERS=1000] bench/accounts.sh [seconds=10]      Needs: wrk, pgbench, psql (postgresql), python3.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-10}
PORT=18483
USERS=${USERS:-1000}
DIR=$(mktemp -d /tmp/exo-accounts-bench.XXXXXX)
cleanup() {
    [ -n "${RSS_PID:-}" ] && kill "$RSS_PID" 2>/dev/null || true
    [ -n "${EXO_PID:-}" ] && kill -TERM "$EXO_PID" 2>/dev/null && wait "$EXO_PID" 2>/dev/null || true
    leave_bench_cgroup
    rm -rf "$DIR"
}
trap cleanup EXIT

. bench/lib.sh
exosphere_binary "$DIR"
enter_bench_cgroup
chmod 755 "$DIR"

# Eight database connections, like pgbench's eight clients (the default is 2 × cores).
# shellcheck disable=SC2086
"$BIN" serve --port "$PORT" --data-dir "$DIR/pg" --db-pool-size 8 --access-log off --log-format logfmt ${SERVER_FLAGS:-} > "$DIR/exosphere.log" 2>&1 &
EXO_PID=$!
for _ in $(seq 300); do curl -fs "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1 && break; sleep 0.2; done
CONN=$(sed -n 's/.*postgres.connection="\([^"]*\)".*/\1/p' "$DIR/exosphere.log" | head -1)
[ -n "$CONN" ] || { echo "no managed cluster connection in the log"; cat "$DIR/exosphere.log"; exit 1; }

# Memory: sample RSS every 100 ms for the whole run.
( while kill -0 "$EXO_PID" 2>/dev/null; do awk '/VmRSS/ {print $2}' "/proc/$EXO_PID/status" 2>/dev/null; sleep 0.1; done ) > "$DIR/rss.txt" &
RSS_PID=$!

# One real registration (the server hashes at its production cost), then 999 more users
# sharing that hash, and one session each whose token is derived from its number, so that
# pgbench can compute the same token hash in SQL.
PASSWORD="bench password 1"
curl -fs -X POST "http://127.0.0.1:$PORT/users" -H 'Content-Type: application/json' \
    -d "{\"email\":\"user1@bench.example\",\"password\":\"$PASSWORD\",\"data\":{\"height\":170.5,\"weight\":70}}" >/dev/null
TOKEN_SQL="rtrim(translate(encode(sha256(convert_to('seed' || i, 'UTF8')), 'base64'), '+/', '-_'), '=')"
psql "$CONN" -qX -v ON_ERROR_STOP=1 <<SQL
INSERT INTO users (email, email_normalized, password_hash, data)
SELECT 'user' || i || '@bench.example', 'user' || i || '@bench.example',
       (SELECT password_hash FROM users WHERE email_normalized = 'user1@bench.example'), '{"height": 170.5, "weight": 70}'
FROM generate_series(2, $USERS) i;
INSERT INTO sessions (user_id, token_hash, expires_at)
SELECT u.id, sha256(convert_to($TOKEN_SQL, 'UTF8')), now() + interval '1 year'
FROM generate_series(1, $USERS) i JOIN users u ON u.email_normalized = 'user' || i || '@bench.example';
VACUUM ANALYZE;
SQL
psql "$CONN" -qAtX -c "SELECT $TOKEN_SQL FROM generate_series(1, $USERS) i" > "$DIR/tokens.txt"

cat > "$DIR/me.lua" <<LUA
local tokens = {}
for line in io.lines("$DIR/tokens.txt") do tokens[#tokens + 1] = line end
request = function()
    return wrk.format("GET", "/users/me", {["Authorization"] = "Bearer " .. tokens[math.random(#tokens)]})
end
LUA
cat > "$DIR/put.lua" <<LUA
local tokens = {}
for line in io.lines("$DIR/tokens.txt") do tokens[#tokens + 1] = line end
local n = 0
request = function()
    n = n + 1
    local i = math.random(#tokens)
    local body = '{"email":"user' .. i .. '@bench.example","firstname":"Ayu","lastname":"Lestari","data":{"height":' .. (150 + n % 50) .. '.5,"weight":' .. (60 + n % 30) .. '}}'
    return wrk.format("PUT", "/users/me", {["Authorization"] = "Bearer " .. tokens[i], ["Content-Type"] = "application/json"}, body)
end
LUA
cat > "$DIR/signin.lua" <<LUA
request = function()
    local body = '{"email":"user' .. math.random($USERS) .. '@bench.example","password":"$PASSWORD"}'
    return wrk.format("POST", "/users/signin", {["Content-Type"] = "application/json"}, body)
end
LUA

# The server's session lookup, with the token hash computed from the session number.
LOOKUP="SELECT s.id, s.user_id, s.created_at, s.last_seen_at, LEAST(s.expires_at, s.last_seen_at + make_interval(secs => 2592000)), s.user_agent, u.id, u.email, u.firstname, u.lastname, u.email_verified, u.created_at, u.updated_at, u.data::text, u.version, s.last_seen_at < now() - make_interval(secs => 60) FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_hash = sha256(convert_to(rtrim(translate(encode(sha256(convert_to('seed' || :i, 'UTF8')), 'base64'), '+/', '-_'), '='), 'UTF8')) AND s.expires_at > now() AND s.last_seen_at > now() - make_interval(secs => 2592000);"
printf '\\set i random(1, %s)\n%s\n' "$USERS" "$LOOKUP" > "$DIR/lookup.sql"
printf '\\set i random(1, %s)\n%s\nUPDATE users SET email = email, firstname = %s, lastname = %s, data = %s::jsonb, version = version + 1, updated_at = now() WHERE email_normalized = %s RETURNING id, email, firstname, lastname, email_verified, created_at, updated_at, data::text, version;\n' \
    "$USERS" "$LOOKUP" "'Ayu'" "'Lestari'" "'{\"height\": 171.5, \"weight\": 71}'" "'user' || :i || '@bench.example'" > "$DIR/update.sql"

# Prints: transactions per second, p99 latency (from pgbench's log of every transaction).
pgbench_run() { # name script [clients=8]
    local prefix="$DIR/pgbench-$1"
    pgbench -n -M prepared -c "${3:-8}" -j 2 -T "$DURATION" -f "$2" -l --log-prefix="$prefix" "$CONN" 2>/dev/null \
        | awk '/^tps = / { printf "%d", $3 }'
    cat "$prefix".* | awk '{ print $3 }' | sort -n | awk '{ v[NR] = $1 } END { printf " %.2fms\n", v[int(NR * 0.99)] / 1000 }'
    rm -f "$prefix".*
}
# Prints: 2xx responses per second, p99, non-2xx count (wrk's own rate counts errors too).
wrk_run() { # name script connections
    wrk -t2 -c"$3" -d"${DURATION}s" --latency -s "$2" "http://127.0.0.1:$PORT" > "$DIR/$1.txt"
    awk '/requests in/ { total = $1; secs = $4 + 0 } /Non-2xx/ { bad = $NF } $1 == "99%" { p99 = $2 }
         END { printf "%.1f %s %d\n", (total - bad) / secs, p99, bad }' "$DIR/$1.txt"
}

wrk -t2 -c64 -d2s -s "$DIR/me.lua" "http://127.0.0.1:$PORT" >/dev/null  # warm-up
read -r ME_RPS ME_P99 ME_ERR <<<"$(wrk_run me "$DIR/me.lua" 64)"
read -r PG_LOOKUP PG_LOOKUP_P99 <<<"$(pgbench_run lookup "$DIR/lookup.sql")"
read -r PUT8_RPS PUT8_P99 PUT8_ERR <<<"$(wrk_run put8 "$DIR/put.lua" 8)"
read -r PG_UPDATE PG_UPDATE_P99 <<<"$(pgbench_run update8 "$DIR/update.sql" 8)"
read -r PUT_RPS PUT_P99 PUT_ERR <<<"$(wrk_run put "$DIR/put.lua" 64)"
read -r PG_UPDATE64 PG_UPDATE64_P99 <<<"$(pgbench_run update64 "$DIR/update.sql" 64)"

# Raw scrypt rate: the release binary hashes on every core, half the time just before the sign-in
# run and half just after, so that the machine's other load weighs on both sides of the ratio alike.
raw_hashes() { "$BIN" hash-benchmark --seconds "$(( (DURATION + 1) / 2 ))" | awk '/hashes\/s/ {print $1}'; }
HASH_BEFORE=$(raw_hashes)
# As many connections as the hashing pool takes (threads + queue): none is refused.
read -r SIGNIN_RPS SIGNIN_P99 SIGNIN_ERR <<<"$(wrk_run signin "$DIR/signin.lua" "$((3 * $(nproc)))")"
HASH_AFTER=$(raw_hashes)
HASH_RATE=$(awk -v a="$HASH_BEFORE" -v b="$HASH_AFTER" 'BEGIN { printf "%.2f", (a + b) / 2 }')

# A storm of sign-ins (32 clients, far more than the hashing pool takes; refused ones wait for
# Retry-After as clients do) with GET /users/me beside it.
python3 bench/signin_storm.py "$PORT" "$DURATION" 32 "$USERS" "$PASSWORD" > "$DIR/storm-signin.txt" &
STORM=$!
sleep 1
wrk -t1 -c16 -d"$((DURATION - 2))s" --latency -s "$DIR/me.lua" "http://127.0.0.1:$PORT" > "$DIR/storm-me.txt"
wait "$STORM"
STORM_ME_P99=$(awk '$1 == "99%" {print $2}' "$DIR/storm-me.txt")
STORM_ME_RPS=$(awk '/Requests\/sec/ {print $2}' "$DIR/storm-me.txt")
STORM_SIGNINS=$(cat "$DIR/storm-signin.txt")

# Clients that give up (10) and connections that retry at once (8), against 2 polite clients.
python3 bench/signin_retry.py "$PORT" "$DURATION" 2 8 10 "$USERS" "$PASSWORD" > "$DIR/retry.txt"
HASHING=$(curl -fs "http://127.0.0.1:$PORT/metrics" | awk '/^exosphere_hashing_(completed|abandoned|rejected)_total / { sub("exosphere_hashing_", "", $1); sub("_total", "", $1); printf "%s=%s ", $1, $2 }')

kill "$RSS_PID" 2>/dev/null || true
RSS_MAX=$(sort -n "$DIR/rss.txt" | tail -1)
RSS_MEDIAN=$(sort -n "$DIR/rss.txt" | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
echo
echo "accounts benchmark: ${DURATION}s per run, $USERS users, wrk -t2 (64 connections; sign-in $((3 * $(nproc)))), pgbench -M prepared -c 8 -j 2"
echo "scheduling: $BENCH_SCHEDULING"
printf '%-34s %12s %10s %10s\n' measurement "per second" p99 ratio
printf '%-34s %12s %10s\n' "pgbench session lookup" "$PG_LOOKUP" "$PG_LOOKUP_P99"
printf '%-34s %12s %10s %10s\n' "GET /users/me" "$ME_RPS" "$ME_P99" "$(ratio "$ME_RPS" "$PG_LOOKUP")"
printf '%-34s %12s %10s\n' "pgbench lookup + update (8)" "$PG_UPDATE" "$PG_UPDATE_P99"
printf '%-34s %12s %10s %10s\n' "PUT /users/me (8 connections)" "$PUT8_RPS" "$PUT8_P99" "$(ratio "$PUT8_RPS" "$PG_UPDATE")"
printf '%-34s %12s %10s\n' "pgbench lookup + update (64)" "$PG_UPDATE64" "$PG_UPDATE64_P99"
printf '%-34s %12s %10s %10s\n' "PUT /users/me (64 connections)" "$PUT_RPS" "$PUT_P99" "$(ratio "$PUT_RPS" "$PG_UPDATE64")"
printf '%-34s %12s %10s\n' "raw scrypt hashes (all cores)" "$HASH_RATE" "-"
printf '%-34s %12s %10s %10s\n' "POST /users/signin" "$SIGNIN_RPS" "$SIGNIN_P99" "$(ratio "$SIGNIN_RPS" "$HASH_RATE")"
printf '%-34s %12s %10s\n' "GET /users/me during sign-in storm" "$STORM_ME_RPS" "$STORM_ME_P99"
echo "non-2xx: GET ${ME_ERR:-0}, PUT ${PUT8_ERR:-0} + ${PUT_ERR:-0}, sign-in ${SIGNIN_ERR:-0}; storm sign-ins by status: ${STORM_SIGNINS}"
echo "sign-ins of retrying clients against polite ones: $(head -1 "$DIR/retry.txt")"
echo "  $(tail -1 "$DIR/retry.txt")"
echo "hashing pool since start: ${HASHING:-(no figures)}"
echo "exosphere RSS: median $((RSS_MEDIAN / 1024)) MiB, max $((RSS_MAX / 1024)) MiB"
