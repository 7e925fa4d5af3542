import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing

/// What an app can reach: the package's internals have `package` access and its test seams are
/// declared only in `csc_test_support.h` (target `_CrashShieldTestSupport`, in no product).
@Suite struct PublicSurfaceTests {
    static let packageRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    /// Each line uses one internal; the compiler must reject each with the given diagnostic.
    static let internalUses: [(code: String, diagnostic: String)] = [
        ("_ = TolerantJSON.repair([])", "cannot find 'TolerantJSON' in scope"),
        ("Symbolicator.symbolicate(&report)", "cannot find 'Symbolicator' in scope"),
        ("_ = CrashReportStore(directory: \"/tmp\")", "cannot find 'CrashReportStore' in scope"),
        ("CrashCapture.setGuardStates([])", "'setGuardStates' is inaccessible due to 'package' protection level"),
        ("_ = CrashCapture.pendingReports(in: \"/tmp\")", "'pendingReports' is inaccessible due to 'package' protection level"),
        ("_ = CrashCapture.reportWrittenThisRun", "'reportWrittenThisRun' is inaccessible due to 'package' protection level"),
        ("_ = CrashCapture._reportsFoundAtStartDecodedForTesting",
         "'_reportsFoundAtStartDecodedForTesting' is inaccessible due to 'package' protection level"),
        ("_ = LaunchProtection.begin(directory: \"/tmp\", captureEnabled: false)", "'begin' is inaccessible due to 'package' protection level"),
        ("_ = protection?.launchID", "'launchID' is inaccessible due to 'package' protection level"),
        ("_ = protection?.directory", "'directory' is inaccessible due to 'package' protection level"),
        ("CrashShieldSDK._resetForTesting()", "'_resetForTesting' is inaccessible due to 'package' protection level"),
        ("_ = CrashScope.publishedJSONForTesting", "'publishedJSONForTesting' is inaccessible due to 'package' protection level"),
        ("_ = ScopeState()", "cannot find 'ScopeState' in scope"),
        // One start; there is no second start call.
        ("try? CrashShieldSDK.startCapture(CaptureOptions())", "type 'CrashShieldSDK' has no member 'startCapture'"),
        // Reporting: the SDK's reporting machinery is internal; an app sets
        // `ReportingOptions` and the start does the rest.
        ("_ = EventReporter.self", "cannot find 'EventReporter' in scope"),
        ("_ = SessionTracker.self", "cannot find 'SessionTracker' in scope"),
        ("_ = Outbox.self", "cannot find 'Outbox' in scope"),
        ("_ = EnvelopeTransport.self", "cannot find 'EnvelopeTransport' in scope"),
        ("_ = InstallationID.self", "cannot find 'InstallationID' in scope"),
        ("_ = RemoteConfigStore.self", "cannot find 'RemoteConfigStore' in scope"),
        ("_ = ReportingClient.self", "cannot find 'ReportingClient' in scope"),
        ("try? CrashShieldSDK._startCaptureWithoutGuardsForTesting(CaptureOptions())",
         "'_startCaptureWithoutGuardsForTesting' is inaccessible due to 'package' protection level"),
        // The report's wire model, the wire format and the test doubles are not the app's.
        ("_ = CrashReport.self", "cannot find 'CrashReport' in scope"),
        ("_ = Envelope.self", "cannot find 'Envelope' in scope"),
        ("_ = DSN.self", "cannot find 'DSN' in scope"),
        ("_ = InMemoryIncidentSink.self", "cannot find 'InMemoryIncidentSink' in scope"),
        ("_ = RemoteConfigOptions.self", "cannot find 'RemoteConfigOptions' in scope"),
    ]

    #if os(Linux)
    /// A client outside the package (no -package-name) type-checks against the modules this test
    /// run was built with (the build directory's layout on Linux). The app-facing lines must
    /// compile, every internal use must fail.
    @Test func anAppOutsideThePackageReachesNoInternals() throws {
        let build = Built.directory
        let directory = temporaryDirectory("surface")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let source = """
            import CrashShield
            let protection = CrashCapture.launchProtection
            var report = CrashCapture.reportsFoundAtStart.first!
            _ = protection?.isSafeMode
            _ = CrashCapture.isInstalled
            \(Self.internalUses.map(\.code).joined(separator: "\n"))
            CrashScope.setUser(CrashScope.User(id: "1"))
            CrashScope.addBreadcrumb(message: "opened", category: "ui", level: .warning, data: ["k": "v"])
            _ = report.scope?.breadcrumbs.first?.timestamp
            """
        try source.write(toFile: directory + "/app.swift", atomically: true, encoding: .utf8)

        var arguments = ["swiftc", "-typecheck", directory + "/app.swift", "-I", build + "/Modules"]
        for module in ["_CrashShieldCapture", "_CrashShieldLaunch", "_CrashShieldCxxTerminate", "_CrashShieldIncidents", "_CrashShieldRuntime"] {
            arguments += ["-Xcc", "-fmodule-map-file=\(build)/\(module).build/module.modulemap"]
        }
        arguments += ["-Xcc", "-fmodule-map-file=\(build)/Logging.build/include/module.modulemap"]
        // A system-library target: its module map stays in the sources.
        arguments += ["-Xcc", "-fmodule-map-file=\(Self.packageRoot)/Sources/_CrashShieldZlib/module.modulemap"]
        for module in ["_CrashShieldIncidents", "_CrashShieldCapture", "_CrashShieldLaunch", "_CrashShieldCxxTerminate"] {
            arguments += ["-Xcc", "-I", "-Xcc", "\(Self.packageRoot)/Sources/\(module)/include"]
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()

        let errors = output.split(separator: "\n").filter { $0.contains("app.swift:") && $0.contains(": error: ") }
        #expect(errors.count == Self.internalUses.count, "\(output)")
        for (index, use) in Self.internalUses.enumerated() {
            let line = 6 + index
            #expect(errors.contains { $0.contains("app.swift:\(line):") && $0.hasSuffix(use.diagnostic) },
                    "line \(line) `\(use.code)` is not rejected with \(use.diagnostic):\n\(output)")
        }
    }

    #endif

    /// Headers an app receives with the products declare no test seam; csc_test_support.h does.
    @Test func shippedHeadersDeclareNoTestSeams() throws {
        let seam = try Regex(#"\b(csc_test_\w+|csc_crash_\w+|cs_capture_raise_uncaught_exception|\w+_for_testing)\s*\("#,
                             as: (Substring, Substring).self)
        let allowed: Set<Substring> = []
        var found: [String] = []
        for target in ["_CrashShieldCapture", "_CrashShieldLaunch", "_CrashShieldIncidents", "_CrashShieldRuntime"] {
            let include = "\(Self.packageRoot)/Sources/\(target)/include"
            for file in try FileManager.default.contentsOfDirectory(atPath: include) where file.hasSuffix(".h") {
                let text = try String(contentsOfFile: include + "/" + file, encoding: .utf8)
                for match in text.matches(of: seam) where !allowed.contains(match.output.1) {
                    found.append("\(target)/include/\(file): \(match.output.1)")
                }
            }
        }
        #expect(found.isEmpty, "\(found)")

        let support = try String(contentsOfFile: "\(Self.packageRoot)/Tests/Support/include/csc_test_support.h",
                                 encoding: .utf8)
        #expect(support.matches(of: seam).count >= 30)
    }
}
