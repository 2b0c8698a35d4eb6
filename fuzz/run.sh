#!/usr/bin/env bash
# Builds the libFuzzer targets (with AddressSanitizer) straight from the sources and runs each for
# SECONDS: the request parser (with chunked bodies, multipart bodies and Range headers), the
# connection state machine fed random events, the JSON parser, image inspection, and the CBOR
# decoder of passkeys.
# Usage: fuzz/run.sh SECONDS [http|connection|json|image|cbor ...] (default: all).
# Exits non-zero if a fuzzer found a crash; reproducers are left in fuzz/artifacts/.
#
# Each target's seeds are in the repository (the http ones below, the others in fuzz/seeds/); a
# run's corpus grows in fuzz/corpus/<target>/. The compiles hold the shared build lock; the runs
# do not, and are niced. lld, because gold warns about every ASan symbol it cannot export.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:?usage: fuzz/run.sh SECONDS [http|connection|json|image|cbor ...]}"
shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(http connection json image cbor)
mkdir -p fuzz/corpus/http fuzz/corpus/connection fuzz/corpus/json fuzz/corpus/image fuzz/corpus/cbor fuzz/artifacts

build() { # name module sources...
    local name=$1 module=$2
    shift 2
    flock /tmp/exo-build.lock swiftc -sanitize=fuzzer,address -parse-as-library -O -use-ld=lld -module-name "$module" \
        "$@" -o "fuzz/$name-fuzzer"
}
# Image inspection is pure: the inspector and what it reads with (Zip's CRC-32 among it), without
# the storages, as one module in a directory of its own.
stage_image() {
    local staged
    staged=$(mktemp -d /tmp/exo-fuzz.XXXXXX)
    cp Sources/Base/Zip/*.swift Sources/Domain/Images/ImageFormat*.swift Sources/Domain/Images/ByteReader.swift Sources/Domain/Images/ISOBox.swift \
        Sources/Domain/Images/ImageInfo.swift Sources/Domain/Images/ImageLimits.swift Sources/Domain/Images/ImageError.swift "$staged"/
    for file in Sources/Domain/Images/ImageInspector*.swift; do
        sed '/^import Zip$/d' "$file" > "$staged/$(basename "$file")"
    done
    echo "$staged"
}

# The HTTP module and the calendar it imports, as one module in a directory of their own.
stage_http() {
    local staged
    staged=$(mktemp -d /tmp/exo-fuzz.XXXXXX)
    cp Sources/Base/CivilTime/*.swift "$staged"/
    for file in Sources/Protocols/HTTP/*.swift; do
        sed '/^import CivilTime$/d' "$file" > "$staged/$(basename "$file")"
    done
    echo "$staged"
}

seed() { printf '%b' "$2" > "fuzz/corpus/http/seed-$1"; }
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

cp fuzz/seeds/connection/* fuzz/corpus/connection/
cp fuzz/seeds/json/* fuzz/corpus/json/
cp fuzz/seeds/images/* fuzz/corpus/image/
cp fuzz/seeds/cbor/* fuzz/corpus/cbor/

# libFuzzer, not the Swift runtime's backtracer, must handle the crash signal.
export SWIFT_BACKTRACE=enable=no
status=0
for target in "${targets[@]}"; do
    case "$target" in
        http)
            staged=$(stage_http)
            build parser HTTP "$staged"/*.swift fuzz/ParserFuzzer.swift
            rm -rf "$staged"
            binary=fuzz/parser-fuzzer; options=(-dict=fuzz/http.dict -max_len=1024) ;;
        connection)
            # The machine's two files join the HTTP sources in one module: their `import HTTP` goes.
            staged=$(stage_http)
            for file in Sources/Infrastructure/HTTPServer/ConnectionStateMachine.swift Sources/Infrastructure/HTTPServer/ConnectionConfiguration.swift; do
                sed '/^import HTTP$/d' "$file" > "$staged/$(basename "$file")"
            done
            build connection HTTP "$staged"/*.swift fuzz/ConnectionFuzzer.swift
            rm -rf "$staged"
            binary=fuzz/connection-fuzzer; options=(-max_len=2048) ;;
        json) build json JSON Sources/Base/JSON/*.swift fuzz/JSONFuzzer.swift; binary=fuzz/json-fuzzer; options=(-max_len=2048) ;;
        image)
            staged=$(stage_image)
            build image Images "$staged"/*.swift fuzz/ImageFuzzer.swift
            rm -rf "$staged"
            binary=fuzz/image-fuzzer; options=(-max_len=4096) ;;
        cbor) build cbor WebAuthn Sources/Protocols/WebAuthn/CBOR.swift fuzz/CBORFuzzer.swift; binary=fuzz/cbor-fuzzer; options=(-max_len=1024) ;;
        *) echo "fuzz/run.sh: unknown target $target" >&2; exit 2 ;;
    esac
    echo "fuzz/run.sh: $target for $seconds s"
    nice -n 10 "$binary" "fuzz/corpus/$target" "${options[@]}" -max_total_time="$seconds" -timeout=10 \
        -artifact_prefix="fuzz/artifacts/$target-" -print_final_stats=1 || status=$?
    if [ "$status" -ne 0 ]; then
        echo "fuzz/run.sh: the $target fuzzer failed (exit $status); reproducers are in fuzz/artifacts/" >&2
        exit "$status"
    fi
done
