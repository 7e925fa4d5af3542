#!/usr/bin/env python3
"""Finds Linux-only and ELF-only constructs that an Apple build would compile.

Usage: portability_scan.py [--list-patterns] [--self-test] PATH...

Each Swift, C, Objective-C and Objective-C++ file under the given paths is read with comments
removed, and every line is judged per Apple platform the package declares (iOS, macOS, Mac
Catalyst, visionOS): is it compiled there? That is decided by evaluating the enclosing
`#if`/`#ifdef`/`#elif`/`#else` (C) or `#if`/`#elseif`/`#else` (Swift) conditions with that
platform's answers (C: __APPLE__ and __MACH__ defined, __linux__, __ELF__, __GLIBC__, GNUSTEP ...
undefined, TARGET_OS_* per platform; Swift: os(Linux) and canImport(Glibc) false, os(...),
canImport(...) and targetEnvironment(macCatalyst) per platform). A condition the scanner cannot
decide (an unknown macro, arch(), a compilation flag) counts as "may be compiled", so code is only
excused by a condition that is false on that platform; `#if defined(__APPLE__) ... #else ...
#endif` excuses its #else branch.

A finding is a line compiled on some Apple platform that uses a pattern unavailable there:
    path:line: pattern-id: matched text (unavailable on iOS, macOS, ...; Apple: equivalent)
A file named Package.swift is also read as the manifest: its `platforms:` must declare the minimum
versions the API needs (MANIFEST_MINIMUMS, id swift-package-platforms).
The patterns and their reasons are in docs/PORTABILITY.md (every id there, checked by
scripts/check-portability.sh). Exit status: 1 with findings, 0 without, 2 on usage errors.
"""
import os
import re
import sys
from dataclasses import dataclass

# The Apple platforms Package.swift declares. Each is judged on its own: Mac Catalyst is os(iOS)
# with targetEnvironment(macCatalyst), visionOS is neither os(iOS) nor os(macOS).
APPLE_PLATFORMS = ("iOS", "macOS", "macCatalyst", "visionOS")
ALL_APPLE = frozenset(APPLE_PLATFORMS)
# Foundation's Process (NSTask) exists on Linux and macOS only.
NO_PROCESS = frozenset({"iOS", "macCatalyst", "visionOS"})

C_SUFFIXES = (".c", ".h", ".m", ".mm", ".cpp", ".cc", ".hpp")
SWIFT_SUFFIXES = (".swift",)


@dataclass(frozen=True)
class Pattern:
    id: str
    language: str          # "c" or "swift"
    regex: str
    unavailable_on: frozenset
    apple: str             # what to use on Apple instead
    in_strings: bool = False  # match string literals too (paths, section names)


