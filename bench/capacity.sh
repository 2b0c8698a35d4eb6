#!/usr/bin/env bash
# Capacity per endpoint (issue 19): for each endpoint, wrk against one release instance on its
# managed cluster, and the CPU time that the run cost the instance (its threads and helper
# processes) and PostgreSQL (every backend), read from /proc before and after. Dividing requests by
# CPU seconds gives requests per second per core of each, whatever else shares the machine: what
# docs/deployment.md's capacity table is made of. Also the instance's memory (VmRSS at rest,
# VmHWM at the end) and its connections in pg_stat_activity.
# The profile reads and writes rotate over USERS users (a few users' rows would measure their row locks).
# Usage: bench/capacity.sh [seconds=10] [connections=64]
#   EXOSPHERE_BIN=path: use that binary instead of building (scripts/build-release.sh) here.
#   STORAGE=database|filesystem: where the image is kept (default database).
#   USERS=200: users whose tokens the profile requests rotate over.
#   SERVER_FLAGS="...": more flags for the instance (e.g. "--session-cache-mb 0": every read to PostgreSQL).
# Needs: wrk, curl, psql, python3, vips (libvips-tools).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_RUN=${1:-10}
CONNECTIONS=${2:-64}
STORAGE=${STORAGE:-database}
USERS=${USERS:-200}
PORT=18493
DIR=$(mktemp -d /tmp/exo-capacity-bench.XXXXXX)
cleanup() {
    [ -n "${PID:-}" ] && kill -TERM "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
    rm -rf "$DIR"
    leave_bench_cgroup
}
trap cleanup EXIT

. bench/lib.sh
exosphere_binary "$DIR"
enter_bench_cgroup
echo "scheduling: $BENCH_SCHEDULING"
chmod 755 "$DIR"
# shellcheck disable=SC2086
start_managed_server --image-storage "$STORAGE" --image-dir "$DIR/images" --registration-address-limit 0 ${SERVER_FLAGS:-}
API="http://127.0.0.1:$PORT"
json() { python3 -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
rest_rss=$(awk '$1 == "VmRSS:" {print $2}' "/proc/$PID/status")

TOKEN=$(curl -fs "$API/users" -H 'Content-Type: application/json' \
    -d '{"email": "capacity@example.com", "password": "capacity bench passphrase"}' | json accessToken)
curl -fs "$API/users" -H 'Content-Type: application/json' \
    -d '{"email": "signer@example.com", "password": "capacity signer passphrase"}' > /dev/null
register() {
    curl -fs "$API/users" -H 'Content-Type: application/json' \
        -d "{\"email\": \"user$1@example.com\", \"password\": \"capacity bench passphrase $1\"}" | json accessToken
}
export -f register json
export API
seq "$USERS" | xargs -P 4 -I{} bash -c 'register {}' > "$DIR/tokens.txt"
while read -r token; do
    curl -fs -X PATCH "$API/users/me" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
        -d '{"data": {"height": 1.62, "weight": 70, "isMarried": false, "dateOfBirth": "1990-04-01"}}' > /dev/null
done < "$DIR/tokens.txt"
# A photo of about 300 KB.
vips gaussnoise "$DIR/n.v" 800 600 --sigma 30 --mean 120
vips copy "$DIR/n.v" "$DIR/photo.jpg[Q=85]"
UPLOAD=$(curl -fs "$API/users/me/images" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: image/jpeg' --data-binary "@$DIR/photo.jpg")
IMAGE=$(json id <<< "$UPLOAD")
SIGNED=$(json signedUrl <<< "$UPLOAD")
case "$SIGNED" in http*) ;; *) SIGNED="$API$SIGNED" ;; esac
# The 256 thumbnail's own signed URL (the size is signed).
THUMBNAIL=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["signedThumbnails"]["256"])' <<< "$UPLOAD")
case "$THUMBNAIL" in http*) ;; *) THUMBNAIL="$API$THUMBNAIL" ;; esac
curl -fs -o /dev/null "$THUMBNAIL"  # made once; then served from the cache

