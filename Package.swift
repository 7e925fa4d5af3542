// swift-tools-version:6.1
//
// CrashShield: crash protection for Objective-C and Swift apps.
//
// Target map (docs/ARCHITECTURE.md has the full picture):
//   CrashShield            public Swift API (the only module apps import)
//   CrashShieldProtocol    Sentry wire formats (DSN, envelopes, events) and the remote-config document,
//                          shared with the collector (Collector/ depends on it by path)
//   _CrashShieldRuntime    Objective-C guards: runtime backend, guard engine, guard registry (not API)
//   _CrashShieldCxxTerminate  C++ terminate handler: names an uncaught C++ exception in the report (not API)
//   _CrashShieldIncidents  C incident pipeline: dedupe, rate limit, delivery, breadcrumb ring (not API)
//   _CrashShieldScenarios  Objective-C misuse scenarios and oracles for `shield` and the tests (not API)
//   _CrashShieldTestSupport  C test seams (deliberate crashes, handler hooks) for `shield` and the tests
//   _CrashShieldZlib       zlib (system library) for gzip envelope uploads
//   shield                 the command-line tool: demo, bench, crash, reports, send, envelope
//
// GNUstep is the Objective-C runtime on Linux. Its compiler flags are needed only there and are
// kept out of what an Apple consumer sees (`#if os(Linux)` below).
import PackageDescription

#if os(Linux)
import Foundation

/// GCC's libobjc headers live in GCC's private include directory; find it instead of assuming the
/// architecture or GCC version. Used only by the targets below that are not part of a product
/// (scenarios, test probes): those may keep compiler flags that SwiftPM refuses from a dependency.
let gccObjCInclude: String = {
    let root = "/usr/lib/gcc"
    let fm = FileManager.default
    for triple in (try? fm.contentsOfDirectory(atPath: root))?.sorted() ?? [] {
        for version in ((try? fm.contentsOfDirectory(atPath: "\(root)/\(triple)")) ?? []).sorted().reversed() {
            let dir = "\(root)/\(triple)/\(version)/include"
            if fm.fileExists(atPath: "\(dir)/objc/objc.h") { return dir }
        }
    }
    return "\(root)/x86_64-linux-gnu/12/include"
}()

/// The demo/test-only Objective-C target (`_CrashShieldScenarios`) uses `@""` literals and
/// `@try`, which need two flags SwiftPM accepts only from the root package (gnustep-probe §11):
/// without -fexceptions @catch never fires, without the constant-string class @"" literals break
/// at run time. It is in no product, so an app depending on CrashShield never builds it.
let scenarioObjCSettings: [CSetting] = [
    .define("GNUSTEP"), .define("GNU_RUNTIME", to: "1"), .define("GNUSTEP_BASE_LIBRARY", to: "1"),
    .unsafeFlags([
        "-fno-blocks", "-fexceptions", "-fobjc-exceptions",
        "-fconstant-string-class=NSConstantString",
        "-I/usr/include/GNUstep", "-I\(gccObjCInclude)",
        "-Werror=implicit-function-declaration",
        "-Wno-objc-root-class",
    ]),
]
#else
// Apple: the system runtime and Foundation. Not compiled or verified on the Linux build machines.
let scenarioObjCSettings: [CSetting] = []
#endif

/// Test seams inside shipped targets (fault injection, hooks in the signal handler) are compiled
/// only in debug builds; a release build of an app carries none (`_CrashShieldTestSupport` declares them).
let testSeams: CSetting = .define("CSC_TEST_SEAMS", .when(configuration: .debug))

/// The Objective-C runtime target ships in the `CrashShield` and `CrashShieldObjC` products, so it
/// may use only settings SwiftPM accepts from a package depended on by URL: no unsafeFlags. On
/// Linux, GNUstep's include paths, defines, blocks-runtime shim (instead of -fno-blocks) and
/// libraries come from the `CGNUstepBase` system library (a pkg-config file that
/// `scripts/bootstrap.sh` installs; Debian ships none): the same flags reach an app's own
/// Objective-C targets. The sources use no `@""` literal (`CS_STR`) and the one `@try` lives in an
/// Objective-C++ file, where exceptions are on by default (docs/ARCHITECTURE.md, "Building").
let runtimeObjCSettings: [CSetting] = [testSeams]
let objcLinker: [LinkerSetting] = [
    .linkedLibrary("gnustep-base", .when(platforms: [.linux])),
    .linkedLibrary("objc", .when(platforms: [.linux])),
    .linkedFramework("Foundation", .when(platforms: [.macOS, .iOS, .tvOS, .watchOS, .visionOS, .macCatalyst])),
]