PATTERNS = [
    # C / Objective-C: ELF object format.
    Pattern("c-link-h", "c", r"#\s*include\s*<link\.h>", ALL_APPLE, "<mach-o/dyld.h>"),
    Pattern("c-elf-h", "c", r"#\s*include\s*<elf\.h>", ALL_APPLE, "<mach-o/loader.h>"),
    Pattern("c-dl-iterate-phdr", "c", r"\bdl_iterate_phdr\b", ALL_APPLE,
            "_dyld_image_count/_dyld_get_image_header, _dyld_register_func_for_add_image"),
    Pattern("c-elf-types", "c", r"\bElfW\s*\(|\bElf(32|64)_[A-Za-z]+\b|\bPT_(LOAD|NOTE|GNU_[A-Z_]+)\b|\bNT_GNU_BUILD_ID\b",
            ALL_APPLE, "mach_header_64, segment_command_64, LC_UUID"),
    Pattern("c-section-bounds", "c", r"\b__(start|stop)_[A-Za-z_][A-Za-z0-9_]*", ALL_APPLE,
            "section$start$SEG$sect / section$end$SEG$sect (Engine/CSGuardSection.h)"),
    Pattern("c-section-pragma", "c", r"#\s*pragma\s+clang\s+section\b|_Pragma\s*\(\s*\"\s*clang\s+section", ALL_APPLE,
            "CS_GUARD_CODE_SECTION (Engine/CSGuardSection.h)", in_strings=True),
    Pattern("c-section-attribute", "c", r"\bsection\s*\(\s*\"[^\",]*\"\s*\)", ALL_APPLE,
            "\"SEGMENT,section\" (16 characters at most), or CS_GUARD_METHOD", in_strings=True),
    # C / Objective-C: Linux kernel and glibc interfaces.
    Pattern("c-prctl", "c", r"#\s*include\s*<(sys|linux)/prctl\.h>|\bprctl\s*\(", ALL_APPLE,
            "pthread_setname_np(name) for the thread name"),
    Pattern("c-gettid", "c", r"\bSYS_gettid\b|\bgettid\s*\(", ALL_APPLE,
            "pthread_threadid_np, pthread_mach_thread_np"),
    Pattern("c-syscall", "c", r"(?<![\w.>])syscall\s*\(", ALL_APPLE,
            "the libc or Mach call it stands for (syscall(2) is deprecated and unsupported: iOS 10, macOS 10.12)"),
    Pattern("c-getrandom", "c", r"\bgetrandom\s*\(", ALL_APPLE,
            "getentropy (<sys/random.h>, at most 256 bytes a call) or arc4random_buf"),
    Pattern("c-process-vm-readv", "c", r"\bprocess_vm_(readv|writev)\b", ALL_APPLE,
            "vm_read_overwrite / mach_vm_read_overwrite on mach_task_self()"),
    Pattern("c-linux-ucontext", "c", r"\bREG_(R(IP|SP|BP|AX|BX|CX|DX|SI|DI|8|9|1[0-5])|E(IP|SP|BP|AX|BX|CX|DX|SI|DI|FL)|UESP|TRAPNO|ERR|CR2|CSGSFS|OLDMASK)\b"
            r"|(\.|->)\s*(gregs|fault_address)\b|\buc_mcontext\s*\.",
            ALL_APPLE, "uc_mcontext->__ss.__rip / __ss.__pc (Darwin mcontext is a pointer to per-arch state)"),
    Pattern("c-procfs", "c", r"/proc/", ALL_APPLE,
            "sysctl, proc_pidinfo, _NSGetExecutablePath, task_info", in_strings=True),
    Pattern("c-pthread-getattr-np", "c", r"\bpthread_getattr_np\b", ALL_APPLE,
            "pthread_get_stackaddr_np / pthread_get_stacksize_np"),
    Pattern("c-linux-fd-apis", "c",
            r"\b(epoll_[a-z_]+|eventfd|signalfd|memfd_create|inotify_[a-z_]+|timerfd_[a-z_]+)\s*\(|#\s*include\s*<sys/(epoll|eventfd|signalfd|inotify|timerfd)\.h>",
            ALL_APPLE, "kqueue / dispatch sources"),
    Pattern("c-glibc-only", "c", r"\b(program_invocation_(short_)?name|secure_getenv|gnu_get_libc_version|CLOCK_BOOTTIME"
            r"|mallinfo2?|malloc_usable_size|sched_getcpu|get_nprocs(_conf)?)\b",
            ALL_APPLE, "getprogname, getenv with issetugid, CLOCK_MONOTONIC, malloc_size / malloc_zone_statistics, "
            "sysconf(_SC_NPROCESSORS_ONLN)"),
    # Swift.
    Pattern("swift-import-glibc", "swift", r"\bimport\s+(Glibc|Musl)\b|\b(Glibc|Musl)\.", ALL_APPLE, "import Darwin"),
    Pattern("swift-foundation-networking", "swift", r"\bFoundationNetworking\b", ALL_APPLE,
            "URLSession is in Foundation"),
    Pattern("swift-st-mtim", "swift", r"\bst_(a|m|c)tim\b", ALL_APPLE, "st_mtimespec (st_atimespec, st_ctimespec)"),
    Pattern("swift-process", "swift", r"(?<![\w.])(Foundation\.)?(Process|NSTask)\b", NO_PROCESS,
            "none on iOS, Mac Catalyst, visionOS: keep it inside #if os(Linux) || os(macOS)"),
    Pattern("swift-procfs", "swift", r"/proc/", ALL_APPLE,
            "ProcessInfo, Bundle.main.executablePath, sysctl", in_strings=True),
    Pattern("swift-xdg-paths", "swift", r"\bXDG_[A-Z_]+\b|\"[^\"]*/\.(cache|config|local/share)\b", ALL_APPLE,
            "FileManager.default.urls(for: .cachesDirectory / .applicationSupportDirectory, in: .userDomainMask)",
            in_strings=True),
    Pattern("swift-linux-calls", "swift",
            r"\b(SYS_gettid|gettid|prctl|getrandom|epoll_[a-z_]+|process_vm_readv|pthread_getattr_np|dl_iterate_phdr"
            r"|eventfd|signalfd|memfd_create|inotify_[a-z_]+|timerfd_[a-z_]+|mallinfo2?|malloc_usable_size|sched_getcpu"
            r"|get_nprocs(_conf)?)\b",
            ALL_APPLE, "as for the C patterns of the same name"),
    Pattern("swift-rlimit-rawvalue", "swift", r"\bRLIMIT_[A-Z_]+\.rawValue\b", ALL_APPLE,
            "Int32(RLIMIT_X): Darwin's RLIMIT_* are plain Int32 macros, glibc's an imported enum"),
    Pattern("swift-posix-spawn-init", "swift", r"\bposix_spawn(_file_actions|attr)_t\s*\(\s*\)", ALL_APPLE,
            "posix_spawn_file_actions_t? / posix_spawnattr_t? = nil (opaque pointers on Darwin), then *_init(&value)"),
    # The manifest (a file named Package.swift): not a line pattern, see check_manifest.
    Pattern("swift-package-platforms", "manifest", "", ALL_APPLE,
            "platforms: [.iOS(.v16), .macOS(.v13), .macCatalyst(.v16), ...] (Duration, AsyncStream)"),
]

