#!/usr/bin/env bash
# Installs what CrashShield needs to build on Linux and is not there yet: GNUstep Base and
# GCC's Objective-C runtime, from Debian packages, plus valgrind and binutils for the tests.
# Safe to run again; does nothing when present.
set -euo pipefail
if [ "$(uname -s)" != "Linux" ]; then exit 0; fi
missing=()
[ -f /usr/include/GNUstep/Foundation/Foundation.h ] || missing+=(libgnustep-base-dev)
ls /usr/lib/gcc/*/*/include/objc/objc.h >/dev/null 2>&1 || missing+=(gobjc)
# The test suite also needs valgrind (scripts/valgrind-lifecycle.sh) and binutils (objcopy, and
# addr2line for symbolicating crash reports when llvm-symbolizer is absent).
command -v valgrind >/dev/null 2>&1 || missing+=(valgrind)
command -v objcopy >/dev/null 2>&1 || missing+=(binutils)
command -v swift >/dev/null 2>&1 || { echo "bootstrap: swift is not on PATH (Swift 6.1 or newer is required)" >&2; exit 1; }
if [ ${#missing[@]} -gt 0 ]; then
  echo "bootstrap: installing ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
