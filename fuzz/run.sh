#!/usr/bin/env bash
# Builds the request-parser fuzzer (libFuzzer + AddressSanitizer) straight from the sources and
# runs it. Usage: fuzz/run.sh SECONDS. Exits non-zero if the fuzzer found a crash.
#
# The compile holds the shared build lock; the run does not, and is niced. lld, because gold
# warns about every ASan symbol it cannot export.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:?usage: fuzz/run.sh SECONDS}"
mkdir -p fuzz/corpus fuzz/artifacts

flock /tmp/exo-build.lock swiftc -sanitize=fuzzer,address -parse-as-library -O -use-ld=lld -module-name HTTP \
    Sources/HTTP/*.swift fuzz/ParserFuzzer.swift -o fuzz/parser-fuzzer

seed() { printf '%b' "$2" > "fuzz/corpus/seed-$1"; }
seed get 'GET / HTTP/1.1\r\nHost: example.com\r\n\r\n'
seed query 'GET /a/b?x=1&y=2 HTTP/1.1\r\nHost: h\r\nAccept: */*\r\n\r\n'
seed http10 'GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n'
seed absolute 'GET http://example.com:8080/p?q HTTP/1.1\r\nHost: example.com\r\n\r\n'
seed options 'OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n'
seed post 'POST /submit HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello'
seed chunked 'POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5;a="b c"\r\nhello\r\n0\r\nT: v\r\n\r\n'
seed expect 'PUT /x HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi'
seed pipeline 'GET /1 HTTP/1.1\r\nHost: h\r\n\r\nPOST /2 HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\nxGET /3 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n'
seed cl-te 'POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nX'
seed te-te 'POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-encoding: x\r\n\r\n0\r\n\r\n'
seed leading '\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n'
seed fold 'GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n'
seed multipart '--xb\r\nContent-Disposition: form-data; name="f"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n\x89PNG\r\n--xb--\r\n'
seed range 'bytes=0-9'

# libFuzzer, not the Swift runtime's backtracer, must handle the crash signal.
export SWIFT_BACKTRACE=enable=no
status=0
nice -n 10 fuzz/parser-fuzzer fuzz/corpus -dict=fuzz/http.dict -max_total_time="$seconds" -max_len=1024 -timeout=10 \
    -artifact_prefix=fuzz/artifacts/ -print_final_stats=1 || status=$?
if [ "$status" -ne 0 ]; then
    echo "fuzz/run.sh: the fuzzer failed (exit $status); reproducers are in fuzz/artifacts/" >&2
fi
exit "$status"