# What Package.swift's `platforms:` must declare at least (major versions): the public API uses
# Duration and AsyncStream's Duration-based APIs (iOS 16, macOS 13, Mac Catalyst 16; visionOS 1 has
# them from its first version). Without a declaration SwiftPM builds for older deployment targets
# and every use of Duration fails to compile there.
MANIFEST_MINIMUMS = {"iOS": 16, "macOS": 13, "macCatalyst": 16}


# ---- Comment and string removal ---------------------------------------------------------------

def strip_source(text, language):
    """Returns (with_strings, without_strings): the text with comments replaced by spaces, and the
    same with string and character literal contents blanked too. Newlines are kept, so line
    numbers are unchanged."""
    keep, blank = [], []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        two = text[i:i + 2]
        if two == "//":
            j = text.find("\n", i)
            j = n if j < 0 else j
            keep.append(" " * (j - i)); blank.append(" " * (j - i)); i = j
            continue
        if two == "/*":
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("*/", j):
                    depth -= 1; j += 2
                elif language == "swift" and text.startswith("/*", j):  # Swift block comments nest
                    depth += 1; j += 2
                else:
                    j += 1
            chunk = re.sub(r"[^\n]", " ", text[i:j])
            keep.append(chunk); blank.append(chunk); i = j
            continue
        if language == "swift" and text.startswith('"""', i):
            j = text.find('"""', i + 3)
            j = n if j < 0 else j + 3
            keep.append(text[i:j]); blank.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
            continue
        if c == '"' or (c == "'" and language == "c"):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            keep.append(text[i:j]); blank.append(c + re.sub(r"[^\n]", " ", text[i + 1:j]))
            i = j
            continue
        keep.append(c); blank.append(c); i += 1
    return "".join(keep), "".join(blank)


# ---- Condition evaluation (three-valued: True, False, None = unknown) ------------------------

UNKNOWN = None


def _and(a, b):
    if a is False or b is False:
        return False
    if a is True and b is True:
        return True
    return UNKNOWN


def _or(a, b):
    if a is True or b is True:
        return True
    if a is False and b is False:
        return False
    return UNKNOWN


def _not(a):
    return UNKNOWN if a is UNKNOWN else not a


# What an Apple compile of the package defines. Package.swift defines GNUSTEP, GNU_RUNTIME and
# GNUSTEP_BASE_LIBRARY only on Linux; clang defines __APPLE__ and __MACH__ (and not __unix__) for
# Darwin targets; TARGET_OS_* come from <TargetConditionals.h>.
C_UNDEFINED_ON_APPLE = {
    "__linux__", "__linux", "linux", "__gnu_linux__", "__ELF__", "__GLIBC__", "__GNU_LIBRARY__",
    "__ANDROID__", "__FreeBSD__", "__OpenBSD__", "__NetBSD__", "_WIN32", "_WIN64", "__unix__",
    "__unix", "GNUSTEP", "GNU_RUNTIME", "GNUSTEP_BASE_LIBRARY",
}
C_DEFINED_ON_APPLE = {"__APPLE__": 1, "__MACH__": 1, "TARGET_OS_MAC": 1}
# <TargetConditionals.h>: IOS, TV, WATCH and VISION exclude each other; MACCATALYST is a kind of IOS.
C_PER_PLATFORM = {
    "iOS": {"TARGET_OS_IPHONE": 1, "TARGET_OS_IOS": 1, "TARGET_OS_OSX": 0, "TARGET_OS_MACCATALYST": 0,
            "TARGET_OS_VISION": 0, "TARGET_OS_XR": 0},
    "macOS": {"TARGET_OS_IPHONE": 0, "TARGET_OS_IOS": 0, "TARGET_OS_OSX": 1, "TARGET_OS_MACCATALYST": 0,
              "TARGET_OS_VISION": 0, "TARGET_OS_XR": 0},
    "macCatalyst": {"TARGET_OS_IPHONE": 1, "TARGET_OS_IOS": 1, "TARGET_OS_OSX": 0, "TARGET_OS_MACCATALYST": 1,
                    "TARGET_OS_VISION": 0, "TARGET_OS_XR": 0},
    "visionOS": {"TARGET_OS_IPHONE": 1, "TARGET_OS_IOS": 0, "TARGET_OS_OSX": 0, "TARGET_OS_MACCATALYST": 0,
                 "TARGET_OS_VISION": 1, "TARGET_OS_XR": 1},
}
LINUX_ONLY_HEADERS = {"link.h", "elf.h", "sys/prctl.h", "linux/prctl.h", "sys/epoll.h", "sys/eventfd.h",
                      "sys/signalfd.h", "sys/inotify.h", "sys/timerfd.h", "gnu/libc-version.h", "features.h"}

