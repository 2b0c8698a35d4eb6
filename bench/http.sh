#!/usr/bin/env bash
# GET /healthz on Exosphere (release build) against nginx serving the same JSON, in one run.
# Usage: [EXOSPHERE_BIN=path] bench/http.sh [seconds=10] [connections=64]
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

. bench/lib.sh
exosphere_binary "$DIR"

printf '{"status":"ok"}' > "$DIR/healthz.json"
ACCESS_LOG=${ACCESS_LOG:-off}
if [ "$ACCESS_LOG" = on ]; then NGINX_LOG="$DIR/nginx-access.log exo"; else NGINX_LOG=off; fi
sed -e "s|BENCH_DIR|$DIR|g" -e "s|NGINX_PORT|$NGINX_PORT|g" -e "s|ACCESS_LOG|$NGINX_LOG|g" bench/nginx.conf > "$DIR/nginx.conf"
nginx -c "$DIR/nginx.conf" -p "$DIR" &
chmod 755 "$DIR"  # the managed PostgreSQL runs as the postgres user when this runs as root
"$BIN" serve --port "$EXO_PORT" --data-dir "$DIR/pg" --access-log "$ACCESS_LOG" > "$DIR/exosphere.log" 2>&1 &
EXO_PID=$!
for _ in $(seq 600); do
    curl -fs "http://127.0.0.1:$EXO_PORT/healthz" >/dev/null && curl -fs "http://127.0.0.1:$NGINX_PORT/healthz" >/dev/null && break
    sleep 0.1
done

run() { # url -> "req/s p99-ms"
    wrk -t2 -c"$CONNECTIONS" -d"${SECONDS_PER_RUN}s" --latency "$1" > "$DIR/run.txt"
    awk '/Requests\/sec/ { rps = $2 }
         $1 == "99%" { v = $2; if (v ~ /us$/) p = v / 1000; else if (v ~ /ms$/) p = v + 0; else p = v * 1000 }
         END { printf "%s %.2f\n", rps, p }' "$DIR/run.txt"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# The machines are shared and noisy: warm both up, then alternate the two servers ROUNDS times
# and compare medians.
ROUNDS=${ROUNDS:-3}
wrk -t2 -c"$CONNECTIONS" -d2s "http://127.0.0.1:$NGINX_PORT/healthz" >/dev/null
wrk -t2 -c"$CONNECTIONS" -d2s "http://127.0.0.1:$EXO_PORT/healthz" >/dev/null
echo "wrk -t2 -c$CONNECTIONS -d${SECONDS_PER_RUN}s GET /healthz, $ROUNDS alternating rounds (access logs: $ACCESS_LOG)"
NR=(); NP=(); ER=(); EP=()
for round in $(seq "$ROUNDS"); do
    read -r r p <<<"$(run "http://127.0.0.1:$NGINX_PORT/healthz")"; NR+=("$r"); NP+=("$p")
    read -r r p <<<"$(run "http://127.0.0.1:$EXO_PORT/healthz")"; ER+=("$r"); EP+=("$p")
    echo "round $round: nginx ${NR[-1]} req/s p99 ${NP[-1]} ms; exosphere ${ER[-1]} req/s p99 ${EP[-1]} ms"
done
RSS=$(awk '/VmHWM/ {print $2}' "/proc/$EXO_PID/status")
NRPS=$(printf '%s\n' "${NR[@]}" | median); NP99=$(printf '%s\n' "${NP[@]}" | median)
ERPS=$(printf '%s\n' "${ER[@]}" | median); EP99=$(printf '%s\n' "${EP[@]}" | median)
printf '\n%-10s %12s %10s   (medians)\n' server req/s "p99 ms"
printf '%-10s %12s %10s\n' nginx "$NRPS" "$NP99" exosphere "$ERPS" "$EP99"
awk -v e="$ERPS" -v n="$NRPS" 'BEGIN { printf "ratio exosphere/nginx: %.2f\n", e / n }'
echo "exosphere peak RSS: $((RSS / 1024)) MiB ($RSS kB)"
