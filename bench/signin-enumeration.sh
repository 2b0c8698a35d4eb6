#!/usr/bin/env bash
# Sign-in with an unknown email against sign-in with a known email and a wrong password, at the
# production scrypt cost. Both are one scrypt verification (AccountsAPITests counts the jobs), so
# they must take alike times, or the time would tell which emails have accounts. Moved here from
# AccountsAPITests, where it was timed beside the whole test suite on two cores.
# A release build on its own managed cluster, throttles out of the way; one request at a time, the
# two kinds alternated, ROUNDS of each; prints the medians and their ratio, and fails (exit 1) when
# the ratio is outside 0.5–2.
# Usage: [EXOSPHERE_BIN=path] [BENCH_CGROUP=off] bench/signin-enumeration.sh [rounds=40]
# Needs: curl.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-40}
PORT=18490
DIR=$(mktemp -d /tmp/exo-signin-enumeration.XXXXXX)
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
start_managed_server --signin-limit 1000000 --signin-email-limit 1000000 --signin-address-limit 1000000
curl -fs -X POST "http://127.0.0.1:$PORT/users" -H 'Content-Type: application/json' \
    -d '{"email":"known@bench.example","password":"bench password 1"}' >/dev/null

signin() { # email -> "status seconds"
    curl -s -o /dev/null -w '%{http_code} %{time_total}\n' -X POST "http://127.0.0.1:$PORT/users/signin" \
        -H 'Content-Type: application/json' -d "{\"email\":\"$1\",\"password\":\"not the password\"}"
}
signin known@bench.example >/dev/null  # warm-up
: > "$DIR/known.txt"
: > "$DIR/unknown.txt"
for round in $(seq "$ROUNDS"); do
    read -r status seconds <<<"$(signin known@bench.example)"
    [ "$status" = 401 ] || { echo "known email, wrong password: status $status"; exit 1; }
    echo "$seconds" >> "$DIR/known.txt"
    read -r status seconds <<<"$(signin "nobody$round@bench.example")"
    [ "$status" = 401 ] || { echo "unknown email: status $status"; exit 1; }
    echo "$seconds" >> "$DIR/unknown.txt"
done
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
KNOWN=$(median "$DIR/known.txt")
UNKNOWN=$(median "$DIR/unknown.txt")
echo "scheduling: $BENCH_SCHEDULING; $(nproc) cores; $ROUNDS sign-ins of each kind, alternated, one at a time"
printf '%-30s %10s\n' "sign-in" "median s" "known email, wrong password" "$KNOWN" "unknown email" "$UNKNOWN"
awk -v k="$KNOWN" -v u="$UNKNOWN" 'BEGIN {
    r = u / k
    printf "ratio unknown/known: %.2f\n", r
    if (r < 0.5 || r > 2) { print "the two kinds of sign-in do not take alike times"; exit 1 }
}'