C_TOKEN = re.compile(r"\s*(?:(0[xX][0-9a-fA-F]+|\d+)[uUlL]*|([A-Za-z_]\w*)|(&&|\|\||==|!=|<=|>=|<<|>>|[-+*/%<>!()~?:,])|(\"[^\"]*\"))")
HAS_INCLUDE_ANGLED = re.compile(r"(__has_include(?:_next)?\s*\(\s*)<([^>]*)>")


def tokenize_c(expr):
    tokens, pos = [], 0
    expr = HAS_INCLUDE_ANGLED.sub(r'\1"\2"', expr.strip())
    while pos < len(expr):
        m = C_TOKEN.match(expr, pos)
        if not m or m.end() == pos:
            raise ValueError(f"cannot read {expr[pos:]!r}")
        number, ident, op, header = m.groups()
        if number is not None:
            tokens.append(("num", int(number, 0)))
        elif ident is not None:
            tokens.append(("id", ident))
        elif op is not None:
            tokens.append(("op", op))
        else:
            tokens.append(("header", header))
        pos = m.end()
        while pos < len(expr) and expr[pos].isspace():
            pos += 1
    return tokens


class CCondition:
    """A small recursive-descent evaluator for #if expressions. Values are ints, True/False, or
    None (unknown); logical operators use three-valued logic."""

    def __init__(self, platform):
        self.values = dict(C_DEFINED_ON_APPLE)
        self.values.update(C_PER_PLATFORM[platform])

    def evaluate(self, expr):
        try:
            self.tokens, self.pos = tokenize_c(expr), 0
            value = self.ternary()
            if self.pos != len(self.tokens):
                return UNKNOWN
            return self.truth(value)
        except (ValueError, IndexError):
            return UNKNOWN

    @staticmethod
    def truth(value):
        if value is UNKNOWN or isinstance(value, bool):
            return value
        return value != 0

    def peek(self):
        return self.tokens[self.pos] if self.pos < len(self.tokens) else (None, None)

    def take(self, op=None):
        token = self.peek()
        if op is not None and token != ("op", op):
            raise ValueError(f"expected {op}")
        self.pos += 1
        return token

    def ternary(self):
        condition = self.logical_or()
        if self.peek() == ("op", "?"):
            self.take("?")
            yes = self.ternary()
            self.take(":")
            no = self.ternary()
            truth = self.truth(condition)
            return yes if truth is True else no if truth is False else UNKNOWN
        return condition

    def logical_or(self):
        value = self.logical_and()
        while self.peek() == ("op", "||"):
            self.take()
            value = _or(self.truth(value), self.truth(self.logical_and()))
        return value

    def logical_and(self):
        value = self.comparison()
        while self.peek() == ("op", "&&"):
            self.take()
            value = _and(self.truth(value), self.truth(self.comparison()))
        return value

    def comparison(self):
        value = self.additive()
        while self.peek()[0] == "op" and self.peek()[1] in ("==", "!=", "<", ">", "<=", ">="):
            op = self.take()[1]
            right = self.additive()
            if value is UNKNOWN or right is UNKNOWN:
                value = UNKNOWN
            else:
                value = {"==": value == right, "!=": value != right, "<": value < right,
                         ">": value > right, "<=": value <= right, ">=": value >= right}[op]
        return value

    def additive(self):
        value = self.unary()
        while self.peek()[0] == "op" and self.peek()[1] in ("+", "-", "*", "/", "%", "<<", ">>"):
            self.take()
            self.unary()
            value = UNKNOWN  # arithmetic on macros is never needed to excuse a line
        return value

    def unary(self):
        kind, text = self.peek()
        if (kind, text) == ("op", "!"):
            self.take()
            return _not(self.truth(self.unary()))
        if kind == "op" and text in ("-", "+", "~"):
            self.take()
            value = self.unary()
            return UNKNOWN if value is UNKNOWN else (-value if text == "-" else ~value if text == "~" else value)
        if (kind, text) == ("op", "("):
            self.take()
            value = self.ternary()
            self.take(")")
            return value
        if kind == "num":
            self.take()
            return text
        if kind == "id":
            self.take()
            if text == "defined":
                parenthesised = self.peek() == ("op", "(")
                if parenthesised:
                    self.take()
                name = self.take()[1]
                if parenthesised:
                    self.take(")")
                if name in self.values:
                    return True
                if name in C_UNDEFINED_ON_APPLE:
                    return False
                return UNKNOWN
            if self.peek() == ("op", "("):  # function-like: __has_include(<x>), __has_feature(y), ...
                self.take()
                arguments, depth = [], 1
                while depth:
                    token = self.take()
                    if token == ("op", "("):
                        depth += 1
                    elif token == ("op", ")"):
                        depth -= 1
                        if not depth:
                            break
                    arguments.append(token)
                if text in ("__has_include", "__has_include_next") and len(arguments) == 1:
                    header = arguments[0][1]
                    if isinstance(header, str) and header[1:-1] in LINUX_ONLY_HEADERS:
                        return False
                return UNKNOWN
            if text in self.values:
                return self.values[text]
            if text in C_UNDEFINED_ON_APPLE:
                return 0
            return UNKNOWN
        raise ValueError(f"unexpected {text!r}")


