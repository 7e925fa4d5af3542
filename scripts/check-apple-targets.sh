#!/usr/bin/env bash
# scripts/check-apple-targets.sh — what clang and lld can check for Apple targets on Linux,
# without Apple's SDK. Exits non-zero when any check fails.
#
# 1. The guard-section header (Engine/CSGuardSection.h): a probe with two "guards" is compiled for
#    each Apple target; llvm-nm must place every probe function (C functions under
#    CS_GUARD_CODE_SECTION, functions and Objective-C methods carrying CS_GUARD_METHOD) in its
#    guard's __TEXT section. The C probe is then linked with ld64.lld, and the bounds the linker
#    gives section$start$/section$end$ must equal the sections' bounds, with every function inside
#    its own guard's range and outside the other's: the fail-safe's address -> guard mapping at
#    link level.
# 2. PURE_C_FILES: C sources and headers that need only clang's freestanding headers (stdint,
#    stddef, stdbool, stdarg, stdatomic, limits, ...), compiled -ffreestanding -nostdlibinc
#    -fsyntax-only per Apple target. Every other C file of the C targets (C_TARGET_DIRS) must need
#    Apple's SDK (stop at a system header clang lacks, with no other error): one that compiles
#    without it belongs in the list, so the list cannot silently fall behind.
# 3. Files kept for one loader or kernel (*_elf.c, *_linux.c, anywhere under Sources/) preprocess
#    to nothing for every Apple target: their whole body is inside their platform guard, so no ELF
#    or Linux construct reaches an Apple build.
# 4. Canaries, so that each check is shown able to fail: the old `#pragma clang section` form and
#    a tag too long for Mach-O must be rejected, a host header must not be found by the pure-C
#    compile, the link-level checker must reject a wrong mapping, and a Linux file with one line
#    outside its guard must be reported.
#
# Limits (what only a Mac can show): no Apple SDK headers, no libSystem, no dyld. Swift's
# ld64.lld refuses objects whose LC_BUILD_VERSION names an Apple platform ("This version of lld
# does not support linking for platform iOS"), so the link step re-assembles the probe's
# target-compiled assembly without its `.build_version` directive; the code and sections are the
# target's, only the platform load command is absent. The link is a dylib without libSystem.
set -euo pipefail

# C sources and headers (paths from the repository root) that must compile for Apple targets with
# nothing but clang's freestanding headers. Each is compiled as C with -I of its own directory and
# of every target's include/ directory (Sources/*/include, as SwiftPM gives a target its
# dependencies' public headers). Headers included by a listed .c file are checked through it.
PURE_C_FILES=(
    # The guard-section macros.
    Sources/_CrashShieldRuntime/Engine/CSGuardSection.h
    # Capture's platform-neutral pure C: the report's JSON writer, the crash claim (csc_sys.h).
    Sources/_CrashShieldCapture/csc_writer.c
    Sources/_CrashShieldCapture/csc_claim.c
    # Image identity: the Mach-O reader, debug ids, the system-image path rule.
    Sources/_CrashShieldIncidents/cs_macho.c
    Sources/_CrashShieldIncidents/cs_debug_id.c
    Sources/_CrashShieldIncidents/cs_image_paths.c
    Sources/_CrashShieldIncidents/cs_images.h
    Sources/_CrashShieldIncidents/include/cs_dyld_images.h
    Sources/_CrashShieldIncidents/include/cs_image_range.h
    # The C interfaces of the shipped targets.
    Sources/_CrashShieldIncidents/include/cs_incidents.h
    Sources/_CrashShieldCapture/include/csc_capture.h
    Sources/_CrashShieldLaunch/include/csc_launch.h
    Sources/_CrashShieldRuntime/include/cs_runtime.h
    Sources/_CrashShieldRuntime/include/cs_capture_exceptions.h
)

# The C targets whose every .c file is either in PURE_C_FILES, kept for Linux/ELF (section 3), or
# needs Apple's SDK.
C_TARGET_DIRS=(
    Sources/_CrashShieldIncidents
    Sources/_CrashShieldCapture
    Sources/_CrashShieldLaunch
)

