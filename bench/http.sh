#!/usr/bin/env bash
# GET /healthz on Exosphere (release build) against nginx serving the same JSON, in one run.
# Usage: bench/http.sh [seconds=10] [connections=64]
# ACCESS_LOG=on makes both servers write an access-log line per request to a file (default: off for both).
# Needs: wrk, nginx (apt-get install -y wrk nginx-light).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_RUN=${1:-10}
CONNECTIONS=${2:-64}
EXO_PORT=18481
NGINX_PORT=18482
DIR=$(mktemp -d /tmp/exo-bench.XXXXXX)
cleanup() {
    [ -n "${EXO_PID:-}" ] && kill -TERM "$EXO_PID" 2>/dev/null || true
    [ -f "$DIR/nginx.pid" ] && kill -QUIT "$(cat "$DIR/nginx.pid")" 2>/dev/null || true
    sleep 0.5
    rm -rf "$DIR"
}
trap cleanup EXIT

swift build -c release --product exosphere 2>&1 | tail -1
BIN=$(swift build -c release --show-bin-path)/exosphere

printf '{"status":"ok"}' > "$DIR/healthz.json"
ACCESS_LOG=${ACCESS_LOG:-off}
if [ "$ACCESS_LOG" = on ]; then NGINX_LOG="$DIR/nginx-access.log exo"; else NGINX_LOG=off; fi
sed -e "s|BENCH_DIR|$DIR|g" -e "s|NGINX_PORT|$NGINX_PORT|g" -e "s|ACCESS_LOG|$NGINX_LOG|g" bench/nginx.conf > "$DIR/nginx.conf"
nginx -c "$DIR/nginx.conf" -p "$DIR" &
"$BIN" serve --port "$EXO_PORT" --access-log "$ACCESS_LOG" > "$DIR/exosphere.log" 2>&1 &
EXO_PID=$!
for _ in $(seq 50); do
    curl -fs "http://127.0.0.1:$EXO_PORT/healthz" >/dev/null && curl -fs "http://127.0.0.1:$NGINX_PORT/healthz" >/dev/null && break
    sleep 0.1
done

run() { # name url
    wrk -t2 -c"$CONNECTIONS" -d2s "$2" >/dev/null  # warm-up
    wrk -t2 -c"$CONNECTIONS" -d"${SECONDS_PER_RUN}s" --latency "$2" > "$DIR/$1.txt"
    local rps p99
    rps=$(awk '/Requests\/sec/ {print $2}' "$DIR/$1.txt")
    p99=$(awk '$1 == "99%" {print $2}' "$DIR/$1.txt")
    echo "$1 $rps $p99"
}
echo "wrk -t2 -c$CONNECTIONS -d${SECONDS_PER_RUN}s GET /healthz (access logs: $ACCESS_LOG)"
N=$(run nginx "http://127.0.0.1:$NGINX_PORT/healthz")
E=$(run exosphere "http://127.0.0.1:$EXO_PORT/healthz")
RSS=$(awk '/VmHWM/ {print $2}' "/proc/$EXO_PID/status")
read -r _ NRPS NP99 <<<"$N"
read -r _ ERPS EP99 <<<"$E"
printf '%-10s %12s %10s\n' server req/s p99
printf '%-10s %12s %10s\n' nginx "$NRPS" "$NP99" exosphere "$ERPS" "$EP99"
awk -v e="$ERPS" -v n="$NRPS" 'BEGIN { printf "ratio exosphere/nginx: %.2f\n", e / n }'
echo "exosphere peak RSS: $((RSS / 1024)) MiB ($RSS kB)"
