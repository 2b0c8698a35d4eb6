#!/usr/bin/env bash
# Thumbnails (issue 17), in one run on one managed cluster:
#   1. making them: 12-megapixel JPEGs (4000 × 3000, ~3 MB each, made here with vips), every
#      one's thumbnail at one size asked for through the API (GET /users/me/images/{id}/thumbnail,
#      4 clients, the server's default 2 helper processes: decoding, encoding, storing), against
#      vipsthumbnail, the same library's command line, on the same files with the same options
#      (WebP Q 75, effort 2, metadata stripped, one thread each) in 2 processes at once, in
#      alternating rounds (a new size each round, so the server makes every one anew);
#   2. serving a cached thumbnail: wrk GET of its signed URL, signedThumbnails["256"] (no token, served from
#      memory), and GET /users/me/images/{id}/thumbnail with a bearer token, against nginx
#      serving the same file from disk with the same headers.
# Usage: bench/thumbnails.sh [images=16] [seconds=10] [connections=64]
#   EXOSPHERE_BIN=path: use that binary instead of building (scripts/build-release.sh) here.
#   STORAGE=database|filesystem|s3: where the originals and thumbnails are kept (default database;
#   s3: a one-node Ceph cluster started here, Tests/TestSupport/ceph_cluster.sh, which needs
#   ceph-mon ceph-osd radosgw ceph-common).
#   ROUNDS=3: alternating rounds (at most 3: sizes 512, 1024, 128); the summary shows medians.
# Needs: vips and vipsthumbnail (libvips-tools), wrk, nginx, curl, psql, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
IMAGES=${1:-16}
SECONDS_PER_RUN=${2:-10}
CONNECTIONS=${3:-64}
ROUNDS=${ROUNDS:-3}
STORAGE=${STORAGE:-database}
PORT=18487
NGINX_PORT=18488
DIR=$(mktemp -d /tmp/exo-thumbs-bench.XXXXXX)
cleanup() {
    [ -n "${PID:-}" ] && kill -TERM "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
    # The end of its input stops the Ceph cluster (STORAGE=s3) and deletes its directory.
    exec 7>&- 2>/dev/null || true
    [ -n "${CEPH_PID:-}" ] && wait "$CEPH_PID" 2>/dev/null || true
    [ -f "$DIR/nginx.pid" ] && kill -QUIT "$(cat "$DIR/nginx.pid")" 2>/dev/null || true
    sleep 0.5
    rm -rf "$DIR"
}
trap cleanup EXIT

. bench/lib.sh
exosphere_binary "$DIR"
chmod 755 "$DIR"
mkdir -p "$DIR/photos" "$DIR/out"

# 12-megapixel "photos", no two alike, JPEG quality 90 (about 4 MB each): cells, smooth
# gradients and sensor-like noise, one in each channel.
for i in $(seq "$IMAGES"); do
    vips worley "$DIR/w.v" 4000 3000 --cell-size 64 --seed "$i"
    vips linear "$DIR/w.v" "$DIR/w2.v" 2 0
    vips perlin "$DIR/p.v" 4000 3000 --cell-size 128 --seed "$i"
    vips linear "$DIR/p.v" "$DIR/p2.v" 120 128
    vips gaussnoise "$DIR/n.v" 4000 3000 --sigma 15 --mean 110 --seed "$i"
    vips bandjoin "$DIR/w2.v $DIR/p2.v $DIR/n.v" "$DIR/c.v"
    vips cast "$DIR/c.v" "$DIR/u.v" uchar
    vips copy "$DIR/u.v" "$DIR/photos/photo$i.jpg[Q=90]"
