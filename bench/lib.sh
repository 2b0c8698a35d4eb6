# Shared by the benchmark scripts (sourced from the repository root).

# Sets BIN to the server binary: $EXOSPHERE_BIN when set (one built beforehand, e.g. under a build
# lock that the benchmark itself then holds:
#   flock L scripts/build-release.sh /tmp/d && flock L env EXOSPHERE_BIN=/tmp/d/exosphere bench/accounts.sh
# it runs with this checkout's migrations/), else the release build into $1/dist, the same build as
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
