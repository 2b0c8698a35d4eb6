#!/usr/bin/env bash
# The data export's memory (issue 31): a release build on its own managed cluster, one user with
# IMAGES distinct 10 MB images (200 MB by default), then GET /users/me/export read by curl (checked
# with unzip -t), the server's resident memory sampled every 50 ms throughout.
# Usage: [EXOSPHERE_BIN=path] [STORAGE=database|filesystem] bench/export.sh [images=20]
# Needs: curl, python3, unzip.
set -euo pipefail
cd "$(dirname "$0")/.."
IMAGES=${1:-20}
STORAGE=${STORAGE:-database}
PORT=18490
DIR=$(mktemp -d /tmp/exo-export-bench.XXXXXX)
cleanup() {
    [ -n "${RSS_PID:-}" ] && kill "$RSS_PID" 2>/dev/null || true
    [ -n "${PID:-}" ] && kill -TERM "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
    rm -rf "$DIR"
}
trap cleanup EXIT
. bench/lib.sh
exosphere_binary "$DIR"
chmod 755 "$DIR"
start_managed_server --image-storage "$STORAGE" --image-dir "$DIR/images" --thumbnail-helpers 0
TOKEN=$(curl -fs -X POST "http://127.0.0.1:$PORT/users" -H 'Content-Type: application/json' \
    -d '{"email":"export@bench.example","password":"bench password 1"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["accessToken"])')
for i in $(seq "$IMAGES"); do
    python3 bench/make_png.py "$DIR/image.png" 10000000
    curl -fs -X POST "http://127.0.0.1:$PORT/users/me/images" -H "Authorization: Bearer $TOKEN" \
        -H 'Content-Type: image/png' --data-binary @"$DIR/image.png" >/dev/null
done
rm -f "$DIR/image.png"
rss() { awk '/VmRSS/ {print $2}' "/proc/$PID/status"; }
echo "$STORAGE storage, $IMAGES images of 10 MB; server RSS before the export: $(( $(rss) / 1024 )) MiB"
( while kill -0 "$PID" 2>/dev/null; do rss; sleep 0.05; done ) > "$DIR/rss.txt" &
RSS_PID=$!
START=$(date +%s.%N)
curl -fs "http://127.0.0.1:$PORT/users/me/export" -H "Authorization: Bearer $TOKEN" -o "$DIR/export.zip"
END=$(date +%s.%N)
SIZE=$(stat -c %s "$DIR/export.zip")
unzip -tq "$DIR/export.zip"
echo "full speed: $SIZE bytes in $(python3 -c "print(round($END - $START, 2))") s; peak RSS $(( $(sort -n "$DIR/rss.txt" | tail -1) / 1024 )) MiB"