SWIFT_OS_ON = {"iOS": {"iOS"}, "macOS": {"macOS", "OSX"}, "macCatalyst": {"iOS"}, "visionOS": {"visionOS", "xrOS"}}
SWIFT_TARGET_ENVIRONMENTS = {"iOS": set(), "macOS": set(), "macCatalyst": {"macCatalyst"}, "visionOS": set()}
SWIFT_ALL_OS = {"iOS", "macOS", "OSX", "tvOS", "watchOS", "visionOS", "xrOS", "Linux", "Windows", "Android",
                "FreeBSD", "OpenBSD", "WASI", "Cygwin", "PS4", "Haiku", "none"}
SWIFT_MODULES = {
    "iOS": {"Darwin": True, "Foundation": True, "Dispatch": True, "ObjectiveC": True, "UIKit": True,
            "AppKit": False, "Glibc": False, "Musl": False, "Bionic": False, "WinSDK": False,
            "FoundationNetworking": False, "FoundationEssentials": UNKNOWN},
    "macOS": {"Darwin": True, "Foundation": True, "Dispatch": True, "ObjectiveC": True, "AppKit": True,
              "Glibc": False, "Musl": False, "Bionic": False, "WinSDK": False, "FoundationNetworking": False,
              "FoundationEssentials": UNKNOWN},
    # AppKit on Mac Catalyst: left undecided (either branch may be compiled).
    "macCatalyst": {"Darwin": True, "Foundation": True, "Dispatch": True, "ObjectiveC": True, "UIKit": True,
                    "AppKit": UNKNOWN, "Glibc": False, "Musl": False, "Bionic": False, "WinSDK": False,
                    "FoundationNetworking": False, "FoundationEssentials": UNKNOWN},
    "visionOS": {"Darwin": True, "Foundation": True, "Dispatch": True, "ObjectiveC": True, "UIKit": True,
                 "AppKit": False, "Glibc": False, "Musl": False, "Bionic": False, "WinSDK": False,
                 "FoundationNetworking": False, "FoundationEssentials": UNKNOWN},
}
SWIFT_TOKEN = re.compile(r"\s*(?:(&&|\|\||[!()])|([A-Za-z_]\w*)\s*\(([^()]*)\)|([A-Za-z_]\w*))")


def evaluate_swift(expr, platform):
    tokens, pos = [], 0
    expr = expr.strip()
    while pos < len(expr):
        m = SWIFT_TOKEN.match(expr, pos)
        if not m or m.end() == pos:
            return UNKNOWN
        op, function, argument, flag = m.groups()
        if op:
            tokens.append(op)
        elif function:
            argument = argument.strip()
            if function == "os":
                value = argument in SWIFT_OS_ON[platform] if argument in SWIFT_ALL_OS else UNKNOWN
            elif function == "canImport":  # canImport(Module), canImport(Module.Sub), canImport(M, _version: ...)
                value = SWIFT_MODULES[platform].get(argument.split(",")[0].strip().split(".")[0], UNKNOWN)
            elif function == "targetEnvironment" and argument == "macCatalyst":
                value = argument in SWIFT_TARGET_ENVIRONMENTS[platform]
            else:  # arch, targetEnvironment(simulator), swift, compiler, hasFeature, hasAttribute
                value = UNKNOWN
            tokens.append(("value", value))
        else:
            tokens.append(("value", {"true": True, "false": False}.get(flag, UNKNOWN)))
        pos = m.end()

    position = [0]

    def primary():
        token = tokens[position[0]]
        position[0] += 1
        if token == "!":
            return _not(primary())
        if token == "(":
            value = disjunction()
            if tokens[position[0]] != ")":
                raise ValueError
            position[0] += 1
            return value
        if isinstance(token, tuple):
            return token[1]
        raise ValueError

    def conjunction():
        value = primary()
        while position[0] < len(tokens) and tokens[position[0]] == "&&":
            position[0] += 1
            value = _and(value, primary())
        return value

    def disjunction():
        value = conjunction()
        while position[0] < len(tokens) and tokens[position[0]] == "||":
            position[0] += 1
            value = _or(value, conjunction())
        return value

    try:
        value = disjunction()
        return value if position[0] == len(tokens) else UNKNOWN
    except (ValueError, IndexError):
        return UNKNOWN


