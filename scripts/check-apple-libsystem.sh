#!/usr/bin/env bash
# scripts/check-apple-libsystem.sh — what Apple's own headers and libSystem can check without a
# Mac. The Zig toolchain from PyPI (`ziglang`, in a virtual environment under .build/) ships
# Apple's libSystem headers (mach/, mach-o/dyld.h, dispatch/, sys/ucontext.h...), LLVM's libc++
# and libc++abi headers and libSystem.tbd for macOS. For arm64 and x86_64 macOS 13:
# 1. every C file of _CrashShieldCapture and _CrashShieldIncidents compiles with -Wall -Wextra
#    -Werror, as SwiftPM builds it (with and without the debug build's CSC_TEST_SEAMS), the
#    Darwin files included;
# 2. those objects link, with a probe that calls capture's and the incident pipeline's entry
#    points, into a Mach-O executable against libSystem.tbd: a libSystem symbol that Apple does
#    not have (a glibc-only call slipping into a shared file) fails the link;
# 3. the C++ terminate handler (_CrashShieldCxxTerminate) compiles, defines the entry point the
#    Swift side calls, and sits in its own section (__TEXT,__cs_cxx_sdk), whose bounds capture
#    uses to mark the handler's frame as the SDK's;
# 4. the runtime backend for Apple (Backend/CSBackend_Apple.m) compiles against Apple's
#    Objective-C runtime headers under ARC and MRC (a three-line stand-in for Foundation, which Zig
#    does not ship);
# 5. canaries: a Linux-only header must not compile and a glibc-only symbol must not link, so the
#    check is shown to use Apple's headers and libSystem, not the host's.
#
# Limits: Zig's libc++ headers are LLVM's, not the SDK's copy; iOS, the simulator and Mac Catalyst
# need Apple's SDK, which Zig does not ship (not compiled here); the other Objective-C files need
# Foundation, which Zig does not ship either (scripts/check-arc.sh checks them under ARC against
# GNUstep's headers); nothing built here is run.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="$ROOT/.build/zig-venv"
ZIG_VERSION=0.17.0
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import ziglang" 2>/dev/null; then
    echo "== check-apple-libsystem: installing ziglang $ZIG_VERSION into $VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check "ziglang==$ZIG_VERSION"
fi
[ -x /opt/swift/usr/bin/llvm-nm ] && PATH="/opt/swift/usr/bin:$PATH"
command -v llvm-nm >/dev/null || { echo "check-apple-libsystem: llvm-nm not found" >&2; exit 2; }

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
FAILURES=0
fail() { echo "FAIL: $*"; FAILURES=$((FAILURES + 1)); }
zig() { "$VENV/bin/python" -m ziglang "$@"; }
INCLUDES=(-I"$ROOT/Sources/_CrashShieldCapture/include" -I"$ROOT/Sources/_CrashShieldLaunch/include" -I"$ROOT/Sources/_CrashShieldIncidents/include"
          -I"$ROOT/Sources/_CrashShieldCxxTerminate/include")
