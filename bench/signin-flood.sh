#!/usr/bin/env bash
# User sign-in latency during a flood of admin sign-ins from one client address (issue 28, item 2):
# a release build on its own managed cluster, trusting X-Forwarded-For from 127.0.0.1, throttles out
# of the way (what is measured is the hashing pool), then bench/signin_flood.py.
# Usage: [EXOSPHERE_BIN=path] [BENCH_CGROUP=off] bench/signin-flood.sh [seconds=10] [flooders=16]
# Needs: curl, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-10}
FLOODERS=${2:-16}
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
start_managed_server --trusted-proxies 127.0.0.1 --signin-limit 1000000 --signin-email-limit 1000000 --signin-address-limit 1000000
printf '%s\n' 'bench admin passphrase' | "$BIN" admin create --email root@bench.example --password-stdin --data-dir "$DIR/pg" --log-level warning
curl -fs -X POST "http://127.0.0.1:$PORT/users" -H 'Content-Type: application/json' \
    -d '{"email":"user@bench.example","password":"bench password 1"}' >/dev/null
echo "scheduling: $BENCH_SCHEDULING; $(nproc) cores"
python3 bench/signin_flood.py "$PORT" "$DURATION" "$FLOODERS" user@bench.example "bench password 1"