# ---- Per-line activity -----------------------------------------------------------------------

C_DIRECTIVE = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif|elifdef|elifndef|else|endif)\b(.*)$")
SWIFT_DIRECTIVE = re.compile(r"^\s*#(if|elseif|else|endif)\b(.*)$")


def line_activity(lines, language, platform):
    """For each line: False when it is definitely not compiled on `platform`, True when it is or
    may be, None for a conditional directive line itself (never matched)."""
    evaluator = CCondition(platform) if language == "c" else None

    def condition(kind, rest):
        rest = rest.strip()
        if language == "swift":
            return evaluate_swift(rest, platform)
        if kind in ("ifdef", "elifdef", "ifndef", "elifndef"):
            if not rest:
                return UNKNOWN
            test = f"defined({rest.split()[0]})"
            return evaluator.evaluate(test if kind.endswith("ifdef") else "!" + test)
        return evaluator.evaluate(rest)

    # One frame per open #if: [enclosing block possible, some earlier branch (True/False/None),
    # current branch possible].
    stack, result = [], []
    directive = C_DIRECTIVE if language == "c" else SWIFT_DIRECTIVE
    index = 0
    while index < len(lines):
        line, span = lines[index], 1
        if language == "c":  # a directive continues over backslash-newlines
            while line.rstrip().endswith("\\") and index + span < len(lines):
                line = line.rstrip()[:-1] + " " + lines[index + span]
                span += 1
        active = stack[-1][2] if stack else True
        m = directive.match(line)
        if not m:
            result.extend([active] * span)
            index += span
            continue
        kind, rest = m.group(1), m.group(2)
        if kind in ("if", "ifdef", "ifndef"):
            value = condition(kind, rest)
            stack.append([active, value, active and value is not False])
        elif stack and kind in ("elif", "elseif", "elifdef", "elifndef"):
            frame = stack[-1]
            value = condition(kind, rest)
            frame[2] = frame[0] and frame[1] is not True and value is not False
            frame[1] = _or(frame[1], value)
        elif stack and kind == "else":
            frame = stack[-1]
            frame[2] = frame[0] and frame[1] is not True
            frame[1] = True
        elif stack and kind == "endif":
            stack.pop()
        result.extend([None] * span)
        index += span
    return result


# ---- Scanning --------------------------------------------------------------------------------

def language_of(path):
    if path.endswith(SWIFT_SUFFIXES):
        return "swift"
    if path.endswith(C_SUFFIXES):
        return "c"
    return None


def scan_text(path, text, language):
    with_strings, without_strings = strip_source(text, language)
    keep_lines, blank_lines = with_strings.split("\n"), without_strings.split("\n")
    activity = {p: line_activity(keep_lines, language, p) for p in APPLE_PLATFORMS}
    findings = []
    for pattern in PATTERNS:
        if pattern.language != language:
            continue
        regex = re.compile(pattern.regex)
        lines = keep_lines if pattern.in_strings else blank_lines
        for number, line in enumerate(lines, 1):
            m = regex.search(line)
            if not m:
                continue
            platforms = [p for p in APPLE_PLATFORMS
                         if p in pattern.unavailable_on and activity[p][number - 1]]
            if platforms:
                findings.append((path, number, pattern, m.group(0).strip(), platforms))
    return findings


MANIFEST_PATTERN = next(p for p in PATTERNS if p.id == "swift-package-platforms")
PACKAGE_PLATFORMS = re.compile(r"^[ \t]*platforms\s*:\s*\[([^\]]*)\]", re.MULTILINE)


