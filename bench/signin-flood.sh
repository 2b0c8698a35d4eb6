#!/usr/bin/env bash
# User sign-in latency during a flood from one client address: wrong admin sign-ins (issue 28,
# item 2) or new guests (issue 40). A release build on its own managed cluster, trusting
# X-Forwarded-For from 127.0.0.1, sign-in throttles out of the way (what is measured is the
# hashing pool and the database), then bench/signin_flood.py. GUEST_LIMIT sets
# --guest-address-limit (default: the server's own, 30 an hour; 0 turns it off).
# Usage: [EXOSPHERE_BIN=path] [BENCH_CGROUP=off] [GUEST_LIMIT=N] bench/signin-flood.sh [seconds=10] [flooders=16] [admin|guest|control]
# Needs: curl, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-10}
FLOODERS=${2:-16}
KIND=${3:-admin}
PORT=18489
DIR=$(mktemp -d /tmp/exo-signin-flood.XXXXXX)
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
start_managed_server --trusted-proxies 127.0.0.1 --signin-limit 1000000 --signin-email-limit 1000000 --signin-address-limit 1000000 \
    ${GUEST_LIMIT:+--guest-address-limit "$GUEST_LIMIT"}
printf '%s\n' 'bench admin passphrase' | "$BIN" admin create --email root@bench.example --password-stdin --data-dir "$DIR/pg" --log-level warning
curl -fs -X POST "http://127.0.0.1:$PORT/users" -H 'Content-Type: application/json' \
    -d '{"email":"user@bench.example","password":"bench password 1"}' >/dev/null
echo "scheduling: $BENCH_SCHEDULING; $(nproc) cores"
python3 bench/signin_flood.py "$PORT" "$DURATION" "$FLOODERS" user@bench.example "bench password 1" "$KIND"