let package = Package(
    name: "CrashShield",
    // The public API uses `Duration` (iOS 16, macOS 13, Mac Catalyst 16, visionOS 1) and
    // `AsyncStream`. No tvOS or watchOS: their SDKs mark `sigaltstack` prohibited, and crash
    // capture needs an alternate signal stack to report a stack overflow.
    platforms: [.iOS(.v16), .macOS(.v13), .macCatalyst(.v16), .visionOS(.v1)],
    products: [
        .library(name: "CrashShield", targets: ["CrashShield"]),
        .library(name: "CrashShieldCapture", targets: ["CrashShieldCapture"]),
        // For an app's Objective-C targets: `cs_runtime.h` (README, "Objective-C apps").
        .library(name: "CrashShieldObjC", targets: ["_CrashShieldRuntime"]),
        .library(name: "CrashShieldProtocol", targets: ["CrashShieldProtocol"]),
        .executable(name: "shield", targets: ["shield"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        // Ed25519 signatures of the remote configuration document (Curve25519.Signing).
        .package(url: "https://github.com/apple/swift-crypto", "3.0.0"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    ],
    targets: [
        .target(
            name: "_CrashShieldIncidents",
            cSettings: [.define("_GNU_SOURCE")],
            linkerSettings: [.linkedLibrary("pthread", .when(platforms: [.linux]))]
        ),
        .target(
            name: "_CrashShieldCapture",
            dependencies: ["_CrashShieldIncidents"],
            cSettings: [.define("_GNU_SOURCE"), testSeams],
            linkerSettings: [.linkedLibrary("pthread", .when(platforms: [.linux]))]
        ),
        .target(
            // C++: the terminate handler that names an uncaught C++ exception (type, what())
            // for the report capture writes when the process then aborts.
            name: "_CrashShieldCxxTerminate",
            dependencies: ["_CrashShieldCapture"]
        ),
        .target(
            // In no product: csc_test_support.h declares the test seams; the deliberate crashes
            // are defined here, the seams that need the handler's or the guards' state are defined
            // in those targets under CSC_TEST_SEAMS.
            name: "_CrashShieldTestSupport",
            dependencies: ["_CrashShieldCapture"],
            cSettings: [.define("_GNU_SOURCE"), testSeams],
            linkerSettings: [.linkedLibrary("pthread", .when(platforms: [.linux]))]
        ),
        .target(
            // The SDK's Swift concurrency and Duration helpers (`package` access: no public API).
            name: "_CrashShieldSupport"
        ),
        .target(
            // Pure Swift over Foundation (and swift-crypto for Ed25519): no C, no Objective-C of
            // its own, so the collector can use it.
            name: "CrashShieldProtocol",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")]
        ),
        .systemLibrary(
            // zlib for the transport's gzip request bodies (part of every Apple SDK; Debian: zlib1g-dev).
            // Kept out of the async-signal-safe C target.
            name: "_CrashShieldZlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        .target(
            name: "CrashShieldCapture",
            dependencies: [
                "_CrashShieldCapture", "_CrashShieldCxxTerminate", "_CrashShieldIncidents", "CrashShieldProtocol", "_CrashShieldZlib",
                "_CrashShieldSupport", .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .systemLibrary(
            name: "CGNUstepBase",
            pkgConfig: "crashshield-gnustep-base",
            providers: [.apt(["libgnustep-base-dev", "gobjc"])]
        ),
        .target(
            name: "_CrashShieldRuntime",
            dependencies: [
                "_CrashShieldIncidents", "_CrashShieldCapture",
                .target(name: "CGNUstepBase", condition: .when(platforms: [.linux])),
            ],
            cSettings: runtimeObjCSettings,
            linkerSettings: objcLinker
        ),
        .target(
            name: "CrashShield",
            dependencies: [
                "_CrashShieldRuntime", "_CrashShieldIncidents", "CrashShieldCapture", "_CrashShieldCapture",
                "_CrashShieldSupport", .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "_CrashShieldScenarios",
            dependencies: ["_CrashShieldRuntime"],
            cSettings: scenarioObjCSettings,
            linkerSettings: objcLinker
        ),
        .executableTarget(
            name: "shield",
            dependencies: [
                "CrashShield", "_CrashShieldScenarios", "CrashShieldCapture", "_CrashShieldCapture", "_CrashShieldTestSupport",
                "_CrashShieldIncidents", "CrashShieldProtocol", "_CrashShieldSupport", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "capture-malloc-probe",
            dependencies: ["_CrashShieldCapture", "_CrashShieldTestSupport"]
        ),
        .executableTarget(
            // An Objective-C program with no Swift code and no libdispatch: the README's
            // `cs_guards_start(NULL)` first in main() must give working guards (LifecycleGuardTests).
            name: "plain-objc-app",
            dependencies: ["_CrashShieldRuntime"],
            cSettings: scenarioObjCSettings,
            linkerSettings: objcLinker
        ),
        .executableTarget(
            name: "CaptureOnlyExample",
            dependencies: ["CrashShieldCapture"],
            path: "Examples/CaptureOnly"
        ),
        .testTarget(
            name: "CrashShieldCaptureTests",
            dependencies: ["CrashShieldCapture", "CrashShield", "_CrashShieldTestSupport", "CrashShieldProtocol", "_CrashShieldZlib", "_CrashShieldSupport",
                           .product(name: "Crypto", package: "swift-crypto")]
        ),
        .testTarget(
            // The README's examples, compiled against the public API only (no @testable import).
            name: "ReadmeExamplesTests",
            dependencies: ["CrashShield"]
        ),
        .testTarget(
            name: "CrashShieldTests",
            dependencies: ["CrashShield", "_CrashShieldScenarios", "_CrashShieldIncidents", "_CrashShieldRuntime", "_CrashShieldTestSupport",
                           "_CrashShieldSupport"]
        ),
    ]
)