def check_manifest(path, text):
    """The package's own `platforms:` (an argument of Package(...), so it starts a line;
    `.when(platforms: ...)` never does) must name every platform of MANIFEST_MINIMUMS with at least
    that major version (`.v16`, `.v10_15`, or a string "16.0")."""
    with_strings, code = strip_source(text, "swift")  # same length: offsets carry over
    match = PACKAGE_PLATFORMS.search(code)
    if not match:
        return [(path, 1, MANIFEST_PATTERN, "no platforms:", list(MANIFEST_MINIMUMS))]
    line = code.count("\n", 0, match.start()) + 1
    declared = with_strings[match.start(1):match.end(1)]
    short = []
    for platform, minimum in MANIFEST_MINIMUMS.items():
        version = re.search(r"\." + platform + r"\s*\(\s*(?:\.v(\d+)|\"(\d+))", declared)
        major = int(version.group(1) or version.group(2)) if version else None
        if major is None or major < minimum:
            short.append(platform)
    if not short:
        return []
    return [(path, line, MANIFEST_PATTERN, " ".join(with_strings[match.start():match.end()].split()), short)]


def scan_paths(paths):
    findings = []
    for root in paths:
        if not os.path.exists(root):
            raise FileNotFoundError(root)
        files = [root] if os.path.isfile(root) else sorted(
            os.path.join(directory, name)
            for directory, subdirectories, names in os.walk(root)
            for name in names
            if not directory.split(os.sep)[-1].startswith("."))
        for path in files:
            language = language_of(path)
            if language is None:
                continue
            with open(path, encoding="utf-8", errors="replace") as handle:
                text = handle.read()
            findings.extend(scan_text(path, text, language))
            if os.path.basename(path) == "Package.swift":
                findings.extend(check_manifest(path, text))
    return findings


def report(findings, out=sys.stdout):
    for path, number, pattern, text, platforms in sorted(findings, key=lambda f: (f[0], f[1], f[2].id)):
        problem = "below the minimum for" if pattern is MANIFEST_PATTERN else "unavailable on"
        print(f"{path}:{number}: {pattern.id}: {text} ({problem} {', '.join(platforms)}; Apple: {pattern.apple})",
              file=out)


# ---- Self-test -------------------------------------------------------------------------------

