#!/usr/bin/env bash
# Images (issue 5): upload and download of a 1 MiB PNG with concurrent clients, in MB/s, for both
# storages, beside nginx serving the same file from disk and the disk's own fsync'd write rate,
# in one run on one managed (durable) cluster:
#   1. downloads: wrk GET /users/me/images/{id} with a bearer token from the filesystem storage
#      (sendfile) and the database storage (bytea), against nginx serving the same bytes from a
#      file (sendfile on, Debian's default, and sendfile off), alternating ROUNDS rounds;
#   2. uploads: wrk POST /users/me/images (raw image/png) to each storage, against the disk's
#      fsync'd write rate for 1 MiB files with the same concurrency (bench/fsync_writes.py: write,
#      fsync, rename, fsync of the directory, as the filesystem storage does); uploads are
#      deleted after each run;
#   3. GET with `Range: bytes=0-0`: the per-request cost (session lookup, image metadata, open)
#      without the megabyte;
#   and each server's peak RSS during the runs.
# The image directory, nginx's file and PostgreSQL's data all live in the temporary directory
# under /tmp, one filesystem: on the project's machine ext4 on /dev/vda (the root filesystem,
# `df -T`); the script prints which it was.
# Usage: bench/images.sh [seconds=10] [connections=16]
#   EXOSPHERE_BIN=path: use that binary instead of building (scripts/build-release.sh) here.
#   ROUNDS=3: alternating rounds; the summary shows medians.
# Needs: wrk, nginx, curl, psql (postgresql), python3.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_RUN=${1:-10}
CONNECTIONS=${2:-16}
ROUNDS=${ROUNDS:-3}
SIZE=1048576
FS_PORT=18484
DB_PORT=18485
NGINX_PORT=18486
DIR=$(mktemp -d /tmp/exo-images-bench.XXXXXX)
cleanup() {
    [ -n "${DB_PID:-}" ] && kill -TERM "$DB_PID" 2>/dev/null && wait "$DB_PID" 2>/dev/null || true
    [ -n "${FS_PID:-}" ] && kill -TERM "$FS_PID" 2>/dev/null && wait "$FS_PID" 2>/dev/null || true
    [ -f "$DIR/nginx.pid" ] && kill -QUIT "$(cat "$DIR/nginx.pid")" 2>/dev/null || true
    sleep 0.5
    rm -rf "$DIR"
}
trap cleanup EXIT

. bench/lib.sh
exosphere_binary "$DIR"
chmod 755 "$DIR"  # the managed PostgreSQL runs as the postgres user when this runs as root
echo "temporary directory: $(df -T "$DIR" | awk 'NR == 2 { print $2 " on " $1 ", mounted on " $7 }')"

python3 bench/make_png.py "$DIR/image.png" "$SIZE"
sed -e "s|BENCH_DIR|$DIR|g" -e "s|NGINX_PORT|$NGINX_PORT|g" bench/nginx-images.conf > "$DIR/nginx.conf"
nginx -c "$DIR/nginx.conf" -p "$DIR" &

# The filesystem storage's server manages the cluster; the database storage's uses the same one.
"$BIN" serve --port "$FS_PORT" --data-dir "$DIR/pg" --image-storage filesystem --image-dir "$DIR/images" \
    --access-log off --log-format logfmt > "$DIR/exosphere-fs.log" 2>&1 &
FS_PID=$!
for _ in $(seq 300); do curl -fs "http://127.0.0.1:$FS_PORT/readyz" >/dev/null 2>&1 && break; sleep 0.2; done
CONN=$(sed -n 's/.*postgres.connection="\([^"]*\)".*/\1/p' "$DIR/exosphere-fs.log" | head -1)
[ -n "$CONN" ] || { echo "no managed cluster connection in the log"; cat "$DIR/exosphere-fs.log"; exit 1; }
"$BIN" serve --port "$DB_PORT" --database-url "$CONN" --image-storage database --image-dir "$DIR/images" \
    --access-log off --log-format logfmt > "$DIR/exosphere-db.log" 2>&1 &