# The users' tokens in turn (each wrk thread has its own Lua state, and so its own turn).
rotating() {  # method body
    cat <<LUA
local tokens = {}
for line in io.lines("$DIR/tokens.txt") do tokens[#tokens + 1] = line end
local turn = 0
request = function()
    turn = turn % #tokens + 1
    return wrk.format("$1", nil, {["Authorization"] = "Bearer " .. tokens[turn], ["Content-Type"] = "application/json"}, $2)
end
LUA
}
rotating GET nil > "$DIR/get.lua"
rotating PATCH "'{\"data\": {\"weight\": 71}}'" > "$DIR/patch.lua"
cat > "$DIR/signin.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"email": "signer@example.com", "password": "capacity signer passphrase"}'
wrk.headers["Content-Type"] = "application/json"
LUA

# CPU ticks (utime + stime, of live processes and of reaped children) of the instance's own
# processes and of PostgreSQL's, told apart by their command name.
cpu_ticks() {
    python3 - "$PID" <<'PY'
import os, sys
root = int(sys.argv[1])
children = {}
stats = {}
for name in os.listdir("/proc"):
    if not name.isdigit():
        continue
    try:
        with open(f"/proc/{name}/stat") as f:
            text = f.read()
    except OSError:
        continue
    command = text[text.index("(") + 1:text.rindex(")")]
    fields = text[text.rindex(")") + 2:].split()
    pid, ppid = int(name), int(fields[1])
    stats[pid] = (command, sum(int(x) for x in fields[11:15]))  # utime stime cutime cstime
    children.setdefault(ppid, []).append(pid)
server = postgres = 0
stack = [root]
while stack:
    pid = stack.pop()
    if pid not in stats:
        continue
    command, ticks = stats[pid]
    if command == "postgres":
        postgres += ticks
    else:
        server += ticks
    stack += children.get(pid, [])
print(server, postgres)
PY
}

TICKS=$(getconf CLK_TCK)
printf '%-30s %10s %9s %16s %16s\n' endpoint "req/s" p99 "req/s/server-core" "req/s/PG-core"
measure() {  # label connections wrk-arguments...
    local label=$1 connections=$2 before after output requests
    shift 2
    before=$(cpu_ticks)
    output=$(wrk -t 2 -c "$connections" -d "${SECONDS_PER_RUN}s" --latency "$@")
    after=$(cpu_ticks)
    requests=$(awk '$2 == "requests" && $3 == "in" {print $1}' <<< "$output")
    read -r s0 p0 <<< "$before"
    read -r s1 p1 <<< "$after"
    python3 - "$label" "$requests" "$SECONDS_PER_RUN" "$((s1 - s0))" "$((p1 - p0))" "$TICKS" \
        "$(awk '$1 == "99%" {print $2}' <<< "$output")" "$(grep -E 'Non-2xx|Socket errors' <<< "$output" | tr '\n' ' ' || true)" <<'PY'
import sys
label, requests, seconds, server, postgres, ticks, p99, errors = sys.argv[1:]
requests, seconds, ticks = int(requests), int(seconds), int(ticks)
server_s, postgres_s = int(server) / ticks, int(postgres) / ticks
# Under 2 % of the run's wall time on that side: too little to divide by.
per = lambda cpu: f"{requests / cpu:,.0f}" if cpu > 0.02 * seconds else "(idle)"
print(f"{label:<30} {requests / seconds:>10,.0f} {p99:>9} {per(server_s):>16} {per(postgres_s):>16}  {errors}")
PY
}

AUTH=(-H "Authorization: Bearer $TOKEN")
measure "GET /healthz" "$CONNECTIONS" "$API/healthz"
measure "GET /users/me" "$CONNECTIONS" -s "$DIR/get.lua" "$API/users/me"
measure "PATCH /users/me" "$CONNECTIONS" -s "$DIR/patch.lua" "$API/users/me"
measure "GET /users/me/images" "$CONNECTIONS" "${AUTH[@]}" "$API/users/me/images"
measure "GET an image (300 KB, $STORAGE)" "$CONNECTIONS" "${AUTH[@]}" "$API/users/me/images/$IMAGE"
measure "GET a thumbnail (signed, 256)" "$CONNECTIONS" "$THUMBNAIL"
measure "POST /users/signin" 8 -s "$DIR/signin.lua" "$API/users/signin"

peak=$(awk '$1 == "VmHWM:" {print $2}' "/proc/$PID/status")
connections=$(psql "$CONN" -Atc "SELECT application_name, count(*) FROM pg_stat_activity WHERE application_name LIKE 'exosphere%' GROUP BY 1 ORDER BY 1" | tr '\n' ' ')
echo "instance memory: $((rest_rss / 1024)) MiB at rest, $((peak / 1024)) MiB at most (VmHWM)"
echo "its connections to PostgreSQL (pg_stat_activity): $connections"
echo "cores: $(nproc); wrk $CONNECTIONS connections (sign-in 8), ${SECONDS_PER_RUN} s per endpoint"
