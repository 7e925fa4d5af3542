import CrashShieldBase
import CrashShieldProtocol
import Foundation
import Testing

@testable import CrashShieldRecording
@testable import CrashShieldSentry
@testable import CrashShield
import _CrashShieldCapture

/// The fail-safe: a fatal report with frames inside a guard switches that guard off at the next
/// start, with an incident. Both runs are child processes (guards and capture are per process).
@Suite struct FailSafeTests {
    @Test func crashInsideAGuardSwitchesItOffAtTheNextStart() throws {
        let directory = temporaryDirectory("failsafe")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let crash = try runChild(Built.shield, ["crash", "inside-guard", "--dir", directory])
        #expect(crash.termination == .signaled(SIGSEGV))
        let report = try #require(loadReports(directory).first)
        #expect((report.crashedThread?.frames ?? []).contains { $0.function?.contains("objectAtIndex") == true })
        #expect((report.guards ?? []).contains { $0.name == "container" && $0.state == .active })
        #expect(report.crashedThread?.guardFrames == ["container"], "the handler names the guard among the frames")
        // The misuse neutralised just before the crash is among the report's recent incidents.
        #expect((report.incidents ?? []).contains { $0.guard == "container" && $0.selector == "objectAtIndex:" })

        let next = try runChild(Built.shield, ["failsafe-probe", "--dir", directory])
        #expect(next.termination == .exited(0))
        #expect(next.output.contains("POLICY container off"))
        #expect(next.output.contains("POLICY string neutralize"))
        #expect(next.output.contains("FAILSAFE-INCIDENTS 1 container"))
        // crashedLastRun with capture on and launch protection off.
        #expect(next.output.contains("LAST-RUN crashed CRASHED-LAST-RUN true"), "\(next.output)")
        let after = try runChild(Built.shield, ["failsafe-probe", "--dir", directory])
        #expect(after.output.contains("LAST-RUN clean_exit CRASHED-LAST-RUN false"), "\(after.output)")
    }

