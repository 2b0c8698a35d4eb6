#!/usr/bin/env bash
# Event streams that are never read cannot hold the server's memory (issue 38, item 2): a release
# build on its own managed cluster, users with about KIB (56) KiB of custom fields each, and two
# phases, each on a freshly started server (the same cluster):
#   1. USERS (10) users with STREAMS_PER_USER (5) GET /users/me/events streams each that read
#      nothing after the head (sockets with a 4 KiB receive buffer), then PATCHES (2,000)
#      PATCH /users/me toggling one boolean field, round robin over those users, on 8 keep-alive
#      connections: every PATCH is a `profile` event of the whole user (about 56 KiB) for each of
#      that user's streams;
#   2. the same with USERS2 (40) other users: 200 unread streams.
# In each phase: the server's VmRSS at the start, at its peak (sampled every 10 ms) during the same
# PATCHes with no stream open, with the streams open, at its peak during the PATCHes with them, and
# 3 s after; the kernel's TCP buffer memory (the whole machine's, /proc/net/sockstat) with the
# streams open and after the PATCHes; a sixth stream for one user (refused with 429 by
# --max-streams-per-user 5); GET /users/me of a user with no stream, 200 a second on one
# connection: LATENCY_SECONDS (5) idle, then throughout each run of PATCHes (p50, p99, max); and,
# once the PATCHes are done, how many of the unread streams the server had ended (a stream holds
# at most 256 KiB its client has not read, then gets `event: resync` and its end) and how much
# each had left to read (the kernel's send buffer holds that beside the server's 256 KiB).
# Fails when either phase's peak is 64 MiB or more over its start.
# Usage: [EXOSPHERE_BIN=path] [BENCH_CGROUP=off] [USERS=10] [USERS2=40] [STREAMS_PER_USER=5]
#        [PATCHES=2000] [KIB=56] [LATENCY_SECONDS=5] bench/streams-memory.sh
# Needs: python3, psql (postgresql), curl, jq.
set -euo pipefail
cd "$(dirname "$0")/.."
USERS=${USERS:-10}
USERS2=${USERS2:-40}
STREAMS_PER_USER=${STREAMS_PER_USER:-5}
PATCHES=${PATCHES:-2000}
KIB=${KIB:-56}
LATENCY_SECONDS=${LATENCY_SECONDS:-5}
LIMIT_MIB=64
PORT=18498
DIR=$(mktemp -d /tmp/exo-streams-bench.XXXXXX)
cleanup() {
    [ -n "${HOLD_PID:-}" ] && kill -TERM "$HOLD_PID" 2>/dev/null || true
    [ -n "${PID:-}" ] && kill -TERM "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
    touch "$DIR/stop-rss" "$DIR/stop-probe" 2>/dev/null || true
    wait 2>/dev/null || true
    leave_bench_cgroup
    rm -rf "$DIR"
}
trap cleanup EXIT
. bench/lib.sh
exosphere_binary "$DIR"
enter_bench_cgroup
chmod 755 "$DIR"
HELPER=bench/streams_memory.py
SERVER_FLAGS=(--thumbnail-helpers 0 --max-connections-per-address 0)

start_managed_server "${SERVER_FLAGS[@]}"
[ -n "$CONN" ] || { echo "no managed cluster connection in the log"; cat "$DIR/exosphere.log"; exit 1; }
# One real registration, then the others sharing its hash, one session each whose token is derived
# from its number (as bench/events.sh): user 1 only reads (the latency), users 2.. hold streams.
TOTAL=$(( 1 + USERS + USERS2 ))
curl -fs -X POST "http://127.0.0.1:$PORT/users" -H 'Content-Type: application/json' \
    -d '{"email":"user1@bench.example","password":"bench password 1"}' >/dev/null
TOKEN_SQL="rtrim(translate(encode(sha256(convert_to('seed' || i, 'UTF8')), 'base64'), '+/', '-_'), '=')"
psql "$CONN" -qX -v ON_ERROR_STOP=1 <<SQL
INSERT INTO users (email, email_normalized, password_hash)
SELECT 'user' || i || '@bench.example', 'user' || i || '@bench.example',
       (SELECT password_hash FROM users WHERE email_normalized = 'user1@bench.example')