APPLE_TARGETS=(
    arm64-apple-ios16
    arm64-apple-ios16-simulator
    x86_64-apple-macos13
    arm64-apple-macos13
)

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SECTION_HEADER_DIR="$ROOT/Sources/_CrashShieldRuntime/Engine"
[ -x /opt/swift/usr/bin/clang ] && PATH="/opt/swift/usr/bin:$PATH"
for tool in clang llvm-nm llvm-objdump ld64.lld python3; do
    command -v "$tool" >/dev/null || { echo "check-apple-targets: $tool not found" >&2; exit 2; }
done

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
FAILURES=0
fail() { echo "FAIL: $*"; FAILURES=$((FAILURES + 1)); }
pass() { echo "ok:   $*"; }

# Apple target compiles: clang's resource headers only. -nostdlibinc matters: without an SDK,
# clang's Darwin driver would otherwise search the host's /usr/include and find glibc's headers.
apple_cc() { clang -nostdlibinc -ffreestanding -std=c11 -Wall -Wextra -Werror "$@"; }

# ---------------------------------------------------------------------------------------------
# 1. The guard-section header.

# Two guards: "notification" is the longest tag in use (12 characters: "__csnotification" is
# exactly Mach-O's 16). Functions are placed by the section pragma, and one kvo function by the
# attribute while notification's section is open; probe_unguarded precedes both sections.
cat >"$WORK/probe.c" <<'EOF'
#include "CSGuardSection.h"

CS_GUARD_CODE_RANGE(kvo)
CS_GUARD_CODE_RANGE(notification)
const char *const probe_ranges[4] = {
    CS_GUARD_CODE_START(kvo), CS_GUARD_CODE_END(kvo),
    CS_GUARD_CODE_START(notification), CS_GUARD_CODE_END(notification),
};
int probe_unguarded(int x) { return x ^ 5; }

CS_GUARD_CODE_SECTION(kvo)
int probe_kvo_pragma(int x) { return x + 1; }
int probe_kvo_pragma_2(int x) { return x * 7; }

CS_GUARD_CODE_SECTION(notification)
int probe_notification_pragma(int x) { return x - 3; }
int probe_kvo_attribute(int x) CS_GUARD_METHOD(kvo);
int probe_kvo_attribute(int x) { return x * 11; }
EOF

cat >"$WORK/probe.m" <<'EOF'
#include "CSGuardSection.h"

CS_GUARD_CODE_SECTION(notification)
__attribute__((objc_root_class))
@interface CSProbeRoot
- (int)kvoValue;
- (int)notificationValue;
@end
@implementation CSProbeRoot
- (int)kvoValue CS_GUARD_METHOD(kvo) { return 1; }
- (int)notificationValue CS_GUARD_METHOD(notification) { return 2; }
@end
EOF

# expect_symbol <llvm-nm -m output> <symbol> <section>: the symbol's line names __TEXT,<section>.
expect_symbol() {
    local line
    line="$(awk -v s=" $2" 'length($0) >= length(s) && substr($0, length($0) - length(s) + 1) == s' <<<"$1")"
    case "$line" in
        *"(__TEXT,$3) "*) return 0 ;;
    esac
    fail "$target: $2 not in __TEXT,$3: ${line:-missing}"
    return 1
}

