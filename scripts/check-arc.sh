#!/usr/bin/env bash
# The ARC half of the dual-ownership rule (docs/ARCHITECTURE.md, "Ownership: MRC and ARC").
#
# SwiftPM compiles Objective-C with ARC on Apple platforms; here, on GCC's libobjc, the same files
# build under MRC. This script runs clang's ARC front end over every Objective-C file of the
# runtime and the scenarios, against the GNUstep headers: `-fobjc-arc -fobjc-runtime=gnustep-2.0`
# (clang refuses ARC for GCC's runtime, so the runtime flag serves this check only; nothing is
# generated). It fails on any error in the project's own lines, on any fatal error anywhere (a
# missing header would stop the check early and hide everything after it), and if its own canary,
# a file with one MRC-only call, is not rejected (a check that cannot fail checks nothing).
#
# A second rule, for the runtime target (what ships): every struct field and instance variable of
# object type states its ownership in writing (`__strong`, or CS_UNRETAINED for one that does not
# own). Unwritten, ARC makes it strong while MRC code treats it as the comment says, which is how a
# proxy or token documented "unretained" would keep alive what it watches on Apple only. Read from
# clang's ARC AST by scripts/lib/implicit_strong_fields.py.
#
# Errors inside GNUstep's and GCC's headers (GCC's objc/runtime.h is not ARC-clean) are counted and
# shown in the summary but do not fail the check: they are not ours to fix.
set -euo pipefail
cd "$(dirname "$0")/.."

clang_bin="${CLANG:-clang}"
pkg_cflags="$(pkg-config --cflags crashshield-gnustep-base)"
common=(
  -fsyntax-only -fobjc-arc -fobjc-runtime=gnustep-2.0 -ferror-limit=0
  -DGNUSTEP -DGNU_RUNTIME=1 -DGNUSTEP_BASE_LIBRARY=1
  -I Sources/_CrashShieldRuntime/Backend/GNUstepShim
  -I Sources/_CrashShieldIncidents/include -I Sources/_CrashShieldCapture/include
  -I Sources/_CrashShieldRuntime/include
)
# shellcheck disable=SC2206
common+=($pkg_cflags)

# target directory → extra include flags (SwiftPM adds a target's own include dir and its deps').
declare -A target_flags=(
  [Sources/_CrashShieldRuntime]=""
  [Sources/_CrashShieldScenarios]="-I Sources/_CrashShieldScenarios/include -fblocks"
)

log="$(mktemp)"
trap 'rm -f "$log" "${canary:-}"' EXIT

check_file() { # file extra-flags...
  local file="$1"; shift
  # Objective-C++ needs the C++ mode; the rest are Objective-C.
  local lang=(-x objective-c)
  [[ "$file" == *.mm ]] && lang=(-x objective-c++)
  "$clang_bin" "${lang[@]}" "${common[@]}" "$@" "$file" >"$log" 2>&1 || true
  local own fatal foreign
  own=$(grep -E '^Sources/[^:]+:[0-9]+:[0-9]+: (fatal )?error:' "$log" || true)
  fatal=$(grep -E 'fatal error:' "$log" || true)
  foreign=$(grep -Ec '^/[^:]+:[0-9]+:[0-9]+: error:' "$log" || true)
  foreign_total=$((foreign_total + foreign))
  if [ -n "$own$fatal" ]; then
    printf '%s\n' "$own" "$fatal" | sed '/^$/d' | sort -u
    return 1
  fi
  return 0
}

# The canary: MRC-only code must be rejected, or the flags above are not ARC.
canary="$(mktemp --suffix=.m)"
printf '#import <Foundation/Foundation.h>\nvoid f(id x) { [x release]; }\n' >"$canary"
foreign_total=0
if "$clang_bin" -x objective-c "${common[@]}" "$canary" >"$log" 2>&1 ||
   ! grep -q "ARC forbids explicit message send of 'release'" "$log"; then
  echo "check-arc: FAIL: the canary ([x release]) was not rejected; the ARC check is not running ARC" >&2
  cat "$log" >&2
  exit 1
fi

files=0 failed=0 foreign_total=0
for dir in "${!target_flags[@]}"; do
  # shellcheck disable=SC2206
  extra=(-I "$dir" ${target_flags[$dir]})
  while IFS= read -r file; do
    files=$((files + 1))
    if ! check_file "$file" "${extra[@]}"; then failed=$((failed + 1)); fi
  done < <(find "$dir" \( -name '*.m' -o -name '*.mm' \) | sort)
done

echo "check-arc: $files Objective-C files, $failed with errors in project lines ($foreign_total errors inside system headers ignored)"

# Fields and ivars without written ownership, runtime target only (headers are seen once per file
# that includes them, hence sort -u).
fields_log="$(mktemp)"
trap 'rm -f "$log" "${canary:-}" "$fields_log"' EXIT
runtime=Sources/_CrashShieldRuntime
while IFS= read -r file; do
  lang=(-x objective-c)
  [[ "$file" == *.mm ]] && lang=(-x objective-c++)
  "$clang_bin" "${lang[@]}" "${common[@]}" -I "$runtime" -Xclang -ast-dump "$file" 2>/dev/null |
    python3 scripts/lib/implicit_strong_fields.py >>"$fields_log" || true
done < <(find "$runtime" \( -name '*.m' -o -name '*.mm' \) | sort)
# The rule's canary: an unqualified object field in a project path must be found.
canary_dir="$(mktemp -d)"
mkdir -p "$canary_dir/Sources"
printf 'typedef struct { id implicit_owner; } S;\n' >"$canary_dir/Sources/canary.m"
canary_found=$(cd "$canary_dir" &&
  "$clang_bin" -x objective-c -fsyntax-only -fobjc-arc -fobjc-runtime=gnustep-2.0 -Xclang -ast-dump Sources/canary.m 2>/dev/null |
  python3 "$OLDPWD/scripts/lib/implicit_strong_fields.py" || true)
rm -rf "$canary_dir"
if ! grep -q implicit_owner <<<"$canary_found"; then
  echo "check-arc: FAIL: the field canary (an unqualified id field) was not found; the field rule checks nothing" >&2
  exit 1
fi
implicit=$(sort -u "$fields_log" | sort -t: -k1,1 -k2,2n)
if [ -n "$implicit" ]; then
  echo "$implicit"
  echo "check-arc: $(wc -l <<<"$implicit") object fields in $runtime without written ownership (write __strong or CS_UNRETAINED)"
  failed=$((failed + 1))
else
  echo "check-arc: every object field in $runtime states its ownership"
fi
[ "$failed" -eq 0 ]
