#!/usr/bin/env bash
# scripts/check-class-refs.sh — the runtime's Objective-C looks classes up by name only where it
# must, so that neither a start nor a hook's call costs more the more classes the app has.
#
# GCC's runtime ABI has no class references: clang compiles `[NSArray array]` to
# objc_lookup_class("NSArray"), and GNU libobjc finds a name by walking one chain of a fixed
# 1,024-bucket table, about 50 entries long at +50,000 classes. The runtime writes CS_CLASS(Name)
# instead (Backend/CSObjC.h: the class found once per call site). This check compiles every
# Objective-C file of Sources/_CrashShieldRuntime as SwiftPM's release build compiles it (clang
# -O2, x86_64 Linux, GNUstep), finds each call the compiler emits for a class reference
# (objc_lookup_class, objc_get_class) with the name it passes, and fails on any name outside the
# allowed list (a name that comes from data, a hook spec's root or an app's configured class, is
# looked up with objc_lookUpClass where the code says how often):
#   - NSAutoreleasePool: what @autoreleasepool compiles to on this runtime (the one pool syntax
#     that compiles under ARC and MRC, Backend/CSObjC.h);
#   - NSArray in cs_containers_canary: the array-literal canary must write a literal.
# A canary file with a plain `[NSArray array]` must be rejected, so the check is shown able to fail.
# Needs the GNUstep headers of scripts/bootstrap.sh and the Swift toolchain's clang (or $CLANG).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
clang="${CLANG:-$(dirname "$(readlink -f "$(command -v swift)")")/clang}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# shellcheck source=lib/runtime-objc.sh
. scripts/lib/runtime-objc.sh
assemble() { # <source> <assembly>
    runtime_objc_compile "$2" "$1" -S
}

# Prints "<function> <name>" for every objc_lookup_class call of <assembly> whose name is not
# allowed; prints nothing when none.
lookups_outside_list() { # <assembly>
    python3 - "$1" <<'PY'
import re, sys
text = open(sys.argv[1]).read().splitlines()
strings, label = {}, None
for line in text:
    m = re.match(r'^(\.L[\w.$]+):', line)
    if m:
        label = m.group(1)
        continue
    m = re.match(r'\s+\.(?:asciz|string)\s+"(.*)"', line)
    if m and label:
        strings[label] = m.group(1)
    label = None if not line.startswith('\t.') else label
function, argument, found = '?', None, []
for line in text:
    m = re.match(r'^([A-Za-z_][\w.$]*):', line)
    if m:
        function, argument = m.group(1), None
        continue
    m = re.search(r'leaq?\s+(\.L[\w.$]+)\(%rip\),\s*%rdi', line)
    if m:
        argument = strings.get(m.group(1), m.group(1))
        continue
    if re.search(r'\bcall[q]?\s+objc_(lookup_class|get_class)(@PLT)?\b', line):
        name = argument or '?'
        allowed = name == 'NSAutoreleasePool' or (name == 'NSArray' and function.startswith('cs_containers_canary'))
        if not allowed:
            found.append(f'{function} {name}')
for item in found:
    print(item)
PY
}

status=0
checked=0
while IFS= read -r source; do
    assembly="$work/$(basename "$source" .m).s"
    assemble "$source" "$assembly"
    checked=$((checked + 1))
    report=$(lookups_outside_list "$assembly")
    if [ -n "$report" ]; then
        echo "check-class-refs: FAIL $source looks classes up by name (write CS_CLASS(Name)):" >&2
        echo "$report" | sed 's/^/  /' >&2
        status=1
    fi
done < <(find Sources/_CrashShieldRuntime -name '*.m' ! -name 'CSBackend_Apple.m' | sort)
[ "$checked" -gt 0 ] || { echo "check-class-refs: FAIL no Objective-C file found" >&2; status=1; }
[ "$status" -eq 0 ] && echo "check-class-refs: $checked Objective-C files, no class looked up by name outside the allowed list"

# Canary: a plain class receiver must be reported.
cat > "$work/canary.m" <<'PROBE'
#import "CSObjC.h"
id cs_class_refs_canary(void) { return [NSArray array]; }
id cs_class_refs_canary_cached(void) { return [CS_CLASS(NSArray) array]; }
PROBE
assemble "$work/canary.m" "$work/canary.s"
canary_report=$(lookups_outside_list "$work/canary.s")
if [ "$canary_report" != "cs_class_refs_canary NSArray" ]; then
    echo "check-class-refs: FAIL canary: expected exactly 'cs_class_refs_canary NSArray', got: ${canary_report:-nothing}" >&2
    status=1
else
    echo "check-class-refs: canary (plain [NSArray array]) reported, its CS_CLASS twin not"
fi
exit "$status"