C_FILES=("$ROOT"/Sources/_CrashShieldCapture/*.c "$ROOT"/Sources/_CrashShieldLaunch/*.c "$ROOT"/Sources/_CrashShieldIncidents/*.c)

cat >"$WORK/probe_main.c" <<'PROBE'
/* Calls capture's and the incident pipeline's entry points, so the link needs all they use. */
#include "csc_capture.h"
#include "csc_launch.h"
#include "cs_incidents.h"
#include <stdio.h>
int main(int argc, char **argv) {
    csc_config config = {0};
    config.directory = argc > 1 ? argv[1] : "/tmp/crashshield-link-probe";
    csc_install_result result = csc_install(&config);
    csc_set_launch_phase(CSC_PHASE_RUNNING);
    (void)csc_set_scope_json("{}");
    (void)csc_add_sdk_code_range(1, 2);
    (void)csc_note_cxx_exception("probe", "probe");
    cs_incident_site site = {0};
    site.guard_name = "probe";
    site.class_name = "Probe";
    site.selector_name = "probe";
    site.reason = "link probe";
    cs_incident_record(&site);
    printf("install %d written %d\n", (int)result, (int)csc_report_written());
    csc_uninstall();
    return 0;
}
PROBE

for target in aarch64-macos.13.0 x86_64-macos.13.0; do
    for seams in "" -DCSC_TEST_SEAMS; do
        label="$target${seams:+ (test seams)}"
        objects=()
        compiled=1
        for source in "${C_FILES[@]}"; do
            object="$WORK/$target$seams-$(basename "$source").o"
            if ! zig cc -target "$target" -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE $seams "${INCLUDES[@]}" \
                -c "$source" -o "$object" 2>"$WORK/err"; then
                fail "$label: ${source#"$ROOT"/} does not compile:"; cat "$WORK/err"; compiled=0; continue
            fi
            objects+=("$object")
        done
        [ "$compiled" = 1 ] && echo "ok:   $label: ${#C_FILES[@]} C files of capture and incidents compile against Apple's libSystem headers"
        [ "$compiled" = 1 ] || continue
        [ -n "$seams" ] && continue  # the seams' objects only need to compile; the link is of the shipped form
        if ! zig cc -target "$target" -std=gnu11 -Wall -Werror "${INCLUDES[@]}" "$WORK/probe_main.c" "${objects[@]}" \
            -o "$WORK/probe-$target" 2>"$WORK/err"; then
            fail "$label: capture and incidents do not link against libSystem.tbd:"; cat "$WORK/err"; continue
        fi
        if file "$WORK/probe-$target" | grep "Mach-O 64-bit.*executable.*NOUNDEFS" >/dev/null; then
            echo "ok:   $label: capture and incidents link into a Mach-O executable against libSystem.tbd"
        else
            fail "$label: the probe is not a Mach-O executable without undefined symbols: $(file "$WORK/probe-$target")"
        fi
    done

    for source in "$ROOT"/Sources/_CrashShieldCxxTerminate/*.cpp; do
        object="$WORK/$(basename "$source" .cpp)-$target.o"
        if ! zig c++ -target "$target" -std=c++17 -Wall -Wextra -Werror "${INCLUDES[@]}" \
            -c "$source" -o "$object" 2>"$WORK/err"; then
            fail "$target: $(basename "$source") does not compile:"; cat "$WORK/err"; continue
        fi
        if ! llvm-nm "$object" | grep " T _csc_cxx_install_terminate_handler$" >/dev/null; then
            fail "$target: _csc_cxx_install_terminate_handler not defined"; continue
        fi
        if [ "$(basename "$source")" = csc_cxx_terminate.cpp ] &&
            ! llvm-nm -m "$object" | grep "(__TEXT,__cs_cxx_sdk) .*terminate_handler" >/dev/null; then
            fail "$target: the terminate handler is not in __TEXT,__cs_cxx_sdk (capture's SDK code range)"; continue
        fi
        echo "ok:   $target: $(basename "$source") compiles against Apple's libSystem and LLVM's libc++ headers"
    done
done

# The runtime backend for Apple (Backend/CSBackend_Apple.m) against Apple's Objective-C runtime
# headers (objc/runtime.h, objc/message.h, objc/NSObject.h), under ARC (as SwiftPM builds it on
# Apple) and MRC. Zig ships no Foundation: a stub stands in for <Foundation/Foundation.h> with the
# three declarations the backend's headers use (NSObject from Apple's objc/NSObject.h), so what is
# checked is every runtime call and type of the backend, not Foundation's API.
mkdir -p "$WORK/stub/Foundation"
cat >"$WORK/stub/Foundation/Foundation.h" <<'STUB'
#import <objc/NSObject.h>
@class NSString;
NSString *NSStringFromSelector(SEL selector);
SEL NSSelectorFromString(NSString *name);
STUB
RUNTIME="$ROOT/Sources/_CrashShieldRuntime"
for target in aarch64-macos.13.0 x86_64-macos.13.0; do
    for ownership in -fobjc-arc -fno-objc-arc; do
        if zig cc -target "$target" -x objective-c "$ownership" -Wall -Wextra -Werror -I"$WORK/stub" -I"$RUNTIME/Backend" \
            -I"$RUNTIME/Engine" -I"$RUNTIME/include" "${INCLUDES[@]}" -c "$RUNTIME/Backend/CSBackend_Apple.m" \
            -o "$WORK/backend-$target$ownership.o" 2>"$WORK/err" &&
            llvm-nm "$WORK/backend-$target$ownership.o" | grep " T _cs_backend_implementation_is_system$" >/dev/null; then
            echo "ok:   $target ($ownership): Backend/CSBackend_Apple.m compiles against Apple's Objective-C runtime headers"
            # Owner discovery must not realize the app's classes: the backend calls none of the
            # functions that list or look up every class.
            forbidden="$(llvm-nm -u "$WORK/backend-$target$ownership.o" | grep -E '^ *U _(objc_copyClassList|objc_getClassList|NSClassFromString)$' || true)"
            if [ -n "$forbidden" ]; then
                fail "$target ($ownership): the Apple backend references $(echo $forbidden | tr -s ' ')"
            else
                echo "ok:   $target ($ownership): the Apple backend references no objc_copyClassList, objc_getClassList or NSClassFromString"
            fi
        else
            fail "$target ($ownership): Backend/CSBackend_Apple.m does not compile against Apple's runtime headers:"; cat "$WORK/err"
        fi
    done
done

printf '#include <link.h>\nint canary(void) { return 0; }\n' >"$WORK/canary.c"
if zig cc -target aarch64-macos.13.0 -c "$WORK/canary.c" -o "$WORK/canary.o" 2>/dev/null; then
    fail "canary: a Linux-only header compiled for macOS (the host's headers were used)"
else
    echo "ok:   canary: a Linux-only header does not compile for macOS"
fi
printf 'extern int pthread_getattr_np(void *, void *);\nint main(void) { return pthread_getattr_np(0, 0); }\n' >"$WORK/canary_link.c"
if zig cc -target aarch64-macos.13.0 "$WORK/canary_link.c" -o "$WORK/canary_link" 2>/dev/null; then
    fail "canary: a glibc-only symbol linked for macOS (libSystem.tbd was not used)"
else
    echo "ok:   canary: a glibc-only symbol does not link for macOS"
fi

[ "$FAILURES" -eq 0 ] || { echo "check-apple-libsystem: $FAILURES failure(s)"; exit 1; }
echo "check-apple-libsystem: OK"
