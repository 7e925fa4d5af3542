#!/usr/bin/env python3
"""Reads clang's ARC AST dump (-Xclang -ast-dump) on stdin and prints every struct field or
instance variable declared in a project file (a path under Sources/) whose object type is strong
only because nothing was written: `id observer;` is __strong under ARC and unretained by
convention under MRC, so the two builds would disagree on who owns it. A field written
`__strong`, `CS_UNRETAINED` (__unsafe_unretained) or `__weak` is explicit and passes: clang then
starts the declaration's range at the qualifier's built-in macro.

Output: one `file:line: field 'name' (type)` per finding; exit status 1 if any.
"""
import re
import sys

# A node line: indentation/tree drawing, kind, address, <range>, location, name, 'type' ...
NODE = re.compile(r"^[\s|`-]*(FieldDecl|ObjCIvarDecl) 0x[0-9a-f]+ <([^>]*)>(.*)$")
# Every location clang prints: either a full `path:line:col`, `line:L:C` or `col:C`. A full path
# changes the "current file" for the locations that follow, in dump order.
FULL = re.compile(r"(?:^|[<, ])((?:/|Sources/|\./)[^:<>, ]+\.(?:m|mm|h|c)):(\d+):\d+")
LINE = re.compile(r"(?:^|[<, ])line:(\d+):\d+")


def main() -> int:
    current_file = None
    current_line = 0
    findings = []
    for raw in sys.stdin:
        node = NODE.match(raw)
        # Track the position before judging this node: its own range may name a new file.
        for m in re.finditer(r"(?:(?:/|Sources/|\./)[^:<>, ]+\.(?:m|mm|h|c)):\d+:\d+|line:\d+:\d+", raw):
            token = m.group(0)
            if token.startswith("line:"):
                current_line = int(token.split(":")[1])
            else:
                path, line, _ = token.rsplit(":", 2)
                current_file, current_line = path, int(line)
        if not node:
            continue
        kind, rng, rest = node.groups()
        type_match = re.search(r"'([^']*)'", rest)
        if not type_match:
            continue
        type_text = type_match.group(1)
        if "__strong" not in type_text:
            continue
        if rng.startswith("<built-in") or "<scratch space>" in rng:
            continue  # an ownership qualifier was written
        if current_file is None or not re.match(r"^(\./)?Sources/", current_file):
            continue
        name_match = re.search(r" (?:col:\d+|line:\d+:\d+|\S+:\d+:\d+) (?:(?:invalid|used|referenced) )*(\w+) '", rest)
        name = name_match.group(1) if name_match else "?"
        findings.append(f"{current_file}:{current_line}: {kind} '{name}' ({type_text}) has no written ownership")
    for finding in sorted(set(findings)):
        print(finding)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
