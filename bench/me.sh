#!/usr/bin/env bash
# GET /users/me with the session cache (issue 29): one instance with the cache (the default), a
# second on the same database with it off (--session-cache-mb 0), and nginx serving the same JSON
# bytes from a file, in one run; first one user's token on every request, then 200 users' tokens
# at random. The servers alternate ROUNDS times; the medians are compared.
# Usage: [EXOSPHERE_BIN=path] [ROUNDS=3] [USERS=200] bench/me.sh [seconds=8] [connections=64]
# Needs: wrk, nginx, curl, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_RUN=${1:-8}
CONNECTIONS=${2:-64}
ROUNDS=${ROUNDS:-3}
USERS=${USERS:-200}
PORT=18495
OFF_PORT=18496
NGINX_PORT=18497
DIR=$(mktemp -d /tmp/exo-me-bench.XXXXXX)
cleanup() {
    [ -n "${OFF_PID:-}" ] && kill -TERM "$OFF_PID" 2>/dev/null && wait "$OFF_PID" 2>/dev/null || true
    [ -n "${PID:-}" ] && kill -TERM "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
    [ -f "$DIR/nginx.pid" ] && kill -QUIT "$(cat "$DIR/nginx.pid")" 2>/dev/null || true
    for _ in $(seq 50); do [ -f "$DIR/nginx.pid" ] || break; sleep 0.1; done
    rm -rf "$DIR"
    leave_bench_cgroup
}
trap cleanup EXIT

. bench/lib.sh
exosphere_binary "$DIR"
enter_bench_cgroup
echo "scheduling: $BENCH_SCHEDULING"
chmod 755 "$DIR"  # the managed PostgreSQL runs as the postgres user when this runs as root
start_managed_server --registration-address-limit 0
"$BIN" serve --port "$OFF_PORT" --database-url "$CONN" --session-cache-mb 0 --access-log off --log-format logfmt \
    > "$DIR/exosphere-off.log" 2>&1 &
OFF_PID=$!
for _ in $(seq 300); do curl -fs "http://127.0.0.1:$OFF_PORT/readyz" >/dev/null 2>&1 && break; sleep 0.2; done

API="http://127.0.0.1:$PORT"
register() {
    curl -fs "$API/users" -H 'Content-Type: application/json' \
        -d "{\"email\": \"user$1@example.com\", \"password\": \"me bench passphrase $1\", \"firstname\": \"User\", \"lastname\": \"Number $1\", \"data\": {\"height\": 1.62, \"isMarried\": false}}" |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["accessToken"])'
}
export -f register
export API
seq "$USERS" | xargs -P 4 -I{} bash -c 'register {}' > "$DIR/tokens.txt"
TOKEN=$(head -1 "$DIR/tokens.txt")
# nginx serves the bytes Exosphere answers for the first token.
curl -fs "$API/users/me" -H "Authorization: Bearer $TOKEN" > "$DIR/healthz.json"
echo "body: $(wc -c < "$DIR/healthz.json") bytes"
sed -e "s|BENCH_DIR|$DIR|g" -e "s|NGINX_PORT|$NGINX_PORT|g" -e "s|ACCESS_LOG|off|g" bench/nginx.conf > "$DIR/nginx.conf"
nginx -c "$DIR/nginx.conf" -p "$DIR" &
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$NGINX_PORT/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
cat > "$DIR/tokens.lua" <<LUA
local tokens = {}
for line in io.lines("$DIR/tokens.txt") do tokens[#tokens + 1] = line end
request = function()
    return wrk.format("GET", "/users/me", {["Authorization"] = "Bearer " .. tokens[math.random(#tokens)]})
end
LUA

run() { # wrk arguments... -> "req/s p99-ms"
    wrk -t2 -c"$CONNECTIONS" -d"${SECONDS_PER_RUN}s" --latency "$@" > "$DIR/run.txt"
    awk '/Requests\/sec/ { rps = $2 }
         $1 == "99%" { v = $2; if (v ~ /us$/) p = v / 1000; else if (v ~ /ms$/) p = v + 0; else p = v * 1000 }
         END { printf "%s %.2f\n", rps, p }' "$DIR/run.txt"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
one() { run -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$1/users/me"; }
many() { run -s "$DIR/tokens.lua" "http://127.0.0.1:$1/users/me"; }

wrk -t2 -c"$CONNECTIONS" -d2s "http://127.0.0.1:$NGINX_PORT/healthz" > /dev/null
many "$PORT" > /dev/null
many "$OFF_PORT" > /dev/null
echo "wrk -t2 -c$CONNECTIONS -d${SECONDS_PER_RUN}s, $ROUNDS alternating rounds, $USERS users"
declare -A R P
for round in $(seq "$ROUNDS"); do
    for kind in nginx cache-one off-one cache-many off-many; do
        case $kind in
            nginx) out=$(run "http://127.0.0.1:$NGINX_PORT/healthz") ;;
            cache-one) out=$(one "$PORT") ;;
            off-one) out=$(one "$OFF_PORT") ;;
            cache-many) out=$(many "$PORT") ;;
            off-many) out=$(many "$OFF_PORT") ;;
        esac
        read -r r p <<< "$out"
        R[$kind]="${R[$kind]:-} $r"; P[$kind]="${P[$kind]:-} $p"
    done
    echo "round $round: nginx $(echo ${R[nginx]} | awk '{print $NF}'), cache one/many $(echo ${R[cache-one]} | awk '{print $NF}') / $(echo ${R[cache-many]} | awk '{print $NF}'), off one/many $(echo ${R[off-one]} | awk '{print $NF}') / $(echo ${R[off-many]} | awk '{print $NF}') req/s"
done
NGINX=$(printf '%s\n' ${R[nginx]} | median)
printf '\n%-34s %12s %10s %10s   (medians)\n' "" req/s "p99 ms" "/nginx"
for kind in nginx cache-one cache-many off-one off-many; do
    rps=$(printf '%s\n' ${R[$kind]} | median); p99=$(printf '%s\n' ${P[$kind]} | median)
    case $kind in
        nginx) label="nginx, the same bytes from a file" ;;
        cache-one) label="GET /users/me, cache, 1 token" ;;
        cache-many) label="GET /users/me, cache, $USERS tokens" ;;
        off-one) label="GET /users/me, no cache, 1 token" ;;
        off-many) label="GET /users/me, no cache, $USERS tokens" ;;
    esac
    printf '%-34s %12s %10s %10s\n' "$label" "$rps" "$p99" "$(awk -v a="$rps" -v b="$NGINX" 'BEGIN { printf "%.2f", a / b }')"
done
curl -fs "$API/metrics" | grep '^exosphere_session_cache_lookups_total' || true
echo "exosphere (cache) peak RSS: $(awk '/VmHWM/ {print $2}' "/proc/$PID/status") kB"
