#!/usr/bin/env bash
# Images in an object store (issue 41): COUNT uploads and downloads of a 2 MiB PNG through
# Exosphere's API (--image-storage s3) against boto3 putting and getting the same bytes on the
# store directly, in one run on the same one-node Ceph cluster (Tests/TestSupport/ceph_cluster.sh:
# a monitor, an OSD on memstore, a RADOS Gateway). Both clients are Python, sequential, one
# keep-alive connection each (bench/s3_images.py, Tests/TestSupport/s3_tool.py); ROUNDS rounds
# alternate, and the summary shows medians and the ratios (boto3's time / Exosphere's: above 1,
# Exosphere is the faster). Downloads are measured twice: with a token, streamed through the
# server, and by the images' signed URLs, which answer 302 to a presigned GET on the store
# (--s3-redirect on) that the client follows.
# Usage: bench/s3-images.sh [count=20]
#   EXOSPHERE_BIN=path: use that binary instead of building (scripts/build-release.sh) here.
#   ROUNDS=3
# Needs: ceph-mon ceph-osd radosgw ceph-common, python3-boto3 (Debian's /usr/bin/python3), curl.
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${1:-20}
ROUNDS=${ROUNDS:-3}
SIZE=2097152
PORT=18487
MON_PORT=18488
RGW_PORT=18489
ACCESS=BENCHKEY$RANDOM
SECRET=benchsecret$RANDOM$RANDOM
DIR=$(mktemp -d /tmp/exo-s3-bench.XXXXXX)
cleanup() {
    [ -n "${SERVER_PID:-}" ] && kill -TERM "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null || true
    # The end of its input stops the cluster and deletes its directory.
    exec 7>&- 2>/dev/null || true
    [ -n "${CEPH_PID:-}" ] && wait "$CEPH_PID" 2>/dev/null || true
    rm -rf "$DIR"
}
trap cleanup EXIT

. bench/lib.sh
exosphere_binary "$DIR"
chmod 755 "$DIR"  # the managed PostgreSQL runs as the postgres user when this runs as root

mkfifo "$DIR/ceph.control"
sh Tests/TestSupport/ceph_cluster.sh "$DIR/ceph" "$MON_PORT" "$RGW_PORT" "$ACCESS" "$SECRET" < "$DIR/ceph.control" > "$DIR/ceph.log" 2>&1 &
CEPH_PID=$!
# Only this shell holds the pipe's writing end: children are started with 7>&-.
exec 7> "$DIR/ceph.control"
for _ in $(seq 600); do [ -f "$DIR/ceph/ready" ] && break; kill -0 "$CEPH_PID" || { cat "$DIR/ceph.log"; exit 1; }; sleep 0.2; done
[ -f "$DIR/ceph/ready" ] || { echo "the Ceph cluster did not start"; cat "$DIR/ceph.log"; exit 1; }
ENDPOINT="http://127.0.0.1:$RGW_PORT"
tool() { /usr/bin/python3 Tests/TestSupport/s3_tool.py --endpoint "$ENDPOINT" --access-key "$ACCESS" --secret-key "$SECRET" "$@"; }
tool create-bucket direct

AWS_ACCESS_KEY_ID=$ACCESS AWS_SECRET_ACCESS_KEY=$SECRET "$BIN" serve --port "$PORT" --data-dir "$DIR/pg" \
    --image-storage s3 --s3-endpoint "$ENDPOINT" --s3-bucket exosphere --s3-path-style on --s3-redirect on --upload-rate 0 \
    --access-log off --log-format logfmt > "$DIR/exosphere.log" 2>&1 7>&- &
SERVER_PID=$!
for _ in $(seq 300); do curl -fs "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1 && break; sleep 0.2; done
curl -fs "http://127.0.0.1:$PORT/readyz" >/dev/null || { echo "the server is not ready"; cat "$DIR/exosphere.log"; exit 1; }

python3 bench/make_png.py "$DIR/image.png" "$SIZE"
json() { python3 -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
TOKEN=$(curl -fs -X POST "http://127.0.0.1:$PORT/users" -H 'Content-Type: application/json' \
    -d '{"email":"s3@bench.example","password":"bench password 1"}' | json accessToken)
# Warm both paths: the first writes of a bucket create the gateway's data pools.
/usr/bin/python3 bench/s3_images.py "$PORT" "$TOKEN" "$DIR/image.png" 2 "$DIR/ids" > /dev/null
tool bench-put direct warm/ "$DIR/image.png" 2 > /dev/null

echo "round exosphere_upload_s boto3_put_s exosphere_download_s boto3_get_s signed_url_download_s"
: > "$DIR/rounds"
for round in $(seq "$ROUNDS"); do
    /usr/bin/python3 bench/s3_images.py "$PORT" "$TOKEN" "$DIR/image.png" "$COUNT" "$DIR/ids" > "$DIR/api.txt"
    read -r up down redirected < "$DIR/api.txt"
    put=$(tool bench-put direct "r$round/" "$DIR/image.png" "$COUNT")
    get=$(tool bench-get direct "r$round/" "$COUNT")
    echo "$round $up $put $down $get $redirected" | tee -a "$DIR/rounds"
    # The object written by Exosphere is the image, byte for byte, as boto3 reads it.
    tool get exosphere "$(head -1 "$DIR/ids")" "$DIR/check.png" > /dev/null
    cmp -s "$DIR/check.png" "$DIR/image.png" || { echo "boto3 does not read back the image Exosphere stored"; exit 1; }
done
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
up=$(awk '{ print $2 }' "$DIR/rounds" | median); put=$(awk '{ print $3 }' "$DIR/rounds" | median)
down=$(awk '{ print $4 }' "$DIR/rounds" | median); get=$(awk '{ print $5 }' "$DIR/rounds" | median)
redirected=$(awk '{ print $6 }' "$DIR/rounds" | median)
awk -v n="$COUNT" -v s="$SIZE" -v up="$up" -v put="$put" -v down="$down" -v get="$get" -v redirected="$redirected" 'BEGIN {
    printf "uploads of %d x %.0f MiB: Exosphere %.1f MB/s, boto3 %.1f MB/s: %.2fx (target >= 0.8)\n", n, s / 1048576, n * s / up / 1e6, n * s / put / 1e6, put / up
    printf "downloads with a token, streamed: Exosphere %.1f MB/s, boto3 %.1f MB/s: %.2fx (target >= 0.9)\n", n * s / down / 1e6, n * s / get / 1e6, get / down
    printf "downloads by signed URL, 302 to the store: %.1f MB/s: %.2fx\n", n * s / redirected / 1e6, get / redirected
}'
