#!/usr/bin/env bash
# Runs the lifecycle scenarios whose unguarded form touches freed memory (an observer or observed
# object that died while registered, a message to a deallocated object) under valgrind's memcheck.
# Guarded runs must be clean: any invalid read or write fails the script. As a control, the
# observer-dies cases are also run unguarded and valgrind must report invalid accesses there,
# which shows the checker sees the bug the guard prevents.
#
# Needs a debug build (`swift build`). valgrind 3.19 cannot read the DWARF 5 that Swift emits
# ("unhandled dwarf2 abbrev form code 0x25 ... Giving up"), so a copy without debug info is run.
set -euo pipefail
cd "$(dirname "$0")/.."
export SWIFT_BACKTRACE=enable=no
command -v valgrind >/dev/null || { echo "valgrind not installed" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
objcopy --strip-debug .build/debug/shield "$work/shield"
supp=scripts/valgrind-lifecycle.supp

guarded=(
    kvo.observer.deallocRegistered
    kvo.observed.deallocObserved
    notification.observer.deallocRegistered
    notification.observer.deallocAfterPartialRemoval
    timer.repeating.targetReleased
    zombie.message.object
    zombie.release.overRelease
)
controls=(
    kvo.observer.deallocRegistered
    notification.observer.deallocRegistered
    notification.observer.deallocAfterPartialRemoval
)

failed=0
for scenario in "${guarded[@]}"; do
    log="$work/$scenario.guarded.log"
    if valgrind --error-exitcode=99 --suppressions="$supp" -q "$work/shield" scenario "$scenario" --guarded >"$log" 2>&1 \
        && grep -q "^RESULT ok " "$log"; then
        echo "clean    $scenario (guarded)"
    else
        echo "FAILED   $scenario (guarded)"
        cat "$log"
        failed=1
    fi
done
for scenario in "${controls[@]}"; do
    log="$work/$scenario.unguarded.log"
    valgrind --error-exitcode=99 --suppressions="$supp" -q "$work/shield" scenario "$scenario" --unguarded >"$log" 2>&1 || true
    if grep -qE "Invalid (read|write)" "$log"; then
        echo "control  $scenario (unguarded): valgrind reports $(grep -cE 'Invalid (read|write)' "$log") invalid accesses"
    else
        echo "FAILED   $scenario (unguarded control): valgrind saw no invalid access"
        failed=1
    fi
done
exit $failed
