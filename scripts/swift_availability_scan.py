#!/usr/bin/env python3
"""Swift APIs newer than a package's declared platforms (used by scripts/check-portability.sh).

On Linux the compiler ignores Apple availability, so a use of `Mutex` (macOS 15, iOS 18) compiles
here and fails on a Mac when the package declares macOS 13. The toolchain's own .swiftinterface
files keep the attributes (`@available(macOS 15.0, iOS 18.0, ...)`): this scanner reads the
top-level declarations of the standard library's modules from them, keeps those introduced after
the package's `platforms:`, and reports every use of one in the package's Swift sources that is
not inside a matching `@available` declaration or `if #available` block, nor in code compiled
only on Linux (`#if os(Linux)`, `#if canImport(Glibc)`).

Limits: top-level names only (types, global functions and typealiases); a member added later
(`String.init(validating:)`) is not seen. A name the package declares itself is not reported.

usage: swift_availability_scan.py PACKAGE_DIR [--interfaces DIR] [--self-test]
Prints `path:line: name needs <platform> <version>, the package declares <version>` per finding;
exits 1 when there is one.
"""
import os
import re
import sys

PLATFORMS = {"macOS": "macOS", "iOS": "iOS", "macCatalyst": "macCatalyst", "visionOS": "visionOS"}
# The standard library's modules that a package may import (Foundation on Linux carries no Apple
# availability, and the Apple SDK's own modules are not on this machine).
MODULES = ["Swift", "_Concurrency", "Synchronization", "_StringProcessing", "RegexBuilder", "Observation",
           "Distributed", "Cxx"]
DECL = re.compile(r"^(?:@\w+(?:\([^)]*\))?\s+)*(?:public\s+|open\s+|final\s+|@frozen\s+|@usableFromInline\s+|nonisolated\s+|"
                  r"@inlinable\s+|@_alwaysEmitIntoClient\s+|@_transparent\s+|~?\w*\s+)*?"
                  r"(?:struct|class|enum|protocol|actor|typealias|func|macro)\s+([A-Za-z_]\w*)")
AVAILABLE = re.compile(r"@available\(([^)]*)\)")
VERSION = re.compile(r"\b(macOS|iOS|macCatalyst|visionOS)\s+(\d+(?:\.\d+)*)")


def version_tuple(text):
    """"13", "13.0" and "13.0.0" alike: (13, 0, 0)."""
    parts = [int(part) for part in text.split(".")][:3]
    return tuple(parts + [0] * (3 - len(parts)))


def declared_platforms(package_dir):
    """`platforms:` of Package.swift: {"macOS": (13,), ...}. Mac Catalyst follows iOS when absent."""
    text = open(os.path.join(package_dir, "Package.swift")).read()
    found = {}
    for name, version in re.findall(r"\.(macOS|iOS|macCatalyst|visionOS)\(\s*\.v(\d+(?:_\d+)*)\s*\)", text):
        found[name] = version_tuple(version.replace("_", "."))
    if "iOS" in found and "macCatalyst" not in found:
        found["macCatalyst"] = found["iOS"]
    return found


def interface_declarations(interfaces_dir):
    """{name: {platform: version}}: the earliest availability among a name's top-level declarations."""
    names = {}
    for module in MODULES:
        directory = os.path.join(interfaces_dir, module + ".swiftmodule")
        if not os.path.isdir(directory):
            continue
        files = [f for f in os.listdir(directory) if f.endswith(".swiftinterface") and ".private." not in f]
        if not files:
            continue
        pending = []
        for line in open(os.path.join(directory, sorted(files)[0]), encoding="utf-8", errors="replace"):
            if not line or line[0] in " \t}":
                pending = [] if line.strip() == "" or line[0] == "}" else pending
                continue
            pending += AVAILABLE.findall(line)
            match = DECL.match(line)
            if not match:
                if not line.startswith("@"):
                    pending = []
                continue
            versions = {}
            for attribute in pending:
                for platform, version in VERSION.findall(attribute):
                    versions[platform] = version_tuple(version)
            name = match.group(1)
            earlier = names.get(name)
            if earlier is None:
                names[name] = versions
            else:  # overloads: the name is usable from the earliest of them
                names[name] = {p: min(v, earlier[p]) for p, v in versions.items() if p in earlier}
            pending = []
    return names


def strip_code(text):
    """Comments and string literals blanked (line structure kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('"""', i):
            j = text.find('"""', i + 3)
            j = n if j < 0 else j + 3
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] not in '"\n':
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (min(j + 1, n) - i))
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


LINUX_ONLY = re.compile(r"^\s*#if\s+(os\(Linux\)|canImport\(Glibc\)|canImport\(Musl\))\s*$")


