#!/usr/bin/env bash
# Installs what CrashShield needs to build on Linux and is not there yet: GNUstep Base and
# GCC's Objective-C runtime, from Debian packages, plus valgrind and binutils for the tests, and
# the pkg-config file through which SwiftPM finds GNUstep (Debian ships none for gnustep-base).
# Safe to run again; does nothing when everything is present. An app that depends on CrashShield
# runs this once on its Linux build machines, as it would install any system library.
set -euo pipefail
if [ "$(uname -s)" != "Linux" ]; then exit 0; fi
missing=()
[ -f /usr/include/GNUstep/Foundation/Foundation.h ] || missing+=(libgnustep-base-dev)
ls /usr/lib/gcc/*/*/include/objc/objc.h >/dev/null 2>&1 || missing+=(gobjc)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
# The test suite also needs valgrind (scripts/valgrind-lifecycle.sh) and binutils (objcopy, and
# addr2line for symbolicating crash reports when llvm-symbolizer is absent).
command -v valgrind >/dev/null 2>&1 || missing+=(valgrind)
command -v objcopy >/dev/null 2>&1 || missing+=(binutils)
# The static checks (scripts/check-arc.sh, check-apple-targets.sh, check-portability.sh) need
# python3, and clang, llvm-nm, llvm-objdump and ld64.lld, which come with the Swift toolchain.
command -v python3 >/dev/null 2>&1 || missing+=(python3)
command -v swift >/dev/null 2>&1 || { echo "bootstrap: swift is not on PATH (Swift 6.1 or newer is required)" >&2; exit 1; }
toolchain_bin="$(dirname "$(readlink -f "$(command -v swift)")")"
for tool in clang llvm-nm llvm-objdump ld64.lld; do
  [ -x "$toolchain_bin/$tool" ] || { echo "bootstrap: $tool is missing from the Swift toolchain ($toolchain_bin)" >&2; exit 1; }
done
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
if [ ${#missing[@]} -gt 0 ]; then
  echo "bootstrap: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# crashshield-gnustep-base.pc: GNUstep's headers, GCC's libobjc headers, the blocks shim, the
# defines GNUstep's headers expect, and both libraries.
# Package.swift's CGNUstepBase system library reads it; SwiftPM accepts -I/-l from a pkg-config
# file of a dependency, unlike unsafeFlags. libobjc's headers live in GCC's private include
# directory (its path names the architecture and GCC version: found, not assumed), which also holds
# GCC's own stddef.h/stdatomic.h: on the include path of Swift's Clang importer those break every
# Swift module, so the .pc names a directory holding only a link to its objc/ folder.
objc_header="$(ls -d /usr/lib/gcc/*/*/include/objc/objc.h | sort -V | tail -1)"
objc_dir="$(dirname "$objc_header")"
shim_include=/usr/local/include/crashshield-gnustep
if [ "$(readlink "$shim_include/objc" 2>/dev/null)" != "$objc_dir" ]; then
  echo "bootstrap: linking $shim_include/objc -> $objc_dir" >&2
  $SUDO mkdir -p "$shim_include"
  $SUDO ln -sfn "$objc_dir" "$shim_include/objc"
fi
# GNUstep's headers include <objc/blocks_runtime.h> under -fblocks (SwiftPM compiles every C-family
# target with it on Linux), which GCC's libobjc does not ship: the package's shim goes into a
# directory of its own on the same include path, for the SDK's targets and an app's alike.
blocks_include=/usr/local/include/crashshield-gnustep-blocks
blocks_shim="$(dirname "$0")/../Sources/_CrashShieldRuntime/Backend/GNUstepShim/objc/blocks_runtime.h"
if ! cmp -s "$blocks_shim" "$blocks_include/objc/blocks_runtime.h"; then
  echo "bootstrap: installing $blocks_include/objc/blocks_runtime.h" >&2
  $SUDO mkdir -p "$blocks_include/objc"
  $SUDO cp "$blocks_shim" "$blocks_include/objc/blocks_runtime.h"
fi
pc_dir=/usr/local/lib/pkgconfig
pc_file="$pc_dir/crashshield-gnustep-base.pc"
pc_text="Name: crashshield-gnustep-base
Description: GNUstep Base on GCC's libobjc, for CrashShield (written by scripts/bootstrap.sh)
Version: 1
Cflags: -I/usr/include/GNUstep -I$shim_include -I$blocks_include -DGNUSTEP -DGNU_RUNTIME=1 -DGNUSTEP_BASE_LIBRARY=1
Libs: -lgnustep-base -lobjc"
if [ ! -f "$pc_file" ] || [ "$(cat "$pc_file")" != "$pc_text" ]; then
  echo "bootstrap: writing $pc_file" >&2
  $SUDO mkdir -p "$pc_dir"
  printf '%s\n' "$pc_text" | $SUDO tee "$pc_file" >/dev/null
fi
