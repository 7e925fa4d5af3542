#!/usr/bin/env bash
# What clang can check on Linux of the C targets' Apple build, without Apple's SDK (docs/CAPTURE.md,
# "Platforms"): clang targets Apple with only its freestanding headers (stdint, stddef, stdbool,
# stdarg, limits), so
#   1. every C file of _CrashShieldIncidents and _CrashShieldCapture that needs no header beyond
#      those (the Mach-O reader, the debug ids, the system-path rule) must compile for arm64 iOS,
#      x86_64 macOS and arm64_32 watchOS with -Wall -Wextra -Werror; a file that stops at a missing
#      system header needs the SDK and is listed as not checked;
#   2. every file kept for one loader or kernel (*_elf.c, *_linux.c) must compile to nothing
#      for those targets: its whole body is inside its platform guard, so no ELF or Linux
#      construct reaches an Apple build.
# What needs the SDK (dyld, pthread, Mach calls: *_dyld.c, *_darwin.c, the shared files) is listed
# as not checked here. A canary (a freestanding-looking file with one Linux-only include) must be
# rejected, so a check that cannot fail is noticed.
set -euo pipefail
cd "$(dirname "$0")/.."

clang_bin="${CLANG:-clang}"
targets=(arm64-apple-ios15 x86_64-apple-macos13 arm64_32-apple-watchos8)
includes=(-I Sources/_CrashShieldIncidents/include -I Sources/_CrashShieldCapture/include -I Sources/_CrashShieldCapture)
failed=0

compile() { # file target
  "$clang_bin" -target "$2" -ffreestanding -std=c11 -Wall -Wextra -Werror -fsyntax-only "${includes[@]}" "$1"
}

canary="$(mktemp --suffix=.c)"
trap 'rm -f "$canary"' EXIT
printf '#include <stdint.h>\n#include <link.h>\nuint32_t cs_canary(void) { return 1; }\n' >"$canary"
if compile "$canary" arm64-apple-ios15 2>/dev/null; then
  echo "FAIL canary: a file including <link.h> compiled for arm64-apple-ios15"
  failed=1
fi

checked=() not_checked=()
for file in Sources/_CrashShieldIncidents/*.c Sources/_CrashShieldCapture/*.c; do
  base="$(basename "$file")"
  case "$base" in
    *_elf.c | *_linux.c)
      for target in "${targets[@]}"; do
        if ! compile "$file" "$target"; then
          echo "FAIL $file: not empty for $target (a Linux/ELF construct outside its guard)"
          failed=1
        fi
      done
      checked+=("$base (empty for Apple)")
      continue
      ;;
  esac
  # A file that needs the SDK stops at its first system header clang does not have; any other
  # error is a failure.
  errors="$(compile "$file" "${targets[0]}" 2>&1)" && status=0 || status=$?
  if ((status != 0)); then
    if grep -q "fatal error: '.*' file not found" <<<"$errors" && ! grep -v "file not found" <<<"$errors" | grep -q "error:"; then
      not_checked+=("$base")
      continue
    fi
    echo "FAIL $file for ${targets[0]}:"
    echo "$errors"
    failed=1
    continue
  fi
  for target in "${targets[@]:1}"; do
    if ! compile "$file" "$target"; then
      echo "FAIL $file for $target"
      failed=1
    fi
  done
  checked+=("$base")
done

echo "checked for ${targets[*]}: ${checked[*]}"
echo "needs Apple's SDK (not checked here): ${not_checked[*]}"
if ((failed)); then
  echo "check-apple-c: FAILED"
  exit 1
fi
echo "check-apple-c: ok"
