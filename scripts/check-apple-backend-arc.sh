#!/usr/bin/env bash
# The ARC check for Backend/CSBackend_Apple.m, which scripts/check-arc.sh cannot see: the whole
# file is inside `#if defined(__APPLE__)`, so against GNUstep's headers it is empty. Here the guard
# is forced open and the file goes through clang's ARC front end (and, as a second run, without
# ARC: the MRC half of the rule) against GNUstep's declarations of the same public runtime API.
# What this shows: the file's ownership (no retain/release, bridged casts, unretained receivers)
# is valid ARC and valid MRC. What it cannot show: that the file compiles against Apple's SDK
# (Apple-only declarations are stubbed below) or that it works; only a Mac can.
set -euo pipefail
cd "$(dirname "$0")/.."

source_file=Sources/_CrashShieldRuntime/Backend/CSBackend_Apple.m
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
flags=(
  -x objective-c -fsyntax-only -fobjc-runtime=gnustep-2.0 -ferror-limit=0
  -DGNUSTEP -DGNU_RUNTIME=1 -DGNUSTEP_BASE_LIBRARY=1
  -I Sources/_CrashShieldRuntime/Backend/GNUstepShim -I Sources/_CrashShieldRuntime/Backend
  -I Sources/_CrashShieldIncidents/include -I Sources/_CrashShieldCapture/include
  -I Sources/_CrashShieldRuntime/include
)
# shellcheck disable=SC2207
flags+=($(pkg-config --cflags crashshield-gnustep-base))

# The Apple-only declaration the file uses that GCC's libobjc lacks (Apple's <objc/runtime.h>).
force_open() {
  printf '#define _GNU_SOURCE 1\n'
  sed 's/^#if defined(__APPLE__)$/#if 1\nClass *objc_copyClassList(unsigned int *outCount);/' "$1"
}
force_open "$source_file" >"$work/apple.m"
grep -q '^#if 1$' "$work/apple.m" || { echo "check-apple-backend-arc: the __APPLE__ guard was not found" >&2; exit 1; }

status=0
for mode in -fobjc-arc -fno-objc-arc; do
  clang "${flags[@]}" "$mode" "$work/apple.m" >"$work/log" 2>&1 || true
  if grep -E "apple\.m:[0-9]+:[0-9]+: (fatal )?error:|fatal error:" "$work/log"; then
    echo "check-apple-backend-arc: errors in $source_file ($mode)"
    status=1
  fi
done

# The canary: the same file with one MRC-only call must be rejected under ARC.
{ cat "$work/apple.m"; printf 'void cs_canary(id x) { [x release]; }\n'; } >"$work/canary.m"
clang "${flags[@]}" -fobjc-arc "$work/canary.m" >"$work/log" 2>&1 || true
if ! grep -qE "canary\.m:[0-9]+:[0-9]+: error: .*release" "$work/log"; then
  echo "check-apple-backend-arc: the canary was not rejected; the check is not running ARC" >&2
  exit 1
fi
[ "$status" = 0 ] && echo "check-apple-backend-arc: $source_file clean under ARC and MRC (guard forced, GNUstep declarations)"
exit "$status"
