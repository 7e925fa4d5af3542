#!/usr/bin/env bash
# Proves that an app can depend on CrashShield the normal way — `.package(url:from:)` with a
# version tag — and get working guards on Linux. SwiftPM accepts unsafeFlags only from root and
# local packages, so this is the check that the product's targets need none (Package.swift).
#
# It copies the working tree (tracked and untracked, not ignored: what would be committed) into a
# temporary git repository tagged 1.0.0, builds a small app that depends on it through a file://
# URL and the tag, and runs it four times. The app has an Objective-C target of its own, declared
# with the README's block as written (the `CrashShieldObjC` product and the flags an app adds). The app makes the one start call with guards, crash
# capture and launch protection: every guard that is installed on this runtime must be active
# (each passed its canary, which exercises the hooks, the interned strings and the Objective-C++
# catch path), capture installed, a misuse through the Swift API recorded, and `lastRun` must say
# first launch, then clean exit; the third run crashes on purpose (a report must be left) and the
# fourth must see that crash.
set -euo pipefail
cd "$(dirname "$0")/.."
export SWIFT_BACKTRACE=enable=no
# Kept under .build (replaced on every run): Collector/scripts/test.sh runs the built app against
# a collector end to end (scripts/sdk_e2e.py, case `app`).
work="$PWD/.build/url-dependency"
rm -rf "$work"
mkdir -p "$work"

mkdir -p "$work/CrashShield"
git ls-files -co --exclude-standard -z | xargs -0 -I{} cp --parents {} "$work/CrashShield/" 2>/dev/null || \
  { echo "check-url-dependency: FAIL: could not copy the working tree" >&2; exit 1; }
( cd "$work/CrashShield" && git init -q && git add -A &&
  git -c user.email=ci@crashshield.invalid -c user.name=ci commit -qm snapshot && git tag 1.0.0 )