# check_link_map <dylib> <guard>=<symbol>,<symbol>... ...
# Reads the linked image: the four pointers of probe_ranges (as the linker resolved
# section$start/section$end; no chained fixups, so they hold unslid addresses) must equal the
# bounds of __TEXT,__cs<guard>, and each named function's address must fall in its guard's range
# and in no other's.
check_link_map() {
    python3 - "$@" <<'PY'
import struct, subprocess, sys

path, *expectations = sys.argv[1:]
data = open(path, "rb").read()
magic, _, _, _, ncmds, _, _, _ = struct.unpack_from("<IiiIIIII", data, 0)
assert magic == 0xFEEDFACF, "not a 64-bit little-endian Mach-O"
segments, sections, offset = [], {}, 32
for _ in range(ncmds):
    cmd, cmdsize = struct.unpack_from("<II", data, offset)
    if cmd == 0x19:  # LC_SEGMENT_64
        segname, vmaddr, vmsize, fileoff, filesize, _, _, nsects, _ = struct.unpack_from("<16sQQQQiiII", data, offset + 8)
        segments.append((vmaddr, vmsize, fileoff, filesize))
        for i in range(nsects):
            sect = struct.unpack_from("<16s16sQQ", data, offset + 72 + 80 * i)
            name = (sect[1].rstrip(b"\0") + b"," + sect[0].rstrip(b"\0")).decode()
            sections[name] = (sect[2], sect[2] + sect[3])
    offset += cmdsize

symbols = {}
for line in subprocess.run(["llvm-nm", "--defined-only", path], capture_output=True, text=True, check=True).stdout.splitlines():
    fields = line.split()
    if len(fields) == 3:
        symbols[fields[2]] = int(fields[0], 16)

def read_pointer(address):
    for vmaddr, vmsize, fileoff, filesize in segments:
        if vmaddr <= address < vmaddr + filesize:
            return struct.unpack_from("<Q", data, fileoff + address - vmaddr)[0]
    raise SystemExit(f"no file data at {address:#x}")

failures = []
ranges_at = symbols["_probe_ranges"]
resolved = [read_pointer(ranges_at + 8 * i) for i in range(4)]
guards = {}
for index, expectation in enumerate(expectations):
    guard, names = expectation.split("=")
    section = f"__TEXT,__cs{guard}"
    if section not in sections:
        failures.append(f"no section {section}")
        continue
    start, end = resolved[2 * index], resolved[2 * index + 1]
    if (start, end) != sections[section]:
        failures.append(f"{guard}: linker bounds [{start:#x}, {end:#x}) != section {section} "
                        f"[{sections[section][0]:#x}, {sections[section][1]:#x})")
    if not start < end:
        failures.append(f"{guard}: empty range")
    guards[guard] = ((start, end), names.split(","))
for guard, (_, names) in guards.items():
    for name in names:
        address = symbols.get("_" + name)
        if address is None:
            failures.append(f"{name}: not in the image")
            continue
        owners = [g for g, ((s, e), _) in guards.items() if s <= address < e]
        if owners != [guard]:
            failures.append(f"{name} at {address:#x} maps to {owners or 'no guard'}, expected {guard}")
unguarded = symbols["_probe_unguarded"]
if any(s <= unguarded < e for (s, e), _ in guards.values()):
    failures.append("probe_unguarded maps to a guard")
for failure in failures:
    print("   ", failure)
sys.exit(1 if failures else 0)
PY
}

GUARD_MAP=(kvo=probe_kvo_pragma,probe_kvo_pragma_2,probe_kvo_attribute notification=probe_notification_pragma)

