#!/usr/bin/env bash
# scripts/check-apple-cxx.sh — compiles the SDK's C++ (the terminate handler of
# _CrashShieldCxxTerminate) for macOS, arm64 and x86_64, with the Zig toolchain from PyPI
# (`ziglang`), which ships Apple's libSystem headers and LLVM's libc++/libc++abi headers: the
# file must compile with -Wall -Wextra -Werror, the object must define the C entry point the
# Swift side calls, and the terminate handler must sit in its own section (__TEXT,__cs_cxx_sdk),
# whose bounds capture uses to mark the handler's frame as the SDK's. A canary (a Linux-only header) must fail for the same target, so the
# check is shown to use Apple's headers, not the host's.
#
# Limits: Zig's libc++ headers are LLVM's, not the copy in Apple's SDK; iOS needs Apple's SDK,
# which Zig does not ship (not compiled here); nothing is linked or run.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="$ROOT/.build/zig-venv"
ZIG_VERSION=0.17.0
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import ziglang" 2>/dev/null; then
    echo "== check-apple-cxx: installing ziglang $ZIG_VERSION into $VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check "ziglang==$ZIG_VERSION"
fi
[ -x /opt/swift/usr/bin/llvm-nm ] && PATH="/opt/swift/usr/bin:$PATH"
command -v llvm-nm >/dev/null || { echo "check-apple-cxx: llvm-nm not found" >&2; exit 2; }

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
FAILURES=0
zigxx() { "$VENV/bin/python" -m ziglang c++ "$@"; }

for target in aarch64-macos.13.0 x86_64-macos.13.0; do
    for source in "$ROOT"/Sources/_CrashShieldCxxTerminate/*.cpp; do
        object="$WORK/$(basename "$source" .cpp)-$target.o"
        if ! zigxx -target "$target" -std=c++17 -Wall -Wextra -Werror \
            -I"$ROOT/Sources/_CrashShieldCxxTerminate/include" -I"$ROOT/Sources/_CrashShieldCapture/include" \
            -c "$source" -o "$object" 2>"$WORK/err"; then
            echo "FAIL: $target: $(basename "$source") does not compile:"; cat "$WORK/err"; FAILURES=$((FAILURES + 1)); continue
        fi
        if ! file "$object" | grep -q "Mach-O"; then
            echo "FAIL: $target: $(basename "$object") is not a Mach-O object"; FAILURES=$((FAILURES + 1)); continue
        fi
        if ! llvm-nm "$object" | grep -q " T _csc_cxx_install_terminate_handler$"; then
            echo "FAIL: $target: _csc_cxx_install_terminate_handler not defined"; FAILURES=$((FAILURES + 1)); continue
        fi
        if [ "$(basename "$source")" = csc_cxx_terminate.cpp ] &&
            ! llvm-nm -m "$object" | grep -q "(__TEXT,__cs_cxx_sdk) .*terminate_handler"; then
            echo "FAIL: $target: the terminate handler is not in __TEXT,__cs_cxx_sdk (capture's SDK code range)"
            FAILURES=$((FAILURES + 1)); continue
        fi
        echo "ok:   $target: $(basename "$source") compiles against Apple's libSystem and libc++ headers"
    done
done

printf '#include <link.h>\nint canary(void) { return 0; }\n' >"$WORK/canary.cpp"
if zigxx -target aarch64-macos.13.0 -c "$WORK/canary.cpp" -o "$WORK/canary.o" 2>/dev/null; then
    echo "FAIL: canary: a Linux-only header compiled for macOS (the host's headers were used)"; FAILURES=$((FAILURES + 1))
else
    echo "ok:   canary: a Linux-only header does not compile for macOS"
fi

[ "$FAILURES" -eq 0 ] || { echo "check-apple-cxx: $FAILURES failure(s)"; exit 1; }
echo "check-apple-cxx: OK"
