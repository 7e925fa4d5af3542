#!/usr/bin/env bash
# scripts/check-hot-slots.sh — the fast hook slots (CS_DEFINE_FAST_HOOK_* in
# Engine/CSHookSlots.h) keep a call-free, frameless legal path in optimised code.
#
# A fast slot's legal path must reach its original by a tail jump (`jmp *reg`) with no call and no
# push before it: that is what keeps the guarded in-bounds objectAtIndex: / characterAtIndex: within
# the performance table (shield bench). clang can lose it without any warning: a constant YES
# merged into a fast predicate's result under the slot's CS_LIKELY made its hot/cold splitting move
# the whole bounds check into `<slot>.cold.1` (CS_FAST_PREDICATE_POLICY_GATE in CSEngine.h).
#
# Every guard file with fast slots is compiled as SwiftPM's release build compiles it (clang -O2,
# x86_64 Linux, GNUstep); for each fast hook (found by its `<hook>_full0` function) the check reads
# `<hook>_slot0` up to its first indirect jump. A canary compiles a probe slot with the old
# predicate form and must be rejected, so the check is shown able to fail.
# Needs the GNUstep headers of scripts/bootstrap.sh, the Swift toolchain's clang (or $CLANG) and GNU
# binutils (nm, objdump). Exits non-zero when any check fails.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
clang="${CLANG:-$(dirname "$(readlink -f "$(command -v swift)")")/clang}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# shellcheck source=lib/runtime-objc.sh
. scripts/lib/runtime-objc.sh
compile() { # <source> <object>
    runtime_objc_compile "$2" "$1" -c
}

# Prints one line per fast hook in <object> whose slot0 calls, pushes or has an outlined part
# before its first indirect jump; prints nothing when all are clean.
bad_slots() { # <object>
    local object="$1" symbols hooks hook
    symbols=$(nm "$object")
    hooks=$(awk '$3 ~ /_full0$/ {sub(/_full0$/, "", $3); print $3}' <<<"$symbols")
    [ -n "$hooks" ] || { echo "no fast hooks found in $object"; return; }
    for hook in $hooks; do
        if grep -q " ${hook}_slot0\.cold" <<<"$symbols"; then
            echo "$hook: slot0 has an outlined part (${hook}_slot0.cold.*)"
            continue
        fi
        objdump -d --no-show-raw-insn "$object" --disassemble="${hook}_slot0" |
            awk -v hook="$hook" '
                /^[0-9a-f]+ <.*>:$/ { inside = 1; next }
                !inside || done { next }
                /\tjmp +\*%/ { done = 1; next }
                /\t(call|push)/ { print hook ": slot0 has a " $2 " before its tail jump to the original"; done = 1 }
                END { if (!done) print hook ": slot0 has no tail jump to the original" }'
    done
}

status=0
checked=0
for source in Sources/_CrashShieldRuntime/Guards/CSGuard_*.m; do
    grep -q "CS_DEFINE_FAST_HOOK_" "$source" || continue
    object="$work/$(basename "$source" .m).o"
    compile "$source" "$object"
    report=$(bad_slots "$object")
    count=$(nm "$object" | grep -c "_full0$" || true)
    checked=$((checked + count))
    if [ -n "$report" ]; then
        echo "check-hot-slots: FAIL $source" >&2
        echo "$report" | sed 's/^/  /' >&2
        status=1
    else
        echo "check-hot-slots: $source: $count fast slots call-free on their legal path"
    fi
done
[ "$checked" -gt 0 ] || { echo "check-hot-slots: FAIL no fast hook found" >&2; status=1; }

# Canary: the predicate form that lost the fast path must be rejected.
cat > "$work/canary.m" <<'PROBE'
#import "CSEngine.h"
extern CSGuard cs_canary_guard __attribute__((visibility("hidden")));
static int cs_canary_counts[64];
static inline __attribute__((always_inline)) BOOL cs_canary_fast(CS_UNRETAINED id self, NSUInteger index) {
    if (CS_UNLIKELY(!cs_guard_is_on(&cs_canary_guard))) return YES;
    return self != nil && index < (NSUInteger)cs_canary_counts[((uintptr_t)object_getClass(self) >> 4) & 63];
}
static inline id cs_canary_read(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller, NSUInteger index) {
    if (cs_guard_is_on(&cs_canary_guard) && cs_guard_misuse(&cs_canary_guard, self, _cmd, caller, "x", 0, 0, 0)) return nil;
    return ((id(*)(id, SEL, NSUInteger))original)(self, _cmd, index);
}
CS_DEFINE_FAST_HOOK_1(cs_canary_read, id, NSUInteger, cs_canary_fast)
id (*cs_canary_slot)(id, SEL, NSUInteger) = (id(*)(id, SEL, NSUInteger))cs_canary_read_slot0;
PROBE
compile "$work/canary.m" "$work/canary.o"
canary_report=$(bad_slots "$work/canary.o")
if [ -z "$canary_report" ]; then
    echo "check-hot-slots: FAIL canary: the old predicate form was not rejected" >&2
    status=1
else
    echo "check-hot-slots: canary (old predicate form) rejected: $canary_report"
fi
[ "$status" -eq 0 ] && echo "check-hot-slots: all checks passed"
exit "$status"
