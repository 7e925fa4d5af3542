// swift-tools-version:6.1
//
// CrashShield: crash protection for Objective-C and Swift apps.
//
// Module map (docs/ARCHITECTURE.md opens with the same map):
//   CrashShield            the umbrella apps import: the one start, stop, status, options; re-exports
//                          the three modules below (not the wire format)
//   CrashShieldBase        errors as types (CodedError), the lock, Duration conversions
//   CrashShieldGuards      guards' Swift side: GuardID, policies, incidents, sinks, [shielded:], @Lenient
//   CrashShieldRecording   crash capture, crash reports, report sinks, launch protection, app hangs,
//                          symbolication, the crash scope; also a product for apps without Objective-C
//   CrashShieldSentry      the Sentry client: events, outbox, transport, sessions, remote configuration
//   CrashShieldProtocol    the wire format (DSN, envelopes, events, sessions, remote-config document,
//                          the strict JSON reader), shared with the collector (Collector/ depends on it by path)
//   _CrashShieldRuntime    Objective-C guards: runtime backend, guard engine, guard registry
//   _CrashShieldIncidents  C incident pipeline: dedupe, rate limit, delivery, breadcrumb ring
//   _CrashShieldCapture    C, the async-signal-safe zone: the crash handler, report writer, unwinder
//   _CrashShieldLaunch     C start-time support: launch state, pending report files, deferred calls
//   _CrashShieldCxxTerminate  C++ terminate handler: names an uncaught C++ exception in the report
//   _CrashShieldZlib       zlib (system library) for gzip envelope uploads
//   shield                 the command-line tool: demo, bench, crash, reports, send, envelope
// Under Tests/: _CrashShieldScenarios (Objective-C misuse scenarios and oracles, for the demo and
// the tests), _CrashShieldTestSupport (deliberate crashes, test seams), the probe programs
// (shield-test-probe: the child processes only the tests spawn; capture-malloc-probe, plain-objc-app).
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
/// `@try`, which need two flags SwiftPM accepts only from the root package:
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
        // Crash capture and launch protection without Objective-C (Examples/CaptureOnly).
        .library(name: "CrashShieldRecording", targets: ["CrashShieldRecording"]),
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
            // Start-time C, never called from the crash handler: may allocate and start threads.
            name: "_CrashShieldLaunch",
            dependencies: ["_CrashShieldCapture"],
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
            // What every Swift module shares: errors as types (`CodedError`), the lock, `Duration`
            // conversions. Pure Swift over Foundation.
            name: "CrashShieldBase"
        ),
        .target(
            // Pure Swift over Foundation (and swift-crypto for Ed25519): no C, no Objective-C of
            // its own, so the collector can use it.
            name: "CrashShieldProtocol",
            dependencies: ["CrashShieldBase", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .systemLibrary(
            // zlib for the transport's gzip request bodies (part of every Apple SDK; Debian: zlib1g-dev).
            // Kept out of the async-signal-safe C target.
            name: "_CrashShieldZlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        .target(
            name: "CrashShieldRecording",
            dependencies: [
                "CrashShieldBase", "_CrashShieldCapture", "_CrashShieldLaunch", "_CrashShieldCxxTerminate", "_CrashShieldIncidents",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "CrashShieldSentry",
            dependencies: [
                "CrashShieldBase", "CrashShieldRecording", "CrashShieldProtocol", "_CrashShieldCapture", "_CrashShieldIncidents", "_CrashShieldZlib",
                .product(name: "Logging", package: "swift-log"),
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
            name: "CrashShieldGuards",
            dependencies: [
                "CrashShieldBase", "CrashShieldRecording", "_CrashShieldRuntime", "_CrashShieldIncidents",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "CrashShield",
            dependencies: [
                "CrashShieldBase", "CrashShieldGuards", "CrashShieldRecording", "CrashShieldSentry", "CrashShieldProtocol",
                "_CrashShieldRuntime", "_CrashShieldIncidents", "_CrashShieldCapture",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "shield",
            dependencies: [
                "CrashShield", "CrashShieldBase", "CrashShieldGuards", "CrashShieldRecording", "CrashShieldSentry", "CrashShieldProtocol",
                "_CrashShieldScenarios", "_CrashShieldCapture", "_CrashShieldLaunch", "_CrashShieldTestSupport", "CrashShieldTestDoubles",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "CaptureOnlyExample",
            dependencies: ["CrashShieldRecording"],
            path: "Examples/CaptureOnly"
        ),

        // Test code: scenarios, seams and probe programs live under Tests/ and are in no product.
        .target(
            // Objective-C misuse scenarios and their legal-input oracles, for `shield demo` and the tests.
            name: "_CrashShieldScenarios",
            dependencies: ["_CrashShieldRuntime"],
            path: "Tests/Scenarios",
            cSettings: scenarioObjCSettings,
            linkerSettings: objcLinker
        ),
        .target(
            // In-memory incident and report sinks for the tests and the test probes.
            name: "CrashShieldTestDoubles",
            dependencies: ["CrashShieldBase", "CrashShieldGuards", "CrashShieldRecording"],
            path: "Tests/TestDoubles"
        ),
        .target(
            // csc_test_support.h declares the test seams; the deliberate crashes are defined here,
            // the seams that need the handler's or the guards' state are defined in those targets
            // under CSC_TEST_SEAMS.
            name: "_CrashShieldTestSupport",
            dependencies: ["_CrashShieldCapture"],
            path: "Tests/Support",
            cSettings: [.define("_GNU_SOURCE"), testSeams],
            linkerSettings: [.linkedLibrary("pthread", .when(platforms: [.linux]))]
        ),
        .executableTarget(
            name: "capture-malloc-probe",
            dependencies: ["_CrashShieldCapture", "_CrashShieldTestSupport"],
            path: "Tests/Probes/capture-malloc-probe"
        ),
        .executableTarget(
            // The children only the tests spawn (rejected-start-probe, stop-probe, outbox-writer,
            // incident-exit-probe, hang-probe); the tests run it from the build directory.
            name: "shield-test-probe",
            dependencies: [
                "CrashShield", "CrashShieldBase", "CrashShieldRecording", "CrashShieldSentry", "CrashShieldProtocol",
                "_CrashShieldCapture", "_CrashShieldIncidents", "_CrashShieldTestSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Tests/Probes/shield-test-probe"
        ),
        .executableTarget(
            // An Objective-C program with no Swift code and no libdispatch: the README's
            // `cs_guards_start(NULL)` first in main() must give working guards (LifecycleGuardTests).
            name: "plain-objc-app",
            dependencies: ["_CrashShieldRuntime"],
            path: "Tests/Probes/plain-objc-app",
            cSettings: scenarioObjCSettings,
            linkerSettings: objcLinker
        ),
        .testTarget(
            name: "CrashShieldCaptureTests",
            dependencies: ["CrashShieldRecording", "CrashShieldSentry", "CrashShield", "_CrashShieldTestSupport", "CrashShieldProtocol", "CrashShieldTestDoubles",
                           "_CrashShieldZlib", "_CrashShieldCapture", "_CrashShieldLaunch",
                           .product(name: "Crypto", package: "swift-crypto")]
        ),
        .testTarget(
            // The README's examples, compiled against the public API only (no @testable import).
            name: "ReadmeExamplesTests",
            dependencies: ["CrashShield"]
        ),
        .testTarget(
            name: "CrashShieldTests",
            dependencies: ["CrashShield", "CrashShieldGuards", "CrashShieldRecording", "CrashShieldSentry", "CrashShieldProtocol",
                           "CrashShieldTestDoubles", "_CrashShieldScenarios", "_CrashShieldIncidents", "_CrashShieldRuntime", "_CrashShieldTestSupport"]
        ),
    ]
)