FROM generate_series(2, $TOTAL) i;
INSERT INTO sessions (user_id, token_hash, expires_at)
SELECT u.id, sha256(convert_to($TOKEN_SQL, 'UTF8')), now() + interval '1 year'
FROM generate_series(1, $TOTAL) i JOIN users u ON u.email_normalized = 'user' || i || '@bench.example';
VACUUM ANALYZE;
SQL
psql "$CONN" -qAtX -c "SELECT $TOKEN_SQL FROM generate_series(1, $TOTAL) i" > "$DIR/tokens.txt"
READER=$(sed -n 1p "$DIR/tokens.txt")
sed -n "2,$(( 1 + USERS ))p" "$DIR/tokens.txt" > "$DIR/phase1.txt"
sed -n "$(( 2 + USERS )),${TOTAL}p" "$DIR/tokens.txt" > "$DIR/phase2.txt"
FIELD_BYTES=$(python3 "$HELPER" fields "$PORT" <(sed 1,1d "$DIR/tokens.txt") "$KIB")
kill -TERM "$PID"; wait "$PID" || true; PID=""

rss() { awk '/VmRSS/ {print $2}' "/proc/$PID/status"; }
# The kernel's memory for TCP buffers, all sockets of the machine, in KiB (pages of 4 KiB).
tcp_kib() { awk '$1 == "TCP:" { for (i = 2; i < NF; i++) if ($i == "mem") print $(i + 1) * 4 }' /proc/net/sockstat; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

# run_phase NAME TOKENS_FILE: one phase on a server started for it; sets R_* for the summary.
# loop NAME TOKENS_FILE: PATCHES PATCHes over TOKENS_FILE's users with the reader's GET /users/me
# beside them and the server's RSS sampled throughout; the peak in $DIR/NAME-peak.txt.
loop() {
    rm -f "$DIR/stop-rss" "$DIR/stop-probe"
    python3 "$HELPER" rss "$PID" "$DIR/stop-rss" > "$DIR/$1-peak.txt" &
    local rss_pid=$!
    python3 "$HELPER" probe "$PORT" "$READER" 200 "$DIR/stop-probe" > "$DIR/$1-latency.json" &
    local probe_pid=$!
    python3 "$HELPER" patch "$PORT" "$2" "$PATCHES" 8 > "$DIR/$1-patch.json"
    touch "$DIR/stop-probe"; wait "$probe_pid"
    touch "$DIR/stop-rss"; wait "$rss_pid"
}
latency() { jq -r '"\(.p50) / \(.p99) / \(.max)"' "$1"; }

# run_phase NAME TOKENS_FILE: one phase on a server started for it; sets R_* for the summary.
run_phase() {
    local name=$1 tokens=$2
    start_managed_server "${SERVER_FLAGS[@]}"
    # Warm: the reader's session and connection, each streaming user's session and row.
    python3 "$HELPER" probe "$PORT" "$READER" 200 2 >/dev/null
    python3 "$HELPER" patch "$PORT" "$tokens" $(( 2 * $(wc -l < "$tokens") )) 8 >/dev/null  # flags end as they were
    sleep 3  # the server trims its allocator's arenas every 2 s
    local before; before=$(rss)
    python3 "$HELPER" probe "$PORT" "$READER" 200 "$LATENCY_SECONDS" > "$DIR/$name-idle-latency.json"
    # The same PATCHes with no stream open: what the load alone costs the reader.
    loop "$name-nostreams" "$tokens"
    sleep 3

    rm -f "$DIR/$name-hold.json"
    python3 "$HELPER" hold "$PORT" "$tokens" "$STREAMS_PER_USER" "$DIR/$name-hold.json" &
    HOLD_PID=$!
    for _ in $(seq 600); do [ -s "$DIR/$name-hold.json" ] && break; sleep 0.1; done
    [ -s "$DIR/$name-hold.json" ] || { echo "$name: the streams did not open"; exit 1; }
    sleep 1
    local open; open=$(rss)
    local tcp_open; tcp_open=$(tcp_kib)
    loop "$name" "$tokens"
    sleep 3
    local after; after=$(rss)
    local tcp_after; tcp_after=$(tcp_kib)
    kill -TERM "$HOLD_PID"; wait "$HOLD_PID"; HOLD_PID=""
    kill -TERM "$PID"; wait "$PID" || true; PID=""

    local held; held=$(sed -n 1p "$DIR/$name-hold.json")
    local ended; ended=$(sed -n 2p "$DIR/$name-hold.json")
    R_STREAMS[$name]=$(jq -r .open <<<"$held")
    R_REFUSED[$name]=$(jq -r .one_too_many <<<"$held")
    R_ENDED[$name]=$(jq -r '"\(.ended_by_server) ended, \(.resync_seen) said resync, left to read \(.left_kib_mean) KiB mean, \(.left_kib_max) max"' <<<"$ended")
    R_BEFORE[$name]=$before R_OPEN[$name]=$open R_PEAK[$name]=$(cat "$DIR/$name-peak.txt") R_AFTER[$name]=$after
    R_TCP[$name]="$(mib "$tcp_open") MiB with the streams open, $(mib "$tcp_after") MiB after the PATCHes"
    R_PEAK0[$name]=$(cat "$DIR/$name-nostreams-peak.txt")
    R_PATCH[$name]="$(jq -r .seconds "$DIR/$name-patch.json") s $(jq -c .statuses "$DIR/$name-patch.json") (no streams: $(jq -r .seconds "$DIR/$name-nostreams-patch.json") s $(jq -c .statuses "$DIR/$name-nostreams-patch.json"))"
    R_LAT_IDLE[$name]=$(latency "$DIR/$name-idle-latency.json")
    R_LAT_NOSTREAMS[$name]=$(latency "$DIR/$name-nostreams-latency.json")
    R_LAT_DURING[$name]=$(latency "$DIR/$name-latency.json")
    R_LAT_STATUS[$name]=$(cat "$DIR/$name-idle-latency.json" "$DIR/$name-nostreams-latency.json" "$DIR/$name-latency.json" | jq -c .statuses | tr '\n' ' ')
}

declare -A R_TCP R_STREAMS R_REFUSED R_ENDED R_BEFORE R_OPEN R_PEAK R_PEAK0 R_AFTER R_PATCH R_LAT_IDLE R_LAT_NOSTREAMS R_LAT_DURING R_LAT_STATUS
run_phase phase1 "$DIR/phase1.txt"
run_phase phase2 "$DIR/phase2.txt"

echo
echo "unread event streams: custom fields of $FIELD_BYTES bytes per user, $STREAMS_PER_USER streams per user, $PATCHES PATCH /users/me on 8 connections"
echo "scheduling: $BENCH_SCHEDULING"
echo "server RSS in MiB: before anything, peak during the PATCHes with no stream, with the streams open, peak during the PATCHes with them, 3 s after"
printf '%-7s %7s %7s %7s %9s %7s %7s %7s %7s\n' phase streams "one more" before "no streams" open peak after growth
FAILED=0
for name in phase1 phase2; do
    growth=$(( R_PEAK[$name] - R_BEFORE[$name] ))
    printf '%-7s %7s %7s %7s %9s %7s %7s %7s %7s\n' "$name" "${R_STREAMS[$name]}" "${R_REFUSED[$name]}" \
        "$(mib "${R_BEFORE[$name]}")" "$(mib "${R_PEAK0[$name]}")" "$(mib "${R_OPEN[$name]}")" "$(mib "${R_PEAK[$name]}")" \
        "$(mib "${R_AFTER[$name]}")" "$(mib "$growth")"
    [ "$growth" -lt $(( LIMIT_MIB * 1024 )) ] || FAILED=1
done
echo "GET /users/me of a user with no stream, 200/s on one connection, ms p50 / p99 / max:"
printf '%-7s %-22s %-26s %-22s\n' phase idle "PATCHes, no streams" "PATCHes, streams unread"
for name in phase1 phase2; do
    printf '%-7s %-22s %-26s %-22s\n' "$name" "${R_LAT_IDLE[$name]}" "${R_LAT_NOSTREAMS[$name]}" "${R_LAT_DURING[$name]}"
done
for name in phase1 phase2; do
    echo "$name: PATCHes ${R_PATCH[$name]}"
    echo "  streams once the PATCHes were done: ${R_ENDED[$name]}"
    echo "  the kernel's TCP buffers (the whole machine): ${R_TCP[$name]}; GET statuses ${R_LAT_STATUS[$name]}"
done
if [ "$FAILED" = 1 ]; then
    echo "FAIL: a phase's peak grew by $LIMIT_MIB MiB or more over its start"
    exit 1
fi
echo "ok: each phase's peak under $LIMIT_MIB MiB over its start"