    /// With the container guard report-only, `-objectAtIndex:5` on a two-element
    /// array throws as report-only promises and the process ends with it. That is the app's crash:
    /// the report names the guard as the report-only one instead of among the guard frames, the
    /// event is not tagged as a crash in the guard, and the next start keeps the guard (before:
    /// guard_frames ["container"], crash_in_guard "container", and the fail-safe switched it off).
    @Test func aReportOnlyRethrowIsTheAppsCrashAndKeepsTheGuard() throws {
        let directory = temporaryDirectory("failsafe-report-only")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let crash = try runChild(Built.shield, ["crash", "array-beyond", "--dir", directory, "--guards",
                                                "--set-policy", "container=reportOnly"])
        #expect(crash.termination != .timedOut && crash.termination != .exited(0), "\(crash.output)")
        let report = try #require(loadReports(directory).first)
        #expect(report.kind == .objcException && report.exception?.name == "NSRangeException")
        #expect(report.exception?.reportOnlyGuard == "container")
        #expect(report.crashedThread?.guardFrames == [], "the hook that called the original is not the guard's fault")
        #expect((report.incidents ?? []).contains {
            $0.guard == "container" && $0.policy == "reportOnly" && $0.reason == "index 5 beyond count 2"
        }, "\(report.incidents ?? [])")
        let event = CrashEventConverter(release: "app@1", dist: nil, environment: "test").event(from: report)
        #expect(event.tags?["crashshield.report_only_guard"] == "container")
        #expect(event.tags?["crashshield.crash_in_guard"] == nil)
        // The hook's frames are CrashShield's (marked by the handler from the
        // guard's code section) and not in-app, so the culprit is the app's call site.
        let frames = report.crashedThread?.frames ?? []
        let hookFrames = frames.filter { $0.function?.hasPrefix("cs_array_objectAtIndex") == true }
        #expect(!hookFrames.isEmpty && hookFrames.allSatisfy { $0.sdk == true }, "\(frames.map { ($0.function, $0.sdk) })")
        #expect(frames.filter { $0.sdk == true }.count == hookFrames.count, "only the hook's frames are the SDK's")
        let eventFrames = event.exception?.values.first?.stacktrace?.frames ?? []
        #expect(eventFrames.filter { $0.function?.hasPrefix("cs_array_objectAtIndex") == true }.allSatisfy { $0.inApp == false })
        #expect(eventFrames.last { $0.inApp == true }?.function == "cs_capture_array_beyond_for_testing",
                "the culprit: \(eventFrames.map { ($0.function, $0.inApp) })")
        // The report-only incident, which the process had no time to send, goes first, beside
        // the crash, with the incident's own fingerprint (before: the crash alone).
        let reporter = EventReporter(options: ReportingFixture.options(), installationID: ReportingFixture.installationID)
        let envelopes = reporter.crashEnvelopes(reports: [report], sessions: nil)
        #expect(envelopes.count == 2)
        let events = try envelopes.compactMap { try Envelope.parse($0.serialized()).event() }
        let incidentEvent = try #require(events.first)
        let recorded = try #require((report.incidents ?? []).last { $0.guard == "container" && $0.policy == "reportOnly" })
        let value = try #require(recorded.fingerprint.flatMap { UInt64($0.dropFirst(2), radix: 16) })
        let hex = String(repeating: "0", count: 16 - String(value, radix: 16).count) + String(value, radix: 16)
        #expect(incidentEvent.level == .warning && incidentEvent.exception?.values.first?.type == "container")
        #expect(incidentEvent.exception?.values.first?.value == "index 5 beyond count 2")
        // Its stack starts at the app's call site (the hook's frames are left out), named as the
        // crash's frames are, so its issue's culprit is the app's function too.
        let incidentFrames = incidentEvent.exception?.values.first?.stacktrace?.frames ?? []
        #expect(incidentFrames.last?.function == "cs_capture_array_beyond_for_testing", "\(incidentFrames.map(\.function))")
        #expect(!incidentFrames.contains { $0.function?.hasPrefix("cs_array_objectAtIndex") == true })
        #expect(incidentEvent.fingerprint == ["crashshield.incident", "container", hex])
        #expect(incidentEvent.tags?["crashshield.policy"] == "reportOnly" && events.last?.level == .fatal)
        if let out = ProcessInfo.processInfo.environment["CRASHSHIELD_INTEROP_DIR"] {
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
            try envelopes[0].serialized().write(to: URL(fileURLWithPath: out + "/live-report-only-incident.envelope"))
        }

        let next = try runChild(Built.shield, ["failsafe-probe", "--dir", directory])
        #expect(next.termination == .exited(0))
        #expect(next.output.contains("POLICY container neutralize"), "\(next.output)")
        #expect(next.output.contains("FAILSAFE-INCIDENTS 0"), "\(next.output)")
    }

    /// The unguarded oracle and the neutralised form of the same call: unguarded it is an
    /// uncaught NSRangeException with no report-only guard; neutralised it returns (no report).
    @Test func theSameCallUnguardedAndNeutralised() throws {
        let plain = temporaryDirectory("failsafe-array-plain")
        defer { try? FileManager.default.removeItem(atPath: plain) }
        let unguarded = try runChild(Built.shield, ["crash", "array-beyond", "--dir", plain])
        #expect(unguarded.termination != .timedOut && unguarded.termination != .exited(0))
        let report = try #require(loadReports(plain).first)
        #expect(report.exception?.name == "NSRangeException" && report.exception?.reportOnlyGuard == nil)
        let neutralised = temporaryDirectory("failsafe-array-neutralised")
        defer { try? FileManager.default.removeItem(atPath: neutralised) }
        let guarded = try runChild(Built.shield, ["crash", "array-beyond", "--dir", neutralised, "--guards"])
        #expect(guarded.termination == .exited(1), "neutralised: the kind returns and shield exits 1")
        #expect(loadReports(neutralised).isEmpty)
    }

    /// The start after a crash inside a guard switches the guard off from the
    /// report's guard_frames, read by the C scan: no report is decoded (the first JSONDecoder
    /// use alone costs ~2 ms).
    @Test func crashInsideAGuardSwitchesItOffWithoutDecodingTheReport() throws {
        let directory = temporaryDirectory("failsafe-lazy")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let crash = try runChild(Built.shield, ["crash", "inside-guard", "--dir", directory])
        #expect(crash.termination == .signaled(SIGSEGV))
        let next = try runChild(Built.shield, ["failsafe-probe", "--dir", directory, "--launch-protection"])
        #expect(next.termination == .exited(0))
        #expect(next.output.contains("POLICY container off"))
        #expect(next.output.contains("FAILSAFE-INCIDENTS 1 container"))
        #expect(next.output.contains("REPORTS-DECODED 0/1"), "\(next.output)")
        #expect(next.output.contains("LAST-RUN crashed CRASHED-LAST-RUN true"), "\(next.output)")
    }

    /// A report without guard_frames (an older version's, or of a process that registered no
    /// guard code) still switches the guard off: it is decoded and its frames mapped.
    @Test func reportWithoutGuardFramesIsDecodedAndItsFramesMapped() throws {
        let directory = temporaryDirectory("failsafe-old-report")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let crash = try runChild(Built.shield, ["crash", "inside-guard", "--dir", directory])
        #expect(crash.termination == .signaled(SIGSEGV))
        let path = try #require(pendingReportPaths(directory).first)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.contains(#""guard_frames":["container"],"#))
        try text.replacingOccurrences(of: #""guard_frames":["container"],"#, with: "").write(toFile: path, atomically: false, encoding: .utf8)
        let next = try runChild(Built.shield, ["failsafe-probe", "--dir", directory])
        #expect(next.output.contains("POLICY container off"))
        #expect(next.output.contains("FAILSAFE-INCIDENTS 1 container"))
        #expect(next.output.contains("REPORTS-DECODED 1/1"), "\(next.output)")
    }

    /// The handler's guard_frames is what the start trusts: a report that names a guard there
    /// switches it off even when none of its frames maps to this binary's guard code (a crash in
    /// an earlier build of the app).
    @Test func guardFramesAloneSwitchTheNamedGuardOff() throws {
        let directory = temporaryDirectory("failsafe-named")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let crash = try runChild(Built.shield, ["crash", "segv", "--dir", directory])
        #expect(crash.termination == .signaled(SIGSEGV))
        let path = try #require(pendingReportPaths(directory).first)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.contains(#""guard_frames":[],"#))
        try text.replacingOccurrences(of: #""guard_frames":[],"#, with: #""guard_frames":["string"],"#)
            .write(toFile: path, atomically: false, encoding: .utf8)
        let next = try runChild(Built.shield, ["failsafe-probe", "--dir", directory])
        #expect(next.output.contains("POLICY string off"))
        #expect(next.output.contains("POLICY container neutralize"))
        #expect(next.output.contains("FAILSAFE-INCIDENTS 1 string"))
        #expect(next.output.contains("REPORTS-DECODED 0/1"), "\(next.output)")
    }

    func pendingReportPaths(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { $0.hasPrefix("report-") && $0.hasSuffix(".json") }.sorted().map { "\(directory)/\($0)" }
    }

    @Test func reportsOutsideGuardsSwitchNothingOff() throws {
        let directory = temporaryDirectory("failsafe-none")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let crash = try runChild(Built.shield, ["crash", "segv", "--dir", directory])
        #expect(crash.termination == .signaled(SIGSEGV))
        let reports = loadReports(directory)
        #expect(reports.count == 1)
        #expect(reports.first?.crashedThread?.guardFrames == [])
        let next = try runChild(Built.shield, ["failsafe-probe", "--dir", directory])
        #expect(next.termination == .exited(0))
        #expect(next.output.contains("POLICY container neutralize"))
        #expect(next.output.contains("FAILSAFE-INCIDENTS 0"))
        #expect(next.output.contains("REPORTS-DECODED 0/1"))
    }
}

/// The pieces of the fail-safe that run in the test process.
@Suite struct FailSafeUnitTests {
    /// The handler's table takes plain names only, at most CSC_GUARD_RANGES_MAX, and only once
    /// (the ranges are link-time constants; a second table is refused, never half-replaced).
    @Test func guardCodeRangesAreTakenOnceAndOnlyWhenPlain() {
        func register(_ names: [String]) -> Bool {
            let cNames = names.map { strdup($0) }
            defer { cNames.forEach { free($0) } }
            let ranges = cNames.enumerated().map { index, name in
                csc_guard_code_range(name: UnsafePointer(name), start: UInt(0x1000 * (index + 1)), end: UInt(0x1000 * (index + 1) + 0x100))
            }
            return csc_set_guard_code_ranges(ranges, ranges.count)
        }
        #expect(!register(["Container"]))
        #expect(!register(["con\"tainer"]))
        #expect(!register([""]))
        #expect(!register([String(repeating: "a", count: Int(CSC_GUARD_NAME_MAX))]))
        #expect(!register((0...Int(CSC_GUARD_RANGES_MAX)).map { "g\($0)" }))
        _ = register(["container", "kvo"]) // true unless an in-process start registered first
        #expect(!register(["container", "kvo"]), "a second table is refused")
    }

    /// The report's "guards" array, written by hand on the start path, is byte for byte what
    /// JSONEncoder wrote before (sorted keys, slashes unescaped), escapes included.
    @Test func guardStatesJSONMatchesJSONEncoder() throws {
        let states = [
            CrashReport.GuardState(name: "container", state: .active, policy: .neutralize),
            CrashReport.GuardState(name: "a/b\"c\\d", state: .canaryFailed, policy: .off),
            CrashReport.GuardState(name: "\n\r\t\u{08}\u{0C}\u{01}\u{1F}\u{7F}", state: .init(rawValue: "é\u{2028}😀"), policy: .reportOnly),
        ]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let expected = String(decoding: try encoder.encode(states), as: UTF8.self)
        #expect(CrashShieldSDK.guardStatesJSON(states.map { ($0.name ?? "", $0.state?.rawValue ?? "", $0.policy?.rawValue ?? "") }) == expected)
        #expect(CrashShieldSDK.guardStatesJSON([]) == String(decoding: try encoder.encode([CrashReport.GuardState]()), as: UTF8.self))
    }
}