SELF_TEST = [
    # (language, source, expected {(line, pattern id)})
    ("c", """#include <link.h>
static int f(void) { return dl_iterate_phdr(0, 0); }
/* dl_iterate_phdr in a comment */ const char *s = "prctl is only a word here";
static int flags = REG_EXTENDED | REG_ICASE; /* regex.h, on Apple too */
static long sp(const ucontext_t *uc) { return uc->uc_mcontext->__ss.__sp; }
static long lr(ucontext_t *uc) { return (long)uc->uc_mcontext.regs[30]; }
""", {(1, "c-link-h"), (2, "c-dl-iterate-phdr"), (6, "c-linux-ucontext")}),
    ("c", """#if defined(__linux__)
#include <link.h>
#include <sys/prctl.h>
static void name(void) { prctl(15, "x"); }
#elif defined(__APPLE__)
#include <mach-o/dyld.h>
#endif
#if defined(__APPLE__)
static int g(void) { return 0; }
#else
static int g(void) { return (int)syscall(186); }
#endif
#ifdef __ELF__
extern const char __start_cs_guard_x[];
#endif
#if !defined(__APPLE__) && defined(__x86_64__)
static long rip(ucontext_t *uc) { return uc->uc_mcontext.gregs[REG_RIP]; }
#endif
#if defined(__x86_64__)
static long pc(ucontext_t *uc) { return uc->uc_mcontext.gregs[REG_RIP]; }
#endif
#if __has_include(<link.h>)
#include <link.h>
#endif
#define CS_LONG_MACRO(a) \\
    a
""", {(20, "c-linux-ucontext")}),
    ("swift", """import Foundation
import Glibc
let started = Process()
let cache = ProcessInfo.processInfo.environment["XDG_CACHE_HOME"]
// import Glibc in a comment; Process in a comment
""", {(2, "swift-import-glibc"), (3, "swift-process"), (4, "swift-xdg-paths")}),
    ("swift", """#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
#if os(Linux) || os(macOS)
let tool = Process()
#endif
#if os(Linux)
let exe = "/proc/self/exe"
#else
let exe = CommandLine.arguments[0]
#endif
#if !os(Linux)
let tool2 = Process()
#endif
let info = ProcessInfo.processInfo
struct ChildProcess {}
""", {(15, "swift-process")}),
    # Per-platform conditions: IOS, MACCATALYST, VISION and OSX answer differently; every Apple
    # platform takes one of the first three branches, so the #else is compiled on none of them.
    ("c", """#if TARGET_OS_VISION
static long a(void) { return syscall(1); }
#elif TARGET_OS_MACCATALYST
static int b(void) { return mallinfo2().arena; }
#elif TARGET_OS_IOS || TARGET_OS_OSX
static int c(void) { return 0; }
#else
static int d(void) { return get_nprocs(); }
#endif
""", {(2, "c-syscall"), (4, "c-glibc-only")}),
    # One construct per Swift case, each with its expected findings.
    ("swift", 'let p = "/proc/self/exe"', {(1, "swift-procfs")}),
    ("swift", '#if os(Linux)\nlet p = "/proc/self/exe"\n#endif', set()),
    ("swift", '#if os(Linux) || os(macOS)\nlet p = "/proc/self/exe"\n#endif', {(2, "swift-procfs")}),
    ("swift", '#if os(Linux) || os(macOS)\nlet t = Process()\n#else\nlet t = nil\n#endif', set()),
    ("swift", '#if canImport(Darwin)\nlet x = 1\n#else\nlet t = Process()\nlet v = "XDG_CACHE_HOME"\n#endif', set()),
    ("swift", '#if !os(Linux)\nlet t = NSTask()\n#endif', {(2, "swift-process")}),
    ("swift", '#if os(macOS)\n#elseif os(iOS)\n#else\nimport Glibc\n#endif', {(4, "swift-import-glibc")}),  # visionOS
    ("swift", '#if os(macOS)\n#elseif os(iOS) || os(visionOS)\n#else\nimport Glibc\n#endif', set()),
    ("swift", '#if os(iOS)\n#else\nlet t = Process()\n#endif', {(3, "swift-process")}),  # visionOS
    ("swift", '#if os(iOS) && !targetEnvironment(macCatalyst)\n#elseif os(visionOS)\n#else\nlet t = Process()\n#endif',
     {(4, "swift-process")}),  # Mac Catalyst
    ("swift", '#if targetEnvironment(macCatalyst) && os(macOS)\nimport Glibc\n#endif', set()),  # decided, not "maybe"
    ("swift", '#if arch(x86_64)\nimport Glibc\n#endif', {(2, "swift-import-glibc")}),
    ("swift", '// Default: $XDG_CACHE_HOME, or /proc/self/exe\nlet a = 1 /* Process() */', set()),
    ("swift", 'getrlimit(Int32(RLIMIT_FSIZE.rawValue), &value)', {(1, "swift-rlimit-rawvalue")}),
    ("swift", 'var actions = posix_spawn_file_actions_t()\nvar attributes = posix_spawnattr_t( )',
     {(1, "swift-posix-spawn-init"), (2, "swift-posix-spawn-init")}),
    ("swift", '#if canImport(Glibc)\nvar a = posix_spawn_file_actions_t()\n#else\nvar a: posix_spawn_file_actions_t?\n#endif',
     set()),
    ("swift", 'let size = malloc_usable_size(pointer)', {(1, "swift-linux-calls")}),
    # The manifest.
    ("manifest", '// platforms: [.iOS(.v16), .macOS(.v13), .macCatalyst(.v16)]\nlet package = Package(name: "X")',
     {(1, "swift-package-platforms")}),
    ("manifest", """let package = Package(
    name: "X",
    platforms: [.iOS(.v15), .macOS(.v13), .macCatalyst(.v16)],
    targets: [.target(name: "A", cSettings: [.define("A", .when(platforms: [.linux]))])]
)""", {(3, "swift-package-platforms")}),
    ("manifest", """let package = Package(
    name: "X",
    platforms: [.iOS(.v16), .macOS("13.0"), .macCatalyst(.v17), .visionOS(.v1)],
    targets: [.target(name: "A", cSettings: [.define("A", .when(platforms: [.linux]))])]
)""", set()),
]


def self_test():
    failures = 0
    for index, (language, source, expected) in enumerate(SELF_TEST):
        path = f"<self-test {index}>"
        findings = check_manifest(path, source) if language == "manifest" else scan_text(path, source, language)
        found = {(number, pattern.id) for _, number, pattern, _, _ in findings}
        if found != expected:
            failures += 1
            print(f"self-test {index} ({language}): expected {sorted(expected)}, found {sorted(found)}")
    print("self-test: " + ("passed" if not failures else f"{failures} case(s) failed"))
    return failures == 0


def main(argv):
    if argv[:1] == ["--list-patterns"]:
        for pattern in PATTERNS:
            print(pattern.id)
        return 0
    if argv[:1] == ["--self-test"]:
        return 0 if self_test() else 1
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        findings = scan_paths(argv)
    except FileNotFoundError as missing:
        print(f"portability_scan: no such path: {missing}", file=sys.stderr)
        return 2
    report(findings)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
