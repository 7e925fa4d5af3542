#!/usr/bin/env bash
# scripts/check-portability.sh — no Linux-only API outside a Linux guard in Swift sources, no
# ELF- or Linux-only construct outside an ELF/Linux guard in C and Objective-C sources, judged by
# whether an iOS or macOS build compiles the line. The patterns, and why each is
# Linux-only, are in docs/PORTABILITY.md; the scanner is scripts/portability_scan.py.
#
# Prints each finding as `path:line: pattern-id: text (...)` and exits non-zero when there is one,
# or when the scanner fails its self-test or canaries, or when docs/PORTABILITY.md and the
# scanner's pattern list disagree.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SCAN=(python3 "$ROOT/scripts/portability_scan.py")
DOC="$ROOT/docs/PORTABILITY.md"
# Tests/ holds the scenarios, test seams and probe programs that used to sit in Sources/.
SCANNED=(Sources Examples Package.swift Tests/Scenarios Tests/Support Tests/Probes Tests/TestDoubles)

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
status=0

# 1. The scanner's own cases (comments, strings, #elif/#else chains, negated and compound guards).
"${SCAN[@]}" --self-test || status=1

# 2. Canaries: one unguarded use per language must be reported, guarded uses must not.
mkdir -p "$WORK/violation" "$WORK/guarded"
cat >"$WORK/violation/canary.c" <<'EOF'
#include <link.h>
int canary(void) { return 0; }
EOF
cat >"$WORK/violation/canary.swift" <<'EOF'
import Glibc
EOF
cat >"$WORK/guarded/canary.m" <<'EOF'
#if defined(__linux__)
#include <link.h>
#endif
#if defined(__APPLE__)
#include <mach-o/dyld.h>
#else
extern const char __start_cs_guard_canary[];
#endif
EOF
cat >"$WORK/guarded/canary.swift" <<'EOF'
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
EOF
if "${SCAN[@]}" "$WORK/violation" >"$WORK/violation.out"; then
    echo "FAIL: canary: unguarded Linux-only uses were not reported"; status=1
elif [ "$(grep -c ': c-link-h: \|: swift-import-glibc: ' "$WORK/violation.out")" -ne 2 ]; then
    echo "FAIL: canary: expected c-link-h and swift-import-glibc, got:"; cat "$WORK/violation.out"; status=1
else
    echo "ok:   canary: unguarded uses reported (C and Swift)"
fi
if "${SCAN[@]}" "$WORK/guarded" >"$WORK/guarded.out"; then
    echo "ok:   canary: guarded uses accepted (Objective-C and Swift)"
else
    echo "FAIL: canary: guarded uses were reported:"; cat "$WORK/guarded.out"; status=1
fi

# 3. The documentation lists exactly the scanner's patterns.
"${SCAN[@]}" --list-patterns | sort >"$WORK/ids.scanner"
grep -oE '^\| `(c|swift)-[a-z0-9-]+`' "$DOC" | sed -E 's/^\| `(.*)`$/\1/' | sort >"$WORK/ids.doc"
if diff -u "$WORK/ids.scanner" "$WORK/ids.doc" >"$WORK/ids.diff"; then
    echo "ok:   docs/PORTABILITY.md lists every pattern"
else
    echo "FAIL: docs/PORTABILITY.md and the scanner list different patterns (- scanner, + doc):"
    sed -n '3,$p' "$WORK/ids.diff"; status=1
fi

# 4. The sources.
cd "$ROOT"
if "${SCAN[@]}" "${SCANNED[@]}"; then
    echo "ok:   no Linux-only construct where an Apple build compiles (${SCANNED[*]})"
else
    echo "FAIL: Linux-only constructs where an Apple build compiles (above; docs/PORTABILITY.md)"
    status=1
fi

# 5. Swift APIs newer than each package's `platforms:` (scripts/swift_availability_scan.py, which
#    reads the availability from the toolchain's .swiftinterface files): its self-test (a use of
#    Mutex must be reported, one under #available or #if os(Linux) must not), then both packages.
AVAILABILITY=(python3 "$ROOT/scripts/swift_availability_scan.py")
if "${AVAILABILITY[@]}" --self-test; then
    echo "ok:   availability scanner self-test (Mutex reported; #available, @available, #if os(Linux) respected)"
else
    echo "FAIL: availability scanner self-test"; status=1
fi
for package in . Collector; do
    if "${AVAILABILITY[@]}" "$package"; then
        echo "ok:   $package: no Swift API newer than its platforms"
    else
        echo "FAIL: $package: Swift APIs newer than its declared platforms (above)"; status=1
    fi
done
exit $status
