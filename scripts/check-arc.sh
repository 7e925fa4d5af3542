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
#
# The Apple backend (Backend/CSBackend_Apple.m) is wholly inside `#if defined(__APPLE__)`, so the
# pass above sees an empty file. A last stage forces that guard open (with the Apple-only
# declarations GCC's libobjc and glibc lack, in place of the <mach-o/...> includes) and runs the file through the ARC front end and, the MRC half of
# the rule, without ARC, against GNUstep's declarations of the same public runtime API; its fields
# go through the ownership rule too. `#line` keeps diagnostics on the original file and lines.
# What it shows: the file's ownership (no retain/release, bridged casts, unretained receivers) is
# valid ARC and valid MRC. Not that it compiles against Apple's SDK or works: only a Mac can.
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
  [Tests/Scenarios]="-I Tests/Scenarios/include -fblocks"
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
  own=$(grep -E '^(Sources|Tests)/[^:]+:[0-9]+:[0-9]+: (fatal )?error:' "$log" || true)
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

# The Apple backend, guard forced open.
apple_backend=Sources/_CrashShieldRuntime/Backend/CSBackend_Apple.m
apple_forced="$(mktemp -d)"
trap 'rm -f "$log" "${canary:-}" "$fields_log"; rm -rf "$apple_forced"' EXIT
awk -v file="$apple_backend" '
  NR == 1 { print "#define _GNU_SOURCE 1"; printf "#line 1 \"%s\"\n", file }
  $0 == "#if defined(__APPLE__)" && !forced {
    forced = 1
    print "#if 1 /* forced open by scripts/check-arc.sh */"
    print "/* Apple-only declarations, from <objc/runtime.h>, <mach-o/dyld.h> and <mach-o/getsect.h>: */"
    print "const char **objc_copyClassNamesForImage(const char *image, unsigned int *outCount);"
    print "struct mach_header; struct mach_header_64;"
    print "uint32_t _dyld_image_count(void); const char *_dyld_get_image_name(uint32_t image_index);"
    print "uint8_t *getsectiondata(const struct mach_header_64 *mhp, const char *segname, const char *sectname, unsigned long *size);"
    printf "#line %d \"%s\"\n", NR + 1, file
    next
  }
  /^#include <mach-o\// && forced { print "/* " $0 " (declared above) */"; next }
  { print }' "$apple_backend" >"$apple_forced/CSBackend_Apple.m"
apple_flags=(-I "$(dirname "$apple_backend")" -I Sources/_CrashShieldRuntime)
apple_failed=0
if ! grep -q '^#if 1 /\* forced open' "$apple_forced/CSBackend_Apple.m"; then
  echo "check-arc: FAIL: no \`#if defined(__APPLE__)\` line in $apple_backend to force open" >&2
  exit 1
fi
# Its canary: one MRC-only call appended to the forced file must be rejected under ARC.
{ cat "$apple_forced/CSBackend_Apple.m"; printf '\n#line 1 "Sources/canary.m"\nvoid cs_canary(id x) { [x release]; }\n'; } \
  >"$apple_forced/canary.m"
if check_file "$apple_forced/canary.m" "${apple_flags[@]}" >/dev/null || ! grep -q "^Sources/canary.m:1:.*release" "$log"; then
  echo "check-arc: FAIL: the Apple backend's canary ([x release]) was not rejected; its ARC stage is not running ARC" >&2
  exit 1
fi
for mode in -fobjc-arc -fno-objc-arc; do
  if ! check_file "$apple_forced/CSBackend_Apple.m" "${apple_flags[@]}" "$mode"; then apple_failed=$((apple_failed + 1)); fi
done
apple_fields=$("$clang_bin" -x objective-c "${common[@]}" "${apple_flags[@]}" -Xclang -ast-dump "$apple_forced/CSBackend_Apple.m" 2>/dev/null |
  python3 scripts/lib/implicit_strong_fields.py || true)
if [ -n "$apple_fields" ]; then
  echo "$apple_fields"
  apple_failed=$((apple_failed + 1))