for target in "${APPLE_TARGETS[@]}"; do
    arch="${target%%-*}"
    obj="$WORK/probe-$target.o"
    if ! apple_cc -target "$target" -I"$SECTION_HEADER_DIR" -c "$WORK/probe.c" -o "$obj" 2>"$WORK/err"; then
        fail "$target: section probe does not compile"; sed 's/^/    /' "$WORK/err"; continue
    fi
    nm_out="$(llvm-nm -m "$obj")"
    ok=1
    expect_symbol "$nm_out" _probe_kvo_pragma __cskvo || ok=0
    expect_symbol "$nm_out" _probe_kvo_pragma_2 __cskvo || ok=0
    expect_symbol "$nm_out" _probe_kvo_attribute __cskvo || ok=0
    expect_symbol "$nm_out" _probe_notification_pragma __csnotification || ok=0
    expect_symbol "$nm_out" _probe_unguarded __text || ok=0
    if ! llvm-objdump --macho --private-headers "$obj" | grep -A12 "sectname __cskvo" | grep -q PURE_INSTRUCTIONS; then
        fail "$target: __cskvo is not marked pure_instructions"; ok=0
    fi
    [ $ok = 1 ] && pass "$target: C functions in their guard sections"

    if apple_cc -target "$target" -x objective-c -fobjc-runtime=ios-16.0 -I"$SECTION_HEADER_DIR" \
        -c "$WORK/probe.m" -o "$WORK/probe-$target-m.o" 2>"$WORK/err"; then
        nm_out="$(llvm-nm -m "$WORK/probe-$target-m.o")"
        ok=1
        expect_symbol "$nm_out" '-[CSProbeRoot kvoValue]' __cskvo || ok=0
        expect_symbol "$nm_out" '-[CSProbeRoot notificationValue]' __csnotification || ok=0
        [ $ok = 1 ] && pass "$target: Objective-C methods in their guard sections"
    else
        fail "$target: Objective-C section probe does not compile"; sed 's/^/    /' "$WORK/err"
    fi

    # Link: the target's code, re-assembled without the platform load command (see the top).
    asm="$WORK/probe-$target.s"
    if ! apple_cc -target "$target" -I"$SECTION_HEADER_DIR" -S "$WORK/probe.c" -o "$asm" 2>"$WORK/err" ||
        ! grep -v '^[[:space:]]*\.build_version' "$asm" >"$asm.noplatform.s" ||
        ! clang -target "$arch-apple-none-macho" -c "$asm.noplatform.s" -o "$obj.noplatform.o" 2>>"$WORK/err"; then
        fail "$target: cannot assemble the section probe for linking"; sed 's/^/    /' "$WORK/err"; continue
    fi
    dylib="$WORK/probe-$target.dylib"
    if ! ld64.lld -arch "$arch" -platform_version macos 13.0 13.0 -dylib -no_fixup_chains \
        -install_name @rpath/probe.dylib "$obj.noplatform.o" -o "$dylib" 2>"$WORK/err"; then
        fail "$target: ld64.lld cannot link the section probe"; sed 's/^/    /' "$WORK/err"; continue
    fi
    if check_link_map "$dylib" "${GUARD_MAP[@]}"; then
        pass "$target: section\$start/section\$end are the sections' bounds; every function maps to its guard"
    else
        fail "$target: linked guard ranges"
    fi
done