mkdir -p "$work/App/Sources/App" "$work/App/Sources/AppObjC/include" "$work/App/Sources/AppC/include"
# The app's Objective-C target is the README's block, as written (README.md, "Objective-C apps").
objc_target="$(awk '/<!-- objc-app-target:/ {found = 1; next} found && /^```swift manifest$/ {inside = 1; next}
                    inside && /^```/ {exit} inside {print}' README.md)"
if [ -z "$objc_target" ]; then
  echo "check-url-dependency: FAIL: README.md has no objc-app-target block" >&2; exit 1
fi
cat > "$work/App/Package.swift" <<PKG
// swift-tools-version:6.1
import PackageDescription
let package = Package(
    name: "App",
    dependencies: [.package(url: "file://$work/CrashShield", from: "1.0.0")],
    targets: [
        .executableTarget(name: "App", dependencies: [.product(name: "CrashShield", package: "CrashShield"), "AppObjC", "AppC"]),
        .target(name: "AppC"),
$objc_target
    ]
)
PKG
cat > "$work/App/Sources/AppC/include/AppC.h" <<'C'
/* The app's own C code: a crash (a write through a null pointer). */
void app_c_crash(int value);
C
cat > "$work/App/Sources/AppC/AppC.c" <<'C'
#include "AppC.h"
__attribute__((noinline)) void app_c_crash(int value) {
    volatile int *target = (volatile int *)(value > 1000 ? (void *)&value : (void *)0);
    *target = value;
}
C
cat > "$work/App/Sources/AppObjC/include/AppObjC.h" <<'OBJC'
/* Misuses and legal calls from the app's own Objective-C code; each returns the number of checks that failed. */
int app_objc_misuses(void);
int app_objc_legal_calls(void);
/* An uncaught exception the app raises itself (no guard covers it). */
void app_objc_crash(void);
/* -[NSArray objectAtIndex:] beyond the count: a crash when the container guard is report-only or off. */
void app_objc_index_beyond(void);
/* The same misuse (objectAtIndex: beyond the count, neutralised) at two call sites of the app,
 * the first one reached twice; returns how many calls returned an object (0 when guarded). */
int app_objc_same_misuse_two_sites(void);
OBJC
cat > "$work/App/Sources/AppObjC/AppObjC.m" <<'OBJC'
#import <Foundation/Foundation.h>
#include <cs_runtime.h>
#include <stdio.h>
#include "AppObjC.h"

/* Two container misuses the guards neutralise: nil instead of an exception, no insertion. */
int app_objc_misuses(void) {
    int failed = 0;
    NSAutoreleasePool *pool = [[NSAutoreleasePool alloc] init];
    NSArray *items = [NSArray arrayWithObjects:@"a", @"b", nil];
    if ([items objectAtIndex:5] != nil) { printf("FAIL objectAtIndex: beyond the count returned an object\n"); failed++; }
    NSMutableDictionary *map = [NSMutableDictionary dictionary];
    id nothing = nil;
    [map setObject:nothing forKey:@"key"];
    if ([map count] != 0) { printf("FAIL setObject:nil inserted something\n"); failed++; }
    [pool release];
    return failed;
}

__attribute__((noinline)) void app_objc_crash(void) {
    [NSException raise:@"AppCheckoutException" format:@"the cart was emptied while paying"];
}

__attribute__((noinline)) void app_objc_index_beyond(void) {
    NSArray *items = [NSArray arrayWithObjects:@"a", @"b", nil];
    printf("item %p\n", (void *)[items objectAtIndex:5]);
}

__attribute__((noinline)) static id app_objc_site_a(NSArray *items) { return [items objectAtIndex:7]; }
__attribute__((noinline)) static id app_objc_site_b(NSArray *items) { return [items objectAtIndex:7]; }

int app_objc_same_misuse_two_sites(void) {
    NSAutoreleasePool *pool = [[NSAutoreleasePool alloc] init];
    NSArray *items = [NSArray arrayWithObjects:@"a", @"b", nil];
    int returned = 0;
    for (int round = 0; round < 2; round++) returned += app_objc_site_a(items) != nil;
    returned += app_objc_site_b(items) != nil;
    [pool release];
    return returned;
}

/* Legal calls behave as without guards: literals are NSStrings, @try catches what is raised. */
int app_objc_legal_calls(void) {
    int failed = 0;
    NSAutoreleasePool *pool = [[NSAutoreleasePool alloc] init];
    if (![@"abc" isKindOfClass:[NSString class]] || [@"abc" length] != 3) { printf("FAIL @\"abc\" is no NSString\n"); failed++; }
    BOOL caught = NO;
    @try {
        [NSException raise:@"AppException" format:@"raised on purpose"];
    } @catch (NSException *exception) {
        caught = [[exception name] isEqualToString:@"AppException"];
    }
    if (!caught) { printf("FAIL @catch did not catch the app's exception\n"); failed++; }
    if ([[NSArray arrayWithObjects:@"x", nil] objectAtIndex:0] == nil) { printf("FAIL a legal objectAtIndex: returned nil\n"); failed++; }
    if (cs_guard_count() == 0) { printf("FAIL cs_runtime.h: no guards\n"); failed++; }
    [pool release];
    return failed;
}
OBJC
cat > "$work/App/Sources/App/E2E.swift" <<'SWIFT'
// `App e2e <mode> <report-dir> <dsn>`: reporting to a collector (Collector/scripts/sdk_e2e.py, case
// `app`). Every mode starts guards, capture and reporting (release e2e-app@1.0.0) and sets the
// scope: user user-42, tag checkout_flow=v2, breadcrumb "opened cart". Then:
//   crash-c, crash-swift, crash-objc   the app's own C, Swift and Objective-C code crashes;
//   report-only                        the container guard is report-only and the app's
//                                      objectAtIndex: beyond the count crashes;
//   misuse-swift, misuse-objc          a misuse through [shielded:] / through Objective-C, neutralised;
//   misuse-sites                       one Objective-C misuse at two call sites (the first reached twice);
//   deliver                            only the start (which sends what earlier runs left) and a flush.
// Every mode that returns prints "container policy: <policy>" and the flush's result.
import AppC
import AppObjC
import CrashShield
import Foundation

enum E2E {
    static func run(_ arguments: [String]) -> Never {
        guard arguments.count == 3 else { print("usage: App e2e <mode> <report-dir> <dsn>"); exit(2) }
        let (mode, directory, dsn) = (arguments[0], arguments[1], arguments[2])
        var options = CrashShieldOptions()
        options.capture = CaptureOptions(directory: directory)
        options.capture?.appName = "e2e-app"
        options.launchProtection = nil
        do { options.reporting = try ReportingOptions(dsn: dsn, release: "e2e-app@1.0.0") } catch { print("bad DSN: \(error)"); exit(2) }
        if mode == "report-only" || mode == "deliver" { options.policies = [.container: .reportOnly] }
        do { try CrashShieldSDK.start(options) } catch { print("start failed: \(error)"); exit(3) }
        CrashScope.setUser(CrashScope.User(id: "user-42", email: "user-42@example.com"))
        CrashScope.setTag("checkout_flow", "v2")
        CrashScope.addBreadcrumb(message: "opened cart", category: "ui", level: .info)
        switch mode {
        case "crash-c": app_c_crash(Int32(CommandLine.arguments.count))
        case "crash-swift": print(checkoutTotal(prices: [3, 5, 8], line: CommandLine.arguments.count + 4))
        case "crash-objc": app_objc_crash()
        case "report-only": app_objc_index_beyond()
        case "misuse-swift": print("misuse: \(String(describing: applyCoupon(codes: ["A", "B"], index: CommandLine.arguments.count + 4)))")
        case "misuse-objc": print("misuse failures: \(app_objc_misuses())")
        case "misuse-sites": print("objects returned: \(app_objc_same_misuse_two_sites())")
        case "deliver": break
        default: print("unknown mode \(mode)"); exit(2)
        }
        CrashShieldSDK.flushIncidents()
        let flushed = CrashShieldSDK.flush(timeout: .seconds(15))
        let policy = CrashShieldSDK.status.first { $0.id == .container }.map { "\($0.policy)" } ?? "none"
        print("container policy: \(policy)")
        print("flushed: \(flushed)")
        fflush(nil)
        exit(flushed ? 0 : 4)
    }

    @inline(never) static func checkoutTotal(prices: [Int], line: Int) -> Int {
        prices[line] * 2   // beyond the count: a Swift runtime trap in the app's own function
    }

    @inline(never) static func applyCoupon(codes: [String], index: Int) -> String? {
        codes[shielded: index]
    }
}
SWIFT
cat > "$work/App/Sources/App/main.swift" <<'SWIFT'
// usage: App <report-dir> <expected last run: first_launch|clean_exit|crashed> [crash]
//        App e2e <mode> <report-dir> <dsn>   (E2E.swift)
import AppObjC
import CrashShield
import Foundation

if CommandLine.arguments.count > 1 && CommandLine.arguments[1] == "e2e" { E2E.run(Array(CommandLine.arguments.dropFirst(2))) }

let arguments = CommandLine.arguments
var options = CrashShieldOptions()                  // guards, crash capture, launch protection
options.capture = CaptureOptions(directory: arguments[1])
var launch = LaunchProtectionOptions()
launch.repairSteps = [.safeMode(), RepairStep(id: "async-step") { _ in try await Task.sleep(for: .milliseconds(1)) }]
options.launchProtection = launch
options.safeModeGuards = [.kvo]
try CrashShieldSDK.start(options)                   // the one start

var failures = 0
@MainActor func fail(_ message: String) { print("FAIL \(message)"); failures += 1 }
for status in CrashShieldSDK.status {
    switch status.state {
    case .active, .notInstalled: print("\(status.id): \(status.state)")
    default: fail("\(status.id): \(status.state)")
    }
}
for required in [GuardID.container, .string, .selector, .nsnull, .kvc, .kvo] {
    guard let status = CrashShieldSDK.status.first(where: { $0.id == required }), case .active = status.state else {
        fail("\(required) is not active"); continue
    }
}
if !CrashShieldSDK.isEnabled { fail("not enabled after start") }
if !CrashCapture.isInstalled { fail("crash capture is not installed") }
guard let protection = CrashShieldSDK.launchProtection else { fail("no launch protection"); exit(1) }
let lastRun = CrashShieldSDK.lastRun?.outcome.rawValue ?? "none"
print("last run: \(lastRun)")
if lastRun != arguments[2] { fail("last run \(lastRun), expected \(arguments[2])") }
if (CrashCapture.lastRun?.outcome.rawValue ?? "none") != lastRun { fail("CrashCapture.lastRun disagrees with CrashShieldSDK.lastRun") }
if [1, 2, 3][shielded: 7] != nil { fail("[shielded:] returned a value") }
CrashShieldSDK.flushIncidents()
if CrashShieldSDK.recordedCount(for: .swiftAccess) != 1 { fail("the misuse through [shielded:] was not recorded") }
// The app's own Objective-C target (README's block): its legal calls unchanged, its misuses recorded.
let containerBefore = CrashShieldSDK.recordedCount(for: .container)
if app_objc_legal_calls() != 0 { fail("legal calls in the app's Objective-C target") }
if app_objc_misuses() != 0 { fail("misuses in the app's Objective-C target") }
CrashShieldSDK.flushIncidents()
if CrashShieldSDK.recordedCount(for: .container) - containerBefore != 2 {
    fail("the Objective-C target's two misuses were not recorded (\(CrashShieldSDK.recordedCount(for: .container) - containerBefore))")
}
protection.launchCompleted()
if arguments.count > 3 && arguments[3] == "crash" {
    fflush(nil)
    raise(SIGSEGV)                                  // captured: the next run's last run is "crashed"
}
exit(failures == 0 ? 0 : 1)
SWIFT
echo "== check-url-dependency: building an app that depends on CrashShield by URL and version" >&2
( cd "$work/App" && swift build 2>&1 | tail -3 ) >&2 || true
if ! ( cd "$work/App" && swift build >/dev/null 2>&1 ); then
  ( cd "$work/App" && swift build 2>&1 | grep -E 'error' | head -20 ) >&2
  echo "check-url-dependency: FAIL: the app does not build" >&2; exit 1
fi
app="$(cd "$work/App" && swift build --show-bin-path)/App"
reports="$work/reports"
if ! "$app" "$reports" first_launch; then
  echo "check-url-dependency: FAIL: the first run (guards, capture, launch protection)" >&2; exit 1
fi
if ! "$app" "$reports" clean_exit; then
  echo "check-url-dependency: FAIL: the second run did not see the first one's clean exit" >&2; exit 1
fi
set +e
"$app" "$reports" clean_exit crash
status=$?
set -e
if [ "$status" -lt 128 ] || [ "$(ls "$reports" | grep -c '\.json$' || true)" -ne 1 ]; then
  echo "check-url-dependency: FAIL: the deliberate crash (exit status $status) left no report in $reports" >&2; exit 1
fi
if ! "$app" "$reports" crashed; then
  echo "check-url-dependency: FAIL: the run after the crash did not see it" >&2; exit 1
fi
echo "check-url-dependency: ok (the app stays in $work/App for Collector/scripts/sdk_e2e.py)" >&2
