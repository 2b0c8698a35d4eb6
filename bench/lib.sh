# Shared by the benchmark scripts (sourced from the repository root).

# Sets BIN to the server binary: $EXOSPHERE_BIN when set (one built beforehand, e.g. under a build
# lock that the benchmark itself then holds:
#   flock L scripts/build-release.sh /tmp/d && flock L env EXOSPHERE_BIN=/tmp/d/exosphere bench/accounts.sh
# it carries the migrations it was built with), else the release build into $1/dist, the same build as
# the README, the Dockerfile and CI. Prints the binary's version.
exosphere_binary() {
    if [ -n "${EXOSPHERE_BIN:-}" ]; then
        BIN=$EXOSPHERE_BIN
        "$BIN" --version
    else
        scripts/build-release.sh "$1/dist" | tail -1
        BIN="$1/dist/exosphere"
    fi
}

# Moves this benchmark, and so everything it starts after this call, into a CPU cgroup of its own,
# where the kernel schedules all their threads as one flat group, as it does a service's (systemd,
# a container). Left in a terminal's session, they would be scheduled by the kernel's autogroups,
# where PostgreSQL makes each of its backends a group of its own (it calls setsid for each) and the
# hashing pool's idle priority does not hold against them (docs/deployment.md). Nothing happens
# with BENCH_CGROUP=off, or where this shell cannot make a cgroup (not root, no cpu controller).
# Sets BENCH_SCHEDULING to what it did; leave_bench_cgroup, once every process started is gone,
# undoes it.
enter_bench_cgroup() {
    BENCH_SCHEDULING="autogroups, as from a terminal (BENCH_CGROUP=off, or no cpu cgroup to make)"
    BENCH_CGROUP_DIR=""
    [ "${BENCH_CGROUP:-on}" = off ] && return 0
    local top=""
    if [ -f /sys/fs/cgroup/cpu/cpu.shares ]; then
        top=/sys/fs/cgroup/cpu
    elif grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
        top=/sys/fs/cgroup  # cgroup v2, with the cpu controller already on for the top's children
    fi
    [ -n "$top" ] && mkdir "$top/exosphere-bench.$$" 2>/dev/null || return 0
    if { echo $$ > "$top/exosphere-bench.$$/cgroup.procs"; } 2>/dev/null; then
        BENCH_CGROUP_DIR=$top/exosphere-bench.$$
        BENCH_SCHEDULING="one cgroup, $BENCH_CGROUP_DIR"
    else
        rmdir "$top/exosphere-bench.$$"
    fi
}

leave_bench_cgroup() {
    [ -n "${BENCH_CGROUP_DIR:-}" ] || return 0
    { echo $$ > "$(dirname "$BENCH_CGROUP_DIR")/cgroup.procs"; } 2>/dev/null || true
    for _ in $(seq 50); do  # a last child may take a moment to be gone
        rmdir "$BENCH_CGROUP_DIR" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "cannot remove $BENCH_CGROUP_DIR: $(cat "$BENCH_CGROUP_DIR/cgroup.procs" | tr '\n' ' ')" >&2
}

# Starts "$BIN" serve on $PORT with its own managed cluster in $DIR/pg (log in $DIR/exosphere.log)
# and any further flags given, and waits until it is ready. Sets PID, and CONN to the cluster's
# connection string.
start_managed_server() {
    "$BIN" serve --port "$PORT" --data-dir "$DIR/pg" --access-log off --log-format logfmt "$@" > "$DIR/exosphere.log" 2>&1 &
    PID=$!
    for _ in $(seq 300); do curl -fs "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1 && break; sleep 0.2; done
    CONN=$(sed -n 's/.*postgres.connection="\([^"]*\)".*/\1/p' "$DIR/exosphere.log" | head -1)
}
