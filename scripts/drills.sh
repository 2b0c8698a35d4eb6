#!/usr/bin/env bash
# The process and cluster drills, one after another, each alone on the machine and within a
# budget of its own: a Patroni failover, pgbouncer, several instances, descriptor exhaustion,
# slow readers, a frozen database, the binary's start-up and kills, the session cache across
# instances, and the pages in a real browser. `swift test` leaves them out (the `.drill` trait);
# here `EXOSPHERE_DRILLS=1` selects them. Like `swift test`, they start what they need themselves.
#
#   scripts/drills.sh              every drill
#   scripts/drills.sh Pooler       the drills whose name matches
set -uo pipefail
cd "$(dirname "$0")/.."

# name (a --filter pattern), budget in seconds: five times or more what each took alone (2026-12-04:
# 78, 5, 19, 39, 16, 6, 6, 6, 17 s, and 4 to 10 s for each page in the browser; 3 min 41 s in all)
drills=(
    "APITests.FailoverTests 400"
    "APITests.PoolerTests 180"
    "APITests.MultiInstanceTests 240"
    "APITests.SessionCacheAPITests 240"
    "APITests.DatabaseFreezeTests 180"
    "APITests.DescriptorExhaustionTests 120"
    "APITests.SlowReadersTests 120"
    "APITests.ExosphereProcessTests 180"
    "APITests.ImagesProcessTests 360"
    "AdminAPITests/theConsoleWorksInARealBrowser 120"
    "FirstTenMinutesTests/theFirstAdministratorIsCreatedFromTheSetupLinkInARealBrowser 120"
    "PasskeysAPITests/aRealBrowserRegistersAndSignsInWithAPasskey 120"
    "RecoveryAPITests/thePagesFinishTheFlowsInARealBrowser 120"
)

swift build --build-tests || exit 1

passed=0
failed=0
failures=()
for drill in "${drills[@]}"; do
    read -r name budget <<<"$drill"
    if [ $# -gt 0 ] && [[ "$name" != *"$1"* ]]; then continue; fi
    echo "=== drill $name (budget ${budget} s)"
    start=$(date +%s)
    EXOSPHERE_DRILLS=1 timeout --kill-after=30 "$budget" swift test --skip-build --filter "$name"
    status=$?
    elapsed=$(($(date +%s) - start))
    if [ $status -eq 0 ]; then
        echo "=== drill $name passed in ${elapsed} s"
        passed=$((passed + 1))
    else
        [ $status -eq 124 ] && echo "=== drill $name ran out of its ${budget} s budget"
        echo "=== drill $name FAILED (exit $status) after ${elapsed} s"
        failed=$((failed + 1))
        failures+=("$name")
    fi
done

[ $failed -gt 0 ] && echo "failed drills: ${failures[*]}"
echo "drills: $passed passed, $failed failed"
[ $failed -eq 0 ]