# The guard files' own section lines: each guard file opens exactly one section, with
# CS_GUARD_CODE_SECTION and the tag its CS_GUARD_DEFINE* names, and that line (with its
# CS_GUARD_METHOD tags) compiles for every Apple target. The files themselves need Foundation.
GUARD_DIR="$ROOT/Sources/_CrashShieldRuntime/Guards"
guard_lines="$WORK/guard-lines.c"
echo '#include "CSGuardSection.h"' >"$guard_lines"
guard_files_ok=1
for file in "$GUARD_DIR"/CSGuard_*.m; do
    name="${file#"$ROOT"/}"
    opens="$(grep -nE '^[[:space:]]*(CS_GUARD_CODE_SECTION[[:space:]]*\(|#[[:space:]]*pragma[[:space:]]+clang[[:space:]]+section)' "$file" || true)"
    if [ "$(grep -c . <<<"$opens")" -ne 1 ] || [ -z "$opens" ]; then
        fail "$name: expected one section opening, found: ${opens:-none}"; guard_files_ok=0; continue
    fi
    line_no="${opens%%:*}"
    section_tag="$(sed -nE 's/^[[:space:]]*CS_GUARD_CODE_SECTION[[:space:]]*\([[:space:]]*([A-Za-z0-9_]+).*/\1/p' <<<"${opens#*:}")"
    define_tag="$(sed -nE 's/.*CS_GUARD_DEFINE[A-Z_]*\([[:space:]]*[A-Za-z0-9_]+[[:space:]]*,[[:space:]]*([A-Za-z0-9_]+).*/\1/p' "$file" | head -1)"
    if [ -n "$section_tag" ] && [ "$section_tag" != "$define_tag" ]; then
        fail "$name:$line_no: section tag '$section_tag' differs from the guard's tag '${define_tag:-?}'"; guard_files_ok=0
    fi
    echo "#line $line_no \"$name\"" >>"$guard_lines"
    echo "${opens#*:}" >>"$guard_lines"
    { grep -oE 'CS_GUARD_METHOD\([A-Za-z0-9_]+\)' "$file" || true; } | sort -u | while read -r method; do
        echo "void cs_probe_${method//[^A-Za-z0-9_]/_}(void) $method;"
    done >>"$guard_lines"
done
for target in "${APPLE_TARGETS[@]}"; do
    if apple_cc -target "$target" -I"$SECTION_HEADER_DIR" -fsyntax-only "$guard_lines" 2>"$WORK/err"; then
        [ $guard_files_ok = 1 ] && pass "$target: every guard file's section line"
    else
        fail "$target: guard files' section lines"; sed 's/^/    /' "$WORK/err"
    fi
done

# ---------------------------------------------------------------------------------------------
# 2. Pure C files.

[ ${#PURE_C_FILES[@]} -gt 0 ] || echo "note: PURE_C_FILES is empty"
PUBLIC_INCLUDES=()
for dir in "$ROOT"/Sources/*/include; do PUBLIC_INCLUDES+=(-I"$dir"); done
pure_c_check() { # <file> <target>
    apple_cc -target "$2" -fsyntax-only -x c -I"$(dirname "$1")" "${PUBLIC_INCLUDES[@]}" "$1"
}
for file in "${PURE_C_FILES[@]}"; do
    ok=1
    for target in "${APPLE_TARGETS[@]}"; do
        if ! pure_c_check "$ROOT/$file" "$target" 2>"$WORK/err"; then
            fail "$target: $file needs more than the freestanding headers"; sed 's/^/    /' "$WORK/err"; ok=0
        fi
    done
    [ $ok = 1 ] && pass "$file: freestanding, every Apple target"
done

# Every other C file of the C targets: needs Apple's SDK (named, not compiled here), or belongs in
# PURE_C_FILES. A file fails when it compiles without the SDK, or when clang reports any error
# besides the missing system header it stops at.
# classify_unlisted <file>: prints "pure", "sdk" (stops at a missing system header and nothing
# else), or "error" followed by clang's messages.
classify_unlisted() {
    if pure_c_check "$1" "${APPLE_TARGETS[0]}" 2>"$WORK/classify"; then
        echo pure
    elif grep -q "fatal error: '.*' file not found" "$WORK/classify" &&
        ! grep -v "file not found" "$WORK/classify" | grep -q "error:"; then
        echo sdk
    else
        echo error; cat "$WORK/classify"
    fi
}
needs_sdk=()
for dir in "${C_TARGET_DIRS[@]}"; do
    for path in "$ROOT/$dir"/*.c; do
        file="${path#"$ROOT"/}"
        case "$file" in *_elf.c | *_linux.c) continue ;; esac
        listed=0
        for pure in "${PURE_C_FILES[@]}"; do [ "$pure" = "$file" ] && listed=1; done
        [ $listed = 1 ] && continue
        verdict="$(classify_unlisted "$path")"
        case "$verdict" in
            pure) fail "$file compiles with the freestanding headers only: add it to PURE_C_FILES" ;;
            sdk) needs_sdk+=("$(basename "$file")") ;;
            *) fail "${APPLE_TARGETS[0]}: $file fails before reaching a missing SDK header"
               sed '1d; s/^/    /' <<<"$verdict" ;;
        esac
    done
done
echo "note: need Apple's SDK, not compiled here: ${needs_sdk[*]}"

# ---------------------------------------------------------------------------------------------
# 3. Linux and ELF files are empty for Apple targets.

# preprocesses_to_nothing <file> <target>: with clang's freestanding headers only, so an #include
# that escaped the guard fails too.
preprocesses_to_nothing() {
    local out
    out="$(apple_cc -target "$2" -E -P -x c -I"$(dirname "$1")" "${PUBLIC_INCLUDES[@]}" "$1")" || return 1
    [ -z "$(tr -d '[:space:]' <<<"$out")" ] || { sed -n '/[^[:space:]]/{p;q}' <<<"$out" | sed 's/^/    leaked: /'; return 1; }
}
platform_files=()
while IFS= read -r path; do platform_files+=("$path"); done < <(find "$ROOT/Sources" \( -name '*_elf.c' -o -name '*_linux.c' \) | sort)
[ ${#platform_files[@]} -gt 0 ] || fail "no *_elf.c / *_linux.c file found under Sources/"
for path in "${platform_files[@]}"; do
    file="${path#"$ROOT"/}"
    ok=1
    for target in "${APPLE_TARGETS[@]}"; do
        if ! preprocesses_to_nothing "$path" "$target" >"$WORK/leak" 2>&1; then
            fail "$target: $file is not empty (a Linux/ELF construct outside its guard)"; sed 's/^/    /' "$WORK/leak"; ok=0
        fi
    done
    [ $ok = 1 ] && pass "$file: empty for every Apple target"
done

# ---------------------------------------------------------------------------------------------
# 4. Canaries: each must be rejected, or the checks above could not fail.

canary_target=arm64-apple-ios16
printf '#pragma clang section text = "cs_guard_kvo"\nint f(void) { return 0; }\n' >"$WORK/old-pragma.c"
if apple_cc -target "$canary_target" -fsyntax-only "$WORK/old-pragma.c" 2>/dev/null; then
    fail "canary: the old ELF section pragma compiles for $canary_target"
else
    pass "canary: the old ELF section pragma is rejected for $canary_target"
fi

printf '#include "CSGuardSection.h"\nCS_GUARD_CODE_SECTION(notifications)\n' >"$WORK/long-tag.c"
for target in "$canary_target" x86_64-linux-gnu; do
    if apple_cc -target "$target" -I"$SECTION_HEADER_DIR" -fsyntax-only "$WORK/long-tag.c" 2>/dev/null; then
        fail "canary: a 13-character tag compiles for $target"
    else
        pass "canary: a 13-character tag is rejected for $target"
    fi
done

printf '#include <string.h>\nint f(const char *s) { return (int)strlen(s); }\n' >"$WORK/hosted.c"
if pure_c_check "$WORK/hosted.c" "$canary_target" 2>/dev/null; then
    fail "canary: the freestanding compile finds <string.h> (host headers leak in)"
else
    pass "canary: the freestanding compile rejects <string.h>"
fi

printf '#include <stdint.h>\nuint32_t canary_pure(void) { return 1; }\n' >"$WORK/unlisted_pure.c"
printf '#include <stdint.h>\nuint32_t canary_typo(void) { return missing_name; }\n#include <pthread.h>\n' >"$WORK/unlisted_error.c"
pure_verdict="$(classify_unlisted "$WORK/unlisted_pure.c")"
sdk_verdict="$(classify_unlisted "$WORK/hosted.c")"
error_verdict="$(classify_unlisted "$WORK/unlisted_error.c")"
error_verdict="${error_verdict%%$'\n'*}"
if [ "$pure_verdict/$sdk_verdict/$error_verdict" = "pure/sdk/error" ]; then
    pass "canary: an unlisted file is told apart: freestanding / needs the SDK / other error"
else
    fail "canary: unlisted files classified $pure_verdict/$sdk_verdict/$error_verdict, expected pure/sdk/error"
fi

mkdir -p "$WORK/canary"
printf '#if defined(__linux__)\n#include <link.h>\nint canary_inside(void);\n#endif\nint canary_outside(void);\n' \
    >"$WORK/canary/canary_linux.c"
printf '#if defined(__linux__)\n#include <link.h>\nint canary_inside(void);\n#endif\n' >"$WORK/canary/guarded_linux.c"
if preprocesses_to_nothing "$WORK/canary/canary_linux.c" "$canary_target" >/dev/null 2>&1; then
    fail "canary: a Linux file with a declaration outside its guard counts as empty"
elif ! preprocesses_to_nothing "$WORK/canary/guarded_linux.c" "$canary_target" >/dev/null 2>&1; then
    fail "canary: a wholly guarded Linux file does not count as empty"
else
    pass "canary: a line outside a Linux file's guard is found; a wholly guarded file passes"
fi

if [ -f "$WORK/probe-$canary_target.dylib" ]; then
    if check_link_map "$WORK/probe-$canary_target.dylib" kvo=probe_notification_pragma notification=probe_kvo_pragma \
        >/dev/null; then
        fail "canary: the link-level checker accepts swapped guards"
    else
        pass "canary: the link-level checker rejects swapped guards"
    fi
else
    fail "canary: no linked probe for $canary_target"
fi

if [ "$FAILURES" -ne 0 ]; then
    echo "check-apple-targets: $FAILURES check(s) failed"
    exit 1
fi
echo "check-apple-targets: all checks passed"
