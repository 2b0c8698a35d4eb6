#!/usr/bin/env bash
# What the second factor costs a sign-in (issue 39: no more than one extra round trip): a release
# build on its own managed cluster, throttles out of the way, USERS (600) users without a second
# factor and USERS with TOTP on, then bench/mfa_signin.py: alternating rounds of SECONDS at
# THREADS client threads (keep-alive connections), ROUNDS (3) of each:
#   A: POST /users/signin {email, password} -> 200;
#   B: POST /users/signin -> 401 mfa_required with an mfaToken, then POST /users/signin/mfa
#      {mfaToken, code} with the current TOTP code -> 200.
# Prints completed sign-ins per second of each (medians), their ratio B/A, the p50 / p99 of a
# whole flow and of B's second step alone. A code is accepted once per 30-second step per user, so
# B takes its users round robin, a user at most once a step (USERS must stay well over the
# sign-ins of 30 seconds: about 8 a second at the default hashing cost on 2 cores).
# One registration through the API (it hashes the password), the other users share its hash
# (inserted with SQL, as bench/streams-memory.sh does), and their factors are put straight into
# mfa_factors with secrets the helper derives too: the first 20 bytes of SHA-256("totpN").
# Usage: [EXOSPHERE_BIN=path] [BENCH_CGROUP=off] [ROUNDS=3] [USERS=600] bench/mfa-signin.sh [seconds=10] [threads=8]
# Needs: python3, psql (postgresql), curl.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-10}
THREADS=${2:-8}
ROUNDS=${ROUNDS:-3}
USERS=${USERS:-600}
PASSWORD="bench password 1"
PORT=18499
DIR=$(mktemp -d /tmp/exo-mfa-signin.XXXXXX)
cleanup() {
    [ -n "${PID:-}" ] && kill -TERM "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
    leave_bench_cgroup
    rm -rf "$DIR"
}
trap cleanup EXIT
. bench/lib.sh
exosphere_binary "$DIR"
enter_bench_cgroup
chmod 755 "$DIR"
start_managed_server --thumbnail-helpers 0 --signin-limit 1000000 --signin-email-limit 1000000 \
    --signin-address-limit 1000000 --registration-address-limit 0
[ -n "$CONN" ] || { echo "no managed cluster connection in the log"; cat "$DIR/exosphere.log"; exit 1; }
curl -fs -X POST "http://127.0.0.1:$PORT/users" -H 'Content-Type: application/json' \
    -d "{\"email\":\"plain1@bench.example\",\"password\":\"$PASSWORD\"}" >/dev/null
psql "$CONN" -qX -v ON_ERROR_STOP=1 <<SQL
INSERT INTO users (email, email_normalized, password_hash)
SELECT kind || i || '@bench.example', kind || i || '@bench.example',
       (SELECT password_hash FROM users WHERE email_normalized = 'plain1@bench.example')
FROM (VALUES ('plain'), ('mfa')) AS kinds (kind), generate_series(1, $USERS) i
WHERE NOT (kind = 'plain' AND i = 1);
INSERT INTO mfa_factors (user_id, secret, enabled_at)
SELECT u.id, substring(sha256(convert_to('totp' || i, 'UTF8')) FROM 1 FOR 20), now()
FROM generate_series(1, $USERS) i JOIN users u ON u.email_normalized = 'mfa' || i || '@bench.example';
VACUUM ANALYZE;
SQL
echo "scheduling: $BENCH_SCHEDULING; $(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
STATUS=0
python3 bench/mfa_signin.py "$PORT" "$DURATION" "$ROUNDS" "$THREADS" "$USERS" "$PASSWORD" || STATUS=$?
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit "$STATUS"