fi
if [ "$apple_failed" -eq 0 ]; then
  echo "check-arc: $apple_backend (\`__APPLE__\` guard forced): clean under ARC and MRC, every object field states its ownership"
else
  echo "check-arc: $apple_backend (\`__APPLE__\` guard forced): errors above (ARC, MRC or field ownership)"
  failed=$((failed + 1))
fi
# The runtime's other files with `__APPLE__` defined: their Apple branches (CS_STR's literals,
# CS_CLASS's class messages, libdispatch, the Apple-only cases of the guards) are compiled nowhere
# else here. Through the ARC front end and without ARC, against GNUstep's declarations of the same
# API (and the Swift toolchain's libdispatch headers). What it shows: those lines are valid ARC and
# MRC Objective-C for the interfaces they see (a class message to a class only declared with
# @class is an error under ARC, for one). Not that they compile against Apple's SDK.
apple_branch_dir="$(mktemp -d)"
# <dispatch/dispatch.h> is the Swift toolchain's libdispatch (the same public API as Apple's), read
# with __APPLE__ undefined: its Apple branch needs the SDK's headers. Only its own and the os/
# headers it includes: the toolchain's other headers (CoreFoundation) would take Apple branches.
toolchain_lib="$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")/lib/swift"
mkdir -p "$apple_branch_dir/include/dispatch"
ln -s "$toolchain_lib/os" "$apple_branch_dir/include/os"
for header in "$toolchain_lib"/dispatch/*; do
  [ "$(basename "$header")" = dispatch.h ] || ln -s "$header" "$apple_branch_dir/include/dispatch/"
done
printf '#undef __APPLE__\n#include "%s/dispatch/dispatch.h"\n#define __APPLE__ 1\n' "$toolchain_lib" \
  >"$apple_branch_dir/include/dispatch/dispatch.h"
# Apple-only declarations GCC's libobjc and glibc lack, as Apple's <objc/message.h> (without
# OBJC_OLD_DISPATCH_PROTOTYPES) and <pthread.h> declare them.
printf '#include <objc/objc.h>\nvoid objc_msgSend(void);\nint pthread_main_np(void);\n' >"$apple_branch_dir/apple-only.h"
apple_branch_flags=(-D__APPLE__ -include "$apple_branch_dir/apple-only.h" -I "$runtime" -I "$runtime/Engine" -I "$runtime/Backend"
  -I "$apple_branch_dir/include")
printf '#import "CSObjC.h"\n@class CSCanaryDeclaredOnly;\nClass cs_canary(void) { return CS_CLASS(CSCanaryDeclaredOnly); }\n' \
  >"$apple_branch_dir/canary.m"
if "$clang_bin" -x objective-c "${common[@]}" "${apple_branch_flags[@]}" "$apple_branch_dir/canary.m" >"$log" 2>&1 ||
   ! grep -q "for class message is a forward declaration" "$log"; then
  echo "check-arc: FAIL: the Apple-branch canary (CS_CLASS of a class declared only with @class) was not rejected" >&2
  cat "$log" >&2
  exit 1
fi
apple_branch_files=0 apple_branch_failed=0
while IFS= read -r file; do
  apple_branch_files=$((apple_branch_files + 1))
  for mode in -fobjc-arc -fno-objc-arc; do
    if ! check_file "$file" "${apple_branch_flags[@]}" "$mode"; then
      echo "check-arc: $file (\`__APPLE__\` defined, $mode): errors above"
      apple_branch_failed=$((apple_branch_failed + 1))
    fi
  done
done < <(find "$runtime" -name '*.m' ! -name CSBackend_Apple.m ! -name CSBackend_GNU.m | sort)
rm -rf "$apple_branch_dir"
if [ "$apple_branch_failed" -eq 0 ]; then
  echo "check-arc: $apple_branch_files runtime files with \`__APPLE__\` defined: clean under ARC and MRC"
else
  failed=$((failed + 1))
fi
[ "$failed" -eq 0 ]
