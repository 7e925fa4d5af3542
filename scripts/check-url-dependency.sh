#!/usr/bin/env bash
# Proves that an app can depend on CrashShield the normal way — `.package(url:from:)` with a
# version tag — and get working guards on Linux. SwiftPM accepts unsafeFlags only from root and
# local packages, so this is the check that the product's targets need none (Package.swift).
#
# It copies the working tree (tracked and untracked, not ignored: what would be committed) into a
# temporary git repository tagged 1.0.0, builds a small app that depends on it through a file://
# URL and the tag, and runs it: every guard that is installed on this runtime must be active (each
# passed its canary, which exercises the hooks, the interned strings and the Objective-C++ catch
# path), and a misuse through the Swift API must be recorded.
set -euo pipefail
cd "$(dirname "$0")/.."
export SWIFT_BACKTRACE=enable=no
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/CrashShield"
git ls-files -co --exclude-standard -z | xargs -0 -I{} cp --parents {} "$work/CrashShield/" 2>/dev/null || \
  { echo "check-url-dependency: FAIL: could not copy the working tree" >&2; exit 1; }
( cd "$work/CrashShield" && git init -q && git add -A &&
  git -c user.email=ci@crashshield.invalid -c user.name=ci commit -qm snapshot && git tag 1.0.0 )

mkdir -p "$work/App/Sources/App"
cat > "$work/App/Package.swift" <<PKG
// swift-tools-version:6.1
import PackageDescription
let package = Package(
    name: "App",
    dependencies: [.package(url: "file://$work/CrashShield", from: "1.0.0")],
    targets: [.executableTarget(name: "App", dependencies: [.product(name: "CrashShield", package: "CrashShield")])]
)
PKG
cat > "$work/App/Sources/App/main.swift" <<'SWIFT'
import CrashShield
import Foundation

try CrashShieldSDK.start()
var failures = 0
for status in CrashShieldSDK.status {
    switch status.state {
    case .active, .notInstalled: print("\(status.id): \(status.state)")
    default: print("FAIL \(status.id): \(status.state)"); failures += 1
    }
}
for required in [GuardID.container, .string, .selector, .nsnull, .kvc, .kvo] {
    guard let status = CrashShieldSDK.status.first(where: { $0.id == required }), case .active = status.state else {
        print("FAIL \(required) is not active"); failures += 1; continue
    }
}
exit(failures == 0 ? 0 : 1)
SWIFT
echo "== check-url-dependency: building an app that depends on CrashShield by URL and version" >&2
( cd "$work/App" && swift build 2>&1 | tail -3 ) >&2
if ! ( cd "$work/App" && swift build >/dev/null 2>&1 ); then
  ( cd "$work/App" && swift build 2>&1 | grep -E 'error' | head -20 ) >&2
  echo "check-url-dependency: FAIL: the app does not build" >&2; exit 1
fi
if ! ( cd "$work/App" && "$(swift build --show-bin-path)/App" ); then
  echo "check-url-dependency: FAIL: guards are not all active in the app" >&2; exit 1
fi
echo "check-url-dependency: ok" >&2