done
rm -f "$DIR"/*.v
echo "$IMAGES photos, 4000 × 3000, $(du -sm "$DIR/photos" | cut -f1) MB in all"

S3_FLAGS=()
if [ "$STORAGE" = s3 ]; then
    mkfifo "$DIR/ceph.control"
    sh Tests/TestSupport/ceph_cluster.sh "$DIR/ceph" 18495 18496 BENCHKEY benchsecret < "$DIR/ceph.control" > "$DIR/ceph.log" 2>&1 &
    CEPH_PID=$!
    exec 7> "$DIR/ceph.control"
    for _ in $(seq 600); do [ -f "$DIR/ceph/ready" ] && break; sleep 0.2; done
    [ -f "$DIR/ceph/ready" ] || { echo "the Ceph cluster did not start"; cat "$DIR/ceph.log"; exit 1; }
    export AWS_ACCESS_KEY_ID=BENCHKEY AWS_SECRET_ACCESS_KEY=benchsecret
    S3_FLAGS=(--s3-endpoint http://127.0.0.1:18496 --s3-bucket thumbnails --s3-path-style on)
fi
# 7>&-: no child may hold the cluster's control pipe open, or the cluster outlives the run.
"$BIN" serve --port "$PORT" --data-dir "$DIR/pg" --image-storage "$STORAGE" --image-dir "$DIR/images" "${S3_FLAGS[@]}" \
    --access-log off --log-format logfmt > "$DIR/exosphere.log" 2>&1 7>&- &
PID=$!
for _ in $(seq 300); do curl -fs "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1 && break; sleep 0.2; done
CONN=$(sed -n 's/.*postgres.connection="\([^"]*\)".*/\1/p' "$DIR/exosphere.log" | head -1)
json() { python3 -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
API="http://127.0.0.1:$PORT"
TOKEN=$(curl -fs -X POST "$API/users" -H 'Content-Type: application/json' \
    -d '{"email":"thumbs@bench.example","password":"bench password 1"}' | json accessToken)
AUTH="Authorization: Bearer $TOKEN"
: > "$DIR/ids"
for photo in "$DIR"/photos/*.jpg; do
    curl -fs -X POST "$API/users/me/images" -H "$AUTH" -H 'Content-Type: image/jpeg' --data-binary "@$photo" | json id >> "$DIR/ids"
done
# The uploads' own 256 thumbnails and placeholders are made in the background: wait for them.
for _ in $(seq 600); do
    [ "$(psql "$CONN" -qAtX -c "SELECT count(*) FROM images WHERE blurhash IS NULL")" = 0 ] && break
    sleep 0.2
done

seconds() { python3 -c 'import time; print(time.monotonic())'; }
rate() { awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%.2f", n / (b - a) }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
declare -A RATE
SIZES=(512 1024 128)
echo "making: $IMAGES thumbnails per run, $STORAGE storage; the server's 2 helpers with 4 clients, against 2 vipsthumbnail processes"
for round in $(seq "$ROUNDS"); do
    size=${SIZES[$(( (round - 1) % 3 ))]}
    rm -f "$DIR"/out/*
    start=$(seconds)
    ls "$DIR"/photos/*.jpg | xargs -P 2 -n $(( (IMAGES + 1) / 2 )) env VIPS_CONCURRENCY=1 \
        vipsthumbnail -s "$size" -o "$DIR/out/%s.webp[Q=75,effort=2,strip]"
    end=$(seconds)
    RATE[vips]+="$(rate "$IMAGES" "$start" "$end") "
    start=$(seconds)
    xargs -P 4 -I{} curl -fs -o /dev/null -H "$AUTH" -H 'Accept: image/webp' "$API/users/me/images/{}/thumbnail?size=$size" < "$DIR/ids"
    end=$(seconds)
    RATE[exo]+="$(rate "$IMAGES" "$start" "$end") "
    made=$(psql "$CONN" -qAtX -c "SELECT count(*) FROM image_thumbnails WHERE size = $size")
    [ "$made" = "$IMAGES" ] || { echo "the server stored $made thumbnails of size $size, not $IMAGES"; exit 1; }
    echo "round $round, size $size: vipsthumbnail $(echo ${RATE[vips]} | awk '{ print $NF }')/s," \
        "exosphere $(echo ${RATE[exo]} | awk '{ print $NF }')/s"
done
VIPS=$(echo ${RATE[vips]} | tr ' ' '\n' | grep . | median)
EXO=$(echo ${RATE[exo]} | tr ' ' '\n' | grep . | median)
echo "making, medians: vipsthumbnail $VIPS/s, exosphere $EXO/s: $(ratio "$EXO" "$VIPS") of vipsthumbnail"

# Serving: one image's 256 WebP, from the signed URL (memory) and the API (bearer token).
ID=$(head -1 "$DIR/ids")
SIGNED=$(curl -fs -H "$AUTH" "$API/users/me/images?limit=100" | python3 -c '
import json, sys
images = json.load(sys.stdin)["images"]
print([i for i in images if i["id"] == sys.argv[1]][0]["signedThumbnails"]["256"])' "$ID")
curl -fs -o "$DIR/thumbnail.webp" "$API$SIGNED"
sed -e "s|BENCH_DIR|$DIR|g" -e "s|NGINX_PORT|$NGINX_PORT|g" bench/nginx-thumbnails.conf > "$DIR/nginx.conf"
nginx -c "$DIR/nginx.conf" -p "$DIR" 7>&- &
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$NGINX_PORT/thumbnail.webp" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fs "http://127.0.0.1:$NGINX_PORT/thumbnail.webp" | cmp -s - "$DIR/thumbnail.webp" || { echo "nginx does not serve the thumbnail"; exit 1; }
echo "serving a $(stat -c %s "$DIR/thumbnail.webp")-byte WebP: wrk -t2 -c$CONNECTIONS -d${SECONDS_PER_RUN}s"
run() { # name wrk-arguments... -> 2xx per second, p99 ms
    local name=$1; shift
    wrk -t2 -c"$CONNECTIONS" -d"${SECONDS_PER_RUN}s" --latency "$@" > "$DIR/$name.txt" 2>&1 || true
    awk '/requests in/ { total = $1; secs = $4 + 0 } /Non-2xx/ { bad += $NF } /Socket errors/ { bad += $4 + $6 + $8 + $10 }
         $1 == "99%" { v = $2; if (v ~ /us$/) p = v / 1000; else if (v ~ /ms$/) p = v + 0; else p = v * 1000 }
         END { printf "%.0f %.2f\n", (total - bad) / secs, p }' "$DIR/$name.txt"
}
for url in "http://127.0.0.1:$NGINX_PORT/thumbnail.webp" "$API$SIGNED"; do wrk -t2 -c"$CONNECTIONS" -d2s "$url" >/dev/null; done
declare -A SERVE
for round in $(seq "$ROUNDS"); do
    read -r r p <<<"$(run nginx "http://127.0.0.1:$NGINX_PORT/thumbnail.webp")"; SERVE[nginx]+="$r "; np=$p
    read -r r p <<<"$(run signed "$API$SIGNED")"; SERVE[signed]+="$r "; sp=$p
    read -r r p <<<"$(run api -H "$AUTH" "$API/users/me/images/$ID/thumbnail?size=256")"; SERVE[api]+="$r "; ap=$p
    echo "round $round, requests/s (p99 ms): nginx $(echo ${SERVE[nginx]} | awk '{ print $NF }') ($np)," \
        "signed URL $(echo ${SERVE[signed]} | awk '{ print $NF }') ($sp), with a token $(echo ${SERVE[api]} | awk '{ print $NF }') ($ap)"
done
N=$(echo ${SERVE[nginx]} | tr ' ' '\n' | grep . | median)
S=$(echo ${SERVE[signed]} | tr ' ' '\n' | grep . | median)
A=$(echo ${SERVE[api]} | tr ' ' '\n' | grep . | median)
echo "serving, medians: nginx $N/s; signed URL $S/s ($(ratio "$S" "$N") of nginx); with a token $A/s ($(ratio "$A" "$N"))"
echo "peak RSS of the server: $(awk '/VmHWM/ { print $2 / 1024 " MiB" }' "/proc/$PID/status")"
