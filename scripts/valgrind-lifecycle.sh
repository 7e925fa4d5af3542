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

# Each run is one single-threaded process that only prints: they run side by side, one per core,
# each into its own log and exit-status file; the verdicts below read them in the lists' order.
run_one() { # guarded|unguarded scenario
    local status=0
    valgrind --error-exitcode=99 --suppressions="$supp" -q "$work/shield" scenario "$2" "--$1" \
        >"$work/$2.$1.log" 2>&1 || status=$?
    echo "$status" >"$work/$2.$1.status"
}
parallel=$(nproc 2>/dev/null || echo 1)
running=0
for job in "${guarded[@]/#/guarded }" "${controls[@]/#/unguarded }"; do
    if [ "$running" -ge "$parallel" ]; then wait -n || true; running=$((running - 1)); fi
    # shellcheck disable=SC2086 # "mode scenario": two words
    run_one $job 2>/dev/null &   # 2>/dev/null: the shell's own note when a control run dies of its bug
    running=$((running + 1))
done
wait

failed=0
for scenario in "${guarded[@]}"; do
    log="$work/$scenario.guarded.log"
    if [ "$(cat "$work/$scenario.guarded.status")" = 0 ] && grep -q "^RESULT ok " "$log"; then
        echo "clean    $scenario (guarded)"
    else
        echo "FAILED   $scenario (guarded)"
        cat "$log"
        failed=1
    fi
done
for scenario in "${controls[@]}"; do
    log="$work/$scenario.unguarded.log"
    if grep -qE "Invalid (read|write)" "$log"; then
        echo "control  $scenario (unguarded): valgrind reports $(grep -cE 'Invalid (read|write)' "$log") invalid accesses"
    else
        echo "FAILED   $scenario (unguarded control): valgrind saw no invalid access"
        failed=1
    fi
done
exit $failed
