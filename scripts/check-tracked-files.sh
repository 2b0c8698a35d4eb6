#!/usr/bin/env bash
# The repository a newcomer clones stays small: no tracked file over 1 MiB outside docs/, and no
# Python wheel, archive or build product anywhere (they reach the container image by `COPY . .`).
# CI runs it; so can anyone, from any directory: scripts/check-tracked-files.sh
set -euo pipefail
cd "$(dirname "$0")/.."

limit=$((1024 * 1024))
problems=0
while IFS= read -r -d '' path; do
    [ -f "$path" ] || continue # deleted in the work tree, not yet committed
    case "$path" in
    *.whl | *.egg | *.tar.gz | *.tgz | *.zip | *.so | *.a | *.o)
        echo "tracked build product or package: $path"
        problems=$((problems + 1))
        continue
        ;;
    docs/*) continue ;;
    esac
    size=$(stat -c %s "$path")
    if [ "$size" -gt "$limit" ]; then
        echo "tracked file over 1 MiB outside docs/: $path ($size bytes)"
        problems=$((problems + 1))
    fi
done < <(git ls-files -z)
if [ "$problems" -gt 0 ]; then
    echo "check-tracked-files: $problems problem(s); remove them (git rm) or move documentation into docs/"
    exit 1
fi
echo "check-tracked-files: ok ($(git ls-files | wc -l) tracked files, none over 1 MiB outside docs/)"
