#!/bin/sh
# The release build, and the only one: the README, the Dockerfile and CI all run this script.
#
#   scripts/build-release.sh [OUTPUT_DIR]     (default: dist/ in the repository)
#
# Builds the `exosphere` product and its thumbnail helper `exosphere-thumbnailer` in release mode
# with the Swift runtime linked statically (the server then needs only glibc, libstdc++, libpq and
# OpenSSL at run time, the helper libvips; the migrations are compiled in), copies both into
# OUTPUT_DIR (the server starts the helper from its own directory), and prints the server's
# version. Works as root and as a normal user.
# It takes no build lock itself; on a shared machine run it under one:
#   flock /tmp/exo-build.lock scripts/build-release.sh /tmp/out
set -eu

# Resolve the output directory against the caller's working directory before moving to the root.
case "${1:-}" in
    "") out="" ;;
    /*) out=$1 ;;
    *) out="$(pwd)/$1" ;;
esac
cd "$(dirname "$0")/.."
out=${out:-$(pwd)/dist}

set -- -c release --static-swift-stdlib
swift build "$@" --product exosphere
swift build "$@" --product exosphere-thumbnailer
bin=$(swift build "$@" --show-bin-path)

mkdir -p "$out"
# Replace, not overwrite in place: a running copy of the old binary keeps its inode.
for name in exosphere exosphere-thumbnailer; do
    cp "$bin/$name" "$out/$name.new"
    mv -f "$out/$name.new" "$out/$name"
done
# Releases before the migrations were compiled in shipped them beside the binary.
rm -rf "$out/migrations"

"$out/exosphere" --version