DB_PID=$!
for _ in $(seq 300); do curl -fs "http://127.0.0.1:$DB_PORT/readyz" >/dev/null 2>&1 && break; sleep 0.2; done
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$NGINX_PORT/image.png" >/dev/null 2>&1 && break; sleep 0.1; done

# One user; its session works on both servers. One image in each storage to download.
json() { python3 -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
TOKEN=$(curl -fs -X POST "http://127.0.0.1:$FS_PORT/users" -H 'Content-Type: application/json' \
    -d '{"email":"images@bench.example","password":"bench password 1"}' | json accessToken)
upload_one() { # port -> image id (fails unless 201)
    curl -fs -o "$DIR/upload.json" -w '%{http_code}' -X POST "http://127.0.0.1:$1/users/me/images" \
        -H "Authorization: Bearer $TOKEN" -H 'Content-Type: image/png' --data-binary "@$DIR/image.png" > "$DIR/upload.status"
    [ "$(cat "$DIR/upload.status")" = 201 ] || { echo "upload to :$1 answered $(cat "$DIR/upload.status")"; exit 1; }
    json id < "$DIR/upload.json"
}
FS_ID=$(upload_one "$FS_PORT")
DB_ID=$(upload_one "$DB_PORT")
FS_URL="http://127.0.0.1:$FS_PORT/users/me/images/$FS_ID"
DB_URL="http://127.0.0.1:$DB_PORT/users/me/images/$DB_ID"
NGINX_URL="http://127.0.0.1:$NGINX_PORT/image.png"
NGINX_OFF_URL="http://127.0.0.1:$NGINX_PORT/image-nosendfile.png"
[ -f "$DIR/images/${FS_ID:0:2}/$FS_ID" ] || { echo "no file for image $FS_ID"; exit 1; }
psql "$CONN" -qAtX -c "SELECT storage FROM images WHERE id IN ('$FS_ID', '$DB_ID') ORDER BY storage" | paste -sd' ' | grep -qx 'database filesystem' \
    || { echo "the two images are not one in each storage"; exit 1; }
AUTH="Authorization: Bearer $TOKEN"
for url in "$FS_URL" "$DB_URL" "$NGINX_URL" "$NGINX_OFF_URL"; do
    curl -fs -H "$AUTH" -o "$DIR/check.png" "$url" && cmp -s "$DIR/check.png" "$DIR/image.png" || { echo "$url does not serve the image"; exit 1; }
done

# Peak RSS from here on: the registration's scrypt hash (128 MiB) is not the images' doing.
# Writing 5 to clear_refs resets VmHWM to the current RSS.
echo 5 > "/proc/$FS_PID/clear_refs"; echo 5 > "/proc/$DB_PID/clear_refs"

cat > "$DIR/upload.lua" <<LUA
local f = assert(io.open("$DIR/image.png", "rb"))
wrk.body = f:read("*a")
f:close()
wrk.method = "POST"
wrk.headers["Content-Type"] = "image/png"
wrk.headers["Authorization"] = "Bearer $TOKEN"
LUA

# Prints: 2xx responses per second, p99 ms, failed (non-2xx responses plus socket errors).
run() { # name wrk-arguments...
    local name=$1; shift
    wrk -t2 -c"$CONNECTIONS" -d"${SECONDS_PER_RUN}s" --timeout 10s --latency "$@" > "$DIR/$name.txt"
    awk '/requests in/ { total = $1; secs = $4 + 0 } /Non-2xx/ { bad += $NF }
         /Socket errors/ { bad += $4 + $6 + $8 + $10 }
         $1 == "99%" { v = $2; if (v ~ /us$/) p = v / 1000; else if (v ~ /ms$/) p = v + 0; else p = v * 1000 }
         END { printf "%.1f %.2f %d\n", (total - bad) / secs, p, bad }' "$DIR/$name.txt"
}
mbs() { awk -v r="$1" -v s="$SIZE" 'BEGIN { printf "%.0f", r * s / 1e6 }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

# Deletes the uploads of a run (not the two images downloaded) and their files, reclaims the
# space for the next run and checkpoints, so that no run pays for the previous one's writes.
# Prints how many uploads were stored.
clean_uploads() {
    psql "$CONN" -qAtX -v ON_ERROR_STOP=1 \
        -c "DELETE FROM images WHERE id NOT IN ('$FS_ID', '$DB_ID') RETURNING id, storage" > "$DIR/deleted.txt"
    awk -F'|' -v d="$DIR/images" '$2 == "filesystem" { print d "/" substr($1, 1, 2) "/" $1 }' "$DIR/deleted.txt" | xargs -r rm -f
    psql "$CONN" -qAtX -c "VACUUM image_data" -c "VACUUM images" -c "CHECKPOINT"
    sync
    wc -l < "$DIR/deleted.txt"
}

# Warm-up: the page cache holds both files, the database's pages are read once.
for url in "$NGINX_URL" "$FS_URL" "$DB_URL"; do wrk -t2 -c"$CONNECTIONS" -d2s -H "$AUTH" "$url" >/dev/null; done
wrk -t2 -c"$CONNECTIONS" -d2s -s "$DIR/upload.lua" "http://127.0.0.1:$FS_PORT/users/me/images" >/dev/null
clean_uploads >/dev/null

echo "wrk -t2 -c$CONNECTIONS -d${SECONDS_PER_RUN}s, a ${SIZE}-byte PNG, $ROUNDS alternating rounds; MB = 10^6 bytes"
declare -A RATE P99 BAD
add() { RATE[$1]+="$2 "; P99[$1]+="$3 "; BAD[$1]=$(( ${BAD[$1]:-0} + $4 )); }
last() { echo "$(mbs "$(echo ${RATE[$1]} | awk '{ print $NF }')") ($(echo ${P99[$1]} | awk '{ print $NF }'))"; }
for round in $(seq "$ROUNDS"); do
    read -r r p b <<<"$(run nginx-on "$NGINX_URL")"; add nginx-on "$r" "$p" "$b"
    read -r r p b <<<"$(run nginx-off "$NGINX_OFF_URL")"; add nginx-off "$r" "$p" "$b"
    read -r r p b <<<"$(run get-fs -H "$AUTH" "$FS_URL")"; add get-fs "$r" "$p" "$b"
    read -r r p b <<<"$(run get-db -H "$AUTH" "$DB_URL")"; add get-db "$r" "$p" "$b"
    echo "round $round downloads, MB/s (p99 ms): nginx sendfile on $(last nginx-on), off $(last nginx-off);" \
        "exosphere filesystem $(last get-fs), database $(last get-db)"
done
STORED=0
for round in $(seq "$ROUNDS"); do
    read -r r m p <<<"$(python3 bench/fsync_writes.py "$DIR/fsync-test" "$SECONDS_PER_RUN" "$CONNECTIONS" "$SIZE")"
    add fsync "$r" "$p" 0
    read -r r p b <<<"$(run post-fs -s "$DIR/upload.lua" "http://127.0.0.1:$FS_PORT/users/me/images")"; add post-fs "$r" "$p" "$b"
    STORED=$((STORED + $(clean_uploads)))
    read -r r p b <<<"$(run post-db -s "$DIR/upload.lua" "http://127.0.0.1:$DB_PORT/users/me/images")"; add post-db "$r" "$p" "$b"
    STORED=$((STORED + $(clean_uploads)))
    echo "round $round uploads, MB/s (p99 ms): disk fsync'd files $(last fsync);" \
        "exosphere filesystem $(last post-fs), database $(last post-db)"
done
# Every upload wrk counted as 201 must be stored (more may be: wrk drops requests in flight at the end).
COUNTED=$(cat "$DIR"/post-*.txt | awk '/requests in/ { n += $1 } /Non-2xx/ { n -= $NF } END { print n }')
[ "$STORED" -ge "$COUNTED" ] || { echo "wrk counted $COUNTED uploads, only $STORED were stored"; exit 1; }

# The per-request cost without the megabyte: authentication, metadata, open (or a bytea read).
read -r RANGE_FS RANGE_FS_P99 b <<<"$(run range-fs -H "$AUTH" -H 'Range: bytes=0-0' "$FS_URL")"; BAD[range]=$b
read -r RANGE_DB RANGE_DB_P99 b <<<"$(run range-db -H "$AUTH" -H 'Range: bytes=0-0' "$DB_URL")"; BAD[range]=$((BAD[range] + b))

FS_RSS=$(awk '/VmHWM/ { print $2 }' "/proc/$FS_PID/status")
DB_RSS=$(awk '/VmHWM/ { print $2 }' "/proc/$DB_PID/status")
med() { echo ${RATE[$1]} | tr ' ' '\n' | median; }
medp() { echo ${P99[$1]} | tr ' ' '\n' | median; }
NGINX=$(med nginx-on); CEILING=$(med fsync)
echo
echo "images benchmark, medians of $ROUNDS rounds (MB = 10^6 bytes; ratios: downloads to nginx with sendfile on, uploads to the disk's fsync'd write rate)"
printf '%-22s %9s %7s %9s   %9s %7s %9s   %9s\n' "" "download" "" "" "upload" "" "" ""
printf '%-22s %9s %7s %9s   %9s %7s %9s   %9s\n' server "MB/s" ratio "p99 ms" "MB/s" ratio "p99 ms" "peak RSS"
printf '%-22s %9s %7s %9s   %9s %7s %9s   %9s\n' "nginx, sendfile on" "$(mbs "$NGINX")" 1.00 "$(medp nginx-on)" - - - -
printf '%-22s %9s %7s %9s   %9s %7s %9s   %9s\n' "nginx, sendfile off" "$(mbs "$(med nginx-off)")" "$(ratio "$(med nginx-off)" "$NGINX")" "$(medp nginx-off)" - - - -
printf '%-22s %9s %7s %9s   %9s %7s %9s   %9s\n' "disk, fsync'd files" - - - "$(mbs "$CEILING")" 1.00 "$(medp fsync)" -
printf '%-22s %9s %7s %9s   %9s %7s %9s   %9s\n' "exosphere filesystem" "$(mbs "$(med get-fs)")" "$(ratio "$(med get-fs)" "$NGINX")" "$(medp get-fs)" \
    "$(mbs "$(med post-fs)")" "$(ratio "$(med post-fs)" "$CEILING")" "$(medp post-fs)" "$((FS_RSS / 1024)) MiB"
printf '%-22s %9s %7s %9s   %9s %7s %9s   %9s\n' "exosphere database" "$(mbs "$(med get-db)")" "$(ratio "$(med get-db)" "$NGINX")" "$(medp get-db)" \
    "$(mbs "$(med post-db)")" "$(ratio "$(med post-db)" "$CEILING")" "$(medp post-db)" "$((DB_RSS / 1024)) MiB"
echo "GET with Range: bytes=0-0 (the per-request cost): filesystem $RANGE_FS req/s, p99 $RANGE_FS_P99 ms; database $RANGE_DB req/s, p99 $RANGE_DB_P99 ms"
echo "failed requests: downloads $(( BAD[nginx-on] + BAD[nginx-off] + BAD[get-fs] + BAD[get-db] )), uploads $(( BAD[post-fs] + BAD[post-db] )), ranges ${BAD[range]}; uploads stored and deleted: $STORED"
echo "the database storage writes each byte twice (WAL, fsync'd at commit, then the table at checkpoints): its ceiling is lower than the disk's"