def scan_source(path, text, newer, declared, own_names):
    findings = []
    code = strip_code(text)
    conditions = []          # per #if: True while inside a Linux-only branch
    scopes = []              # per open brace: the platform versions it guarantees
    pending_availability = None
    for number, line in enumerate(code.split("\n"), 1):
        stripped = line.strip()
        if stripped.startswith("#if"):
            conditions.append(bool(LINUX_ONLY.match(line)))
            continue
        if stripped.startswith("#elseif") or stripped.startswith("#else"):
            if conditions:
                conditions[-1] = False
            continue
        if stripped.startswith("#endif"):
            if conditions:
                conditions.pop()
            continue
        for attribute in re.findall(r"[@#]available\(([^)]*)\)", line):
            pending_availability = {p: version_tuple(v) for p, v in VERSION.findall(attribute)}
        guaranteed = {}
        for scope in scopes:
            for platform, version in scope.items():
                guaranteed[platform] = max(version, guaranteed.get(platform, ()))
        if pending_availability:
            for platform, version in pending_availability.items():
                guaranteed[platform] = max(version, guaranteed.get(platform, ()))
        if not any(conditions):
            for match in re.finditer(r"(?<![\w.])(?:Swift\.|Synchronization\.)?([A-Z_a-z]\w*)\b", line):
                name = match.group(1)
                if name not in newer or name in own_names:
                    continue
                for platform, needed in newer[name].items():
                    floor = max(declared.get(platform, ()), guaranteed.get(platform, ()))
                    if platform in declared and needed > floor:
                        findings.append(f"{path}:{number}: {name} needs {platform} {'.'.join(map(str, needed[:2]))}, "
                                        f"the package declares {'.'.join(map(str, declared[platform][:2]))}")
                        break
        for char in line:
            if char == "{":
                scopes.append(pending_availability or {})
                pending_availability = None
            elif char == "}" and scopes:
                scopes.pop()
    return findings


def swift_files(package_dir):
    for top in ("Sources", "Tests", "Examples"):
        root = os.path.join(package_dir, top)
        for directory, subdirectories, files in os.walk(root):
            subdirectories[:] = [d for d in subdirectories if not d.startswith(".")]
            for name in sorted(files):
                if name.endswith(".swift"):
                    yield os.path.join(directory, name)


def scan_package(package_dir, interfaces_dir):
    declared = declared_platforms(package_dir)
    if not declared:
        return []
    names = interface_declarations(interfaces_dir)
    newer = {name: {p: v for p, v in versions.items() if p in declared and v > declared[p]}
             for name, versions in names.items()}
    newer = {name: versions for name, versions in newer.items() if versions}
    files = list(swift_files(package_dir))
    own = set()
    for path in files:
        own.update(re.findall(r"\b(?:struct|class|enum|protocol|actor|typealias)\s+([A-Za-z_]\w*)",
                              strip_code(open(path, encoding="utf-8", errors="replace").read())))
    findings = []
    for path in files:
        findings += scan_source(os.path.relpath(path), open(path, encoding="utf-8", errors="replace").read(),
                                newer, declared, own)
    return findings


def self_test(interfaces_dir):
    names = interface_declarations(interfaces_dir)
    problems = []
    for name, platform, version in [("Mutex", "macOS", (15, 0, 0)), ("Atomic", "iOS", (18, 0, 0)), ("Duration", "macOS", (13, 0, 0))]:
        if names.get(name, {}).get(platform) != version:
            problems.append(f"self-test: {name} should need {platform} {version}, read {names.get(name)}")
    newer = {"Mutex": {"macOS": (15, 0, 0)}}
    declared = {"macOS": (14, 0, 0)}
    cases = [
        ("let m = Mutex<Int>(0)\n", 1),
        ("let m = Synchronization.Mutex<Int>(0)\n", 1),
        ("// Mutex in a comment\nlet s = \"Mutex\"\n", 0),
        ("if #available(macOS 15, *) {\n    let m = Mutex<Int>(0)\n}\nlet n = Mutex<Int>(1)\n", 1),
        ("@available(macOS 15.0, *)\nfinal class Box {\n    let m = Mutex<Int>(0)\n}\n", 0),
        ("#if os(Linux)\nlet m = Mutex<Int>(0)\n#else\nlet n = Mutex<Int>(0)\n#endif\n", 1),
        ("let x = value.Mutex\n", 0),
    ]
    for index, (source, expected) in enumerate(cases):
        found = scan_source(f"case{index}.swift", source, newer, declared, set())
        if len(found) != expected:
            problems.append(f"self-test: case {index} expected {expected} finding(s), got {found}")
    return problems


def main(argv):
    args = argv[1:]
    interfaces = None
    if "--interfaces" in args:
        index = args.index("--interfaces")
        interfaces = args[index + 1]
        del args[index:index + 2]
    if interfaces is None:
        import shutil
        swift = shutil.which("swift")
        if swift is None:
            sys.exit("swift_availability_scan: swift not found")
        interfaces = os.path.join(os.path.dirname(os.path.realpath(swift)), "..", "lib", "swift", "linux")
    if "--self-test" in args:
        problems = self_test(interfaces)
        for problem in problems:
            print(problem)
        return 1 if problems else 0
    findings = []
    for package in args:
        findings += scan_package(package, interfaces)
    for finding in findings:
        print(finding)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
