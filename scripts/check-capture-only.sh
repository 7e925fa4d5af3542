#!/usr/bin/env bash
# Proves that a Linux Swift program depending only on the CrashShieldCapture product builds and
# runs without GNUstep: builds Examples/CaptureOnly alone, checks with ldd that neither GNUstep
# nor libobjc is linked, then crashes it once and checks that the next start receives the report.
set -euo pipefail
cd "$(dirname "$0")/.."
export SWIFT_BACKTRACE=enable=no
swift build --product CaptureOnlyExample >&2
binary="$(swift build --product CaptureOnlyExample --show-bin-path)/CaptureOnlyExample"

if ldd "$binary" | grep -Ei 'gnustep|libobjc'; then
  echo "check-capture-only: FAIL: $binary links GNUstep or libobjc" >&2
  exit 1
fi

dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
set +e
"$binary" "$dir/reports" crash >/dev/null 2>&1
status=$?
set -e
if [ "$status" -ne 132 ] && [ "$status" -ne 133 ]; then
  echo "check-capture-only: FAIL: expected death by SIGILL/SIGTRAP (132/133), got $status" >&2
  exit 1
fi
output="$("$binary" "$dir/reports")"
echo "$output"
if ! grep -q "earlier crash: swift_trap" <<<"$output" || ! grep -q "crashWithSwiftTrap" <<<"$output"; then
  echo "check-capture-only: FAIL: the next start did not receive the symbolicated Swift trap report" >&2
  exit 1
fi
if ! grep -q "earlier crash scope: user user-1, tier free, last breadcrumb job started" <<<"$output"; then
  echo "check-capture-only: FAIL: the report did not carry the scope (user, tag, breadcrumb) set before the crash" >&2
  exit 1
fi
if ! grep -q "last run: crashed" <<<"$output"; then
  echo "check-capture-only: FAIL: launch protection did not see the crash" >&2
  exit 1
fi
echo "check-capture-only: OK (no GNUstep, no libobjc; crash captured with its scope and delivered)"
